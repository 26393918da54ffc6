#!/usr/bin/env bash
# The library search of a lent GPU machine (docs/gpu-validation.md): prints the LD_LIBRARY_PATH under which
# the bundle's binaries (scripts/gpu-bundle.sh) run there. One function in one place: the device scripts
# (scripts/gpu-plan.sh) source it, and tests/integration/test_gpu_bundle.py runs it inside a root that
# copies the device's layout, so the test checks the very search the device does.
#   scripts/gpu-libpath.sh BUNDLE_LIB_DIR            prints the path
#   scripts/gpu-libpath.sh --check BUNDLE_LIB_DIR BINARY...   `ldd -r` of the binaries under it (and of what the
#                                                    bundle's loaded-later.txt lists, beside BUNDLE_LIB_DIR)
#   TS_GPU_SITE_PACKAGES=DIR[:DIR] ...               looks only there for NVIDIA's wheels
#
# Pure bash (globs and builtins, no find, sort or python needed): the test runs it in a root that holds
# little more than the C runtime. Order, first found wins:
#   1. the bundle's lib/: what only the bundle brings (OpenBLAS, oneDNN, Open MPI, fmt, ...), never CUDA's;
#   2. the NVIDIA wheels of the Python that runs PyTorch (site-packages/nvidia/*/lib: nccl, cudnn, cu13, ...):
#      the one place the device is known to hold NCCL and cuDNN, a set PyTorch was built and tested with
#      against this very driver;
#   3. the toolkit's folders, for what the wheels lack. Not first: a toolkit may hold its own NCCL or cuDNN of
#      another version, and cuDNN loads its sub-libraries (libcudnn_ops, _cnn, _engines_*) by name at run time,
#      so a toolkit cuDNN found first would mix two versions' parts in one process;
#   4. whatever LD_LIBRARY_PATH already held (the driver's folder, on images that name it there).
# A folder named stubs is never searched: its libcuda.so would shadow the driver.

# The site-packages folders that may hold NVIDIA's wheels, one a line.
ts_gpu_site_packages() {
  local sp py
  if [ -n "${TS_GPU_SITE_PACKAGES:-}" ]; then
    local IFS=:
    for sp in $TS_GPU_SITE_PACKAGES; do echo "$sp"; done
    return 0
  fi
  for py in python3 /opt/torch/.venv/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    "$py" -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null
  done
  for sp in /opt/*/.venv/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages /usr/lib/python3/dist-packages; do
    [ -d "$sp" ] && echo "$sp"
  done
  return 0
}

# Appends DIR to the colon list in the variable named $1 unless it (or the folder it resolves to) is there.
_ts_gpu_path_add() {
  local -n _list="$1"
  local dir="$2" real
  [ -d "$dir" ] || return 0
  real="$(cd "$dir" 2>/dev/null && pwd -P)" || return 0
  case ":$_list:" in *":$real:"*) return 0 ;; esac
  _list="${_list:+$_list:}$real"
}

# True when DIR holds a shared library (lib*.so or lib*.so.N).
_ts_gpu_has_libs() {
  local f
  for f in "$1"/lib*.so "$1"/lib*.so.*; do
    [ -f "$f" ] && return 0
  done
  return 1
}

# ts_gpu_libpath BUNDLE_LIB_DIR: prints the search path (see the order above).
ts_gpu_libpath() {
  local bundle_lib="$1" path="" sp d
  _ts_gpu_path_add path "$bundle_lib"
  local restore
  restore="$(shopt -p globstar nullglob)"
  shopt -s globstar nullglob
  local sites
  sites="$(ts_gpu_site_packages)"  # a command substitution, not <(...): that needs /dev/fd
  while IFS= read -r sp; do
    if [ -z "$sp" ] || [ ! -d "$sp/nvidia" ]; then continue; fi
    for d in "$sp"/nvidia/**/; do
      d="${d%/}"
      [ "${d##*/}" = stubs ] && continue
      _ts_gpu_has_libs "$d" && _ts_gpu_path_add path "$d"
    done
  done <<<"$sites"
  eval "$restore"
  local cuda
  for cuda in ${CUDA_HOME:+"$CUDA_HOME"} /usr/local/cuda; do
    for d in "$cuda/lib64" "$cuda/lib" "$cuda/targets/x86_64-linux/lib" "$cuda/extras/CUPTI/lib64"; do
      _ts_gpu_path_add path "$d"
    done
  done
  local IFS=:
  for d in ${LD_LIBRARY_PATH:-}; do
    _ts_gpu_path_add path "$d"
  done
  echo "$path"
}

# ts_gpu_loaded_later FILE: the libraries trainscope loads when it first needs them rather than at start
# (kernels/cuda/cublaslt_library.h: cuBLASLt, of the major version of its headers), as the build lists them
# (kernels/CMakeLists.txt writes BUILD/loaded-later.txt; the bundle carries it at its top); nothing when FILE is
# absent. The checks load them as the loader would (LD_PRELOAD by name, TS_GPU_LOADED_LATER), so one the device
# lacks is found before the run, not at the first GPU GEMM.
ts_gpu_loaded_later() {
  local -a names=()
  if [ -f "$1" ]; then read -r -d '' -a names <"$1" || true; fi # to the end of the file: every name of every line
  echo "${names[*]}"
}
export TS_GPU_LOADED_LATER="${TS_GPU_LOADED_LATER:-}"

# The device's own libraries by soname (CUDA's runtime and math libraries, cuDNN, NCCL, CUPTI, NVTX, the driver's):
# the bundle never carries them (scripts/gpu-bundle.sh), and the preflight says where each resolves.
export TS_GPU_DEVICE_CUDA='^lib(cudart|cublas|cublasLt|cudnn[a-z_]*|nccl|cupti|nvToolsExt|nvtx3interop|nvrtc|nvJitLink|cufft|curand|cusolver|cusparse|cuda|nvidia-ml)\.so'

# ts_gpu_check_libs LIBPATH BINARY...: `ldd -r` through the loader itself (ldd is a script the device may lack):
# every library and every symbol of each binary (and of TS_GPU_LOADED_LATER) resolved under LIBPATH, and none of
# the driver's libraries needed at load time (libcuda and NVML are loaded at run time, so a machine without a GPU
# still starts us). Prints the loader's list per binary, then one line; returns 1 when anything is unresolved.
ts_gpu_check_libs() {
  local path="$1" bin out bad="" line
  shift
  for bin in "$@"; do
    out="$(LD_LIBRARY_PATH="$path" LD_PRELOAD="$TS_GPU_LOADED_LATER" LD_BIND_NOW=1 LD_WARN=1 LD_TRACE_LOADED_OBJECTS=1 \
      /lib64/ld-linux-x86-64.so.2 "$bin" 2>&1)"
    echo "== $bin"
    echo "$out"
    while IFS= read -r line; do
      case "$line" in
      *"not found"* | *"undefined symbol"* | *"no version information"* | *"cannot be preloaded"*) bad="$bad; ${bin##*/}: ${line#"${line%%[![:space:]]*}"}" ;;
      *libcuda.so.1* | *libnvidia-ml.so.1*) bad="$bad; ${bin##*/}: needs the driver's ${line%% *} at load time" ;;
      esac
    done <<<"$out"
  done
  if [ -n "$bad" ]; then
    echo "libraries: unresolved${bad}"
    return 1
  fi
  echo "libraries: every library and symbol of $# binaries resolved"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  case "${1:-}" in
  --check)
    [ $# -ge 3 ] || { echo "gpu-libpath: usage: $0 --check BUNDLE_LIB_DIR BINARY..." >&2 && exit 2; }
    lib="$2"
    shift 2
    TS_GPU_LOADED_LATER="$(ts_gpu_loaded_later "$lib/../loaded-later.txt")"
    ts_gpu_check_libs "$(ts_gpu_libpath "$lib")" "$@"
    ;;
  "" | -*)
    echo "gpu-libpath: usage: $0 BUNDLE_LIB_DIR (prints the search) | $0 --check BUNDLE_LIB_DIR BINARY..." >&2
    exit 2
    ;;
  *) ts_gpu_libpath "$1" ;;
  esac
fi
