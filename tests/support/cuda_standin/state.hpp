// The stand-in driver's state: allocations, contexts, streams, events and counters, shared by
// memory.cpp, streams.cpp and driver.cpp. One process-wide State, never destroyed (streams may
// still be draining while other libraries' destructors run at exit).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "cuda_standin/cuda_standin.h"
#include "cuda_standin/driver_abi.hpp"

namespace standin {

enum class Kind : uint8_t { kDevice, kManaged, kPinned };

/// One allocation. Device memory is a memfd mapped twice: `base` (what callers get) is PROT_NONE,
/// `alias` is the read-write view only the copy engine uses. Managed and pinned memory are plain
/// read-write mappings (`alias == base`). The mappings go when the last reference goes, so a copy
/// in flight keeps freed memory mapped until it has reported its error.
struct Alloc {
  Kind kind = Kind::kDevice;
  uint64_t id = 0;
  uintptr_t base = 0;
  size_t size = 0;    // bytes asked for
  size_t mapped = 0;  // bytes mapped (whole pages)
  uint8_t* alias = nullptr;
  int fd = -1;
  int device = 0;
  bool async = false;     // cuMemAllocAsync: not IPC-capable, cuMemFree does not wait
  bool imported = false;  // opened from another process's IPC handle
  int import_refs = 0;
  uint64_t import_key = 0;  // (exporter pid, exporter allocation id) of an imported block

  Alloc() = default;
  Alloc(const Alloc&) = delete;
  Alloc& operator=(const Alloc&) = delete;
  ~Alloc();
};

struct Stream;

/// One queued operation of a stream.
struct Op {
  enum class Type : uint8_t { kCopy, kWait, kHostFunc, kFree };
  Type type = Type::kCopy;
  // kCopy: addresses as given, the allocations they lie in (null for pageable host memory) and,
  // for pageable sources, the bytes staged when the copy was issued.
  uintptr_t dst = 0, src = 0;
  size_t bytes = 0;
  std::shared_ptr<Alloc> dst_alloc, src_alloc;
  std::shared_ptr<std::vector<uint8_t>> staged;
  // kWait: run once `target` has completed `seq` operations.
  std::shared_ptr<Stream> target;
  uint64_t seq = 0;
  // kHostFunc.
  CUhostFn fn = nullptr;
  void* user_data = nullptr;
  // kFree: the allocation cuMemFreeAsync releases when the stream reaches it.
  std::shared_ptr<Alloc> freed;
};

/// A stream: a worker thread that runs its queue in order, sleeping the configured delay before
/// each operation. `enqueued` and `completed` count operations; an event is a (stream, count).
struct Stream {
  int device = 0;
  unsigned flags = 0;
  bool legacy = false;
  std::deque<Op> queue;
  uint64_t enqueued = 0;
  uint64_t completed = 0;
  CUresult error = kSuccess;  // sticky: the first failed operation's code
  bool stopping = false;
  std::thread worker;
};

/// An event: the point of its last record, or none yet.
struct Event {
  unsigned flags = 0;
  int device = 0;  // of the context it was made in
  std::shared_ptr<Stream> stream;
  uint64_t seq = 0;
};

/// A device's primary context.
struct Context {
  int device = 0;
  int refs = 0;
  std::shared_ptr<Stream> legacy;  // created on first use
};

struct State {
  std::mutex mu;
  std::condition_variable progress;  // notified whenever a stream completes an operation
  bool initialized = false;
  int device_count = 1;
  std::atomic<int64_t> delay_us{0};
  std::vector<std::unique_ptr<Context>> contexts;
  std::map<uintptr_t, std::shared_ptr<Alloc>> allocs;  // by base address
  std::map<CUstream, std::shared_ptr<Stream>> streams;
  // Each thread's per-thread default stream, by (thread, device): made on first use, blocking
  // (ordered with the legacy stream), never destroyed.
  std::map<std::pair<std::thread::id, int>, std::shared_ptr<Stream>> per_thread;
  std::set<CUevent> events;
  uint64_t next_id = 1;

  std::atomic<int64_t> counters[sizeof(FerryCudaStandinCounters) / sizeof(int64_t)] = {};
};

State& GetState();

/// Add `n` to the counter `field` of FerryCudaStandinCounters.
#define STANDIN_COUNT(field, n)                                              \
  ::standin::GetState()                                                      \
      .counters[offsetof(FerryCudaStandinCounters, field) / sizeof(int64_t)] \
      .fetch_add((n), std::memory_order_relaxed)

// memory.cpp
/// The allocation holding [p, p + n), or null for host memory the stand-in did not allocate.
/// `*bad` is set when p lies in an allocation but the range runs past its end. Needs `mu`.
std::shared_ptr<Alloc> FindLocked(uintptr_t p, size_t n, bool* bad);
/// Unmap and forget an allocation (after the caller waited where the driver waits). Needs `mu`.
void EraseLocked(uintptr_t base);

// streams.cpp
/// The stream a handle names: 0 and CU_STREAM_LEGACY are the current context's legacy stream,
/// CU_STREAM_PER_THREAD the calling thread's own default stream on that context. Every handle,
/// an explicit one too, needs a current context (CUDA_ERROR_INVALID_CONTEXT). Null with `*rc` set
/// when there is none. Needs `mu`.
std::shared_ptr<Stream> ResolveStreamLocked(CUstream handle, CUresult* rc);
/// Append `op` to `s` (with the legacy stream's implicit ordering). Needs `mu`.
void EnqueueLocked(const std::shared_ptr<Stream>& s, Op op);
/// Wait until `s` has completed `seq` operations; returns the stream's sticky error. Needs `lock`.
CUresult WaitForLocked(std::unique_lock<std::mutex>& lock, const std::shared_ptr<Stream>& s,
                       uint64_t seq);
/// Wait for every stream to drain (what cuMemFree does); true when the host had to wait.
bool DrainAllLocked(std::unique_lock<std::mutex>& lock);
/// A new stream with its worker.
std::shared_ptr<Stream> MakeStream(int device, unsigned flags, bool legacy);
/// Stop a stream's worker after its queue has drained.
void StopStream(const std::shared_ptr<Stream>& s);
/// Forget every stream, event and allocation a device's primary context made: what the driver
/// frees when the context's last retain is released, after which their handles are stale. Returns
/// the streams, whose workers the caller stops once it has let go of `mu`. Needs `mu`.
std::vector<std::shared_ptr<Stream>> ResetContextLocked(int device);

// driver.cpp
/// The device of the calling thread's current context, or -1.
int CurrentDevice();
/// What every driver entry point checks first: CUDA_ERROR_NOT_PERMITTED from inside a host
/// function (the real driver forbids any driver call there), CUDA_ERROR_NOT_INITIALIZED before
/// cuInit, else success.
CUresult Enter();
/// Marks the calling thread as running a host function, for the scope.
class InHostFunction {
 public:
  InHostFunction();
  ~InHostFunction();
  InHostFunction(const InHostFunction&) = delete;
  InHostFunction& operator=(const InHostFunction&) = delete;
};

}  // namespace standin

/// The stand-in's exported functions: C linkage, visible (the library is built hidden).
#define STANDIN_EXPORT extern "C" __attribute__((visibility("default")))

#define STANDIN_DECLARE(name, ret, params) STANDIN_EXPORT ret name params;
FERRY_STANDIN_ENTRY_POINTS(STANDIN_DECLARE)
#undef STANDIN_DECLARE
