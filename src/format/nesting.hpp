// How deep the format layer follows a schema or an array's children.
#pragma once

namespace ferry::internal {

/// The deepest nesting of children that views, builders and the JSON writer follow: deeper
/// input is refused with an error rather than recursed into.
inline constexpr int kMaxDepth = 64;

}  // namespace ferry::internal
