// CUDA counts, not times: how many host waits and device-to-host copies reading the sizes of a
// nested string column takes, and how many allocations and copies moving a 1,000-column table to
// the GPU takes. ferry's own counters (DeviceArrayView::round_trips, DeviceStats) are reported on
// any driver; the driver-side counts (copies by direction, host waits the driver makes by itself)
// come from the stand-in driver when $FERRY_CUDA_DRIVER names it. On the stand-in the times mean
// nothing: it is a CPU pretending to be a GPU.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_standin/cuda_standin.h"
#include "ferry/device/device_array.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"

namespace ferry {
namespace {

// The stand-in's counter function, or null on a real driver.
using CountersFn = void (*)(FerryCudaStandinCounters*);
CountersFn StandinCounters() {
  static CountersFn fn = [] {
    const char* path = std::getenv("FERRY_CUDA_DRIVER");
    if (path == nullptr || *path == '\0') return CountersFn{nullptr};
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    return lib == nullptr ? CountersFn{nullptr}
                          : reinterpret_cast<CountersFn>(dlsym(lib, "ferry_cuda_standin_counters"));
  }();
  return fn;
}

FerryCudaStandinCounters Snapshot() {
  FerryCudaStandinCounters c{};
  if (StandinCounters() != nullptr) StandinCounters()(&c);
  return c;
}

struct Made {
  UniqueSchema schema;
  UniqueDeviceArray array;
};

// `field` from `json` on the CPU, copied to `device` with ferry.
Result<Made> OnDevice(const Field& field, const std::string& json, Device& device) {
  Made cpu;
  FERRY_ASSIGN_OR_RAISE(cpu.schema, field.Export());
  FERRY_ASSIGN_OR_RAISE(UniqueArray raw, ArrayFromJson(cpu.schema.get(), json));
  FERRY_RETURN_NOT_OK(DeviceArrayInit(*CpuDevice(), cpu.array.get(), raw.get(), nullptr));
  FERRY_ASSIGN_OR_RAISE(DeviceArrayView view, DeviceArrayView::Make(cpu.schema.get()));
  FERRY_RETURN_NOT_OK(view.SetArray(cpu.array.get()));
  Made out;
  FERRY_ASSIGN_OR_RAISE(out.array, view.Copy(device));
  out.schema = std::move(cpu.schema);
  return out;
}

Device* Gpu(benchmark::State& state) {
  auto d = ResolveDevice(ARROW_DEVICE_CUDA, 0);
  if (!d.ok()) {
    state.SkipWithError(("no CUDA GPU (or stand-in) here: " + d.status().message()).c_str());
    return nullptr;
  }
  return *d;
}

// Per-iteration driver counts as benchmark counters.
void Report(benchmark::State& state, const FerryCudaStandinCounters& a,
            const FerryCudaStandinCounters& b) {
  if (StandinCounters() == nullptr) return;
  const double n = static_cast<double>(state.iterations());
  state.counters["driver_d2h_copies"] = static_cast<double>(b.copies_d2h - a.copies_d2h) / n;
  state.counters["driver_h2d_copies"] = static_cast<double>(b.copies_h2d - a.copies_h2d) / n;
  state.counters["driver_host_waits"] =
      static_cast<double>(b.synchronizations - a.synchronizations + b.implicit_synchronizations -
                          a.implicit_synchronizations) /
      n;
  state.counters["driver_allocations"] =
      static_cast<double>(b.allocations_device - a.allocations_device) / n;
}

// The nested string columns: list<list<string>>, and list<struct<a: string, b: list<large_string>>>
// (three offset-bearing levels, two string buffers).
Field NestedColumn(bool two_strings) {
  if (!two_strings) {
    return Field::Make("+l", "x", {Field::Make("+l", "item", {Field::Make("u", "item")})});
  }
  return Field::Make(
      "+l", "x",
      {Field::Make("+s", "item",
                   {Field::Make("u", "a"), Field::Make("+l", "b", {Field::Make("U", "item")})})});
}

std::string NestedJson(bool two_strings, int rows) {
  std::string out = "[";
  for (int i = 0; i < rows; ++i) {
    if (i > 0) out += ",";
    out += two_strings ? R"([{"a": "xy", "b": ["p", "qq"]}, {"a": "long string", "b": []}])"
                       : R"([["a", "bb"], [], ["ccc"]])";
  }
  return out + "]";
}

// SetArray on the GPU: every offset of the tree in one batched read.
void BM_Sizes_SetArray(benchmark::State& state, bool two_strings) {
  Device* gpu = Gpu(state);
  if (gpu == nullptr) return;
  auto made = OnDevice(NestedColumn(two_strings), NestedJson(two_strings, 1000), *gpu);
  if (!made.ok()) return state.SkipWithError(made.status().message().c_str());
  auto view = DeviceArrayView::Make(made->schema.get());
  if (!view.ok()) return state.SkipWithError(view.status().message().c_str());
  const FerryCudaStandinCounters a = Snapshot();
  int64_t round_trips = 0;
  for (auto _ : state) {
    if (!view->SetArray(made->array.get()).ok()) std::abort();
    round_trips += view->round_trips();
  }
  Report(state, a, Snapshot());
  state.counters["round_trips"] =
      static_cast<double>(round_trips) / static_cast<double>(state.iterations());
}
BENCHMARK_CAPTURE(BM_Sizes_SetArray, list_list_string, false)->Iterations(20);
BENCHMARK_CAPTURE(BM_Sizes_SetArray, list_struct_string_list_large_string, true)->Iterations(20);

// A sliced copy to the CPU: each level's visible range depends on its parent's offsets.
void BM_Sizes_SlicedCopy(benchmark::State& state, bool two_strings) {
  Device* gpu = Gpu(state);
  if (gpu == nullptr) return;
  auto made = OnDevice(NestedColumn(two_strings), NestedJson(two_strings, 1000), *gpu);
  if (!made.ok()) return state.SkipWithError(made.status().message().c_str());
  made->array->array.offset = 1;
  made->array->array.length = 998;
  auto view = DeviceArrayView::Make(made->schema.get());
  if (!view.ok()) return state.SkipWithError(view.status().message().c_str());
  const FerryCudaStandinCounters a = Snapshot();
  int64_t round_trips = 0;
  for (auto _ : state) {
    if (!view->SetArrayMinimal(made->array.get()).ok()) std::abort();
    auto copy = view->Copy(*CpuDevice());
    if (!copy.ok()) std::abort();
    round_trips += view->round_trips();
  }
  Report(state, a, Snapshot());
  state.counters["round_trips"] =
      static_cast<double>(round_trips) / static_cast<double>(state.iterations());
}
BENCHMARK_CAPTURE(BM_Sizes_SlicedCopy, list_list_string, false)->Iterations(20);

// A 1,000-column table (a struct of 500 int32 and 500 string columns, 100 rows) to the GPU.
void BM_Copy_Table_1000Columns(benchmark::State& state) {
  Device* gpu = Gpu(state);
  if (gpu == nullptr) return;
  std::vector<Field> columns;
  std::string row = "{";
  for (int i = 0; i < 1000; ++i) {
    const std::string name = "c" + std::to_string(i);
    columns.push_back(Field::Make(i % 2 == 0 ? "i" : "u", name));
    row += (i > 0 ? ",\"" : "\"") + name + "\":" + (i % 2 == 0 ? std::to_string(i) : "\"v\"");
  }
  row += "}";
  std::string json = "[";
  for (int r = 0; r < 100; ++r) json += (r > 0 ? "," : "") + row;
  json += "]";
  Made cpu;
  auto schema = Field::Make("+s", "table", columns).Export();
  if (!schema.ok()) return state.SkipWithError(schema.status().message().c_str());
  cpu.schema = std::move(*schema);
  auto raw = ArrayFromJson(cpu.schema.get(), json);
  if (!raw.ok()) return state.SkipWithError(raw.status().message().c_str());
  if (!DeviceArrayInit(*CpuDevice(), cpu.array.get(), raw->get(), nullptr).ok()) std::abort();
  auto view = DeviceArrayView::Make(cpu.schema.get());
  if (!view.ok() || !view->SetArray(cpu.array.get()).ok()) std::abort();
  gpu->ResetStats();
  const FerryCudaStandinCounters a = Snapshot();
  for (auto _ : state) {
    auto copy = view->Copy(*gpu);
    if (!copy.ok()) std::abort();
  }
  Report(state, a, Snapshot());
  const double n = static_cast<double>(state.iterations());
  state.counters["ferry_allocations"] = static_cast<double>(gpu->stats().allocations) / n;
  state.counters["ferry_copies"] = static_cast<double>(gpu->stats().copies) / n;
}
BENCHMARK(BM_Copy_Table_1000Columns)->Iterations(5)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ferry
