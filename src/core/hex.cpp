// Hex encoding and decoding of byte strings (include/ferry/core/hex.hpp).
#include "ferry/core/hex.hpp"

namespace ferry {

std::string HexEncode(std::string_view bytes, HexCase letters) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) AppendHexByte(static_cast<uint8_t>(c), letters, &out);
  return out;
}

Result<std::string> HexDecode(std::string_view text) {
  if (text.size() % 2 != 0) {
    return Status::Invalid("hex string of " + std::to_string(text.size()) +
                           " digits has an odd length");
  }
  std::string out(text.size() / 2, '\0');
  for (size_t i = 0; i < text.size(); i += 2) {
    const int hi = HexDigitValue(text[i]);
    const int lo = HexDigitValue(text[i + 1]);
    if (hi < 0 || lo < 0) {
      const size_t bad = hi < 0 ? i : i + 1;
      return Status::Invalid("hex string has a non-hex character '" + std::string(1, text[bad]) +
                             "' at offset " + std::to_string(bad));
    }
    out[i / 2] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

}  // namespace ferry
