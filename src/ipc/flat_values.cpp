// Flat value types read value by value (flat_values.hpp).
#include "ipc/flat_values.hpp"

#include <cstring>
#include <functional>
#include <string_view>

#include "ferry/format/bits.hpp"
#include "ferry/format/schema_view.hpp"

namespace ferry::ipc::internal {

namespace {

// Rows of `a` from its offset: its validity bits (NULL where no row is null) and its buffers.
struct Rows {
  const uint8_t* validity;
  const uint8_t* values;  // fixed-width values, booleans' bits, or offsets
  const uint8_t* data;    // binary and string bytes
  int64_t offset;
};

Rows RowsOf(const FlatValues& type, const ArrowArray* a, int64_t length) {
  const auto* validity = static_cast<const uint8_t*>(a->buffers[0]);
  // A bitmap with every row of the range set reads as none: the same values hash alike.
  if (a->null_count == 0 ||
      (validity != nullptr && CountSetBits(validity, a->offset, length) == length)) {
    validity = nullptr;
  }
  return {validity, static_cast<const uint8_t*>(a->buffers[1]),
          type.binary ? static_cast<const uint8_t*>(a->buffers[2]) : nullptr, a->offset};
}

int64_t Start(const FlatValues& type, const Rows& r, int64_t i);

bool Valid(const Rows& r, int64_t i) {
  return r.validity == nullptr || GetBit(r.validity, r.offset + i);
}

// Row i's value bytes (not booleans).
std::string_view Value(const FlatValues& type, const Rows& r, int64_t i) {
  if (!type.binary) {
    const int64_t width = type.bits / 8;
    return {reinterpret_cast<const char*>(r.values + (r.offset + i) * width),
            static_cast<size_t>(width)};
  }
  const int64_t begin = Start(type, r, i);
  const int64_t end = Start(type, r, i + 1);
  if (end <= begin) return {};
  return {reinterpret_cast<const char*>(r.data + begin), static_cast<size_t>(end - begin)};
}

// Where row i's bytes begin (binary and string values; row `length` is where the last ends).
int64_t Start(const FlatValues& type, const Rows& r, int64_t i) {
  const int64_t row = r.offset + i;
  if (type.large) {
    int64_t at = 0;
    std::memcpy(&at, r.values + row * 8, 8);
    return at;
  }
  int32_t at = 0;
  std::memcpy(&at, r.values + row * 4, 4);
  return at;
}

// The bytes of rows [0, length) of binary values, one range.
std::string_view Bytes(const FlatValues& type, const Rows& r, int64_t length) {
  const int64_t begin = Start(type, r, 0);
  const int64_t end = Start(type, r, length);
  if (end <= begin) return {};
  return {reinterpret_cast<const char*>(r.data + begin), static_cast<size_t>(end - begin)};
}

}  // namespace

std::optional<FlatValues> FlatValuesOf(const ArrowSchema* schema) {
  if (schema == nullptr || schema->dictionary != nullptr) return std::nullopt;
  Result<SchemaView> parsed = SchemaView::Make(schema);
  if (!parsed.ok()) return std::nullopt;
  const SchemaView& v = *parsed;
  const TypeId st = v.storage_type;
  FlatValues out;
  out.large = st == TypeId::kLargeBinary || st == TypeId::kLargeString;
  out.binary = out.large || st == TypeId::kBinary || st == TypeId::kString;
  if (out.binary) return out;
  if (st == TypeId::kFixedSizeBinary) {
    out.bits = int64_t{v.fixed_size} * 8;
  } else if (v.layout.n_fixed_buffers == 2 && v.layout.n_children == 0 &&
             v.layout.buffer_type[0] == BufferType::kValidity &&
             v.layout.buffer_type[1] == BufferType::kData) {
    out.bits = v.layout.element_size_bits[1];
  }
  if (out.bits != 1 && (out.bits <= 0 || out.bits % 8 != 0)) return std::nullopt;
  return out;
}

bool SameFlatValues(const FlatValues& type, const ArrowArray* a, const ArrowArray* b,
                    int64_t length) {
  const Rows x = RowsOf(type, a, length);
  const Rows y = RowsOf(type, b, length);
  if ((x.validity == nullptr) != (y.validity == nullptr)) return false;
  if (x.validity == nullptr && !type.binary && type.bits > 1) {
    // No nulls on either side: one comparison of the whole range.
    const int64_t width = type.bits / 8;
    return length == 0 || std::memcmp(x.values + x.offset * width, y.values + y.offset * width,
                                      static_cast<size_t>(length * width)) == 0;
  }
  if (x.validity == nullptr && type.binary) {
    // No nulls: the same lengths, then one comparison of the bytes.
    const int64_t x0 = Start(type, x, 0);
    const int64_t y0 = Start(type, y, 0);
    for (int64_t i = 1; i <= length; ++i) {
      if (Start(type, x, i) - x0 != Start(type, y, i) - y0) return false;
    }
    return Bytes(type, x, length) == Bytes(type, y, length);
  }
  for (int64_t i = 0; i < length; ++i) {
    const bool valid = Valid(x, i);
    if (valid != Valid(y, i)) return false;
    if (!valid) continue;
    if (type.bits == 1) {
      if (GetBit(x.values, x.offset + i) != GetBit(y.values, y.offset + i)) return false;
    } else if (Value(type, x, i) != Value(type, y, i)) {
      return false;
    }
  }
  return true;
}

uint64_t FlatValuesHash(const FlatValues& type, const ArrowArray* a, int64_t length) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](uint64_t x) { h = (h ^ x) * 1099511628211ULL; };
  mix(static_cast<uint64_t>(length));
  const Rows r = RowsOf(type, a, length);
  if (r.validity == nullptr && !type.binary && type.bits > 1) {
    const int64_t width = type.bits / 8;
    mix(std::hash<std::string_view>{}({reinterpret_cast<const char*>(r.values + r.offset * width),
                                       static_cast<size_t>(length * width)}));
    return h;
  }
  if (r.validity == nullptr && type.binary) {
    // No nulls: every length, then the bytes as one range.
    const int64_t first = Start(type, r, 0);
    int64_t previous = first;
    for (int64_t i = 1; i <= length; ++i) {
      const int64_t at = Start(type, r, i);
      mix(static_cast<uint64_t>(at - previous) + 1);
      previous = at;
    }
    mix(std::hash<std::string_view>{}(Bytes(type, r, length)));
    return h;
  }
  for (int64_t i = 0; i < length; ++i) {
    if (!Valid(r, i)) {
      mix(0);
      continue;
    }
    if (type.bits == 1) {
      mix(GetBit(r.values, r.offset + i) ? 2 : 1);
    } else {
      const std::string_view v = Value(type, r, i);
      mix(v.size() + 1);
      mix(std::hash<std::string_view>{}(v));
    }
  }
  return h;
}

}  // namespace ferry::ipc::internal
