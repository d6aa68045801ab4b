// The C++ objects behind ferry's Python classes. Each holds a shared owner and raw pointers into
// what that owner keeps alive, so children and slices cost no copy and keep their root alive.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "ferry/format/schema_view.hpp"
#include "ferry/memview/memory_view.hpp"

namespace ferry::python {

/// ferry.Schema: one node of a schema tree and the owner of the tree.
struct PySchema {
  std::shared_ptr<const void> owner;
  const ArrowSchema* schema = nullptr;
};

/// ferry.DataType: the parsed type of one schema node.
struct PyDataType {
  std::shared_ptr<const void> owner;
  SchemaView view;
};

/// ferry.Array: one node of an array tree, with the root that owns it (and its device and
/// sync event).
struct PyArray {
  std::shared_ptr<ArrayHolder> root;
  const ArrowSchema* schema = nullptr;
  const ArrowArray* array = nullptr;

  ArrowDeviceType device_type() const noexcept { return root->array->device_type; }
  int64_t device_id() const noexcept { return root->array->device_id; }
  /// This node as a device array (a non-owning struct: never released).
  ArrowDeviceArray NodeDeviceArray() const noexcept;
};

/// A Schema over a fresh copy-free reference to a Python Array's schema node.
PySchema SchemaOf(const PyArray& array);
/// Export `array`'s node as a new, independently released device array (no buffer copied).
UniqueDeviceArray ExportDeviceArray(const PyArray& array);
/// A root array owning `schema` and `array`.
PyArray MakeArray(UniqueSchema schema, UniqueDeviceArray array,
                  std::shared_ptr<const void> keep = {});
/// ferry.array(obj): import any Arrow PyCapsule producer (device array first).
PyArray ArrayFrom(nb::handle obj, nb::handle requested_schema);
/// A schema from `__arrow_c_schema__` of any object (ferry.Schema included).
PySchema SchemaFrom(nb::handle obj);

/// A host stream as a device stream of CPU arrays (no copy).
UniqueDeviceArrayStream WrapHostStream(UniqueArrayStream host);

/// ferry.ArrayStream: a device stream (host streams are wrapped as CPU device streams) and its
/// schema, read once.
struct PyArrayStream {
  UniqueDeviceArrayStream stream;
  std::shared_ptr<SchemaHolder> schema;

  /// The live stream, or ValueError naming `what` once consumed.
  ArrowDeviceArrayStream* Live(const char* what);
  /// The next array (the GIL released while the producer works), nullopt at the end.
  std::optional<PyArray> ReadNext();
};

/// Fetch the schema of `stream` and own it.
PyArrayStream OpenStream(UniqueDeviceArrayStream stream);
/// ferry.stream(obj).
PyArrayStream StreamFromObject(nb::handle obj, nb::handle requested_schema);

/// ferry.MemoryView: a memory view plus the Python object that owns the memory.
struct PyMemoryView {
  memview::MemoryView view;
  nb::object obj;
  std::optional<int64_t> stream;
  // Buffer-protocol export state, filled on first export (views are immutable).
  std::string pep3118;
  std::vector<Py_ssize_t> py_shape;
  std::vector<Py_ssize_t> py_strides;
  // Element strides lent by the DLPack exchange API's borrowing export, filled on first use.
  std::vector<int64_t> dl_strides;
};

}  // namespace ferry::python
