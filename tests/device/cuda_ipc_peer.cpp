// The other process of the CUDA IPC tests (cuda_ipc_test.cpp starts it): it opens the handle it is
// given, prints the bytes it reads, writes their complement back and reports how many handles it
// has open (on the stand-in; -1 elsewhere) and whether the driver maps it; in "hold" mode it keeps
// the mapping until told to close, then waits for end of input. Usage: ferry_cuda_ipc_peer
// HANDLE_HEX OFFSET ALLOCATION_SIZE N MODE
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ferry/device/cuda_ipc.hpp"
#include "ferry/device/device_buffer.hpp"
#include "support/cuda_util.hpp"

namespace {

int Fail(const std::string& what) {
  std::printf("error %s\n", what.c_str());
  std::fflush(stdout);
  return 1;
}

std::string Hex(const uint8_t* p, size_t n) {
  std::string out;
  char two[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(two, sizeof(two), "%02x", p[i]);
    out += two;
  }
  return out;
}

int64_t OpenHandles() {
  const ferry::testing::Standin* s = ferry::testing::GetStandin();
  return s == nullptr ? -1 : s->ipc_open_handles();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) return Fail("usage: HANDLE_HEX OFFSET ALLOCATION_SIZE N MODE");
  const std::string hex = argv[1];
  ferry::CudaIpcMemHandle handle;
  if (hex.size() != handle.bytes.size() * 2) return Fail("the handle is not 64 bytes of hex");
  for (size_t i = 0; i < handle.bytes.size(); ++i) {
    handle.bytes[i] = static_cast<uint8_t>(std::stoi(hex.substr(i * 2, 2), nullptr, 16));
  }
  handle.offset = std::atoll(argv[2]);
  handle.allocation_size = std::atoll(argv[3]);
  const auto n = static_cast<size_t>(std::atoll(argv[4]));
  const std::string mode = argv[5];

  auto gpu = ferry::ResolveDevice(ARROW_DEVICE_CUDA, 0);
  if (!gpu.ok()) return Fail(gpu.status().message());
  auto mapping = ferry::OpenCudaIpcMemHandle(**gpu, handle);
  if (!mapping.ok()) return Fail(mapping.status().message());
  std::vector<uint8_t> bytes(n);
  ferry::Status st =
      ferry::BufferCopy(**gpu, {mapping->data(), static_cast<int64_t>(n)}, *ferry::CpuDevice(),
                        {bytes.data(), static_cast<int64_t>(n)});
  if (!st.ok()) return Fail(st.message());
  std::printf("read %s\n", Hex(bytes.data(), n).c_str());
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(~b);
  st = ferry::BufferCopy(*ferry::CpuDevice(), {bytes.data(), static_cast<int64_t>(n)}, **gpu,
                         {mapping->data(), static_cast<int64_t>(n)});
  if (!st.ok()) return Fail(st.message());
  const void* mapped_at = mapping->data();
  std::printf("wrote\nopen %lld mapped %d\n", static_cast<long long>(OpenHandles()),  // NOLINT
              ferry::testing::DriverMaps(mapped_at) ? 1 : 0);
  std::fflush(stdout);
  if (mode == "hold") {
    char line[64];
    if (std::fgets(line, sizeof(line), stdin) == nullptr) return 0;
    mapping->Close();
    std::printf("closed %lld mapped %d\n", static_cast<long long>(OpenHandles()),  // NOLINT
                ferry::testing::DriverMaps(mapped_at) ? 1 : 0);
    std::fflush(stdout);
    while (std::fgets(line, sizeof(line), stdin) != nullptr) {
    }
  }
  return 0;
}
