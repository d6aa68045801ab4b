// The stand-in's memory: device memory the host cannot touch (a memfd mapped PROT_NONE for callers
// and read-write for the copy engine), managed and pinned memory the host can, pointer queries,
// and IPC handles that another process opens by mapping the same memfd.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "cuda_standin/state.hpp"

namespace standin {

namespace {

constexpr uint32_t kIpcMagic = 0x49534346;  // "FCSI"
constexpr char kMemfdName[] = "ferry-cuda-standin";

// What a CUipcMemHandle carries: where the exporter's memfd is, and what it must be.
struct IpcPayload {
  uint32_t magic;
  uint32_t version;
  int32_t pid;
  int32_t fd;
  uint64_t alloc_id;
  uint64_t size;
  uint64_t mapped;
  uint64_t inode;
  int32_t device;
  uint32_t reserved;
};
static_assert(sizeof(IpcPayload) <= sizeof(CUipcMemHandle));

size_t PageRound(size_t n) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

// Map `fd` twice: PROT_NONE for callers, read-write for the copy engine.
CUresult MapTwice(int fd, size_t mapped, uintptr_t* base, uint8_t** alias) {
  void* none = mmap(nullptr, mapped, PROT_NONE, MAP_SHARED, fd, 0);
  if (none == MAP_FAILED) return kOutOfMemory;
  void* rw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (rw == MAP_FAILED) {
    munmap(none, mapped);
    return kOutOfMemory;
  }
  *base = reinterpret_cast<uintptr_t>(none);
  *alias = static_cast<uint8_t*>(rw);
  return kSuccess;
}

CUresult NewDevice(size_t bytes, bool async, CUdeviceptr* out) {
  if (out == nullptr || bytes == 0) return kInvalidValue;
  State& s = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  const int device = CurrentDevice();
  if (device < 0) return kInvalidContext;
  auto a = std::make_shared<Alloc>();
  a->kind = Kind::kDevice;
  a->size = bytes;
  a->mapped = PageRound(bytes);
  a->device = device;
  a->async = async;
  a->fd = memfd_create(kMemfdName, MFD_CLOEXEC);
  if (a->fd < 0 || ftruncate(a->fd, static_cast<off_t>(a->mapped)) != 0) return kOutOfMemory;
  CUresult rc = MapTwice(a->fd, a->mapped, &a->base, &a->alias);
  if (rc != kSuccess) return rc;
  std::lock_guard<std::mutex> lock(s.mu);
  a->id = s.next_id++;
  s.allocs[a->base] = a;
  *out = a->base;
  STANDIN_COUNT(allocations_device, 1);
  return kSuccess;
}

CUresult NewHost(size_t bytes, Kind kind, uintptr_t* out) {
  if (out == nullptr || bytes == 0) return kInvalidValue;
  State& s = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  const int device = CurrentDevice();
  if (device < 0) return kInvalidContext;
  auto a = std::make_shared<Alloc>();
  a->kind = kind;
  a->size = bytes;
  a->mapped = PageRound(bytes);
  a->device = device;
  void* p = mmap(nullptr, a->mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return kOutOfMemory;
  a->base = reinterpret_cast<uintptr_t>(p);
  a->alias = static_cast<uint8_t*>(p);
  std::lock_guard<std::mutex> lock(s.mu);
  a->id = s.next_id++;
  s.allocs[a->base] = a;
  *out = a->base;
  if (kind == Kind::kPinned) {
    STANDIN_COUNT(allocations_pinned, 1);
  } else {
    STANDIN_COUNT(allocations_managed, 1);
  }
  return kSuccess;
}

// Free the allocation at `base` if it is of a kind `ok` accepts. Memory from cuMemAlloc and
// pinned memory wait for queued work first, as the driver does; stream-ordered memory does not.
template <typename Ok>
CUresult Free(uintptr_t base, Ok ok) {
  State& s = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  std::unique_lock<std::mutex> lock(s.mu);
  auto it = s.allocs.find(base);
  if (it == s.allocs.end() || !ok(*it->second)) return kInvalidValue;
  if (!it->second->async && DrainAllLocked(lock)) STANDIN_COUNT(implicit_synchronizations, 1);
  EraseLocked(base);
  STANDIN_COUNT(frees, 1);
  return kSuccess;
}

// The inode of an open file, or 0.
uint64_t InodeOf(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

}  // namespace

Alloc::~Alloc() {
  if (base != 0) munmap(reinterpret_cast<void*>(base), mapped);
  if (alias != nullptr && reinterpret_cast<uintptr_t>(alias) != base) munmap(alias, mapped);
  if (fd >= 0) close(fd);
}

std::shared_ptr<Alloc> FindLocked(uintptr_t p, size_t n, bool* bad) {
  State& s = GetState();
  auto it = s.allocs.upper_bound(p);
  if (it == s.allocs.begin()) return nullptr;
  --it;
  const std::shared_ptr<Alloc>& a = it->second;
  if (p >= a->base + a->mapped) return nullptr;
  if (p >= a->base + a->size || n > a->base + a->size - p) *bad = true;
  return a;
}

void EraseLocked(uintptr_t base) { GetState().allocs.erase(base); }

}  // namespace standin

using namespace standin;  // NOLINT(google-build-using-namespace): the exported C functions

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) { return NewDevice(bytes, false, dptr); }

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  {
    std::lock_guard<std::mutex> lock(GetState().mu);
    CUresult rc = kSuccess;
    if (GetState().initialized && ResolveStreamLocked(stream, &rc) == nullptr) return rc;
  }
  return NewDevice(bytes, true, dptr);
}

CUresult cuMemAllocHost_v2(void** pp, size_t bytes) {
  uintptr_t p = 0;
  CUresult rc = NewHost(bytes, Kind::kPinned, &p);
  if (rc == kSuccess) *pp = reinterpret_cast<void*>(p);
  return rc;
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int flags) {
  if (flags != kMemAttachGlobal && flags != kMemAttachHost) return kInvalidValue;
  uintptr_t p = 0;
  CUresult rc = NewHost(bytes, Kind::kManaged, &p);
  if (rc == kSuccess) *dptr = p;
  return rc;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  if (CurrentDevice() < 0 && GetState().initialized) return kInvalidContext;
  return Free(dptr, [](const Alloc& a) { return a.kind != Kind::kPinned && !a.imported; });
}

CUresult cuMemFreeHost(void* p) {
  return Free(reinterpret_cast<uintptr_t>(p),
              [](const Alloc& a) { return a.kind == Kind::kPinned; });
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  State& s = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  std::lock_guard<std::mutex> lock(s.mu);
  CUresult rc = kSuccess;
  std::shared_ptr<Stream> st = ResolveStreamLocked(stream, &rc);
  if (st == nullptr) return rc;
  auto it = s.allocs.find(dptr);
  if (it == s.allocs.end() || it->second->kind == Kind::kPinned || it->second->imported) {
    return kInvalidValue;
  }
  Op op;
  op.type = Op::Type::kFree;
  op.freed = it->second;
  EnqueueLocked(st, std::move(op));
  STANDIN_COUNT(frees, 1);
  return kSuccess;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr dptr) {
  State& s = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  std::lock_guard<std::mutex> lock(s.mu);
  bool bad = false;
  std::shared_ptr<Alloc> a = FindLocked(dptr, 1, &bad);
  if (a == nullptr || bad || a->kind == Kind::kPinned) return kNotFound;
  if (base != nullptr) *base = a->base;
  if (size != nullptr) *size = a->size;
  return kSuccess;
}

namespace {

// One attribute of the allocation `a` (null: memory the stand-in does not know) at `ptr`.
CUresult Attribute(const Alloc* a, int attribute, CUdeviceptr ptr, void* data, bool lenient) {
  if (a == nullptr) {
    if (!lenient) return kInvalidValue;
    // cuPointerGetAttributes reports unknown memory with zeroed values.
    switch (attribute) {
      case kAttrContext:
      case kAttrDevicePointer:
      case kAttrHostPointer:
        *static_cast<void**>(data) = nullptr;
        return kSuccess;
      case kAttrBufferId:
        *static_cast<unsigned long long*>(data) = 0;  // NOLINT(google-runtime-int)
        return kSuccess;
      case kAttrRangeStartAddr:
        *static_cast<CUdeviceptr*>(data) = 0;
        return kSuccess;
      case kAttrRangeSize:
        *static_cast<size_t*>(data) = 0;
        return kSuccess;
      case kAttrDeviceOrdinal:
        *static_cast<int*>(data) = -2;
        return kSuccess;
      default:
        *static_cast<unsigned*>(data) = 0;
        return kSuccess;
    }
  }
  switch (attribute) {
    case kAttrContext:
      *static_cast<CUcontext*>(data) = nullptr;  // filled in by driver.cpp's caller below
      return kSuccess;
    case kAttrMemoryType:
      *static_cast<unsigned*>(data) =
          a->kind == Kind::kPinned ? kMemoryTypeHost : kMemoryTypeDevice;
      return kSuccess;
    case kAttrDevicePointer:
      *static_cast<void**>(data) = reinterpret_cast<void*>(ptr);
      return kSuccess;
    case kAttrHostPointer:
      if (a->kind == Kind::kDevice) return kInvalidValue;  // not host-accessible
      *static_cast<void**>(data) = reinterpret_cast<void*>(ptr);
      return kSuccess;
    case kAttrBufferId:
      *static_cast<unsigned long long*>(data) = a->id;  // NOLINT(google-runtime-int)
      return kSuccess;
    case kAttrIsManaged:
      *static_cast<unsigned*>(data) = a->kind == Kind::kManaged ? 1 : 0;
      return kSuccess;
    case kAttrDeviceOrdinal:
      *static_cast<int*>(data) = a->device;
      return kSuccess;
    case kAttrIsLegacyIpcCapable:
      *static_cast<unsigned*>(data) = a->kind == Kind::kDevice && !a->async && !a->imported;
      return kSuccess;
    case kAttrRangeStartAddr:
      *static_cast<CUdeviceptr*>(data) = a->base;
      return kSuccess;
    case kAttrRangeSize:
      *static_cast<size_t*>(data) = a->size;
      return kSuccess;
    case kAttrMapped:
      *static_cast<unsigned*>(data) = 1;
      return kSuccess;
    default:
      return kInvalidValue;
  }
}

}  // namespace

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  State& s = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (data == nullptr) return kInvalidValue;
  std::shared_ptr<Alloc> a;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    bool bad = false;
    a = FindLocked(ptr, 1, &bad);
    if (bad) a = nullptr;
  }
  if (attribute == kAttrContext && a != nullptr) {
    // Named without a retain: a release here would be the context's last while `a` lives.
    std::lock_guard<std::mutex> lock(s.mu);
    *static_cast<CUcontext*>(data) =
        reinterpret_cast<CUcontext>(s.contexts[static_cast<size_t>(a->device)].get());
    return kSuccess;
  }
  return Attribute(a.get(), attribute, ptr, data, /*lenient=*/false);
}

CUresult cuPointerGetAttributes(unsigned int count, CUpointer_attribute* attributes, void** data,
                                CUdeviceptr ptr) {
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (count > 0 && (attributes == nullptr || data == nullptr)) return kInvalidValue;
  for (unsigned i = 0; i < count; ++i) {
    if (data[i] == nullptr) return kInvalidValue;
    CUresult rc = cuPointerGetAttribute(data[i], attributes[i], ptr);
    if (rc == kInvalidValue) {
      std::shared_ptr<Alloc> a;
      {
        std::lock_guard<std::mutex> lock(GetState().mu);
        bool bad = false;
        a = FindLocked(ptr, 1, &bad);
      }
      // Unknown memory is not an error here; an unknown attribute or a value the memory does not
      // have (the host pointer of device memory) is.
      if (a != nullptr) return rc;
      rc = Attribute(nullptr, attributes[i], ptr, data[i], /*lenient=*/true);
    }
    if (rc != kSuccess) return rc;
  }
  return kSuccess;
}

// -- IPC ------------------------------------------------------------------------------------------

CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr dptr) {
  State& s = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (handle == nullptr) return kInvalidValue;
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.allocs.find(dptr);  // the base of an allocation, as the driver requires
  if (it == s.allocs.end()) return kInvalidValue;
  const Alloc& a = *it->second;
  if (a.kind != Kind::kDevice || a.async || a.imported) return kInvalidValue;
  IpcPayload p{};
  p.magic = kIpcMagic;
  p.version = 1;
  p.pid = static_cast<int32_t>(getpid());
  p.fd = a.fd;
  p.alloc_id = a.id;
  p.size = a.size;
  p.mapped = a.mapped;
  p.inode = InodeOf(a.fd);
  p.device = a.device;
  std::memset(handle, 0, sizeof(*handle));
  std::memcpy(handle->reserved, &p, sizeof(p));
  STANDIN_COUNT(ipc_exports, 1);
  return kSuccess;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* dptr, CUipcMemHandle handle, unsigned int flags) {
  State& s = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (dptr == nullptr || (flags & ~kIpcLazyEnablePeerAccess) != 0) return kInvalidValue;
  const int device = CurrentDevice();
  if (device < 0) return kInvalidContext;
  IpcPayload p{};
  std::memcpy(&p, handle.reserved, sizeof(p));
  if (p.magic != kIpcMagic || p.version != 1 || p.size == 0 || p.size > p.mapped) {
    return kInvalidValue;
  }
  // The driver refuses to open a handle in the process that exported it.
  if (p.pid == static_cast<int32_t>(getpid())) return kInvalidContext;
  // Memory of another GPU opens only where that GPU is a peer of the current one, and only when
  // the caller lets the driver enable peer access (CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS).
  if (p.device != device &&
      (p.device < 0 || p.device >= s.device_count || (flags & kIpcLazyEnablePeerAccess) == 0)) {
    return kInvalidDevice;
  }
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(p.pid)) << 32) ^ p.alloc_id;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    for (auto& [base, a] : s.allocs) {
      if (a->imported && a->import_key == key) {
        a->import_refs += 1;
        *dptr = base;
        STANDIN_COUNT(ipc_opens, 1);
        return kSuccess;
      }
    }
  }
  const std::string path = "/proc/" + std::to_string(p.pid) + "/fd/" + std::to_string(p.fd);
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return kInvalidHandle;  // the exporter is gone, or the handle is stale
  if (InodeOf(fd) != p.inode) {
    close(fd);
    return kInvalidHandle;
  }
  auto a = std::make_shared<Alloc>();
  a->kind = Kind::kDevice;
  a->size = p.size;
  a->mapped = p.mapped;
  a->device = p.device;
  a->imported = true;
  a->import_refs = 1;
  a->import_key = key;
  CUresult rc = MapTwice(fd, a->mapped, &a->base, &a->alias);
  close(fd);  // the mappings keep the memory
  if (rc != kSuccess) return kMapFailed;
  std::lock_guard<std::mutex> lock(s.mu);
  a->id = s.next_id++;
  s.allocs[a->base] = a;
  *dptr = a->base;
  STANDIN_COUNT(ipc_opens, 1);
  return kSuccess;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  State& s = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  std::unique_lock<std::mutex> lock(s.mu);
  auto it = s.allocs.find(dptr);
  if (it == s.allocs.end() || !it->second->imported) return kInvalidValue;
  STANDIN_COUNT(ipc_closes, 1);
  if (--it->second->import_refs > 0) return kSuccess;
  DrainAllLocked(lock);
  EraseLocked(dptr);
  return kSuccess;
}

// -- The stand-in's own functions
// -------------------------------------------------------------------

STANDIN_EXPORT int64_t ferry_cuda_standin_live_allocations(void) {
  std::lock_guard<std::mutex> lock(GetState().mu);
  return static_cast<int64_t>(GetState().allocs.size());
}

STANDIN_EXPORT void ferry_cuda_standin_live(FerryCudaStandinLive* out) {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  FerryCudaStandinLive live{};
  for (const auto& [base, a] : st.allocs) {
    if (a->imported) {
      live.ipc_mappings += a->import_refs;
    } else if (a->kind == Kind::kDevice) {
      live.device_allocations += 1;
    } else if (a->kind == Kind::kPinned) {
      live.pinned_allocations += 1;
    } else {
      live.managed_allocations += 1;
    }
  }
  live.streams = static_cast<int64_t>(st.streams.size());
  live.events = static_cast<int64_t>(st.events.size());
  for (const auto& c : st.contexts) live.context_retains += c->refs;
  *out = live;
}

STANDIN_EXPORT int64_t ferry_cuda_standin_ipc_open_handles(void) {
  std::lock_guard<std::mutex> lock(GetState().mu);
  int64_t n = 0;
  for (const auto& [base, a] : GetState().allocs) n += a->imported ? a->import_refs : 0;
  return n;
}

STANDIN_EXPORT int64_t ferry_cuda_standin_ipc_importers(unsigned long long dptr) {  // NOLINT
  uint64_t inode = 0;
  {
    std::lock_guard<std::mutex> lock(GetState().mu);
    bool bad = false;
    std::shared_ptr<Alloc> a = FindLocked(dptr, 1, &bad);
    if (a == nullptr || a->kind != Kind::kDevice || a->fd < 0) return -1;
    inode = InodeOf(a->fd);
  }
  // Every other process whose address space maps this memfd (a killed one has no maps left).
  const std::string needle = std::string("/memfd:") + kMemfdName;
  const pid_t self = getpid();
  int64_t count = 0;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return -1;
  while (const dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);  // NOLINT(google-runtime-int)
    if (end == entry->d_name || *end != '\0' || pid == self) continue;
    std::ifstream maps("/proc/" + std::string(entry->d_name) + "/maps");
    std::string line;
    bool found = false;
    while (!found && std::getline(maps, line)) {
      if (line.find(needle) == std::string::npos) continue;
      char perms[8], dev[16];
      unsigned long long start, stop, offset, ino;  // NOLINT(google-runtime-int)
      if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %15s %llu", &start, &stop, perms, &offset,
                      dev, &ino) == 6 &&
          ino == inode) {
        found = true;
      }
    }
    count += found ? 1 : 0;
  }
  closedir(proc);
  return count;
}
