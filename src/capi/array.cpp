// C surface of array building and streams.
#include "capi/error.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/stream.hpp"

using ferry::Status;

extern "C" {

FerryErrorCode FerryArrayFromJson(const struct ArrowSchema* schema, const char* json,
                                  struct ArrowArray* out, struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    if (json == nullptr) return Status::Invalid("json is NULL");
    if (out == nullptr) return Status::Invalid("out is NULL");
    FERRY_ASSIGN_OR_RAISE(ferry::UniqueArray array, ferry::ArrayFromJson(schema, json));
    array.move_to(out);
    return Status::OK();
  });
}

FerryErrorCode FerryArrayStreamInit(struct ArrowArrayStream* out, struct ArrowSchema* schema,
                                    int64_t n_arrays, struct ArrowArray* arrays,
                                    struct FerryError* error) {
  return ferry::capi::internal::Guard(error, [&]() -> Status {
    // Take ownership first, so that every input is released even when a check fails.
    ferry::UniqueSchema owned_schema;
    if (schema != nullptr) owned_schema = ferry::UniqueSchema(schema);
    std::vector<ferry::UniqueArray> owned;
    if (arrays != nullptr && n_arrays > 0) {
      owned.reserve(static_cast<size_t>(n_arrays));
      for (int64_t i = 0; i < n_arrays; ++i) owned.emplace_back(&arrays[i]);
    }
    if (out == nullptr) return Status::Invalid("out is NULL");
    if (schema == nullptr) return Status::Invalid("schema is NULL");
    if (n_arrays < 0) return Status::Invalid("n_arrays is negative");
    if (n_arrays > 0 && arrays == nullptr) return Status::Invalid("arrays is NULL");
    FERRY_ASSIGN_OR_RAISE(ferry::UniqueArrayStream stream,
                          ferry::MakeArrayStream(std::move(owned_schema), std::move(owned)));
    stream.move_to(out);
    return Status::OK();
  });
}

}  // extern "C"
