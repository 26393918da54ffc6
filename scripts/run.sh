#!/usr/bin/env bash
# The main job: set up, then sweep every collective on the best backend here (NCCL over all local GPUs
# when there are GPUs, else MPI with 2 ranks on the CPU) and write the result to results/.
# Extra arguments go to `trainscope collectives` (e.g. scripts/run.sh -e 1G -d bfloat16).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$TS_ROOT/scripts/setup.sh"
ts_mpi_env
cd "$TS_ROOT"

mkdir -p results
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
gpus="$(ts_gpu_count)"
if [ "$gpus" -gt 0 ]; then
  out="results/collectives-nccl-$(hostname)-$stamp.json"
  echo "run: NCCL on $gpus GPU(s) of $(hostname)" >&2
  "$TS_BUILD/trainscope" collectives --backend nccl --gpus-per-process 0 --ops all -b 8 -e 1G -f 2 --json "$out" "$@"
else
  out="results/collectives-mpi-$(hostname)-$stamp.json"
  echo "run: no GPU here: MPI on the CPU with 2 ranks" >&2
  mpirun -np 2 "$TS_BUILD/trainscope" collectives --backend mpi --ops all -b 8 -e 16M -f 4 --json "$out" "$@"
fi
echo "run: results in $out" >&2
