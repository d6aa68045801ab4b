// The DLPack C exchange API timed from C, in an embedded interpreter: what a C consumer (an
// extension, a kernel launcher) pays to take a Python tensor through the producer type's
// `__dlpack_c_exchange_api__`. bench/python/crossing_bench.py runs it beside the same crossing
// through `__dlpack__` in Python, and prints both.
//
//     PYTHONPATH=<the venv's sys.path> ferry_exchange_bench [number] [repeat]
//
// Prints one JSON object of nanoseconds per crossing (best of `repeat` runs of `number` calls):
// torch_ferry_c_api: FerryMemoryViewFromDLPackExchange on a 3-element torch CPU tensor, then
//   FerryMemoryViewRelease (ferry's C API; the producer's deleter runs in the release);
// torch_producer_only: torch's managed_tensor_from_py_object_no_sync and the deleter alone;
// ferry_producer: the same two calls on ferry's own table, for a ferry.MemoryView.
// The GIL is held throughout, as the exchange API requires.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>

#include "ferry/abi/dlpack_abi.h"
#include "ferry/capi/ferry.h"

namespace {

// Best of `repeat` runs of `number` calls, in nanoseconds per call.
double Best(int64_t number, int repeat, const std::function<bool()>& call) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < number; ++i) {
      if (!call()) return -1;
    }
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count() / static_cast<double>(number));
  }
  return best;
}

// Evaluate `expr` in `globals`; exits with the Python error when it fails.
PyObject* Eval(const char* expr, PyObject* globals) {
  PyObject* out = PyRun_String(expr, Py_eval_input, globals, globals);
  if (out == nullptr) {
    PyErr_Print();
    std::exit(2);
  }
  return out;
}

const DLPackExchangeAPI* TableOf(PyObject* obj) {
  PyObject* capsule = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(obj)),
                                             "__dlpack_c_exchange_api__");
  if (capsule == nullptr) {
    PyErr_Print();
    std::exit(2);
  }
  auto* api =
      static_cast<const DLPackExchangeAPI*>(PyCapsule_GetPointer(capsule, "dlpack_exchange_api"));
  Py_DECREF(capsule);  // the type keeps it, and the table lives as long as the process
  if (api == nullptr) {
    PyErr_Print();
    std::exit(2);
  }
  return api;
}

// The producer's export and the consumer's delete: the least any exchange costs.
bool ProducerRoundTrip(const DLPackExchangeAPI* api, PyObject* obj) {
  DLManagedTensorVersioned* t = nullptr;
  if (api->managed_tensor_from_py_object_no_sync(obj, &t) != 0) return false;
  t->deleter(t);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t number = argc > 1 ? std::atoll(argv[1]) : 200000;
  const int repeat = argc > 2 ? std::atoi(argv[2]) : 7;
  Py_Initialize();
  PyObject* globals = PyDict_New();
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject* done = PyRun_String("import torch, numpy, ferry", Py_file_input, globals, globals);
  if (done == nullptr) {
    PyErr_Print();
    return 2;
  }
  Py_DECREF(done);
  PyObject* tensor = Eval("torch.arange(3, dtype=torch.int64)", globals);
  PyObject* view = Eval("ferry.MemoryView(numpy.arange(3, dtype=numpy.int64))", globals);
  const DLPackExchangeAPI* torch_api = TableOf(tensor);
  const DLPackExchangeAPI* ferry_api = TableOf(view);

  FerryError error{};
  const double c_api = Best(number, repeat, [&] {
    FerryMemoryView out{};
    if (FerryMemoryViewFromDLPackExchange(torch_api, tensor, &out, &error) != 0) {
      std::fprintf(stderr, "FerryMemoryViewFromDLPackExchange: %s\n", error.message);
      return false;
    }
    return FerryMemoryViewRelease(&out, &error) == 0;
  });
  const double torch_only =
      Best(number, repeat, [&] { return ProducerRoundTrip(torch_api, tensor); });
  const double ferry_only =
      Best(number, repeat, [&] { return ProducerRoundTrip(ferry_api, view); });
  if (c_api < 0 || torch_only < 0 || ferry_only < 0) {
    if (PyErr_Occurred()) PyErr_Print();
    return 1;
  }
  std::printf(
      "{\"torch_ferry_c_api\": %.1f, \"torch_producer_only\": %.1f, \"ferry_producer\": %.1f}\n",
      c_api, torch_only, ferry_only);
  Py_DECREF(tensor);
  Py_DECREF(view);
  Py_DECREF(globals);
  return Py_FinalizeEx() == 0 ? 0 : 1;
}
