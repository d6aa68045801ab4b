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
#include "ferry/device/device.hpp"
#include "ferry/dipc/dataset.hpp"
#include "ferry/dipc/tickets.hpp"
#include "ferry/ipc/writer.hpp"
#include "ferry/transport/region.hpp"

namespace ferry::dipc::internal {

/// One message of a kept dataset: its flatbuffer and, for a batch, its encoded type-1 body, the
/// distinct addresses the client will free and where its packed (type-0) body lies.
struct KeptMessage {
  std::vector<uint8_t> metadata;
  bool has_body = false;
  std::vector<uint8_t> pairs;
  std::vector<uint64_t> addresses;
  /// The packed body, padding included, at this offset of Kept::region; -1 where there is none
  /// in host memory (bodies on a device, a lent file's pairs).
  int64_t body_offset = -1;
  int64_t body_length = 0;

  /// Set `pairs` to the buffer list of `refs` and `addresses` to their distinct addresses.
  void SetBody(const std::vector<transport::BufferRef>& refs);
};

/// A dataset encoded once into memory of its own, which every client borrows: a transport
/// region, or one device allocation (KeepOnDevice) whose pairs are offsets from its base.
struct Kept {
  std::shared_ptr<transport::Region> region;  // NULL when the bodies are in device memory
  std::vector<KeptMessage> messages;
  /// The device allocation (freed with the last holder), the URI's remote_handle for it (the
  /// CUDA IPC handle's 64 bytes) and its size in bytes.
  std::shared_ptr<void> device_memory;
  std::string device_handle;
  int64_t device_bytes = 0;
};

/// Plain host memory (an anonymous mapping) for kept type-0 bodies, which no peer reads
/// remotely: no wire addresses of use, no remote_handle. Freed with the last holder.
Result<std::shared_ptr<transport::Region>> MakeHostRegion(int64_t size);

/// Encode `dataset` into a region made by `make_region` (sized by a first pass), for Keep.
Result<std::shared_ptr<const Kept>> EncodeKept(
    Dataset& dataset, const ipc::WriteOptions& options,
    const std::function<Result<std::shared_ptr<transport::Region>>(int64_t)>& make_region);

/// Encode `dataset` once into one allocation on `device` (a CUDA device), copied there through
/// the device layer, with pairs that are offsets from its base, for KeepOnDevice. Compressed
/// bodies are refused (a client cannot decompress device memory).
Result<std::shared_ptr<const Kept>> EncodeKeptOnDevice(Dataset& dataset,
                                                       const ipc::WriteOptions& options,
                                                       Device& device);

/// Write `batch`, the one `reader` last returned: as kept where the reader keeps its batches, else
/// taken from the reader and held by the writer until the next (either way a dictionary the
/// batches share is known by its memory and read once), or lent where the reader cannot give it
/// up.
Status WriteReaderBatch(ipc::StreamWriter& writer, DatasetReader& reader,
                        const ArrowDeviceArray* batch);

/// Write `dataset`'s messages (schema, dictionaries, batches, end) into `sink` with `options`.
Status EncodeAll(Dataset& dataset, ipc::MessageSink* sink, const ipc::WriteOptions& options);

/// What a kept dataset is encoded from, twice (a pass that sizes its memory, then one that
/// fills it): NULL for a repeatable dataset, read twice itself; else its batches read once and
/// held (taken from the reader, or copied where the reader keeps them), so that a stream that
/// can be read once, or a producer that gives other batches each time, is encoded from one read.
Result<std::shared_ptr<Dataset>> HoldForKeeping(Dataset& dataset);

/// Where a kept dataset's bodies lie, in the order they are encoded: each at the next 64-byte
/// step, with one spare byte so that a zero-length buffer at its end is not the next body's. The
/// first pass counts the bytes; the second places the same bodies in the `sized` bytes the first
/// counted, and refuses one that would run past them. Plain values, one per pass.
class KeptLayout {
 public:
  /// A counting pass (no limit), or one limited to the `sized` bytes a counting pass gave.
  explicit KeptLayout(int64_t sized = -1) noexcept : sized_(sized) {}
  /// The offset of the next body, of `body_length` bytes; an error naming both passes' sizes
  /// where it would run past `sized`.
  Result<int64_t> Place(int64_t body_length);
  /// The bytes placed so far.
  int64_t used() const noexcept { return used_; }
  /// After a limited pass: an error unless it placed exactly the `sized` bytes.
  Status Finish() const;

 private:
  int64_t sized_;
  int64_t used_ = 0;
};

/// The datasets a server serves. Each is served from a region: 0 is the server's shared region
/// (datasets read afresh per client, Add), others are kept datasets' own (Keep). A client names
/// the region through the want_data tag of the URI it used, since each region's URI carries its
/// own remote_handle. Thread-safe.
class Catalogue {
 public:
  /// What a ticket names.
  struct Entry {
    std::shared_ptr<Dataset> dataset;  // NULL when kept (unless a lent file's)
    std::shared_ptr<const Kept> kept;  // NULL when read afresh
    uint32_t region = 0;
    /// Held by the catalogue and by every copy Find hands out: its use count, less one, is how
    /// many clients are reading the entry.
    std::shared_ptr<const int> readers;
  };

  /// Tickets issued in `tickets` are honoured; with `issued_only`, Find accepts only those, not
  /// dataset names.
  Catalogue(std::shared_ptr<TicketBook> tickets, bool issued_only)
      : issued_only_(issued_only), tickets_(std::move(tickets)) {}

  void Add(const std::string& name, std::shared_ptr<Dataset> dataset);
  /// Serve `kept` under `name` from a region of its own; returns its region number. With
  /// `dataset` (a lent file's), a client asking under the shared region's URI is served that,
  /// read and copied afresh, instead of being refused.
  uint32_t Keep(const std::string& name, std::shared_ptr<const Kept> kept,
                std::shared_ptr<Dataset> dataset = nullptr);
  /// The entry for `ticket` asked for under `region`. ENOENT names an unknown ticket (and, when
  /// tickets are names, what the server has); ETIME an expired one; EACCES one asked for under
  /// another region's URI.
  Result<Entry> Find(const std::string& ticket, uint32_t region) const;
  /// A fresh ticket for `name` (128 random bits, hex), valid until `expires`; ENOENT for a name
  /// the catalogue does not have.
  Result<std::string> Issue(const std::string& name, Clock::time_point expires);
  /// Stop serving `name` (ENOENT if unknown) and revoke its tickets; a session reading it keeps
  /// its entry and reads to the end.
  Status Remove(const std::string& name);
  /// How many clients are reading `name` now (0 when unknown).
  int64_t Readers(const std::string& name) const;
  /// The region `name` is served from (0 when unknown or read afresh) and its memory (NULL for
  /// region 0: the server's own).
  uint32_t RegionOf(const std::string& name) const;
  std::shared_ptr<transport::Region> Memory(uint32_t region) const;
  /// The kept dataset served from `region` (NULL for region 0 or an unknown one).
  std::shared_ptr<const Kept> KeptAt(uint32_t region) const;

 private:
  const bool issued_only_;
  const std::shared_ptr<TicketBook> tickets_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  uint32_t next_region_ = 1;
};

}  // namespace ferry::dipc::internal
