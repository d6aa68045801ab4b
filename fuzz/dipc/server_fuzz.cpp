// libFuzzer target for the Dissociated IPC server's state machine: a client that sends arbitrary
// sequences of requests over an in-process connection (want_data under any tag and ticket,
// free_data for addresses never lent, already freed or lent, lying lengths, untagged messages
// the protocol does not define for clients) while it reads what the server sends. Properties:
// the server never crashes or leaks, keeps the memory in flight within its region, and serves a
// well-behaved client correctly after each hostile one.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "ferry/dipc/client.hpp"
#include "ferry/dipc/protocol.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/format/array.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/transport/in_process.hpp"

namespace {

using namespace ferry;
using namespace ferry::dipc;
using namespace ferry::transport;
using namespace std::chrono_literals;

constexpr int64_t kRegion = 1 << 20;

// One server for the whole run: type-1 bodies into a 1 MiB region, short timeouts.
Server& TheServer() {
  static Server* server = [] {
    ServerOptions o;
    o.transport = "shm";
    o.body_type = BodyType::kBufferList;
    o.region_bytes = kRegion;
    o.timeout = 50ms;
    auto s = Server::Start(o);
    if (!s.ok()) std::abort();
    Field root = Field::Make("+s", "", {Field::Make("l", "x"), Field::Make("u", "s")});
    root.flags = 0;
    auto schema = root.Export();
    std::vector<UniqueDeviceArray> batches;
    for (int b = 0; b < 3; ++b) {
      auto batch = ArrayFromJson(schema->get(), R"([{"x": 1, "s": "a"}, {"x": null, "s": "bc"}])");
      UniqueDeviceArray d;
      batch->move_to(&d->array);
      d->device_type = ARROW_DEVICE_CPU;
      d->device_id = -1;
      batches.push_back(std::move(d));
    }
    auto dataset = Dataset::FromBatches(std::move(*schema), std::move(batches));
    (*s)->Add("t", *dataset);
    return s->release();
  }();
  return *server;
}

uint64_t Read64(const uint8_t* data, size_t size, size_t* at) {
  uint64_t v = 0;
  const size_t n = std::min<size_t>(8, size - *at);
  std::memcpy(&v, data + *at, n);
  *at += n;
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Server& server = TheServer();
  auto [server_end, client] = MakeInProcessPair();
  server.Serve(std::move(server_end));
  const uint64_t want = server.uri().want_data;
  std::vector<uint64_t> lent;  // addresses seen in type-1 bodies
  size_t at = 0;
  // Records: a kind byte, then its fields.
  while (at < size) {
    const uint8_t kind = data[at++];
    switch (kind % 6) {
      case 0: {  // want_data with a fuzzed tag offset and a short ticket
        const uint64_t tag = want + (at < size ? data[at++] % 8 : 0);
        const bool good = at < size && data[at++] % 2 == 0;
        const std::string ticket = good ? "t"
                                        : std::string(reinterpret_cast<const char*>(data + at),
                                                      std::min<size_t>(size - at, 8));
        const ByteSpan piece{ticket.data(), static_cast<int64_t>(ticket.size())};
        (void)client->SendTagged(tag, {&piece, 1});
        break;
      }
      case 1: {  // free_data for an arbitrary address, or one lent (maybe twice)
        uint64_t address = Read64(data, size, &at);
        if (!lent.empty() && address % 2 == 0) address = lent[address / 2 % lent.size()];
        const std::vector<uint8_t> body = EncodeFreeData(std::span<const uint64_t>(&address, 1));
        const ByteSpan piece{body.data(), static_cast<int64_t>(body.size())};
        (void)client->SendTagged(kDefaultFreeDataTag, {&piece, 1});
        break;
      }
      case 2: {  // a malformed free_data body (not a multiple of 8 bytes)
        const size_t n = std::min<size_t>(size - at, 7);
        const ByteSpan piece{data + at, static_cast<int64_t>(n)};
        at += n;
        (void)client->SendTagged(kDefaultFreeDataTag, {&piece, 1});
        break;
      }
      case 3: {  // an untagged message, which clients never send
        const size_t n = std::min<size_t>(size - at, 16);
        const ByteSpan piece{data + at, static_cast<int64_t>(n)};
        at += n;
        (void)client->Send({&piece, 1});
        break;
      }
      case 4: {  // read what has come: bodies teach us the addresses lent
        while (true) {
          Result<TaggedMessage> m = client->ReceiveTagged(0, 0, 1ms);
          if (!m.ok()) break;
          Result<BodyTag> tag = ParseBodyTag(m->tag);
          if (!tag.ok() || tag->type != BodyType::kBufferList) continue;
          Result<BufferList> list = ParseBufferList(m->payload);
          if (!list.ok()) std::abort();  // the server must send well-formed lists
          for (const BufferRef& b : list->buffers) lent.push_back(b.address);
        }
        while (client->Receive(0ms).ok()) {
        }
        break;
      }
      default:  // a tagged message under an arbitrary tag
        (void)client->SendTagged(Read64(data, size, &at), {});
        break;
    }
  }
  client->Close();
  if (server.stats().bytes_in_flight > kRegion) std::abort();
  // A well-behaved client is served whole after the hostile one.
  if (data != nullptr && size > 0 && data[0] == 0xAB) {
    // The server's 50 ms timeout is short so that hostile inputs run fast; a loaded machine can
    // stall this process longer than that (one CI run in many). A server that cannot serve a
    // good client fails every try; a stall spoils one.
    Status last;
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto [good_server, good] = MakeInProcessPair();
      server.Serve(std::move(good_server));
      auto stream = ConnectStream(std::move(good), server.uri(), "t");
      last = stream.status();
      if (last.ok()) break;
    }
    if (!last.ok()) {
      std::fprintf(stderr, "a well-behaved client was not served: %s\n", last.ToString().c_str());
      std::abort();
    }
  }
  return 0;
}
