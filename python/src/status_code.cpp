// ferry's exception classes, one per row of the error table (ferry/core/status_code.hpp), made
// when the module is imported, and RaiseStatus, which picks one.
#include "ferry/core/status_code.hpp"

#include <nanobind/stl/string.h>

#include <array>
#include <string>

#include "common.hpp"

namespace ferry::python {

namespace {

// ferry.Error, then each row's class by StatusCode; strong references held for the process's
// life (exception classes are never unloaded).
PyObject* g_error = nullptr;
std::array<PyObject*, static_cast<size_t>(StatusCode::kIOError) + 1> g_classes{};

PyObject* ClassFor(StatusCode code) {
  const auto i = static_cast<size_t>(code);
  PyObject* cls = i < g_classes.size() ? g_classes[i] : nullptr;
  return cls != nullptr ? cls : g_error;
}

}  // namespace

void RaiseStatus(const Status& status) { Raise(ClassFor(status.code()), status.message()); }

void InitStatusCode(nb::module_& m) {
  g_error = PyErr_NewExceptionWithDoc(
      "ferry._ferry.Error",
      "The base of every exception ferry raises for a failed operation; its subclasses, one per "
      "error code, also derive from the builtin that fits (ferry.NotFoundError is a "
      "FileNotFoundError).",
      PyExc_Exception, nullptr);
  if (g_error == nullptr) throw nb::python_error();
  m.attr("Error") = nb::handle(g_error);
  nb::module_ builtins = nb::module_::import_("builtins");
  for (const StatusCodeInfo& row : StatusCodeTable()) {
    nb::object bases = row.python_base == nullptr
                           ? nb::make_tuple(nb::handle(g_error))
                           : nb::make_tuple(nb::handle(g_error), builtins.attr(row.python_base));
    nb::dict attrs;
    attrs["code"] = row.name;
    const std::string name = std::string("ferry._ferry.") + row.error_class;
    const std::string doc = std::string("Raised for ferry's ") + row.name +
                            " code: C return code " + std::to_string(row.c_code) +
                            ", gRPC status " + std::to_string(row.grpc_code) + ".";
    PyObject* cls = PyErr_NewExceptionWithDoc(name.c_str(), doc.c_str(), bases.ptr(), attrs.ptr());
    if (cls == nullptr) throw nb::python_error();
    g_classes[static_cast<size_t>(row.code)] = cls;
    m.attr(row.error_class) = nb::handle(cls);
  }
  m.def(
      "status_codes",
      [] {
        nb::list out;
        for (const StatusCodeInfo& row : StatusCodeTable()) {
          nb::dict d;
          d["name"] = row.name;
          d["error_class"] = row.error_class;
          d["c_code"] = row.c_code;
          d["grpc_code"] = row.grpc_code;
          d["python_base"] = row.python_base == nullptr ? nb::object(nb::none())
                                                        : nb::object(nb::str(row.python_base));
          out.append(d);
        }
        return out;
      },
      "The error table: one dict per code (name, error_class, c_code, grpc_code, python_base), "
      "the same rows the C, gRPC and Ruby faces map from.");
  m.def(
      "_raise_status",
      [](const std::string& name, const std::string& message) {
        for (const StatusCodeInfo& row : StatusCodeTable()) {
          if (name == row.name) RaiseStatus(Status(row.code, message));
        }
        Raise(PyExc_ValueError, "no error code named \"" + name + "\"");
      },
      nb::arg("name"), nb::arg("message"),
      "Raise what a failure with error code `name` raises (for tests of the error table).");
}

}  // namespace ferry::python
