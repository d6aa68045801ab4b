// ferry's UCX transport alone, with no Arrow and no Dissociated IPC: one stream of tagged
// messages from a server to a client, as `ferry get` moves a dataset's bodies, so that a gap
// between `ferry get` and `ucx_perftest -t tag_bw` splits into the transport's part and the
// protocol's. bench/cluster/cluster_bench.py runs it between two network namespaces.
//
//   ferry_ucx_stream serve HOST:PORT SIZE COUNT [PLACES]
//       Prints its listener's address, then serves each client that connects, one at a time,
//       until killed: COUNT messages of SIZE bytes, message i tagged i + 1 and sent from place
//       i mod PLACES in memory of PLACES x SIZE bytes written once. PLACES defaults to COUNT:
//       each byte from its own place, as a kept dataset's server sends, none from a buffer that
//       stays in cache. PLACES 1 sends every message from one buffer, as `ucx_perftest` does.
//   ferry_ucx_stream get ADDRESS SIZE COUNT
//       Connects, receives the COUNT messages (each checked for its tag and size) and prints one
//       JSON line: the bytes and the seconds from the connection to the last byte, as `ferry get`
//       reports its rate after connecting.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ferry/transport/ucx.hpp"

namespace ferry::bench {
namespace {

using namespace std::chrono_literals;

constexpr auto kTimeout = 30s;

int Usage() {
  std::fprintf(stderr,
               "usage: ferry_ucx_stream serve HOST:PORT SIZE COUNT [PLACES]\n"
               "       ferry_ucx_stream get ADDRESS SIZE COUNT\n");
  return 2;
}

int Failed(const std::string& doing, const Status& st) {
  std::fprintf(stderr, "ferry_ucx_stream: %s: %s\n", doing.c_str(), st.ToString().c_str());
  return 1;
}

int Serve(const std::string& address, int64_t size, int64_t count, int64_t places) {
  Result<std::unique_ptr<transport::Listener>> listener = transport::ListenUcx(address);
  if (!listener.ok()) return Failed("listening on " + address, listener.status());
  // Written once before the first client, so no send maps fresh pages.
  std::vector<uint8_t> data(static_cast<size_t>(size * places));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131);
  std::printf("%s\n", (*listener)->address().c_str());
  std::fflush(stdout);
  for (;;) {
    Result<std::unique_ptr<transport::Connection>> conn = (*listener)->Accept(3600s);
    if (!conn.ok()) return Failed("accepting", conn.status());
    Status st;
    for (int64_t i = 0; i < count && st.ok(); ++i) {
      const ByteSpan piece{data.data() + (i % places) * size, size};
      st = (*conn)->SendTagged(static_cast<uint64_t>(i + 1), {&piece, 1});
    }
    if (st.ok()) st = (*conn)->Flush();
    if (!st.ok()) {
      std::fprintf(stderr, "ferry_ucx_stream: a client's stream failed: %s\n",
                   st.ToString().c_str());
    } else {
      (void)(*conn)->Receive(kTimeout);  // the client's word that it has every byte
    }
    (*conn)->Close();
  }
}

int Get(const std::string& address, int64_t size, int64_t count) {
  transport::ConnectOptions options;
  options.limits.timeout = kTimeout;
  const auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<transport::Connection>> conn = transport::ConnectUcx(address, options);
  if (!conn.ok()) return Failed("connecting to " + address, conn.status());
  const auto connected = std::chrono::steady_clock::now();
  int64_t bytes = 0;
  for (int64_t i = 0; i < count; ++i) {
    Result<transport::TaggedMessage> m = (*conn)->ReceiveTagged(0, 0, kTimeout);
    if (!m.ok()) return Failed("receiving message " + std::to_string(i), m.status());
    if (m->tag != static_cast<uint64_t>(i + 1) || m->payload.size != size) {
      std::fprintf(stderr, "ferry_ucx_stream: message %lld came tagged %llu with %lld bytes\n",
                   static_cast<long long>(i), static_cast<unsigned long long>(m->tag),
                   static_cast<long long>(m->payload.size));
      return 1;
    }
    bytes += m->payload.size;
  }
  const auto end = std::chrono::steady_clock::now();
  const uint8_t done = 1;
  const ByteSpan word{&done, 1};
  (void)(*conn)->Send({&word, 1});
  (*conn)->Close();
  const double seconds = std::chrono::duration<double>(end - connected).count();
  std::printf(
      "{\"bytes\": %lld, \"seconds\": %.6f, \"connect_seconds\": %.6f, \"mb_per_s\": %.1f}\n",
      static_cast<long long>(bytes), seconds,
      std::chrono::duration<double>(connected - start).count(), bytes / seconds / 1e6);
  return 0;
}

}  // namespace
}  // namespace ferry::bench

int main(int argc, char** argv) {
  if (argc != 5 && !(argc == 6 && std::string(argv[1]) == "serve")) {
    return ferry::bench::Usage();
  }
  const std::string mode = argv[1];
  const int64_t size = std::atoll(argv[3]);
  const int64_t count = std::atoll(argv[4]);
  const int64_t places = argc == 6 ? std::atoll(argv[5]) : count;
  if (size <= 0 || count <= 0 || places <= 0 || places > count) return ferry::bench::Usage();
  if (!ferry::transport::UcxAvailable()) {
    std::fprintf(stderr, "ferry_ucx_stream: this build of ferry has no UCX transport\n");
    return 1;
  }
  if (mode == "serve") return ferry::bench::Serve(argv[2], size, count, places);
  if (mode == "get") return ferry::bench::Get(argv[2], size, count);
  return ferry::bench::Usage();
}
