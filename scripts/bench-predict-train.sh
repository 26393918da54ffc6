#!/usr/bin/env bash
# Benchmark (not a test): `trainscope predict train` against measured training steps (issue #41's validation on one
# machine). Calibration, taken first and only: a one-process `train` of each model at every micro-batch size the
# layouts use and a `--tp 2` one (the tensor-parallel layout's slices), and a `collectives` sweep at 2 ranks of the ops
# the layouts issue, each MPI call in both forms
# (--issue both), from hot and from cold caches (--cache both: predict train takes the cold series). Then per model
# and layout at 2 ranks: the plan (`train --plan 2`), the measured run, and the prediction beside it (`predict train --measured`) three ways from the same measurements: the MPI mode of progress
# over the nonblocking calls' series (what the trainer issues), the same over the blocking calls' series (what the
# calibration was before --issue), NCCL's mode of progress, and MPI's over the hot-cache series (a sweep's loop, what
# the calibration was before --cache; the others take the cold ones). The table: predicted and measured step (the measured
# one the median of the timed steps), the errors, and per model the Kendall tau between the predicted and the measured
# ranking of its layouts; the last lines the median and worst |error| (issue #41's goal: median <= 10%, every layout
# within 25%, tau >= 0.8). The load average is printed before and after: on a busy host both sides measure the host.
#   scripts/bench-predict-train.sh [steps=20] [models="mlp:small transformer:tiny cnn:tiny"] [dp-calibration=]
#                                  [layouts="0 1 ... 12": indices into LAYOUTS below; 10-12 ps-async, its steady state]
# With TS_BUILD_GIVEN=1 the trainscope in TS_BUILD (default build/) is used as it is, without setup.sh; TS_BENCH_KEEP=DIR
# keeps the files (calibration, plans, runs, predictions); TS_BENCH_FROM=DIR (such a folder) measures nothing and
# predicts its runs again with this tree's model: a change to the model compared on the same measurements.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
FROM="${TS_BENCH_FROM:-}"
if [[ -n "$FROM" && ! -f "$FROM/sweep.json" ]]; then  # before the build: one line
  echo "bench-predict-train: error: TS_BENCH_FROM=$FROM holds no sweep.json (a folder TS_BENCH_KEEP kept?)" >&2
  exit 2
fi
ts_bench_start
ts_mpi_env
STEPS="${1:-20}"
MODELS="${2:-mlp:small transformer:tiny cnn:tiny}"
DP_CALIBRATION="${3:-}"  # non-empty: calibrate compute from a 2-rank data-parallel run too (compute.py prefers it)
BATCH=16
PY="$(ts_python scipy)"
TS="$TS_BUILD/trainscope"
LAYOUTS=("--dp 2" "--dp 2 --overlap off" "--dp 2 --micro-batches 2" "--dp 2 --zero 1" "--dp 2 --zero 2"
         "--dp 2 --zero 3" "--dp 2 --zero 3 --prefetch 0" "--tp 2" "--pp 2 --micro-batches 4"
         "--pp 2 --micro-batches 4 --pp-schedule gpipe"
         "--sync ps-async --staleness 0" "--sync ps-async --staleness 1" "--sync ps-async --ps-shards 2 --staleness 1")
read -r -a WHICH <<<"${4:-${!LAYOUTS[*]}}"
# The predictions made of each run: name (the table's column and the file's tag) and predict train's flags.
PREDICTIONS=("in-waits:--progress in-waits --issue nonblocking" "blocking-calls:--progress in-waits --issue blocking"
             "independent:--progress independent --issue nonblocking" "hot-caches:--progress in-waits --cache hot")

if [[ -n "$FROM" ]]; then
  cp -r "$FROM/." "$work"
  rm -f "$work"/*-predict-*.log "$work"/*-layout-*.txt
  echo "# predicted again from $FROM: nothing measured"
else
  echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  mpirun -np 2 --oversubscribe "$TS" collectives --backend mpi -b 8 -e 8M -f 4 -n 50 -w 5 --placement both --cache both \
    --ops all_reduce,all_gather,reduce_scatter,broadcast,reduce,sendrecv,send --issue both --json "$work/sweep.json" >/dev/null
  echo "# calibrated collectives: $work/sweep.json"
fi
for spec in $MODELS; do
  model="${spec%%:*}" preset="${spec##*:}" m="$work/${spec/:/-}"
  # The micro-batches the layouts run at: batch 16 over dp 2 x 1..2 micro-batches, pp's 4; and a tp 2 run at the tp
  # layout's 16 (a folder kept before it had none: its tp layout is costed from the one-process runs).
  if [[ -n "$FROM" ]]; then
    cal=("$m-cal-4.json" "$m-cal-8.json" "$m-cal-16.json")
    [[ -f "$m-cal-tp2-$BATCH.json" ]] && cal+=("$m-cal-tp2-$BATCH.json")
  else
    # shellcheck disable=SC2207  # mktemp paths have no spaces; an assignment fails with its substitution (set -e)
    cal=($(ts_compute_calibration "$TS" "$model" "$preset" "$STEPS" "$m" 4 8 16)
         "$(ts_tp_calibration "$TS" "$model" "$preset" "$STEPS" "$m" "$BATCH")")
  fi
  cal+=("$work/sweep.json")
  if [[ -n "$DP_CALIBRATION" ]]; then  # a 2-rank data-parallel run: compute under both ranks' contention (--dp 2 itself)
    if [[ -z "$FROM" ]]; then
      mpirun -np 2 --oversubscribe "$TS" train --model "$model" --preset "$preset" --batch "$BATCH" --dp 2 \
        --steps "$STEPS" --no-ceiling --log-every 1000 --json "$m-cal-dp2.json" >/dev/null
    fi
    cal+=("$m-cal-dp2.json")
  fi
  for i in "${WHICH[@]}"; do
    read -r -a flags <<<"${LAYOUTS[$i]}"
    # The cnn's batch norms are synchronised over data parallelism by default; kept off (the plan schedules
    # SyncBatchNorm now) so that the tables compare with the runs before it did.
    extra=(); [[ "$model" == cnn ]] && extra=(--sync-bn off)
    common=(--model "$model" --preset "$preset" --batch "$BATCH" "${extra[@]}" "${flags[@]}")
    if [[ -n "$FROM" ]]; then
      [[ -f "$m-run-$i.json" ]] || { echo "# $spec ${LAYOUTS[$i]}: not in $FROM"; continue; }
    elif ! "$TS" train "${common[@]}" --plan 2 --json "$m-plan-$i.json" >"$m-plan-$i.log" 2>&1; then
      echo "# $spec ${LAYOUTS[$i]}: no plan ($(tail -1 "$m-plan-$i.log"))"
      continue
    else
      mpirun -np 2 --oversubscribe "$TS" train "${common[@]}" --steps "$STEPS" --no-ceiling --log-every 1000 \
        --json "$m-run-$i.json" >/dev/null
    fi
    # Every prediction from the same measurements (docs/prediction.md, "--progress" and "What is fitted").
    predicted=1
    for p in "${PREDICTIONS[@]}"; do
      read -r -a pflags <<<"${p#*:}"
      if ! "$TS" predict train --calibration "${cal[@]}" --plan "$m-plan-$i.json" --measured "$m-run-$i.json" \
        "${pflags[@]}" --json "$m-${p%%:*}-$i.json" >>"$m-predict-$i.log" 2>&1; then
        echo "# $spec ${LAYOUTS[$i]}: not predicted ($(tail -1 "$m-predict-$i.log"))"
        predicted=0
        break
      fi
    done
    if [[ "$predicted" == 1 ]]; then echo "${LAYOUTS[$i]}" >"$m-layout-$i.txt"; fi
  done
done
[[ -n "$FROM" ]] || echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$work" "$MODELS" "${PREDICTIONS[@]%%:*}" <<'PYEOF'
import glob, json, statistics, sys
from scipy.stats import kendalltau
work, models, MODES = sys.argv[1], sys.argv[2].split(), sys.argv[3:]  # MODES: the predictions' names, files' tags
widths = [max(12, len(mode) + 4) for mode in MODES]
print(f"# {'model':<17} {'layout':<42}" + "".join(f" {mode + '(ms)':>{w}} {'error':>8}" for mode, w in zip(MODES, widths))
      + f" {'measured(ms)':>12}")
errors = {mode: [] for mode in MODES}
for spec in models:
    pred, meas = {mode: [] for mode in MODES}, []
    for path in sorted(glob.glob(f"{work}/{spec.replace(':', '-')}-layout-*.txt")):
        # one train_prediction record in each prediction's file
        records = {mode: json.load(open(path.replace("-layout-", f"-{mode}-").replace(".txt", ".json")))["records"][0]
                   for mode in MODES}
        layout = open(path).read().strip()
        measured = records[MODES[0]]["measured"]["step_us"]
        cells = "".join(f" {records[mode]['step_us'] / 1e3:>{w}.3f} {records[mode]['measured']['error']:>+8.1%}"
                        for mode, w in zip(MODES, widths))
        print(f"  {spec:<17} {layout:<42}{cells} {measured / 1e3:>12.3f}")
        meas.append(measured)
        for mode in MODES:
            pred[mode].append(records[mode]["step_us"])
            errors[mode].append(abs(records[mode]["measured"]["error"]))
    if len(meas) >= 2:
        taus = ", ".join(f"{mode} {kendalltau(pred[mode], meas)[0]:.2f}" for mode in MODES)
        print(f"# {spec}: Kendall tau of the layouts' predicted vs measured ranking over {len(meas)} layouts: {taus}")
for mode in MODES:
    if errors[mode]:
        e = errors[mode]
        print(f"# all {len(e)} predictions, {mode}: median |error| {statistics.median(e):.1%}, worst {max(e):.1%}, "
              f"within 25%: {sum(x <= 0.25 for x in e)}")
PYEOF
