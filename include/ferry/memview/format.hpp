// Item formats of memory views: Ruby's pack-template dialect (the one MemoryView uses).
#pragma once

#include <cstdint>
#include <string_view>
#include <variant>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"
#include "ferry/memview/low_float.hpp"

namespace ferry::memview {

/// The `ItemComponent::format` of a one-byte boolean, written `{bool}` in an item format (Ruby's
/// pack has no letter for it; PEP 3118's `?`, NumPy's `b1`, DLPack's kDLBool).
inline constexpr char kBoolLetter = '?';
/// The `ItemComponent::format` of a complex number, written `{complex64}` (two 4-byte floats) or
/// `{complex128}` (two 8-byte floats), the real part first (PEP 3118's `Zf`/`Zd`, NumPy's `c8`/
/// `c16`, DLPack's kDLComplex); `size` tells them apart.
inline constexpr char kComplexLetter = 'Z';

/// One member of an item: a run of `repeat` values of the type `format` names, `size` bytes
/// each, starting `offset` bytes into the item. Low-precision floats have `format`
/// kLowFloatLetter and name their type in `low_float`; booleans have kBoolLetter and complex
/// numbers kComplexLetter.
struct FERRY_EXPORT ItemComponent {
  char format = 0;
  LowFloat low_float = LowFloat::kNone;
  bool native_size = false;    ///< `!` or `_` was given
  bool little_endian = false;  ///< byte order of the stored values
  int64_t offset = 0;
  int64_t size = 0;
  int64_t repeat = 1;
};

/// A parsed item format: its byte size (with `|` padding) and its members. Padding (`x`) makes
/// no member.
struct FERRY_EXPORT ItemDesc {
  int64_t item_size = 0;
  bool aligned = false;  ///< a leading `|`: C struct alignment, tail padding included
  std::vector<ItemComponent> components;
};

/// Parse a pack template: `x c C s S n v i I l L N V f e g q Q d E G j J`; after
/// `s S i I l L q Q j J` the modifiers `!`/`_` (native size) and one of `<`/`>` (byte order); a
/// decimal count after each token (`c3`); whitespace between tokens; a leading `|` for C
/// alignment. `l` is 4 bytes and `l!` the native long. ferry adds, by name in braces, the
/// low-precision floats (`{float8_e4m3fn}`, `{float4_e2m1fn_x2}4`, `{float16}<`; see
/// low_float.hpp), the one-byte boolean `{bool}` and the complex numbers `{complex64}` and
/// `{complex128}`, which Ruby's pack does not know; multi-byte ones take `<` or `>`. Errors name
/// the byte offset of the bad token and why. An empty format is an item of 0 bytes.
FERRY_EXPORT Result<ItemDesc> ParseItemFormat(std::string_view format);

/// The kind of values a format letter stores: 'i' signed integer (`c s i l q j`), 'u' unsigned
/// integer (`C S I L Q J n v N V`), 'f' float (`f e g d E G`), 'b' boolean (kBoolLetter), 'c'
/// complex (kComplexLetter), or 0 for `x` and unknown letters.
FERRY_EXPORT char ItemKind(char letter) noexcept;

/// A decoded value: signed integers (`c` is always signed), unsigned integers (booleans as their
/// byte), or floats.
using ItemScalar = std::variant<int64_t, uint64_t, double>;
/// A decoded item: nothing (no members), one scalar (one member, repeat 1), or a flat list of
/// members x repeats in order.
using ItemValue = std::variant<std::monostate, ItemScalar, std::vector<ItemScalar>>;

/// Decode the item at `item` (which must hold `desc.item_size` readable bytes). Values stored in
/// the other byte order are swapped first; low-precision floats become doubles (both values of a
/// float4_e2m1fn_x2 byte, low nibble first), and a complex number its two parts, real first (a
/// list, even alone).
FERRY_EXPORT ItemValue DecodeItem(const ItemDesc& desc, const uint8_t* item);

}  // namespace ferry::memview
