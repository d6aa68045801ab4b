// Graded validation of an ArrayView: minimal (structure), default (O(1) reads), full (O(n)): the
// walk, and the first two levels (the full level is validate_full.cpp).
#include <algorithm>
#include <cstring>
#include <string>

#include "array_validator.hpp"
#include "ferry/format/array_view.hpp"
#include "type_kinds.hpp"

namespace ferry {

namespace internal {

void RenderPath(const PathFrame* frame, std::string* out) {
  if (frame == nullptr) return;
  RenderPath(frame->parent, out);
  std::string part;
  if (!frame->name.empty()) {
    part = "field \"" + std::string(frame->name) + "\"";
  } else if (frame->kind != nullptr && std::strcmp(frame->kind, "dictionary") == 0) {
    part = "dictionary";
  } else if (frame->kind != nullptr) {
    part = "child " + std::to_string(frame->index);
  } else {
    return;  // a nameless root adds nothing
  }
  if (!out->empty()) *out += " > ";
  *out += part;
}

}  // namespace internal

using internal::Load;
using internal::PathFrame;

Status ArrayValidator::Validate(const ArrayView& v, const PathFrame* path, int depth) {
  if (depth > 64) return Status::Invalid("array nests deeper than 64 levels");
  if (v.array_ == nullptr) return Fail(path, -1, "no array is set on the view");
  FERRY_RETURN_NOT_OK(Minimal(v, path));
  if (level_ >= ValidationLevel::kDefault) FERRY_RETURN_NOT_OK(Default(v, path));
  if (level_ >= ValidationLevel::kFull) FERRY_RETURN_NOT_OK(Full(v, path));
  for (int64_t i = 0; i < v.n_children(); ++i) {
    const ArrayView& child = v.child(i);
    PathFrame frame{path, "child", i, child.name()};
    FERRY_RETURN_NOT_OK(Validate(child, &frame, depth + 1));
  }
  if (v.dictionary() != nullptr && dictionaries_ == DictionaryValues::kCheck) {
    PathFrame frame{path, "dictionary", 0, {}};
    FERRY_RETURN_NOT_OK(Validate(*v.dictionary(), &frame, depth + 1));
  }
  return Status::OK();
}

Status ArrayValidator::Fail(const PathFrame* path, int64_t element, const std::string& why) {
  std::string msg;
  RenderPath(path, &msg);
  if (element >= 0) {
    if (!msg.empty()) msg += " > ";
    msg += "element " + std::to_string(element);
  }
  if (msg.empty()) msg = "array";
  return Status::Invalid(msg + ": " + why);
}

Status ArrayValidator::Minimal(const ArrayView& v, const PathFrame* path) {
  const SchemaView& t = v.type();
  const int64_t end = v.offset() + v.length();
  for (int64_t i = 0; i < v.n_buffers(); ++i) {
    const BufferView& b = v.buffer(i);
    if (b.data == nullptr && b.size > 0 && v.buffer_type(i) != BufferType::kValidity) {
      return Fail(path, -1,
                  "buffer " + std::to_string(i) + " is NULL but " + std::to_string(b.size) +
                      " bytes are required");
    }
  }
  const bool has_validity_slot =
      t.layout.n_fixed_buffers > 0 && t.layout.buffer_type[0] == BufferType::kValidity;
  if (has_validity_slot && v.buffer(0).data == nullptr && v.null_count() > 0) {
    return Fail(
        path, -1,
        "null_count is " + std::to_string(v.null_count()) + " but there is no validity buffer");
  }
  switch (t.storage_type) {
    case TypeId::kNull:
      if (v.null_count() != -1 && v.null_count() != v.length()) {
        return Fail(path, -1,
                    "a null array's null_count must equal its length (" +
                        std::to_string(v.length()) + "), got " + std::to_string(v.null_count()));
      }
      break;
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion:
    case TypeId::kRunEndEncoded:
      if (v.null_count() > 0) {
        return Fail(path, -1,
                    std::string(TypeIdName(t.storage_type)) +
                        " has no validity buffer, so null_count must be 0, got " +
                        std::to_string(v.null_count()));
      }
      break;
    default:
      break;
  }
  switch (t.storage_type) {
    case TypeId::kStruct:
    case TypeId::kSparseUnion:
      for (int64_t i = 0; i < v.n_children(); ++i) {
        if (v.child(i).length() < end) {
          return Fail(path, -1,
                      "child " + std::to_string(i) + " has length " +
                          std::to_string(v.child(i).length()) + " < offset + length " +
                          std::to_string(end));
        }
      }
      break;
    case TypeId::kFixedSizeList: {
      int64_t need = 0;
      if (__builtin_mul_overflow(end, static_cast<int64_t>(t.fixed_size), &need)) {
        return Fail(path, -1, "(offset + length) * list size overflows");
      }
      if (v.child(0).length() < need) {
        return Fail(path, -1,
                    "child has length " + std::to_string(v.child(0).length()) + " < " +
                        std::to_string(need) + " = (offset + length) * list size " +
                        std::to_string(t.fixed_size));
      }
      break;
    }
    case TypeId::kRunEndEncoded: {
      const int64_t runs = v.child(0).length();
      if (v.child(1).length() < runs) {
        return Fail(path, -1,
                    "values child has length " + std::to_string(v.child(1).length()) +
                        " < run ends length " + std::to_string(runs));
      }
      if (v.length() > 0 && runs == 0) {
        return Fail(path, -1, "a non-empty run-end encoded array has no runs");
      }
      if (v.child(0).null_count() > 0) {
        return Fail(path, -1, "run ends must not contain nulls");
      }
      break;
    }
    default:
      break;
  }
  return Status::OK();
}

template <typename Offset>
Status ArrayValidator::CheckOffsetEnds(const ArrayView& v, const PathFrame* path, int64_t limit,
                                       const char* limit_name) {
  if (v.length() == 0) return Status::OK();
  const uint8_t* offsets = v.buffer(1).data;
  const int64_t first = Load<Offset>(offsets, v.offset());
  const int64_t last = Load<Offset>(offsets, v.offset() + v.length());
  if (first < 0) {
    return Fail(path, -1, "first offset " + std::to_string(first) + " is negative");
  }
  if (last < first) {
    return Fail(path, -1,
                "last offset " + std::to_string(last) + " < first offset " + std::to_string(first));
  }
  if (limit >= 0 && last > limit) {
    return Fail(
        path, -1,
        "last offset " + std::to_string(last) + " > " + limit_name + " " + std::to_string(limit));
  }
  return Status::OK();
}

Status ArrayValidator::Default(const ArrayView& v, const PathFrame* path) {
  switch (v.type().storage_type) {
    case TypeId::kBinary:
    case TypeId::kString:
      return CheckOffsetEnds<int32_t>(v, path, v.buffer(2).size, "data size");
    case TypeId::kLargeBinary:
    case TypeId::kLargeString:
      return CheckOffsetEnds<int64_t>(v, path, v.buffer(2).size, "data size");
    case TypeId::kList:
    case TypeId::kMap:
      return CheckOffsetEnds<int32_t>(v, path, v.child(0).length(), "child length");
    case TypeId::kLargeList:
      return CheckOffsetEnds<int64_t>(v, path, v.child(0).length(), "child length");
    case TypeId::kRunEndEncoded: {
      const ArrayView& run_ends = v.child(0);
      if (run_ends.length() == 0) return Status::OK();
      const int64_t last = run_ends.GetInt(run_ends.length() - 1);
      if (last < v.offset() + v.length()) {
        return Fail(path, -1,
                    "last run end " + std::to_string(last) + " < offset + length " +
                        std::to_string(v.offset() + v.length()));
      }
      return Status::OK();
    }
    default:
      return Status::OK();
  }
}

Status ArrayView::Validate(ValidationLevel level, DictionaryValues dictionaries) const {
  if (level == ValidationLevel::kNone) return Status::OK();
  if (level < ValidationLevel::kNone || level > ValidationLevel::kFull) {
    return Status::Invalid("unknown validation level " + std::to_string(static_cast<int>(level)));
  }
  ArrayValidator validator(level, dictionaries);
  PathFrame root{nullptr, nullptr, 0, name()};
  return validator.Validate(*this, &root, 0);
}

}  // namespace ferry
