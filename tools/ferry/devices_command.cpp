// `ferry devices`: the CPU from the operating system, GPUs and OpenCL devices from their drivers
// (through the device layer), the guarded test device on request, and the UCX library the process
// loaded.
#include "devices_command.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ferry/device/device.hpp"
#include "ferry/transport/ucx.hpp"

namespace ferry::cli {

namespace {

// The first "model name" of /proc/cpuinfo, or "unknown CPU".
std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

std::string GiB(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}

// One kind's devices, or why there are none.
struct Kind {
  const char* key;    // the JSON "kind" and "absent" key
  const char* title;  // the text heading
  std::vector<nlohmann::json> devices;
  std::string absent;
};

Kind CpuKind() {
  Kind k{"cpu", "CPU", {}, {}};
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  k.devices.push_back({{"kind", "cpu"},
                       {"device", "cpu"},
                       {"arrow_device_type", static_cast<int>(ARROW_DEVICE_CPU)},
                       {"device_id", -1},
                       {"name", CpuModel()},
                       {"memory_bytes", pages > 0 && page > 0 ? int64_t{pages} * page : 0},
                       {"cores", sysconf(_SC_NPROCESSORS_ONLN)}});
  return k;
}

Kind CudaKind() {
  Kind k{"cuda", "CUDA", {}, {}};
  Result<std::vector<DeviceInfo>> gpus = ListDevices(ARROW_DEVICE_CUDA);
  if (!gpus.ok()) {
    k.absent = gpus.status().message();
    return k;
  }
  for (const DeviceInfo& g : *gpus) {
    k.devices.push_back({{"kind", "cuda"},
                         {"device", "cuda:" + std::to_string(g.device_id)},
                         {"arrow_device_type", static_cast<int>(ARROW_DEVICE_CUDA)},
                         {"device_id", g.device_id},
                         {"name", g.name},
                         {"memory_bytes", g.memory_bytes},
                         {"driver_version", g.driver_version},
                         {"compute_capability", std::to_string(g.compute_major) + "." +
                                                    std::to_string(g.compute_minor)}});
  }
  if (gpus->empty()) k.absent = "the CUDA driver reports no GPU";
  return k;
}

Kind OpenClKind() {
  Kind k{"opencl", "OpenCL", {}, {}};
  Result<std::vector<DeviceInfo>> found = ListDevices(ARROW_DEVICE_OPENCL);
  if (!found.ok()) {
    k.absent = found.status().message();
    return k;
  }
  for (const DeviceInfo& d : *found) {
    k.devices.push_back(
        {{"kind", "opencl"},
         {"device", d.device_id >= 0 ? nlohmann::json("opencl:" + std::to_string(d.device_id))
                                     : nlohmann::json(nullptr)},
         {"arrow_device_type", static_cast<int>(ARROW_DEVICE_OPENCL)},
         {"device_id", d.device_id},
         {"name", d.name},
         {"memory_bytes", d.memory_bytes},
         {"platform", d.platform},
         {"driver_version", d.driver_version},
         {"svm", d.svm}});
  }
  if (found->empty()) k.absent = "the OpenCL runtime reports no device";
  return k;
}

Kind GuardedKind() {
  Kind k{"guarded", "Guarded test device", {}, {}};
  Result<Device*> device = ResolveDevice(ARROW_DEVICE_EXT_DEV, 0);
  if (!device.ok()) {
    k.absent = device.status().message();
    return k;
  }
  k.devices.push_back({{"kind", "guarded"},
                       {"device", "guarded:0"},
                       {"arrow_device_type", static_cast<int>(ARROW_DEVICE_EXT_DEV)},
                       {"device_id", 0},
                       {"name", "ferry's guarded test device (EXT_DEV:0, host access faults)"},
                       {"memory_bytes", 0}});
  return k;
}

// The UCX this process loaded, as `devices --json` reports it (null fields without UCX).
nlohmann::json UcxJson() {
  const transport::UcxLibrary ucx = transport::LoadedUcx();
  if (!ucx.available) {
    return {
        {"available", false}, {"built_against", nullptr}, {"loaded", nullptr}, {"path", nullptr}};
  }
  return {{"available", true},
          {"built_against", ucx.built_against},
          {"loaded", ucx.loaded},
          {"path", ucx.path}};
}

void PrintText(const std::vector<Kind>& kinds, bool all) {
  for (const Kind& k : kinds) {
    std::printf("%s\n", k.title);
    if (k.devices.empty()) std::printf("  none: %s\n", k.absent.c_str());
    for (const nlohmann::json& d : k.devices) {
      const std::string id =
          d["device"].is_string() ? d["device"].get<std::string>() : "(unusable)";
      std::string text = d["name"].get<std::string>();
      if (d["kind"] == "cpu") {
        text += ", " + std::to_string(d["cores"].get<int64_t>()) + " cores, " +
                GiB(d["memory_bytes"].get<int64_t>());
      } else if (d["kind"] == "cuda") {
        text += ", " + GiB(d["memory_bytes"].get<int64_t>()) + ", compute capability " +
                d["compute_capability"].get<std::string>() + ", driver " +
                d["driver_version"].get<std::string>();
      } else if (d["kind"] == "opencl") {
        text += " (" + d["platform"].get<std::string>() + "), " +
                GiB(d["memory_bytes"].get<int64_t>()) + ", " +
                (d["svm"].get<bool>() ? "SVM" : "no SVM: ferry cannot use it") + ", driver " +
                d["driver_version"].get<std::string>();
      }
      std::printf("  %-12s %s\n", id.c_str(), text.c_str());
    }
  }
  if (!all) std::printf("(the guarded test device is listed with --all)\n");
  const transport::UcxLibrary ucx = transport::LoadedUcx();
  if (ucx.available) {
    std::printf("UCX %s (%s), built against %s\n", ucx.loaded.c_str(), ucx.path.c_str(),
                ucx.built_against.c_str());
  } else {
    std::printf("UCX: none (this build has no UCX transport)\n");
  }
}

}  // namespace

int RunDevices(const DevicesOptions& options) {
  std::vector<Kind> kinds;
  kinds.push_back(CpuKind());
  kinds.push_back(CudaKind());
  kinds.push_back(OpenClKind());
  if (options.all) kinds.push_back(GuardedKind());
  if (!options.json) {
    PrintText(kinds, options.all);
    return 0;
  }
  nlohmann::json doc = {{"schema", "ferry.devices/1"},
                        {"devices", nlohmann::json::array()},
                        {"absent", nlohmann::json::object()},
                        {"ucx", UcxJson()}};
  for (const Kind& k : kinds) {
    for (const nlohmann::json& d : k.devices) doc["devices"].push_back(d);
    if (k.devices.empty()) doc["absent"][k.key] = k.absent;
  }
  std::printf("%s\n", doc.dump(2).c_str());
  return 0;
}

}  // namespace ferry::cli
