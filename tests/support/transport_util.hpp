// Tags shaped as the dissociated protocol uses them (a kind in the top byte, a number in the low
// 32 bits), written here so the transport suites depend on no protocol code.
#pragma once

#include <cstdint>

namespace ferry::transport::testing {

constexpr uint64_t kNumberMask = 0xFFFFFFFFULL;
constexpr uint64_t Tag(uint8_t kind, uint32_t number) {
  return (static_cast<uint64_t>(kind) << 56) | number;
}

}  // namespace ferry::transport::testing
