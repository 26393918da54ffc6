#!/usr/bin/env bash
# The main job: set up, then run the quick suite (bench/suites/quick.toml: the inventory and every
# collective from 8 B to 256 MiB) on the best backend here — NCCL with one process per GPU when there are
# GPUs, else MPI with 2 ranks on the CPU — then write its HTML report. Prints where both are.
# Extra arguments go to `trainscope suite` (e.g. scripts/run.sh --json results/mine.json).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$TS_ROOT/scripts/setup.sh"
ts_mpi_env
cd "$TS_ROOT"

stamp="$(date -u +%Y%m%dT%H%M%SZ)"
out="results/quick-$(hostname)-$stamp.json"
report="results/quick-$(hostname)-$stamp-report"
gpus="$(ts_gpu_count)"
if [ "$gpus" -gt 0 ]; then
  echo "run: $gpus GPU(s) on $(hostname): NCCL, one process per GPU" >&2
  np="$gpus"
else
  echo "run: no GPU here: MPI on the CPU with 2 ranks" >&2
  np=2
fi
mpirun -np "$np" "$TS_BUILD/trainscope" suite bench/suites/quick.toml --json "$out" --report "$report" "$@"
echo "run: results in $out" >&2
echo "run: report in $report/index.html" >&2
cat >&2 <<EOF
run: next, for instance:
  $TS_BUILD/trainscope env                                   # what this machine has
  mpirun -np $np $TS_BUILD/trainscope collectives -e 64M     # the collectives, nccl-tests style
  mpirun -np $np $TS_BUILD/trainscope train --model transformer --dp $np   # a model trained data parallel
  $TS_BUILD/trainscope compare $out NEW.json                 # a later run against this one (exit 1: regression)
  README.md says what every subcommand measures.
EOF
