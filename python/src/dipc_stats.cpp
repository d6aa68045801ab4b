// ferry.dipc.ServerStats: a server's running totals, as dipc::ServerStats counts them.
#include <nanobind/stl/string.h>

#include <string>

#include "common.hpp"
#include "dipc_region.hpp"
#include "ferry/dipc/server.hpp"

namespace ferry::python {
namespace {

std::string StatsRepr(const dipc::ServerStats& s) {
  return "ServerStats(clients_accepted=" + std::to_string(s.clients_accepted) +
         ", clients_active=" + std::to_string(s.clients_active) +
         ", batches_sent=" + std::to_string(s.batches_sent) +
         ", body_bytes_sent=" + std::to_string(s.body_bytes_sent) +
         ", bytes_in_flight=" + std::to_string(s.bytes_in_flight) +
         ", sessions_failed=" + std::to_string(s.sessions_failed) + ")";
}

}  // namespace

void InitDipcStats(nb::module_& m) {
  nb::class_<dipc::ServerStats>(m, "ServerStats", "A server's running totals.")
      .def_ro("clients_accepted", &dipc::ServerStats::clients_accepted)
      .def_ro("clients_active", &dipc::ServerStats::clients_active)
      .def_ro("batches_sent", &dipc::ServerStats::batches_sent)
      .def_ro("body_bytes_sent", &dipc::ServerStats::body_bytes_sent)
      .def_ro("bytes_in_flight", &dipc::ServerStats::bytes_in_flight,
              "Body bytes in the shared region that clients have not freed yet.")
      .def_ro("sessions_failed", &dipc::ServerStats::sessions_failed,
              "Sessions that ended with an error (a bad peer, a dataset error).")
      .def_ro("tickets_refused", &dipc::ServerStats::tickets_refused,
              "Requests refused: an unknown ticket, one asked for under another URI, too many "
              "clients.")
      .def_ro("addresses_lent", &dipc::ServerStats::addresses_lent,
              "Type-1 addresses lent to clients.")
      .def_ro("addresses_freed", &dipc::ServerStats::addresses_freed,
              "Type-1 addresses the clients freed.")
      .def_ro("addresses_reclaimed", &dipc::ServerStats::addresses_reclaimed,
              "Lent addresses the server freed itself: their client closed, failed or was cut "
              "off holding them.")
      .def_ro("unknown_frees", &dipc::ServerStats::unknown_frees,
              "Addresses in free_data the client did not hold (logged, then ignored).")
      .def_ro("bodies_lent_in_place", &dipc::ServerStats::bodies_lent_in_place,
              "Type-1 bodies a producer wrote in the shared region itself "
              "(Server.region_allocator()), lent to their client as they are: no copy.")
      .def_ro("requests_reused", &dipc::ServerStats::requests_reused,
              "Requests served on a connection that had served a stream before: a ferry client "
              "keeps a connection whose stream lent it nothing for its next stream.")
      .def("__repr__", &StatsRepr);
}

}  // namespace ferry::python
