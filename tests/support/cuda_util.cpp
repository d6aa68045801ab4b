// CUDA test support (see cuda_util.hpp).
#include "support/cuda_util.hpp"

#include <dlfcn.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

namespace ferry::testing {

namespace {

void* DriverLibrary() {
  static void* lib = [] {
    const char* path = std::getenv("FERRY_CUDA_DRIVER");
    if (path == nullptr || *path == '\0') path = "libcuda.so.1";
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }();
  return lib;
}

template <typename F>
void Bind(const char* name, F* out) {
  *out = DriverLibrary() == nullptr ? nullptr : reinterpret_cast<F>(dlsym(DriverLibrary(), name));
}

// Registered before main in every binary that links this file (see cuda_util.hpp).
const bool kLeakCheckRegistered = RegisterStandinLeakCheck();

}  // namespace

FerryCudaStandinLive Standin::Live() const {
  FerryCudaStandinLive l{};
  live(&l);
  return l;
}

FerryCudaStandinCounters Standin::Counters() const {
  FerryCudaStandinCounters c{};
  counters(&c);
  return c;
}

const Standin* GetStandin() {
  static const Standin* standin = []() -> const Standin* {
    static Standin s;
    Bind("ferry_cuda_standin_counters", &s.counters);
    Bind("ferry_cuda_standin_reset_counters", &s.reset_counters);
    Bind("ferry_cuda_standin_set_delay_us", &s.set_delay_us);
    Bind("ferry_cuda_standin_delay_us", &s.delay_us);
    Bind("ferry_cuda_standin_live_allocations", &s.live_allocations);
    Bind("ferry_cuda_standin_ipc_open_handles", &s.ipc_open_handles);
    Bind("ferry_cuda_standin_ipc_importers", &s.ipc_importers);
    Bind("ferry_cuda_standin_live", &s.live);
    if (s.live == nullptr || s.counters == nullptr || s.reset_counters == nullptr ||
        s.set_delay_us == nullptr || s.delay_us == nullptr || s.live_allocations == nullptr ||
        s.ipc_open_handles == nullptr || s.ipc_importers == nullptr) {
      return nullptr;
    }
    return &s;
  }();
  return standin;
}

const RawCuda* GetRawCuda() {
  static const RawCuda* raw = []() -> const RawCuda* {
    static RawCuda r;
#define FERRY_RAW_CUDA_BIND(name, ret, params) Bind(#name, &r.name);
    FERRY_STANDIN_ENTRY_POINTS(FERRY_RAW_CUDA_BIND)
#undef FERRY_RAW_CUDA_BIND
    if (r.cuInit == nullptr || r.cuInit(0) != 0) return nullptr;
    return &r;
  }();
  return raw;
}

bool DriverMaps(const void* p) {
  const RawCuda* cu = GetRawCuda();
  if (cu == nullptr) return false;
  RawContext ctx;
  unsigned int type = 0;
  return cu->cuPointerGetAttribute(&type, 2 /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE */,
                                   reinterpret_cast<CUdeviceptr>(p)) == 0 &&
         type == 2 /* CU_MEMORYTYPE_DEVICE */;
}

StandinDelta::StandinDelta() {
  if (const Standin* s = GetStandin()) start_ = s->Counters();
}

FerryCudaStandinCounters StandinDelta::Get() const {
  FerryCudaStandinCounters out{};
  const Standin* s = GetStandin();
  if (s == nullptr) return out;
  FerryCudaStandinCounters now = s->Counters();
  auto* o = reinterpret_cast<int64_t*>(&out);
  const auto* a = reinterpret_cast<const int64_t*>(&start_);
  const auto* b = reinterpret_cast<const int64_t*>(&now);
  for (size_t i = 0; i < sizeof(out) / sizeof(int64_t); ++i) o[i] = b[i] - a[i];
  return out;
}

StandinDelay::StandinDelay(int64_t us) {
  if (const Standin* s = GetStandin()) {
    previous_ = s->delay_us();
    s->set_delay_us(us);
  }
}

StandinDelay::~StandinDelay() {
  if (const Standin* s = GetStandin()) s->set_delay_us(previous_);
}

RawContext::RawContext(int device) : device_(device) {
  const RawCuda* cu = GetRawCuda();
  if (cu == nullptr || cu->cuDevicePrimaryCtxRetain(&ctx_, device) != 0) {
    ctx_ = nullptr;
    return;
  }
  cu->cuCtxPushCurrent_v2(ctx_);
}

RawContext::~RawContext() {
  if (ctx_ == nullptr) return;
  const RawCuda* cu = GetRawCuda();
  CUcontext popped = nullptr;
  cu->cuCtxPopCurrent_v2(&popped);
  cu->cuDevicePrimaryCtxRelease_v2(device_);
}

struct StreamGate::Shared {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int timeout_ms = 0;
};

StreamGate::StreamGate(CUstream stream, int timeout_ms, int device)
    : shared_(std::make_shared<Shared>()) {
  shared_->timeout_ms = timeout_ms;
  auto* held = new std::shared_ptr<Shared>(shared_);
  const RawCuda* cu = GetRawCuda();
  const auto wait = [](void* user) {
    std::unique_ptr<std::shared_ptr<Shared>> s(static_cast<std::shared_ptr<Shared>*>(user));
    std::unique_lock<std::mutex> lock((*s)->mu);
    (*s)->cv.wait_for(lock, std::chrono::milliseconds((*s)->timeout_ms),
                      [&] { return (*s)->open; });
  };
  RawContext ctx(device);
  if (cu == nullptr || cu->cuLaunchHostFunc(stream, wait, held) != 0) {
    delete held;
    ADD_FAILURE() << "could not queue the gate on the stream";
  }
}

void StreamGate::Open() {
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->open = true;
  }
  shared_->cv.notify_all();
}

RawRetain::RawRetain(int device) : device_(device) {
  const RawCuda* cu = GetRawCuda();
  CUcontext ctx = nullptr;
  held_ = cu != nullptr && cu->cuDevicePrimaryCtxRetain(&ctx, device) == 0;
  if (!held_) ADD_FAILURE() << "could not retain GPU " << device << "'s primary context";
}

RawRetain::~RawRetain() {
  if (held_) GetRawCuda()->cuDevicePrimaryCtxRelease_v2(device_);
}

RawStream::RawStream(int device) : device_(device), retain_(device) {
  RawContext ctx(device);
  const RawCuda* cu = GetRawCuda();
  if (cu == nullptr || cu->cuStreamCreate(&stream_, 1) != 0) {
    ADD_FAILURE() << "could not create a CUDA stream";
  }
}

RawStream::~RawStream() {
  if (stream_ == nullptr) return;
  RawContext ctx(device_);
  GetRawCuda()->cuStreamDestroy_v2(stream_);
}

}  // namespace ferry::testing
