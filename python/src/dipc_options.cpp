// The arguments of ferry.dipc.connect, ferry.flight.connect and do_get turned into the
// clients' options.
#include "dipc_options.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace ferry::python {

std::vector<std::string> ColumnNames(const std::vector<Column>& columns, bool need_indices) {
  std::vector<std::string> out;
  for (const Column& c : columns) {
    if (const auto* index = std::get_if<int64_t>(&c)) {
      if (*index < 0 || *index > std::numeric_limits<int32_t>::max()) {
        Raise(PyExc_IndexError, "column " + std::to_string(*index) + " is out of range");
      }
      out.push_back(std::to_string(*index));
    } else if (need_indices) {
      Raise(PyExc_ValueError, "column \"" + std::get<std::string>(c) +
                                  "\" is a name, which needs a path (an Endpoint or a ticket "
                                  "carries no schema): give column indices");
    } else {
      out.push_back(std::get<std::string>(c));
    }
  }
  return out;
}

std::vector<int32_t> IndicesOf(const std::vector<std::string>& names) {
  std::vector<int32_t> out;
  for (const std::string& n : names) out.push_back(static_cast<int32_t>(std::stol(n)));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

dipc::Uri UriOf(const std::variant<dipc::Uri, std::string>& uri) {
  if (const auto* parsed = std::get_if<dipc::Uri>(&uri)) return *parsed;
  return Unwrap(dipc::Uri::Parse(std::get<std::string>(uri)));
}

int64_t WindowOf(const std::optional<int64_t>& window) {
  if (!window) return -1;
  if (*window < 0) Raise(PyExc_ValueError, "window must be None or a count of batches >= 0");
  return *window;
}

std::chrono::microseconds SpinOf(int64_t spin) {
  if (spin < 0) Raise(PyExc_ValueError, "spin must be a number of microseconds >= 0");
  return std::chrono::microseconds(spin);
}

flight::ClientOptions FlightClientOptions(
    const std::optional<std::string>& token, const std::optional<std::string>& tls_roots,
    const std::optional<std::string>& tls_cert, const std::optional<std::string>& tls_key,
    const std::optional<std::string>& tls_server_name, double timeout,
    const std::optional<std::string>& traceparent, const std::optional<std::string>& tracestate) {
  if (!std::isfinite(timeout) || timeout <= 0) {
    Raise(PyExc_ValueError, "timeout must be a positive number of seconds");
  }
  flight::ClientOptions options;
  options.token = token.value_or("");
  options.tls_roots = tls_roots.value_or("");
  options.tls_cert = tls_cert.value_or("");
  options.tls_key = tls_key.value_or("");
  options.tls_server_name = tls_server_name.value_or("");
  options.timeout = std::chrono::milliseconds(std::llround(timeout * 1000.0));
  options.traceparent = traceparent.value_or("");
  options.tracestate = tracestate.value_or("");
  return options;
}

flight::GetOptions FlightGetOptions(const std::string& via, Device* device,
                                    ValidationLevel validation, int parallel, bool buffer_lists,
                                    const std::optional<int64_t>& window, int64_t spin,
                                    const std::optional<int64_t>& grpc_below) {
  if (parallel < 0) Raise(PyExc_ValueError, "parallel must be 0 or more");
  if (grpc_below && *grpc_below < 0) Raise(PyExc_ValueError, "grpc_below must be 0 or more");
  flight::GetOptions options;
  if (via == "auto") {
    options.via = flight::Via::kAuto;
  } else if (via == "shm") {
    options.via = flight::Via::kShm;
  } else if (via == "ucx") {
    options.via = flight::Via::kUcx;
  } else if (via == "grpc") {
    options.via = flight::Via::kGrpc;
  } else {
    Raise(PyExc_ValueError, "via must be 'auto', 'shm', 'ucx' or 'grpc', not '" + via + "'");
  }
  options.device = device;
  options.read.validation = validation;
  options.parallel = parallel;
  options.buffer_lists = buffer_lists;
  options.window = WindowOf(window);
  options.spin = SpinOf(spin);
  if (grpc_below) options.grpc_below = *grpc_below;
  return options;
}

std::chrono::milliseconds Millis(double seconds, const char* what) {
  if (!std::isfinite(seconds) || seconds < 0) {
    Raise(PyExc_ValueError, std::string(what) + " must be a finite number of seconds >= 0");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000.0)));
}

dipc::ClientOptions DipcClientOptions(const DipcConnectArgs& args) {
  dipc::ClientOptions options;
  options.timeout = Millis(args.timeout, "timeout");
  options.device = args.device;
  options.read.validation = args.validation;
  options.reorder_window = args.reorder_window;
  if (args.max_metadata_bytes <= 0 || args.max_body_bytes <= 0) {
    Raise(PyExc_ValueError, "max_metadata_bytes and max_body_bytes must be positive");
  }
  options.max_metadata_bytes = args.max_metadata_bytes;
  options.max_body_bytes = args.max_body_bytes;
  if (args.columns) {
    // The decoder takes them in increasing order, each once; the schema names them when it
    // arrives (an index past its fields fails the connect).
    std::vector<int32_t> picked = *args.columns;
    std::sort(picked.begin(), picked.end());
    picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
    if (picked.empty() || picked.front() < 0) {
      Raise(PyExc_ValueError, "columns must be a non-empty list of field indices (0 or more)");
    }
    options.read.columns = std::move(picked);
  }
  options.buffer_lists = args.buffer_lists;
  options.traceparent = args.traceparent.value_or("");
  options.tracestate = args.tracestate.value_or("");
  options.window = WindowOf(args.window);
  options.spin = SpinOf(args.spin);
  if (args.connect_timeout) {
    options.connect_timeout = Millis(*args.connect_timeout, "connect_timeout");
  }
  if (args.pool != nullptr) options.pool = args.pool->pool;
  return options;
}

}  // namespace ferry::python
