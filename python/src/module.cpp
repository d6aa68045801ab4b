// The `ferry._ferry` extension module: its sections, each defined in a file of its own.
#include "common.hpp"
#include "ferry/core/version.hpp"

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
