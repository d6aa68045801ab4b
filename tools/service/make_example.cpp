// Writes the example dataset the ferry-tools package serves (/usr/share/ferry/example.arrows):
// a small weather table, one IPC stream. Run at build time; not installed.
#include <cstdio>

#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/ipc/sink.hpp"
#include "ferry/ipc/writer.hpp"

namespace {

constexpr const char* kRows = R"([
  {"city": "Oslo", "day": 1, "low": -4.5, "high": 1.0},
  {"city": "Oslo", "day": 2, "low": -3.0, "high": 2.5},
  {"city": "Lima", "day": 1, "low": 17.0, "high": 24.5},
  {"city": "Lima", "day": 2, "low": 16.5, "high": 25.0},
  {"city": "Kyiv", "day": 1, "low": 2.0, "high": 9.5},
  {"city": "Kyiv", "day": 2, "low": null, "high": 11.0}
])";

ferry::Status Write(const std::string& path) {
  const ferry::Field table =
      ferry::Field::Make("+s", "",
                         {ferry::Field::Make("u", "city"), ferry::Field::Make("i", "day"),
                          ferry::Field::Make("g", "low"), ferry::Field::Make("g", "high")});
  FERRY_ASSIGN_OR_RAISE(ferry::UniqueSchema schema, table.Export());
  FERRY_ASSIGN_OR_RAISE(ferry::UniqueArray batch, ferry::ArrayFromJson(schema.get(), kRows));
  FERRY_ASSIGN_OR_RAISE(std::unique_ptr<ferry::ipc::FileSink> sink,
                        ferry::ipc::FileSink::Open(path));
  FERRY_ASSIGN_OR_RAISE(ferry::ipc::StreamWriter writer,
                        ferry::ipc::StreamWriter::Open(sink.get(), schema.get()));
  FERRY_RETURN_NOT_OK(writer.WriteBatch(batch.get()));
  FERRY_RETURN_NOT_OK(writer.Close());
  return sink->Close();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_example OUT.arrows\n");
    return 2;
  }
  const ferry::Status st = Write(argv[1]);
  if (!st.ok()) {
    std::fprintf(stderr, "make_example: %s: %s\n", argv[1], st.message().c_str());
    return 1;
  }
  return 0;
}
