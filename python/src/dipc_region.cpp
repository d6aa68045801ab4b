// ferry.dipc.RegionAllocator and ferry.dipc.RegionBuffer: blocks of a server's shared region for
// a Python producer that builds its batches where clients read them (Server::region_allocator),
// so that they are lent in place, not copied.
#include "dipc_region.hpp"

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "common.hpp"
#include "ferry/core/host_buffer.hpp"

namespace ferry::python {
namespace {

/// One block of the region, given back to it when its last holder lets go: the RegionBuffer,
/// or an export of it (a pyarrow.Buffer, a numpy array, a memoryview), or a batch built on those.
struct RegionBlock {
  std::shared_ptr<Allocator> allocator;
  uint8_t* data = nullptr;
  int64_t size = 0;

  RegionBlock(std::shared_ptr<Allocator> a, uint8_t* d, int64_t n)
      : allocator(std::move(a)), data(d), size(n) {}
  RegionBlock(const RegionBlock&) = delete;
  RegionBlock& operator=(const RegionBlock&) = delete;
  ~RegionBlock() { allocator->Free(data, size); }
};

struct PyRegionBuffer {
  std::shared_ptr<RegionBlock> block;
};

struct PyRegionAllocator {
  std::shared_ptr<Allocator> allocator;
};

/// What one buffer-protocol export keeps: the block (not the Python object, as for
/// ferry.MemoryView's exports: a consumer that never releases its export pins only the memory)
/// and the shape and stride the Py_buffer points at.
struct RegionExport {
  std::shared_ptr<RegionBlock> block;
  Py_ssize_t shape;
  Py_ssize_t stride = 1;
};

constexpr const char* kRegionExport = "ferry.region_export";

int GetBuffer(PyObject* self, Py_buffer* view, int flags) {
  view->obj = nullptr;
  const std::shared_ptr<RegionBlock>& block = nb::inst_ptr<PyRegionBuffer>(self)->block;
  if (!block) {
    PyErr_SetString(PyExc_BufferError, "ferry.dipc.RegionBuffer: the buffer holds no block");
    return -1;
  }
  auto* exported = new RegionExport{block, static_cast<Py_ssize_t>(block->size)};
  PyObject* keeper = PyCapsule_New(exported, kRegionExport, [](PyObject* capsule) {
    delete static_cast<RegionExport*>(PyCapsule_GetPointer(capsule, kRegionExport));
  });
  if (keeper == nullptr) {
    delete exported;
    return -1;
  }
  view->buf = block->data;
  view->obj = keeper;
  view->len = exported->shape;
  view->readonly = 0;
  view->itemsize = 1;
  view->format = (flags & PyBUF_FORMAT) == PyBUF_FORMAT ? const_cast<char*>("B") : nullptr;
  view->ndim = 1;
  view->shape = (flags & PyBUF_ND) == PyBUF_ND ? &exported->shape : nullptr;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? &exported->stride : nullptr;
  view->suboffsets = nullptr;
  view->internal = nullptr;
  return 0;
}

void ReleaseBuffer(PyObject*, Py_buffer*) {}

PyType_Slot kBufferSlots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(GetBuffer)},
                              {Py_bf_releasebuffer, reinterpret_cast<void*>(ReleaseBuffer)},
                              {0, nullptr}};

PyRegionBuffer Allocate(const PyRegionAllocator& self, int64_t size) {
  if (size < 0) {
    Raise(PyExc_ValueError,
          "RegionAllocator.allocate: size must be >= 0, not " + std::to_string(size));
  }
  Result<uint8_t*> block = [&] {
    // Waits for room, which comes back as clients free batches: their releases may need the GIL.
    nb::gil_scoped_release release;
    return self.allocator->Allocate(size);
  }();
  uint8_t* data = Unwrap(std::move(block));
  return PyRegionBuffer{std::make_shared<RegionBlock>(self.allocator, data, size)};
}

}  // namespace

nb::object RegionAllocatorObject(std::shared_ptr<Allocator> allocator) {
  if (!allocator) return nb::none();
  return nb::cast(PyRegionAllocator{std::move(allocator)});
}

void InitDipcRegion(nb::module_& m) {
  nb::class_<PyRegionBuffer>(
      m, "RegionBuffer", nb::type_slots(kBufferSlots),
      "A writable block of a server's shared region (RegionAllocator.allocate), exported through "
      "the buffer protocol: numpy.frombuffer and pyarrow.py_buffer wrap it without a copy. The "
      "block goes back to the region once this object and every export of it are gone.")
      .def("__len__", [](const PyRegionBuffer& b) { return b.block->size; })
      .def_prop_ro(
          "address",
          [](const PyRegionBuffer& b) { return reinterpret_cast<uintptr_t>(b.block->data); },
          "The block's first byte's address in this process (64-byte aligned).")
      .def("__repr__", [](const PyRegionBuffer& b) {
        return "RegionBuffer(size=" + std::to_string(b.block->size) + ")";
      });

  nb::class_<PyRegionAllocator>(
      m, "RegionAllocator",
      "Memory of a server's shared region (Server.region_allocator()), for a producer that "
      "builds its batches where clients read them: a type-1 batch whose every buffer lies in "
      "such blocks is lent to its client in place, not copied, and released once that client "
      "frees it or goes. It keeps the region mapped while held, also after the server stops.")
      .def("allocate", &Allocate, nb::arg("size"),
           "A RegionBuffer of `size` bytes, 64-byte aligned. Blocks count against the server's "
           "region_bytes until freed: this waits (the GIL released) up to the server's timeout "
           "for room (TimeoutError), and a size that can never fit raises MemoryError at once.");
}

}  // namespace ferry::python
