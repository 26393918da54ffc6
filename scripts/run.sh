#!/usr/bin/env bash
# The main job: set up, then run the quick suite (bench/suites/quick.toml: the inventory and every
# collective from 8 B to 256 MiB) on the best backend here — NCCL with one process per GPU when there are
# GPUs, else MPI with 2 ranks on the CPU — then write its HTML report. Prints where both are.
# It builds only what it runs (RUN_TARGETS): the unit tests, micro-benchmarks and fuzz targets are test.sh's.
#   scripts/run.sh [--dry-run] [SUITE ARGS...]
# --dry-run says each stage and its command (packages, configure, build, run) and does none of them.
# Extra arguments go to `trainscope suite` (e.g. scripts/run.sh --json results/mine.json).
set -euo pipefail
if [ "${1:-}" = --dry-run ]; then
  export TS_DRY_RUN=1
  shift
fi
source "$(dirname "$0")/lib.sh"

# The programs of the build that the job below runs: the suite's steps (and the scaling step's own jobs) are
# all this one binary; the report is Python (reports/). tests/integration/test_run_script.py holds this list
# to the commands of this script.
RUN_TARGETS=(trainscope)

ts_stage run "setting up: Debian packages, then the build of ${RUN_TARGETS[*]} (scripts/setup.sh)"
"$TS_ROOT/scripts/setup.sh" "${RUN_TARGETS[@]}"
ts_mpi_env
cd "$TS_ROOT"

stamp="$(date -u +%Y%m%dT%H%M%SZ)"
out="results/quick-$(hostname)-$stamp.json"
report="results/quick-$(hostname)-$stamp-report"
gpus="$(ts_gpu_count)"
if [ "$gpus" -gt 0 ]; then
  how="$gpus GPU(s) on $(hostname): NCCL, one process per GPU"
  np="$gpus"
else
  how="no GPU on $(hostname): MPI on the CPU with 2 ranks"
  np=2
fi
run=(mpirun -np "$np" "$TS_BUILD/trainscope" suite bench/suites/quick.toml --json "$out" --report "$report" "$@")
steps="$(grep -c '^\[\[step\]\]' bench/suites/quick.toml)"
ts_stage run "running the quick suite ($steps steps; $how): ${run[*]}"
# The suite prints a line as each of its steps starts (# ===== suite quick: step k/N: ...) and one when its
# results are written, before the report: each gets a progress line with the time beside it.
stamp_steps() {
  local line
  while IFS= read -r line; do
    case "$line" in
      "# ===== suite "*) ts_stage run "step ${line#*: step }" ;;
      "# results: "*) ts_stage run "the steps are done; writing the HTML report" ;;
    esac
    printf '%s\n' "$line"
  done
}
if ! ts_dry; then
  "${run[@]}" | stamp_steps
  ts_stage run "done: results in $out, report in $report/index.html"
fi
mpirun="$(ts_mpirun_words)"
cat >&2 <<EOT
run: next, for instance:
  $TS_BUILD/trainscope env                                   # what this machine has
  $mpirun -np $np $TS_BUILD/trainscope collectives -e 64M     # the collectives, nccl-tests style
  $mpirun -np $np $TS_BUILD/trainscope train --model transformer --dp $np   # a model trained data parallel
  $TS_BUILD/trainscope compare $out NEW.json                 # a later run against this one (exit 1: regression)
  README.md says what every subcommand measures.
EOT
