// The testing module's writer of Arrow's integration-test JSON (the format of arrow-testing's
// .json.gz files), from ferry arrays: `ferry cat --json`, tests and benchmarks use it. It is a
// static library of its own (ferry_testing), not part of libferry, and is not installed.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/core/result.hpp"

namespace ferry::testing {

/// A whole document: the schema of `root` (a struct whose children are the columns), the
/// dictionaries found in the first batch (ids in pre-order), and every batch.
Result<nlohmann::json> IntegrationJson(const ArrowSchema* root,
                                       const std::vector<const ArrowArray*>& batches);

}  // namespace ferry::testing
