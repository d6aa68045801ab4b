// C surface of format strings and schemas.
#include "ferry/format/schema.hpp"

#include <cstring>

#include "capi/error.hpp"
#include "ferry/format/schema_view.hpp"

using ferry::Status;

namespace {

Status CopyOut(const std::string& text, char* out, size_t out_size, size_t* needed) {
  if (needed != nullptr) *needed = text.size() + 1;
  if (out == nullptr || out_size < text.size() + 1) {
    return Status::OutOfRange("output buffer of " + std::to_string(out_size) +
                              " bytes is too small: " + std::to_string(text.size() + 1) +
                              " needed");
  }
  std::memcpy(out, text.c_str(), text.size() + 1);
  return Status::OK();
}

}  // namespace

extern "C" {

FerryErrorCode FerryFormatParse(const char* format, struct FerryFormatInfo* out,
                                struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (format == nullptr) return Status::Invalid("format is NULL");
    if (out == nullptr) return Status::Invalid("out is NULL");
    FERRY_ASSIGN_OR_RAISE(ferry::FormatInfo info, ferry::ParseFormat(format));
    std::memset(out, 0, sizeof(*out));
    out->type_id = static_cast<int32_t>(info.type);
    out->fixed_size = info.fixed_size;
    out->decimal_bitwidth = info.decimal_bitwidth;
    out->decimal_precision = info.decimal_precision;
    out->decimal_scale = info.decimal_scale;
    out->time_unit = static_cast<int32_t>(info.time_unit);
    if (info.timezone.size() >= sizeof(out->timezone)) {
      return Status::OutOfRange("time zone longer than 255 bytes");
    }
    if (!info.timezone.empty()) {
      std::memcpy(out->timezone, info.timezone.data(), info.timezone.size());
    }
    out->n_union_type_ids = static_cast<int32_t>(info.union_type_ids.size());
    if (!info.union_type_ids.empty()) {
      std::memcpy(out->union_type_ids, info.union_type_ids.data(), info.union_type_ids.size());
    }
    return Status::OK();
  });
}

FerryErrorCode FerryFormatToString(const struct FerryFormatInfo* info, char* out, size_t out_size,
                                   struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (info == nullptr) return Status::Invalid("info is NULL");
    ferry::FormatInfo cpp;
    cpp.type = static_cast<ferry::TypeId>(info->type_id);
    cpp.fixed_size = info->fixed_size;
    cpp.decimal_bitwidth = info->decimal_bitwidth;
    cpp.decimal_precision = info->decimal_precision;
    cpp.decimal_scale = info->decimal_scale;
    cpp.time_unit = static_cast<ferry::TimeUnit>(info->time_unit & 3);
    cpp.timezone =
        std::string_view(info->timezone, strnlen(info->timezone, sizeof(info->timezone)));
    if (info->n_union_type_ids < 0 || info->n_union_type_ids > 128) {
      return Status::Invalid("n_union_type_ids must be in [0, 128]");
    }
    cpp.union_type_ids.assign(info->union_type_ids, info->union_type_ids + info->n_union_type_ids);
    FERRY_ASSIGN_OR_RAISE(std::string text, ferry::FormatToString(cpp));
    return CopyOut(text, out, out_size, nullptr);
  });
}

FerryErrorCode FerrySchemaToString(const struct ArrowSchema* schema, char* out, size_t out_size,
                                   size_t* needed, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    FERRY_ASSIGN_OR_RAISE(std::string text, ferry::SchemaToString(schema));
    return CopyOut(text, out, out_size, needed);
  });
}

const char* FerryTypeIdName(int32_t type_id) {
  if (type_id < 0 || type_id > static_cast<int32_t>(ferry::TypeId::kExtension)) return "unknown";
  return ferry::TypeIdName(static_cast<ferry::TypeId>(type_id));
}

FerryErrorCode FerrySchemaDeepCopy(const struct ArrowSchema* schema, struct ArrowSchema* out,
                                   struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (out == nullptr) return Status::Invalid("out is NULL");
    FERRY_ASSIGN_OR_RAISE(ferry::UniqueSchema copy, ferry::CopySchema(schema));
    copy.move_to(out);
    return Status::OK();
  });
}

}  // extern "C"
