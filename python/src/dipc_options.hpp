// The arguments of ferry.dipc.connect, ferry.flight.connect and do_get turned into the clients'
// options: one place for the blocking faces (dipc.cpp, flight.cpp) and the asyncio one (aio.cpp),
// so both check them alike.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ferry/dipc/client.hpp"
#include "ferry/dipc/connection_pool.hpp"
#include "ferry/dipc/uri.hpp"
#include "ferry/flight/client.hpp"
#include "objects.hpp"

namespace ferry::python {

/// A column asked for by a Flight read: its index, or its name (which needs the flight's schema).
using Column = std::variant<int64_t, std::string>;

/// `columns` as names for ferry::ColumnIndices (an index is its digits); with `need_indices`
/// (no schema to look names up in) a name raises ValueError. An index outside int32 raises
/// IndexError.
std::vector<std::string> ColumnNames(const std::vector<Column>& columns, bool need_indices);

/// Indices from names that are all numbers (ColumnNames with `need_indices`): increasing, each
/// once.
std::vector<int32_t> IndicesOf(const std::vector<std::string>& names);

/// `uri` parsed, where it is text (a bad one raises, naming what is wrong).
dipc::Uri UriOf(const std::variant<dipc::Uri, std::string>& uri);

/// A `window=` argument as the C++ options take it: None is -1 (unpaced); a negative count
/// raises ValueError.
int64_t WindowOf(const std::optional<int64_t>& window);

/// A `spin=` argument (microseconds a read watches for the next message before it sleeps) as the
/// C++ options take it; a negative one raises ValueError.
std::chrono::microseconds SpinOf(int64_t spin);

/// The Flight read options that do_get's keyword arguments ask for (all but `columns`, which
/// need the flight's schema); raises ValueError for a bad one (an unknown `via`, a negative
/// `parallel`, window, spin or `grpc_below`). `grpc_below` None keeps the client's default.
flight::GetOptions FlightGetOptions(const std::string& via, Device* device,
                                    ValidationLevel validation, int parallel, bool buffer_lists,
                                    const std::optional<int64_t>& window, int64_t spin,
                                    const std::optional<int64_t>& grpc_below);

/// The Flight client options that ferry.flight.connect's keyword arguments ask for (None is
/// ""); raises ValueError for a timeout that is not a positive number of seconds.
flight::ClientOptions FlightClientOptions(
    const std::optional<std::string>& token, const std::optional<std::string>& tls_roots,
    const std::optional<std::string>& tls_cert, const std::optional<std::string>& tls_key,
    const std::optional<std::string>& tls_server_name, double timeout,
    const std::optional<std::string>& traceparent, const std::optional<std::string>& tracestate);

/// `seconds` (a keyword argument named `what`) as milliseconds; raises ValueError naming it
/// where it is negative or not finite.
std::chrono::milliseconds Millis(double seconds, const char* what);

/// ferry.dipc.ConnectionPool: the UCX connections a client keeps between its streams. The
/// dipc::ConnectionPool is shared with each stream given it, which hands its connection back at
/// its end, also after the Python object has gone.
struct PyConnectionPool {
  std::shared_ptr<dipc::ConnectionPool> pool;
};

/// Register ferry.dipc.ConnectionPool in `m` (python/src/dipc_pool.cpp).
void InitDipcPool(nb::module_& m);

/// connect's keyword arguments, as ferry.dipc.connect and ferry.aio.dipc.connect take them.
struct DipcConnectArgs {
  Device* device;
  ValidationLevel validation;
  double timeout;
  uint32_t reorder_window;
  int64_t max_metadata_bytes;
  int64_t max_body_bytes;
  std::optional<std::vector<int32_t>> columns;
  bool buffer_lists;
  std::optional<std::string> traceparent;
  std::optional<std::string> tracestate;
  std::optional<int64_t> window;
  int64_t spin;
  std::optional<double> connect_timeout;
  const PyConnectionPool* pool;
};

/// The client options that connect's keyword arguments ask for; raises ValueError for a bad one
/// (a negative or non-finite timeout or connect timeout, a non-positive size limit, no or
/// negative columns, a negative window or spin).
dipc::ClientOptions DipcClientOptions(const DipcConnectArgs& args);

}  // namespace ferry::python
