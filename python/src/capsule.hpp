// The Arrow PyCapsule interface: capsules that own C structs until a consumer moves them out,
// and shallow exports that keep an owner alive instead of copying buffers.
#pragma once

#include <memory>

#include "common.hpp"

namespace ferry::python {

inline constexpr const char* kSchemaCapsule = "arrow_schema";
inline constexpr const char* kArrayCapsule = "arrow_array";
inline constexpr const char* kStreamCapsule = "arrow_array_stream";
inline constexpr const char* kDeviceArrayCapsule = "arrow_device_array";
inline constexpr const char* kDeviceStreamCapsule = "arrow_device_array_stream";

/// A capsule owning the struct moved out of `owner`. The struct is allocated released first,
/// so a failure anywhere leaves nothing to free; the capsule's destructor releases the struct
/// only when no consumer moved it out.
nb::object SchemaCapsule(UniqueSchema owner);
nb::object ArrayCapsule(UniqueArray owner);
nb::object DeviceArrayCapsule(UniqueDeviceArray owner);
nb::object StreamCapsule(UniqueArrayStream owner);
nb::object DeviceStreamCapsule(UniqueDeviceArrayStream owner);

/// Move the struct out of a capsule of the given kind (the capsule's struct is left released,
/// so its destructor frees only the allocation). TypeError for a capsule of another name,
/// ValueError for one already consumed.
UniqueSchema TakeSchema(nb::handle capsule);
UniqueArray TakeArray(nb::handle capsule);
UniqueDeviceArray TakeDeviceArray(nb::handle capsule);
UniqueArrayStream TakeStream(nb::handle capsule);
UniqueDeviceArrayStream TakeDeviceStream(nb::handle capsule);

/// Write into `out` a shallow copy of the tree at `src` (children and dictionary included), made
/// by KeepAlive: the buffers are shared, not copied, and the last node released drops the
/// reference to `keep`, which must keep `src` alive. Safe to release from any thread.
void ExportArrayRef(const ArrowArray* src, std::shared_ptr<const void> keep, ArrowArray* out);

/// Make `schema` (a deep copy of `request`) acceptable for `have`'s data, or say why not:
/// returns true when every node of `request` describes the same physical layout as `have`
/// (a relabelling: names, metadata, string <-> binary, ...); false when they differ but
/// the shapes agree (the caller keeps its own schema and the consumer casts); raises
/// ValueError when the shapes are incompatible (another number of fields or children).
bool RequestIsRelabel(const ArrowSchema* have, const ArrowSchema* request);

}  // namespace ferry::python
