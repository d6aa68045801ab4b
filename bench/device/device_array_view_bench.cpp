// Device array views: SetArray on nested strings (with its round trips counted), copy bandwidth
// between devices against raw memcpy in the same run, and the fixed cost per small array.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_scale.hpp"
#include "ferry/device/device_array.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/device/guarded.hpp"
#include "ferry/format/schema.hpp"

namespace ferry {
namespace {

const int64_t kGiB = ferry::testing::ScaledBytes(int64_t{1} << 30);  // 1 GiB but in a smoke run
constexpr int kSmallArrays = 10000;

// A host ArrowArray over memory the benchmark owns (release only marks it released).
struct HostNode {
  std::vector<const void*> buffers;
  std::vector<ArrowArray*> child_ptrs;
  std::vector<ArrowArray> children;
  ArrowArray array{};

  ArrowArray* Wire(int64_t length, int64_t null_count) {
    for (auto& c : children) child_ptrs.push_back(&c);
    array.length = length;
    array.null_count = null_count;
    array.n_buffers = static_cast<int64_t>(buffers.size());
    array.buffers = buffers.data();
    array.n_children = static_cast<int64_t>(children.size());
    array.children = child_ptrs.empty() ? nullptr : child_ptrs.data();
    array.release = [](ArrowArray* a) { a->release = nullptr; };
    return &array;
  }
};

ArrowDeviceArray OnCpu(const ArrowArray& array) {
  ArrowDeviceArray out{};
  out.array = array;
  out.device_type = ARROW_DEVICE_CPU;
  out.device_id = -1;
  return out;
}

UniqueSchema Schema(const char* format) {
  auto s = Field::Make(format, "x").Export();
  if (!s.ok()) std::abort();
  return std::move(s).ValueOrDie();
}

Device* Resolve(benchmark::State& state, ArrowDeviceType type) {
  auto d = ResolveDevice(type, 0);
  if (!d.ok()) {
    state.SkipWithError(("no " + std::string(DeviceTypeName(type)) +
                         " device on this machine: " + d.status().message())
                            .c_str());
    return nullptr;
  }
  return *d;
}

void OrDie(const Status& st) {
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    std::abort();
  }
}

template <typename T>
T OrDie(Result<T> r) {
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().message().c_str());
    std::abort();
  }
  return std::move(r).ValueOrDie();
}

// -- SetArray on 1 M strings in lists, on the guarded device
// ---------------------------------------

void BM_SetArray_ListOfStrings_1M(benchmark::State& state) {
  constexpr int64_t kStrings = 1 << 20;
  constexpr int64_t kLists = kStrings / 4;
  std::vector<int32_t> list_offsets(kLists + 1);
  for (int64_t i = 0; i <= kLists; ++i)
    list_offsets[static_cast<size_t>(i)] = static_cast<int32_t>(4 * i);
  std::vector<int32_t> string_offsets(kStrings + 1);
  for (int64_t i = 0; i < kStrings; ++i) {
    string_offsets[static_cast<size_t>(i + 1)] =
        string_offsets[static_cast<size_t>(i)] + static_cast<int32_t>(i % 13);
  }
  std::vector<char> data(static_cast<size_t>(string_offsets.back()), 'x');
  HostNode list;
  list.buffers = {nullptr, list_offsets.data()};
  list.children.resize(1);
  HostNode strings;
  strings.buffers = {nullptr, string_offsets.data(), data.data()};
  list.children[0] = *strings.Wire(kStrings, 0);
  ArrowDeviceArray host = OnCpu(*list.Wire(kLists, 0));

  auto field = Field::Make("+l", "x", {Field::Make("u", "item")});
  UniqueSchema schema = OrDie(field.Export());
  DeviceArrayView host_view = OrDie(DeviceArrayView::Make(schema.get()));
  OrDie(host_view.SetArray(&host));
  UniqueDeviceArray dev = OrDie(host_view.Copy(*GuardedDevice()));

  DeviceArrayView view = OrDie(DeviceArrayView::Make(schema.get()));
  for (auto _ : state) {
    OrDie(view.SetArray(dev.get()));
    benchmark::DoNotOptimize(view.array_view().child(0).buffer(2).size);
  }
  state.counters["round_trips"] = static_cast<double>(view.round_trips());
  state.counters["strings"] = static_cast<double>(kStrings);
}
BENCHMARK(BM_SetArray_ListOfStrings_1M)->Unit(benchmark::kMicrosecond);

// -- SetArray on a small host batch, as a reader sizes each batch of a stream ----------------
// (struct<int64, float64, utf8>, 1,000 rows: the small-batch benchmark's batch)

void BM_SetArray_SmallBatch_Host(benchmark::State& state) {
  constexpr int64_t kRows = 1000;
  std::vector<int64_t> ints(kRows, 7);
  std::vector<double> doubles(kRows, 0.5);
  std::vector<int32_t> offsets(kRows + 1);
  for (int64_t i = 0; i < kRows; ++i)
    offsets[static_cast<size_t>(i + 1)] = static_cast<int32_t>(4 * (i + 1));
  std::vector<char> chars(4 * kRows, 'x');
  HostNode root;
  root.buffers = {nullptr};
  root.children.resize(3);
  HostNode a, b, c;
  a.buffers = {nullptr, ints.data()};
  b.buffers = {nullptr, doubles.data()};
  c.buffers = {nullptr, offsets.data(), chars.data()};
  root.children[0] = *a.Wire(kRows, 0);
  root.children[1] = *b.Wire(kRows, 0);
  root.children[2] = *c.Wire(kRows, 0);
  ArrowDeviceArray host = OnCpu(*root.Wire(kRows, 0));
  auto field = Field::Make("+s", "batch",
                           {Field::Make("l", "i"), Field::Make("g", "d"), Field::Make("u", "s")});
  UniqueSchema schema = OrDie(field.Export());
  DeviceArrayView view = OrDie(DeviceArrayView::Make(schema.get()));
  for (auto _ : state) {
    OrDie(view.SetArray(&host));
    benchmark::DoNotOptimize(view.array_view().child(2).buffer(2).size);
  }
  if (view.array_view().child(2).buffer(2).size != 4 * kRows) std::abort();
}
BENCHMARK(BM_SetArray_SmallBatch_Host);

// -- 1 GiB copies
// ----------------------------------------------------------------------------------

// 1 GiB of uint8 on the CPU, touched, as a device array.
struct BigHost {
  void* data = nullptr;
  HostNode node;
  ArrowDeviceArray array{};
  BigHost() {
    data = OrDie(CpuDevice()->Allocate(kGiB, nullptr));
    std::memset(data, 0x5A, static_cast<size_t>(kGiB));
    node.buffers = {nullptr, data};
    array = OnCpu(*node.Wire(kGiB, 0));
  }
  ~BigHost() { CpuDevice()->Free(data, kGiB); }
};

BigHost& Big() {
  static BigHost* big = new BigHost();  // shared by the 1 GiB benchmarks
  return *big;
}

void BM_Memcpy_1GiB_WarmDestination(benchmark::State& state) {
  BigHost& big = Big();  // built outside the timing
  // The destination is allocated as ferry's CPU device allocates (huge pages), and touched.
  void* dst = OrDie(CpuDevice()->Allocate(kGiB, nullptr));
  std::memset(dst, 1, static_cast<size_t>(kGiB));
  for (auto _ : state) {
    std::memcpy(dst, big.data, static_cast<size_t>(kGiB));
    benchmark::ClobberMemory();
  }
  CpuDevice()->Free(dst, kGiB);
  state.SetBytesProcessed(state.iterations() * kGiB);
}
BENCHMARK(BM_Memcpy_1GiB_WarmDestination)->Unit(benchmark::kMillisecond)->UseRealTime();

// What an allocate-and-copy costs with libc: a fresh destination faults its pages in.
void BM_Memcpy_1GiB_MallocDestination(benchmark::State& state) {
  BigHost& big = Big();
  for (auto _ : state) {
    void* dst = std::malloc(static_cast<size_t>(kGiB));
    std::memcpy(dst, big.data, static_cast<size_t>(kGiB));
    benchmark::DoNotOptimize(dst);
    std::free(dst);
  }
  state.SetBytesProcessed(state.iterations() * kGiB);
}
BENCHMARK(BM_Memcpy_1GiB_MallocDestination)->Unit(benchmark::kMillisecond)->UseRealTime();

// ferry's copy of the 1 GiB array from the CPU to `type` (allocate, copy, release), and back.
void BM_Copy_1GiB_CpuToDevice(benchmark::State& state, ArrowDeviceType type) {
  Device* device = Resolve(state, type);
  if (device == nullptr) return;
  UniqueSchema schema = Schema("C");
  DeviceArrayView view = OrDie(DeviceArrayView::Make(schema.get()));
  OrDie(view.SetArray(&Big().array));
  for (auto _ : state) {
    UniqueDeviceArray copy = OrDie(view.Copy(*device));
    benchmark::DoNotOptimize(copy->array.buffers);
  }
  state.SetBytesProcessed(state.iterations() * kGiB);
}

void BM_Copy_1GiB_DeviceToCpu(benchmark::State& state, ArrowDeviceType type) {
  Device* device = Resolve(state, type);
  if (device == nullptr) return;
  UniqueSchema schema = Schema("C");
  DeviceArrayView host_view = OrDie(DeviceArrayView::Make(schema.get()));
  OrDie(host_view.SetArray(&Big().array));
  UniqueDeviceArray on_device = OrDie(host_view.Copy(*device));
  DeviceArrayView view = OrDie(DeviceArrayView::Make(schema.get()));
  OrDie(view.SetArray(on_device.get()));
  for (auto _ : state) {
    UniqueDeviceArray copy = OrDie(view.Copy(*CpuDevice()));
    benchmark::DoNotOptimize(copy->array.buffers);
  }
  state.SetBytesProcessed(state.iterations() * kGiB);
}

// CPU -> device -> CPU: two copies per iteration (bytes counted once per copy).
void BM_Copy_1GiB_RoundTrip(benchmark::State& state, ArrowDeviceType type) {
  Device* device = Resolve(state, type);
  if (device == nullptr) return;
  UniqueSchema schema = Schema("C");
  DeviceArrayView view = OrDie(DeviceArrayView::Make(schema.get()));
  DeviceArrayView back = OrDie(DeviceArrayView::Make(schema.get()));
  OrDie(view.SetArray(&Big().array));
  for (auto _ : state) {
    UniqueDeviceArray on_device = OrDie(view.Copy(*device));
    OrDie(back.SetArray(on_device.get()));
    UniqueDeviceArray host = OrDie(back.Copy(*CpuDevice()));
    benchmark::DoNotOptimize(host->array.buffers);
  }
  state.SetBytesProcessed(state.iterations() * 2 * kGiB);
}

BENCHMARK_CAPTURE(BM_Copy_1GiB_DeviceToCpu, GUARDED, ARROW_DEVICE_EXT_DEV)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Copy_1GiB_CpuToDevice, CPU, ARROW_DEVICE_CPU)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Copy_1GiB_CpuToDevice, OPENCL, ARROW_DEVICE_OPENCL)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Copy_1GiB_DeviceToCpu, OPENCL, ARROW_DEVICE_OPENCL)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Copy_1GiB_RoundTrip, OPENCL, ARROW_DEVICE_OPENCL)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Copy_1GiB_CpuToDevice, CUDA, ARROW_DEVICE_CUDA)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Copy_1GiB_DeviceToCpu, CUDA, ARROW_DEVICE_CUDA)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// -- 10,000 small arrays (int32 x 16 with a validity bitmap) -----------------------------------

struct SmallArrays {
  std::vector<int32_t> values;
  std::vector<uint8_t> validity;
  std::vector<HostNode> nodes;
  std::vector<ArrowDeviceArray> arrays;
  SmallArrays() : values(16 * kSmallArrays, 7), validity(2 * kSmallArrays, 0xFF) {
    nodes.resize(kSmallArrays);
    for (int i = 0; i < kSmallArrays; ++i) {
      nodes[static_cast<size_t>(i)].buffers = {validity.data() + 2 * i, values.data() + 16 * i};
      arrays.push_back(OnCpu(*nodes[static_cast<size_t>(i)].Wire(16, 0)));
    }
  }
};

SmallArrays& Small() {
  static SmallArrays* small = new SmallArrays();
  return *small;
}

// The same bytes moved with memcpy, array by array: the floor the overhead is measured from.
void BM_Small_10000_Memcpy(benchmark::State& state) {
  SmallArrays& small = Small();
  std::vector<char> dst(static_cast<size_t>(kSmallArrays) * (64 + 2));
  for (auto _ : state) {
    char* out = dst.data();
    for (int i = 0; i < kSmallArrays; ++i) {
      std::memcpy(out, small.validity.data() + 2 * i, 2);
      std::memcpy(out + 2, small.values.data() + 16 * i, 64);
      out += 66;
    }
    benchmark::ClobberMemory();
  }
  state.counters["per_array"] = benchmark::Counter(
      static_cast<double>(kSmallArrays),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Small_10000_Memcpy)->Unit(benchmark::kMicrosecond);

// SetArray + Copy + release for each array, from `from` to `to` (the source on `from` first).
void BM_Small_10000(benchmark::State& state, ArrowDeviceType from, ArrowDeviceType to) {
  Device* src = Resolve(state, from);
  Device* dst = src == nullptr ? nullptr : Resolve(state, to);
  if (dst == nullptr) return;
  UniqueSchema schema = Schema("i");
  DeviceArrayView view = OrDie(DeviceArrayView::Make(schema.get()));
  std::vector<UniqueDeviceArray> sources;
  std::vector<ArrowDeviceArray*> inputs;
  if (from == ARROW_DEVICE_CPU) {
    for (auto& a : Small().arrays) inputs.push_back(&a);
  } else {
    sources.reserve(Small().arrays.size());  // `inputs` points into it
    for (auto& a : Small().arrays) {
      OrDie(view.SetArray(&a));
      sources.push_back(OrDie(view.Copy(*src)));
      inputs.push_back(sources.back().get());
    }
  }
  for (auto _ : state) {
    for (ArrowDeviceArray* in : inputs) {
      OrDie(view.SetArray(in));
      UniqueDeviceArray out = OrDie(view.Copy(*dst));
      benchmark::DoNotOptimize(out->array.buffers);
    }
  }
  state.counters["per_array"] = benchmark::Counter(
      static_cast<double>(kSmallArrays),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK_CAPTURE(BM_Small_10000, CPU_to_CPU, ARROW_DEVICE_CPU, ARROW_DEVICE_CPU)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Small_10000, GUARDED_to_CPU, ARROW_DEVICE_EXT_DEV, ARROW_DEVICE_CPU)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Small_10000, CPU_to_GUARDED, ARROW_DEVICE_CPU, ARROW_DEVICE_EXT_DEV)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Small_10000, CPU_to_OPENCL, ARROW_DEVICE_CPU, ARROW_DEVICE_OPENCL)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Small_10000, OPENCL_to_CPU, ARROW_DEVICE_OPENCL, ARROW_DEVICE_CPU)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Small_10000, CPU_to_CUDA, ARROW_DEVICE_CPU, ARROW_DEVICE_CUDA)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ferry
