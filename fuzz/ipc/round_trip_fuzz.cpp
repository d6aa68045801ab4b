// Fuzz ferry's IPC writer on arbitrary valid arrays (../format/fuzzed_array.hpp: every layout,
// offsets at every level, absent and present bitmaps). A tree that passes full validation,
// written as the one column of a batch (the fuzz bytes pick the compression, the byte order and
// the alignment), must read back through ReadStream at full validation to the same values.
#include <cstdlib>
#include <string>
#include <vector>

#include "../format/fuzzed_array.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/ipc/sink.hpp"
#include "ferry/ipc/writer.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ferry::fuzz;
  if (size < 3) return 0;
  Bytes in(data, size);
  const ferry::Field& field = PickField(in);
  const uint8_t how = in.Next();
  auto schema = field.Export();
  if (!schema.ok()) std::abort();
  auto view = ferry::ArrayView::Make(schema->get());
  if (!view.ok()) std::abort();
  Tree tree;
  ArrowArray* column = ValidTree(schema->get(), in, tree, &*view);
  if (column == nullptr) return 0;

  auto batch_schema = ferry::Field::Make("+s", "", {field}).Export();
  if (!batch_schema.ok()) std::abort();
  ArrowArray* columns[1] = {column};
  const void* no_validity[1] = {nullptr};
  ArrowArray batch{};
  batch.length = column->length;
  batch.n_buffers = 1;
  batch.buffers = no_validity;
  batch.n_children = 1;
  batch.children = columns;
  batch.release = &NoRelease;

  ferry::ipc::WriteOptions options;
  options.compression = static_cast<ferry::ipc::Compression>(how % 3);
  options.big_endian = (how & 0x10) != 0;
  options.alignment = (how & 0x20) != 0 ? 64 : 8;
  ferry::ipc::MemorySink sink;
  auto writer = ferry::ipc::StreamWriter::Open(&sink, batch_schema->get(), options);
  if (!writer.ok()) std::abort();
  if (!writer->WriteBatch(&batch).ok() || !writer->Close().ok()) std::abort();
  ferry::ipc::ReadOptions read = Options();
  read.validation = ferry::ValidationLevel::kFull;
  auto stream = ferry::ipc::ReadStream(sink.Finish(), read);
  if (!stream.ok()) std::abort();
  auto batches = Render(std::move(*stream), nullptr);
  if (!batches.ok() || batches->size() != 1) std::abort();
  auto written = ferry::ArrayView::Make(batch_schema->get());
  if (!written.ok() || !written->SetArray(&batch).ok()) std::abort();
  auto rows = ferry::ArrayToJson(*written);
  if (!rows.ok() || *rows != (*batches)[0]) std::abort();
  return 0;
}
