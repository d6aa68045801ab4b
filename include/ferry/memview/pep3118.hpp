// Bridges between pack-template item formats and Python's buffer-protocol (PEP 3118 / struct)
// format strings and NumPy typestrs. Types are matched by byte size, never by letter: `l`, `n`,
// `N`, `e`, `g`, `s` and `c` mean different things in the two dialects.
#pragma once

#include <string>
#include <string_view>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"
#include "ferry/memview/format.hpp"

namespace ferry::memview {

/// Translate a PEP 3118 format (byte-order prefixes `@ = < > ! ^`, prefix counts, `x` padding,
/// `T{...}` structs with `:name:` labels, `?` as an unsigned byte) into an equivalent pack
/// template with the same size and member offsets (explicit `x` padding stands for `@`
/// alignment). Fails for what pack templates cannot express: half floats, complex numbers,
/// pointers, Pascal strings, and `(shape)` sub-arrays.
FERRY_EXPORT Result<std::string> PackFormatFromPep3118(std::string_view format);

/// Translate a parsed pack template into a PEP 3118 format with explicit byte orders and
/// padding, e.g. "l>" -> ">i", "|iqc" -> "<i<4x<q<b<7x" on a little-endian host.
FERRY_EXPORT Result<std::string> Pep3118FromItemDesc(const ItemDesc& desc);

/// The NumPy typestr of a one-member item ("<i4", ">f8", "|u1", "|V16" for byte strings).
FERRY_EXPORT Result<std::string> NumpyTypestrFromItemDesc(const ItemDesc& desc);
/// The pack template of a NumPy typestr ("<i4" -> "l<", "|b1" -> "C"); kinds i u f b V.
FERRY_EXPORT Result<std::string> PackFormatFromNumpyTypestr(std::string_view typestr);

}  // namespace ferry::memview
