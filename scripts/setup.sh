#!/usr/bin/env bash
# Install what is missing on a fresh Debian 12 machine: the build toolchain and libraries, ccache
# (CMake compiles through it), lld (every tree links with it), patchelf (the GPU bundle's RPATHs),
# clang with libFuzzer and the clang-format gate, PoCL (a real OpenCL device on the CPU for the
# device suites) (apt), and a Python virtual environment at .venv (kept in ~/.cache/ferry) with
# the test peers (pip): pyarrow, and the peer libraries whose tests must run in CI (polars,
# DuckDB, DataFusion, nanoarrow, arro3, torch), mypy (the stubs' check), clang-tidy (the lint
# gate's), dask and distributed (ferry.dask; the oldest Dask it supports in .venv-dask-oldest),
# and PyPI's UCX (the fault matrix).
# Idempotent: it installs nothing when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache
  clang libclang-rt-dev clang-format lld
  libgtest-dev libgmock-dev libbenchmark-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libflatbuffers-dev flatbuffers-compiler liblz4-dev libzstd-dev libucx-dev ucx-utils
  python3 python3-venv python3-dev
  ruby ruby-dev ruby-test-unit
  pocl-opencl-icd ocl-icd-libopencl1 clinfo
  iproute2 patchelf
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev
  libsystemd-dev
  prometheus-cpp-dev prometheus
  # `ferry serve --config` (toml++); test_deb.sh's service checks (systemd-analyze, adduser).
  libtomlplusplus-dev systemd adduser
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

PY=${PYTHON:-python3}
# .venv is a link to an environment in the user's cache, one per Python version, so that a fresh
# clone (CI makes one per run) finds the peers installed rather than unpacking torch's 5 GB again;
# the checks below still install whatever it lacks. FERRY_VENV_CACHE=0 makes a plain .venv here.
# Clones share the environment: `pip install ./python` in one replaces the other's binding.
if [ ! -e .venv ]; then
  if [ "${FERRY_VENV_CACHE:-1}" = 1 ]; then
    shared="${XDG_CACHE_HOME:-$HOME/.cache}/ferry/venv-$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    mkdir -p "$(dirname "$shared")"
    if [ ! -x "$shared/bin/python" ]; then
      echo "setup: creating $shared"
      "$PY" -m venv "$shared"
    fi
    ln -s "$shared" .venv
  else
    echo "setup: creating .venv"
    "$PY" -m venv .venv
  fi
elif [ ! -x .venv/bin/python ]; then
  echo "setup: .venv exists but holds no Python; remove it and run again" >&2
  exit 1
fi
# pytest-timeout turns a hung test into a failure with its stack instead of a stalled CI run;
# pytest-xdist runs the fault suite's cells (mostly waits on processes) eight at a time.
if ! .venv/bin/python -c "import pyarrow, pytest, pytest_timeout, xdist, numpy, nanobind, scikit_build_core" >/dev/null 2>&1; then
  echo "setup: installing pyarrow, pytest, pytest-timeout, pytest-xdist, numpy, nanobind and scikit-build-core into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q pyarrow pytest pytest-timeout pytest-xdist numpy nanobind scikit-build-core
fi
# matplotlib draws the benchmarks' plots (docs/benchmarks.md's blocks, which CI runs at their
# smallest).
if ! .venv/bin/python -c "import matplotlib" >/dev/null 2>&1; then
  echo "setup: installing matplotlib into .venv"
  .venv/bin/python -m pip install -q matplotlib
fi
# PyPI's UCX, which ferry's wheel and ucxx load: the fault matrix runs its UCX cells on it as well as
# on Debian's 1.13 (the two do not talk to each other on the wire, so both are tested).
PYPI_UCX=1.22.0
if ! .venv/bin/python -c "import importlib.metadata as m, libucx; assert m.version('libucx-cu12') == '$PYPI_UCX'" >/dev/null 2>&1; then
  echo "setup: installing libucx-cu12==$PYPI_UCX into .venv"
  .venv/bin/python -m pip install -q "libucx-cu12==$PYPI_UCX"
fi
# Dask, for ferry.dask and its suite (a real scheduler with worker processes): the range ferry.dask
# supports, oldest and newest (docs/dask.md). .venv holds the newest; the oldest has an environment
# of its own beside it, .venv-dask-oldest (kept in the cache as .venv is), holding only what the Dask
# suite needs, where scripts/test.sh runs that suite again. 2025.1.0 is the first Dask with
# dask-expr inside it and `dask.task_spec`, which the locality plugin reads.
DASK_OLDEST=2025.1.0
DASK_NEWEST=2026.8.0
dask_is() {  # dask_is PYTHON VERSION: whether PYTHON has dask and distributed at VERSION
  "$1" -c "import importlib.metadata as m, dask.dataframe, distributed
assert m.version('dask') == m.version('distributed') == '$2'" >/dev/null 2>&1
}
if ! dask_is .venv/bin/python "$DASK_NEWEST"; then
  echo "setup: installing dask[dataframe] and distributed $DASK_NEWEST into .venv"
  .venv/bin/python -m pip install -q "dask[dataframe]==$DASK_NEWEST" "distributed==$DASK_NEWEST"
fi
if [ ! -e .venv-dask-oldest ]; then
  if [ "${FERRY_VENV_CACHE:-1}" = 1 ]; then
    oldest="${XDG_CACHE_HOME:-$HOME/.cache}/ferry/venv-$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')-dask-$DASK_OLDEST"
    [ -x "$oldest/bin/python" ] || "$PY" -m venv "$oldest"
    ln -s "$oldest" .venv-dask-oldest
  else
    "$PY" -m venv .venv-dask-oldest
  fi
fi
if ! dask_is .venv-dask-oldest/bin/python "$DASK_OLDEST" ||
   ! .venv-dask-oldest/bin/python -c "import pyarrow, pytest, pytest_timeout" >/dev/null 2>&1; then
  echo "setup: installing dask[dataframe] and distributed $DASK_OLDEST into .venv-dask-oldest"
  .venv-dask-oldest/bin/python -m pip install -q "dask[dataframe]==$DASK_OLDEST" \
    "distributed==$DASK_OLDEST" pyarrow pytest pytest-timeout
fi
# grpcio: gRPC's own Python client, an implementation independent of ferry's, which reads the
# status codes ferry's Flight server sends (tests/flight/test_grpc_status.py).
if ! .venv/bin/python -c "import grpc" >/dev/null 2>&1; then
  echo "setup: installing grpcio into .venv"
  .venv/bin/python -m pip install -q grpcio
fi
# grpcio-health-checking: gRPC's own grpc.health.v1 client, which reads the health statuses of
# `ferry serve --flight` (tests/flight/test_drain.py).
if ! .venv/bin/python -c "import grpc_health.v1.health_pb2_grpc" >/dev/null 2>&1; then
  echo "setup: installing grpcio-health-checking into .venv"
  .venv/bin/python -m pip install -q grpcio-health-checking
fi
# prometheus-client: Prometheus' own Python client, whose strict parser reads `ferry serve
# --metrics`' exposition text (tests/flight/test_prometheus.py; the Prometheus server from apt
# scrapes it too).
if ! .venv/bin/python -c "import prometheus_client" >/dev/null 2>&1; then
  echo "setup: installing prometheus-client into .venv"
  .venv/bin/python -m pip install -q prometheus-client
fi
# opentelemetry-sdk: OpenTelemetry's own Python SDK, whose spans' traceparent the trace tests send
# to ferry's servers and then find in their JSON logs (tests/flight/test_traces*.py).
if ! .venv/bin/python -c "import opentelemetry.sdk.trace" >/dev/null 2>&1; then
  echo "setup: installing opentelemetry-sdk into .venv"
  .venv/bin/python -m pip install -q opentelemetry-sdk
fi
# iceoryx2: a shared-memory publish-subscribe peer of bench/dipc/small_batches (through its Python
# binding, bench/dipc/small_batches_peers.py).
if ! .venv/bin/python -c "import iceoryx2" >/dev/null 2>&1; then
  echo "setup: installing iceoryx2 into .venv"
  .venv/bin/python -m pip install -q iceoryx2
fi
# ray[data]: Ray Data, the engine ferry.ray reads flights into and writes them from; its tests run
# a real two-node Ray cluster (tests/flight/test_ray.py, tests/cluster/test_ray_cluster.py).
if ! .venv/bin/python -c "import ray.data" >/dev/null 2>&1; then
  echo "setup: installing ray[data] into .venv"
  .venv/bin/python -m pip install -q "ray[data]"
fi
# The peers of python/tests (a skipped peer test fails CI). torch: PyPI has no CPU-only build for
# Linux, so this is the CUDA one (about 5 GB installed, under two minutes from PyPI); its CPU
# tensors need no GPU.
# POLARS_RANGE: the Polars that ferry.polars supports (docs/polars.md): from 2.1, the release its
# suite (tests/flight/test_polars.py) runs on, whose IO-plugin API hands a source the projection,
# predicate, n_rows and batch_size, below the next major release. DataFusion reads ferry streams
# in tests/flight/test_engines.py beside DuckDB.
POLARS_RANGE=">=2.1,<3"
PEERS=("polars$POLARS_RANGE" duckdb datafusion nanoarrow arro3-core torch)
if ! .venv/bin/python -c "import polars, duckdb, datafusion, nanoarrow, arro3.core, torch
assert (2, 1) <= tuple(int(p) for p in polars.__version__.split('.')[:2]) < (3, 0)" >/dev/null 2>&1; then
  echo "setup: installing the peer libraries ${PEERS[*]} into .venv"
  .venv/bin/python -m pip install -q "${PEERS[@]}"
fi
# clang-tidy, the lint gate's (scripts/tidy.py), from PyPI: from LLVM 22 on it matches no code in
# system headers, and checks a source here in a quarter of the time Debian's 14 takes
# (src/flight/service.cpp: 8.3 s against 32.8 s), the most of it spent in gRPC's headers.
CLANG_TIDY=22.1.8
if ! .venv/bin/python -c "import importlib.metadata as m; assert m.version('clang-tidy') == '$CLANG_TIDY'" >/dev/null 2>&1; then
  echo "setup: installing clang-tidy==$CLANG_TIDY into .venv"
  .venv/bin/python -m pip install -q "clang-tidy==$CLANG_TIDY"
fi
# mypy: its stubtest checks the hand-written stubs of ferry's Python modules (python/tests/test_typing.py).
if ! .venv/bin/python -c "import mypy.stubtest" >/dev/null 2>&1; then
  echo "setup: installing mypy into .venv"
  .venv/bin/python -m pip install -q mypy
fi
