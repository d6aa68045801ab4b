// Datasets for the dipc suites whose rows a test can check by hand.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "ferry/dipc/dataset.hpp"
#include "ferry/format/array.hpp"
#include "ferry/format/builder.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::testing {

/// `count` batches of `rows` int64 values in column "x", counting up from 0, and each batch's
/// rows as JSON.
struct IntData {
  std::shared_ptr<dipc::Dataset> dataset;
  std::vector<nlohmann::json> expected;
};

/// IntData's batches themselves, in host memory (count x rows x 8 value bytes): the schema, the
/// batches and each batch's rows as JSON. Built with the format layer's ArrayBuilder, not from
/// JSON text: the sanitizer tree runs at -O0, where parsing the JSON of 400,000 rows took seconds
/// per test. Without `with_expected`, `expected` stays empty.
struct IntArrays {
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> batches;
  std::vector<nlohmann::json> expected;
};

inline Result<IntArrays> MakeIntArrays(int count, int64_t rows, bool with_expected = true) {
  const Field field = BatchField({Field::Make("l", "x")});
  IntArrays out;
  for (int b = 0; b < count; ++b) {
    FERRY_ASSIGN_OR_RAISE(UniqueSchema batch_schema, field.Export());
    FERRY_ASSIGN_OR_RAISE(std::unique_ptr<ArrayBuilder> builder,
                          ArrayBuilder::Make(batch_schema.get()));
    nlohmann::json values = nlohmann::json::array();
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t x = int64_t{b} * rows + i;
      FERRY_RETURN_NOT_OK(builder->child(0)->AppendInt(x));
      FERRY_RETURN_NOT_OK(builder->FinishElement());
      if (with_expected) values.push_back({{"x", x}});
    }
    FERRY_ASSIGN_OR_RAISE(UniqueArray built, builder->Finish());
    FERRY_ASSIGN_OR_RAISE(Array a, Array::Import(std::move(batch_schema), std::move(built)));
    UniqueSchema kept;  // the same for every batch; the last one is kept
    out.batches.push_back(ToCpuDeviceArray(std::move(a), &kept));
    out.schema = std::move(kept);
    if (with_expected) out.expected.push_back(std::move(values));
  }
  return out;
}

/// The same batches as a dataset every client reads afresh.
inline Result<IntData> IntBatches(int count, int rows, bool with_expected = true) {
  FERRY_ASSIGN_OR_RAISE(IntArrays arrays, MakeIntArrays(count, rows, with_expected));
  IntData out;
  out.expected = std::move(arrays.expected);
  FERRY_ASSIGN_OR_RAISE(
      out.dataset, dipc::Dataset::FromBatches(std::move(arrays.schema), std::move(arrays.batches)));
  return out;
}

}  // namespace ferry::testing
