// Internal to the dissociated-IPC client: one stream's session. Metadata in sequence order
// through a Sequencer, one body per batch matched by its sequence number, decoded zero-copy by the
// IPC decoder, and free_data for every address the server lent.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dipc/cuda_bodies.hpp"
#include "dipc/freer.hpp"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/dipc/protocol.hpp"
#include "ferry/dipc/sequencer.hpp"
#include "ferry/dipc/uri.hpp"
#include "ferry/ipc/decoder.hpp"
#include "ferry/transport/transport.hpp"

namespace ferry::dipc::internal {

/// One stream of a dissociated-IPC server, read over `conn` (metadata) and `data` (bodies and
/// free_data; the same connection in the one-connection shape). Owned by the stream's producer;
/// the Freer it shares with every borrowed body outlives it. Not thread-safe: one reader.
class ClientSession {
 public:
  // `data` carries bodies and free_data; it is `conn` itself in the one-connection shape.
  // With `cuda`, type-1 bodies are offsets into the server's device allocation it opened.
  ClientSession(std::shared_ptr<Connection> conn, std::shared_ptr<Connection> data,
                const Uri& data_uri, ClientOptions options, std::shared_ptr<CudaBodies> cuda)
      : conn_(std::move(conn)),
        data_(std::move(data)),
        options_(std::move(options)),
        cuda_(std::move(cuda)),
        decoder_(options_.read),
        metadata_(options_.reorder_window),
        freer_(std::make_shared<Freer>(data_, data_uri.free_data.value_or(kDefaultFreeDataTag))) {}

  ~ClientSession();

  // Once the stream has ended having lent this client nothing, hand the connection to `pool`
  // under `key` (before Handshake; the one-connection shape). `reused`: the connection served a
  // stream before, so the window goes after want_data (the server learnt the pacing then).
  void KeepFor(std::shared_ptr<ConnectionPool> pool, std::string key, bool reused) {
    pool_ = std::move(pool);
    pool_key_ = std::move(key);
    reused_ = reused;
  }

  // Send the ticket (on both connections in the split shape) and read the schema.
  Status Handshake(const std::string& ticket, uint64_t want_data, uint64_t data_want_data);

  // The stream's schema (after Handshake), owned by the session.
  const ArrowSchema* schema() const { return schema_.get(); }

  // The next batch on the target device; a released `out` at the end of the stream.
  Status Next(ArrowDeviceArray* out);

 private:
  // `st` as the caller sees it: the server's own words when it sent them, else what was being
  // done when the connection failed (marks the session broken).
  Status Check(Status st, const std::string& doing);

  // A metadata message, or the error a ferry server reported in one.
  Result<MetadataMessage> Parse(const SharedBytes& bytes) const;

  // A metadata message as it arrived, and parsed (once: `message.flatbuffer` points into
  // `bytes`, which keep it alive).
  struct Arrived {
    SharedBytes bytes;
    MetadataMessage message;
  };

  // The next metadata message in sequence order, holding early ones in the window.
  Result<Arrived> NextMetadata();
  // A metadata message as it comes (waiting up to `wait`). On one connection the body of the
  // message whose turn it is comes with it when it is here already (ahead_): its receive then
  // needs no look of its own.
  Result<SharedBytes> ReceiveMetadata(std::chrono::milliseconds wait);

  // Parse a received metadata message and put it in the reorder window, within its limits.
  Status Hold(SharedBytes bytes);

  // Take the body of `m` (packed, or a buffer list fetched or mapped) and hand both to the
  // decoder.
  Status ReadBody(const MetadataMessage& m);
  // The body of message `sequence`, received from the data connection (waiting up to the
  // timeout, after handing the server what is ready to free).
  Result<transport::TaggedMessage> ReceiveBody(uint32_t sequence, const ipc::MessageInfo& info);

  // With full validation, the next batch's metadata and buffer list, when both are here
  // already, with its fetch started: a transport that fetches in the background (UCX's gets)
  // then brings batch N+1 while batch N is validated. Never waits; whatever is not here yet, or
  // looks wrong, is left to the ordinary path, which waits and reports.
  void FetchAhead();

  // The stream is left with a batch fetched ahead: its addresses go back to the server like
  // any others, once its gets are done reading them (bounded: a server that stopped answering
  // frees them itself when the connection goes).
  void ReturnAhead();

  // The pairs of `list` that decoding reads: all of them (no copy), unless read.columns leaves
  // columns out (then `needed` says which, one flag per pair, and `picked` holds the pairs). A
  // list whose length differs from the metadata's is fetched whole, for the decoder to refuse
  // by name.
  std::span<const BufferRef> Wanted(ByteSpan fb, const BufferList& list, std::vector<bool>* needed,
                                    std::vector<BufferRef>* picked) const;

  // Let the server send `count` more record batches (ClientOptions::window), on each connection.
  Status Grant(uint64_t count, const char* doing);
  /// Sends the credits owed (owed_), if any.
  Status PayOwed(const char* doing);

  // Add `bytes` to the caller's count of body bytes taken, if it keeps one.
  void Count(int64_t bytes) const;

  // A type-1 body whose pairs are offsets into the server's device allocation: the arrays point
  // there (the decoder bounds-checks every buffer against it and never reads it), and the loan
  // goes back when the last of them is released.
  Status ConsumeOnDevice(ByteSpan fb, const BufferList& list);

  // Hand `batch` out on the target device (a copy unless that is the CPU or CUDA bodies).
  Status Deliver(UniqueArray batch, ArrowDeviceArray* out);

  // How long a wait for the server's next metadata message may be silent: the timeout, but on a
  // kept connection, until its schema, the connect timeout, where one shorter than the timeout
  // is given: its first answer stands in for the connection a fresh read would make.
  std::chrono::milliseconds SilenceAllowed() const;

  std::shared_ptr<Connection> conn_;
  std::shared_ptr<Connection> data_;
  ClientOptions options_;
  std::shared_ptr<CudaBodies> cuda_;  // NULL unless bodies are in CUDA memory
  ipc::Decoder decoder_;
  Sequencer<Arrived> metadata_;
  std::shared_ptr<Freer> freer_;
  UniqueSchema schema_;
  bool started_ = false;
  bool finished_ = false;
  bool paced_ = false;        // ClientOptions::window: every batch is asked for with a credit
  uint64_t owed_ = 0;         // batches asked for whose credit is not sent yet
  uint64_t credit_step_ = 1;  // credits go in this many at once (window / 4, at least 1)
  bool broken_ = false;       // the connection failed: close by aborting
  bool lent_ = false;         // a buffer list arrived: the server lent this client memory
  // Where the connection goes once the stream ends having lent nothing (KeepFor).
  std::shared_ptr<ConnectionPool> pool_;
  std::string pool_key_;
  bool reused_ = false;
  int64_t held_bytes_ = 0;  // metadata bytes in the reorder window

  // What ReadBody reuses batch after batch rather than allocating: the parsed buffer list, the
  // fetched body's buffer places (its bytes move on to the batch), and where each buffer landed.
  BufferList list_;
  transport::FetchedBody fetched_;
  std::vector<ipc::BufferLocation> locations_;

  // A body taken before its metadata's turn: by ReceiveMetadata with a metadata message, or by
  // FetchAhead with its fetch under way.
  struct Ahead {
    uint32_t sequence = 0;
    transport::TaggedMessage body;
    std::unique_ptr<transport::FetchInFlight> fetch;  // type 1 only
  };
  // Metadata that FetchAhead took for the next turn (or the error it found in it).
  std::optional<Result<Arrived>> lookahead_;
  // Declared last: destroyed before the connections its fetch reads through. Held in place
  // (one is taken for nearly every batch).
  std::optional<Ahead> ahead_;
};

}  // namespace ferry::dipc::internal
