# shellcheck shell=bash
# The build trees' CMake definitions, in one place, sourced by the scripts that build them.
# Every GCC tree (tests, the Python extension, the gem) is compiled with the same flags, so ccache
# serves each object compiled once to all of them; every tree lives two levels below its source
# root (build/<name>), so the relative paths ccache hashes are the same too. The compiler is named
# (gcc, g++) because ccache hashes the name it is called by: scikit-build-core picks g++ where a
# plain CMake configure picks c++, the same compiler under another name.
#
# FERRY_PACKAGE_DEFS: Release with line tables (-g1) and warnings as errors (optimizers warn about
#   what lower levels do not see), as the packages are built (the gem takes these). Line tables
#   are what backtraces and perf use; full debug information (-g) made GCC take 1.3-1.8x as long
#   per object (tools/ferry/serve_config.cpp 35 s against 21 s), most of a cold build's time,
#   and the test tree's build from an empty cache took 1,353 s with it, 1,035 s without. The
#   packages strip either.
# FERRY_RELEASE_DEFS: the same plus the fault suite's pause points (FERRY_FAULT_INJECTION, which no
#   package sets) and the benchmarks (which the docs test runs at their smallest); the tree that
#   serves ctest, pytest, the install test and lint.
# FERRY_RELEASE_PIP: FERRY_PACKAGE_DEFS, turned into scikit-build-core's -C options for
#   `pip install ./python`.
# FERRY_ASAN_DEFS: clang, ASan and UBSan, with the libFuzzer targets; one tree serves the
#   sanitized suites and the fuzzers (scripts/build_asan.sh). The library at -O0: with the whole
#   tree at -O1 the suites ran in a quarter of the time (63 s against 278 s), but LeakSanitizer's
#   tracer then faulted at the exit of the dipc suite in one run of four (with use_tls=0 it stops
#   faulting but reports glibc's and ferry's thread-local buffers as leaks), so the library stays
#   where it is stable. Full debug information (-g), as in the TSan tree: with line tables alone
#   (-gline-tables-only) the reports name functions without their namespaces, and the third-party
#   patterns of scripts/tsan.supp (^grpc::, ^absl::, ...) no longer match them. The suites, the
#   test support code and the format layer's SIMD kernels are compiled at -O1
#   (tests/CMakeLists.txt, CMakeLists.txt): the suites then take 96 s, two at a time, against 229 s,
#   and five runs of the dipc, flight, ipc and transport suites exited clean.
# FERRY_TSAN_DEFS: clang and ThreadSanitizer, the test suites only (no fuzzers, tools, Ruby or
#   benchmarks), assertions on; the tree in which scripts/test.sh --sanitize runs every C++ and C
#   suite (scripts/build_tsan.sh, scripts/tsan_gate.sh). At -O2, measured on this project's 2-core
#   VM beside other builds: it compiles in the CPU time -O1 takes (466 s against 465; -O0: 309 s)
#   and runs the suites, two at a time, in 52-103 s against -O1's 75-101 s in the same four
#   rounds (-O0: 310-427 s).
FERRY_PACKAGE_DEFS=(-DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DCMAKE_BUILD_TYPE=Release
                    -DCMAKE_C_FLAGS=-g1 -DCMAKE_CXX_FLAGS=-g1 -DFERRY_WERROR=ON)
FERRY_RELEASE_DEFS=("${FERRY_PACKAGE_DEFS[@]}" -DFERRY_FAULT_INJECTION=ON -DFERRY_BUILD_BENCH=ON)
FERRY_RELEASE_PIP=()
for def in "${FERRY_PACKAGE_DEFS[@]}"; do
  FERRY_RELEASE_PIP+=(-C "cmake.define.${def#-D}")
done
FERRY_ASAN_DEFS=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug
                 -DFERRY_WERROR=ON -DFERRY_SANITIZE=address,undefined -DFERRY_BUILD_FUZZ=ON
                 -DFERRY_BUILD_TOOLS=OFF -DFERRY_BUILD_RUBY=OFF)
FERRY_TSAN_DEFS=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug
                 "-DCMAKE_C_FLAGS_DEBUG=-g -O2" "-DCMAKE_CXX_FLAGS_DEBUG=-g -O2"
                 -DFERRY_WERROR=ON -DFERRY_SANITIZE=thread -DFERRY_BUILD_TOOLS=OFF
                 -DFERRY_BUILD_RUBY=OFF)

# The Python binding's nanobind, one copy for every tree that builds it. CMake finds nanobind by
# its real path, so where a virtual environment's nanobind is a link to .venv's, the binding is
# compiled there with .venv's flags, and ccache compiles it once for .venv's install, the wheel
# and the install from source (from an empty cache each compiled it anew: 88 s of CPU each).
# ferry_nanobind_version: the version .venv has (scripts/setup.sh installs it), or nothing.
ferry_nanobind_version() {
  .venv/bin/python -c 'import nanobind; print(nanobind.__version__)' 2>/dev/null || true
}
# ferry_share_nanobind VENV: VENV's nanobind becomes a link to .venv's, where the two are the same
# version; otherwise VENV keeps its own.
ferry_share_nanobind() {
  local code='import nanobind, os; print(nanobind.__version__, os.path.dirname(nanobind.__file__))'
  local ours theirs
  ours=$(.venv/bin/python -c "$code" 2>/dev/null) || return 0
  theirs=$("$1/bin/python" -c "$code" 2>/dev/null) || return 0
  [ "${ours%% *}" = "${theirs%% *}" ] || return 0
  ours=$(realpath "${ours#* }")
  theirs=${theirs#* }
  [ "$(realpath "$theirs")" = "$ours" ] && return 0
  rm -rf "$theirs"
  ln -s "$ours" "$theirs"
}
