// Internal to the dissociated-IPC server: what it serves, under which ticket and from which
// memory.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ferry/core/result.hpp"
#include "ferry/dipc/dataset.hpp"
#include "ferry/ipc/writer.hpp"
#include "ferry/transport/region.hpp"

namespace ferry::dipc::internal {

/// One message of a kept dataset: its flatbuffer and, for a batch, its encoded type-1 body and
/// the distinct addresses the client will free.
struct KeptMessage {
  std::vector<uint8_t> metadata;
  bool has_body = false;
  std::vector<uint8_t> pairs;
  std::vector<uint64_t> addresses;
};

/// A dataset encoded once into memory of its own, which every client borrows.
struct Kept {
  std::shared_ptr<transport::Region> region;
  std::vector<KeptMessage> messages;
};

/// Encode `dataset` into a region made by `make_region` (sized by a first pass), for Keep.
Result<std::shared_ptr<const Kept>> EncodeKept(
    Dataset& dataset, const ipc::WriteOptions& options,
    const std::function<Result<std::shared_ptr<transport::Region>>(int64_t)>& make_region);

/// The datasets a server serves. Each is served from a region: 0 is the server's shared region
/// (datasets read afresh per client, Add), others are kept datasets' own (Keep). A client names
/// the region through the want_data tag of the URI it used, since each region's URI carries its
/// own remote_handle. Thread-safe.
class Catalogue {
 public:
  /// What a ticket names.
  struct Entry {
    std::shared_ptr<Dataset> dataset;  // NULL when kept
    std::shared_ptr<const Kept> kept;  // NULL when read afresh
    uint32_t region = 0;
  };

  /// With `issued_only`, Find accepts only tickets made by Issue, not dataset names.
  explicit Catalogue(bool issued_only = false) : issued_only_(issued_only) {}

  void Add(const std::string& name, std::shared_ptr<Dataset> dataset);
  /// Serve `kept` under `name` from a region of its own; returns its region number.
  uint32_t Keep(const std::string& name, std::shared_ptr<const Kept> kept);
  /// The entry for `ticket` asked for under `region`. ENOENT names an unknown ticket (and, when
  /// tickets are names, what the server has); ETIME an expired one; EACCES one asked for under
  /// another region's URI.
  Result<Entry> Find(const std::string& ticket, uint32_t region) const;
  /// A fresh ticket for `name` (128 random bits, hex), valid until `expires`.
  Result<std::string> Issue(const std::string& name, std::chrono::steady_clock::time_point expires);
  /// Move an issued ticket's expiry to `expires`; ENOENT if it is unknown or expired.
  Status Refresh(const std::string& ticket, std::chrono::steady_clock::time_point expires);
  /// The region `name` is served from (0 when unknown or read afresh) and its memory (NULL for
  /// region 0: the server's own).
  uint32_t RegionOf(const std::string& name) const;
  std::shared_ptr<transport::Region> Memory(uint32_t region) const;

 private:
  struct Issued {
    std::string name;
    std::chrono::steady_clock::time_point expires;
  };
  const bool issued_only_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  mutable std::map<std::string, Issued> issued_;
  uint32_t next_region_ = 1;
};

}  // namespace ferry::dipc::internal
