// Datasets for the dipc suites whose rows a test can check by hand.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "ferry/dipc/dataset.hpp"
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

/// The batches of IntData, in host memory (count x rows x 8 value bytes).
inline Result<IntData> IntBatches(int count, int rows) {
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> batches;
  IntData out;
  for (int b = 0; b < count; ++b) {
    nlohmann::json values = nlohmann::json::array();
    for (int i = 0; i < rows; ++i) values.push_back({{"x", int64_t{b} * rows + i}});
    FERRY_ASSIGN_OR_RAISE(Array a,
                          ArrayFromJson(BatchField({Field::Make("l", "x")}), values.dump()));
    UniqueSchema batch_schema;  // the same for every batch; the last one is kept
    batches.push_back(ToCpuDeviceArray(std::move(a), &batch_schema));
    schema = std::move(batch_schema);
    out.expected.push_back(std::move(values));
  }
  FERRY_ASSIGN_OR_RAISE(out.dataset,
                        dipc::Dataset::FromBatches(std::move(schema), std::move(batches)));
  return out;
}

}  // namespace ferry::testing
