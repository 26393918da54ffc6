#!/usr/bin/env bash
# Packs what a lent GPU machine lacks into ONE compressed file, carried there beside the working tree
# (docs/gpu-validation.md). That machine has the CUDA 13 driver and toolkit, PyTorch's NVIDIA wheels (NCCL,
# cuDNN, cudart, cuBLAS, CUPTI, NVTX) and glibc 2.39, but no Debian packages and no network; the device tool
# refuses a working tree over 64 MiB. Inside, under gpu-bundle/:
#   bin/      trainscope, ts_gpu_tests (built here for sm_90; debug info stripped, symbols kept for backtraces)
#   lib/      the shared libraries they load that the device lacks (OpenBLAS, oneDNN, Open MPI, fmt, toml++, hwloc,
#             ibverbs, gfortran, gomp, ...), named by soname; never glibc, libstdc++, libgcc_s (the device's own,
#             newer, serve) nor CUDA's, NCCL's, cuDNN's (the device's wheels serve: scripts/gpu-libpath.sh)
#   peers/    nccl-tests' *_perf, when NCCL_TESTS_SRC names its source tree: built HERE for sm_90 against this
#             machine's NCCL and CUDA, so that no device minute goes to compiling
#   scripts/  the device scripts it was made with; MANIFEST.txt: commit, versions built against, every file
# ts_unit_tests stays behind: it tests the CPU, which CI does; the device's work is ts_gpu_tests.
#   scripts/gpu-bundle.sh [FILE]                  (default gpu-bundle.tar.gz, ignored by git)
#   NCCL_TESTS_SRC=~/nccl-tests scripts/gpu-bundle.sh
#   TS_GPU_CARRY_LIMIT=BYTES          the device tool's limit on what travels (default 64 MiB)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpu-libpath.sh"
cd "$TS_ROOT"
out="$(realpath -m "${1:-$TS_ROOT/gpu-bundle.tar.gz}")"
limit="${TS_GPU_CARRY_LIMIT:-$((64 * 1024 * 1024))}"  # the device tool's limit on the whole working tree that travels
cuda_home="${CUDA_HOME:-/usr/local/cuda}"

die() {
  echo "gpu-bundle: error: $*" >&2
  exit 1
}

bins=("$TS_BUILD/trainscope" "$TS_BUILD/tests/ts_gpu_tests")
for b in "${bins[@]}" "$TS_BUILD/loaded-later.txt"; do
  [ -e "$b" ] || die "$b is missing: build first (scripts/setup.sh)"
done
# ldd's whole output first: `ldd | grep -q` under pipefail fails when grep leaves at the first match and ldd dies
# of SIGPIPE writing the rest.
[[ "$(ldd "$TS_BUILD/trainscope")" == *libcudart* ]] ||
  die "$TS_BUILD was built without CUDA (install the CUDA toolkit, then scripts/setup.sh)"
case "$out" in *.tar.gz) ;; *) die "$out: the bundle is a .tar.gz (gzip: every machine unpacks it)" ;; esac
# What else travels: the tracked files and the untracked ones git does not ignore.
tree=$(git ls-files -z -co --exclude-standard | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
[ "$tree" -lt "$limit" ] || die "the working tree that travels is already $tree bytes, over the device's limit of $limit"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/gpu-bundle"
mkdir -p "$root/bin" "$root/lib" "$root/scripts"
for b in "${bins[@]}"; do
  strip --strip-debug -o "$root/bin/$(basename "$b")" "$b"
done

if [ -n "${NCCL_TESTS_SRC:-}" ]; then
  [ -f "$NCCL_TESTS_SRC/src/Makefile" ] || die "NCCL_TESTS_SRC=$NCCL_TESTS_SRC holds no nccl-tests source (src/Makefile)"
  nccl_home="${NCCL_HOME:-$cuda_home}"
  [ -f "$nccl_home/include/nccl.h" ] || die "no nccl.h under $nccl_home/include: set NCCL_HOME"
  # Built beside the build (make is incremental there), only the peers the re-run compares with; no MPI: -g 1.
  peers_build="$TS_BUILD/nccl-tests"
  peers=(all_reduce_perf all_gather_perf reduce_scatter_perf sendrecv_perf)
  echo "gpu-bundle: building nccl-tests (${peers[*]}) for sm_90 in $peers_build" >&2
  make -s -C "$(realpath "$NCCL_TESTS_SRC")/src" -j"$(nproc)" MPI=0 BUILDDIR="$peers_build" NCCL_HOME="$nccl_home" \
    CUDA_HOME="$cuda_home" NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" "${peers[@]/#/$peers_build/}" >"$work/nccl-tests.log" 2>&1 ||
    die "building nccl-tests failed (last line: $(tail -n 1 "$work/nccl-tests.log"))"
  mkdir -p "$root/peers"
  for p in "${peers[@]}"; do
    strip --strip-debug -o "$root/peers/$p" "$peers_build/$p"
  done
  bins+=("$root"/peers/*)
fi

# Every library the binaries load, by the name they ask for, except the C runtime and what the device's CUDA
# brings; the driver's own (libcuda, libnvidia-ml) are loaded at run time (dlopen), never linked.
system='^(libc|libm|libmvec|libpthread|libdl|librt|libutil|libresolv|libanl|libnsl|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so'
ldd_out="$(ldd "${bins[@]}")"
unresolved="$(grep "not found" <<<"$ldd_out" | sort -u || true)"
[ -z "$unresolved" ] || die "libraries not found here: ${unresolved//$'\n'/; }"
while read -r name path; do
  if [[ "$name" =~ $system ]] || [[ "$name" =~ $TS_GPU_DEVICE_CUDA ]]; then continue; fi
  cp -L "$path" "$root/lib/$name"
done < <(awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' <<<"$ldd_out" | sort -u)

# The versions of the headers this build was compiled with: NCCL, cuDNN, the CUDA runtime.
built_against() {
  local inc="$cuda_home/include"
  awk '/^#define NCCL_(MAJOR|MINOR|PATCH) / {v = v (v == "" ? "" : ".") $3} END {printf "NCCL %s, ", v}' "${NCCL_HOME:-$cuda_home}/include/nccl.h" 2>/dev/null
  awk '/^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) / {v = v (v == "" ? "" : ".") $3} END {printf "cuDNN %s, ", v}' "$inc/cudnn_version.h" 2>/dev/null
  awk '/^#define CUDART_VERSION / {printf "CUDA runtime %d.%d", $3 / 1000, ($3 % 1000) / 10}' "$inc/cuda_runtime_api.h" 2>/dev/null
}

cp scripts/gpu-*.sh scripts/gpu-*.py "$root/scripts/"
cp "$TS_BUILD/loaded-later.txt" "$root/"  # what trainscope loads on first use: the preflight checks it too
{
  echo "trainscope GPU bundle, made $(date -u +%FT%TZ) on $(uname -n)"
  echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "build: $("$TS_BUILD/trainscope" --version 2>&1 | head -n 1)"
  echo "built against (the device's may differ: its preflight says which it found): $(built_against)"
  echo
  (cd "$root" && find . -type f -printf '%s\t%P\n' | sort -k2)
} >"$root/MANIFEST.txt"

tar -C "$work" -czf "$work/bundle.tar.gz" gpu-bundle
size=$(stat -c %s "$work/bundle.tar.gz")
[ $((size + tree)) -le "$limit" ] ||
  die "the bundle is $size bytes and the working tree $tree: together over the device's limit of $limit bytes; nothing written"
mkdir -p "$(dirname "$out")"
mv -f "$work/bundle.tar.gz" "$out"
rel="$(realpath -m --relative-to="$TS_ROOT" "$out")"
echo "gpu-bundle: $out: $size bytes ($((size / 1048576)) MiB; with the working tree $(((size + tree) / 1048576)) MiB of $((limit / 1048576))), $(find "$root/lib" -type f | wc -l) libraries$([ -d "$root/peers" ] && echo ", nccl-tests")" >&2
case "$rel" in ../*) echo "gpu-bundle: warning: $out is outside the checkout: the device tool carries only paths inside it" >&2 ;; esac
git check-ignore -q "$rel" 2>/dev/null || echo "gpu-bundle: warning: git does not ignore $rel: it would travel twice (ignore it, then carry it)" >&2
echo "on the device (docs/gpu-validation.md):" >&2
echo "  run(carry=[\"$rel\"], timeout_s=540, command=\"scripts/gpu-first-contact.sh --bundle $rel\")" >&2
