// ferry.dipc's classes beside Server, registered before it: its stats (python/src/dipc_stats.cpp)
// and its region's memory (python/src/dipc_region.cpp).
#pragma once

#include <memory>

#include "common.hpp"
#include "ferry/core/host_buffer.hpp"

namespace ferry::python {

/// Register ferry.dipc.ServerStats in `m` (python/src/dipc_stats.cpp).
void InitDipcStats(nb::module_& m);
/// Register ferry.dipc.RegionAllocator and ferry.dipc.RegionBuffer in `m` (before Server).
void InitDipcRegion(nb::module_& m);
/// A ferry.dipc.RegionAllocator holding `allocator` (Server::region_allocator), or None where it
/// is NULL (packed bodies have no region).
nb::object RegionAllocatorObject(std::shared_ptr<Allocator> allocator);

}  // namespace ferry::python
