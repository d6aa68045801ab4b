// The `ferry._ferry` extension module: Python owners, and the module's sections.
#include <cstring>

#include "common.hpp"
#include "ferry/core/version.hpp"

namespace ferry::python {

std::string RaisedBy(const std::string& what, const nb::python_error& e, const std::string& where) {
  std::string message = what + " raised " + nb::type_name(e.type()).c_str() + where;
  nb::str text = nb::str(e.value());
  if (nb::len(text) > 0) message += std::string(": ") + text.c_str();
  return message;
}

void Raise(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw nb::python_error();
}

std::shared_ptr<const void> PyOwner(nb::handle object) {
  PyObject* raw = object.ptr();
  Py_XINCREF(raw);
  return std::shared_ptr<const void>(raw, [](const void* p) {
    auto* obj = static_cast<PyObject*>(const_cast<void*>(p));
    if (obj == nullptr || !nb::is_alive()) return;  // after finalization the object is gone
    nb::gil_scoped_acquire gil;
    Py_DECREF(obj);
  });
}

Device& DeviceOf(ArrowDeviceType type, int64_t id) {
  if (type == ARROW_DEVICE_CPU) return *CpuDevice();
  return *Unwrap(ResolveDevice(type, id));
}

void CheckNoKwargs(const nb::kwargs& kwargs, const char* method) {
  for (auto [key, value] : kwargs) {
    if (!value.is_none()) {
      Raise(PyExc_NotImplementedError, std::string(method) + ": keyword argument '" +
                                           nb::str(key).c_str() + "' is not supported");
    }
  }
}

}  // namespace ferry::python

NB_MODULE(_ferry, m) {
  using namespace ferry::python;
  m.doc() = "ferry's C++ core: devices, schemas, arrays, streams, memory views and IPC.";
  m.def(
      "version", [] { return ferry::Version(); },
      "The version of the ferry library built into this extension (ferry.__version__).");
  InitStatusCode(m);
  InitDevice(m);
  InitSchema(m);
  InitArray(m);
  InitStream(m);
  InitMemoryView(m);
  InitIpc(m);
  InitDipc(m);
  InitFlight(m);
  InitAio(m);
}
