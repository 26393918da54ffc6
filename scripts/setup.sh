#!/usr/bin/env bash
# Installs the Debian packages trainscope needs (only the missing ones), then configures and builds
# trainscope in build/. Idempotent: a second run only rebuilds what changed.
#   TRAINSCOPE_CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=80;90" scripts/setup.sh
#   scripts/setup.sh [TARGET...]   only these CMake targets (run.sh: trainscope); none: every target (test.sh)
#   TS_BACKGROUND_PACKAGES="PKG ..." scripts/setup.sh   also installs these, while the build runs
# The CUDA toolkit (with NCCL, cuDNN) is not a Debian package here: when /usr/local/cuda or nvcc on PATH
# is found the CUDA parts are built, otherwise trainscope builds without them.
# A build folder configured for the first time is a unity build (CMake compiles each target's sources 32 to a
# file, their common headers parsed once: far fewer steps and less CPU; README "Testing" has the figures);
# one configured before keeps what it has, so an incremental per-file build under ccache stays one. A fresh per-file
# build: TRAINSCOPE_CMAKE_ARGS=-DCMAKE_UNITY_BUILD=OFF (it comes after, so it wins; =ON or =OFF also switches an
# existing build folder).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$TS_ROOT"

PACKAGES=(
  g++ cmake ninja-build pkg-config git
  libopenmpi-dev openmpi-bin libopenblas-dev libopenblas-openmp-dev libdnnl-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libtomlplusplus-dev libgtest-dev libbenchmark-dev
  libhwloc-dev libibverbs-dev
  python3 python3-jsonschema python3-matplotlib python3-numpy python3-jinja2
  python3-sqlalchemy python3-psycopg2
)

ts_apt_install "${PACKAGES[@]}"
# TS_BACKGROUND_PACKAGES (test.sh: the tests' own): installed while the build runs, waited for before the end.
# shellcheck disable=SC2206
background=(${TS_BACKGROUND_PACKAGES:-})
[ ${#background[@]} -gt 0 ] && ts_apt_install_background "${background[@]}"

targets=("$@")
unity=()
[ -f "$TS_BUILD/CMakeCache.txt" ] || unity=(-DCMAKE_UNITY_BUILD=ON)
# shellcheck disable=SC2206
configure=(cmake -S . -B "$TS_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${unity[@]}" ${TRAINSCOPE_CMAKE_ARGS:-})
build=(cmake --build "$TS_BUILD" -j"$(nproc)")
[ ${#targets[@]} -gt 0 ] && build+=(--target "${targets[@]}")
what="every target (the tests' too)"
[ ${#targets[@]} -gt 0 ] && what="${#targets[@]} target(s): ${targets[*]}"
if ts_dry; then
  ts_stage setup "would configure: ${configure[*]}"
  ts_stage setup "would build $what: ${build[*]}"
  ts_apt_wait
  exit 0
fi
ts_stage setup "configuring $TS_BUILD (cmake)"
"${configure[@]}" >/dev/null
# How many compile and link steps are left (ninja's dry run), so that the [k/N] lines below have a horizon.
steps="$(ninja -C "$TS_BUILD" -n "${targets[@]}" 2>/dev/null | grep -c '^\[' || true)"
ts_stage setup "building $what: $steps step(s) to run on $(nproc) core(s)"
"${build[@]}"
ts_apt_wait
# Which optional parts this machine's build has (CUDA, NCCL, cuDNN, MPI, hwloc, verbs, ...): what can run here.
ts_stage setup "built $TS_BUILD/trainscope: $("$TS_BUILD/trainscope" --version)"
