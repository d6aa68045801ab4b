// Arrow's integration-test JSON (the format of arrow-testing's .json.gz files) written from
// ferry arrays, for `ferry cat --json`.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/core/result.hpp"

namespace ferry::cli {

/// A whole document: the schema of `root` (a struct whose children are the columns), the
/// dictionaries found in the first batch (ids in pre-order), and every batch.
Result<nlohmann::json> IntegrationJson(const ArrowSchema* root,
                                       const std::vector<const ArrowArray*>& batches);

}  // namespace ferry::cli
