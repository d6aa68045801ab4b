// `ferry serve` and `ferry get`.
#include "dipc_commands.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <optional>
#include <thread>

#include "ferry/core/stream_adapter.hpp"
#include "ferry/device/device_array_view.hpp"
#include "ferry/dipc/client.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/ipc/writer.hpp"

namespace ferry::cli {

namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int /*sig*/) { g_stop = 1; }

int Fail(const std::string& what, const Status& st) {
  std::fprintf(stderr, "ferry: %s: %s\n", what.c_str(), st.message().c_str());
  return 1;
}

// Bytes of a batch as the layout implies them (visible slice and offsets included).
int64_t BatchBytes(const ArrowSchema* schema, const ArrowDeviceArray* batch) {
  Result<DeviceArrayView> view = DeviceArrayView::Make(schema);
  if (!view.ok() || !view->SetArray(batch).ok()) return 0;
  int64_t total = 0;
  std::function<void(const ArrayView&)> walk = [&](const ArrayView& v) {
    for (int64_t i = 0; i < v.n_buffers(); ++i) total += v.buffer(i).size_bytes;
    for (int64_t i = 0; i < v.n_children(); ++i) walk(v.child(i));
    if (v.dictionary() != nullptr) walk(*v.dictionary());
  };
  walk(view->array_view());
  return total;
}

}  // namespace

Result<Device*> ParseDevice(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  int64_t id = 0;
  if (colon != std::string::npos) {
    try {
      id = std::stoll(text.substr(colon + 1));
    } catch (const std::exception&) {
      return Status::Invalid("device \"" + text + "\": the id after ':' is not a number");
    }
  }
  if (kind == "cpu") return CpuDevice();
  if (kind == "cuda") return ResolveDevice(ARROW_DEVICE_CUDA, id);
  if (kind == "cuda_host") return ResolveDevice(ARROW_DEVICE_CUDA_HOST, id);
  if (kind == "cuda_managed") return ResolveDevice(ARROW_DEVICE_CUDA_MANAGED, id);
  if (kind == "opencl") return ResolveDevice(ARROW_DEVICE_OPENCL, id);
  return Status::Invalid("unknown device \"" + text +
                         "\" (cpu, cuda:N, cuda_host:N, cuda_managed:N, opencl:N)");
}

int RunServe(const ServeOptions& o) {
  dipc::ServerOptions options;
  options.transport = o.transport;
  options.address = o.listen;
  options.region_bytes = o.region_mb << 20;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
  if (o.verbose) {
    options.log = [](const std::string& line) {
      std::fprintf(stderr, "ferry serve: %s\n", line.c_str());
    };
  }
  if (o.body == "packed") {
    options.body_type = dipc::BodyType::kPacked;
  } else if (o.body != "list") {
    return Fail("--body", Status::Invalid("unknown body type \"" + o.body + "\" (list, packed)"));
  }
  std::vector<std::pair<std::string, std::shared_ptr<dipc::Dataset>>> datasets;
  for (const std::string& spec : o.datasets) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return Fail(spec, Status::Invalid("a dataset is NAME=FILE"));
    }
    Result<std::shared_ptr<dipc::Dataset>> d = dipc::Dataset::FromPath(spec.substr(eq + 1));
    if (!d.ok()) return Fail(spec.substr(eq + 1), d.status());
    datasets.emplace_back(spec.substr(0, eq), std::move(*d));
  }
  Result<std::unique_ptr<dipc::Server>> server = dipc::Server::Start(options);
  if (!server.ok()) return Fail("starting the server", server.status());
  for (auto& [name, d] : datasets) {
    if (o.keep) {
      if (const Status st = (*server)->Keep(name, d); !st.ok()) return Fail(name, st);
    } else {
      (*server)->Add(name, d);
    }
    std::printf("%s %s\n", name.c_str(), (*server)->uri(name).ToString().c_str());
  }
  std::fflush(stdout);
  // stdout stays one "NAME URI" line per dataset, for scripts; the split shape (metadata and
  // data servers apart) is told on stderr.
  for (auto& [name, d] : datasets) {
    std::fprintf(stderr, "ferry serve: %s split: ferry get %s --data %s --ticket %s\n",
                 name.c_str(), (*server)->metadata_uri(name).ToString().c_str(),
                 (*server)->data_uri(name).ToString().c_str(), name.c_str());
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  while (g_stop == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const dipc::ServerStats s = (*server)->stats();
  (*server)->Stop();
  std::fprintf(stderr,
               "ferry serve: %lld clients, %lld batches, %.1f MB of bodies, %lld failed, %lld "
               "refused; addresses lent %lld, freed %lld, unknown frees %lld\n",
               static_cast<long long>(s.clients_accepted), static_cast<long long>(s.batches_sent),
               static_cast<double>(s.body_bytes_sent) / 1e6,
               static_cast<long long>(s.sessions_failed), static_cast<long long>(s.tickets_refused),
               static_cast<long long>(s.addresses_lent), static_cast<long long>(s.addresses_freed),
               static_cast<long long>(s.unknown_frees));
  return 0;
}

int RunGet(const GetOptions& o) {
  Result<dipc::Uri> uri = dipc::Uri::Parse(o.uri);
  if (!uri.ok()) return Fail(o.uri, uri.status());
  Result<Device*> device = ParseDevice(o.device);
  if (!device.ok()) return Fail("--device", device.status());
  dipc::ClientOptions options;
  options.device = *device;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
  if (o.validation == "default") options.read.validation = ValidationLevel::kDefault;
  if (o.validation == "none") options.read.validation = ValidationLevel::kNone;
  const auto start = std::chrono::steady_clock::now();
  std::optional<dipc::Uri> data;
  if (!o.data.empty()) {
    Result<dipc::Uri> parsed = dipc::Uri::Parse(o.data);
    if (!parsed.ok()) return Fail("--data " + o.data, parsed.status());
    data = std::move(*parsed);
  }
  Result<UniqueDeviceArrayStream> stream = data
                                               ? dipc::ConnectStream(*uri, *data, o.ticket, options)
                                               : dipc::ConnectStream(*uri, o.ticket, options);
  if (!stream.ok()) return Fail(o.uri, stream.status());
  ArrowDeviceArrayStream* s = stream->get();
  UniqueSchema schema;
  if (const Status st = StreamGetSchema(s, schema.get()); !st.ok()) return Fail(o.uri, st);
  std::unique_ptr<ipc::FileSink> sink;
  std::optional<ipc::StreamWriter> writer;
  if (!o.to.empty()) {
    Result<std::unique_ptr<ipc::FileSink>> f = ipc::FileSink::Open(o.to);
    if (!f.ok()) return Fail(o.to, f.status());
    sink = std::move(*f);
    Result<ipc::StreamWriter> w = ipc::StreamWriter::Open(sink.get(), schema.get());
    if (!w.ok()) return Fail(o.to, w.status());
    writer.emplace(std::move(*w));
  }
  const bool bar = o.progress && isatty(STDERR_FILENO) != 0;
  int64_t batches = 0;
  int64_t rows = 0;
  int64_t bytes = 0;
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  while (true) {
    UniqueDeviceArray batch;
    if (const Status st = StreamGetNext(s, batch.get()); !st.ok()) {
      if (bar) std::fprintf(stderr, "\n");
      return Fail(o.uri, st);
    }
    if (!batch.valid()) break;
    ++batches;
    rows += batch->array.length;
    bytes += BatchBytes(schema.get(), batch.get());
    if (writer) {
      const Status st = writer->WriteDeviceBatch(batch.get());
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
    Status st = writer->Close();
    if (st.ok()) st = sink->Close();
    if (!st.ok()) return Fail(o.to, st);
  }
  const double t = seconds();
  std::printf("%s: %lld batches, %lld rows, %lld bytes in %.3f s (%.1f MB/s) on %s%s%s\n",
              o.ticket.c_str(), static_cast<long long>(batches), static_cast<long long>(rows),
              static_cast<long long>(bytes), t, static_cast<double>(bytes) / 1e6 / t,
              o.device.c_str(), o.to.empty() ? "" : ", written to ", o.to.c_str());
  return 0;
}

}  // namespace ferry::cli
