// The shared-memory transport, for processes on one host: messages travel over a Unix socket,
// and type-1 bodies stay in memfd segments the server creates (mode 0600) and hands to the client
// with the socket's descriptor passing, so the client maps them read-only and reads in place.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "ferry/abi/export.h"
#include "ferry/transport/transport.hpp"

namespace ferry::transport {

/// Listen on the Unix socket `path` (an empty path picks one under $TMPDIR or /tmp). The socket
/// file is removed when the listener closes.
FERRY_EXPORT Result<std::unique_ptr<Listener>> ListenShm(const std::string& path,
                                                         TransportLimits limits = {});
/// Connect to a shared-memory listener.
FERRY_EXPORT Result<std::unique_ptr<Connection>> ConnectShm(const std::string& path,
                                                            const ConnectOptions& options);

/// Where the kernel says whether shared memory gets transparent huge pages.
inline constexpr const char* kShmemHugePagesSetting =
    "/sys/kernel/mm/transparent_hugepage/shmem_enabled";

/// The setting in force at `setting_path`, the bracketed word of "always within_size advise
/// [never] deny force": whether a segment that asks for huge pages (2 MiB or more) gets them.
/// Empty where it cannot be read. One read of a sysfs file.
FERRY_EXPORT std::string ShmemHugePages(const std::string& setting_path = kShmemHugePagesSetting);
/// Whether ShmemHugePages' `setting` gives 2 MiB pages to a segment that asks for them (`advise`,
/// `within_size`, `always`, `force`); not for `never`, `deny` or an empty (unread) setting.
FERRY_EXPORT bool ShmemHugePagesGiven(const std::string& setting);

/// How a wire address names a byte of a shared segment: the segment's index in the top 24 bits,
/// the byte offset in the low 40.
constexpr int kShmOffsetBits = 40;

}  // namespace ferry::transport
