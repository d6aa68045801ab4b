// Device test support (see device_util.hpp).
#include "support/device_util.hpp"

#include <cstdlib>
#include <string>

#include "ferry/core/status_code.hpp"
#include "ferry/device/device_array.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"
#include "support/dipc_data.hpp"

namespace ferry::testing {

const std::vector<DeviceCase>& ConformanceDevices() {
  static const std::vector<DeviceCase> devices = [] {
    std::vector<DeviceCase> all = {
        {ARROW_DEVICE_CPU, -1, "CPU"},
        {ARROW_DEVICE_EXT_DEV, 0, "GUARDED"},
        {ARROW_DEVICE_OPENCL, 0, "OPENCL0"},
        {ARROW_DEVICE_CUDA, 0, "CUDA0"},
        {ARROW_DEVICE_CUDA_HOST, 0, "CUDA_HOST0"},
        {ARROW_DEVICE_CUDA_MANAGED, 0, "CUDA_MANAGED0"},
    };
    // A second GPU joins where it is required: the two-GPU stand-in run, or a machine with two.
    const DeviceCase second{ARROW_DEVICE_CUDA, 1, "CUDA1"};
    if (DeviceRequired(second)) all.push_back(second);
    return all;
  }();
  return devices;
}

Result<Device*> ResolveForTest(const DeviceCase& c) { return ResolveDevice(c.type, c.id); }

bool DeviceRequired(const DeviceCase& c) {
  const char* env = std::getenv("FERRY_REQUIRE_DEVICES");
  if (env == nullptr) return false;
  const std::string list = std::string(",") + env + ",";
  return list.find("," + c.name + ",") != std::string::npos;
}

UniqueDeviceArray ToCpuDeviceArray(Array array, UniqueSchema* schema_out) {
  UniqueArray raw;
  std::move(array).Export(schema_out->get(), raw.get());
  UniqueDeviceArray out;
  Status st = DeviceArrayInit(*CpuDevice(), out.get(), raw.get(), nullptr);
  EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

Result<UniqueDeviceArray> CopyToDevice(const ArrowSchema* schema, const ArrowDeviceArray* src,
                                       Device& device) {
  FERRY_ASSIGN_OR_RAISE(DeviceArrayView view, DeviceArrayView::Make(schema));
  FERRY_RETURN_NOT_OK(view.SetArray(src));
  return view.Copy(device);
}

std::string DeviceArrayToJson(const ArrowSchema* schema, const ArrowDeviceArray* array) {
  auto json = [&]() -> Result<std::string> {
    FERRY_ASSIGN_OR_RAISE(DeviceArrayView view, DeviceArrayView::Make(schema));
    FERRY_RETURN_NOT_OK(view.SetArray(array));
    FERRY_ASSIGN_OR_RAISE(UniqueDeviceArray host, view.Copy(*CpuDevice()));
    FERRY_ASSIGN_OR_RAISE(ArrayView host_view, ArrayView::Make(schema));
    FERRY_RETURN_NOT_OK(host_view.SetArray(&host->array));
    return ArrayToJson(host_view);
  }();
  return json.ok() ? *json : "error: " + json.status().message();
}

namespace {
// A C stream call's failure: its return code mapped to a code, its own words as the message.
Status StreamFailure(ArrowDeviceArrayStream* stream, int rc) {
  const char* text = stream->get_last_error(stream);
  return Status(StatusCodeFromErrno(rc), text != nullptr ? text : "stream call failed", rc);
}
}  // namespace

Result<std::vector<nlohmann::json>> DrainToJson(ArrowDeviceArrayStream* stream, int64_t limit) {
  UniqueSchema schema;
  if (int rc = stream->get_schema(stream, schema.get()); rc != 0) {
    return StreamFailure(stream, rc);
  }
  std::vector<nlohmann::json> out;
  while (limit < 0 || static_cast<int64_t>(out.size()) < limit) {
    UniqueDeviceArray a;
    if (int rc = stream->get_next(stream, a.get()); rc != 0) {
      return StreamFailure(stream, rc);
    }
    if (!a.valid()) return out;
    out.push_back(nlohmann::json::parse(DeviceArrayToJson(schema.get(), a.get())));
  }
  return out;
}

BatchSource::BatchSource(UniqueSchema schema, std::vector<UniqueDeviceArray> batches, int fail_at)
    : schema_(std::move(schema)), batches_(std::move(batches)), fail_at_(fail_at) {}

Status BatchSource::GetSchema(ArrowSchema* out) {
  FERRY_ASSIGN_OR_RAISE(UniqueSchema copy, CopySchema(schema_.get()));
  copy.move_to(out);
  return Status::OK();
}

Status BatchSource::GetNext(ArrowDeviceArray* out) {
  if (next_ == fail_at_)
    return Status::IOError("the source broke at batch " + std::to_string(next_));
  if (next_ < static_cast<int>(batches_.size()))
    batches_[static_cast<size_t>(next_++)].move_to(out);
  return Status::OK();
}

std::unique_ptr<BatchSource> IntSource(int count, int rows, int fail_at,
                                       std::vector<nlohmann::json>* expected) {
  Result<IntArrays> arrays = MakeIntArrays(count, rows);
  EXPECT_TRUE(arrays.ok()) << arrays.status().message();
  if (!arrays.ok())
    return std::make_unique<BatchSource>(UniqueSchema(), std::vector<UniqueDeviceArray>(), 0);
  for (nlohmann::json& rows_of_batch : arrays->expected)
    expected->push_back(std::move(rows_of_batch));
  return std::make_unique<BatchSource>(std::move(arrays->schema), std::move(arrays->batches),
                                       fail_at);
}

}  // namespace ferry::testing
