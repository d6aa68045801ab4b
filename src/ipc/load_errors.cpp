// What the array loader says when a batch's nodes or buffers are wrong.
#include "ipc/load_errors.hpp"

namespace ferry::ipc::internal {

std::string Path::Render() const {
  if (node == nullptr) return "";
  const bool named = node->name != nullptr && *node->name != '\0';
  // Appends only (GCC 12 warns spuriously on prepending to a temporary string).
  std::string out;
  if (parent == nullptr) {
    if (!named) return "column";
    out.append("field \"").append(node->name).append("\"");
    return out;
  }
  out = parent->Render();
  out.append(" > ");
  if (named) {
    out.append("\"").append(node->name).append("\"");
  } else {
    out.append("child ").append(std::to_string(index));
  }
  return out;
}

Status LoadFailure(const MessageLabel& label, const Path& path, const std::string& why) {
  const std::string where = path.Render();
  return Status::Invalid(label.str() + (where.empty() ? "" : ", " + where) + ": " + why);
}

std::string BufferName(int64_t index_in_node, uint32_t body_index) {
  return (index_in_node < 0 ? std::string("the V4 union validity buffer")
                            : "buffer " + std::to_string(index_in_node)) +
         " (body buffer " + std::to_string(body_index) + ")";
}

Status MissingBuffer(const MessageLabel& label, const Path& path, int64_t index_in_node,
                     uint32_t buffers) {
  return LoadFailure(label, path,
                     "buffer " + std::to_string(index_in_node) +
                         " is missing (the batch has only " + std::to_string(buffers) +
                         " buffers)");
}

Status BadBuffer(const MessageLabel& label, const Path& path, int64_t index_in_node,
                 uint32_t body_index, int64_t offset, int64_t length, int64_t body_size) {
  const std::string where = BufferName(index_in_node, body_index);
  if (offset < 0 || length < 0) {
    return LoadFailure(label, path,
                       where + " has a negative offset or length (" + std::to_string(offset) +
                           ", " + std::to_string(length) + ")");
  }
  if (offset % 8 != 0) {
    return LoadFailure(
        label, path,
        where + " starts at offset " + std::to_string(offset) + ", which is not a multiple of 8");
  }
  return LoadFailure(label, path,
                     where + " (offset " + std::to_string(offset) + ", length " +
                         std::to_string(length) + ") runs past the body of " +
                         std::to_string(body_size) + " bytes");
}

Status TooShort(const MessageLabel& label, const Path& path, int64_t i, int64_t size, int64_t count,
                int64_t bits, const char* what) {
  int64_t total_bits = 0;
  if (__builtin_mul_overflow(count, bits, &total_bits) ||
      __builtin_add_overflow(total_bits, 7, &total_bits)) {
    return LoadFailure(label, path,
                       "buffer " + std::to_string(i) + " (" + what + "): " + std::to_string(count) +
                           " elements cannot fit any body");
  }
  return LoadFailure(label, path,
                     "buffer " + std::to_string(i) + " (" + what + ") has " + std::to_string(size) +
                         " bytes but " + std::to_string(total_bits / 8) + " are needed");
}

Status BadCounts(const MessageLabel& label, const Path& path, int64_t length, int64_t null_count) {
  if (length < 0) {
    return LoadFailure(label, path, "the length " + std::to_string(length) + " is negative");
  }
  if (length > (int64_t{1} << 62)) {
    return LoadFailure(label, path, "the length " + std::to_string(length) + " is too large");
  }
  return LoadFailure(
      label, path,
      "the null count " + std::to_string(null_count) + " is outside 0.." + std::to_string(length));
}

}  // namespace ferry::ipc::internal
