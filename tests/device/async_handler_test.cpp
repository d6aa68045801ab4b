// ferry's handlers and sync events: a batch copied to a device with its copy still
// queued keeps its event from the source to the consumer (the very event object), and ferry's
// handler with wait_events waits on it before handing the batch on. On the CUDA stand-in a gate
// holds the copy back, so a handler that did not wait would return while the event is pending;
// on OpenCL (PoCL) the event is a cl_event.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "ferry/device/async_stream.hpp"
#include "ferry/device/device_array_view.hpp"
#include "support/cuda_util.hpp"
#include "support/device_util.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kHandlerWait{10000};

// One batch already on a device: hands it over once, then the end.
class OneBatch final : public DeviceArrayProducer {
 public:
  OneBatch(UniqueSchema schema, UniqueDeviceArray batch)
      : schema_(std::move(schema)), batch_(std::move(batch)) {}
  Status GetSchema(ArrowSchema* out) override {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema copy, CopySchema(schema_.get()));
    copy.move_to(out);
    return Status::OK();
  }
  Status GetNext(ArrowDeviceArray* out) override {
    if (batch_.valid()) batch_.move_to(out);
    return Status::OK();
  }

 private:
  UniqueSchema schema_;
  UniqueDeviceArray batch_;
};

// [10, 20, 30] copied to `device` on `stream` (not waited for): its event is pending until the
// copy has run, which reads `*cpu` (kept by the caller until then).
UniqueDeviceArray OnDevice(Device& device, void* stream, UniqueSchema* schema,
                           UniqueDeviceArray* cpu) {
  auto cpu_values = testing::ArrayFromJson(Field::Make("i", "x"), "[10, 20, 30]");
  EXPECT_TRUE(cpu_values.ok());
  *cpu = testing::ToCpuDeviceArray(std::move(cpu_values).ValueOrDie(), schema);
  auto view = DeviceArrayView::Make(schema->get());
  EXPECT_TRUE(view.ok());
  EXPECT_OK(view->SetArray(cpu->get()));
  auto dev = view->CopyAsync(device, stream);
  EXPECT_TRUE(dev.ok()) << dev.status().message();
  return std::move(dev).ValueOrDie();
}

struct Through {
  ArrowAsyncDeviceStreamHandler handler{};
  UniqueDeviceArrayStream reader;
  std::unique_ptr<AsyncStreamProducer> producer;
};

// Serve `batch` through ferry's producer into ferry's handler (wait_events as given).
void Serve(Through* t, UniqueSchema schema, UniqueDeviceArray batch, ArrowDeviceType type,
           bool wait_events) {
  AsyncHandlerOptions options;
  options.wait_events = wait_events;
  ASSERT_OK(AsyncHandlerToStream(&t->handler, t->reader.get(), options));
  auto p = ProduceAsync(std::make_unique<OneBatch>(std::move(schema), std::move(batch)), type,
                        &t->handler);
  ASSERT_TRUE(p.ok());
  t->producer = std::move(p).ValueOrDie();
}

TEST(AsyncEvents, TheCudaEventTravelsAndTheHandlerWaitsOnIt) {
  FERRY_RESOLVE_OR_SKIP(gpu, (testing::DeviceCase{ARROW_DEVICE_CUDA, 0, "CUDA0"}));
  testing::RawStream stream;
  UniqueSchema schema;
  UniqueDeviceArray cpu;  // the copy's source, kept until it has run
  UniqueDeviceArray dev;
  {
    testing::StreamGate gate(stream.get(), /*timeout_ms=*/1000);
    dev = OnDevice(*gpu, stream.arg(), &schema, &cpu);
    ASSERT_NE(dev->sync_event, nullptr);
    void* const event = dev->sync_event;
    const CUevent ev = *static_cast<CUevent*>(event);
    EXPECT_EQ(testing::GetRawCuda()->cuEventQuery(ev), 600) << "the gate did not hold the copy";
    Through t;
    UniqueSchema served;
    ASSERT_OK_AND_ASSIGN(served, CopySchema(schema.get()));
    Serve(&t, std::move(served), std::move(dev), ARROW_DEVICE_CUDA, /*wait_events=*/true);
    UniqueDeviceArray got;
    ASSERT_EQ(t.reader->get_next(t.reader.get(), got.get()), 0);
    EXPECT_EQ(t.reader->device_type, ARROW_DEVICE_CUDA);
    EXPECT_EQ(got->device_type, ARROW_DEVICE_CUDA);
    EXPECT_EQ(got->sync_event, event) << "the batch lost its event on the way";
    EXPECT_EQ(testing::GetRawCuda()->cuEventQuery(ev), 0)
        << "get_next returned before the batch's event completed";
    EXPECT_EQ(nlohmann::json::parse(testing::DeviceArrayToJson(schema.get(), got.get())),
              nlohmann::json::parse("[10, 20, 30]"));
    UniqueDeviceArray end;
    ASSERT_EQ(t.reader->get_next(t.reader.get(), end.get()), 0);
    EXPECT_FALSE(end.valid());
    ASSERT_OK(t.producer->Wait(kHandlerWait));
  }
}

TEST(AsyncEvents, WithoutWaitingTheEventIsTheConsumersToWaitOn) {
  FERRY_RESOLVE_OR_SKIP(gpu, (testing::DeviceCase{ARROW_DEVICE_CUDA, 0, "CUDA0"}));
  testing::RawStream stream;
  testing::StreamGate gate(stream.get(), /*timeout_ms=*/10000);
  UniqueSchema schema;
  UniqueDeviceArray cpu;  // the copy's source, kept until it has run
  UniqueDeviceArray dev = OnDevice(*gpu, stream.arg(), &schema, &cpu);
  void* const event = dev->sync_event;
  ASSERT_NE(event, nullptr);
  Through t;
  ASSERT_OK_AND_ASSIGN(UniqueSchema served, CopySchema(schema.get()));
  Serve(&t, std::move(served), std::move(dev), ARROW_DEVICE_CUDA, /*wait_events=*/false);
  UniqueDeviceArray got;
  ASSERT_EQ(t.reader->get_next(t.reader.get(), got.get()), 0);
  EXPECT_EQ(got->sync_event, event);
  // Still pending: the handler handed the batch on at once, and the consumer waits.
  EXPECT_EQ(testing::GetRawCuda()->cuEventQuery(*static_cast<CUevent*>(event)), 600);
  gate.Open();
  ASSERT_OK(gpu->SynchronizeEvent(got->sync_event, nullptr));
  EXPECT_EQ(nlohmann::json::parse(testing::DeviceArrayToJson(schema.get(), got.get())),
            nlohmann::json::parse("[10, 20, 30]"));
  ASSERT_OK(t.producer->Wait(kHandlerWait));
}

TEST(AsyncEvents, AnOpenClEventTravelsAndIsWaitedOn) {
  FERRY_RESOLVE_OR_SKIP(cl, (testing::DeviceCase{ARROW_DEVICE_OPENCL, 0, "OPENCL0"}));
  ASSERT_OK_AND_ASSIGN(void* queue, InternalStreamFor(*CpuDevice(), *cl));
  UniqueSchema schema;
  UniqueDeviceArray cpu;  // the copy's source, kept until it has run
  UniqueDeviceArray dev = OnDevice(*cl, queue, &schema, &cpu);
  void* const event = dev->sync_event;
  ASSERT_NE(event, nullptr) << "an OpenCL copy carries its cl_event";
  Through t;
  ASSERT_OK_AND_ASSIGN(UniqueSchema served, CopySchema(schema.get()));
  Serve(&t, std::move(served), std::move(dev), ARROW_DEVICE_OPENCL, /*wait_events=*/true);
  UniqueDeviceArray got;
  ASSERT_EQ(t.reader->get_next(t.reader.get(), got.get()), 0);
  EXPECT_EQ(got->device_type, ARROW_DEVICE_OPENCL);
  EXPECT_EQ(got->sync_event, event);
  EXPECT_EQ(nlohmann::json::parse(testing::DeviceArrayToJson(schema.get(), got.get())),
            nlohmann::json::parse("[10, 20, 30]"));
  ASSERT_OK(t.producer->Wait(kHandlerWait));
}

}  // namespace
}  // namespace ferry
