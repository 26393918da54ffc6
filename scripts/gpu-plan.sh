# shellcheck shell=bash
# What the GPU scripts run on a lent GPU machine, step by step (docs/gpu-validation.md): the first contact
# (scripts/gpu-first-contact.sh) and the re-run after fixes (scripts/gpu-rerun.sh) run the same steps by the
# same names, through the one runner (scripts/gpu-runner.sh). Sourced, never run.
#
# Each step's limit is a generous bound on what it should take on an H200 (most take seconds); a step starts
# only if that limit ends before the deadline. The order is the evidence's: what says most about the whole
# first (does the GPU, the libraries, every kernel test work), then training, NCCL, the two processes, the
# ceilings, a trace, and the large sizes last.

TS_GPU_SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$TS_GPU_SCRIPTS/gpu-runner.sh"
source "$TS_GPU_SCRIPTS/gpu-libpath.sh"

# The GPU test suites, the most basic first; a suite not named here (a new one) runs after these, under 60 s.
TS_GPU_SUITES=(DeviceResources:30 CudaOps:60 CudaGemm:60 CudaAttention:45 CudaTrainingOps:45 CudaTrainingErrors:30
  CudaConvSemantics:45 CudaConv:120 CudaTraining:90 BatchStaging:30 StreamGate:30 NcclWorld:45 CuptiActivity:30)

# Two processes' training on the one GPU: one job (its batch apart), a layout per step (the step's name after
# pair-train-: its flags). scripts/gpu-predict.py predicts these steps here afterwards (issue #41), from the
# calibration steps at the micro-batches the layouts run at (batch 8: the pipeline's 4 micro-batches of 2, data
# parallelism's 4 per rank, tensor parallelism's whole 8).
TS_GPU_PAIR_JOB=(train --device cuda:0 --model transformer --preset tiny --steps 10 --no-ceiling --timeout 45)
TS_GPU_PAIR_BATCH=8
TS_GPU_PAIR_LAYOUTS=("pp:--pp 2 --micro-batches 4" "dp:--dp 2 --zero 1" "tp:--tp 2" "zero3:--dp 2 --zero 3")
TS_GPU_CALIBRATION_MICRO_BATCHES=(2 4 8)

# gpu_list PLAN: "NAME LIMIT_S" per step of PLAN; the GPU tests as this checkout's build lists them.
gpu_list() {
  local root
  root="$(cd "$TS_GPU_SCRIPTS/.." && pwd)"
  TS_GPU_BIN="${TS_BUILD:-$root/build}/tests" TS_GPU_LD="" RUN_LOGS=LOGS RUN_TRACES=TRACES RUN_DIR=RUN RUNNER_LIST=1 "$1"
}

gpu_usage_line() {
  echo "usage: scripts/gpu-$1.sh [--bundle FILE.tar.gz|DIR] [--deadline SECONDS] [--out DIR]$([ "$1" = rerun ] && echo ' [--no-peers] [STEP,STEP...]')"
}

# gpu_setup MODE DEFAULT_DEADLINE ARGS...: reads the options, unpacks the bundle, finds the libraries, starts
# the runner. Sets GPU_ARGS to what is left (the re-run's step names). Returns 2 for bad usage, 1 for no bundle,
# each with one line.
gpu_setup() {
  local mode="$1" deadline="${TS_GPU_DEADLINE:-$2}"
  shift 2
  local t0
  t0="$(_runner_now_ms)"  # the unpacking counts against the deadline too
  local root bundle="" out="${OUT:-}"
  root="$(cd "$TS_GPU_SCRIPTS/.." && pwd)"
  GPU_ARGS=()
  while [ $# -gt 0 ]; do
    case "$1" in
    --bundle) bundle="${2:?}" && shift 2 ;;
    --deadline) deadline="${2:?}" && shift 2 ;;
    --out) out="${2:?}" && shift 2 ;;
    -h | --help) gpu_usage_line "$mode" && exit 0 ;;
    -*) echo "gpu-$mode: error: unknown option $1 ($(gpu_usage_line "$mode"))" >&2 && return 2 ;;
    *) GPU_ARGS+=("$1") && shift ;;
    esac
  done
  [[ "$deadline" =~ ^[0-9]+$ ]] || { echo "gpu-$mode: error: --deadline takes whole seconds, not '$deadline'" >&2 && return 2; }
  out="${out:-$root/results/gpu}"
  if [ -z "$bundle" ]; then
    for bundle in "$root/gpu-bundle.tar.gz" "$root/gpu-bundle"; do [ -e "$bundle" ] && break; done
  fi
  if [ -f "$bundle" ]; then
    local into
    into="$(mktemp -d "${TMPDIR:-/tmp}/ts-gpu-bundle.XXXXXX")"
    tar -C "$into" -xzf "$bundle" || { echo "gpu-$mode: error: cannot unpack $bundle" >&2 && return 1; }
    bundle="$into/gpu-bundle"
  fi
  if [ ! -x "$bundle/bin/trainscope" ]; then
    echo "gpu-$mode: error: no bundle at $bundle: make one here with scripts/gpu-bundle.sh and carry it (carry=[\"gpu-bundle.tar.gz\"])" >&2
    return 1
  fi
  export TS_GPU_BIN="$bundle/bin" TS_GPU_PEERS="$bundle/peers"
  TS_GPU_LOADED_LATER="$(ts_gpu_loaded_later "$bundle/loaded-later.txt")"
  export TS_GPU_LOADED_LATER
  TS_GPU_LD="$(ts_gpu_libpath "$bundle/lib")"
  export TS_GPU_LD
  export TRAINSCOPE_HOME="$root"  # the reports' data and the suites, from the working tree that travelled
  export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
  runner_init "$mode" "$out" "$deadline" "$t0"
  runner_header "bundle: $(sed -n '1,3p' "$bundle/MANIFEST.txt" 2>/dev/null | tr '\n' ';' || echo "no MANIFEST.txt")"
  runner_header "GPU: $(gpu_line)"
  runner_header "library search: $TS_GPU_LD"
}

# The GPU as nvidia-smi names it, on one line.
gpu_line() {
  local s
  s="$(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv,noheader 2>/dev/null)" ||
    s="none found (nvidia-smi failed or is missing)"
  echo "${s//$'\n'/; }"
}

# The bundle's programs under the library search; everything else (python3, nvidia-smi) runs without it. Each
# execs, so that the step's (or the rank's) process is the program itself and a signal to it reaches the program:
# call them as a step, in a pipeline or in the background, never as a command of the runner's own shell.
trainscope() { LD_LIBRARY_PATH="$TS_GPU_LD" exec "$TS_GPU_BIN/trainscope" "$@"; }
ts_gpu_tests() { LD_LIBRARY_PATH="$TS_GPU_LD" exec "$TS_GPU_BIN/ts_gpu_tests" "$@"; }
nccl_test() { LD_LIBRARY_PATH="$TS_GPU_LD" exec "$TS_GPU_PEERS/$1" "${@:2}"; }
trainscope_telemetry() { TRAINSCOPE_TELEMETRY_MS=50 trainscope "$@"; }  # the SM clock, power and temperature every 50 ms

# --- preflight: the evidence that explains every later failure -----------------------------------------------

preflight_gpu() {
  command -v nvidia-smi >/dev/null || { echo "error: nvidia-smi not found: no NVIDIA driver here" && return 1; }
  nvidia-smi || return 1
  nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,compute_mode,mig.mode.current,memory.total,memory.used,clocks.max.sm,clocks.max.mem,power.limit,pcie.link.gen.max,pcie.link.width.max --format=csv
  nvidia-smi -q -d PERFORMANCE,CLOCK,COMPUTE | sed -n '1,80p'
  nvidia-smi topo -m 2>&1 | head -n 20
  local mode
  mode="$(nvidia-smi --query-gpu=compute_mode --format=csv,noheader | head -n 1)"
  case "$mode" in
  Default) ;;
  *) echo "error: compute mode '$mode': two processes cannot share the GPU, so the pair steps will fail" && return 1 ;;
  esac
}

preflight_libs() {
  local bins=("$TS_GPU_BIN"/*) verdict rc=0
  [ -d "$TS_GPU_PEERS" ] && bins+=("$TS_GPU_PEERS"/*)
  echo "library search: $TS_GPU_LD"
  ts_gpu_check_libs "$TS_GPU_LD" "${bins[@]}" >"$RUN_LOGS/preflight-libs.ldd" || rc=1
  cat "$RUN_LOGS/preflight-libs.ldd"
  verdict="$(tail -n 1 "$RUN_LOGS/preflight-libs.ldd")"
  rm -f "$RUN_LOGS/preflight-libs.ldd"
  echo
  echo "== the NVIDIA wheels there (their versions):"
  local sp
  while IFS= read -r sp; do
    [ -n "$sp" ] && ls -d "$sp"/nvidia_*.dist-info 2>/dev/null
  done <<<"$(ts_gpu_site_packages)"
  echo "== CUDA's libraries as the loader finds them (the file each resolves to names its version, where it has one):"
  local so found sonames
  sonames="$(ts_gpu_cuda_sonames)"
  for so in $sonames; do
    found="$(ts_gpu_resolved "$so")"
    echo "$so => ${found:-not found}${found:+ ($(readlink -f "$found"))}"
  done
  so="$(grep -m 1 '^libnccl\.so' <<<"$sonames" || true)"
  echo "== NCCL as loaded: $(grep -a -o -m 1 'NCCL version [0-9][0-9.a-z+-]*' "$(ts_gpu_resolved "$so")" 2>/dev/null || echo unknown)"
  echo "== the driver's libraries (loaded at run time: libcuda by the CUDA runtime, NVML by trainscope):"
  ldconfig -p 2>/dev/null | grep -E 'libcuda\.so\.1|libnvidia-ml\.so\.1' || echo "(not in ld.so.cache: LD_LIBRARY_PATH must name them)"
  echo "$verdict"  # last: the step's line
  return $rc
}

# The device's libraries trainscope asks for (TS_GPU_DEVICE_CUDA), one a line: those it links, as the loader lists
# them, and those it loads later (TS_GPU_LOADED_LATER), by the names the build gave them, not versions written here.
ts_gpu_cuda_sonames() {
  {
    LD_LIBRARY_PATH="$TS_GPU_LD" LD_TRACE_LOADED_OBJECTS=1 /lib64/ld-linux-x86-64.so.2 "$TS_GPU_BIN/trainscope" 2>/dev/null | awk '{print $1}'
    tr ' ' '\n' <<<"$TS_GPU_LOADED_LATER"
  } | grep -E "$TS_GPU_DEVICE_CUDA" | grep -v -E '^lib(cuda|nvidia-ml)\.so' | sort -u || true
}

# Where the loader finds SONAME under the library search (empty when nowhere).
ts_gpu_resolved() {
  LD_LIBRARY_PATH="$TS_GPU_LD" LD_PRELOAD="$TS_GPU_LOADED_LATER" LD_TRACE_LOADED_OBJECTS=1 /lib64/ld-linux-x86-64.so.2 "$TS_GPU_BIN/trainscope" 2>/dev/null |
    awk -v n="$1" '$1 == n {print $3}'
}

preflight_host() {
  uname -a
  echo "cores: $(nproc)"
  free -m
  df -h / /tmp /dev/shm 2>&1
  ulimit -a
  echo "== env"
  env | sort
}

# --- the GPU tests: one process per suite, each with its own limit and JSON -------------------------------

# "Suite" or "Prefix/Suite" per line, from the binary's own list.
gpu_suites() {
  ts_gpu_tests --gtest_list_tests 2>/dev/null | sed -n 's/^\([A-Za-z0-9_/]*\)\.$/\1/p'
}

gpu_test_steps() {
  local listed
  listed="$(gpu_suites)"
  if [ -z "$listed" ]; then  # the binary cannot even start: that failure is the step
    runner_step tests-list 30 ts_gpu_tests --gtest_list_tests
    return
  fi
  local known=() entry suite limit full
  for entry in "${TS_GPU_SUITES[@]}"; do
    suite="${entry%%:*}" limit="${entry##*:}"
    known+=("$suite")
    while IFS= read -r full; do
      [ "${full##*/}" = "$suite" ] && gpu_test_step "$full" "$limit"
    done <<<"$listed"
  done
  while IFS= read -r full; do
    [[ " ${known[*]} " == *" ${full##*/} "* ]] || gpu_test_step "$full" 60
  done <<<"$listed"
}

gpu_test_step() {  # SUITE LIMIT
  local name="tests-${1##*/}"
  runner_step "$name" "$2" ts_gpu_tests --gtest_filter="$1.*" --gtest_output="json:$RUN_LOGS/$name.json"
}

# --- two processes on the one GPU -------------------------------------------------------------------------

# pair ARGS...: `trainscope ARGS` as ranks 0 and 1 of one world on this machine, both on GPU 0: LOCAL_RANK=0
# (without it rank 1 counts itself the second process of this host and asks for a second GPU), and a distinct
# NCCL_HOSTID each (NCCL refuses two ranks on one GPU unless they look like two hosts: then it joins them through
# its socket transport). The RANK/WORLD_SIZE bootstrap: there is no mpirun there. Once one rank has ended, the
# other has TS_GPU_PAIR_GRACE seconds (default 20) to end too, else it is stopped and named: a rank left waiting
# for a peer that is gone is a defect to see, not a step limit to spend.
pair() {
  local port=$((29500 + RANDOM % 2000)) log1 rc0 rc1 p0 p1 waited=0 grace=$((${TS_GPU_PAIR_GRACE:-20} * 10))
  log1="$(mktemp)"
  # The two admit only each other: a secret of their own (docs/reliability.md, "A stranger on the bootstrap port").
  TRAINSCOPE_JOB_TOKEN="gpu-pair-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  export TRAINSCOPE_JOB_TOKEN
  WORLD_SIZE=2 RANK=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port NCCL_HOSTID=trainscope-rank1 \
    trainscope "$@" >"$log1" 2>&1 &
  p1=$!
  WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port NCCL_HOSTID=trainscope-rank0 \
    trainscope "$@" &
  p0=$!
  local first status
  wait -n -p first "$p0" "$p1"
  status=$?
  local other=$p0 r=0
  if [ "$first" = "$p0" ]; then
    rc0=$status other=$p1 r=1
  else
    rc1=$status
  fi
  while kill -0 "$other" 2>/dev/null && [ $waited -lt $grace ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  if kill -0 "$other" 2>/dev/null; then
    echo "error: rank $r was still running $((grace / 10)) s after rank $((1 - r)) ended (exit $status): stopped"
    kill -TERM "$other" 2>/dev/null
    sleep 2
    kill -KILL "$other" 2>/dev/null
  fi
  wait "$other"
  local other_status=$?
  if [ $r = 0 ]; then rc0=$other_status; else rc1=$other_status; fi
  sed 's/^/[rank 1] /' "$log1"
  rm -f "$log1"
  echo "rank 0 exit $rc0, rank 1 exit $rc1"
  [ "$rc0" -ne 0 ] && return "$rc0"
  return "$rc1"
}

# --- the plans ------------------------------------------------------------------------------------------

plan_preflight() {
  runner_step preflight-gpu 20 preflight_gpu
  runner_step preflight-libs 30 preflight_libs
  runner_step preflight-host 15 preflight_host
}

plan_first_contact() {
  local L="$RUN_LOGS" T="$RUN_TRACES" m p ceiling
  plan_preflight
  gpu_test_steps
  runner_step env 30 trainscope env --json "$L/env.json"
  for m in mlp cnn transformer; do
    for p in float32 bfloat16; do
      # The GEMM ceiling (for MFU) twice only: each measurement costs seconds.
      ceiling=--no-ceiling
      [ "$m-$p" = mlp-float32 ] || [ "$m-$p" = transformer-bfloat16 ] && ceiling=--ceiling
      runner_step "train-$m-$p" 45 trainscope train --device cuda:0 --model "$m" --preset tiny --steps 20 \
        --precision "$p" $ceiling --timeout 40 --json "$L/train-$m-$p.json"
    done
  done
  runner_step nccl-world1 60 trainscope collectives --backend nccl --ops all -b 8 -e 64M -f 8 -d float32,bfloat16 \
    -o sum,max --timeout 50 --json "$L/nccl-world1.json"
  runner_step nccl-world1-graph 60 trainscope collectives --backend nccl --ops all_reduce,all_gather,reduce_scatter \
    -b 8 -e 256M -f 4 -G 20 --timeout 50 --json "$L/nccl-world1-graph.json"
  runner_step pair-nccl 75 pair collectives --backend nccl --device cuda:0 \
    --ops all_reduce,all_gather,reduce_scatter,sendrecv,send -b 8 -e 64M -f 8 --timeout 60 --json "$L/pair-nccl.json"
  local layout flags
  for layout in "${TS_GPU_PAIR_LAYOUTS[@]}"; do
    read -r -a flags <<<"${layout#*:}"
    runner_step "pair-train-${layout%%:*}" 60 pair "${TS_GPU_PAIR_JOB[@]}" --batch "$TS_GPU_PAIR_BATCH" "${flags[@]}" \
      --json "$L/pair-train-${layout%%:*}.json"
  done
  # The mixture of experts on CUDA (routing kernels, experts' GEMMs), then its experts divided over the pair: NCCL's
  # alltoallv (grouped send/receive) under --ep.
  local moe=(train --device cuda:0 --model transformer --preset moe-tiny --steps 10 --batch 8 --no-ceiling --timeout 45)
  runner_step train-moe 60 trainscope "${moe[@]}" --json "$L/train-moe.json"
  runner_step pair-train-ep 60 pair "${moe[@]}" --ep 2 --json "$L/pair-train-ep.json"
  runner_step links-gpu 60 trainscope links --tests gpu --timeout 50 --json "$L/links-gpu.json"
  runner_step kernels-small 120 trainscope kernels --backend cuda --preset small --timeout 100 --json "$L/kernels-small.json"
  # The CUPTI trace comes back in its own archive; analyze it here (trainscope analyze needs jsonschema, which
  # the device's python3 lacks): trainscope analyze DIR --check-kernel-coverage 5.
  runner_step trace 60 trainscope train --device cuda:0 --model transformer --preset small --steps 10 --precision bfloat16 \
    --no-ceiling --timeout 50 --trace "$T/trace" --json "$L/trace.json"
  runner_step gpt2 90 trainscope_telemetry train --device cuda:0 --model transformer --preset gpt2 --batch 8 --steps 10 \
    --precision bfloat16 --timeout 80 --json "$L/gpt2.json"
  # 1F1B over NCCL with GPT-2's 25 MB activations: past NCCL's per-peer buffering (issue 33, item 4).
  runner_step pair-pp-gpt2 90 pair train --device cuda:0 --model transformer --preset gpt2 --batch 8 --steps 4 \
    --pp 2 --micro-batches 4 --precision bfloat16 --no-ceiling --timeout 60 --json "$L/pair-pp-gpt2.json"
  # The compute calibration of the pair's job (scripts/gpu-predict.py, afterwards here): alone on the GPU, and as two
  # processes' data parallelism sharing it as the pair's layouts do, at each micro-batch they run at.
  local b
  for b in "${TS_GPU_CALIBRATION_MICRO_BATCHES[@]}"; do
    runner_step "cal-b$b" 30 trainscope "${TS_GPU_PAIR_JOB[@]}" --batch "$b" --json "$L/cal-b$b.json"
    runner_step "pair-cal-dp-b$b" 45 pair "${TS_GPU_PAIR_JOB[@]}" --batch $((2 * b)) --dp 2 --json "$L/pair-cal-dp-b$b.json"
  done
}

# The peers the re-run times beside trainscope in the same call: nccl-tests (when the bundle carries them) and
# PyTorch's matrix product and copies (timed with CUDA events).
plan_peers() {
  local L="$RUN_LOGS" t
  if [ -d "$TS_GPU_PEERS" ]; then
    runner_step peer-nccl-all_reduce 45 nccl_test all_reduce_perf -b 8 -e 1G -f 2 -g 1
    runner_step peer-ts-all_reduce 45 trainscope collectives --backend nccl --ops all_reduce -b 8 -e 1G -f 2 \
      --timeout 40 --json "$L/peer-ts-all_reduce.json"
    for t in all_gather reduce_scatter sendrecv; do
      runner_step "peer-nccl-$t" 30 nccl_test "${t}_perf" -b 8 -e 256M -f 4 -g 1
    done
  else
    runner_skip peer-nccl "the bundle carries no nccl-tests (make it with NCCL_TESTS_SRC=DIR scripts/gpu-bundle.sh)"
  fi
  runner_step peer-torch 60 gpu_python "$TS_GPU_SCRIPTS/gpu-peers.py" --json "$L/peer-torch.json"
  printf '[[shape]]\nop = "gemm"\nname = "square-8192"\nM = 8192\nN = 8192\nK = 8192\n' >"$RUN_DIR/square.toml"
  runner_step peer-ts-gemm 45 trainscope kernels --backend cuda --ops gemm --dtype bfloat16 --shapes "$RUN_DIR/square.toml" \
    --no-ceilings --timeout 40 --json "$L/peer-ts-gemm.json"
}

# The python3 that has PyTorch (the device's own; not ours, so no library search).
gpu_python() {
  local py
  for py in python3 /opt/torch/.venv/bin/python3; do
    if command -v "$py" >/dev/null && "$py" -c 'import importlib.util as u; exit(u.find_spec("torch") is None)' 2>/dev/null; then
      PYTHONUNBUFFERED=1 "$py" "$@"
      return
    fi
  done
  echo "error: no python3 with torch here (tried python3, /opt/torch/.venv/bin/python3)"
  return 1
}

export -f trainscope trainscope_telemetry ts_gpu_tests nccl_test pair gpu_python ts_gpu_resolved ts_gpu_cuda_sonames ts_gpu_site_packages ts_gpu_check_libs \
  _ts_gpu_path_add _ts_gpu_has_libs
