#include "flight/grpc_library.hpp"

#include <grpc/grpc.h>

namespace ferry::flight::internal {

void HoldGrpcLibrary() {
  // A function-local static: one grpc_init however many threads get here first.
  static const bool held = [] {
    grpc_init();
    return true;
  }();
  (void)held;
}

}  // namespace ferry::flight::internal
