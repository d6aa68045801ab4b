// The writers' gathered batches (writer_impl.hpp): a group of batches framed one after the other
// and written to the sink at once.
#include <utility>

#include "ipc/writer_impl.hpp"

namespace ferry::ipc {

Status StreamWriter::Impl::WriteHeldBatches(std::span<UniqueDeviceArray> batches, void* stream,
                                            BatchCheck check) {
  // A dictionary's message is laid out from memory that goes once it is written, and the
  // dissociated path sends each message apart: those batches go one at a time.
  if (!ids.empty() || message_sink != nullptr) {
    Status first;
    for (UniqueDeviceArray& batch : batches) {
      if (first.ok()) {
        first = WriteHeldBatch(std::move(batch), stream, check);
      } else {
        batch.reset();  // after a failure the rest is released unwritten
      }
    }
    return first;
  }
  Status st;
  for (UniqueDeviceArray& batch : batches) {
    if (!st.ok()) {
      batch.reset();
      continue;
    }
    if (!batch.valid()) {
      st = Status::Invalid("the device batch is NULL or released");
      continue;
    }
    if (batch->device_type != ARROW_DEVICE_CPU) {
      // Copied to the host and written at once, after what is gathered (the copy is the
      // writer's, gone once written).
      st = FlushGathered();
      if (st.ok()) st = WriteDeviceBatch(batch.get(), stream, check);
      batch.reset();
      continue;
    }
    gathered.active = true;
    st = WriteBatch(&batch->array, {}, check);
    gathered.active = false;
    if (st.ok()) {
      gathered.batches.push_back(std::move(batch));  // its body is not written yet
    } else {
      batch.reset();  // nothing of it was gathered
    }
  }
  // The batches before a failure go out too, as batches written one at a time would have.
  const Status flushed = FlushGathered();
  return st.ok() ? flushed : st;
}

Status StreamWriter::Impl::FlushGathered() {
  Gathered& g = gathered;
  Status st;
  if (!g.pieces.empty()) {
    const uint8_t* next = g.bytes.data();
    for (ByteSpan& piece : g.pieces) {
      if (piece.data == nullptr) {  // a message's framing, copied into `bytes` in order
        piece.data = next;
        next += piece.size;
      }
    }
    st = Write(g.pieces);
    if (!st.ok()) {
      // None of the group counts as written (bytes_written counts what the sink took).
      batch_blocks.resize(g.blocks_before);
      stats.messages = g.stats_before.messages;
      stats.record_batches = g.stats_before.record_batches;
      stats.bytes_copied = g.stats_before.bytes_copied;
    }
  }
  // Cleared, the vectors keep their room for the next group.
  g.bytes.clear();
  g.pieces.clear();
  g.owned.clear();
  g.batches.clear();
  g.size = 0;
  return st;
}

}  // namespace ferry::ipc
