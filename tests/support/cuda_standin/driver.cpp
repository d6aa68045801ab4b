// The stand-in's driver-level entry points: initialisation, devices, primary contexts and the
// calling thread's context stack, error names, and the stand-in's own counters and delay.
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda_standin/state.hpp"

namespace standin {

namespace {

// The calling thread's context stack. Trivially destructible on purpose: other libraries' static
// destructors push and pop contexts after this thread's thread_local objects are gone.
constexpr int kMaxContextDepth = 64;
thread_local Context* t_context_stack[kMaxContextDepth];
thread_local int t_context_depth = 0;
thread_local bool t_in_host_function = false;

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

constexpr ErrorText kErrors[] = {
    {kSuccess, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {kNoDevice, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {kInvalidDevice, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {kInvalidContext, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {kMapFailed, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
    {kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {kNotFound, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {kNotReady, "CUDA_ERROR_NOT_READY", "device not ready"},
    {kIllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {kNotPermitted, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {kNotSupported, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {kUnknown, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* FindError(CUresult code) {
  for (const ErrorText& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);  // NOLINT(google-runtime-int)
  return (end != v && *end == '\0' && n >= 0) ? n : fallback;
}

Context* ContextOf(CUcontext handle) {
  State& s = GetState();
  for (auto& c : s.contexts) {
    if (reinterpret_cast<CUcontext>(c.get()) == handle) return c.get();
  }
  return nullptr;
}

bool ValidDevice(CUdevice dev) { return dev >= 0 && dev < GetState().device_count; }

}  // namespace

State& GetState() {
  static State* state = new State;  // never destroyed: see state.hpp
  return *state;
}

int CurrentDevice() {
  return t_context_depth == 0 ? -1 : t_context_stack[t_context_depth - 1]->device;
}

CUresult Enter() {
  if (t_in_host_function) return kNotPermitted;
  if (!GetState().initialized) return kNotInitialized;
  return kSuccess;
}

InHostFunction::InHostFunction() { t_in_host_function = true; }
InHostFunction::~InHostFunction() { t_in_host_function = false; }

}  // namespace standin

using namespace standin;  // NOLINT(google-build-using-namespace): the exported C functions

CUresult cuInit(unsigned int flags) {
  if (t_in_host_function) return kNotPermitted;
  if (flags != 0) return kInvalidValue;
  State& s = GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.initialized) return kSuccess;
  s.device_count = static_cast<int>(EnvInt("FERRY_CUDA_STANDIN_DEVICES", 1));
  if (s.device_count <= 0) return kNoDevice;
  s.delay_us = EnvInt("FERRY_CUDA_STANDIN_DELAY_US", 0);
  for (int i = 0; i < s.device_count; ++i) {
    auto c = std::make_unique<Context>();
    c->device = i;
    s.contexts.push_back(std::move(c));
  }
  // Each device allocation holds a memfd (for IPC); let a test hold many.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  s.initialized = true;
  return kSuccess;
}

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return kInvalidValue;
  *version = 12080;  // the API level the stand-in models (12.8)
  return kSuccess;
}

CUresult cuDeviceGetCount(int* count) {
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (count == nullptr) return kInvalidValue;
  *count = GetState().device_count;
  return kSuccess;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (device == nullptr) return kInvalidValue;
  if (!ValidDevice(ordinal)) return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (name == nullptr || len <= 0) return kInvalidValue;
  if (!ValidDevice(dev)) return kInvalidDevice;
  const std::string text = "ferry CUDA stand-in " + std::to_string(dev);
  std::strncpy(name, text.c_str(), static_cast<size_t>(len) - 1);
  name[len - 1] = '\0';
  return kSuccess;
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attrib, CUdevice dev) {
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (value == nullptr) return kInvalidValue;
  if (!ValidDevice(dev)) return kInvalidDevice;
  switch (attrib) {
    case kDevAttrUnifiedAddressing:
    case kDevAttrManagedMemory:
    case kDevAttrConcurrentManagedAccess:
    case kDevAttrMemoryPoolsSupported:
      *value = 1;
      return kSuccess;
    case kDevAttrComputeCapabilityMajor:
      *value = 9;
      return kSuccess;
    case kDevAttrComputeCapabilityMinor:
      *value = 0;
      return kSuccess;
    default:
      return kInvalidValue;  // not modelled: a caller must not rely on it
  }
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  State& s = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (ctx == nullptr) return kInvalidValue;
  if (!ValidDevice(dev)) return kInvalidDevice;
  std::lock_guard<std::mutex> lock(s.mu);
  Context& c = *s.contexts[static_cast<size_t>(dev)];
  c.refs += 1;
  *ctx = reinterpret_cast<CUcontext>(&c);
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  State& s = GetState();
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (!ValidDevice(dev)) return kInvalidDevice;
  std::vector<std::shared_ptr<Stream>> stale;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    Context& c = *s.contexts[static_cast<size_t>(dev)];
    if (c.refs <= 0) return kInvalidContext;  // released more often than retained
    c.refs -= 1;
    // The last release destroys the context and all it made: a stream, event or pointer kept
    // past it is stale (the real driver may crash on it; here it is an invalid handle).
    if (c.refs == 0) stale = ResetContextLocked(dev);
  }
  for (const auto& stream : stale) StopStream(stream);
  return kSuccess;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  Context* c = ContextOf(ctx);
  if (c == nullptr) return kInvalidContext;
  if (t_context_depth == kMaxContextDepth) return kInvalidValue;
  t_context_stack[t_context_depth++] = c;
  return kSuccess;
}

CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (t_context_depth == 0) return kInvalidContext;
  t_context_depth -= 1;
  if (ctx != nullptr) *ctx = reinterpret_cast<CUcontext>(t_context_stack[t_context_depth]);
  return kSuccess;
}

CUresult cuCtxGetCurrent(CUcontext* ctx) {
  if (const CUresult entry = Enter(); entry != kSuccess) return entry;
  if (ctx == nullptr) return kInvalidValue;
  *ctx = t_context_depth == 0 ? nullptr
                              : reinterpret_cast<CUcontext>(t_context_stack[t_context_depth - 1]);
  return kSuccess;
}

CUresult cuGetErrorName(CUresult error, const char** str) {
  if (str == nullptr) return kInvalidValue;
  const ErrorText* e = FindError(error);
  *str = e == nullptr ? nullptr : e->name;
  return e == nullptr ? kInvalidValue : kSuccess;
}

CUresult cuGetErrorString(CUresult error, const char** str) {
  if (str == nullptr) return kInvalidValue;
  const ErrorText* e = FindError(error);
  *str = e == nullptr ? nullptr : e->text;
  return e == nullptr ? kInvalidValue : kSuccess;
}

STANDIN_EXPORT void ferry_cuda_standin_counters(FerryCudaStandinCounters* out) {
  auto* fields = reinterpret_cast<int64_t*>(out);
  for (size_t i = 0; i < sizeof(FerryCudaStandinCounters) / sizeof(int64_t); ++i) {
    fields[i] = GetState().counters[i].load(std::memory_order_relaxed);
  }
}

STANDIN_EXPORT void ferry_cuda_standin_reset_counters(void) {
  for (auto& c : GetState().counters) c.store(0, std::memory_order_relaxed);
}

STANDIN_EXPORT void ferry_cuda_standin_set_delay_us(int64_t us) {
  GetState().delay_us.store(us < 0 ? 0 : us, std::memory_order_relaxed);
}

STANDIN_EXPORT int64_t ferry_cuda_standin_delay_us(void) {
  return GetState().delay_us.load(std::memory_order_relaxed);
}
