# Shared by the scripts: paths, the Python that has Debian's packages, and MPI as root.
TS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TS_BUILD="${TS_BUILD:-$TS_ROOT/build}"

# The first python3 that imports the given modules (Debian's /usr/bin/python3 first: a pyenv python3
# on PATH cannot see Debian's python3-* packages).
ts_python() {
  local mods="${1:-json}" py
  for py in /usr/bin/python3 python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c "import $mods" >/dev/null 2>&1; then
      echo "$py"
      return 0
    fi
  done
  echo "error: no python3 with the modules '$mods' (install python3-pytest python3-jsonschema)" >&2
  return 1
}

# A benchmark script's start: the build (scripts/setup.sh, unless TS_BUILD_GIVEN=1 says TS_BUILD is to be used as
# it is) and a scratch folder in $work, removed when the script exits; with TS_BENCH_KEEP=DIR its files are copied
# there first (plans, runs, sweeps, predictions: to predict them again, or for `report` and `compare`). A script that
# sets its own EXIT trap calls ts_bench_end in it.
ts_bench_start() {
  if [[ -z "${TS_BUILD_GIVEN:-}" ]]; then "$TS_ROOT/scripts/setup.sh" >/dev/null; fi
  work="$(mktemp -d)"
  trap ts_bench_end EXIT
}
ts_bench_end() {
  if [[ -n "${TS_BENCH_KEEP:-}" ]]; then mkdir -p "$TS_BENCH_KEEP" && cp -r "$work/." "$TS_BENCH_KEEP"; fi
  rm -rf "$work"
}

# OpenMPI refuses to run as root unless told; containers and CI run as root. Oversubscribe so that
# more ranks than cores run (slowly, but correctly) on small machines.
ts_mpi_env() {
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  export OMPI_MCA_rmaps_base_oversubscribe=1
}

# The number of NVIDIA GPUs this machine shows (0 without a driver).
ts_gpu_count() {
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true
  else
    echo 0
  fi
}

# One progress line per stage, with the time since the first of the scripts started (run.sh and test.sh call
# setup.sh, which goes on with their clock): a set-up of many minutes says where it is.
#   ts_stage WHO MESSAGE...
export TS_T0="${TS_T0:-$(date +%s)}"
ts_stage() {
  local who="$1" t
  shift
  t=$(($(date +%s) - TS_T0))
  printf '%s: [%d:%02d] %s\n' "$who" $((t / 60)) $((t % 60)) "$*" >&2
}

# TS_DRY_RUN=1 (run.sh --dry-run): the scripts say what they would install, configure, build and run, and do none of it.
export TS_DRY_RUN="${TS_DRY_RUN:-0}"
ts_dry() { [ "$TS_DRY_RUN" = 1 ]; }

# The mpirun that works as typed here: as root, Open MPI refuses to start without --allow-run-as-root (or the
# OMPI_ALLOW_RUN_AS_ROOT variables, which only the scripts set for themselves), so the commands they suggest carry it.
ts_mpirun_words() {
  if [ "$(id -u)" = 0 ]; then echo "mpirun --allow-run-as-root"; else echo "mpirun"; fi
}

# Installs the Debian packages among "$@" that are missing (as root, or through sudo).
ts_apt_install() {
  local missing=() p
  for p in "$@"; do
    [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *'install ok installed'* ]] || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    ts_stage "$(basename "$0" .sh)" "packages: all ${#} installed"
    return 0
  fi
  ts_stage "$(basename "$0" .sh)" "installing ${#missing[@]} of ${#} packages with apt-get (minutes on a fresh machine): ${missing[*]}"
  ts_dry && return 0
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup: error: need root (or sudo) to install: ${missing[*]}" >&2; return 1; }
    sudo=sudo
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# ts_apt_install in the background, its lines in a log: the tests' packages (PyTorch the largest) download and
# unpack, mostly waiting on the network and the disk, while the build keeps the cores busy. ts_apt_wait waits for
# it and prints its lines; a failed install fails there, with its log's last lines.
#   ts_apt_install_background PACKAGE...; ...; ts_apt_wait
ts_apt_install_background() {
  TS_APT_LOG="$(mktemp)"
  (ts_apt_install "$@") >"$TS_APT_LOG" 2>&1 &
  TS_APT_PID=$!
}
ts_apt_wait() {
  [ -n "${TS_APT_PID:-}" ] || return 0
  local rc=0
  wait "$TS_APT_PID" || rc=$?
  TS_APT_PID=""
  if [ "$rc" != 0 ]; then
    tail -n 20 "$TS_APT_LOG" >&2
    echo "$(basename "$0" .sh): error: installing the packages in the background failed (exit $rc): see the lines above" >&2
  else
    cat "$TS_APT_LOG" >&2
  fi
  rm -f "$TS_APT_LOG"
  return "$rc"
}

# The compute calibration of scripts/bench-predict-*.sh: one-process runs of a model at each micro-batch a layout
# runs at, one compute thread (what each of 2 ranks gets on a 2-core host: compute_threads.cpp divides a host's cores
# among its ranks). Prints the result files' paths, one a line.
#   ts_compute_calibration TRAINSCOPE MODEL PRESET STEPS OUT_PREFIX MICRO_BATCH...
ts_compute_calibration() {
  local ts="$1" model="$2" preset="$3" steps="$4" out="$5" mb
  shift 5
  for mb in "$@"; do
    TRAINSCOPE_THREADS=1 "$ts" train --model "$model" --preset "$preset" --batch "$mb" --steps "$steps" --no-ceiling \
      --log-every 1000 --json "$out-cal-$mb.json" >/dev/null
    echo "$out-cal-$mb.json"
  done
}

# The tensor-parallel part of that calibration: a `--tp 2` run of the model at micro-batch MICRO_BATCH on this host,
# each rank one compute thread (a slice's GEMMs are narrower, slower per FLOP than the one-process run's:
# reports/predict/compute.py gives a layout the run nearest its tensor-parallel degree). Prints its path. Needs
# ts_mpi_env.
#   ts_tp_calibration TRAINSCOPE MODEL PRESET STEPS OUT_PREFIX MICRO_BATCH
ts_tp_calibration() {
  local ts="$1" model="$2" preset="$3" steps="$4" out="$5" mb="$6"
  mpirun -np 2 --oversubscribe -x TRAINSCOPE_THREADS=1 "$ts" train --model "$model" --preset "$preset" --batch "$mb" \
    --tp 2 --steps "$steps" --no-ceiling --log-every 1000 --json "$out-cal-tp2-$mb.json" >/dev/null
  echo "$out-cal-tp2-$mb.json"
}
