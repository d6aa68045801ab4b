// Internal to the dissociated IPC protocol: the distinct addresses of a type-1 buffer list, the
// unit a client frees and a server waits to see freed.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "ferry/dipc/protocol.hpp"

namespace ferry::dipc::internal {

// The distinct addresses of a type-1 list, sorted: what a client frees for a batch, and what
// its server holds the batch's block for. A list of up to eight buffers (a batch of a few
// columns) keeps them inline, so that a batch's loan costs no allocation of its own on either
// side.
class DistinctAddresses {
 public:
  explicit DistinctAddresses(std::span<const BufferRef> buffers) {
    uint64_t* out = few_.data();
    if (buffers.size() > few_.size()) {
      many_.resize(buffers.size());
      out = many_.data();
    }
    for (size_t i = 0; i < buffers.size(); ++i) out[i] = buffers[i].address;
    if (buffers.size() <= few_.size()) {
      // Insertion sort: a batch's few addresses come mostly in order already, and std::sort's
      // set-up costs more than sorting them.
      for (size_t i = 1; i < buffers.size(); ++i) {
        const uint64_t a = out[i];
        size_t j = i;
        for (; j > 0 && out[j - 1] > a; --j) out[j] = out[j - 1];
        out[j] = a;
      }
    } else {
      std::sort(out, out + buffers.size());
    }
    size_ = static_cast<size_t>(std::unique(out, out + buffers.size()) - out);
  }

  std::span<const uint64_t> view() const { return {data() + begin_, size_}; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  /// Remove `address` if it is held, keeping the rest sorted; whether it was. A client frees a
  /// batch's addresses in this order, so the first is taken without moving the rest.
  bool Remove(uint64_t address) {
    uint64_t* first = data() + begin_;
    uint64_t* last = first + size_;
    if (size_ > 0 && *first == address) {
      ++begin_;
      --size_;
      return true;
    }
    uint64_t* at = std::lower_bound(first, last, address);
    if (at == last || *at != address) return false;
    std::copy(at + 1, last, at);
    --size_;
    return true;
  }

 private:
  uint64_t* data() { return many_.empty() ? few_.data() : many_.data(); }
  const uint64_t* data() const { return many_.empty() ? few_.data() : many_.data(); }

  std::array<uint64_t, 8> few_{};
  std::vector<uint64_t> many_;
  size_t begin_ = 0;  // addresses before it were removed
  size_t size_ = 0;
};

}  // namespace ferry::dipc::internal
