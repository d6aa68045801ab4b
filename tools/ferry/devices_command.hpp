// `ferry devices`: every device this machine has, and why a kind is absent.
#pragma once

namespace ferry::cli {

/// Options of `ferry devices`.
struct DevicesOptions {
  /// Print the stable JSON document (docs/cli.md) instead of text.
  bool json = false;
  /// Also list ferry's guarded test device.
  bool all = false;
};

/// List the CPU, every CUDA GPU and every OpenCL device (and with `all` the guarded test
/// device); a kind with no device says why. Returns the process exit code (0).
int RunDevices(const DevicesOptions& options);

}  // namespace ferry::cli
