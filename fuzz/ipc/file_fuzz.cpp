// libFuzzer target for the file reader. Arbitrary bytes go through FileReader (random access,
// last batch first); and when they read as a stream, ferry writes them as a file whose random
// access must give exactly the stream's batches. Properties: no crash, and file == stream.
#include "ferry/ipc/writer.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = ferry::SharedBytes::Borrow({data, static_cast<int64_t>(size)});

  // The file reader on raw input: errors are fine, crashes are not.
  if (auto reader = ferry::ipc::FileReader::Open(bytes, ferry::fuzz::Options()); reader.ok()) {
    for (int64_t i = reader->num_record_batches(); i-- > 0;) (void)reader->ReadRecordBatch(i);
    (void)reader->ReadRecordBatch(reader->num_record_batches());
  }

  // The differential property, from inputs that read as a stream.
  auto stream = ferry::ipc::ReadStream(bytes, ferry::fuzz::Options());
  if (!stream.ok()) return 0;
  ferry::UniqueSchema schema;
  auto expected = ferry::fuzz::Render(std::move(*stream), &schema);
  if (!expected.ok()) return 0;
  auto again = ferry::ipc::ReadStream(bytes, ferry::fuzz::Options());
  if (!again.ok()) __builtin_trap();
  ferry::ipc::MemorySink sink;
  auto writer = ferry::ipc::FileWriter::Open(&sink, schema.get());
  if (!writer.ok()) return 0;
  // The file format cannot replace dictionaries: such streams are refused, not mangled.
  if (!writer->WriteStream(again->get()).ok()) return 0;
  if (!writer->Close().ok()) __builtin_trap();
  auto file = ferry::ipc::FileReader::Open(sink.Finish(), ferry::fuzz::Options());
  if (!file.ok()) __builtin_trap();
  if (file->num_record_batches() != static_cast<int64_t>(expected->size())) __builtin_trap();
  for (int64_t i = file->num_record_batches(); i-- > 0;) {
    auto batch = file->ReadRecordBatch(i);
    if (!batch.ok()) __builtin_trap();
    auto view = ferry::ArrayView::Make(file->schema());
    if (!view.ok() || !view->SetArray(batch->get()).ok()) __builtin_trap();
    auto json = ferry::ArrayToJson(*view);
    if (!json.ok() || *json != (*expected)[static_cast<size_t>(i)]) __builtin_trap();
  }
  return 0;
}
