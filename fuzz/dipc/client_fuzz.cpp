// libFuzzer target for the Dissociated IPC client: a peer that sends arbitrary metadata and
// tagged messages (after, when the first byte is even, a well-formed schema and batch), then
// hangs up. Properties: the client never crashes or leaks, every failure is an error, and every
// batch it delivers passed full validation.
#include <cstring>

#include "ferry/dipc/client.hpp"
#include "ferry/dipc/protocol.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/format/array.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/ipc/writer.hpp"
#include "ferry/transport/in_process.hpp"

namespace {

using namespace ferry;
using namespace ferry::dipc;
using namespace ferry::transport;

// A schema message and one batch (its metadata and packed body), as a real server writes them.
class Prelude final : public ipc::MessageSink {
 public:
  Status WriteMessage(const ipc::EncodedMessage& m) override {
    metadata.emplace_back(m.metadata.begin(), m.metadata.end());
    std::vector<uint8_t> body;
    for (const ByteSpan& p : m.body) {
      const auto* b = static_cast<const uint8_t*>(p.data);
      body.insert(body.end(), b, b + p.size);
    }
    bodies.push_back(std::move(body));
    return Status::OK();
  }
  Status WriteEndOfStream() override { return Status::OK(); }
  std::vector<std::vector<uint8_t>> metadata, bodies;
};

const Prelude& MakePrelude() {
  static const Prelude prelude = [] {
    Prelude p;
    Field root = Field::Make("+s", "", {Field::Make("l", "x"), Field::Make("u", "s")});
    root.flags = 0;
    auto schema = root.Export();
    auto batch = ArrayFromJson(schema->get(), R"([{"x": 1, "s": "a"}, {"x": null, "s": "bc"}])");
    auto writer = ipc::StreamWriter::Open(&p, schema->get());
    (void)writer->WriteBatch(batch->get());
    (void)writer->Close();
    return p;
  }();
  return prelude;
}

void SendMetadata(Connection& c, uint32_t seq, const std::vector<uint8_t>& fb) {
  uint8_t header[kMetadataHeaderSize];
  EncodeMetadataHeader(MetadataType::kIpcMessage, seq, header);
  const ByteSpan pieces[] = {{header, kMetadataHeaderSize},
                             {fb.data(), static_cast<int64_t>(fb.size())}};
  (void)c.Send(pieces);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [server, client] = MakeInProcessPair();
  size_t at = 0;
  uint32_t seq = 0;
  if (size > 0 && data[0] % 2 == 0) {
    const Prelude& p = MakePrelude();
    SendMetadata(*server, seq++, p.metadata[0]);
    SendMetadata(*server, seq, p.metadata[1]);
    const ByteSpan body{p.bodies[1].data(), static_cast<int64_t>(p.bodies[1].size())};
    (void)server->SendTagged(MakeBodyTag(BodyType::kPacked, seq++), {&body, 1});
  }
  if (size > 0) ++at;
  // Records: a kind byte (even: metadata, odd: tagged with an 8-byte tag), a 2-byte length, bytes.
  while (at + 3 <= size) {
    const bool tagged = data[at] % 2 == 1;
    uint64_t tag = 0;
    ++at;
    if (tagged) {
      if (at + 8 > size) break;
      std::memcpy(&tag, data + at, 8);
      at += 8;
    }
    if (at + 2 > size) break;
    size_t n = data[at] | (size_t{data[at + 1]} << 8);
    at += 2;
    n = std::min(n, size - at);
    const ByteSpan piece{data + at, static_cast<int64_t>(n)};
    (void)(tagged ? server->SendTagged(tag, {&piece, 1}) : server->Send({&piece, 1}));
    at += n;
  }
  server->Close();

  Uri uri;
  uri.scheme = "inproc";
  uri.want_data = kDefaultWantDataTag;
  ClientOptions options;
  options.timeout = std::chrono::milliseconds(1);
  auto stream = ConnectStream(std::move(client), uri, "t", options);
  if (!stream.ok()) return 0;
  ArrowDeviceArrayStream* s = stream->get();
  UniqueSchema schema;
  if (s->get_schema(s, schema.get()) != 0) __builtin_trap();  // it arrived before Connect returned
  for (int i = 0; i < 64; ++i) {
    UniqueDeviceArray a;
    if (s->get_next(s, a.get()) != 0) {
      if (s->get_last_error(s) == nullptr) __builtin_trap();  // a failure always says why
      break;
    }
    if (!a.valid()) break;
    // What is delivered was fully validated: it must render.
    auto view = ArrayView::Make(schema.get());
    if (!view.ok() || !view->SetArray(&a->array).ok() || !ArrayToJson(*view).ok()) __builtin_trap();
  }
  return 0;
}
