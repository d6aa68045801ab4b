// The server's catalogue of datasets, and kept datasets' one-time encoding.
#include "dipc/catalogue.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>

#include "ferry/core/mapping.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/dipc/protocol.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/ipc/sink.hpp"
#include "ferry/transport/region.hpp"

namespace ferry::dipc::internal {

namespace {

// Encodes a dataset's messages: a first pass (no region) sizes the bodies, the second copies
// them into the region, which holds the `sized` bytes the first pass counted.
class KeepSink final : public ipc::MessageSink {
 public:
  KeepSink(Kept* kept, KeptLayout layout) : kept_(kept), layout_(layout) {}
  Status WriteMessage(const ipc::EncodedMessage& m) override {
    FERRY_ASSIGN_OR_RAISE(const int64_t at, layout_.Place(m.body_length));
    if (kept_->region == nullptr) return Status::OK();
    KeptMessage k;
    k.metadata.assign(m.metadata.begin(), m.metadata.end());
    k.has_body = m.has_body;
    if (m.has_body) {
      // The packed body, pieces and padding in order: each buffer lands at its offset, and the
      // whole is a type-0 body as it is.
      int64_t written = 0;
      for (const ByteSpan& piece : m.body) {
        if (written + piece.size > m.body_length) break;
        if (piece.size > 0)
          std::memcpy(kept_->region->data() + at + written, piece.data, piece.size);
        written += piece.size;
      }
      if (written != m.body_length) {
        return Status::Internal("a batch's body pieces add up to " + std::to_string(written) +
                                " bytes, not its body length " + std::to_string(m.body_length));
      }
      k.body_offset = at;
      k.body_length = m.body_length;
      std::vector<BufferRef> pairs;
      pairs.reserve(m.buffers.size());
      for (const ipc::BodyBuffer& b : m.buffers) {
        pairs.push_back(
            BufferRef{kept_->region->WireAddress(at + b.offset), static_cast<uint64_t>(b.length)});
      }
      k.SetBody(pairs);
    }
    kept_->messages.push_back(std::move(k));
    return Status::OK();
  }
  Status WriteEndOfStream() override { return Status::OK(); }
  const KeptLayout& layout() const { return layout_; }

 private:
  Kept* kept_;
  KeptLayout layout_;
};

class HostRegion final : public transport::Region {
 public:
  explicit HostRegion(Mapping pages) : pages_(std::move(pages)) {}
  uint8_t* data() const noexcept override { return pages_.data(); }
  int64_t size() const noexcept override { return pages_.size(); }
  uint64_t WireAddress(int64_t offset) const noexcept override {
    return reinterpret_cast<uintptr_t>(pages_.data()) + static_cast<uint64_t>(offset);
  }
  std::string remote_handle() const override { return {}; }

 private:
  Mapping pages_;
};

}  // namespace

// An anonymous mapping rather than a core HostBuffer: Reserve would zero every byte that the
// encoder then writes again (1 GiB twice for a 1 GiB dataset); fresh pages come zeroed for free.
Result<std::shared_ptr<transport::Region>> MakeHostRegion(int64_t size) {
  Result<Mapping> pages = Mapping::Anonymous(std::max<int64_t>(size, 1));
  if (!pages.ok()) return pages.status().WithContext("a kept dataset");
  return std::shared_ptr<transport::Region>(std::make_shared<HostRegion>(std::move(*pages)));
}

void KeptMessage::SetBody(const std::vector<transport::BufferRef>& refs) {
  addresses.clear();
  for (const transport::BufferRef& r : refs) addresses.push_back(r.address);
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  pairs = EncodeBufferList(refs);
}

Status WriteReaderBatch(ipc::StreamWriter& writer, DatasetReader& reader,
                        const ArrowDeviceArray* batch) {
  if (reader.keeps_batches()) return writer.WriteKeptBatch(batch);
  UniqueDeviceArray taken = reader.TakeBatch();
  return taken.valid() ? writer.WriteHeldBatch(std::move(taken)) : writer.WriteDeviceBatch(batch);
}

Status EncodeAll(Dataset& dataset, ipc::MessageSink* sink, const ipc::WriteOptions& options) {
  FERRY_ASSIGN_OR_RAISE(std::unique_ptr<DatasetReader> reader, dataset.Open());
  FERRY_ASSIGN_OR_RAISE(ipc::StreamWriter writer,
                        ipc::StreamWriter::Open(sink, reader->schema(), options));
  while (true) {
    FERRY_ASSIGN_OR_RAISE(const ArrowDeviceArray* batch, reader->Next());
    if (batch == nullptr) break;
    FERRY_RETURN_NOT_OK(WriteReaderBatch(writer, *reader, batch));
  }
  return writer.Close();
}

Result<std::shared_ptr<Dataset>> HoldForKeeping(Dataset& dataset) {
  if (dataset.repeatable()) return std::shared_ptr<Dataset>();
  FERRY_ASSIGN_OR_RAISE(std::unique_ptr<DatasetReader> reader, dataset.Open());
  FERRY_ASSIGN_OR_RAISE(UniqueSchema schema, CopySchema(reader->schema()));
  std::vector<UniqueDeviceArray> batches;
  DeviceArrayView view;
  bool viewing = false;
  while (true) {
    FERRY_ASSIGN_OR_RAISE(const ArrowDeviceArray* batch, reader->Next());
    if (batch == nullptr) break;
    UniqueDeviceArray taken = reader->TakeBatch();
    if (!taken.valid()) {
      // The reader keeps the batch (its memory is reused by the next): copied, on its device.
      if (!viewing) {
        FERRY_ASSIGN_OR_RAISE(view, DeviceArrayView::Make(schema.get()));
        viewing = true;
      }
      FERRY_RETURN_NOT_OK(view.SetArray(batch));
      FERRY_ASSIGN_OR_RAISE(taken, view.Copy(*view.device()));
    }
    batches.push_back(std::move(taken));
  }
  return Dataset::FromBatches(std::move(schema), std::move(batches));
}

namespace {

Status KeptGrew(int64_t sized, int64_t written) {
  return Status::Invalid("the dataset read differently when it was read again to be kept (" +
                         std::to_string(sized) + " bytes the first time, " +
                         (written > sized ? "over " : "") + std::to_string(written) +
                         " the second): a repeatable dataset gives the same batches to every Open");
}

}  // namespace

Result<int64_t> KeptLayout::Place(int64_t body_length) {
  const int64_t at = used_;
  used_ += (body_length + 1 + 63) / 64 * 64;
  if (sized_ >= 0 && used_ > sized_) return KeptGrew(sized_, used_);
  return at;
}

Status KeptLayout::Finish() const {
  return sized_ < 0 || used_ == sized_ ? Status::OK() : KeptGrew(sized_, used_);
}

Result<std::shared_ptr<const Kept>> EncodeKept(
    Dataset& dataset, const ipc::WriteOptions& options,
    const std::function<Result<std::shared_ptr<transport::Region>>(int64_t)>& make_region) {
  FERRY_ASSIGN_OR_RAISE(std::shared_ptr<Dataset> held, HoldForKeeping(dataset));
  Dataset& source = held != nullptr ? *held : dataset;
  auto kept = std::make_shared<Kept>();
  KeepSink sizing(kept.get(), KeptLayout());
  FERRY_RETURN_NOT_OK(EncodeAll(source, &sizing, options));
  const int64_t sized = sizing.layout().used();
  FERRY_ASSIGN_OR_RAISE(kept->region, make_region(sized));
  KeepSink writing(kept.get(), KeptLayout(sized));
  FERRY_RETURN_NOT_OK(EncodeAll(source, &writing, options));
  FERRY_RETURN_NOT_OK(writing.layout().Finish());
  return std::shared_ptr<const Kept>(std::move(kept));
}

void Catalogue::Add(const std::string& name, std::shared_ptr<Dataset> dataset) {
  std::lock_guard lock(mutex_);
  entries_[name] = Entry{std::move(dataset), nullptr, 0, std::make_shared<const int>(0)};
}

uint32_t Catalogue::Keep(const std::string& name, std::shared_ptr<const Kept> kept,
                         std::shared_ptr<Dataset> dataset) {
  std::lock_guard lock(mutex_);
  const uint32_t region = next_region_++;
  entries_[name] =
      Entry{std::move(dataset), std::move(kept), region, std::make_shared<const int>(0)};
  return region;
}

Result<Catalogue::Entry> Catalogue::Find(const std::string& ticket, uint32_t region) const {
  std::string name = ticket;
  bool issued_here = false;
  Result<std::string> issued = tickets_->Resolve(ticket, &issued_here);
  if (issued.ok()) {
    name = *issued;
  } else if (issued_only_ || issued_here) {
    // Issued tickets are secrets: errors neither echo them whole nor list the datasets.
    return issued.status();
  }
  std::lock_guard lock(mutex_);
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    if (issued.ok()) return Status::NotFound("the ticket's dataset is gone");
    std::string names;
    for (const auto& [n, e] : entries_) names += (names.empty() ? "" : ", ") + n;
    return Status::NotFound("unknown ticket \"" + ticket + "\" (this server has: " + names + ")");
  }
  if (it->second.region != region && region == 0 && it->second.dataset != nullptr) {
    // A lent file asked for under the shared region's URI: read and copied as before.
    return Entry{it->second.dataset, nullptr, 0, it->second.readers};
  }
  if (it->second.region != region) {
    return Status::FailedPrecondition(
        "dataset \"" + name + "\" is served under another URI (its memory " +
        "has a remote_handle of its own): ask the server for uri(\"" + name + "\")");
  }
  return it->second;
}

Result<std::string> Catalogue::Issue(const std::string& name, Clock::time_point expires) {
  {
    std::lock_guard lock(mutex_);
    if (entries_.count(name) == 0) return Status::NotFound("no dataset named \"" + name + "\"");
  }
  return tickets_->Issue(name, expires);
}

Status Catalogue::Remove(const std::string& name) {
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return Status::NotFound("no dataset named \"" + name + "\"");
    // A session reading it holds its own references: memory stays valid for it to the end.
    entries_.erase(it);
  }
  tickets_->Revoke(name);
  return Status::OK();
}

int64_t Catalogue::Readers(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(name);
  return it == entries_.end() ? 0 : it->second.readers.use_count() - 1;
}

uint32_t Catalogue::RegionOf(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(name);
  return it == entries_.end() ? 0 : it->second.region;
}

std::shared_ptr<const Kept> Catalogue::KeptAt(uint32_t region) const {
  if (region == 0) return nullptr;
  std::lock_guard lock(mutex_);
  for (const auto& [name, e] : entries_) {
    if (e.region == region && e.kept) return e.kept;
  }
  return nullptr;
}

std::shared_ptr<transport::Region> Catalogue::Memory(uint32_t region) const {
  if (region == 0) return nullptr;
  std::lock_guard lock(mutex_);
  for (const auto& [name, e] : entries_) {
    if (e.region == region && e.kept) return e.kept->region;
  }
  return nullptr;
}

}  // namespace ferry::dipc::internal
