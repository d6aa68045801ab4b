// `ferry serve --keep`'s hint about shared memory's huge pages, told once at start.
#pragma once

#include <string>

namespace ferry::cli {

/// Where the kernel says whether shared memory gets transparent huge pages.
inline constexpr const char* kShmemHugePagesSetting =
    "/sys/kernel/mm/transparent_hugepage/shmem_enabled";

/// The line `ferry serve --keep` tells at start where the kernel gives shared memory no huge
/// pages (the setting at `setting_path` is `never` or `deny`): kept datasets then map in 4 KiB
/// pages, and `advise` would map them in 2 MiB ones (docs/dipc.md). Empty where the setting
/// allows them or cannot be read. One read of a sysfs file.
std::string SharedHugePagesHint(const std::string& setting_path = kShmemHugePagesSetting);

}  // namespace ferry::cli
