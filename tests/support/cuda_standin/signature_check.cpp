// Built only where the CUDA toolkit's <cuda.h> is found: every entry point the stand-in exports
// must have the real driver's exported name and signature.
#include <cuda.h>

#include <type_traits>

#define FERRY_STANDIN_CHECK(name, ret, params) \
  static_assert(std::is_same_v<decltype(&::name), ret(*) params>, #name " differs from <cuda.h>");

// driver_abi.hpp's list, expanded against the toolkit's own types.
#include "cuda_standin/entry_points.inc"
FERRY_STANDIN_ENTRY_POINTS(FERRY_STANDIN_CHECK)

int main() { return 0; }
