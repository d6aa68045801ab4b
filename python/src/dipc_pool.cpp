// ferry.dipc.ConnectionPool: the UCX connections a Python client keeps between its streams
// (dipc::ConnectionPool), passed to ferry.dipc.connect and ferry.aio.dipc.connect as `pool`.
#include <chrono>
#include <memory>
#include <string>

#include "common.hpp"
#include "dipc_options.hpp"

namespace ferry::python {

void InitDipcPool(nb::module_& m) {
  nb::class_<PyConnectionPool>(
      m, "ConnectionPool",
      "UCX connections kept between streams: connect(..., pool=pool) looks here first for a "
      "connection to the same server with the same options, and a stream read to its end that "
      "was lent nothing (a ucx:// URI with ferry=1, packed bodies) gives its connection back "
      "for the next. Each idle connection holds a UCX worker and a sleeping thread until it is "
      "taken, is idle for longer than `max_idle` seconds, or the pool and every stream given it "
      "are gone; at most `per_server` are kept for each server and options.")
      .def(
          "__init__",
          [](PyConnectionPool* self, double max_idle, int64_t per_server) {
            const std::chrono::milliseconds idle = Millis(max_idle, "max_idle");
            if (per_server < 1) Raise(PyExc_ValueError, "per_server must be 1 or more");
            new (self) PyConnectionPool{
                std::make_shared<dipc::ConnectionPool>(idle, static_cast<size_t>(per_server))};
          },
          nb::arg("max_idle") = 10.0, nb::arg("per_server") = 4)
      .def_prop_ro(
          "idle", [](PyConnectionPool& self) { return self.pool->idle(); },
          nb::call_guard<nb::gil_scoped_release>(),
          "Idle connections held now (those idle past max_idle are closed first).")
      .def(
          "clear", [](PyConnectionPool& self) { self.pool->Clear(); },
          nb::call_guard<nb::gil_scoped_release>(), "Close every idle connection.")
      .def("__repr__", [](PyConnectionPool& self) {
        return "<ferry.dipc.ConnectionPool idle=" + std::to_string(self.pool->idle()) + ">";
      });
}

}  // namespace ferry::python
