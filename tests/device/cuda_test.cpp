// ferry's CUDA paths measured by the driver itself: the stand-in counts copies, host waits and
// allocations, and a gated stream proves that the ...Async calls return before their work has
// run. Values are checked against hand-written JSON after a copy back to the CPU; on a GPU the
// values are checked and the counts skipped.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ferry/device/device_array.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/device/device_buffer.hpp"
#include "support/cuda_util.hpp"
#include "support/device_util.hpp"
#include "support/test_util.hpp"
#include "support/type_cases.hpp"

namespace ferry {
namespace {

using testing::Json;

#define RESOLVE_GPU_OR_SKIP(var) \
  FERRY_RESOLVE_OR_SKIP(var, (testing::DeviceCase{ARROW_DEVICE_CUDA, 0, "CUDA0"}))
// The second GPU: the stand-in with FERRY_CUDA_STANDIN_DEVICES=2 (ctest's device_two_gpus), or a
// machine with two.
#define RESOLVE_SECOND_GPU_OR_SKIP(var) \
  FERRY_RESOLVE_OR_SKIP(var, (testing::DeviceCase{ARROW_DEVICE_CUDA, 1, "CUDA1"}))

// The array's values, read back to the CPU with ferry, as JSON (or the error text).
Json HostJson(const ArrowSchema* schema, const ArrowDeviceArray* array) {
  const std::string text = testing::DeviceArrayToJson(schema, array);
  return Json::parse(text, nullptr, /*allow_exceptions=*/false).is_discarded() ? Json(text)
                                                                               : Json::parse(text);
}

// A CPU device array of `field` from JSON.
UniqueDeviceArray Cpu(const Field& field, const std::string& json, UniqueSchema* schema) {
  auto array = testing::ArrayFromJson(field, json);
  EXPECT_TRUE(array.ok()) << array.status().message();
  return testing::ToCpuDeviceArray(std::move(array).ValueOrDie(), schema);
}

// -- The ...Async functions queue work and return: no host wait of any kind ---------------------

TEST(CudaAsync, BufferCallsNeverWaitAndReadAfterTheirStream) {
  RESOLVE_GPU_OR_SKIP(gpu);
  testing::RawStream stream;
  std::vector<int32_t> host(1000);
  for (int32_t i = 0; i < 1000; ++i) host[static_cast<size_t>(i)] = i * 7;
  const FerryBufferView src{host.data(), 4000};
  std::vector<int32_t> back(1000, -1);

  testing::StandinDelta delta;
  UniqueBuffer dev;
  {
    testing::StreamGate gate(stream.get());
    ASSERT_OK_AND_ASSIGN(dev, BufferInitAsync(*CpuDevice(), src, *gpu, stream.arg()));
    host.assign(1000, 0);  // a pageable source may be reused once the call returns
    ASSERT_OK(BufferCopyAsync(*gpu, FerryBufferView{dev->data, 4000}, *CpuDevice(),
                              FerryMutableBufferView{back.data(), 4000}, stream.arg()));
    EXPECT_EQ(back[999], -1) << "the copy ran before the gate opened: it was not queued";
  }
  const FerryCudaStandinCounters c = delta.Get();
  ASSERT_OK(gpu->SynchronizeEvent(nullptr, stream.arg()));
  for (int32_t i = 0; i < 1000; ++i) ASSERT_EQ(back[static_cast<size_t>(i)], i * 7) << i;
  if (testing::GetStandin() != nullptr) {
    EXPECT_EQ(c.synchronizations, 0);
    EXPECT_EQ(c.implicit_synchronizations, 0);
    EXPECT_EQ(c.pageable_copies, 0);  // both pageable sides were staged through pinned memory
    EXPECT_EQ(c.copies_h2d, 1);
    EXPECT_EQ(c.copies_d2h, 1);
  }
}

// BufferCopy's caller waits for the copy anyway: pageable memory goes to the driver as it is
// (the driver stages it), with no pinned staging block and no host function on a stream.
TEST(CudaSync, BufferCopyHandsPageableMemoryToTheDriver) {
  RESOLVE_GPU_OR_SKIP(gpu);
  std::vector<int32_t> host(1000);
  for (int32_t i = 0; i < 1000; ++i) host[static_cast<size_t>(i)] = i * 3 - 500;
  std::vector<int32_t> back(1000, -1);
  ASSERT_OK_AND_ASSIGN(void* dev, gpu->Allocate(4000, nullptr));
  testing::StandinDelta delta;
  ASSERT_OK(BufferCopy(*CpuDevice(), FerryBufferView{host.data(), 4000}, *gpu,
                       FerryMutableBufferView{dev, 4000}));
  ASSERT_OK(BufferCopy(*gpu, FerryBufferView{dev, 4000}, *CpuDevice(),
                       FerryMutableBufferView{back.data(), 4000}));
  const FerryCudaStandinCounters c = delta.Get();
  gpu->Free(dev, 4000);
  for (int32_t i = 0; i < 1000; ++i) ASSERT_EQ(back[static_cast<size_t>(i)], i * 3 - 500) << i;
  if (testing::GetStandin() != nullptr) {
    EXPECT_EQ(c.pageable_copies, 2);
    EXPECT_EQ(c.host_funcs, 0);
    EXPECT_EQ(c.copies_h2d, 1);
    EXPECT_EQ(c.copies_d2h, 1);
  }
}

TEST(CudaAsync, CopyAsyncToTheGpuIsOneAllocationOneCopyAndNoWait) {
  RESOLVE_GPU_OR_SKIP(gpu);
  testing::RawStream stream;
  UniqueSchema schema;
  Field field = Field::Make("+s", "row", {Field::Make("i", "a"), Field::Make("u", "b")});
  UniqueDeviceArray cpu =
      Cpu(field, R"([{"a": 1, "b": "x"}, null, {"a": 3, "b": "zzz"}])", &schema);
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArray(cpu.get()));
  testing::StandinDelta delta;
  UniqueDeviceArray dev;
  {
    testing::StreamGate gate(stream.get());
    ASSERT_OK_AND_ASSIGN(dev, view.CopyAsync(*gpu, stream.arg()));
    ASSERT_NE(dev->sync_event, nullptr);  // the consumer orders on it
  }
  const FerryCudaStandinCounters c = delta.Get();
  EXPECT_EQ(HostJson(schema.get(), dev.get()),
            Json::parse(R"([{"a": 1, "b": "x"}, null, {"a": 3, "b": "zzz"}])"));
  if (testing::GetStandin() != nullptr) {
    EXPECT_EQ(c.synchronizations + c.implicit_synchronizations, 0);
    EXPECT_EQ(c.allocations_device, 1);
    EXPECT_EQ(c.copies_h2d, 1);  // the tree was packed into pinned memory
    EXPECT_EQ(c.pageable_copies, 0);
  }
}

TEST(CudaAsync, InitAsyncAndGpuToGpuCopiesNeverWait) {
  RESOLVE_GPU_OR_SKIP(gpu);
  testing::RawStream stream;
  UniqueSchema schema;
  UniqueDeviceArray cpu = Cpu(Field::Make("l", "x"), "[1, 2, null, 4]", &schema);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray on_gpu,
                       testing::CopyToDevice(schema.get(), cpu.get(), *gpu));
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArray(on_gpu.get()));
  testing::StandinDelta delta;
  {
    testing::StreamGate gate(stream.get());
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArray copy, view.CopyAsync(*gpu, stream.arg()));
    // Re-wrap the copy's tree with an event recorded on the same stream.
    UniqueDeviceArray rewrapped;
    ASSERT_OK(DeviceArrayInitAsync(*gpu, rewrapped.get(), &copy->array, nullptr, stream.arg()));
    const FerryCudaStandinCounters c = delta.Get();
    if (testing::GetStandin() != nullptr) {
      EXPECT_EQ(c.synchronizations + c.implicit_synchronizations, 0);
      EXPECT_EQ(c.copies_d2d, 2);  // the validity bitmap and the values
    }
    gate.Open();
    EXPECT_EQ(HostJson(schema.get(), rewrapped.get()), Json::parse("[1, 2, null, 4]"));
  }
}

// -- Sizes: one batched device-to-host copy and one wait per level, into pinned memory -----------

TEST(CudaSizes, ANestedStringColumnNeedsOneCopyAndOneWait) {
  RESOLVE_GPU_OR_SKIP(gpu);
  // list<list<string>>: three offset-bearing levels.
  Field field = Field::Make("+l", "x", {Field::Make("+l", "item", {Field::Make("u", "item")})});
  const std::string json = R"([[["a", "bb"], []], null, [["ccc"], ["", "dddd", "e"]]])";
  UniqueSchema schema;
  UniqueDeviceArray cpu = Cpu(field, json, &schema);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray dev, testing::CopyToDevice(schema.get(), cpu.get(), *gpu));
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  testing::StandinDelta delta;
  ASSERT_OK(view.SetArray(dev.get()));
  const FerryCudaStandinCounters c = delta.Get();
  EXPECT_EQ(view.round_trips(), 1);
  EXPECT_EQ(view.array_view().child(0).child(0).buffer(2).size, 11);  // hand-counted
  ASSERT_OK(view.Validate(ValidationLevel::kDefault));
  if (testing::GetStandin() != nullptr) {
    EXPECT_EQ(c.copies_d2h, 1);        // every offset gathered on the device first
    EXPECT_EQ(c.copies_d2d, 6);        // first and last offset of three nodes
    EXPECT_EQ(c.synchronizations, 1);  // the stream waits on the array's event; the host once
    EXPECT_EQ(c.implicit_synchronizations, 0);
    EXPECT_EQ(c.pageable_copies, 0);  // staged in pinned memory
  }
}

TEST(CudaSizes, ASlicedCopyNeedsOneCopyAndOneWaitPerLevel) {
  RESOLVE_GPU_OR_SKIP(gpu);
  Field field = Field::Make("+l", "x", {Field::Make("+l", "item", {Field::Make("u", "item")})});
  const std::string json =
      R"([[["a"]], [["bb", "c"], []], null, [["ddd"], ["", "ee", "f"]], [["g"]]])";
  UniqueSchema schema;
  UniqueDeviceArray cpu = Cpu(field, json, &schema);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray dev, testing::CopyToDevice(schema.get(), cpu.get(), *gpu));
  dev->array.offset = 1;  // rows 1..3
  dev->array.length = 3;
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArrayMinimal(dev.get()));
  testing::StandinDelta delta;
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray host, view.Copy(*CpuDevice()));
  const FerryCudaStandinCounters c = delta.Get();
  EXPECT_EQ(HostJson(schema.get(), host.get()),
            Json::parse(R"([[["bb", "c"], []], null, [["ddd"], ["", "ee", "f"]]])"));
  if (testing::GetStandin() != nullptr) {
    // One read per level whose range depends on its parent (3), and one wait for the offsets and
    // bitmaps staged to be re-based and shifted, which the data copies queued before it share.
    // The array's event is waited on by the stream, not the host.
    EXPECT_EQ(c.synchronizations, 3 + 1);
    // One batched read per level, one gathered copy of what is re-based or shifted on the host
    // (three offset buffers, the root's bitmap), and the one buffer copied as it is: the strings'
    // bytes (hand-counted from the JSON: no other buffer survives the slice unchanged).
    EXPECT_EQ(c.copies_d2h, 3 + 1 + 1);
    EXPECT_EQ(c.implicit_synchronizations, 0);
    EXPECT_EQ(c.pageable_copies, 0);
  }
}

// -- Whole trees ----------------------------------------------------------------------------------

TEST(CudaCopy, AThousandColumnTableIsOneAllocationAndOneCopy) {
  RESOLVE_GPU_OR_SKIP(gpu);
  std::vector<Field> columns;
  Json row0 = Json::object();
  Json row1 = Json::object();
  for (int i = 0; i < 1000; ++i) {
    // Appended, not "c" + std::string: GCC 12's bogus -Wrestrict in Release (GCC PR 105651).
    const std::string name = std::string("c").append(std::to_string(i));
    columns.push_back(Field::Make(i % 2 == 0 ? "i" : "u", name));
    row0[name] = i % 2 == 0 ? Json(i) : Json(std::to_string(i));
    row1[name] = nullptr;
  }
  UniqueSchema schema;
  UniqueDeviceArray cpu =
      Cpu(Field::Make("+s", "table", columns), Json::array({row0, row1}).dump(), &schema);
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArray(cpu.get()));
  testing::StandinDelta delta;
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray dev, view.Copy(*gpu));
  const FerryCudaStandinCounters c = delta.Get();
  EXPECT_EQ(HostJson(schema.get(), dev.get()), Json::array({row0, row1}));
  if (testing::GetStandin() != nullptr) {
    EXPECT_EQ(c.allocations_device, 1);
    EXPECT_EQ(c.copies_h2d, 1);
    EXPECT_EQ(c.synchronizations, 1);  // Copy (not CopyAsync) waits once for its result
    EXPECT_EQ(c.implicit_synchronizations, 0);
  }
}

TEST(CudaCopy, ReleasingACopyBeforeItRanIsSafe) {
  RESOLVE_GPU_OR_SKIP(gpu);
  testing::RawStream stream;
  UniqueSchema schema;
  UniqueDeviceArray cpu = Cpu(Field::Make("u", "s"), R"(["abc", "de", null])", &schema);
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArray(cpu.get()));
  testing::StandinDelta delta;
  {
    testing::StreamGate gate(stream.get());
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArray dev, view.CopyAsync(*gpu, stream.arg()));
    dev.reset();  // its block is freed in stream order, after the copy into it
  }
  ASSERT_OK(gpu->SynchronizeEvent(nullptr, stream.arg()));
  EXPECT_EQ(delta.Get().stream_errors, 0);
}

// -- The stand-in is stricter than a GPU where that finds bugs ------------------------------------

TEST(CudaStandin, AHostReadOfDeviceMemoryCrashes) {
  RESOLVE_GPU_OR_SKIP(gpu);
  FERRY_STANDIN_OR_SKIP(standin);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ASSERT_OK_AND_ASSIGN(void* p, gpu->Allocate(64, nullptr));
  EXPECT_DEATH(
      {
        volatile const uint8_t* byte = static_cast<const uint8_t*>(p);
        std::printf("%d\n", *byte);
      },
      "");
  gpu->Free(p, 64);
  // Pinned and managed memory are host memory.
  for (ArrowDeviceType t : {ARROW_DEVICE_CUDA_HOST, ARROW_DEVICE_CUDA_MANAGED}) {
    ASSERT_OK_AND_ASSIGN(Device * host_readable, ResolveDevice(t, 0));
    ASSERT_OK_AND_ASSIGN(void* q, host_readable->Allocate(64, nullptr));
    std::memset(q, 7, 64);
    EXPECT_EQ(static_cast<const uint8_t*>(q)[63], 7);
    host_readable->Free(q, 64);
  }
}

TEST(CudaStandin, ACopyIntoFreedMemoryFailsTheStream) {
  RESOLVE_GPU_OR_SKIP(gpu);
  (void)gpu;  // the raw driver works on GPU 0 itself
  FERRY_STANDIN_OR_SKIP(standin);
  testing::RawStream stream;
  testing::RawContext ctx;
  const testing::RawCuda* cu = testing::GetRawCuda();
  CUdeviceptr p = 0;
  ASSERT_EQ(cu->cuMemAllocAsync(&p, 64, stream.get()), 0);
  void* pinned = nullptr;  // pinned, so the copy is queued rather than staged after a drain
  ASSERT_EQ(cu->cuMemAllocHost_v2(&pinned, 64), 0);
  testing::StandinDelta delta;
  {
    testing::StreamGate gate(stream.get());
    ASSERT_EQ(cu->cuMemcpyAsync(p, reinterpret_cast<CUdeviceptr>(pinned), 64, stream.get()), 0);
    ASSERT_EQ(cu->cuMemFree_v2(p), 0);  // stream-ordered memory: cuMemFree does not wait
  }
  EXPECT_EQ(cu->cuStreamSynchronize(stream.get()), 700);  // CUDA_ERROR_ILLEGAL_ADDRESS
  EXPECT_EQ(delta.Get().stream_errors, 1);
  cu->cuMemFreeHost(pinned);
}

// The driver destroys a primary context, with every stream, event and allocation made in it, at
// its last release; a handle kept past that is stale (the real driver may crash on it). Disabled
// in the suite's own run, where ferry may hold the context: ctest's device_context_reset runs it
// alone, in a process where nothing else has retained GPU 0.
TEST(CudaStandin, DISABLED_TheLastReleaseDestroysWhatTheContextMade) {
  FERRY_STANDIN_OR_SKIP(standin);
  ASSERT_EQ(standin->Live().context_retains, 0) << "another owner holds the context: run it alone";
  const testing::RawCuda* cu = testing::GetRawCuda();
  CUstream stream = nullptr;
  CUdeviceptr p = 0;
  CUevent event = nullptr;
  {
    testing::RawContext ctx;  // the only retain: its release at the end of the scope is the last
    ASSERT_EQ(cu->cuStreamCreate(&stream, 1), 0);
    ASSERT_EQ(cu->cuMemAlloc_v2(&p, 64), 0);
    ASSERT_EQ(cu->cuEventCreate(&event, 2), 0);
    EXPECT_TRUE(testing::DriverMaps(reinterpret_cast<void*>(p)));
  }
  const FerryCudaStandinLive live = standin->Live();
  EXPECT_EQ(live.streams, 0);
  EXPECT_EQ(live.events, 0);
  EXPECT_EQ(live.device_allocations, 0);
  {
    testing::RawContext again;  // a new context: the old handles name nothing in it
    EXPECT_EQ(cu->cuStreamSynchronize(stream), 400);  // CUDA_ERROR_INVALID_HANDLE
    EXPECT_EQ(cu->cuEventQuery(event), 400);
    EXPECT_FALSE(testing::DriverMaps(reinterpret_cast<void*>(p)));
  }
  // A RawStream keeps its context retained, so it outlives the scopes that push the context.
  testing::RawStream kept;
  { testing::RawContext scope; }
  testing::RawContext use;
  EXPECT_EQ(cu->cuStreamSynchronize(kept.get()), 0);
}

// -- Events ---------------------------------------------------------------------------------------

TEST(CudaEvents, ACopyWaitsOnTheSourceEventWhereARawReadIsStale) {
  RESOLVE_GPU_OR_SKIP(gpu);
  testing::RawStream producer;
  UniqueSchema schema;
  UniqueDeviceArray cpu = Cpu(Field::Make("i", "x"), "[10, 20, 30]", &schema);
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArray(cpu.get()));
  testing::StreamGate gate(producer.get(), /*timeout_ms=*/200);
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray dev, view.CopyAsync(*gpu, producer.arg()));
  // Control: a read that ignores the event sees what the device block held before the copy.
  {
    testing::RawContext ctx;
    testing::RawStream other;
    int32_t raw[3] = {-1, -1, -1};
    ASSERT_EQ(testing::GetRawCuda()->cuMemcpyAsync(
                  reinterpret_cast<CUdeviceptr>(raw),
                  reinterpret_cast<CUdeviceptr>(dev->array.buffers[1]), 12, other.get()),
              0);
    EXPECT_NE(std::vector<int32_t>(raw, raw + 3), (std::vector<int32_t>{10, 20, 30}))
        << "a read without the event saw the data: the gate did not hold the producer";
  }
  // ferry's copy waits on the event (the gate opens after its timeout) and sees the data.
  EXPECT_EQ(HostJson(schema.get(), dev.get()), Json::parse("[10, 20, 30]"));
}

TEST(CudaEvents, RecordEventMarksTheStream) {
  RESOLVE_GPU_OR_SKIP(gpu);
  testing::RawStream stream;
  testing::StreamGate gate(stream.get());
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<void> event, gpu->RecordEvent(stream.arg()));
  const CUevent ev = *static_cast<CUevent*>(event.get());
  EXPECT_EQ(testing::GetRawCuda()->cuEventQuery(ev), 600);  // CUDA_ERROR_NOT_READY
  gate.Open();
  ASSERT_OK(gpu->SynchronizeEvent(event.get(), nullptr));
  EXPECT_EQ(testing::GetRawCuda()->cuEventQuery(ev), 0);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "needs a stream", gpu->RecordEvent(nullptr));
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "no events",
                     CpuDevice()->RecordEvent(stream.arg()));
}

// -- Two GPUs: copies between them, ordered by an event of one GPU on a stream of the other ------

TEST(CudaPeer, BuffersCrossBetweenGpusOrderedByAnEventAcrossThem) {
  RESOLVE_GPU_OR_SKIP(gpu0);
  RESOLVE_SECOND_GPU_OR_SKIP(gpu1);
  std::vector<uint8_t> pattern(size_t{1} << 16);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 7 + 3);
  const auto n = static_cast<int64_t>(pattern.size());
  ASSERT_OK_AND_ASSIGN(UniqueBuffer on0, BufferInit(*CpuDevice(), {pattern.data(), n}, *gpu0));
  testing::RawStream s0(0);
  testing::RawStream s1(1);
  const testing::StandinDelta delta;
  // GPU 0 -> GPU 1 on a stream of GPU 1, held back by a gate: not yet run when the next call
  // queues the copy back.
  testing::StreamGate gate(s1.get(), /*timeout_ms=*/10000, /*device=*/1);
  ASSERT_OK_AND_ASSIGN(UniqueBuffer on1, BufferInitAsync(*gpu0, {on0->data, n}, *gpu1, s1.arg()));
  // GPU 1 -> GPU 0 on a stream of GPU 0, after an event of GPU 1's stream.
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<void> copied, gpu1->RecordEvent(s1.arg()));
  ASSERT_OK(gpu0->SynchronizeEvent(copied.get(), s0.arg()));
  ASSERT_OK_AND_ASSIGN(UniqueBuffer back, BufferInitAsync(*gpu1, {on1->data, n}, *gpu0, s0.arg()));
  gate.Open();
  std::vector<uint8_t> host(pattern.size(), 0);
  ASSERT_OK(gpu0->SynchronizeEvent(nullptr, s0.arg()));
  ASSERT_OK(BufferCopy(*gpu0, {back->data, n}, *CpuDevice(), {host.data(), n}));
  EXPECT_EQ(host, pattern) << "the copy back ran before the copy it waited for";
  if (testing::GetStandin() != nullptr) {
    const FerryCudaStandinCounters c = delta.Get();
    EXPECT_EQ(c.copies_d2d, 2);  // one peer copy each way
    EXPECT_EQ(c.stream_waits, 1);
    EXPECT_EQ(c.bytes_d2d, 2 * n);
  }
}

TEST(CudaPeer, AnArrayCopiesToTheOtherGpuAfterItsEvent) {
  RESOLVE_GPU_OR_SKIP(gpu0);
  RESOLVE_SECOND_GPU_OR_SKIP(gpu1);
  testing::RawStream producer(0);
  UniqueSchema schema;
  UniqueDeviceArray cpu = Cpu(Field::Make("+l", "s", {Field::Make("u", "item")}),
                              R"([["a", "bc"], null, ["def"]])", &schema);
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArray(cpu.get()));
  testing::StreamGate gate(producer.get(), /*timeout_ms=*/200);
  // On GPU 0, with the event of a stream that has not run yet ...
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray on0, view.CopyAsync(*gpu0, producer.arg()));
  ASSERT_OK(view.SetArray(on0.get()));
  // ... copied to GPU 1: the copy waits on that event, and the values arrive whole.
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray on1, view.Copy(*gpu1));
  EXPECT_EQ(on1->device_id, 1);
  EXPECT_EQ(HostJson(schema.get(), on1.get()), Json::parse(R"([["a", "bc"], null, ["def"]])"));
}

}  // namespace
}  // namespace ferry
