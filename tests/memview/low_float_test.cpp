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
                     "unknown type '{float8_e9m9}' (braces name a low-precision float such as "
                     "{float8_e4m3fn}) at offset 1",
                     ParseItemFormat("c{float8_e9m9}"));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "unterminated '{' at offset 0",
                     ParseItemFormat("{float8_e5m2"));
  for (int t = 1; t <= static_cast<int>(LowFloat::kFloat4E2M1FnX2); ++t) {
    const auto type = static_cast<LowFloat>(t);
    EXPECT_EQ(LowFloatFromName(LowFloatName(type)), type) << LowFloatName(type);
  }
}

TEST(LowFloat, DecodesHandComputedValues) {
  struct Case {
    LowFloat type;
    uint8_t bits;
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
           Case{LowFloat::kFloat4E2M1Fn, 0x01, 0.5},  // subnormal
       }) {
    EXPECT_EQ(DecodeLowFloat(c.type, c.bits), c.value)
        << LowFloatName(c.type) << " 0x" << std::hex << int{c.bits};
  }
  EXPECT_TRUE(std::isnan(DecodeLowFloat(LowFloat::kFloat8E4M3Fn, 0x7F)));
  EXPECT_TRUE(std::isnan(DecodeLowFloat(LowFloat::kFloat8E4M3Fnuz, 0x80)));  // "-0" is NaN
  EXPECT_TRUE(std::isnan(DecodeLowFloat(LowFloat::kFloat8E5M2, 0x7D)));
  EXPECT_TRUE(std::isnan(DecodeLowFloat(LowFloat::kFloat8E8M0Fnu, 0xFF)));
  EXPECT_TRUE(std::signbit(DecodeLowFloat(LowFloat::kFloat6E2M3Fn, 0x20)));

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
  auto view = MakeContiguousView(bytes, bytes->data(), n, format, {n}, false);
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
