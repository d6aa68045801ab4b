// `ferry demo`: a table of every type through the C data interface, validated, summarised and
// sent to every device the machine has and back.
#include "demo.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ferry/device/device_array_view.hpp"
#include "ferry/format/array.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/format/builder.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/format/schema_view.hpp"
#include "ferry/ipc/decoder.hpp"
#include "ferry/ipc/sink.hpp"
#include "ferry/ipc/writer.hpp"

namespace ferry::cli {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// One column of every type the core supports.
Field DemoSchema() {
  auto f = [](const char* format, const char* name) { return Field::Make(format, name); };
  Field item = f("i", "item");
  Field entries = Field::Make("+s", "entries", {f("u", "key").WithFlags(0), f("l", "value")});
  return Field::Make(
      "+s", "",
      {f("n", "null"),
       f("b", "bool"),
       f("c", "int8"),
       f("C", "uint8"),
       f("s", "int16"),
       f("S", "uint16"),
       f("i", "int32"),
       f("I", "uint32"),
       f("l", "int64"),
       f("L", "uint64"),
       f("e", "float16"),
       f("f", "float32"),
       f("g", "float64"),
       f("d:9,2,32", "decimal32"),
       f("d:18,2,64", "decimal64"),
       f("d:38,4", "decimal128"),
       f("d:76,6,256", "decimal256"),
       f("w:8", "fixed_size_binary"),
       f("z", "binary"),
       f("Z", "large_binary"),
       f("vz", "binary_view"),
       f("u", "string"),
       f("U", "large_string"),
       f("vu", "string_view"),
       f("tdD", "date32"),
       f("tdm", "date64"),
       f("tts", "time32"),
       f("ttn", "time64"),
       f("tsu:UTC", "timestamp"),
       f("tDm", "duration"),
       f("tiM", "interval_months"),
       f("tiD", "interval_day_time"),
       f("tin", "interval_month_day_nano"),
       Field::Make("+l", "list", {item}),
       Field::Make("+L", "large_list", {item}),
       Field::Make("+vl", "list_view", {item}),
       Field::Make("+vL", "large_list_view", {item}),
       Field::Make("+w:2", "fixed_size_list", {item}),
       Field::Make("+s", "struct", {f("i", "a"), f("u", "b")}),
       Field::Make("+m", "map", {entries.WithFlags(0)}),
       Field::Make("+us:0,1", "sparse_union", {f("i", "int"), f("u", "str")}),
       Field::Make("+ud:0,1", "dense_union", {f("i", "int"), f("u", "str")}),
       Field::Make("+r", "run_end_encoded", {f("i", "run_ends").WithFlags(0), f("u", "values")}),
       Field::Dictionary("dictionary", "i", f("u", "values")),
       Field::Extension("extension", "arrow.uuid", "", f("w:16", "extension"))});
}

// Append one generated value for row `i` to any builder, recursing into nested types.
Status AppendGenerated(ArrayBuilder* b, int64_t i, int depth) {
  const SchemaView& t = b->type();
  if (t.nullable && depth > 0 && i % 7 == 3 && t.storage_type != TypeId::kSparseUnion &&
      t.storage_type != TypeId::kDenseUnion && t.storage_type != TypeId::kRunEndEncoded) {
    return b->AppendNull();
  }
  if (b->dictionary() != nullptr) return b->AppendBytes("category-" + std::to_string(i % 8));
  const std::string text = "value-" + std::to_string(i) + (i % 3 ? "" : "-with-a-longer-tail");
  switch (t.storage_type) {
    case TypeId::kNull:
      return b->AppendNull();
    case TypeId::kBool:
      return b->AppendInt(i % 2);
    case TypeId::kInt8:
    case TypeId::kUInt8:
      return b->AppendInt(i % 100);
    case TypeId::kInt16:
    case TypeId::kUInt16:
      return b->AppendInt(i % 30000);
    case TypeId::kHalfFloat:
    case TypeId::kFloat:
    case TypeId::kDouble:
      return b->AppendDouble(static_cast<double>(i % 1000) * 0.5);
    case TypeId::kDecimal32:
    case TypeId::kDecimal64:
    case TypeId::kDecimal128:
    case TypeId::kDecimal256:
      return b->AppendDecimal(std::to_string(i % 1000000) + ".25");
    case TypeId::kFixedSizeBinary: {
      std::string bytes(static_cast<size_t>(t.fixed_size), '\0');
      for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<char>((i + k) & 0xFF);
      return b->AppendBytes(bytes);
    }
    case TypeId::kBinary:
    case TypeId::kString:
    case TypeId::kLargeBinary:
    case TypeId::kLargeString:
    case TypeId::kBinaryView:
    case TypeId::kStringView:
      return b->AppendBytes(text);
    case TypeId::kTime32:
    case TypeId::kTime64:
      return b->AppendInt(i % 86400);
    case TypeId::kIntervalDayTime: {
      int32_t parts[2] = {static_cast<int32_t>(i % 30), static_cast<int32_t>(i % 1000)};
      return b->AppendBytes(std::string_view(reinterpret_cast<const char*>(parts), 8));
    }
    case TypeId::kIntervalMonthDayNano: {
      char bytes[16] = {};
      const auto months = static_cast<int32_t>(i % 12);
      std::memcpy(bytes, &months, 4);
      return b->AppendBytes(std::string_view(bytes, 16));
    }
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kListView:
    case TypeId::kLargeListView:
      for (int64_t k = 0; k < i % 4; ++k)
        FERRY_RETURN_NOT_OK(AppendGenerated(b->child(0), i + k, depth + 1));
      return b->FinishElement();
    case TypeId::kFixedSizeList:
      for (int32_t k = 0; k < t.fixed_size; ++k)
        FERRY_RETURN_NOT_OK(AppendGenerated(b->child(0), i + k, depth + 1));
      return b->FinishElement();
    case TypeId::kStruct:
      for (int64_t c = 0; c < b->n_children(); ++c)
        FERRY_RETURN_NOT_OK(AppendGenerated(b->child(c), i, depth + 1));
      return b->FinishElement();
    case TypeId::kMap: {
      ArrayBuilder* entries = b->child(0);
      for (int64_t k = 0; k < i % 3; ++k) {
        FERRY_RETURN_NOT_OK(entries->child(0)->AppendBytes("key-" + std::to_string(k)));
        FERRY_RETURN_NOT_OK(AppendGenerated(entries->child(1), i + k, depth + 1));
        FERRY_RETURN_NOT_OK(entries->FinishElement());
      }
      return b->FinishElement();
    }
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {
      const size_t which = static_cast<size_t>(i) % t.union_type_ids.size();
      FERRY_RETURN_NOT_OK(b->AppendUnion(t.union_type_ids[which]));
      return AppendGenerated(b->child(static_cast<int64_t>(which)), i, depth + 1);
    }
    case TypeId::kRunEndEncoded:
      if (i % 10 != 0 && b->length() > 0) return b->ExtendLastRun(1);
      FERRY_RETURN_NOT_OK(AppendGenerated(b->child(1), i, depth + 1));
      return b->AppendRun(1);
    default:
      return b->AppendInt(i);
  }
}

int64_t BufferBytes(const ArrayView& v) {
  int64_t total = 0;
  for (int64_t i = 0; i < v.n_buffers(); ++i) {
    if (v.buffer(i).data != nullptr && v.buffer(i).size > 0) total += v.buffer(i).size;
  }
  for (int64_t c = 0; c < v.n_children(); ++c) total += BufferBytes(v.child(c));
  if (v.dictionary() != nullptr) total += BufferBytes(*v.dictionary());
  return total;
}

int DemoFail(const char* step, const Status& st) {
  std::fprintf(stderr, "ferry demo: %s failed: %s\n", step, st.message().c_str());
  return 1;
}

// The table to each device this machine has and back, through ferry's device layer; the copy
// that comes back must validate fully and render exactly as the original.
int DeviceRoundTrips(const Array& table, int64_t bytes, std::vector<DemoRow>* rows) {
  ArrowDeviceArray host{};
  host.array = *table.array();
  host.array.release = [](ArrowArray* a) { a->release = nullptr; };  // borrowed: never released
  host.device_type = ARROW_DEVICE_CPU;
  host.device_id = -1;
  auto expected = ArrayToJson(table.view());
  if (!expected.ok()) return DemoFail("rendering the table", expected.status());
  struct Target {
    ArrowDeviceType type;
    const char* name;
  };
  for (Target t : {Target{ARROW_DEVICE_CUDA, "CUDA:0"}, Target{ARROW_DEVICE_OPENCL, "OPENCL:0"},
                   Target{ARROW_DEVICE_EXT_DEV, "guarded (EXT_DEV:0)"}}) {
    DemoRow row;
    row.step = std::string("CPU -> ") + t.name + " -> CPU";
    auto device = ResolveDevice(t.type, 0);
    if (!device.ok()) {
      row.result = "skipped: " + device.status().message();
      rows->push_back(std::move(row));
      continue;
    }
    auto start = Clock::now();
    auto view = DeviceArrayView::Make(table.schema());
    if (!view.ok()) return DemoFail("making a device array view", view.status());
    Status st = view->SetArray(&host);
    if (!st.ok()) return DemoFail("viewing the table", st);
    auto there = view->Copy(**device);
    if (!there.ok()) return DemoFail("copying to the device", there.status());
    st = view->SetArray(there->get());
    if (!st.ok()) return DemoFail("viewing the device copy", st);
    const int64_t round_trips = view->round_trips();
    auto back = view->Copy(*CpuDevice());
    if (!back.ok()) return DemoFail("copying back", back.status());
    row.seconds = Seconds(start);
    row.bytes = 2 * bytes;
    auto back_view = ArrayView::Make(table.schema());
    if (!back_view.ok()) return DemoFail("viewing the copy", back_view.status());
    st = back_view->SetArray(&(*back)->array);
    if (st.ok()) st = back_view->Validate(ValidationLevel::kFull);
    if (!st.ok()) return DemoFail("validating the copy", st);
    auto json = ArrayToJson(*back_view);
    if (!json.ok()) return DemoFail("rendering the copy", json.status());
    if (*json != *expected) {
      std::fprintf(stderr, "ferry demo: the copy back from %s differs from the table\n", t.name);
      return 1;
    }
    row.result = "identical (" + std::to_string(round_trips) + " round trip" +
                 (round_trips == 1 ? "" : "s") + " to learn sizes)";
    rows->push_back(std::move(row));
  }
  return 0;
}

// The table through the Arrow IPC stream format and back: written without gathering, read
// zero-copy (uncompressed) and decompressed (LZ4); both must render exactly as the original.
int IpcRoundTrips(const Array& table, int64_t table_bytes, std::vector<DemoRow>* rows) {
  auto expected = ArrayToJson(table.view());
  if (!expected.ok()) return DemoFail("rendering the table", expected.status());
  for (ipc::Compression codec : {ipc::Compression::kNone, ipc::Compression::kLz4Frame}) {
    auto start = Clock::now();
    ipc::MemorySink sink;
    ipc::WriteOptions options;
    options.compression = codec;
    auto writer = ipc::StreamWriter::Open(&sink, table.schema(), options);
    if (!writer.ok()) return DemoFail("opening the IPC writer", writer.status());
    Status st = writer->WriteBatch(table.array());
    if (st.ok()) st = writer->Close();
    if (!st.ok()) return DemoFail("writing IPC", st);
    const ipc::WriteStats stats = writer->stats();
    SharedBytes bytes = sink.Finish();
    ipc::Decoder decoder;
    st = decoder.Consume(bytes);
    if (!st.ok()) return DemoFail("reading IPC", st);
    std::optional<ipc::DecodedMessage> m;
    while ((m = decoder.Next()) && m->kind != ipc::MessageKind::kRecordBatch) {
    }
    if (!m) return DemoFail("reading IPC", Status::Invalid("no record batch came back"));
    DemoRow row;
    row.seconds = Seconds(start);
    row.bytes = table_bytes;
    row.step = std::string("IPC stream write + read, ") +
               (codec == ipc::Compression::kNone ? "uncompressed" : "LZ4_FRAME");
    auto view = ArrayView::Make(table.schema());
    if (!view.ok()) return DemoFail("viewing the IPC batch", view.status());
    st = view->SetArray(m->batch.get());
    if (!st.ok()) return DemoFail("viewing the IPC batch", st);
    auto json = ArrayToJson(*view);
    if (!json.ok() || *json != *expected) {
      std::fprintf(stderr, "ferry demo: the IPC round trip changed the table\n");
      return 1;
    }
    row.result = "identical (" + std::to_string(bytes.size) + " B stream; copied " +
                 std::to_string(stats.bytes_copied) + " B writing, " +
                 std::to_string(decoder.bytes_copied()) + " B reading)";
    rows->push_back(std::move(row));
  }
  return 0;
}

std::string Cell(const std::string& text) { return text.empty() ? "-" : text; }

void PrintSummary(const std::vector<DemoRow>& rows) {
  std::printf("\nsummary:\n%-46s %10s %24s %9s %11s  %s\n", "step", "data", "start-up (apart)",
              "time", "throughput", "result");
  for (const DemoRow& r : rows) {
    char data[32] = "-";
    char time[32] = "-";
    char rate[32] = "-";
    if (r.bytes >= 0) {
      std::snprintf(data, sizeof(data), "%.1f MiB", static_cast<double>(r.bytes) / (1 << 20));
    }
    if (r.seconds >= 0) std::snprintf(time, sizeof(time), "%.3f s", r.seconds);
    if (r.bytes >= 0 && r.seconds > 0) {
      std::snprintf(rate, sizeof(rate), "%.2f GB/s",
                    static_cast<double>(r.bytes) / r.seconds / 1e9);
    }
    std::printf("%-46s %10s %24s %9s %11s  %s\n", r.step.c_str(), data, Cell(r.startup).c_str(),
                time, rate, r.result.c_str());
  }
}

}  // namespace

int RunDemo(const DemoOptions& options) {
  auto start = Clock::now();
  auto schema = DemoSchema().Export();
  if (!schema.ok()) return DemoFail("building the schema", schema.status());
  auto builder = ArrayBuilder::Make(schema->get());
  if (!builder.ok()) return DemoFail("making the builder", builder.status());
  for (int64_t i = 0; i < options.rows; ++i) {
    Status st = AppendGenerated(builder->get(), i, 0);
    if (!st.ok()) return DemoFail("building row", st.WithContext("row " + std::to_string(i)));
  }
  auto built = (*builder)->Finish();
  if (!built.ok()) return DemoFail("finishing the table", built.status());
  const double build_s = Seconds(start);

  // Hand the table over as a producer would: two plain C structs, moved out of their owners.
  ArrowSchema c_schema;
  ArrowArray c_array;
  schema->move_to(&c_schema);
  built->move_to(&c_array);

  start = Clock::now();
  auto imported = Array::Import(&c_schema, &c_array);
  if (!imported.ok()) return DemoFail("importing through the C data interface", imported.status());
  const double import_s = Seconds(start);
  start = Clock::now();
  Status valid = imported->Validate(ValidationLevel::kFull);
  if (!valid.ok()) return DemoFail("full validation", valid);
  const double validate_s = Seconds(start);

  const ArrayView& table = imported->view();
  std::printf("ferry demo: %lld rows x %lld columns through the Arrow C data interface\n\n",
              static_cast<long long>(table.length()), static_cast<long long>(table.n_children()));
  std::printf("%-26s %-58s %10s %14s\n", "column", "type", "nulls", "bytes");
  int64_t total_bytes = 0;
  for (int64_t c = 0; c < table.n_children(); ++c) {
    const ArrayView& col = table.child(c);
    auto type = SchemaToString(col.type().schema);
    int64_t nulls = 0;
    for (int64_t i = 0; i < col.length(); ++i) nulls += col.IsNull(i) ? 1 : 0;
    const int64_t bytes = BufferBytes(col);
    total_bytes += bytes;
    std::string type_text = type.ok() ? *type : "?";
    if (type_text.size() > 58) type_text = type_text.substr(0, 55) + "...";
    std::printf("%-26s %-58s %10lld %14lld\n", std::string(col.name()).c_str(), type_text.c_str(),
                static_cast<long long>(nulls), static_cast<long long>(bytes));
  }
  std::printf("\ntotal: %.1f MiB in buffers\n", static_cast<double>(total_bytes) / (1 << 20));
  std::vector<DemoRow> rows;
  rows.push_back({"build the table (" + std::to_string(table.length()) + " rows)", total_bytes, "",
                  build_s, "OK"});
  rows.push_back({"import through the C data interface", -1, "", import_s, "zero-copy"});
  rows.push_back({"full validation", total_bytes, "", validate_s, "OK"});
  int rc = DeviceRoundTrips(*imported, total_bytes, &rows);
  if (rc == 0) rc = IpcRoundTrips(*imported, total_bytes, &rows);
  if (rc == 0) rc = ProcessTransfers(*imported, options, &rows);
  PrintSummary(rows);
  return rc;
}

}  // namespace ferry::cli
