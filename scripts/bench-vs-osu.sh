#!/usr/bin/env bash
# Benchmark (not a test): trainscope against the OSU Micro-Benchmarks on the same MPI and mpirun (issue #40):
# all_reduce, all_gather and bcast 8 B .. 16 MiB, reduce_scatter 8 and 16 MiB, and the 8-byte ping-pong latency.
# The two alternate A B B A in every round, so that the drift of a shared machine falls on both; the table gives,
# per size, the median over the runs of each side and their ratio (trainscope / OSU; the acceptance: within 1.05,
# reduce_scatter 1.10). What each side's figure is: trainscope's, the median over iterations of each iteration's
# slowest rank (docs/architecture.md, Measurement rules), beside it the fastest and the slowest process's own
# medians and its empty-op baseline (the same timed loop around no operation); OSU's, the mean over iterations
# averaged over ranks (osu_latency: the whole loop's time per half round trip). At small sizes the slowest rank
# of an iteration carries the skew of the barrier's exit, which OSU's average over ranks halves: the table's first
# trainscope column is OSU's own statistic from the record (rank_spread.mean_of_process_means_us; the latency: the
# mean of the round trips), which the verdict lines judge; the slowest rank's median follows. Both run --placement
# out / MPI's own buffers, with the same warm-up and iterations at every size.
#   scripts/bench-vs-osu.sh [OSU_MPI_DIR] [rounds=2] [iterations=200] [warm-up=20] [ranks=2]
# OSU_MPI_DIR holds collective/osu_allreduce ... and pt2pt/osu_latency (an OSU 5.x install's
# libexec/osu-micro-benchmarks/mpi; default $OSU_MPI or /tmp/osu/inst/libexec/osu-micro-benchmarks/mpi).
# With TS_BUILD_GIVEN=1 the trainscope in TS_BUILD (default build/) is used as it is, without setup.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
OSU="${1:-${OSU_MPI:-/tmp/osu/inst/libexec/osu-micro-benchmarks/mpi}}"
ROUNDS="${2:-2}" ITERS="${3:-200}" WARMUP="${4:-20}" NP="${5:-2}"
for b in collective/osu_allreduce collective/osu_allgather collective/osu_bcast collective/osu_reduce_scatter pt2pt/osu_latency; do
  [[ -x "$OSU/$b" ]] || { echo "bench-vs-osu: error: $OSU/$b not found (give OSU_MPI_DIR)" >&2; exit 2; }
done
ts_bench_start
ts_mpi_env
TS=("$TS_BUILD/trainscope")
SWEEP=(-f 2 -w "$WARMUP" -n "$ITERS" --no-check --backend mpi)
MAX=$((16 << 20))

# One benchmark's pair of commands: trainscope writes JSON to $work/<name>-ts-<run>.json, OSU its table to
# $work/<name>-osu-<run>.txt.
ts_run() {  # name run args...
  local name="$1" run="$2"
  shift 2
  mpirun -np "$NP" "${TS[@]}" "$@" --json "$work/$name-ts-$run.json" >/dev/null
}
osu_run() {  # name run binary args...
  local name="$1" run="$2" bin="$3"
  shift 3
  mpirun -np "$NP" "$OSU/$bin" "$@" >"$work/$name-osu-$run.txt"
}
pair() {  # name run: trainscope's and OSU's command for the benchmark, in the order the run's place in A B B A asks
  local name="$1" run="$2" order="$3"
  local -a ts osu
  case "$name" in
    all_reduce) ts=(collectives --ops all_reduce -b 8 -e "$MAX" --placement out "${SWEEP[@]}")
                osu=(collective/osu_allreduce -m "8:$MAX" -i "$ITERS" -x "$WARMUP") ;;
    # trainscope's all_gather bytes are the whole gathered buffer, OSU's the block each rank sends.
    all_gather) ts=(collectives --ops all_gather -b $((8 * NP)) -e $((MAX * NP)) --placement out "${SWEEP[@]}")
                osu=(collective/osu_allgather -m "8:$MAX" -i "$ITERS" -x "$WARMUP") ;;
    bcast) ts=(collectives --ops broadcast -b 8 -e "$MAX" --placement both "${SWEEP[@]}")
           osu=(collective/osu_bcast -m "8:$MAX" -i "$ITERS" -x "$WARMUP") ;;
    reduce_scatter) ts=(collectives --ops reduce_scatter -b 8M -e "$MAX" --placement out "${SWEEP[@]}")
                    osu=(collective/osu_reduce_scatter -m "$((8 << 20)):$MAX" -i "$ITERS" -x "$WARMUP") ;;
    # osu_latency (5.x) runs every size to 4 MiB: its 8-byte row is compared. trainscope's warm-up is -w x 10 round trips.
    latency) ts=(links --tests mpi --latency-bytes 8 --bandwidth-bytes 8 --window 1 -n 1 -w "$(( (WARMUP + 9) / 10 ))"
                 --latency-iters $((ITERS * 5)))
             osu=(pt2pt/osu_latency -i $((ITERS * 5)) -x "$WARMUP") ;;
  esac
  if [[ "$order" == AB ]]; then
    ts_run "$name" "$run" "${ts[@]}"
    osu_run "$name" "$run" "${osu[@]}"
  else
    osu_run "$name" "$run" "${osu[@]}"
    ts_run "$name" "$run" "${ts[@]}"
  fi
}

echo "bench-vs-osu: load before: $(uptime)" >&2
run=0
for round in $(seq 1 "$ROUNDS"); do
  for order in AB BA; do
    run=$((run + 1))
    echo "bench-vs-osu: round $round/$ROUNDS ($order)" >&2
    for name in all_reduce all_gather bcast reduce_scatter latency; do pair "$name" "$run" "$order"; done
  done
done
echo "bench-vs-osu: load after: $(uptime)" >&2

PY="$(ts_python json)"
"$PY" - "$work" "$run" "$NP" "$ITERS" "$WARMUP" <<'PYEOF'
import json, statistics, sys
work, runs, np, iters, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
LIMIT = {"reduce_scatter": 1.10}

def osu_table(path, want=None):
    out = {}
    for line in open(path):
        parts = line.split()
        if len(parts) >= 2 and parts[0].isdigit():
            out[int(parts[0])] = float(parts[1])
    return out

def ts_records(path):
    return json.load(open(path))["records"]

print(f"trainscope / OSU, MPI, {np} ranks, {iters} iterations after {warmup} warm-up; median over {runs} runs of each "
      "side (A B B A)\n")
print("| benchmark | size (B) | OSU (us) | trainscope, OSU's statistic (us) | ratio | trainscope, slowest rank (us) | ratio "
      "| trainscope's processes' medians (us) | trainscope empty-op (us) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
worst = {}
for name in ("all_reduce", "all_gather", "bcast", "reduce_scatter", "latency"):
    osu, ts, same, empty, procs = {}, {}, {}, {}, {}
    for r in range(1, runs + 1):
        table = osu_table(f"{work}/{name}-osu-{r}.txt")
        for size, us in table.items():
            if name != "latency" or size == 8:
                osu.setdefault(size, []).append(us)
        for rec in ts_records(f"{work}/{name}-ts-{r}.json"):
            if name == "latency":
                if rec.get("kind") == "link" and rec.get("test") == "mpi_latency":
                    ts.setdefault(("", 8), []).append(statistics.median(rec["samples_us"]))
                    same.setdefault(("", 8), []).append(statistics.mean(rec["samples_us"]))  # osu_latency's mean
                continue
            if rec.get("kind") != "collective":
                continue
            size = rec["bytes"] // np if name == "all_gather" else rec["bytes"]  # OSU's size: each rank's block
            place = "in place" if rec["in_place"] else "out of place" if name == "bcast" else ""
            ts.setdefault((place, size), []).append(rec["time_us"]["median"])
            spread = rec["rank_spread"]
            if "mean_of_process_means_us" in spread:  # OSU's: every rank's mean, averaged over the ranks
                same.setdefault((place, size), []).append(spread["mean_of_process_means_us"])
            empty.setdefault((place, size), []).append(rec["empty_op_us"]["median"])
            procs.setdefault((place, size), []).append((spread["fastest_median_us"], spread["slowest_median_us"]))
    for (place, size) in sorted(ts, key=lambda k: (k[1], k[0])):
        if size not in osu:
            continue
        o, t = statistics.median(osu[size]), statistics.median(ts[(place, size)])
        ratio = t / o if o > 0 else float("inf")
        m = statistics.median(same[(place, size)]) if (place, size) in same else None
        like = m / o if m is not None and o > 0 else None
        label = f"{name} {place}".strip()
        worst[label] = max(worst.get(label, 0.0), like if like is not None else ratio)
        e = f"{statistics.median(empty[(place, size)]):.3f}" if (place, size) in empty else "—"
        p = procs.get((place, size))
        p = f"{statistics.median(a for a, _ in p):.2f}–{statistics.median(b for _, b in p):.2f}" if p else "—"
        mm = f"{m:.2f} | {like:.2f}" if m is not None and like is not None else "— | —"
        print(f"| {label} | {size} | {o:.2f} | {mm} | {t:.2f} | {ratio:.2f} | {p} | {e} |")
print()
for label, w in worst.items():
    limit = LIMIT.get(label.split()[0], 1.05)
    print(f"{label}: largest ratio on OSU's statistic {w:.2f} ({'within' if w <= limit else 'OUTSIDE'} {limit:.2f})")
PYEOF
