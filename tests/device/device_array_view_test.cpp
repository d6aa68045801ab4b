// The device conformance suite: every device x every type x nulls x slice offset. Each case
// copies a sliced CPU array to the device and back, and checks the result against the generated
// values (rendered as JSON) and, byte for byte, against a CPU-to-CPU copy; both copies must pass
// full validation. On the guarded device any host access to device memory crashes the test.
#include "ferry/device/device_array_view.hpp"

#include <cstring>

#include "ferry/device/device_array.hpp"
#include "ferry/device/guarded.hpp"
#include "support/device_util.hpp"
#include "support/test_util.hpp"
#include "support/type_cases.hpp"

namespace ferry {
namespace {

using testing::Json;

struct Param {
  size_t device;
  size_t type;
  bool nulls;
  int64_t offset;
};

// Compare two host arrays of the same schema buffer by buffer (data bytes that the layout says
// are in use; bitmaps to their last used bit), recursively.
void ExpectSameBytes(const ArrayView& a, const ArrayView& b, const std::string& path) {
  ASSERT_EQ(a.length(), b.length()) << path;
  ASSERT_EQ(a.offset(), b.offset()) << path;
  ASSERT_EQ(a.n_buffers(), b.n_buffers()) << path;
  for (int64_t i = 0; i < a.n_buffers(); ++i) {
    ASSERT_EQ(a.buffer(i).size, b.buffer(i).size) << path << " buffer " << i;
    ASSERT_EQ(a.buffer(i).data == nullptr, b.buffer(i).data == nullptr) << path << " buffer " << i;
    if (a.buffer(i).data == nullptr || a.buffer(i).size <= 0) continue;
    EXPECT_EQ(
        std::memcmp(a.buffer(i).data, b.buffer(i).data, static_cast<size_t>(a.buffer(i).size)), 0)
        << path << " buffer " << i;
  }
  ASSERT_EQ(a.n_children(), b.n_children()) << path;
  for (int64_t c = 0; c < a.n_children(); ++c) {
    ExpectSameBytes(a.child(c), b.child(c), path + " > child " + std::to_string(c));
  }
  ASSERT_EQ(a.dictionary() == nullptr, b.dictionary() == nullptr) << path;
  if (a.dictionary() != nullptr)
    ExpectSameBytes(*a.dictionary(), *b.dictionary(), path + " > dict");
}

class DeviceConformance : public ::testing::TestWithParam<Param> {};

TEST_P(DeviceConformance, RoundTripThroughDevice) {
  const Param p = GetParam();
  const testing::DeviceCase& dc = testing::ConformanceDevices()[p.device];
  FERRY_RESOLVE_OR_SKIP(device, dc);
  const testing::TypeCase& tc = testing::TypeCases()[p.type];
  const int64_t length = 37;
  const int64_t total = p.offset + length;
  auto generated = testing::GenerateValues(tc, p.type * 31 + 7, total, p.nulls);
  ASSERT_OK_AND_ASSIGN(Array sliced, testing::SlicedArrayFromJson(tc.field, generated.values.dump(),
                                                                  p.offset, length));
  UniqueSchema schema;
  UniqueDeviceArray cpu = testing::ToCpuDeviceArray(std::move(sliced), &schema);

  // CPU -> device.
  ASSERT_OK_AND_ASSIGN(DeviceArrayView src_view, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(src_view.SetArray(cpu.get()));
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray on_device, src_view.Copy(*device));
  EXPECT_EQ(on_device->device_type, device->device_type());
  EXPECT_EQ(on_device->device_id, device->device_id());
  EXPECT_EQ(on_device->reserved[0] | on_device->reserved[1] | on_device->reserved[2], 0);
  if (device->device_type() == ARROW_DEVICE_EXT_DEV) {
    for (int64_t i = 0; i < on_device->array.n_buffers; ++i) {
      const void* b = on_device->array.buffers[i];
      const TypeId id = src_view.array_view().type().storage_type;
      const bool host_side = (id == TypeId::kBinaryView || id == TypeId::kStringView) &&
                             i == on_device->array.n_buffers - 1;
      if (b != nullptr && !host_side) {
        EXPECT_TRUE(IsGuardedMemory({b, 1})) << "buffer " << i;
      }
    }
  }

  // The device copy validates where it lives (full validation copies it to the host).
  ASSERT_OK_AND_ASSIGN(DeviceArrayView dev_view, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(dev_view.SetArray(on_device.get()));
  ASSERT_OK(dev_view.Validate(ValidationLevel::kDefault));
  ASSERT_OK(dev_view.Validate(ValidationLevel::kFull));

  // device -> CPU.
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray back, dev_view.Copy(*CpuDevice()));
  EXPECT_EQ(back->device_type, ARROW_DEVICE_CPU);
  EXPECT_EQ(back->sync_event, nullptr);
  ASSERT_OK_AND_ASSIGN(ArrayView back_view, ArrayView::Make(schema.get()));
  ASSERT_OK(back_view.SetArray(&back->array));
  ASSERT_OK(back_view.Validate(ValidationLevel::kFull));

  // Oracle 1: the generated values.
  Json expected = Json::array();
  for (int64_t i = p.offset; i < total; ++i)
    expected.push_back(generated.rendered[static_cast<size_t>(i)]);
  ASSERT_OK_AND_ASSIGN(std::string json, ArrayToJson(back_view));
  EXPECT_EQ(Json::parse(json), expected) << tc.name << " on " << dc.name;

  // Oracle 2: the same copy made CPU -> CPU, byte for byte.
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray direct, src_view.Copy(*CpuDevice()));
  ASSERT_OK_AND_ASSIGN(ArrayView direct_view, ArrayView::Make(schema.get()));
  ASSERT_OK(direct_view.SetArray(&direct->array));
  ASSERT_OK(direct_view.Validate(ValidationLevel::kFull));
  ExpectSameBytes(direct_view, back_view, tc.name);
}

std::vector<Param> AllParams() {
  std::vector<Param> params;
  for (size_t d = 0; d < testing::ConformanceDevices().size(); ++d) {
    for (size_t t = 0; t < testing::TypeCases().size(); ++t) {
      for (bool nulls : {false, true}) {
        for (int64_t offset : {0, 5}) params.push_back({d, t, nulls, offset});
      }
    }
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(AllDevicesAllTypes, DeviceConformance, ::testing::ValuesIn(AllParams()),
                         [](const ::testing::TestParamInfo<Param>& param_info) {
                           const Param& p = param_info.param;
                           return testing::ConformanceDevices()[p.device].name + "_" +
                                  testing::TypeCases()[p.type].name +
                                  (p.nulls ? "_nulls" : "_dense") + "_off" +
                                  std::to_string(p.offset);
                         });

// -- Round trips and sizes on the guarded device -----------------------------------------------

Result<UniqueDeviceArray> GuardedFromJson(const Field& field, const std::string& json,
                                          UniqueSchema* schema, int64_t offset = 0,
                                          int64_t length = -1) {
  Result<Array> array = length < 0 ? testing::ArrayFromJson(field, json)
                                   : testing::SlicedArrayFromJson(field, json, offset, length);
  FERRY_RETURN_NOT_OK(array.status());
  UniqueDeviceArray cpu = testing::ToCpuDeviceArray(std::move(array).ValueOrDie(), schema);
  return testing::CopyToDevice(schema->get(), cpu.get(), *GuardedDevice());
}

TEST(DeviceArrayView, SetArrayLearnsNestedStringSizesInOneRoundTrip) {
  // list<struct<a: string, b: list<large_string>>>: three offset-bearing levels.
  Field field = Field::Make(
      "+l", "x",
      {Field::Make("+s", "item",
                   {Field::Make("u", "a"), Field::Make("+l", "b", {Field::Make("U", "item")})})});
  UniqueSchema schema;
  ASSERT_OK_AND_ASSIGN(
      UniqueDeviceArray dev,
      GuardedFromJson(
          field,
          R"([[{"a": "xy", "b": ["p", "qq"]}], null, [{"a": "long string here", "b": []},
                          {"a": "", "b": null}]])",
          &schema));
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  const DeviceStats before = GuardedDevice()->stats();
  ASSERT_OK(view.SetArray(dev.get()));
  const DeviceStats after = GuardedDevice()->stats();
  EXPECT_EQ(view.round_trips(), 1);
  EXPECT_EQ(after.round_trips - before.round_trips, 1);
  const ArrayView& a = view.array_view().child(0).child(0);
  EXPECT_EQ(a.buffer(2).size, 18);  // "xy" + "long string here" + ""
  const ArrayView& b_items = view.array_view().child(0).child(1).child(0);
  EXPECT_EQ(b_items.buffer(2).size, 3);  // "p" + "qq"
  ASSERT_OK(view.Validate(ValidationLevel::kDefault));
}

// Every node's buffer sizes, in pre-order.
void CollectSizes(const ArrayView& v, std::vector<int64_t>* out) {
  for (int64_t i = 0; i < v.n_buffers(); ++i) out->push_back(v.buffer(i).size);
  for (int64_t i = 0; i < v.n_children(); ++i) CollectSizes(v.child(i), out);
}

TEST(DeviceArrayView, SetArrayOnTheHostReadsEachLastOffsetInPlace) {
  // A nested, sliced array on the CPU: its offsets are read where they lie, and every node's
  // sizes are those the host ArrayView learns on its own.
  Field field = Field::Make(
      "+l", "x",
      {Field::Make("+s", "item",
                   {Field::Make("u", "a"), Field::Make("+l", "b", {Field::Make("U", "item")})})});
  const std::string json =
      R"([[{"a": "zz", "b": ["r"]}], [{"a": "xy", "b": ["p", "qq"]}], null,
          [{"a": "long string here", "b": []}, {"a": "", "b": null}], [{"a": "w", "b": ["s"]}]])";
  UniqueSchema schema;
  ASSERT_OK_AND_ASSIGN(Array sliced, testing::SlicedArrayFromJson(field, json, 1, 3));
  UniqueDeviceArray cpu = testing::ToCpuDeviceArray(std::move(sliced), &schema);
  ASSERT_OK_AND_ASSIGN(DeviceArrayView host_view, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(host_view.SetArray(cpu.get()));
  EXPECT_EQ(host_view.round_trips(), 0);
  ASSERT_OK_AND_ASSIGN(ArrayView plain, ArrayView::Make(schema.get()));
  ASSERT_OK(plain.SetArray(&cpu->array));
  std::vector<int64_t> learnt;
  std::vector<int64_t> expected;
  CollectSizes(host_view.array_view(), &learnt);
  CollectSizes(plain, &expected);
  EXPECT_EQ(learnt, expected);
  // A child's sizes are its own rows', whatever the slice above it (hand-computed: "zz" + "xy"
  // + "long string here" + "" + "w" = 21 bytes of a; "r" + "p" + "qq" + "s" = 5 of b's items).
  EXPECT_EQ(host_view.array_view().child(0).child(0).buffer(2).size, 21);
  EXPECT_EQ(host_view.array_view().child(0).child(1).child(0).buffer(2).size, 5);
  ASSERT_OK(host_view.Validate(ValidationLevel::kFull));
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray copy, host_view.Copy(*CpuDevice()));
  ASSERT_OK_AND_ASSIGN(ArrayView copied, ArrayView::Make(schema.get()));
  ASSERT_OK(copied.SetArray(&copy->array));
  ASSERT_OK_AND_ASSIGN(std::string out, ArrayToJson(copied));
  EXPECT_EQ(Json::parse(out), Json::parse(R"([[{"a": "xy", "b": ["p", "qq"]}], null,
                            [{"a": "long string here", "b": []}, {"a": "", "b": null}]])"));
}

TEST(DeviceArrayView, AFailedSetArrayLeavesTheViewEmpty) {
  UniqueSchema schema;
  UniqueDeviceArray cpu = testing::ToCpuDeviceArray(
      testing::ArrayFromJson(Field::Make("u", "s"), R"(["a", "bc"])").ValueOrDie(), &schema);
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArray(cpu.get()));
  EXPECT_EQ(view.array_view().length(), 2);
  EXPECT_EQ(view.array_view().buffer(2).size, 3);
  ArrowDeviceArray bad = *cpu.get();
  bad.array.n_buffers = 2;  // a string needs three
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "n_buffers is 2", view.SetArray(&bad));
  EXPECT_EQ(view.device(), nullptr);
  EXPECT_EQ(view.device_array(), nullptr);
  EXPECT_EQ(view.array_view().length(), 0);
  EXPECT_EQ(view.array_view().buffer(2).size, 0);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "no array",
                     view.Validate(ValidationLevel::kDefault));
}

TEST(DeviceArrayView, SetArrayMinimalReadsNothing) {
  UniqueSchema schema;
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray dev,
                       GuardedFromJson(Field::Make("u", "s"), R"(["a", "bc"])", &schema));
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  const DeviceStats before = GuardedDevice()->stats();
  ASSERT_OK(view.SetArrayMinimal(dev.get()));
  EXPECT_EQ(GuardedDevice()->stats().copies, before.copies);
  EXPECT_EQ(view.array_view().buffer(2).size, -1);
  ASSERT_OK(view.Validate(ValidationLevel::kMinimal));
}

TEST(DeviceArrayView, SlicedNestedCopyNeedsOneRoundTripPerOffsetLevel) {
  Field field = Field::Make("+l", "x", {Field::Make("u", "item")});
  UniqueSchema schema;
  ASSERT_OK_AND_ASSIGN(
      UniqueDeviceArray dev,
      GuardedFromJson(field, R"([["a"], ["bb", "ccc"], null, ["dddd"], [], ["e", "f"]])", &schema));
  // Slice the device array itself: rows 1..4.
  dev->array.offset = 1;
  dev->array.length = 4;
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArray(dev.get()));
  EXPECT_EQ(view.round_trips(), 1);  // both offset levels in one gather
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray host, view.Copy(*CpuDevice()));
  // The list's offsets were gathered by SetArray; the string child's visible range depends on
  // them (one gather); the offsets to re-base are staged with the copies (one wait).
  EXPECT_EQ(view.round_trips(), 2);
  ASSERT_OK_AND_ASSIGN(ArrayView hv, ArrayView::Make(schema.get()));
  ASSERT_OK(hv.SetArray(&host->array));
  ASSERT_OK(hv.Validate(ValidationLevel::kFull));
  ASSERT_OK_AND_ASSIGN(std::string json, ArrayToJson(hv));
  EXPECT_EQ(Json::parse(json), Json::parse(R"([["bb","ccc"],null,["dddd"],[]])"));
  EXPECT_EQ(hv.offset(), 0);
  EXPECT_EQ(hv.ListStart(0), 0);       // re-based
  EXPECT_EQ(hv.child(0).length(), 3);  // only the visible strings were copied
}

TEST(DeviceArrayView, CopiesOnlyTheVisibleSlice) {
  // 1000 strings of 10 bytes; the slice [990, 1000) must copy about 100 bytes of data.
  Json values = Json::array();
  for (int i = 0; i < 1000; ++i) values.push_back("0123456789");
  ASSERT_OK_AND_ASSIGN(Array sliced,
                       testing::SlicedArrayFromJson(Field::Make("u", "s"), values.dump(), 990, 10));
  UniqueSchema schema;
  UniqueDeviceArray cpu = testing::ToCpuDeviceArray(std::move(sliced), &schema);
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArray(cpu.get()));
  const DeviceStats before = GuardedDevice()->stats();
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray dev, view.Copy(*GuardedDevice()));
  const DeviceStats after = GuardedDevice()->stats();
  EXPECT_EQ(after.allocations - before.allocations, 1);  // one block for the whole tree
  EXPECT_LE(after.bytes_copied - before.bytes_copied, 100 + 11 * 4 + 2);
  EXPECT_EQ(dev->array.offset, 0);
}

TEST(DeviceArrayView, BitmapsShiftWhenTheOffsetIsNotAMultipleOf8) {
  UniqueSchema schema;
  ASSERT_OK_AND_ASSIGN(
      UniqueDeviceArray dev,
      GuardedFromJson(Field::Make("b", "x"),
                      "[true, null, false, true, true, null, false, false, true, null, true]",
                      &schema, 3, 7));
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  ASSERT_OK(view.SetArray(dev.get()));
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray host, view.Copy(*CpuDevice()));
  EXPECT_EQ(host->array.offset, 0);
  // Elements 3..9: true, true, null, false, false, true, null -> validity 0b0111011, data
  // 0b0100011 (hand-computed, bit i = element i).
  const auto* validity = static_cast<const uint8_t*>(host->array.buffers[0]);
  const auto* data = static_cast<const uint8_t*>(host->array.buffers[1]);
  EXPECT_EQ(validity[0], 0b0111011);
  EXPECT_EQ(data[0], 0b0100011);
  EXPECT_EQ(host->array.null_count, 2);
}

TEST(DeviceArrayView, NegativeCases) {
  UniqueSchema schema;
  ASSERT_OK_AND_ASSIGN(UniqueDeviceArray dev,
                       GuardedFromJson(Field::Make("u", "s"), R"(["a", "bc"])", &schema));
  ASSERT_OK_AND_ASSIGN(DeviceArrayView view, DeviceArrayView::Make(schema.get()));
  // A stream-ordered call on a device with streams needs a stream.
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "needs a stream",
                     view.SetArrayAsync(dev.get(), nullptr));
  ASSERT_OK(view.SetArray(dev.get()));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "needs a stream",
                     view.CopyAsync(*CpuDevice(), nullptr));
  // Released and NULL arrays.
  UniqueDeviceArray released;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "released", view.SetArray(released.get()));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "NULL", view.SetArray(nullptr));
  // Unknown devices.
  ArrowDeviceArray bogus = *dev.get();
  bogus.device_type = ARROW_DEVICE_EXT_DEV;
  bogus.device_id = 7;
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "EXT_DEV device 7 does not exist",
                     view.SetArray(&bogus));
  bogus.device_type = static_cast<ArrowDeviceType>(99);
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "device type 99", view.SetArray(&bogus));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "no array", view.Copy(*CpuDevice()));
}

}  // namespace
}  // namespace ferry
