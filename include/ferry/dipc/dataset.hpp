// What a dissociated-IPC server serves: named datasets, each read afresh for every client.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/bytes.hpp"
#include "ferry/core/result.hpp"
#include "ferry/device/async_stream.hpp"

namespace ferry::dipc {

/// One client's pass over a dataset: the schema, then batches in order. Not thread-safe.
class FERRY_EXPORT DatasetReader {
 public:
  virtual ~DatasetReader() = default;
  /// The schema (a struct whose children are the columns), owned by the reader.
  virtual const ArrowSchema* schema() const noexcept = 0;
  /// The next batch, borrowed until the next call, or nullptr at the end. Batches may live on any
  /// device; the server copies non-host ones to host memory through the device layer.
  virtual Result<const ArrowDeviceArray*> Next() = 0;
  /// The batch the last Next() returned, handed over: the reader forgets it and the caller owns
  /// its release. An invalid array where the reader cannot give it up (the default); the server
  /// takes a batch that lies in its shared region (Server::region_allocator) to lend it in place.
  virtual UniqueDeviceArray TakeBatch() { return {}; }
  /// Whether the batches Next returns stay valid and unchanged as long as the reader does (not
  /// only until the next call): batches in memory that the dataset keeps. A writer then knows a
  /// dictionary they share by its memory (ipc::StreamWriter::WriteKeptBatch). False unless
  /// overridden.
  virtual bool keeps_batches() const noexcept { return false; }
};

/// The bytes of a dataset served from an IPC file and the descriptor they map: a shared,
/// read-only mapping of the file itself, or of a sealed memfd holding one copy when the file is
/// on a network filesystem (`copied`). `owner` keeps the mapping and the descriptor alive.
struct FERRY_EXPORT DatasetFile : LendableBytes {
  bool copied = false;
};

/// A named source of batches. Thread-safe: many clients open it at once.
class FERRY_EXPORT Dataset {
 public:
  virtual ~Dataset() = default;
  /// A fresh reader for one client.
  virtual Result<std::unique_ptr<DatasetReader>> Open() = 0;
  /// The file this dataset's batches point into (FromPath), which a server can lend to clients
  /// as it is; NULL for other datasets.
  virtual const DatasetFile* file() const noexcept { return nullptr; }
  /// Whether every Open reads the same batches (batches in memory, a file). A server keeping a
  /// dataset that is not reads it once and holds its batches while it encodes them; one that
  /// is it reads twice, once to size the memory it keeps them in. False unless overridden.
  virtual bool repeatable() const noexcept { return false; }

  /// An IPC stream or file (told apart by its magic), mapped once (shared, read-only, its
  /// descriptor kept: see file()) and decoded zero-copy per client: with full validation until
  /// one pass has read the whole file, then with the default checks (the file must not change
  /// while it is served).
  static Result<std::shared_ptr<Dataset>> FromPath(const std::string& path);
  /// Batches already in memory, on any device, shared by every client (never copied to serve a
  /// client over shared memory beyond the one copy into the segment).
  static Result<std::shared_ptr<Dataset>> FromBatches(UniqueSchema schema,
                                                      std::vector<UniqueDeviceArray> batches);
  /// A producer: `open` makes a new ArrowDeviceArrayStream for each client.
  static std::shared_ptr<Dataset> FromStreamFactory(
      std::function<Result<UniqueDeviceArrayStream>()> open);
  /// A stream that can be read once: the first client consumes it; later ones get an error.
  static std::shared_ptr<Dataset> FromStream(UniqueDeviceArrayStream stream);
  /// What an async producer pushes (the Async C Device Stream Interface), read once as
  /// FromStream: fills `*handler`, which the caller hands to the producer and keeps alive until
  /// its release is called. The first client's reads pace the producer: a batch is requested as
  /// that client takes one, `options.queue_size` ahead (each batch's sync event waited on).
  static Result<std::shared_ptr<Dataset>> FromAsync(ArrowAsyncDeviceStreamHandler* handler,
                                                    AsyncHandlerOptions options = {});
};

}  // namespace ferry::dipc
