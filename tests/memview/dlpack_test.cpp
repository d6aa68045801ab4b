// DLPack bridge: round trips per dtype, version mismatch, read-only, strides and ownership.
#include "ferry/memview/dlpack.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <numeric>
#include <optional>
#include <vector>

#include "support/test_util.hpp"

namespace ferry::memview {
namespace {

bool HostIsLittle() { return std::endian::native == std::endian::little; }

MemoryView Owned(const char* format, int64_t n, bool readonly) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(64 * 8);
  std::iota(bytes->begin(), bytes->end(), 0);
  auto view = MakeContiguousView(bytes, bytes->data(), static_cast<int64_t>(bytes->size()), format,
                                 {n}, readonly);
  EXPECT_TRUE(view.ok()) << view.status().message();
  return std::move(view).ValueOrDie();
}

TEST(DLPack, RoundTripsEveryDtype) {
  struct Case {
    const char* format;
    uint8_t code;
    uint8_t bits;
  };
  for (const Case& c :
       {Case{"c", kDLInt, 8}, Case{"s", kDLInt, 16}, Case{"l", kDLInt, 32}, Case{"q", kDLInt, 64},
        Case{"C", kDLUInt, 8}, Case{"S", kDLUInt, 16}, Case{"L", kDLUInt, 32},
        Case{"Q", kDLUInt, 64}, Case{"f", kDLFloat, 32}, Case{"d", kDLFloat, 64}}) {
    MemoryView v = Owned(c.format, 5, false);
    ASSERT_OK_AND_ASSIGN(DLManagedTensorVersioned * t, ToDLPack(v));
    EXPECT_EQ(t->version.major, 1u);
    EXPECT_EQ(t->dl_tensor.dtype.code, c.code) << c.format;
    EXPECT_EQ(t->dl_tensor.dtype.bits, c.bits) << c.format;
    EXPECT_EQ(t->dl_tensor.device.device_type, kDLCPU);
    EXPECT_EQ(t->dl_tensor.data, v.data);  // zero-copy
    EXPECT_EQ(t->flags & DLPACK_FLAG_BITMASK_READ_ONLY, 0u);
    ASSERT_OK_AND_ASSIGN(MemoryView back, FromDLPack(t));
    EXPECT_EQ(back.data, v.data);
    EXPECT_EQ(back.shape, v.shape);
    EXPECT_EQ(back.item_size, v.item_size);
    EXPECT_EQ(back.item_desc.components[0].size, v.item_desc.components[0].size);
  }
}

TEST(DLPack, OwnershipFollowsTheDeleter) {
  MemoryView v = Owned("l", 4, true);
  std::weak_ptr<const void> owner = v.owner;
  ASSERT_OK_AND_ASSIGN(DLManagedTensorVersioned * t, ToDLPack(v));
  EXPECT_NE(t->flags & DLPACK_FLAG_BITMASK_READ_ONLY, 0u);
  v = MemoryView();
  EXPECT_FALSE(owner.expired());  // the tensor keeps the memory alive
  {
    ASSERT_OK_AND_ASSIGN(MemoryView back, FromDLPack(t));
    EXPECT_TRUE(back.readonly);
  }
  EXPECT_TRUE(owner.expired());  // the view's owner called the deleter
}

int g_deleted = 0;

TEST(DLPack, MajorVersionMismatchOnlyCallsTheDeleter) {
  g_deleted = 0;
  auto* t = new DLManagedTensorVersioned{};
  t->version.major = 2;
  t->deleter = [](DLManagedTensorVersioned* self) {
    ++g_deleted;
    delete self;
  };
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "major version 2 is not supported", FromDLPack(t));
  EXPECT_EQ(g_deleted, 1);
}

TEST(DLPack, RefusalsAreClear) {
  MemoryView ro = Owned("l", 3, true);
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "cannot mark data read-only", ToDLPackLegacy(ro));
  MemoryView odd = Owned("l", 3, false);
  odd.strides = {6};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "stride 6 of dimension 0 is not a multiple of the item size 4", ToDLPack(odd));
  MemoryView swapped = Owned(HostIsLittle() ? "l>" : "l<", 3, false);
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "native byte order", ToDLPack(swapped));
  MemoryView pair = Owned("l2", 3, false);
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "one scalar", ToDLPack(pair));
}

TEST(DLPack, LegacyAndBoolAndStrides) {
  MemoryView v = Owned("q", 6, false);
  v.shape = {2, 3};
  v.ndim = 2;
  v.strides = {8, 16};  // column-major
  ASSERT_OK_AND_ASSIGN(DLManagedTensor * legacy, ToDLPackLegacy(v));
  EXPECT_EQ(legacy->dl_tensor.strides[0], 1);
  EXPECT_EQ(legacy->dl_tensor.strides[1], 2);
  ASSERT_OK_AND_ASSIGN(MemoryView back, FromDLPackLegacy(legacy));
  EXPECT_EQ(back.strides, (std::vector<int64_t>{8, 16}));
  EXPECT_FALSE(back.readonly);

  static uint8_t bools[3] = {1, 0, 1};
  auto* t = new DLManagedTensorVersioned{};
  static int64_t shape[1] = {3};
  t->version.major = 1;
  t->dl_tensor.data = bools;
  t->dl_tensor.device = {kDLCPU, 0};
  t->dl_tensor.ndim = 1;
  t->dl_tensor.dtype = {kDLBool, 8, 1};
  t->dl_tensor.shape = shape;
  t->deleter = [](DLManagedTensorVersioned* self) { delete self; };
  ASSERT_OK_AND_ASSIGN(MemoryView b, FromDLPack(t));
  EXPECT_EQ(b.format, "{bool}");   // a boolean stays one, not an unsigned byte
  EXPECT_TRUE(b.strides.empty());  // NULL strides: row-major
  EXPECT_EQ(b.size, 3);
  EXPECT_EQ(std::get<uint64_t>(std::get<ItemScalar>(DecodeItem(b.item_desc, bools + 2))), 1u);
  ASSERT_OK_AND_ASSIGN(DLManagedTensorVersioned * out, ToDLPack(b));
  EXPECT_EQ(out->dl_tensor.dtype.code, kDLBool);
  EXPECT_EQ(out->dl_tensor.dtype.bits, 8);
  out->deleter(out);
  for (const char* format : {"{complex64}", "{complex128}"}) {
    MemoryView z = Owned(format, 2, false);
    ASSERT_OK_AND_ASSIGN(DLManagedTensorVersioned * zt, ToDLPack(z));
    EXPECT_EQ(zt->dl_tensor.dtype.code, kDLComplex) << format;
    EXPECT_EQ(zt->dl_tensor.dtype.bits, z.item_size * 8) << format;
    ASSERT_OK_AND_ASSIGN(MemoryView zb, FromDLPack(zt));
    EXPECT_EQ(zb.format, format);
  }
}

// A hand-made versioned tensor over `data`, deleted by its deleter; the shape and strides live in
// the test.
DLManagedTensorVersioned* Tensor(void* data, DLDataType dtype, int32_t ndim, int64_t* shape,
                                 int64_t* strides) {
  auto* t = new DLManagedTensorVersioned{};
  t->version.major = DLPACK_MAJOR_VERSION;
  t->dl_tensor.data = data;
  t->dl_tensor.device = {kDLCPU, 0};
  t->dl_tensor.ndim = ndim;
  t->dl_tensor.dtype = dtype;
  t->dl_tensor.shape = shape;
  t->dl_tensor.strides = strides;
  t->deleter = [](DLManagedTensorVersioned* self) { delete self; };
  return t;
}

TEST(DLPack, ThePlainLayoutIsWhatFromDLPackMakes) {
  static int64_t data[12] = {};
  int64_t shape[3] = {2, 3, 2};
  int64_t strides[3] = {1, 2, 6};  // column-major, in items
  for (DLDataType dtype :
       {DLDataType{kDLInt, 8, 1}, DLDataType{kDLInt, 16, 1}, DLDataType{kDLInt, 32, 1},
        DLDataType{kDLInt, 64, 1}, DLDataType{kDLUInt, 8, 1}, DLDataType{kDLUInt, 64, 1},
        DLDataType{kDLFloat, 32, 1}, DLDataType{kDLFloat, 64, 1}, DLDataType{kDLBool, 8, 1},
        DLDataType{kDLFloat, 16, 1}, DLDataType{kDLBfloat, 16, 1}, DLDataType{kDLComplex, 64, 1},
        DLDataType{kDLComplex, 128, 1}}) {
    for (int64_t* s : {strides, static_cast<int64_t*>(nullptr)}) {
      DLManagedTensorVersioned* t = Tensor(data, dtype, 3, shape, s);
      t->flags = dtype.bits == 8 ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
      int64_t byte_strides[3] = {-1, -1, -1};
      const std::optional<DLPackPlainLayout> layout = DescribePlainDLPack(*t, byte_strides, 3);
      ASSERT_TRUE(layout.has_value()) << int{dtype.code} << "/" << int{dtype.bits};
      ASSERT_OK_AND_ASSIGN(MemoryView view, FromDLPack(t));  // the reference
      EXPECT_EQ(layout->format, view.format);
      EXPECT_EQ(layout->item_size, view.item_size);
      EXPECT_EQ(layout->byte_size, view.size);
      EXPECT_EQ(layout->readonly, view.readonly);
      if (s != nullptr) {
        EXPECT_EQ(std::vector<int64_t>(byte_strides, byte_strides + 3), view.strides);
      } else {
        EXPECT_EQ(byte_strides[0], -1);  // untouched: the tensor has none
      }
    }
  }
}

TEST(DLPack, OnlyPlainTensorsHaveAPlainLayout) {
  static uint8_t data[8] = {};
  int64_t shape[2] = {2, 4};
  int64_t negative[2] = {2, -1};
  int64_t huge_stride[2] = {int64_t{1} << 62, 1};
  int64_t byte_strides[2] = {};
  struct Case {
    const char* why;
    DLManagedTensorVersioned* tensor;
    int64_t max_dims;
  };
  DLManagedTensorVersioned* old_major = Tensor(data, {kDLInt, 8, 1}, 2, shape, nullptr);
  old_major->version.major = DLPACK_MAJOR_VERSION + 1;
  for (const Case& c : {
           Case{"fp8", Tensor(data, {kDLFloat8_e4m3fn, 8, 1}, 2, shape, nullptr), 8},
           Case{"two lanes", Tensor(data, {kDLInt, 8, 2}, 2, shape, nullptr), 8},
           Case{"bfloat32", Tensor(data, {kDLBfloat, 32, 1}, 2, shape, nullptr), 8},
           Case{"12 bits", Tensor(data, {kDLInt, 12, 1}, 2, shape, nullptr), 8},
           Case{"more dimensions than room", Tensor(data, {kDLInt, 8, 1}, 2, shape, nullptr), 1},
           Case{"NULL shape", Tensor(data, {kDLInt, 8, 1}, 2, nullptr, nullptr), 8},
           Case{"negative extent", Tensor(data, {kDLInt, 8, 1}, 2, negative, nullptr), 8},
           Case{"stride overflows bytes", Tensor(data, {kDLInt, 64, 1}, 2, shape, huge_stride), 8},
           Case{"another major version", old_major, 8},
       }) {
    EXPECT_FALSE(DescribePlainDLPack(*c.tensor, byte_strides, c.max_dims).has_value()) << c.why;
    c.tensor->deleter(c.tensor);
  }
}

}  // namespace
}  // namespace ferry::memview
