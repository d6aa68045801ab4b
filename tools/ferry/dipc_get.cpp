// `ferry get`: a dataset read from a Dissociated IPC server, into an IPC file or counted, with
// progress on a terminal and a summary line.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "batch_writer.hpp"
#include "dipc_commands.hpp"
#include "ferry/core/stream_adapter.hpp"
#include "ferry/core/trace.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/format/array_bytes.hpp"
#include "ferry/ipc/writer.hpp"
#include "output_file.hpp"
#include "parses.hpp"

namespace ferry::cli {

namespace {

// `ferry get --to`'s partial file where there is no O_TMPFILE, removed if a signal ends the
// process mid-stream.
char g_partial[4096] = {};
void OnGetSignal(int sig) {
  if (g_partial[0] != '\0') unlink(g_partial);
  _exit(128 + sig);
}

// What sizes each batch as its layout implies (visible slice and offsets included), made once
// from the stream's schema (not per batch: making one costs more than a small batch's reading):
// a host batch by its schema's plan (ArrayBytes, which allocates nothing), one on a device
// through a view, which reads each last offset where it lies.
struct BatchSizer {
  Result<ArrayBytes> host;
  Result<DeviceArrayView> device;

  int64_t Of(const ArrowDeviceArray* batch) {
    if (batch->device_type == ARROW_DEVICE_CPU || batch->device_type == ARROW_DEVICE_CUDA_HOST) {
      if (!host.ok()) return 0;
      Result<int64_t> bytes = host->Of(&batch->array);
      return bytes.ok() ? *bytes : 0;
    }
    if (!device.ok() || !device->SetArray(batch).ok()) return 0;
    return ViewBytes(device->array_view());
  }
};

// --columns as a Dissociated IPC read takes them: field indices, increasing, each once. A name
// is refused: the projection is fixed before the schema arrives, so nothing could resolve it.
Result<std::vector<int32_t>> ColumnIndicesOf(const std::vector<std::string>& columns) {
  std::vector<int32_t> out;
  for (const std::string& c : columns) {
    if (c.empty() || c.size() > 9 || c.find_first_not_of("0123456789") != std::string::npos) {
      return Status::Invalid("\"" + c +
                             "\" is not a column index: a Dissociated IPC read takes indices "
                             "(0 is the first column); names need a grpc:// URI and --path, "
                             "whose FlightInfo carries the schema");
    }
    out.push_back(static_cast<int32_t>(std::stol(c)));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Refuse, by name, what a Dissociated IPC read would ignore: a Flight client's options, and
// --buffer-lists where the bodies come over shared memory (only a UCX server sends a client
// packed bodies in place of lists).
int RefuseIgnoredOptions(const GetOptions& o, const std::string& bodies_scheme) {
  const std::string flight = ": it needs a grpc:// URI";
  if (const int rc = RefuseGiven(
          o.given,
          {{"--path", "names a flight" + flight + " (a Dissociated IPC URI takes --ticket)"},
           {"--via", "chooses among a flight's locations" + flight},
           {"--parallel", "reads a flight's endpoints at once" + flight},
           {"--grpc-below", "chooses among a flight's locations" + flight},
           {"--token-file", "authenticates to an Arrow Flight server" + flight +
                                " (a Dissociated IPC server with a token honours the tickets it "
                                "issued: pass one to --ticket)"},
           {"--tls-roots", "trusts a grpc+tls:// server" + flight}});
      rc != 0) {
    return rc;
  }
  if (bodies_scheme != "shm") return 0;
  return RefuseGiven(o.given, {{"--buffer-lists",
                                "asks a UCX server for buffer lists where it would send packed "
                                "bodies, and over shm:// a server of type-1 bodies always lends "
                                "them"}});
}

}  // namespace

CLI::App* AddGetCommand(CLI::App& app, GetOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "get", "Read a dataset from a ferry server; progress on a terminal, a summary at the end.");
  cmd->add_option("uri", o->uri,
                  "The URI `ferry serve` printed: a Dissociated IPC URI (shm://, ucx://; the "
                  "metadata URI with --data-uri), or a Flight server's grpc:// or grpc+tls://")
      ->required();
  cmd->add_option("--ticket", o->ticket,
                  "The dataset's name, or the ticket the server issued (needed with a "
                  "Dissociated IPC URI; with a grpc:// URI, a ticket to redeem with DoGet)");
  cmd->add_option("--data-uri", o->data_uri,
                  "The split shape's data URI (`ferry serve` prints it on stderr): metadata "
                  "and bodies from separate servers");
  cmd->add_option("--to", o->to,
                  "Write the batches to this IPC stream file, whole or not at all: written to an "
                  "unnamed file in its directory (O_TMPFILE) and linked into place at the end, so "
                  "that even SIGKILL leaves nothing (without O_TMPFILE: a hidden .partial file "
                  "renamed at the end); a FIFO or device is written in place (standard output too: "
                  "the summary then goes to stderr)");
  cmd->add_flag("--force", o->force, "Replace the --to file if it exists");
  cmd->add_option("--device", o->device,
                  "Where batches land: cpu, opencl:N, cuda:N, cuda_host:N, cuda_managed:N")
      ->capture_default_str();
  cmd->add_option("--validation", o->validation,
                  "Checks on what arrives: none, minimal, default or full")
      ->check(Parses(ParseValidation))
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s,
                  "Seconds the server may stay silent (a stopped server) before the read fails")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--connect-timeout", o->connect_timeout_s,
                  "Seconds to keep trying while nothing listens at the URI (a server still "
                  "starting) before failing; at most --timeout. Over UCX a refusal fails at "
                  "once, and an endpoint wiring up waits up to --timeout unless this is given")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-body-bytes", o->max_body_bytes,
                  "The largest message body (a batch's or a dictionary's, in bytes; a suffix such "
                  "as MiB or GiB may follow the number) the server may make this client allocate")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--buffer-lists", o->buffer_lists,
                "Ask a ferry server over UCX to lend buffer lists (type 1) where it would send "
                "packed bodies, since UCX would emulate this client's reads (TCP, or one host "
                "before UCX 1.16); --columns implies it");
  cmd->add_option("--spin", o->spin_us,
                  "Microseconds a read over shm:// or ucx:// watches for the next batch on the CPU "
                  "before it sleeps: a batch that comes within it is taken without a wake-up; 0 "
                  "sleeps at once")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--window", o->window,
                  "Batches a ferry server (shm://, or ucx:// with ferry=1) may send past those "
                  "this client has read; -1: as far as its region allows, but 256 over ucx:// with "
                  "ferry=1; 0: one at a time")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{-1}, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--columns", o->columns,
                  "Read only these columns, comma-separated, in the schema's order: indices (0 is "
                  "the first), or with --path names too; only their buffers are fetched from "
                  "type-1 bodies")
      ->delimiter(',');
  cmd->add_option("--traceparent", o->traceparent,
                  "A W3C traceparent (00-TRACEID-PARENTID-FLAGS) that the servers' JSON logs "
                  "record: sent on Flight calls and in the hello of shm:// and ucx:// sessions")
      ->check(Parses(+[](std::string_view text) { return ParseTraceparent(text); }));
  cmd->add_flag("!--no-progress", o->progress, "Do not draw the progress bar");
  return cmd;
}

int RunGet(const GetOptions& o) {
  if (o.ticket.empty()) {
    return Fail(o.uri, Status::Invalid("a Dissociated IPC URI needs --ticket (a grpc:// URI "
                                       "takes --path)"));
  }
  Result<dipc::Uri> uri = dipc::Uri::Parse(o.uri);
  if (!uri.ok()) return Fail(o.uri, uri.status());
  Result<Device*> device = ParseDevice(o.device);
  if (!device.ok()) return Fail("--device", device.status());
  dipc::ClientOptions options;
  options.device = *device;
  options.timeout = Millis(o.timeout_s);
  // Over UCX a refusal fails at once, and an endpoint still wiring up waits on its peer: a
  // loaded host takes seconds to wire one up (UCX 1.22 sets up its transports as it does), so
  // unless told otherwise that wait has the whole --timeout, as a silent server's first message
  // has over shared memory.
  if (uri->scheme != "ucx" || o.given.count("--connect-timeout") != 0) {
    options.connect_timeout = Millis(std::min(o.connect_timeout_s, o.timeout_s));
  }
  options.max_body_bytes = o.max_body_bytes;
  options.buffer_lists = o.buffer_lists;
  options.spin = std::chrono::microseconds(o.spin_us);
  options.window = o.window;
  options.traceparent = o.traceparent;
  if (!o.columns.empty()) {
    // An index past the schema's last column fails the connect, naming both.
    Result<std::vector<int32_t>> columns = ColumnIndicesOf(o.columns);
    if (!columns.ok()) return Fail("--columns", columns.status());
    options.read.columns = std::move(*columns);
  }
  Result<ValidationLevel> validation = ParseValidation(o.validation);
  if (!validation.ok()) return Fail("--validation", validation.status());
  options.read.validation = *validation;
  const auto start = std::chrono::steady_clock::now();
  std::optional<dipc::Uri> data;
  if (!o.data_uri.empty()) {
    Result<dipc::Uri> parsed = dipc::Uri::Parse(o.data_uri);
    if (!parsed.ok()) return Fail("--data-uri " + o.data_uri, parsed.status());
    data = std::move(*parsed);
  }
  if (const int rc = RefuseIgnoredOptions(o, data ? data->scheme : uri->scheme); rc != 0) {
    return rc;
  }
  // Refused before connecting: an existing regular file needs --force (a FIFO or a device is
  // written in place).
  if (struct stat st{};
      !o.to.empty() && !o.force && stat(o.to.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    return Fail(o.to, Status::AlreadyExists("the file exists (--force replaces it)"));
  }
  Result<UniqueDeviceArrayStream> stream = data
                                               ? dipc::ConnectStream(*uri, *data, o.ticket, options)
                                               : dipc::ConnectStream(*uri, o.ticket, options);
  if (!stream.ok()) return Fail(o.uri, stream.status());
  return Drain(stream->get(), o, o.ticket, o.uri, start);
}

int Drain(ArrowDeviceArrayStream* s, const GetOptions& o, const std::string& label,
          const std::string& peer, std::chrono::steady_clock::time_point start) {
  // The connection is up (transport, endpoint, ticket): what follows is the transfer.
  const auto connected = std::chrono::steady_clock::now();
  // A pipe, a FIFO or a device (/dev/stdout) is written in place: it cannot be renamed into and
  // a reader may already wait on it. Only a regular file (or a new path) is written atomically:
  // through an unnamed file linked into place at the end (output_file.hpp).
  std::string direct;
  struct stat info {};
  const bool exists = !o.to.empty() && stat(o.to.c_str(), &info) == 0;
  // Where the stream goes to this process's standard output (`--to /dev/stdout`, a pipe), the
  // summary goes to stderr: after the stream's end it would be bytes no stream has.
  struct stat out {};
  const bool to_stdout = exists && fstat(STDOUT_FILENO, &out) == 0 && out.st_dev == info.st_dev &&
                         out.st_ino == info.st_ino;
  std::FILE* summary = to_stdout ? stderr : stdout;
  std::unique_ptr<OutputFile> file;
  if (exists && !S_ISREG(info.st_mode)) {
    direct = o.to;
  } else if (!o.to.empty()) {
    if (!o.force && exists) {
      return Fail(o.to, Status::AlreadyExists("the file exists (--force replaces it)"));
    }
    Result<std::unique_ptr<OutputFile>> made = OutputFile::Create(o.to, exists);
    if (!made.ok()) return Fail(o.to, made.status());
    file = std::move(*made);
    // Where the filesystem has no O_TMPFILE: a named file, removed if a signal ends the read.
    const std::string& partial = file->partial();
    if (partial.size() >= sizeof(g_partial)) return Fail(o.to, Status::Invalid("path too long"));
    if (!partial.empty()) {
      std::memcpy(g_partial, partial.c_str(), partial.size() + 1);
      std::signal(SIGINT, OnGetSignal);
      std::signal(SIGTERM, OnGetSignal);
    }
  }
  // Whatever ends the read early leaves no file behind (the OutputFile's destructor).
  struct Cleanup {
    ~Cleanup() { g_partial[0] = '\0'; }
  } cleanup;
  UniqueSchema schema;
  if (const Status st = StreamGetSchema(s, schema.get()); !st.ok()) return Fail(peer, st);
  std::unique_ptr<ipc::FileSink> direct_sink;
  std::optional<ipc::StreamWriter> writer;
  if (file != nullptr || !direct.empty()) {
    ipc::FileSink* sink = nullptr;
    if (file != nullptr) {
      sink = file->sink();
    } else {
      Result<std::unique_ptr<ipc::FileSink>> f = ipc::FileSink::Open(direct);
      if (!f.ok()) return Fail(o.to, f.status());
      direct_sink = std::move(*f);
      sink = direct_sink.get();
    }
    Result<ipc::StreamWriter> w = ipc::StreamWriter::Open(sink, schema.get());
    if (!w.ok()) return Fail(o.to, w.status());
    writer.emplace(std::move(*w));
  }
  // The reader checked each batch at --validation: at default or above, the writer need not again.
  Result<ValidationLevel> level = ParseValidation(o.validation);
  const ipc::BatchCheck check = level.ok() && *level >= ValidationLevel::kDefault
                                    ? ipc::BatchCheck::kByCaller
                                    : ipc::BatchCheck::kByWriter;
  const bool bar = o.progress && isatty(STDERR_FILENO) != 0;
  int64_t batches = 0;
  int64_t rows = 0;
  int64_t bytes = 0;
  // With -v: what the device layer copied while batches landed (not while they were written).
  Result<Device*> target = ParseDevice(o.device);
  Device* counted = o.verbose && target.ok() ? *target : nullptr;
  DeviceStats landing;
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  BatchSizer sizes{ArrayBytes::Make(schema.get()), DeviceArrayView::Make(schema.get())};
  // Batches in host memory are written in groups, here while writing is cheap and on a thread
  // of their own once it is not (BatchWriter). Those landing on a device are written in turn: each
  // is copied back to the host to be written, and -v counts the device's copies while a batch
  // lands, which a copy of the writer's would join.
  std::optional<BatchWriter> output;
  if (writer && target.ok() && (*target)->device_type() == ARROW_DEVICE_CPU) {
    output.emplace(&*writer, check);
  }
  while (true) {
    UniqueDeviceArray batch;
    const DeviceStats before = counted != nullptr ? counted->stats() : DeviceStats{};
    const Status next = StreamGetNext(s, batch.get());
    if (counted != nullptr) {
      const DeviceStats after = counted->stats();
      landing.copies += after.copies - before.copies;
      landing.bytes_copied += after.bytes_copied - before.bytes_copied;
    }
    if (!next.ok()) {
      if (bar) std::fprintf(stderr, "\n");
      return Fail(peer, next);
    }
    if (!batch.valid()) break;
    ++batches;
    rows += batch->array.length;
    const int64_t batch_bytes = sizes.Of(batch.get());
    bytes += batch_bytes;
    if (output) {
      const Status st = output->Write(std::move(batch), batch_bytes);
      if (!st.ok()) return Fail(o.to, st);
    } else if (writer) {
      const Status st = writer->WriteHeldBatch(std::move(batch), nullptr, check);
      if (!st.ok()) return Fail(o.to, st);
    }
    if (bar) {
      std::fprintf(stderr, "\r\033[Kferry get: %lld batches, %lld rows, %.1f MB, %.1f MB/s",
                   static_cast<long long>(batches), static_cast<long long>(rows),
                   static_cast<double>(bytes) / 1e6, static_cast<double>(bytes) / 1e6 / seconds());
    }
  }
  if (bar) std::fprintf(stderr, "\n");
  if (writer) {
    Status st = output ? output->Finish() : Status::OK();
    if (output && o.verbose) {
      std::fprintf(stderr, "ferry get: the batches were written %s\n",
                   output->on_thread() ? "on a thread of their own (the output's writes were slow)"
                                       : "by the reading thread (the output's writes were cheap)");
    }
    if (st.ok()) st = writer->Close();
    if (st.ok()) st = file != nullptr ? file->Commit() : direct_sink->Close();
    if (!st.ok()) return Fail(o.to, st);
  }
  const double t = seconds();
  const double connect = std::chrono::duration<double>(connected - start).count();
  std::fprintf(
      summary,
      "%s: %lld batches, %lld rows, %lld bytes in %.3f s (%.1f MB/s; connected in %.1f ms, then "
      "%.1f MB/s) on %s%s%s\n",
      label.c_str(), static_cast<long long>(batches), static_cast<long long>(rows),
      static_cast<long long>(bytes), t, static_cast<double>(bytes) / 1e6 / t, connect * 1e3,
      static_cast<double>(bytes) / 1e6 / std::max(t - connect, 1e-9), o.device.c_str(),
      o.to.empty() ? "" : ", written to ", o.to.c_str());
  if (counted != nullptr) {
    std::fprintf(stderr, "ferry get: landing on %s: %lld copies, %lld bytes copied\n",
                 counted->ToString().c_str(), static_cast<long long>(landing.copies),
                 static_cast<long long>(landing.bytes_copied));
  }
  return 0;
}

}  // namespace ferry::cli
