#!/usr/bin/env bash
# Memory by layout, measured: trains one model under every layout that should save memory (data parallel,
# ZeRO 1-3, tensor and pipeline parallel) on 2 processes and prints each rank's memory by kind beside the
# model states its layout should hold by the ZeRO paper's formulas (python3 -m reports memory).
#   scripts/memory-by-layout.sh [OUT_DIR] [-- TRAIN_ARGS...]
# OUT_DIR (default results/memory-by-layout) gets one result per layout. TRAIN_ARGS replace the model and
# run (default: --model mlp --preset deep --batch 4 --steps 3: 33 small layers, so model states dominate).
# TRAINSCOPE (default build/trainscope) and MPIRUN (default mpirun --oversubscribe) may be set.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="results/memory-by-layout"
if [ $# -gt 0 ] && [ "$1" != -- ]; then
  OUT="$1"
  shift
fi
[ $# -eq 0 ] || { [ "$1" = -- ] && shift; } || {
  echo "usage: $0 [OUT_DIR] [-- TRAIN_ARGS...]" >&2
  exit 2
}
TRAIN=("$@")
[ ${#TRAIN[@]} -gt 0 ] || TRAIN=(--model mlp --preset deep --batch 4 --steps 3)
TS="${TRAINSCOPE:-$ROOT/build/trainscope}"
read -r -a MPI <<<"${MPIRUN:-mpirun --oversubscribe}"
[ -x "$TS" ] || {
  echo "memory-by-layout: error: no trainscope at $TS (build it, or set TRAINSCOPE)" >&2
  exit 2
}
OUT="$(mkdir -p "$OUT" && cd "$OUT" && pwd)"
# ZeRO-2 with 4 MiB buckets: it holds the running layer's buckets, so buckets about a layer's size.
LAYOUTS=("zero0:--zero 0" "zero1:--zero 1" "zero2:--zero 2 --bucket-mb 4" "zero3:--zero 3" "tp2:--tp 2" "pp2:--pp 2 --micro-batches 2")
files=()
labels=()
for entry in "${LAYOUTS[@]}"; do
  name="${entry%%:*}"
  read -r -a layout <<<"${entry#*:}"
  echo "memory-by-layout: $name (${layout[*]})" >&2
  "${MPI[@]}" -np 2 "$TS" train --no-ceiling "${TRAIN[@]}" "${layout[@]}" --json "$OUT/$name.json" >"$OUT/$name.log" 2>&1 ||
    {
      echo "memory-by-layout: error: $name failed; its output is in $OUT/$name.log:" >&2
      # trainscope's own line when it said one, else the end of what the launcher said
      grep '^trainscope: error:' "$OUT/$name.log" | sort -u >&2 || tail -5 "$OUT/$name.log" >&2
      exit 1
    }
  files+=("$OUT/$name.json")
  labels+=(--label "$name")
done
cd "$ROOT" && /usr/bin/python3 -m reports memory "${labels[@]}" "${files[@]}"
