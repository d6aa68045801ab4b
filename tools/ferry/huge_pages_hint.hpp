// `ferry serve --keep`'s hint about shared memory's huge pages, told once at start.
#pragma once

#include <string>

#include "ferry/transport/shm.hpp"

namespace ferry::cli {

/// The line `ferry serve --keep` tells at start where the kernel gives shared memory no huge
/// pages (the setting at `setting_path` is `never` or `deny`): kept datasets then map in 4 KiB
/// pages, and `advise` would map them in 2 MiB ones (docs/dipc.md). Empty where the setting
/// allows them or cannot be read. One read of a sysfs file.
std::string SharedHugePagesHint(
    const std::string& setting_path = transport::kShmemHugePagesSetting);

}  // namespace ferry::cli
