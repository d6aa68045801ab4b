// What every section of the extension shares (common.hpp): raising, Python owners, devices and
// keyword checks.
#include "common.hpp"

#include <string>

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
