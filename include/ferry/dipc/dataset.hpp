// What a dissociated-IPC server serves: named datasets, each read afresh for every client.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferry/abi/export.h"
#include "ferry/abi/unique.hpp"
#include "ferry/core/result.hpp"

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
};

/// A named source of batches. Thread-safe: many clients open it at once.
class FERRY_EXPORT Dataset {
 public:
  virtual ~Dataset() = default;
  /// A fresh reader for one client.
  virtual Result<std::unique_ptr<DatasetReader>> Open() = 0;

  /// An IPC stream or file (told apart by its magic), mapped once and decoded zero-copy per
  /// client, with the reading options' full validation.
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
};

}  // namespace ferry::dipc
