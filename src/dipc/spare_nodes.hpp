// Internal to the dissociated-IPC server: nodes of a node-based container (std::map,
// std::unordered_multimap) kept after their entries go, so that the entries after them cost no
// allocation.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace ferry::dipc::internal {

/// How many nodes a server's maps keep: ferry's client sends up to 1,024 addresses in one
/// free_data, so one of its bursts of frees hands back about this many at once.
inline constexpr size_t kSpareNodes = 1024;

/// Up to `limit` nodes taken out of containers of type `Container`, for the next entries put in
/// one of them. A client frees hundreds of batches in one free_data, and the batches after that
/// burst reuse its nodes; spares are nodes that existed at once, so they never hold more than the
/// peak did. Not thread-safe: its user's lock guards it with the containers.
template <class Container>
class SpareNodes {
 public:
  using key_type = typename Container::key_type;
  using mapped_type = typename Container::mapped_type;
  using iterator = typename Container::iterator;

  explicit SpareNodes(size_t limit) : limit_(limit) { spare_.reserve(limit); }

  /// Put (`key`, `value`) in `to`, in a spare node when there is one. A container of unique keys
  /// that holds `key` already has its value replaced (as insert_or_assign would).
  iterator Insert(Container& to, const key_type& key, mapped_type value) {
    if (spare_.empty()) {
      if constexpr (kUnique) {
        return to.insert_or_assign(key, std::move(value)).first;
      } else {
        return to.emplace(key, std::move(value));
      }
    }
    typename Container::node_type node = std::move(spare_.back());
    spare_.pop_back();
    node.key() = key;
    node.mapped() = std::move(value);
    if constexpr (kUnique) {
      auto placed = to.insert(std::move(node));
      if (!placed.inserted) {
        placed.position->second = std::move(placed.node.mapped());
        Keep(std::move(placed.node));
      }
      return placed.position;
    } else {
      return to.insert(std::move(node));
    }
  }

  /// Take the entry at `it` out of `from`, keeping its node (while fewer than the limit are
  /// kept), and hand back its value.
  mapped_type Take(Container& from, iterator it) {
    typename Container::node_type node = from.extract(it);
    mapped_type value = std::move(node.mapped());
    Keep(std::move(node));
    return value;
  }

  /// How many nodes are kept.
  size_t size() const noexcept { return spare_.size(); }

 private:
  static constexpr bool kUnique =
      !std::is_same_v<decltype(std::declval<Container&>().insert(
                          std::declval<typename Container::node_type>())),
                      iterator>;

  void Keep(typename Container::node_type node) {
    if (spare_.size() < limit_) spare_.push_back(std::move(node));
  }

  size_t limit_;
  std::vector<typename Container::node_type> spare_;
};

}  // namespace ferry::dipc::internal
