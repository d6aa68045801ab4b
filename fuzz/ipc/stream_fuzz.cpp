// libFuzzer target for the stream decoder. Arbitrary bytes go through ReadStream and, in pieces
// of a size the input's length picks, through the push Decoder. Properties: nothing crashes; both
// paths agree on whether the input is valid and on every value; anything valid survives ferry's
// writer and reads back to the same values; at the default validation level the decoder's
// one-pass check changes no verdict and no message.
#include <cstring>

#include "ferry/ipc/decoder.hpp"
#include "ferry/ipc/writer.hpp"
#include "fuzz_util.hpp"
#include "ipc/loaded_validation.hpp"

namespace {

ferry::Result<std::vector<std::string>> ReadInPieces(const ferry::SharedBytes& bytes, int64_t piece,
                                                     const ArrowSchema** schema,
                                                     ferry::ipc::Decoder* decoder) {
  std::vector<std::string> out;
  int64_t pos = 0;
  while (pos < bytes.size && !decoder->finished()) {
    const int64_t n = std::min(piece, bytes.size - pos);
    FERRY_RETURN_NOT_OK(decoder->Consume(bytes.Slice(pos, n)));
    pos += n;
    while (auto m = decoder->Next()) {
      if (m->kind != ferry::ipc::MessageKind::kRecordBatch) continue;
      FERRY_ASSIGN_OR_RAISE(ferry::ArrayView view, ferry::ArrayView::Make(decoder->schema()));
      FERRY_RETURN_NOT_OK(view.SetArray(m->batch.get()));
      FERRY_ASSIGN_OR_RAISE(std::string json, ferry::ArrayToJson(view));
      out.push_back(std::move(json));
    }
  }
  if (decoder->schema() == nullptr) return ferry::Status::Invalid("no schema");
  if (!decoder->between_messages()) return ferry::Status::Invalid("truncated");
  *schema = decoder->schema();
  return out;
}

// The input decoded at the default validation level: its batch count and its first error.
std::string AtDefault(const ferry::SharedBytes& bytes) {
  ferry::ipc::ReadOptions options = ferry::fuzz::Options();
  options.validation = ferry::ValidationLevel::kDefault;
  ferry::ipc::Decoder decoder(options);
  const ferry::Status st = decoder.Consume(bytes);
  int64_t batches = 0;
  while (auto m = decoder.Next()) {
    if (m->kind == ferry::ipc::MessageKind::kRecordBatch) ++batches;
  }
  return std::to_string(batches) + (st.ok() ? "" : ": " + st.message());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The piece size comes from the length, so that valid streams stay valid seeds.
  const int64_t piece = 1 + static_cast<int64_t>(size % 61);
  const auto bytes = ferry::SharedBytes::Borrow({data, static_cast<int64_t>(size)});

  ferry::ipc::internal::SetQuickValidation(false);
  const std::string by_view = AtDefault(bytes);
  ferry::ipc::internal::SetQuickValidation(true);
  if (AtDefault(bytes) != by_view) __builtin_trap();

  ferry::UniqueSchema schema;
  ferry::Result<std::vector<std::string>> whole = ferry::Status::OK();
  {
    auto stream = ferry::ipc::ReadStream(bytes, ferry::fuzz::Options());
    whole = stream.ok() ? ferry::fuzz::Render(std::move(*stream), &schema) : stream.status();
  }
  ferry::ipc::Decoder decoder(ferry::fuzz::Options());
  const ArrowSchema* piece_schema = nullptr;
  auto pieces = ReadInPieces(bytes, piece, &piece_schema, &decoder);
  if (whole.ok() != pieces.ok()) __builtin_trap();
  if (!whole.ok()) return 0;
  if (*whole != *pieces) __builtin_trap();

  // Re-write what was read and read it again: the values must not change.
  auto again = ferry::ipc::ReadStream(bytes, ferry::fuzz::Options());
  if (!again.ok()) __builtin_trap();
  ferry::ipc::MemorySink sink;
  auto writer = ferry::ipc::StreamWriter::Open(&sink, schema.get());
  if (!writer.ok()) return 0;  // a schema the writer refuses; reading was still clean
  if (!writer->WriteStream(again->get()).ok()) return 0;
  if (!writer->Close().ok()) __builtin_trap();
  auto reread = ferry::ipc::ReadStream(sink.Finish(), ferry::fuzz::Options());
  if (!reread.ok()) __builtin_trap();
  auto second = ferry::fuzz::Render(std::move(*reread), nullptr);
  if (!second.ok() || *second != *whole) __builtin_trap();
  return 0;
}
