// Low-precision float items: the braced names in item formats, decoding against hand-computed
// values, the DLPack codes both ways, and the bridges that have no code for them.
#include "ferry/memview/low_float.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "ferry/memview/arrow.hpp"
#include "ferry/memview/dlpack.hpp"
#include "ferry/memview/pep3118.hpp"
#include "support/test_util.hpp"

namespace ferry::memview {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(LowFloat, FormatsNameTheTypeInBraces) {
  ASSERT_OK_AND_ASSIGN(ItemDesc one, ParseItemFormat("{float8_e4m3fn}"));
  EXPECT_EQ(one.item_size, 1);
  ASSERT_EQ(one.components.size(), 1u);
  EXPECT_EQ(one.components[0].format, kLowFloatLetter);
  EXPECT_EQ(one.components[0].low_float, LowFloat::kFloat8E4M3Fn);
  ASSERT_OK_AND_ASSIGN(ItemDesc mixed, ParseItemFormat("|{float8_e5m2}3 q {float4_e2m1fn_x2}"));
  EXPECT_EQ(mixed.item_size, 24);  // 3 bytes, padding to 8, q, one byte, tail padding to 24
  EXPECT_EQ(mixed.components[0].repeat, 3);
  EXPECT_EQ(mixed.components[2].offset, 16);
  EXPECT_EQ(mixed.components[2].low_float, LowFloat::kFloat4E2M1FnX2);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "unknown type '{float8_e9m9}' (braces name {bool}, {complex64}, {complex128} "
                     "or a low-precision float such as {float16} or {float8_e4m3fn}) at offset 1",
                     ParseItemFormat("c{float8_e9m9}"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "unterminated '{' at offset 0",
                     ParseItemFormat("{float8_e5m2"));
  for (int t = 1; t <= static_cast<int>(LowFloat::kBFloat16); ++t) {
    const auto type = static_cast<LowFloat>(t);
    EXPECT_EQ(LowFloatFromName(LowFloatName(type)), type) << LowFloatName(type);
  }
}

TEST(LowFloat, DecodesHandComputedValues) {
  struct Case {
    LowFloat type;
    uint32_t bits;
    double value;
  };
  // Values worked out from each layout: sign, exponent (bias), mantissa.
  for (const Case& c : {
           Case{LowFloat::kFloat8E4M3Fn, 0x38, 1.0},     // 0 0111 000: 2^(7-7)
           Case{LowFloat::kFloat8E4M3Fn, 0x7E, 448.0},   // largest: 1.75 * 2^8
           Case{LowFloat::kFloat8E4M3Fn, 0x01, 0x1p-9},  // smallest subnormal: 1/8 * 2^-6
           Case{LowFloat::kFloat8E4M3Fn, 0xC0, -2.0},
           Case{LowFloat::kFloat8E4M3Fnuz, 0x40, 1.0},     // bias 8
           Case{LowFloat::kFloat8E4M3B11Fnuz, 0x58, 1.0},  // bias 11
           Case{LowFloat::kFloat8E5M2, 0x3C, 1.0},         // bias 15
           Case{LowFloat::kFloat8E5M2, 0x7B, 57344.0},     // 1.75 * 2^15
           Case{LowFloat::kFloat8E5M2, 0x7C, kInf},
           Case{LowFloat::kFloat8E5M2, 0xFC, -kInf},
           Case{LowFloat::kFloat8E5M2Fnuz, 0x40, 1.0},  // bias 16
           Case{LowFloat::kFloat8E4M3, 0x78, kInf},     // IEEE-style e4m3 keeps infinities
           Case{LowFloat::kFloat8E3M4, 0x30, 1.0},      // bias 3
           Case{LowFloat::kFloat8E8M0Fnu, 127, 1.0},
           Case{LowFloat::kFloat8E8M0Fnu, 0, 0x1p-127},
           Case{LowFloat::kFloat6E2M3Fn, 0x1F, 7.5},   // 0 11 111: 1.875 * 2^2
           Case{LowFloat::kFloat6E2M3Fn, 0x20, -0.0},  // 1 00 000
           Case{LowFloat::kFloat6E3M2Fn, 0x1F, 28.0},  // 0 111 11: 1.75 * 2^4
           Case{LowFloat::kFloat4E2M1Fn, 0x07, 6.0},   // 0 11 1: 1.5 * 2^2
           Case{LowFloat::kFloat4E2M1Fn, 0x0F, -6.0},
           Case{LowFloat::kFloat4E2M1Fn, 0x01, 0.5},   // subnormal
           Case{LowFloat::kFloat16, 0x3C00, 1.0},      // 0 01111 0000000000: bias 15
           Case{LowFloat::kFloat16, 0x7BFF, 65504.0},  // largest: (2 - 2^-10) * 2^15
           Case{LowFloat::kFloat16, 0x0001, 0x1p-24},  // smallest subnormal: 2^-10 * 2^-14
           Case{LowFloat::kFloat16, 0xC000, -2.0},
           Case{LowFloat::kFloat16, 0x7C00, kInf},
           Case{LowFloat::kBFloat16, 0x3F80, 1.0},       // 0 01111111 0000000: bias 127
           Case{LowFloat::kBFloat16, 0x4049, 3.140625},  // 0 10000000 1001001: 2 * (1 + 73/128)
           Case{LowFloat::kBFloat16, 0x0001, 0x1p-133},  // smallest subnormal: 2^-7 * 2^-126
           Case{LowFloat::kBFloat16, 0xFF80, -kInf},
       }) {
    EXPECT_EQ(DecodeLowFloat(c.type, c.bits), c.value)
        << LowFloatName(c.type) << " 0x" << std::hex << c.bits;
  }
  EXPECT_TRUE(std::isnan(DecodeLowFloat(LowFloat::kFloat8E4M3Fn, 0x7F)));
  EXPECT_TRUE(std::isnan(DecodeLowFloat(LowFloat::kFloat8E4M3Fnuz, 0x80)));  // "-0" is NaN
  EXPECT_TRUE(std::isnan(DecodeLowFloat(LowFloat::kFloat8E5M2, 0x7D)));
  EXPECT_TRUE(std::isnan(DecodeLowFloat(LowFloat::kFloat8E8M0Fnu, 0xFF)));
  EXPECT_TRUE(std::signbit(DecodeLowFloat(LowFloat::kFloat6E2M3Fn, 0x20)));
  EXPECT_TRUE(std::isnan(DecodeLowFloat(LowFloat::kFloat16, 0x7E00)));
  EXPECT_TRUE(std::isnan(DecodeLowFloat(LowFloat::kBFloat16, 0x7FC0)));

  ASSERT_OK_AND_ASSIGN(ItemDesc x2, ParseItemFormat("{float4_e2m1fn_x2}"));
  const uint8_t byte = 0xF2;  // low nibble 0010 = 1.0 first, then 1111 = -6.0
  const auto decoded = std::get<std::vector<ItemScalar>>(DecodeItem(x2, &byte));
  ASSERT_EQ(decoded.size(), 2u);
  EXPECT_EQ(std::get<double>(decoded[0]), 1.0);
  EXPECT_EQ(std::get<double>(decoded[1]), -6.0);
}

MemoryView Bytes(const std::string& format, int64_t n) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n));
  std::iota(bytes->begin(), bytes->end(), 0);
  const int64_t item = ParseItemFormat(format).ValueOrDie().item_size;  // n bytes of items
  auto view = MakeContiguousView(bytes, bytes->data(), n, format, {n / item}, false);
  EXPECT_TRUE(view.ok()) << view.status().message();
  return std::move(view).ValueOrDie();
}

TEST(LowFloat, DLPackCarriesEveryCodeBothWays) {
  struct Case {
    const char* format;
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
    bool padded;
  };
  for (const Case& c : {
           Case{"{float8_e3m4}", kDLFloat8_e3m4, 8, 1, false},
           Case{"{float8_e4m3}", kDLFloat8_e4m3, 8, 1, false},
           Case{"{float8_e4m3b11fnuz}", kDLFloat8_e4m3b11fnuz, 8, 1, false},
           Case{"{float8_e4m3fn}", kDLFloat8_e4m3fn, 8, 1, false},
           Case{"{float8_e4m3fnuz}", kDLFloat8_e4m3fnuz, 8, 1, false},
           Case{"{float8_e5m2}", kDLFloat8_e5m2, 8, 1, false},
           Case{"{float8_e5m2fnuz}", kDLFloat8_e5m2fnuz, 8, 1, false},
           Case{"{float8_e8m0fnu}", kDLFloat8_e8m0fnu, 8, 1, false},
           Case{"{float6_e2m3fn}", kDLFloat6_e2m3fn, 6, 1, true},
           Case{"{float6_e3m2fn}", kDLFloat6_e3m2fn, 6, 1, true},
           Case{"{float4_e2m1fn}", kDLFloat4_e2m1fn, 4, 1, true},
           Case{"{float4_e2m1fn_x2}", kDLFloat4_e2m1fn, 4, 2, false},
       }) {
    MemoryView v = Bytes(c.format, 6);
    ASSERT_OK_AND_ASSIGN(DLManagedTensorVersioned * t, ToDLPack(v));
    EXPECT_EQ(t->dl_tensor.dtype.code, c.code) << c.format;
    EXPECT_EQ(t->dl_tensor.dtype.bits, c.bits) << c.format;
    EXPECT_EQ(t->dl_tensor.dtype.lanes, c.lanes) << c.format;
    EXPECT_EQ((t->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) != 0, c.padded) << c.format;
    EXPECT_EQ(t->dl_tensor.data, v.data);
    ASSERT_OK_AND_ASSIGN(MemoryView back, FromDLPack(t));
    EXPECT_EQ(back.format, c.format);
    EXPECT_EQ(back.data, v.data);
    EXPECT_EQ(back.item_size, 1);
    EXPECT_EQ(back.shape, v.shape);
    const bool sub_byte = c.bits * c.lanes != 8;
    if (sub_byte) {
      ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "cannot mark", ToDLPackLegacy(v));
    } else {
      ASSERT_OK_AND_ASSIGN(DLManagedTensor * legacy, ToDLPackLegacy(v));
      legacy->deleter(legacy);
    }
  }
}

TEST(LowFloat, DLPackRefusesWhatABytePerItemCannotHold) {
  static uint8_t data[4] = {};
  static int64_t shape[1] = {4};
  auto tensor = [](uint8_t code, uint8_t bits, uint16_t lanes, uint64_t flags) {
    auto* t = new DLManagedTensorVersioned{};
    t->version.major = 1;
    t->flags = flags;
    t->dl_tensor.data = data;
    t->dl_tensor.device = {kDLCPU, 0};
    t->dl_tensor.ndim = 1;
    t->dl_tensor.dtype = {code, bits, lanes};
    t->dl_tensor.shape = shape;
    t->deleter = [](DLManagedTensorVersioned* self) { delete self; };
    return t;
  };
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "packed float4_e2m1fn values do not fill",
                     FromDLPack(tensor(kDLFloat4_e2m1fn, 4, 1, 0)));
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "packed float6_e3m2fn",
                     FromDLPack(tensor(kDLFloat6_e3m2fn, 6, 1, 0)));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "float8_e5m2 must have 8 bits, not 16",
                     FromDLPack(tensor(kDLFloat8_e5m2, 16, 1, 0)));
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "with 4 lanes",
                     FromDLPack(tensor(kDLFloat4_e2m1fn, 4, 4, 0)));
  ASSERT_OK_AND_ASSIGN(
      MemoryView padded,
      FromDLPack(tensor(kDLFloat4_e2m1fn, 4, 1, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED)));
  EXPECT_EQ(padded.format, "{float4_e2m1fn}");
}

// float16 and bfloat16 take two bytes and a byte order ('<', '>', or the host's), and never a
// native size; a value stored in either order decodes the same.
TEST(LowFloat, TwoByteFloatsTakeAByteOrder) {
  ASSERT_OK_AND_ASSIGN(ItemDesc d, ParseItemFormat("|c {float16}> {bfloat16}<2"));
  EXPECT_EQ(d.item_size, 8);  // c, a byte of padding, then three two-byte values aligned to 2
  ASSERT_EQ(d.components.size(), 3u);
  EXPECT_EQ(d.components[1].offset, 2);
  EXPECT_EQ(d.components[1].size, 2);
  EXPECT_FALSE(d.components[1].little_endian);
  EXPECT_EQ(d.components[2].low_float, LowFloat::kBFloat16);
  EXPECT_TRUE(d.components[2].little_endian);
  EXPECT_EQ(d.components[2].repeat, 2);
  // -2.0 big-endian, then 1.0 and 3.140625 little-endian.
  const uint8_t item[8] = {7, 0, 0xC0, 0x00, 0x80, 0x3F, 0x49, 0x40};
  const auto values = std::get<std::vector<ItemScalar>>(DecodeItem(d, item));
  ASSERT_EQ(values.size(), 4u);
  EXPECT_EQ(std::get<int64_t>(values[0]), 7);
  EXPECT_EQ(std::get<double>(values[1]), -2.0);
  EXPECT_EQ(std::get<double>(values[2]), 1.0);
  EXPECT_EQ(std::get<double>(values[3]), 3.140625);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "'!' is not allowed after '{float16}' (a byte order, '<' or '>', is) at "
                     "offset 9",
                     ParseItemFormat("{float16}!"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument,
                     "'<' is not allowed after '}' (only after s S i I l L q Q j J) at offset 15",
                     ParseItemFormat("{float8_e4m3fn}<"));
}

// float16 crosses every bridge: DLPack (kDLFloat, 16 bits), PEP 3118 ('e'), NumPy ('<f2') and
// Arrow (half float); bfloat16 crosses DLPack (kDLBfloat) and names itself where there is no code.
TEST(LowFloat, TwoByteFloatsCrossTheirBridges) {
  for (const char* format : {"{float16}", "{bfloat16}"}) {
    SCOPED_TRACE(format);
    MemoryView v = Bytes(format, 8);
    EXPECT_EQ(v.item_size, 2);
    ASSERT_OK_AND_ASSIGN(DLManagedTensorVersioned * t, ToDLPack(v));
    EXPECT_EQ(t->dl_tensor.dtype.code, format[1] == 'f' ? kDLFloat : kDLBfloat);
    EXPECT_EQ(t->dl_tensor.dtype.bits, 16);
    EXPECT_EQ(t->dl_tensor.dtype.lanes, 1);
    EXPECT_EQ(t->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, 0u);
    EXPECT_EQ(t->dl_tensor.shape[0], 4);
    ASSERT_OK_AND_ASSIGN(MemoryView back, FromDLPack(t));
    EXPECT_EQ(back.format, format);
    EXPECT_EQ(back.item_size, 2);
    ASSERT_OK_AND_ASSIGN(DLManagedTensor * legacy, ToDLPackLegacy(v));
    legacy->deleter(legacy);
  }
  MemoryView half = Bytes("{float16}<", 8);
  ASSERT_OK_AND_ASSIGN(std::string pep, Pep3118FromItemDesc(half.item_desc));
  EXPECT_EQ(pep, "<e");
  EXPECT_EQ(*PackFormatFromPep3118("<e"), "{float16}<");
  EXPECT_EQ(*PackFormatFromPep3118(">e"), "{float16}>");
  EXPECT_EQ(*PackFormatFromPep3118("e"), "{float16}");
  ASSERT_OK_AND_ASSIGN(Array a, ArrayFromView(Bytes("{float16}", 8), FromViewOptions{}));
  EXPECT_STREQ(a.schema()->format, "e");
  EXPECT_EQ(a.view().length(), 4);
  MemoryView brain = Bytes("{bfloat16}", 8);
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "PEP 3118 has no code for bfloat16",
                     Pep3118FromItemDesc(brain.item_desc));
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "Arrow has no bfloat16 type",
                     ArrayFromView(brain, FromViewOptions{}));
}

TEST(LowFloat, BridgesWithoutACodeSaySo) {
  MemoryView v = Bytes("{float8_e4m3fn}", 4);
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "PEP 3118 has no code for float8_e4m3fn",
                     Pep3118FromItemDesc(v.item_desc));
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "NumPy typestr has no code for float8_e4m3fn",
                     NumpyTypestrFromItemDesc(v.item_desc));
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "Arrow has no float8_e4m3fn type",
                     ArrayFromView(v, FromViewOptions{}));
}

}  // namespace
}  // namespace ferry::memview
