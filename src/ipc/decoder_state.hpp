// The decoder's state, shared with the file reader: the schema, the dictionaries, and message
// decoding that does not depend on framing.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ferry/core/host_buffer.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/ipc/decoder.hpp"
#include "ipc/array_loader.hpp"
#include "ipc/loaded_validation.hpp"
#include "ipc/schema_flatbuffer.hpp"
#include "ipc/verified_shape.hpp"

namespace ferry::ipc {

// Decoded messages waiting for Next, first in, first out. A vector taken from the front and
// emptied once all is taken: a stream that decodes a message and takes it reuses one slot,
// where a deque would allocate a block every few messages.
class EventQueue {
 public:
  void push_back(DecodedMessage m) { items_.push_back(std::move(m)); }
  // A new message at the back, to be filled in place.
  DecodedMessage& emplace_back() { return items_.emplace_back(); }
  bool empty() const { return head_ == items_.size(); }
  // The oldest message, moved once, straight into what Decoder::Next returns; the queue must not
  // be empty.
  std::optional<DecodedMessage> pop_front() {
    std::optional<DecodedMessage> m(std::in_place, std::move(items_[head_++]));
    if (head_ == items_.size()) {
      clear();
    } else if (head_ >= 64 && head_ * 2 >= items_.size()) {
      // A reader that never catches up must not leave taken slots behind without bound.
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    return m;
  }
  void clear() {
    items_.clear();
    head_ = 0;
  }

 private:
  std::vector<DecodedMessage> items_;
  size_t head_ = 0;
};

struct Decoder::Impl {
  explicit Impl(ReadOptions o) : options(std::move(o)) {}

  enum class State : int8_t { kPrefix, kLength, kMetadata, kBody, kDone };

  ReadOptions options;
  // Framing.
  State state = State::kPrefix;
  int64_t need = 4;
  HostBuffer pending;
  HostBuffer metadata;            // the current message's flatbuffer, 8-aligned
  internal::VerifiedShape shape;  // of the last record batch message verified into `metadata`
  bool inspected = false;  // `metadata` holds what Inspect verified and nothing has used it yet
  const fb::Message* message = nullptr;
  Status failed;
  // Stream state.
  std::optional<internal::StreamSchema> schema;
  // With options.columns: which columns are decoded, the schema of those, and the dictionary
  // ids they use (dictionary batches of other ids are skipped).
  std::vector<bool> selected;
  UniqueSchema projected;
  std::set<int64_t> used_dictionaries;
  std::map<int64_t, std::shared_ptr<UniqueArray>> dictionaries;
  bool file_mode = false;  // the file format forbids dictionary replacement
  EventQueue events;
  int64_t index = 0;
  int64_t copied = 0;
  // What DecodeBatch reuses batch after batch: the vectors it loads columns into, and the view
  // each batch is validated through, made from OutSchema() once (not per batch: a view's
  // making is most of a small batch's validation). The mutex lets the file reader's concurrent
  // random reads each take them or, finding them busy, make their own.
  mutable std::mutex batch_view_mutex;
  mutable internal::LoadedColumns batch_scratch;
  mutable std::optional<ArrayView> batch_view;
  mutable const ArrowSchema* batch_view_schema = nullptr;

  std::string Label(int64_t i) const { return internal::MessageLabel(i).str(); }

  /// Verify `size` bytes of a Message flatbuffer (copying them to aligned storage when needed)
  /// and return the root, which lives in `storage`. With a `shape`, a message of the shape it
  /// remembers is known without verifying, and one verified is remembered there.
  Result<const fb::Message*> VerifyMessage(const uint8_t* data, int64_t size, HostBuffer* storage,
                                           int64_t i,
                                           internal::VerifiedShape* shape = nullptr) const;
  /// Start a message whose metadata arrived apart: refuse after a failure or on empty
  /// metadata, then verify it into `metadata` (failing the decoder on any error).
  Result<const fb::Message*> Begin(const uint8_t* data, int64_t size);
  /// Handle one verified message with its body.
  Status HandleMessage(const fb::Message* message, const SharedBytes& body);
  Status HandleSchema(const fb::Schema* schema, fb::MetadataVersion version, int64_t i);
  Status HandleDictionary(const fb::DictionaryBatch* batch, const SharedBytes& body, int64_t i,
                          Metadata custom_metadata);
  /// Decode a record batch into a struct array (validated at options.validation). Const: the
  /// file reader calls it for random access.
  Result<UniqueArray> DecodeBatch(const fb::RecordBatch* batch, const SharedBytes& body,
                                  const internal::MessageLabel& label, int64_t* decompressed) const;
  Status CheckVersion(fb::MetadataVersion version, int64_t i) const;
  /// Apply options.columns to the schema just decoded: fill selected, projected and
  /// used_dictionaries, or fail naming a bad index.
  Status Project(int64_t i);
  /// The buffers of verified message `m` (number `i`) that decoding reads (Decoder::BuffersNeeded).
  Result<std::vector<bool>> Needed(const fb::Message* m, int64_t i) const;
  /// The schema handed out: the projected one, or the stream's.
  const ArrowSchema* OutSchema() const { return projected ? projected.get() : schema->root.get(); }
  /// With options.body_on_device: refuse a body whose decoding would read it on the host.
  Status CheckDeviceBody(bool compressed, const SharedBytes& body,
                         const internal::MessageLabel& label) const;
  /// The level loaded arrays are validated at (none for bodies in device memory).
  ValidationLevel Validation() const;
  /// The current dictionary of `id` and what keeps it alive.
  Result<internal::DictionaryRef> Lookup(int64_t id) const;

  Status Feed(const SharedBytes& chunk);
  /// The end-of-stream marker was read: stop and queue the event.
  void EndOfStream();
  Status Fail(Status st) {
    failed = st;
    state = State::kDone;
    need = 0;
    return st;
  }
};

namespace internal {

/// "" without compression, else the codec's name.
std::string CompressionName(const fb::BodyCompression* compression);

/// A message header type's name in the format's own words ("RecordBatch"), for errors.
const char* HeaderName(fb::MessageHeader header);

/// Read an int32 stored little-endian.
int32_t LoadInt32LE(const uint8_t* p);

}  // namespace internal

}  // namespace ferry::ipc
