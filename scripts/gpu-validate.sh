#!/usr/bin/env bash
# Runs trainscope's GPU validation on a lent GPU machine (docs/gpu-validation.md), from the bundle that
# scripts/gpu-bundle.sh made here and carried there. Each named group runs under its own time limit, a
# failure never stops the next, and everything it wrote (logs, result JSON, traces) ends in one archive
# plus a summary table, because the device tool brings back only a few files:
#   $OUT/gpu-<groups>.tar.gz    $OUT/gpu-<groups>.md
#
#   scripts/gpu-validate.sh tests env            (groups: tests env collectives kernels train layouts profile)
#   TS_BUNDLE=gpu-bundle OUT=results/gpu scripts/gpu-validate.sh all
#
# Multi-process layouts use the RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT bootstrap (no mpirun there): two
# processes share cuda:0, each with its own NCCL_HOSTID, so NCCL runs between two processes on one GPU.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
B="${TS_BUNDLE:-$ROOT/gpu-bundle}"
OUT="${OUT:-$ROOT/results/gpu}"
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(tests env)
[ "${groups[0]}" = all ] && groups=(tests env collectives kernels train layouts profile)
for g in "${groups[@]}"; do
  case "$g" in tests | env | collectives | kernels | train | layouts | profile) ;;
  *) echo "gpu-validate: error: unknown group '$g' (tests env collectives kernels train layouts profile all)" >&2; exit 2 ;;
  esac
done
if [ ! -x "$B/bin/trainscope" ]; then
  echo "gpu-validate: error: no bundle at $B: run scripts/gpu-bundle.sh here and carry it (carry=[\"gpu-bundle\"])" >&2
  exit 2
fi

# CUDA's libraries: the toolkit's, then any NVIDIA wheel's (PyTorch brings NCCL and cuDNN as wheels).
libdirs="$B/lib"
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && libdirs="$libdirs:$d"
done
for py in python3 /opt/torch/.venv/bin/python3; do
  command -v "$py" >/dev/null 2>&1 || continue
  wheels=$("$py" - <<'EOF' 2>/dev/null
import os, site
dirs = []
for sp in site.getsitepackages():
    root = os.path.join(sp, "nvidia")
    for here, subdirs, files in os.walk(root):
        if any(".so" in f for f in files) and os.path.basename(here) in ("lib", "lib64"):
            dirs.append(here)
print(":".join(sorted(set(dirs))))
EOF
)
  [ -n "$wheels" ] && libdirs="$libdirs:$wheels" && break
done
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
missing=$(ldd "$B/bin/trainscope" "$B/bin/ts_gpu_tests" | grep 'not found' | sort -u)
if [ -n "$missing" ]; then
  echo "gpu-validate: error: libraries not found on this machine (searched $LD_LIBRARY_PATH):" >&2
  echo "$missing" >&2
  exit 1
fi

tag=$(IFS=-; echo "${groups[*]}")
W="$(mktemp -d)/gpu-$tag"
mkdir -p "$W" "$OUT"
TS="$B/bin/trainscope"
summary="$OUT/gpu-$tag.md"
{
  echo "# trainscope GPU validation: $tag"
  echo
  echo "commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>&1 | sed 's/^/GPU: /'
  echo
  echo "| step | exit | seconds | log |"
  echo "|---|---|---|---|"
} >"$summary"

# step NAME LIMIT_S COMMAND...: runs it with its output in NAME.log, adds a row to the summary.
step() {
  local name="$1" limit="$2"
  shift 2
  local t0=$SECONDS rc
  echo "gpu-validate: $name" >&2
  timeout --kill-after=10 "$limit" "$@" >"$W/$name.log" 2>&1
  rc=$?
  echo "| $name | $rc$([ $rc -eq 124 ] && echo ' (time limit)') | $((SECONDS - t0)) | $name.log |" >>"$summary"
  tail -n 3 "$W/$name.log" | sed "s/^/  $name: /" >&2
  return 0
}

# pair NAME LIMIT_S ARGS...: `trainscope ARGS` as two processes (RANK 0 and 1) on this machine. NCCL
# refuses two ranks on one GPU ("Duplicate GPU detected") unless they look like two hosts: a distinct
# NCCL_HOSTID each makes NCCL connect them through its network transport (sockets), between processes.
pair() {
  local name="$1" limit="$2"
  shift 2
  local port=$((29500 + RANDOM % 1000))
  step "$name" "$limit" bash -c '
    port=$1; shift
    log1=$(mktemp)
    export TRAINSCOPE_JOB_TOKEN="gpu-validate-$$-$port"  # the pair admits only each other (docs/reliability.md)
    WORLD_SIZE=2 RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port NCCL_HOSTID=trainscope-rank1 "$@" >"$log1" 2>&1 &
    WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port NCCL_HOSTID=trainscope-rank0 "$@"; rc=$?
    wait $!; r1=$?
    sed "s/^/[rank 1] /" "$log1"
    [ $rc -eq 0 ] && rc=$r1
    exit $rc' pair "$port" "$TS" "$@"
}

for g in "${groups[@]}"; do
  case "$g" in
  tests)
    step gpu-tests 420 "$B/bin/ts_gpu_tests" --gtest_output="json:$W/gpu-tests.json"
    ;;
  env)
    step env 60 "$TS" env --json "$W/env.json"
    ;;
  collectives)
    step coll-world1 240 "$TS" collectives --backend nccl --ops all -b 8 -e 4M -f 4 -d float32,int32,bfloat16 -o sum,max --json "$W/coll-w1.json"
    step coll-graph 240 "$TS" collectives --backend nccl --ops all_reduce -b 8 -e 1G -f 2 -G 20 --json "$W/coll-graph.json"
    pair coll-2proc 240 collectives --backend nccl --ops all_reduce,all_gather,reduce_scatter -b 8 -e 256M -f 4 --json "$W/coll-2proc.json"
    ;;
  kernels)
    step kernels-small 420 "$TS" kernels --backend cuda --preset small --json "$W/kernels.json"
    step gemm-bf16 240 "$TS" kernels --backend cuda --ops gemm --dtype bfloat16 --json "$W/gemm-bf16.json"
    step attention 240 "$TS" kernels --backend cuda --ops attention --preset small --json "$W/attention.json"
    ;;
  train)
    for m in mlp cnn transformer; do
      for p in float32 bfloat16; do
        step "train-$m-$p" 180 "$TS" train --device cuda --model "$m" --preset tiny --steps 50 --precision "$p" --json "$W/train-$m-$p.json"
      done
    done
    step train-gpt2 300 "$TS" train --device cuda --model transformer --preset gpt2 --batch 8 --steps 30 --precision bfloat16 --json "$W/gpt2.json"
    if [ -f scripts/compare-pytorch-train.py ]; then
      step pytorch-compare 420 python3 scripts/compare-pytorch-train.py --trainscope "$TS" --out "$W"
    fi
    ;;
  layouts)
    step layout-ref 120 "$TS" train --device cuda:0 --model transformer --preset tiny --steps 10 --batch 8 --micro-batches 4 --json "$W/layout-ref.json"
    for l in "--dp 2" "--dp 2 --zero 1" "--dp 2 --zero 3" "--tp 2" "--pp 2 --micro-batches 4" "--pp 2 --micro-batches 4 --pp-schedule gpipe"; do
      name="layout$(echo "$l" | tr -d ' -')"
      # shellcheck disable=SC2086
      pair "$name" 180 train --device cuda:0 --model transformer --preset tiny --steps 10 --batch 8 $l --json "$W/$name.json"
    done
    ;;
  profile)
    step cupti-test 120 "$B/bin/ts_gpu_tests" --gtest_filter='CuptiActivity.*:BatchStaging.*'
    step trace 300 "$TS" train --device cuda:0 --model transformer --preset small --steps 20 --precision bfloat16 --trace "$W/cupti" --json "$W/cupti.json"
    step coverage 120 "$TS" analyze "$W/cupti" --json "$W/cupti-analysis.json" --check-kernel-coverage 5
    step telemetry 300 env TRAINSCOPE_TELEMETRY_MS=50 "$TS" train --device cuda --model transformer --preset gpt2 --batch 8 --steps 60 --precision bfloat16 --json "$W/tel.json"
    ;;
  esac
done

cp "$summary" "$W/"
tar -C "$(dirname "$W")" -czf "$OUT/gpu-$tag.tar.gz" "$(basename "$W")"
echo "gpu-validate: summary $summary, everything in $OUT/gpu-$tag.tar.gz" >&2
cat "$summary"
