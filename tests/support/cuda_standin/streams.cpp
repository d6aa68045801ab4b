// The stand-in's streams, events and copy engine. Each stream is a worker thread that runs its
// queue in order after the configured delay per operation, so a host read that skips a wait sees
// stale bytes. Copies follow the driver's rules for pageable host memory: a pageable source is
// staged after the stream drains, a pageable destination is written before the call returns.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "cuda_standin/state.hpp"

namespace standin {

namespace {

bool Live(const std::shared_ptr<Alloc>& a) {
  if (a == nullptr) return true;
  auto it = GetState().allocs.find(a->base);
  return it != GetState().allocs.end() && it->second == a;
}

uint8_t* Address(const std::shared_ptr<Alloc>& a, uintptr_t p) {
  if (a == nullptr) return reinterpret_cast<uint8_t*>(p);  // NOLINT(performance-no-int-to-ptr)
  return a->alias + (p - a->base);
}

// Run one operation (not a wait); `lock` is held on entry and exit.
CUresult Execute(std::unique_lock<std::mutex>& lock, Op& op) {
  switch (op.type) {
    case Op::Type::kCopy: {
      if (!Live(op.dst_alloc) || !Live(op.src_alloc)) return kIllegalAddress;
      uint8_t* dst = Address(op.dst_alloc, op.dst);
      const uint8_t* src = op.staged ? op.staged->data() : Address(op.src_alloc, op.src);
      lock.unlock();
      std::memmove(dst, src, op.bytes);
      lock.lock();
      return kSuccess;
    }
    case Op::Type::kHostFunc: {
      lock.unlock();
      {
        InHostFunction marked;  // a driver call from here fails, as on the real driver
        op.fn(op.user_data);
      }
      lock.lock();
      return kSuccess;
    }
    case Op::Type::kFree:
      if (Live(op.freed)) EraseLocked(op.freed->base);
      return kSuccess;
    case Op::Type::kWait:
      break;
  }
  return kSuccess;
}

void Run(Stream* s) {
  State& st = GetState();
  std::unique_lock<std::mutex> lock(st.mu);
  for (;;) {
    st.progress.wait(lock, [&] { return !s->queue.empty() || s->stopping; });
    if (s->queue.empty()) return;
    Op op = std::move(s->queue.front());
    s->queue.pop_front();
    if (op.type == Op::Type::kWait) {
      const std::shared_ptr<Stream>& t = op.target;
      st.progress.wait(lock, [&] { return t->completed >= op.seq; });
    } else {
      const int64_t delay = st.delay_us.load(std::memory_order_relaxed);
      if (delay > 0) {
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::microseconds(delay));
        lock.lock();
      }
      const CUresult rc = Execute(lock, op);
      if (rc != kSuccess) {
        STANDIN_COUNT(stream_errors, 1);
        std::fprintf(stderr,
                     "ferry CUDA stand-in: a copy of %zu bytes from %#zx to %#zx touched memory "
                     "freed after it was queued (CUDA_ERROR_ILLEGAL_ADDRESS)\n",
                     op.bytes, static_cast<size_t>(op.src), static_cast<size_t>(op.dst));
        if (s->error == kSuccess) s->error = rc;
      }
    }
    s->completed += 1;
    st.progress.notify_all();
  }
}

Op WaitOp(const std::shared_ptr<Stream>& target) {
  Op op;
  op.type = Op::Type::kWait;
  op.target = target;
  op.seq = target->enqueued;
  return op;
}

void Push(const std::shared_ptr<Stream>& s, Op op) {
  s->queue.push_back(std::move(op));
  s->enqueued += 1;
}

bool Blocking(const Stream& s) { return !s.legacy && (s.flags & kStreamNonBlocking) == 0; }

}  // namespace

std::shared_ptr<Stream> MakeStream(int device, unsigned flags, bool legacy) {
  auto s = std::make_shared<Stream>();
  s->device = device;
  s->flags = flags;
  s->legacy = legacy;
  s->worker = std::thread(Run, s.get());
  return s;
}

void StopStream(const std::shared_ptr<Stream>& s) {
  {
    std::lock_guard<std::mutex> lock(GetState().mu);
    s->stopping = true;
  }
  GetState().progress.notify_all();
  if (s->worker.joinable()) s->worker.join();
}

std::vector<std::shared_ptr<Stream>> ResetContextLocked(int device) {
  State& st = GetState();
  std::vector<std::shared_ptr<Stream>> streams;
  for (auto it = st.streams.begin(); it != st.streams.end();) {
    if (it->second->device == device) {
      streams.push_back(std::move(it->second));
      it = st.streams.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = st.events.begin(); it != st.events.end();) {
    auto* e = reinterpret_cast<Event*>(*it);
    if (e->device == device) {
      delete e;
      it = st.events.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = st.allocs.begin(); it != st.allocs.end();) {
    // A copy in flight keeps its allocation mapped through its own reference.
    it = it->second->device == device ? st.allocs.erase(it) : std::next(it);
  }
  return streams;
}

std::shared_ptr<Stream> ResolveStreamLocked(CUstream handle, CUresult* rc) {
  State& st = GetState();
  const int device = CurrentDevice();
  if (device < 0) {
    *rc = kInvalidContext;  // the real driver needs a current context, whatever the stream
    return nullptr;
  }
  const auto value = reinterpret_cast<uintptr_t>(handle);
  if (value == 0 || value == kStreamLegacy) {
    Context& ctx = *st.contexts[static_cast<size_t>(device)];
    if (ctx.legacy == nullptr) ctx.legacy = MakeStream(device, 0, true);
    return ctx.legacy;
  }
  if (value == kStreamPerThread) {
    std::shared_ptr<Stream>& own = st.per_thread[{std::this_thread::get_id(), device}];
    if (own == nullptr) own = MakeStream(device, 0, false);
    return own;
  }
  auto it = st.streams.find(handle);
  if (it == st.streams.end()) {
    *rc = kInvalidHandle;
    return nullptr;
  }
  return it->second;
}

void EnqueueLocked(const std::shared_ptr<Stream>& s, Op op) {
  State& st = GetState();
  // The legacy default stream waits for blocking streams' earlier work, and they for its.
  if (s->legacy) {
    const auto wait_for = [&](const std::shared_ptr<Stream>& other) {
      if (other->device == s->device && Blocking(*other) && other->completed < other->enqueued) {
        Push(s, WaitOp(other));
      }
    };
    for (auto& [handle, other] : st.streams) wait_for(other);
    for (auto& [owner, other] : st.per_thread) wait_for(other);
  } else if (Blocking(*s)) {
    const std::shared_ptr<Stream>& legacy = st.contexts[static_cast<size_t>(s->device)]->legacy;
    if (legacy != nullptr && legacy->completed < legacy->enqueued) Push(s, WaitOp(legacy));
  }
  Push(s, std::move(op));
  st.progress.notify_all();
}

CUresult WaitForLocked(std::unique_lock<std::mutex>& lock, const std::shared_ptr<Stream>& s,
                       uint64_t seq) {
  GetState().progress.wait(lock, [&] { return s->completed >= seq; });
  return s->error;
}

bool DrainAllLocked(std::unique_lock<std::mutex>& lock) {
  State& st = GetState();
  std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> targets;
  for (auto& [handle, s] : st.streams) targets.emplace_back(s, s->enqueued);
  for (auto& [owner, s] : st.per_thread) targets.emplace_back(s, s->enqueued);
  for (auto& ctx : st.contexts) {
    if (ctx->legacy != nullptr) targets.emplace_back(ctx->legacy, ctx->legacy->enqueued);
  }
  bool waited = false;
  for (auto& [s, seq] : targets) {
    if (s->completed < seq) waited = true;
    WaitForLocked(lock, s, seq);
  }
  return waited;
}

}  // namespace standin

using namespace standin;  // NOLINT(google-build-using-namespace): the exported C functions

namespace {

// cuMemcpy, cuMemcpyAsync and cuMemcpyPeerAsync.
CUresult Copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream handle, bool sync) {
  State& st = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  std::unique_lock<std::mutex> lock(st.mu);
  CUresult rc = kSuccess;
  std::shared_ptr<Stream> s = ResolveStreamLocked(handle, &rc);
  if (s == nullptr) return rc;
  if (bytes == 0) return kSuccess;
  if (dst == 0 || src == 0) return kInvalidValue;
  bool bad = false;
  std::shared_ptr<Alloc> da = FindLocked(dst, bytes, &bad);
  std::shared_ptr<Alloc> sa = FindLocked(src, bytes, &bad);
  if (bad) return kInvalidValue;  // a range that runs past the end of its allocation
  const bool d_dev = da != nullptr && da->kind != Kind::kPinned;
  const bool s_dev = sa != nullptr && sa->kind != Kind::kPinned;
  const auto n = static_cast<int64_t>(bytes);
  if (s_dev && d_dev) {
    STANDIN_COUNT(copies_d2d, 1);
    STANDIN_COUNT(bytes_d2d, n);
  } else if (s_dev) {
    STANDIN_COUNT(copies_d2h, 1);
    STANDIN_COUNT(bytes_d2h, n);
  } else if (d_dev) {
    STANDIN_COUNT(copies_h2d, 1);
    STANDIN_COUNT(bytes_h2d, n);
  } else {
    STANDIN_COUNT(copies_h2h, 1);
    STANDIN_COUNT(bytes_h2h, n);
  }
  const bool s_pageable = sa == nullptr;
  const bool d_pageable = da == nullptr;
  if (s_pageable || d_pageable) STANDIN_COUNT(pageable_copies, 1);
  Op op;
  op.dst = dst;
  op.src = src;
  op.bytes = bytes;
  op.dst_alloc = da;
  op.src_alloc = sa;
  if (s_pageable) {
    // The driver drains the stream, then stages the pageable bytes (the caller may reuse them
    // once the call returns); pageable to pageable is done entirely before returning.
    STANDIN_COUNT(implicit_synchronizations, 1);
    WaitForLocked(lock, s, s->enqueued);
    if (d_pageable) {
      std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
      return s->error;
    }
    const auto* from = reinterpret_cast<const uint8_t*>(src);  // NOLINT(performance-no-int-to-ptr)
    op.staged = std::make_shared<std::vector<uint8_t>>(from, from + bytes);
  }
  EnqueueLocked(s, std::move(op));
  if (d_pageable || sync) {
    // A pageable destination is written before the call returns; cuMemcpy is synchronous.
    if (!s_pageable) STANDIN_COUNT(implicit_synchronizations, 1);
    return WaitForLocked(lock, s, s->enqueued);
  }
  return kSuccess;
}

Event* EventOf(CUevent handle) {
  State& st = GetState();
  return st.events.count(handle) != 0 ? reinterpret_cast<Event*>(handle) : nullptr;
}

}  // namespace

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return Copy(dst, src, bytes, nullptr, /*sync=*/true);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return Copy(dst, src, bytes, stream, /*sync=*/false);
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                           size_t bytes, CUstream stream) {
  if (dst_ctx == nullptr || src_ctx == nullptr) return kInvalidContext;
  return Copy(dst, src, bytes, stream, /*sync=*/false);
}

CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  State& st = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (stream == nullptr || (flags & ~kStreamNonBlocking) != 0) return kInvalidValue;
  const int device = CurrentDevice();
  if (device < 0) return kInvalidContext;
  std::shared_ptr<Stream> s = MakeStream(device, flags, false);
  std::lock_guard<std::mutex> lock(st.mu);
  auto handle = reinterpret_cast<CUstream>(s.get());
  st.streams[handle] = std::move(s);
  *stream = handle;
  return kSuccess;
}

CUresult cuStreamDestroy_v2(CUstream stream) {
  State& st = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  std::shared_ptr<Stream> s;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    auto it = st.streams.find(stream);
    if (it == st.streams.end()) return kInvalidHandle;
    s = it->second;
    st.streams.erase(it);
  }
  StopStream(s);  // its queued work still runs, as on the GPU
  return kSuccess;
}

CUresult cuStreamSynchronize(CUstream stream) {
  State& st = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  std::unique_lock<std::mutex> lock(st.mu);
  CUresult rc = kSuccess;
  std::shared_ptr<Stream> s = ResolveStreamLocked(stream, &rc);
  if (s == nullptr) return rc;
  STANDIN_COUNT(synchronizations, 1);
  return WaitForLocked(lock, s, s->enqueued);
}

CUresult cuStreamQuery(CUstream stream) {
  State& st = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  std::lock_guard<std::mutex> lock(st.mu);
  CUresult rc = kSuccess;
  std::shared_ptr<Stream> s = ResolveStreamLocked(stream, &rc);
  if (s == nullptr) return rc;
  if (s->error != kSuccess) return s->error;
  return s->completed >= s->enqueued ? kSuccess : kNotReady;
}

CUresult cuCtxSynchronize() {
  State& st = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (CurrentDevice() < 0) return kInvalidContext;
  std::unique_lock<std::mutex> lock(st.mu);
  STANDIN_COUNT(synchronizations, 1);
  DrainAllLocked(lock);
  return kSuccess;
}

CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void* user_data) {
  State& st = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (fn == nullptr) return kInvalidValue;
  std::lock_guard<std::mutex> lock(st.mu);
  CUresult rc = kSuccess;
  std::shared_ptr<Stream> s = ResolveStreamLocked(stream, &rc);
  if (s == nullptr) return rc;
  Op op;
  op.type = Op::Type::kHostFunc;
  op.fn = fn;
  op.user_data = user_data;
  EnqueueLocked(s, std::move(op));
  STANDIN_COUNT(host_funcs, 1);
  return kSuccess;
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  State& st = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (flags > 1) return kInvalidValue;
  std::lock_guard<std::mutex> lock(st.mu);
  CUresult rc = kSuccess;
  std::shared_ptr<Stream> s = ResolveStreamLocked(stream, &rc);
  if (s == nullptr) return rc;
  Event* e = EventOf(event);
  if (e == nullptr) return kInvalidHandle;
  if (e->stream == nullptr) return kSuccess;  // never recorded: nothing to wait for
  Op op;
  op.type = Op::Type::kWait;
  op.target = e->stream;
  op.seq = e->seq;
  EnqueueLocked(s, std::move(op));
  STANDIN_COUNT(stream_waits, 1);
  return kSuccess;
}

CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  State& st = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (event == nullptr || (flags & ~kEventFlagsMask) != 0) return kInvalidValue;
  if (CurrentDevice() < 0) return kInvalidContext;
  auto* e = new Event;
  e->flags = flags;
  e->device = CurrentDevice();
  std::lock_guard<std::mutex> lock(st.mu);
  *event = reinterpret_cast<CUevent>(e);
  st.events.insert(*event);
  return kSuccess;
}

CUresult cuEventDestroy_v2(CUevent event) {
  State& st = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  std::lock_guard<std::mutex> lock(st.mu);
  Event* e = EventOf(event);
  if (e == nullptr) return kInvalidHandle;
  st.events.erase(event);
  delete e;
  return kSuccess;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  State& st = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  std::lock_guard<std::mutex> lock(st.mu);
  Event* e = EventOf(event);
  if (e == nullptr) return kInvalidHandle;
  CUresult rc = kSuccess;
  std::shared_ptr<Stream> s = ResolveStreamLocked(stream, &rc);
  if (s == nullptr) return rc;
  e->stream = s;
  e->seq = s->enqueued;
  STANDIN_COUNT(event_records, 1);
  return kSuccess;
}

CUresult cuEventQuery(CUevent event) {
  State& st = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  std::lock_guard<std::mutex> lock(st.mu);
  Event* e = EventOf(event);
  if (e == nullptr) return kInvalidHandle;
  if (e->stream == nullptr) return kSuccess;
  return e->stream->completed >= e->seq ? kSuccess : kNotReady;
}

CUresult cuEventSynchronize(CUevent event) {
  State& st = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  std::unique_lock<std::mutex> lock(st.mu);
  Event* e = EventOf(event);
  if (e == nullptr) return kInvalidHandle;
  STANDIN_COUNT(synchronizations, 1);
  if (e->stream == nullptr) return kSuccess;
  std::shared_ptr<Stream> s = e->stream;
  return WaitForLocked(lock, s, e->seq);
}
