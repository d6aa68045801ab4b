// gRPC's process-wide state, held for the life of the process.
#pragma once

namespace ferry::flight::internal {

/// Takes one reference on gRPC's global state, once per process, and never gives it back. gRPC
/// tears that state down when its last server or channel goes, on the thread that drops it, and
/// the teardown joins gRPC's executor threads, one of which may be in a poll of up to 10 s: a
/// server's Stop that takes 50 ms took 15 s then (gRPC 1.51, one stop in ten on a loaded host).
/// Held, gRPC's idle threads stay until the process exits. Costs one call to grpc_init.
void HoldGrpcLibrary();

}  // namespace ferry::flight::internal
