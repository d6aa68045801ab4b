// `ferry serve`'s settings table (serve_keys.hpp).
#include "serve_keys.hpp"

#include "ferry/dipc/protocol.hpp"
#include "parses.hpp"

namespace ferry::cli {

namespace {

// A number above 0 (`above` false: at least 0), with a message naming the bound. CLI11's own
// checks name the largest double as the upper end of their range.
CLI::Validator Bound(bool above) {
  return CLI::Validator(
      [above](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return text + " is not a number";
        if (above ? value > 0 : value >= 0) return std::string();
        return text + (above ? " is not above 0" : " is below 0");
      },
      above ? "POSITIVE" : "NONNEGATIVE");
}

}  // namespace

const std::vector<Key>& ServeKeys() {
  using O = ServeOptions;
  // Built on the first call, as the table is: CLI11 may throw while making them.
  static const CLI::Validator kPositive = Bound(true);
  static const CLI::Validator kNonNegative = Bound(false);
  // One setting a row, as clang-format would not keep them.
  // clang-format off
  static const std::vector<Key> keys = {
      {"datasets", "datasets", Kind::kDatasets, &O::datasets, {},
       "NAME=FILE (IPC stream or file), repeated (with --flight, none is fine: clients upload "
       "with DoPut). With --flight, FILE may be a directory or a pattern (NAME='part-*.arrows'): "
       "one flight, one endpoint per file, in name order. In a config file, the [datasets] "
       "table: NAME = \"FILE\", re-read on SIGHUP"},
      {"flight.listen", "--flight", Kind::kString, &O::flight, {},
       "Also serve Arrow Flight (gRPC) on HOST:PORT (port 0: a free one; the first line printed "
       "is the grpc:// URI): every dataset is a flight whose locations are the shm and ucx "
       "planes, then DoGet on this server, with one ticket"},
      {"flight.partition_bytes", "--partition-bytes", Kind::kBytes, &O::partition_bytes,
       {kNonNegative},
       "With --flight: cut each file into endpoints of whole batches of at most this many body "
       "bytes (a suffix such as MiB may follow the number; 0: one endpoint per file)"},
      {"flight.max_upload_bytes", "--max-upload-bytes", Kind::kBytes, &O::max_upload_bytes,
       {kPositive},
       "With --flight: the most bytes one DoPut may upload (a suffix such as GiB may follow the "
       "number; beyond it nothing is stored)"},
      {"flight.ticket_ttl", "--ticket-ttl", Kind::kSeconds, &O::ticket_ttl_s,
       {kPositive}, "With --flight: seconds a ticket from GetFlightInfo stays valid"},
      {"planes.transport", "--transport", Kind::kString, &O::transport,
       {CLI::IsMember({"shm", "ucx", "grpc"})},
       "shm (one host, the default) or ucx (TCP, any host); with --flight, the one fast plane "
       "to serve beside gRPC (default both), or grpc for none"},
      {"planes.listen", "--listen", Kind::kString, &O::listen, {},
       "Where to listen: a socket path or @name (shm), host:port (ucx); default: a fresh one "
       "(ucx: on 127.0.0.1)"},
      {"planes.ucx_listen", "--ucx-listen", Kind::kString, &O::ucx_listen, {},
       "With --flight: where the UCX plane listens (default: the --flight host, a free port); "
       "give the address clients reach when --flight is 0.0.0.0"},
      {"planes.body_type", "--body-type", Kind::kString, &O::body_type,
       {Parses(dipc::ParseBodyType)},
       "list: (address, length) pairs the client reads (type 1; a ferry client whose reads UCX "
       "would emulate gets packed bodies unless it asks for lists); packed: whole bodies (type "
       "0)"},
      {"planes.region_bytes", "--region-bytes", Kind::kBytes, &O::region_bytes,
       {CLI::Range(int64_t{1} << 20, int64_t{1} << 40)},
       "The shared region's size in bytes (a suffix such as MiB or GiB may follow the number): "
       "the most body bytes in flight, all clients together"},
      {"planes.keep", "--keep", Kind::kBool, &O::keep, {},
       "Write each dataset's bodies into memory of its own once, at start, and serve every "
       "client from it (memory: the datasets' size). Without it, --body-type list lends each "
       "file's own pages (no copy, no memory of its own) and --body-type packed sends a file's "
       "bodies from its pages where they lie as sent"},
      {"planes.device", "--device", Kind::kString, &O::device, {},
       "cuda:N: write each dataset's bodies into that GPU's memory once, at start, and lend "
       "them to clients on this host by CUDA IPC handle (the printed URI; they read with "
       "--device cuda:N); the host URI, printed on stderr, serves the rest. Needs --body-type "
       "list; not with --flight"},
      {"planes.timeout", "--timeout", Kind::kSeconds, &O::timeout_s, {kPositive},
       "Seconds the server waits on a client (its request, its frees, each send)"},
      {"planes.max_clients", "--max-clients", Kind::kInt, &O::max_clients, {kPositive},
       "The most clients served at once"},
      {"auth.token_file", "--token-file", Kind::kPath, &O::token_file, {},
       "A file holding the token (else FERRY_TOKEN): with a token only tickets the server "
       "issued are honoured"},
      {"auth.insecure", "--insecure", Kind::kBool, &O::insecure, {},
       "Listen beyond loopback without a token (anyone who reaches the port may read every "
       "dataset, and over UCX the server's memory); for a UCX or Flight listener"},
      {"tls.cert", "--tls-cert", Kind::kPath, &O::tls_cert, {},
       "With --flight: serve grpc+tls with this PEM certificate"},
      {"tls.key", "--tls-key", Kind::kPath, &O::tls_key, {},
       "With --flight: the certificate's PEM private key"},
      {"tls.client_ca", "--tls-client-ca", Kind::kPath, &O::tls_client_ca, {},
       "With --flight: require client certificates signed by this PEM CA"},
      {"federation.peers", "--peer", Kind::kStrings, &O::peers, {},
       "With --flight: another Flight server (grpc:// or grpc+tls:// URI, repeatable) whose "
       "flights this one lists and describes with its own: a flight of the same name on several "
       "servers is one FlightInfo with every server's endpoints"},
      {"federation.peers_file", "--peers-file", Kind::kPath, &O::peers_file, {},
       "With --flight: a file of peer URIs, one a line ('#' starts a comment)"},
      {"federation.timeout", "--peer-timeout", Kind::kSeconds, &O::peer_timeout_s,
       {kPositive},
       "With --peer: seconds a peer may take to answer; past it the call fails with "
       "UNAVAILABLE naming the peer"},
      {"federation.allow_partial", "--allow-partial", Kind::kBool, &O::allow_partial, {},
       "With --peer: answer without a peer that does not answer, naming it in the FlightInfo's "
       "app_metadata"},
      {"federation.tls_roots", "--peer-tls-roots", Kind::kPath, &O::peer_tls_roots, {},
       "With --peer: PEM certificates to trust for grpc+tls:// peers (default: the system's)"},
      {"log.verbose", "-v,--verbose", Kind::kBool, &O::verbose, {},
       "Log refused requests and client faults"},
      {"log.print_ticket", "--print-ticket", Kind::kBool, &O::print_ticket, {},
       "Print an issued ticket after each URI (NAME URI TICKET), for scripts; not with "
       "--flight, whose tickets come from GetFlightInfo"},
      {"log.format", "--log-format", Kind::kString, &O::log_format,
       {CLI::IsMember({"text", "json"})},
       "text: lines on stderr (the servers' with -v); json: every record (calls, sessions, "
       "refusals) as one JSON object a line on stderr, with time, level, event, message, "
       "session, peer, plane, trace_id and span_id"},
      {"drain.timeout", "--drain-timeout", Kind::kSeconds, &O::drain_timeout_s, {kNonNegative},
       "With --flight: seconds a drain (SIGTERM, or `ferry status --drain`) lets the calls and "
       "sessions in progress run before the process exits 0 (a second SIGTERM exits at once; "
       "SIGINT stops without a drain)"},
      {"metrics.listen", "--metrics", Kind::kString, &O::metrics, {},
       "Serve Prometheus metrics on http://HOST:PORT/metrics (port 0: a free one, printed on "
       "stderr): the Flight server's, or without --flight the server's one plane"},
  };
  // clang-format on
  return keys;
}

}  // namespace ferry::cli
