// BitmapBuilder: bit appends with a running count of unset bits.
#include "ferry/format/bitmap_builder.hpp"

namespace ferry {

Status BitmapBuilder::Append(bool bit, int64_t n) {
  if (n <= 0) return Status::OK();
  const int64_t new_length = length_ + n;
  FERRY_RETURN_NOT_OK(bytes_.Resize((new_length + 7) / 8));
  uint8_t* bits = bytes_.data();
  int64_t i = length_;
  if (bit) {
    for (; i < new_length && (i & 7) != 0; ++i) bits[i >> 3] |= static_cast<uint8_t>(1u << (i & 7));
    for (; i + 8 <= new_length; i += 8) bits[i >> 3] = 0xFF;
    for (; i < new_length; ++i) bits[i >> 3] |= static_cast<uint8_t>(1u << (i & 7));
  } else {
    false_count_ += n;  // Resize zeroed the new bytes
  }
  length_ = new_length;
  return Status::OK();
}

HostBuffer BitmapBuilder::Finish() {
  HostBuffer out = std::move(bytes_);
  bytes_ = HostBuffer(out.allocator());
  length_ = false_count_ = 0;
  return out;
}

}  // namespace ferry
