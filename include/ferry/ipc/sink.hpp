// Sinks: where the IPC writer sends its bytes. The writer hands a sink a list of pieces (metadata,
// padding and the arrays' own buffers); a sink writes them in place, never gathering them first.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/core/bytes.hpp"
#include "ferry/core/host_buffer.hpp"
#include "ferry/core/mapping.hpp"
#include "ferry/core/result.hpp"

namespace ferry::ipc {

/// The interface every output implements. Write sends the pieces in order; position() counts
/// every byte accepted so far.
class FERRY_EXPORT Sink {
 public:
  virtual ~Sink() = default;
  [[nodiscard]] virtual Status Write(std::span<const ByteSpan> pieces) = 0;
  virtual int64_t position() const noexcept = 0;
};

/// One body buffer of an encoded message: its place in the packed body and where its bytes are
/// now (the array's own memory, or a copy the writer made; NULL when empty).
struct FERRY_EXPORT BodyBuffer {
  int64_t offset = 0;
  int64_t length = 0;
  const uint8_t* data = nullptr;
};

/// One IPC message with its metadata and body apart, as the dissociated protocol sends it. Every
/// span is valid only during the WriteMessage call.
struct FERRY_EXPORT EncodedMessage {
  /// The flatbuffer Message, without the stream format's prefix or padding.
  ByteSpan metadata;
  /// The packed body's pieces, padding included (empty for a schema).
  std::span<const ByteSpan> body;
  int64_t body_length = 0;
  /// Each body buffer, in metadata order.
  std::span<const BodyBuffer> buffers;
  /// Whether the message has a body (dictionary and record batches), even an empty one.
  bool has_body = false;
  /// Whether every body piece is the batch's own memory or static padding, so it stays valid as
  /// long as the batch does (a sink may keep referencing it). False when the writer made any
  /// piece itself: compression, a bit-shifted or rebased slice, a batch copied from a device.
  bool in_place = true;
};

/// Where a writer sends whole messages when metadata and body travel apart (the dissociated
/// protocol's server). The writer gathers nothing: bodies arrive as pieces.
class FERRY_EXPORT MessageSink {
 public:
  virtual ~MessageSink() = default;
  [[nodiscard]] virtual Status WriteMessage(const EncodedMessage& message) = 0;
  [[nodiscard]] virtual Status WriteEndOfStream() = 0;
};

/// A sink that appends to one growing, page-aligned region of memory (one copy of each piece,
/// into the region). The region grows with mremap, so growing never copies what was written.
class FERRY_EXPORT MemorySink final : public Sink {
 public:
  MemorySink() = default;
  MemorySink(const MemorySink&) = delete;
  MemorySink& operator=(const MemorySink&) = delete;
  Status Write(std::span<const ByteSpan> pieces) override;
  int64_t position() const noexcept override { return size_; }
  /// The bytes written so far (valid until the next Write or Finish).
  const uint8_t* data() const noexcept { return pages_.data(); }
  /// Hand the bytes over as SharedBytes (no copy); the sink is empty afterwards.
  SharedBytes Finish();

 private:
  Status Grow(int64_t needed);
  Mapping pages_;
  int64_t size_ = 0;
};

/// A sink over a file descriptor (file, pipe or socket). Pieces go out with writev, straight from
/// the arrays' buffers; short writes and EINTR are retried.
class FERRY_EXPORT FileSink final : public Sink {
 public:
  /// Create or truncate `path` (mode 0644).
  static Result<std::unique_ptr<FileSink>> Open(const std::string& path);
  /// Write to an open descriptor; `owned` closes it on Close or destruction.
  static std::unique_ptr<FileSink> FromFd(int fd, bool owned);
  ~FileSink() override;
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;
  Status Write(std::span<const ByteSpan> pieces) override;
  int64_t position() const noexcept override { return position_; }
  /// Close the descriptor if owned; errors (e.g. from a full disk) are reported here.
  Status Close();

 private:
  FileSink(int fd, bool owned, std::string name) : fd_(fd), owned_(owned), name_(std::move(name)) {}
  int fd_;
  bool owned_;
  std::string name_;
  int64_t position_ = 0;
  // Write's I/O vector, kept so that its room is reused (no allocation per message).
  std::vector<iovec> iov_;
};

}  // namespace ferry::ipc
