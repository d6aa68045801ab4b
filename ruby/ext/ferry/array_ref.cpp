// RefArray: ArrowArray trees that share a ferry array's buffers.
#include "array_ref.hpp"

#include "ferry/core/keep_alive.hpp"

namespace ferry_ruby {

ArrowArray RefArray(std::shared_ptr<const ferry::Array> keep, const ArrowArray* node) {
  ArrowArray out{};
  ferry::KeepAlive(std::move(keep)).Mirror(*node, &out);
  return out;
}

}  // namespace ferry_ruby
