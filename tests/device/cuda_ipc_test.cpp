// CUDA IPC across two processes: this one exports device memory, ferry_cuda_ipc_peer (built beside
// this suite) opens it, reads what was written here and writes its complement, which is read back
// here. On the stand-in the exporter also sees the peer's mapping come and go: closed by the peer,
// or gone with a killed peer.
#include "ferry/device/cuda_ipc.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "ferry/device/device_buffer.hpp"
#include "support/cuda_util.hpp"
#include "support/device_util.hpp"
#include "support/test_util.hpp"

extern char** environ;

namespace ferry {
namespace {

#define RESOLVE_GPU_OR_SKIP(var) \
  FERRY_RESOLVE_OR_SKIP(var, (testing::DeviceCase{ARROW_DEVICE_CUDA, 0, "CUDA0"}))

std::string Hex(const uint8_t* p, size_t n) {
  std::string out;
  char two[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(two, sizeof(two), "%02x", p[i]);
    out += two;
  }
  return out;
}

// The peer binary, next to this test binary.
std::string PeerPath() {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "ferry_cuda_ipc_peer";
  std::string path(self, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + "ferry_cuda_ipc_peer";
}

// A running peer with its standard input and output as pipes.
class Peer {
 public:
  // `env`: NAME=VALUE settings that replace the peer's inherited ones.
  Peer(const CudaIpcMemHandle& h, size_t n, const char* mode,
       const std::vector<std::string>& env = {}) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, in[1]);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    const std::string path = PeerPath();
    std::vector<std::string> args = {path,
                                     Hex(h.bytes.data(), h.bytes.size()),
                                     std::to_string(h.offset),
                                     std::to_string(h.allocation_size),
                                     std::to_string(n),
                                     mode};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> vars = env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string var = *e;
      const std::string name = var.substr(0, var.find('=') + 1);
      bool replaced = false;
      for (const std::string& v : env) replaced = replaced || v.rfind(name, 0) == 0;
      if (!replaced) vars.push_back(var);
    }
    std::vector<char*> envp;
    for (std::string& v : vars) envp.push_back(v.data());
    envp.push_back(nullptr);
    if (posix_spawn(&pid_, path.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    to_ = fdopen(in[1], "w");
    from_ = fdopen(out[0], "r");
  }
  ~Peer() {
    if (to_ != nullptr) fclose(to_);
    if (pid_ > 0) Wait();
    if (from_ != nullptr) fclose(from_);
  }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  bool started() const { return pid_ > 0 && to_ != nullptr && from_ != nullptr; }
  std::string ReadLine() {
    char line[512];
    if (std::fgets(line, sizeof(line), from_) == nullptr) return "<eof>";
    std::string s(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  void Send(const char* line) {
    std::fputs(line, to_);
    std::fflush(to_);
  }
  void Kill() { kill(pid_, SIGKILL); }
  // The exit status, or -signal.
  int Wait() {
    int status = 0;
    if (pid_ <= 0 || waitpid(pid_, &status, 0) != pid_) return INT_MIN;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }
  void CloseInput() {
    fclose(to_);
    to_ = nullptr;
  }

 private:
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

// A block from Device::Allocate without a stream (cuMemAlloc: what the driver can export).
struct Block {
  Device* device = nullptr;
  void* data = nullptr;
  int64_t size = 0;
  ~Block() {
    if (data != nullptr) device->Free(data, size);
  }
};

TEST(CudaIpc, APeerProcessReadsAndWritesTheSameDeviceMemory) {
  RESOLVE_GPU_OR_SKIP(gpu);
  Block block{gpu};
  ASSERT_OK_AND_ASSIGN(block.data, gpu->Allocate(4096, nullptr));
  block.size = 4096;
  std::vector<uint8_t> pattern(64);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 37 + 5);
  auto* range = static_cast<uint8_t*>(block.data) + 100;
  ASSERT_OK(BufferCopy(*CpuDevice(), {pattern.data(), 64}, *gpu, {range, 64}));

  ASSERT_OK_AND_ASSIGN(CudaIpcMemHandle handle, ExportCudaIpcMemHandle(*gpu, range));
  EXPECT_EQ(handle.offset, 100);
  EXPECT_EQ(handle.allocation_size, 4096);
  Peer peer(handle, 64, "hold");
  ASSERT_TRUE(peer.started()) << PeerPath();
  EXPECT_EQ(peer.ReadLine(), "read " + Hex(pattern.data(), 64));
  ASSERT_EQ(peer.ReadLine(), "wrote");
  const testing::Standin* standin = testing::GetStandin();
  EXPECT_EQ(peer.ReadLine(), standin != nullptr ? "open 1 mapped 1" : "open -1 mapped 1");
  if (standin != nullptr) {
    EXPECT_EQ(standin->ipc_importers(reinterpret_cast<uintptr_t>(range)), 1);
  }

  // What the peer wrote is here.
  std::vector<uint8_t> back(64);
  ASSERT_OK(BufferCopy(*gpu, {range, 64}, *CpuDevice(), {back.data(), 64}));
  for (size_t i = 0; i < back.size(); ++i) EXPECT_EQ(back[i], static_cast<uint8_t>(~pattern[i]));

  // The peer closes its mapping (the owner's release) while it still runs.
  peer.Send("close\n");
  EXPECT_EQ(peer.ReadLine(), standin != nullptr ? "closed 0 mapped 0" : "closed -1 mapped 0");
  if (standin != nullptr) {
    EXPECT_EQ(standin->ipc_importers(reinterpret_cast<uintptr_t>(range)), 0);
  }
  peer.CloseInput();
  EXPECT_EQ(peer.Wait(), 0);
}

// On the stand-in the exporter also counts the peer's mapping, and sees it go with the peer; on a
// GPU the driver's own cleanup is not observable from here, and the memory's contents are.
TEST(CudaIpc, AKilledPeersMappingIsGone) {
  RESOLVE_GPU_OR_SKIP(gpu);
  const testing::Standin* standin = testing::GetStandin();
  Block block{gpu};
  ASSERT_OK_AND_ASSIGN(block.data, gpu->Allocate(1 << 16, nullptr));
  block.size = 1 << 16;
  std::vector<uint8_t> zeros(16, 0);
  ASSERT_OK(BufferCopy(*CpuDevice(), {zeros.data(), 16}, *gpu, {block.data, 16}));
  ASSERT_OK_AND_ASSIGN(CudaIpcMemHandle handle, ExportCudaIpcMemHandle(*gpu, block.data));
  EXPECT_EQ(handle.offset, 0);
  Peer peer(handle, 16, "hold");
  ASSERT_TRUE(peer.started());
  EXPECT_EQ(peer.ReadLine(), "read " + std::string(32, '0'));
  ASSERT_EQ(peer.ReadLine(), "wrote");
  ASSERT_EQ(peer.ReadLine(), standin != nullptr ? "open 1 mapped 1" : "open -1 mapped 1");
  if (standin != nullptr) {
    EXPECT_EQ(standin->ipc_importers(reinterpret_cast<uintptr_t>(block.data)), 1);
  }
  peer.Kill();
  EXPECT_EQ(peer.Wait(), -SIGKILL);
  if (standin != nullptr) {
    EXPECT_EQ(standin->ipc_importers(reinterpret_cast<uintptr_t>(block.data)), 0);
  }
  // The exporter's memory is untouched by the peer's death: it still holds what the peer wrote.
  std::vector<uint8_t> back(16);
  ASSERT_OK(BufferCopy(*gpu, {block.data, 16}, *CpuDevice(), {back.data(), 16}));
  EXPECT_EQ(back, std::vector<uint8_t>(16, 0xff));
}

TEST(CudaIpc, RefusesWhatCannotBeShared) {
  RESOLVE_GPU_OR_SKIP(gpu);
  Block block{gpu};
  ASSERT_OK_AND_ASSIGN(block.data, gpu->Allocate(256, nullptr));
  block.size = 256;
  ASSERT_OK_AND_ASSIGN(CudaIpcMemHandle handle, ExportCudaIpcMemHandle(*gpu, block.data));
  // The driver opens a handle only in another process.
  ASSERT_RAISES_WITH(StatusCode::kIOError, "IpcOpenMemHandle", OpenCudaIpcMemHandle(*gpu, handle));
  CudaIpcMemHandle outside = handle;
  outside.offset = 257;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "outside the allocation",
                     OpenCudaIpcMemHandle(*gpu, outside));
  // Host memory, managed memory and non-CUDA devices are not CUDA IPC material.
  std::vector<uint8_t> host(16);
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "not device memory",
                     ExportCudaIpcMemHandle(*gpu, host.data()));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "needs a CUDA device",
                     ExportCudaIpcMemHandle(*CpuDevice(), host.data()));
  ASSERT_OK_AND_ASSIGN(Device * managed, ResolveDevice(ARROW_DEVICE_CUDA_MANAGED, 0));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "needs a CUDA device",
                     ExportCudaIpcMemHandle(*managed, host.data()));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "NULL", ExportCudaIpcMemHandle(*gpu, nullptr));
  // Stream-ordered (pool) memory cannot be exported with a legacy IPC handle.
  testing::RawStream stream;
  ASSERT_OK_AND_ASSIGN(void* pooled, gpu->Allocate(256, stream.arg()));
  Result<CudaIpcMemHandle> refused = ExportCudaIpcMemHandle(*gpu, pooled);
  gpu->Free(pooled, 256);
  if (testing::GetStandin() != nullptr) {
    ASSERT_RAISES_WITH(StatusCode::kIOError, "cuMemAlloc", refused);
  }
}

// Memory of the second GPU opens in a peer that has that GPU (on its GPU 0, with peer access, as
// ferry asks), and is refused, naming the driver's reason, in one that has only one GPU.
TEST(CudaPeer, IpcOfTheSecondGpuOpensOnlyWhereThatGpuIs) {
  FERRY_RESOLVE_OR_SKIP(gpu1, (testing::DeviceCase{ARROW_DEVICE_CUDA, 1, "CUDA1"}));
  Block block{gpu1};
  ASSERT_OK_AND_ASSIGN(block.data, gpu1->Allocate(4096, nullptr));
  block.size = 4096;
  std::vector<uint8_t> pattern(32);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 11 + 1);
  ASSERT_OK(BufferCopy(*CpuDevice(), {pattern.data(), 32}, *gpu1, {block.data, 32}));
  ASSERT_OK_AND_ASSIGN(CudaIpcMemHandle handle, ExportCudaIpcMemHandle(*gpu1, block.data));
  {
    Peer peer(handle, 32, "once");
    ASSERT_TRUE(peer.started()) << PeerPath();
    EXPECT_EQ(peer.ReadLine(), "read " + Hex(pattern.data(), 32));
    EXPECT_EQ(peer.ReadLine(), "wrote");
    peer.ReadLine();  // open N
    peer.CloseInput();
    EXPECT_EQ(peer.Wait(), 0);
  }
  FERRY_STANDIN_OR_SKIP(standin);
  Peer one_gpu(handle, 32, "once", {"FERRY_CUDA_STANDIN_DEVICES=1"});
  ASSERT_TRUE(one_gpu.started()) << PeerPath();
  const std::string line = one_gpu.ReadLine();
  EXPECT_NE(line.find("error"), std::string::npos) << line;
  EXPECT_NE(line.find("CUDA_ERROR_INVALID_DEVICE"), std::string::npos) << line;
  one_gpu.CloseInput();
  EXPECT_EQ(one_gpu.Wait(), 1);
}

}  // namespace
}  // namespace ferry
