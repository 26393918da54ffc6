#!/usr/bin/env bash
# Builds the Debian packages of trainscope (cmake/TrainscopePackaging.cmake) and prints their paths, one a line:
#   scripts/package.sh [cpu|cuda|both] [OUTDIR]      (default: both, into each build directory)
#   cpu   trainscope: for machines without NVIDIA's libraries. Built without CUDA in a build directory of its own
#         ($TS_CPU_BUILD, default build-cpu/: configured on first use, then only the trainscope target rebuilt),
#         or from build/ itself where that has no CUDA (a machine without the toolkit): no second build then.
#   cuda  trainscope-cuda: the CUDA build in build/ (scripts/setup.sh), depending on NVIDIA's CUDA 13 packages
#         (cudart, cuBLAS, cuDNN 9, NCCL 2, CUPTI). It replaces trainscope: both install /usr/bin/trainscope.
#   both  each of them; without a CUDA build in build/ (no toolkit on this machine) only trainscope, with a line saying so.
# Install one with `apt-get install ./trainscope_<version>_<arch>.deb` (which brings the Debian libraries it
# depends on), or unpack it anywhere with `dpkg -x`: the binary finds its reports and suites beside itself.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
kind=both
case "${1:-}" in cpu | cuda | both) kind="$1" && shift ;; esac
[[ $# -le 1 ]] || { echo "usage: scripts/package.sh [cpu|cuda|both] [OUTDIR]" >&2; exit 2; }
out="${1:-}"

# cpack in BUILD_DIR (its trainscope built first); prints the package's path.
ts_cpack() {
  local build="$1" dest="${out:-$1}"
  mkdir -p "$dest"
  cpack --config "$build/CPackConfig.cmake" -G DEB -B "$dest" >&2
  # CPack leaves its staging tree beside the package; the package's file name is its name_version_arch.
  ls "$dest/$(sed -n 's/^set(CPACK_PACKAGE_NAME "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")"_*.deb
}

# build/'s kind, once its trainscope is built (a changed CMake file re-runs the configure step, which rewrites
# CPackConfig.cmake): cuda (its package is trainscope-cuda), cpu, or none (no build there).
main_kind=none
if [[ -f "$TS_BUILD/CPackConfig.cmake" && ($kind != cpu || -z ${TS_CPU_BUILD:-}) ]]; then
  cmake --build "$TS_BUILD" --target trainscope >&2
  main_kind=cpu
  grep -q '^set(CPACK_PACKAGE_NAME "trainscope-cuda")$' "$TS_BUILD/CPackConfig.cmake" && main_kind=cuda
fi

if [[ $kind != cpu ]]; then
  case "$main_kind" in
    cuda) ts_cpack "$TS_BUILD" ;;
    none) echo "package: no $TS_BUILD/CPackConfig.cmake: run scripts/setup.sh first" >&2 && exit 2 ;;
    cpu)
      if [[ $kind == cuda ]]; then
        echo "package: $TS_BUILD is not a CUDA build (no CUDA toolkit found when it was configured): no trainscope-cuda" >&2
        exit 2
      fi
      ts_stage package "$TS_BUILD has no CUDA: only the CPU package (trainscope) is made" ;;
  esac
fi
if [[ $kind != cuda ]]; then
  cpu_build="${TS_CPU_BUILD:-$TS_ROOT/build-cpu}"
  [[ -z ${TS_CPU_BUILD:-} && $main_kind == cpu ]] && cpu_build="$TS_BUILD"
  if [[ ! -f "$cpu_build/CPackConfig.cmake" ]]; then
    # Only the binary's target is built there (no tests, no benchmarks), as a unity build (the sources of a target
    # compiled 32 at a time, their headers parsed once): 327 s of CPU (2026-11-30, no ccache) against 660 s one file at
    # a time, which is what CI pays for this package. Its binary is the one the package tests install and run.
    ts_stage package "configuring the CPU-only build in $cpu_build (its first build compiles the trainscope target without CUDA: minutes)"
    # shellcheck disable=SC2206
    configure=(cmake -S "$TS_ROOT" -B "$cpu_build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${TRAINSCOPE_CMAKE_ARGS:-}
      -DTRAINSCOPE_WITH_CUDA=OFF -DTRAINSCOPE_BUILD_TESTS=OFF -DCMAKE_UNITY_BUILD=ON)
    "${configure[@]}" >&2
  fi
  cmake --build "$cpu_build" --target trainscope >&2
  ts_cpack "$cpu_build"
fi
