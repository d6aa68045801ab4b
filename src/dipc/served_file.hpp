// Internal to the dissociated-IPC server: IPC files served as they are. A file is mapped once,
// shared and read-only, and its descriptor kept, so the server can lend the file's own pages to
// clients (the shared-memory transport passes the descriptor; UCX registers the mapping).
#pragma once

#include <memory>
#include <string>

#include "dipc/catalogue.hpp"
#include "ferry/core/result.hpp"
#include "ferry/dipc/dataset.hpp"
#include "ferry/ipc/writer.hpp"
#include "ferry/transport/region.hpp"

namespace ferry::dipc::internal {

/// Whether the filesystem holding `fd` is a network or FUSE filesystem (NFS, SMB/CIFS, 9P, Ceph,
/// AFS, FUSE), whose pages another host may change under a reader's mapping.
bool OnNetworkFilesystem(int fd);

/// Map `path` for serving: the file itself (MAP_SHARED, read-only, descriptor kept), or, when it
/// lies on a network filesystem or `copy` is set, one copy in a sealed memfd. Errors name the
/// path and the failing call.
Result<DatasetFile> MapServedFile(const std::string& path, bool copy);

/// Encode `dataset`, whose batches point into `file`, into messages whose type-1 pairs are
/// offsets into `region` (the file lent as a region): nothing is copied. Fails, naming the
/// message and buffer, when a body buffer does not lie in the file 8-byte aligned (a compressed
/// file, an old writer's unaligned body): then the dataset is served by copying per client.
Result<std::shared_ptr<const Kept>> EncodeFromFile(Dataset& dataset, const DatasetFile& file,
                                                   std::shared_ptr<transport::Region> region,
                                                   const ipc::WriteOptions& options);

}  // namespace ferry::dipc::internal
