#!/usr/bin/env bash
# Packs what a lent GPU machine needs to run trainscope's GPU tests and benchmarks, for a machine that has
# the CUDA toolkit, PyTorch's NVIDIA wheels (NCCL, cuDNN) and a recent glibc but no Debian packages:
#   gpu-bundle/bin   trainscope, ts_gpu_tests, ts_unit_tests (built here for sm_90, scripts/setup.sh)
#   gpu-bundle/lib   the shared libraries they need that are neither glibc/libstdc++ nor CUDA's
#                    (OpenBLAS, OpenMPI, fmt, toml++, hwloc, ibverbs, ...)
# CUDA's own libraries are found there by scripts/gpu-validate.sh. Usage:
#   scripts/gpu-bundle.sh [DIR]      (default gpu-bundle; ignored by git, carried to the device)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$TS_ROOT"
out="${1:-$TS_ROOT/gpu-bundle}"

bins=("$TS_BUILD/trainscope" "$TS_BUILD/tests/ts_gpu_tests" "$TS_BUILD/tests/ts_unit_tests")
for b in "${bins[@]}"; do
  if [ ! -x "$b" ]; then
    echo "gpu-bundle: error: $b is missing: build first (scripts/setup.sh)" >&2
    exit 1
  fi
done
if ! grep -q '^TRAINSCOPE_HAVE_CUDA:.*=ON' "$TS_BUILD/CMakeCache.txt" 2>/dev/null && ! ldd "$TS_BUILD/trainscope" | grep -q libcudart; then
  echo "gpu-bundle: error: $TS_BUILD was built without CUDA (install the CUDA toolkit, then scripts/setup.sh)" >&2
  exit 1
fi

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
cp "${bins[@]}" "$out/bin/"
[ -f "$TS_BUILD/tests/libts_nvtx_recorder.so" ] && cp "$TS_BUILD/tests/libts_nvtx_recorder.so" "$out/lib/"

# Every resolved dependency except the C runtime (the device's own, newer, is used) and CUDA's libraries.
skip='/(libc|libm|libpthread|libdl|librt|libutil|libresolv|ld-linux[^/]*|libstdc\+\+|libgcc_s)\.so[^/]*$'
ldd "${bins[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
  case "$lib" in /usr/local/cuda*) continue ;; esac
  if echo "$lib" | grep -Eq "$skip"; then continue; fi
  cp -L "$lib" "$out/lib/"
done
missing=$(ldd "${bins[@]}" | grep 'not found' || true)
if [ -n "$missing" ]; then
  echo "gpu-bundle: error: unresolved libraries here:" >&2
  echo "$missing" >&2
  exit 1
fi
echo "gpu-bundle: $(du -sh "$out" | cut -f1) in $out ($(ls "$out/lib" | wc -l) libraries); on the device:" >&2
echo "  run(carry=[\"$(basename "$out")\"], command=\"scripts/gpu-validate.sh tests env\")" >&2
