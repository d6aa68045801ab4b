// ferry.aio's streams: a stream read on the worker pool, up to four batches ahead of its reader,
// whose batches reach the loop through their client's completion queue.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "aio_queue.hpp"
#include "ferry/abi/unique.hpp"

namespace ferry::python::aio {

struct StreamState;

/// ferry._ferry._aio.Stream. The pool reads the next batch while the loop handles the last (at
/// most one batch waits unasked for), so the worker never waits on the loop. Closing or dropping
/// it releases the stream, at once or when the read in flight returns.
class Stream {
 public:
  /// Own `stream` (its schema read here) and start reading ahead. `location`: where it reads.
  static Result<Stream> Open(UniqueDeviceArrayStream stream, std::string location);
  Stream(Stream&&) noexcept = default;
  Stream& operator=(Stream&&) noexcept = default;
  ~Stream();

  /// Post the next batch (a ferry.Array; None at the end; the stream's error) as job `id` of
  /// `queue`: at once when it was read ahead, else when its read returns. Raises ValueError
  /// once closed or over, RuntimeError while another read_next waits.
  void ReadNext(uint64_t id, const std::shared_ptr<Completions>& queue);
  /// The batch read ahead, taken now on the loop's thread (a ferry.Array; None at the end; the
  /// stream's error raised), or nullopt when none is ready. Raises as ReadNext does.
  std::optional<nb::object> TakeReady();
  /// Close now: drop what was read ahead and release the stream on the pool (after the read in
  /// flight, if any). A read_next still waiting gets None. Idempotent.
  void Close();
  /// The stream's schema (a copy) and where it reads from.
  UniqueSchema Schema() const;
  const std::string& location() const;

 private:
  Stream() = default;
  std::shared_ptr<StreamState> state_;
};

/// `array` as a copy-free mirror whose release hands the original's release to the release
/// thread (aio::Release): the last batch of a shared-memory session ends the session when released
/// (unmapping the region it read from takes tens of ms for a GiB), and Python drops batches on the
/// loop's thread.
UniqueDeviceArray ReleasedInBackground(UniqueDeviceArray array);

/// Release `stream` on the pool: releasing a session may wait on its peer or join readers.
void ReleaseOnPool(UniqueDeviceArrayStream stream);

}  // namespace ferry::python::aio
