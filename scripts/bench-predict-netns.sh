#!/usr/bin/env bash
# Benchmark (not a test): `trainscope predict train` against training steps measured across the network-namespace
# cluster (scripts/netns-cluster.sh) at several link rates (issue #41's fabric validation). N hosts x 1 rank (N = ranks,
# 2 or 4): at 2 ranks on a 2-core machine each rank computes on a core of its own, as the calibration's; at 4 the ranks
# share the cores, which only the calibration across the cluster (below) carries.
# Compute calibration, taken once (compute does not cross the link): one-process runs of each model at the
# micro-batches the layouts use, one thread, and a `--tp 2` run on this host at the tp layouts' micro-batch (a slice's
# GEMMs: compute.py gives a tp layout the run nearest its degree). Then per rate, every host's link capped at it both
# ways (tbf; "off": unshaped): a `collectives` sweep at N ranks across the cluster of the ops the layouts issue, each MPI call in both
# forms (--issue both: the trainer issues the nonblocking one, Open MPI runs the two through different components), and
# per model and layout the plan (`train --plan N`, made once), a run across the cluster and `predict train` from that
# rate's sweep (its nonblocking series; the blocking series' prediction beside it, what the calibration was before).
# The fabric what-if: each rate's runs predicted again from the reference rate's sweep (the last rate), against the
# prediction from the rate's own sweep: swapping a link class's measured costs for another's is what moves it.
# Per rate: model, layout, predicted, band, measured, error; median and worst |error|; Kendall tau of the layouts'
# predicted vs measured ranking per model (issue #41's goal: median <= 10%, every layout within 25%, tau >= 0.8).
# dp-calibration non-empty: compute is also calibrated from `--dp N` runs across the cluster before any link is
# shaped, at each micro-batch the layouts use (compute under the ranks' contention; compute.py prefers a run at the
# layout's micro-batch and tp degree and, of those, world size), and at 4 ranks `--tp 2 --dp 2` runs at the same
# micro-batches (a tp slice's compute under the same contention).
#   scripts/bench-predict-netns.sh [rates="100mbit 1gbit off"] [steps=20] [models="mlp:small transformer:tiny"] [dp-calibration=]
#                                  [ranks=2]
# TS_BENCH_KEEP=DIR keeps the result files there (plans, runs, sweeps, predictions: `report` and `compare` read them);
# TS_BENCH_FROM=DIR (such a folder, the same arguments) measures nothing and predicts its runs again with this tree's
# model: a change to the model compared on the same measurements.
# With TS_BUILD_GIVEN=1 the trainscope in TS_BUILD (default build/) is used as it is, without setup.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RATES="${1:-100mbit 1gbit off}"
STEPS="${2:-20}"
MODELS="${3:-mlp:small transformer:tiny}"
DP_CALIBRATION="${4:-}"
RANKS="${5:-2}"
BATCH=16
# Checked before any work: the arguments, then root and iproute2's netns (the cluster's).
case "$RANKS" in
  # The first six at 2 ranks and the first eight at 4 are those of the earlier tables (docs/prediction.md); at 2 ranks
  # the ten are bench-predict-train.sh's; 10 + 13 layouts per model over the two rank counts (issue #41: >= 20).
  2) LAYOUTS=("--dp 2" "--dp 2 --overlap off" "--dp 2 --zero 1" "--dp 2 --zero 3 --prefetch 0" "--tp 2"
              "--pp 2 --micro-batches 4" "--dp 2 --micro-batches 2" "--dp 2 --zero 2" "--dp 2 --zero 3"
              "--pp 2 --micro-batches 4 --pp-schedule gpipe") ;;
  4) LAYOUTS=("--dp 4" "--dp 4 --overlap off" "--dp 4 --zero 1" "--dp 4 --zero 3 --prefetch 0" "--tp 2 --dp 2"
              "--pp 2 --dp 2 --micro-batches 2" "--pp 4 --micro-batches 4" "--tp 4" "--dp 4 --zero 2" "--dp 4 --zero 3"
              "--pp 2 --dp 2 --micro-batches 2 --pp-schedule gpipe" "--tp 2 --pp 2 --micro-batches 4"
              "--pp 4 --micro-batches 4 --pp-schedule gpipe") ;;
  *) echo "bench-predict-netns: error: ranks $RANKS: 2 or 4 (one rank per host)" >&2; exit 2 ;;
esac
FROM="${TS_BENCH_FROM:-}"
if [[ -n "$FROM" ]]; then  # a kept folder: every rate's sweep and every model's calibration there
  for rate in $RATES; do
    [[ -f "$FROM/rate-$rate/sweep.json" ]] ||
      { echo "bench-predict-netns: error: TS_BENCH_FROM=$FROM holds no rate-$rate/sweep.json (a folder TS_BENCH_KEEP kept?)" >&2; exit 2; }
  done
  for spec in $MODELS; do
    [[ -f "$FROM/${spec/:/-}-cal.list" ]] ||
      { echo "bench-predict-netns: error: TS_BENCH_FROM=$FROM holds no ${spec/:/-}-cal.list (not measured for $spec)" >&2; exit 2; }
  done
else
  [ "$(id -u)" = 0 ] || { echo "bench-predict-netns: error: needs root (the cluster's network namespaces)" >&2; exit 2; }
  ip netns list >/dev/null 2>&1 || { echo "bench-predict-netns: error: 'ip netns' is unavailable (iproute2)" >&2; exit 2; }
fi
# Its own prefix and subnet: a cluster the user or the tests have up stays theirs.
export TS_NETNS_PREFIX="${TS_NETNS_PREFIX:-tsbench}" TS_NETNS_NET="${TS_NETNS_NET:-10.78.0}"
CLUSTER="$TS_ROOT/scripts/netns-cluster.sh"
ts_bench_start
# The cluster goes with the script, failed or not.
trap '"$CLUSTER" down; ts_bench_end' EXIT
trap 'exit 130' INT TERM  # interrupted: exit, which runs the EXIT trap (bash takes it when the running command ends)
ts_mpi_env
PY="$(ts_python scipy)"
TS="$TS_BUILD/trainscope"
say() { ts_stage bench-predict-netns "$@"; }
# mpirun across the cluster, one rank per host, each rank with one compute thread (as the calibration).
across() { "$CLUSTER" launch mpirun -np "$RANKS" -x TRAINSCOPE_THREADS=1 "$TS" "$@"; }

REF="${RATES##* }"
# Calibrates, plans and measures into $work (the cluster up from here on).
measure() {
  echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  for spec in $MODELS; do
    model="${spec%%:*}" preset="${spec##*:}" m="$work/${spec/:/-}"
    # The micro-batches the layouts run at: batch 16 over dp 2 or 4, tp's whole 16, pp's 16 / 4 (or / 2 over dp 2).
    ts_compute_calibration "$TS" "$model" "$preset" "$STEPS" "$m" 4 8 16 >"$m-cal.list"
    ts_tp_calibration "$TS" "$model" "$preset" "$STEPS" "$m" "$BATCH" >>"$m-cal.list"  # the tp layouts' slices
    for i in "${!LAYOUTS[@]}"; do
      read -r -a flags <<<"${LAYOUTS[$i]}"
      extra=(); [[ "$model" == cnn ]] && extra=(--sync-bn off)  # as bench-predict-train.sh: comparable with the earlier tables
      if ! "$TS" train --model "$model" --preset "$preset" --batch "$BATCH" "${extra[@]}" "${flags[@]}" --plan "$RANKS" \
        --json "$m-plan-$i.json" >"$m-plan-$i.log" 2>&1; then
        echo "# $spec ${LAYOUTS[$i]}: no plan, not run ($(tail -1 "$m-plan-$i.log"))"
        rm -f "$m-plan-$i.json"
      fi
    done
    say "$spec: compute calibrated, plans made"
  done
  "$CLUSTER" up "$RANKS"
  if [[ -n "$DP_CALIBRATION" ]]; then
    for spec in $MODELS; do
      model="${spec%%:*}" preset="${spec##*:}" m="$work/${spec/:/-}"
      extra=(); [[ "$model" == cnn ]] && extra=(--sync-bn off)
      # At 2 ranks batch 16 (micro-batch 8, the dp layouts'); at 4 each micro-batch the layouts use, 4, 8 and 16.
      for mb in $([ "$RANKS" = 2 ] && echo 8 || echo 4 8 16); do
        across train --model "$model" --preset "$preset" --batch $((mb * RANKS)) "${extra[@]}" --dp "$RANKS" \
          --steps "$STEPS" --no-ceiling --log-every 1000 --json "$m-cal-dp$RANKS-$mb.json" >/dev/null
        echo "$m-cal-dp$RANKS-$mb.json" >>"$m-cal.list"
        # At 4 ranks also `--tp 2 --dp 2` at each micro-batch: the tp layouts' slices under the same contention (the
        # 2-rank tp run on this host has a core per rank). On the 2-core VM it moved no median (docs/prediction.md).
        [ "$RANKS" = 4 ] || continue
        across train --model "$model" --preset "$preset" --batch $((mb * 2)) "${extra[@]}" --tp 2 --dp 2 \
          --steps "$STEPS" --no-ceiling --log-every 1000 --json "$m-cal-tp2dp2-$mb.json" >/dev/null
        echo "$m-cal-tp2dp2-$mb.json" >>"$m-cal.list"
      done
      say "$spec: compute calibrated from --dp $RANKS across the unshaped cluster"
    done
  fi
  for rate in $RATES; do
    for h in $(seq 1 "$RANKS"); do "$CLUSTER" shape "$TS_NETNS_PREFIX-h$h" "$rate"; done
    r="$work/rate-$rate"
    mkdir -p "$r"
    # Few iterations where a link is slow: an 8 MiB all-reduce takes about a second at 100 Mbit/s.
    iters=50; [ "$rate" = off ] || iters=5
    across collectives --backend mpi -b 8 -e 8M -f 4 -n "$iters" -w 1 --placement both \
      --ops all_reduce,all_gather,reduce_scatter,sendrecv,send --issue both --json "$r/sweep.json" >/dev/null
    say "rate $rate: collectives swept ($iters iterations)"
    for spec in $MODELS; do
      model="${spec%%:*}" preset="${spec##*:}" m="$work/${spec/:/-}"
      for i in "${!LAYOUTS[@]}"; do
        [[ -f "$m-plan-$i.json" ]] || continue  # refused by the trainer at planning (said above)
        read -r -a flags <<<"${LAYOUTS[$i]}"
        extra=(); [[ "$model" == cnn ]] && extra=(--sync-bn off)
        across train --model "$model" --preset "$preset" --batch "$BATCH" "${extra[@]}" "${flags[@]}" --steps "$STEPS" \
          --no-ceiling --log-every 1000 --json "$r/${spec/:/-}-run-$i.json" >/dev/null
        echo "$spec|${LAYOUTS[$i]}" >"$r/${spec/:/-}-layout-$i.txt"
        say "rate $rate: $spec ${LAYOUTS[$i]} measured"
      done
    done
  done
  echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
}
if [[ -n "$FROM" ]]; then
  cp -r "$FROM/." "$work"
  sed -i "s#^.*/#$work/#" "$work"/*-cal.list  # the kept calibration, where it is now
  echo "# predicted again from $FROM: nothing measured"
else
  measure
fi
# Predictions after the runs (they need no cluster): from each rate's own sweep, and from the reference rate's.
for rate in $RATES; do
  r="$work/rate-$rate"
  for spec in $MODELS; do
    m="$work/${spec/:/-}"
    mapfile -t cal <"$m-cal.list"
    for i in "${!LAYOUTS[@]}"; do
      [[ -f "$m-plan-$i.json" ]] || continue
      for from in own ref blocking; do
        sweep="$r/sweep.json" form=(--issue nonblocking)
        [ "$from" = ref ] && sweep="$work/rate-$REF/sweep.json"
        [ "$from" = blocking ] && form=(--issue blocking)
        out="$r/${spec/:/-}-predict-$from-$i"
        "$TS" predict train --calibration "${cal[@]}" "$sweep" --plan "$m-plan-$i.json" "${form[@]}" \
          --measured "$r/${spec/:/-}-run-$i.json" --json "$out.json" >"$out.log" 2>&1 ||
          echo "# rate $rate $spec ${LAYOUTS[$i]}: not predicted from the $from sweep ($(tail -1 "$out.log"))"
      done
    done
  done
done
"$PY" - "$work" "$RATES" "$REF" <<'PYEOF'
import glob, json, os, statistics, sys
from scipy.stats import kendalltau
work, rates, ref = sys.argv[1], sys.argv[2].split(), sys.argv[3]

def record(path):
    if not os.path.exists(path):
        return None
    (d,) = json.load(open(path))["records"]  # the one train_prediction record (docs/prediction.md)
    return d

for rate in rates:
    print(f"\n# rate {rate}: predicted from its own sweep's nonblocking calls (the trainer's form); 'blocking' from its"
          f" blocking calls; 'from {ref}' is the fabric what-if (the {ref} sweep)")
    print(f"# {'model':<17} {'layout':<30} {'predicted(ms)':>13} {'band(ms)':>17} {'measured(ms)':>12} {'error':>8}"
          f" {'blocking(ms)':>12} {'error':>8} {'from ' + ref + '(ms)':>14} {'error':>8}")
    errors, alt_errors, by_model = [], {"blocking": [], "ref": []}, {}
    for lay in sorted(glob.glob(f"{work}/rate-{rate}/*-layout-*.txt")):
        spec, layout = open(lay).read().strip().split("|")
        own = record(lay.replace("-layout-", "-predict-own-").replace(".txt", ".json"))
        if own is None:
            print(f"  {spec:<17} {layout:<30} not predicted")
            continue
        m, (lo, hi) = own["measured"], own["band_us"]
        cells = []
        for name, width in (("blocking", 12), ("ref", 14)):
            other = record(lay.replace("-layout-", f"-predict-{name}-").replace(".txt", ".json"))
            cells.append(f"{other['step_us'] / 1e3:>{width}.2f} {other['measured']['error']:>+8.1%}" if other
                         else f"{'-':>{width}} {'-':>8}")
            if other:
                alt_errors[name].append(abs(other["measured"]["error"]))
        print(f"  {spec:<17} {layout:<30} {own['step_us'] / 1e3:>13.2f} {f'{lo / 1e3:.2f}..{hi / 1e3:.2f}':>17} "
              f"{m['step_us'] / 1e3:>12.2f} {m['error']:>+8.1%} {' '.join(cells)}")
        errors.append(abs(m["error"]))
        by_model.setdefault(spec, []).append((own["step_us"], m["step_us"]))
    for spec, pairs in by_model.items():
        if len(pairs) >= 2:
            tau = kendalltau([p for p, _ in pairs], [q for _, q in pairs])[0]
            print(f"# rate {rate} {spec}: Kendall tau of the layouts' predicted vs measured ranking {tau:.2f} "
                  f"over {len(pairs)} layouts")
    if errors:
        print(f"# rate {rate}: {len(errors)} predictions from its own sweep: median |error| "
              f"{statistics.median(errors):.1%}, worst {max(errors):.1%}; within 25%: "
              f"{sum(e <= 0.25 for e in errors)} of {len(errors)}")
    if alt_errors["blocking"]:
        e = alt_errors["blocking"]
        print(f"# rate {rate}: the same from its blocking calls: median |error| {statistics.median(e):.1%}, "
              f"worst {max(e):.1%}; within 25%: {sum(x <= 0.25 for x in e)} of {len(e)}")
    if alt_errors["ref"] and rate != ref:
        e = alt_errors["ref"]
        print(f"# rate {rate}: the same from the {ref} sweep (no swap): median |error| "
              f"{statistics.median(e):.1%}, worst {max(e):.1%}")
PYEOF
