// The CUDA Array Interface's streams on a GPU (the stand-in under ctest): an export makes the data
// ready on the stream it names, an import waits on the producer's stream. The producer here is
// the raw driver API, sharing no code with ferry; a gated stream holds its work back, so a read
// that skips the wait sees the old bytes and the test can fail.
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "ferry/device/device_array_view.hpp"
#include "ferry/memview/cuda_array_interface.hpp"
#include "ferry/memview/device_view.hpp"
#include "support/cuda_util.hpp"
#include "support/device_util.hpp"
#include "support/test_util.hpp"
#include "support/type_cases.hpp"

namespace ferry::memview {
namespace {

using testing::Json;

#define RESOLVE_GPU_OR_SKIP(var) \
  FERRY_RESOLVE_OR_SKIP(var, (testing::DeviceCase{ARROW_DEVICE_CUDA, 0, "CUDA0"}))

// Device memory written by a raw producer on `stream` (from pinned memory, so that the copy is
// queued, not staged after the stream drains), behind whatever the stream already holds.
struct RawProducer {
  testing::RawRetain retain;  // the memory lives in GPU 0's primary context
  CUdeviceptr ptr = 0;
  void* pinned = nullptr;

  explicit RawProducer(CUstream stream) {
    testing::RawContext ctx;
    const testing::RawCuda* cu = testing::GetRawCuda();
    EXPECT_EQ(cu->cuMemAlloc_v2(&ptr, 16), 0);
    EXPECT_EQ(cu->cuMemAllocHost_v2(&pinned, 16), 0);
    std::vector<int32_t> zeros(4, 0);
    EXPECT_EQ(cu->cuMemcpy(ptr, reinterpret_cast<CUdeviceptr>(zeros.data()), 16), 0);
    const int32_t values[4] = {11, 22, 33, 44};
    std::memcpy(pinned, values, 16);
    EXPECT_EQ(cu->cuMemcpyAsync(ptr, reinterpret_cast<CUdeviceptr>(pinned), 16, stream), 0);
  }
  ~RawProducer() {
    testing::RawContext ctx;
    testing::GetRawCuda()->cuMemFreeHost(pinned);
    testing::GetRawCuda()->cuMemFree_v2(ptr);
  }
  CudaArrayInterface Interface() const {
    CudaArrayInterface cai;
    cai.shape = {4};
    cai.typestr = "<i4";
    cai.data = static_cast<uintptr_t>(ptr);
    return cai;
  }
};

// What a view's memory holds, copied to the CPU through a device array.
Json Values(const MemoryView& view) {
  Result<DeviceArrayOwner> array = DeviceArrayFromView(view, nullptr);
  if (!array.ok()) return array.status().message();
  return Json::parse(testing::DeviceArrayToJson(array->schema.get(), array->array.get()));
}

TEST(CudaArrayInterfaceStreams, AnImportWaitsOnTheProducersStream) {
  RESOLVE_GPU_OR_SKIP(gpu);
  (void)gpu;  // the raw producer works on GPU 0 itself
  testing::RawStream stream;
  // The stand-in's empty stream runs its work at once; the gate makes "not yet" certain.
  testing::StreamGate gate(stream.get());
  RawProducer producer(stream.get());
  bool released = false;
  std::shared_ptr<const void> owner(&released, [](const bool* r) { *const_cast<bool*>(r) = true; });

  // Control: without the stream the reads do not wait, and see the old bytes.
  ASSERT_OK_AND_ASSIGN(MemoryView unordered,
                       FromCudaArrayInterface(producer.Interface(), owner, 0));
  EXPECT_EQ(unordered.sync_event, nullptr);
  EXPECT_EQ(Values(unordered), Json::parse("[0, 0, 0, 0]"));

  CudaArrayInterface cai = producer.Interface();
  cai.stream = static_cast<int64_t>(reinterpret_cast<uintptr_t>(stream.get()));
  testing::StandinDelta delta;
  ASSERT_OK_AND_ASSIGN(MemoryView view, FromCudaArrayInterface(cai, owner, 0));
  ASSERT_NE(view.sync_event, nullptr);
  if (testing::GetStandin() != nullptr) {
    EXPECT_EQ(delta.Get().synchronizations, 0);  // importing records; it does not wait
  }
  owner.reset();
  unordered = MemoryView();
  EXPECT_FALSE(released);  // the view holds the producer's owner
  // The read waits on the event while the gate is still shut; the gate opens 50 ms later.
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.Open();
  });
  EXPECT_EQ(Values(view), Json::parse("[11, 22, 33, 44]"));
  opener.join();
  view = MemoryView();
  EXPECT_TRUE(released);
}

TEST(CudaArrayInterfaceStreams, AnExportNamesAStreamTheDataIsReadyOn) {
  RESOLVE_GPU_OR_SKIP(gpu);
  testing::RawStream stream;
  testing::StreamGate gate(stream.get());
  UniqueSchema schema;
  auto host = testing::ArrayFromJson(Field::Make("i", "x"), "[5, 6, 7]");
  ASSERT_TRUE(host.ok());
  UniqueDeviceArray cpu = testing::ToCpuDeviceArray(std::move(host).ValueOrDie(), &schema);
  ASSERT_OK_AND_ASSIGN(DeviceArrayView cview, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(cview.SetArray(cpu.get()));
  auto owner = std::make_shared<DeviceArrayOwner>();
  owner->schema = std::move(schema);
  ASSERT_OK_AND_ASSIGN(owner->array, cview.CopyAsync(*gpu, stream.arg()));  // behind the gate
  ASSERT_OK_AND_ASSIGN(MemoryView view, ViewOfDeviceArray(owner, kStrides | kFormat));
  ASSERT_NE(view.sync_event, nullptr);

  testing::StandinDelta delta;
  ASSERT_OK_AND_ASSIGN(CudaArrayInterface cai, ToCudaArrayInterface(view));
  ASSERT_TRUE(cai.stream.has_value());
  EXPECT_GT(*cai.stream, 2);  // a real stream, not a default one
  if (testing::GetStandin() != nullptr) {
    const FerryCudaStandinCounters c = delta.Get();
    EXPECT_EQ(c.synchronizations + c.implicit_synchronizations, 0);
    EXPECT_EQ(c.stream_waits, 1);
  }
  // A consumer that orders its read on the named stream sees the data, once the producer ran.
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.Open();
  });
  testing::RawContext ctx;
  auto named = reinterpret_cast<CUstream>(static_cast<uintptr_t>(*cai.stream));
  int32_t got[3] = {0, 0, 0};
  ASSERT_EQ(testing::GetRawCuda()->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(got),
                                                 static_cast<CUdeviceptr>(cai.data), 12, named),
            0);
  ASSERT_EQ(testing::GetRawCuda()->cuStreamSynchronize(named), 0);
  EXPECT_EQ(std::vector<int32_t>(got, got + 3), (std::vector<int32_t>{5, 6, 7}));
  opener.join();
}

TEST(CudaArrayInterfaceStreams, ADeviceArrayFromAViewOnAStreamNeverWaits) {
  RESOLVE_GPU_OR_SKIP(gpu);
  (void)gpu;
  testing::RawStream producer_stream;
  testing::RawStream consumer_stream;
  testing::StreamGate gate(producer_stream.get());
  RawProducer producer(producer_stream.get());
  CudaArrayInterface cai = producer.Interface();
  cai.stream = static_cast<int64_t>(reinterpret_cast<uintptr_t>(producer_stream.get()));
  ASSERT_OK_AND_ASSIGN(MemoryView view, FromCudaArrayInterface(cai, nullptr, 0));
  testing::StandinDelta delta;
  ASSERT_OK_AND_ASSIGN(DeviceArrayOwner array, DeviceArrayFromView(view, consumer_stream.arg()));
  if (testing::GetStandin() != nullptr) {
    EXPECT_EQ(delta.Get().synchronizations + delta.Get().implicit_synchronizations, 0);
  }
  ASSERT_NE(array.array->sync_event, nullptr);  // recorded on the consumer's stream
  gate.Open();
  EXPECT_EQ(Json::parse(testing::DeviceArrayToJson(array.schema.get(), array.array.get())),
            Json::parse("[11, 22, 33, 44]"));
}

}  // namespace
}  // namespace ferry::memview
