#!/usr/bin/env bash
# Installs the Debian packages trainscope needs (only the missing ones), then configures and builds
# trainscope in build/. Idempotent: a second run only rebuilds what changed.
#   TRAINSCOPE_CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=80;90" scripts/setup.sh
# The CUDA toolkit (with NCCL, cuDNN) is not a Debian package here: when /usr/local/cuda or nvcc on PATH
# is found the CUDA parts are built, otherwise trainscope builds without them.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$TS_ROOT"

PACKAGES=(
  g++ cmake ninja-build pkg-config git
  libopenmpi-dev openmpi-bin libopenblas-dev libopenblas-openmp-dev libdnnl-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libtomlplusplus-dev libgtest-dev libbenchmark-dev
  libhwloc-dev libibverbs-dev
  python3 python3-jsonschema python3-matplotlib python3-numpy python3-jinja2
)

ts_apt_install "${PACKAGES[@]}"

# shellcheck disable=SC2086
cmake -S . -B "$TS_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release ${TRAINSCOPE_CMAKE_ARGS:-} >/dev/null
cmake --build "$TS_BUILD" -j"$(nproc)"
# Which optional parts this machine's build has (CUDA, NCCL, cuDNN, MPI, hwloc, verbs, ...): what can run here.
echo "setup: built $TS_BUILD/trainscope: $("$TS_BUILD/trainscope" --version)" >&2
