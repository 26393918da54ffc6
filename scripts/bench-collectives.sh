#!/usr/bin/env bash
# Benchmark (not a test): trainscope's MPI all_reduce times against a minimal hand-timed MPI loop
# (bench/reference/mpi_allreduce_loop.cpp: barrier, steady_clock around MPI_Allreduce, slowest rank,
# median), same sizes, same warm-up and iterations, same mpirun, in one run. The two programs alternate
# for several rounds so that drift of a noisy machine falls on both; the table gives the median over
# rounds and trainscope's overhead. The target: within 5% at 1 MiB and above.
#   scripts/bench-collectives.sh [ranks=2] [rounds=5] [max bytes=16777216] [iterations=100]
# With TS_BUILD_GIVEN=1 the programs in TS_BUILD (default build/) are used as they are, without setup.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ts_bench_start
ts_mpi_env
NP="${1:-2}"
ROUNDS="${2:-5}"
MIN=8 MAX="${3:-$((16 << 20))}" WARMUP=10 ITERS="${4:-100}"

for round in $(seq 1 "$ROUNDS"); do
  echo "bench-collectives: round $round/$ROUNDS" >&2
  mpirun -np "$NP" "$TS_BUILD/mpi_allreduce_reference" "$MIN" "$MAX" "$WARMUP" "$ITERS" > "$work/ref-$round.txt"
  mpirun -np "$NP" "$TS_BUILD/trainscope" collectives --backend mpi --ops all_reduce --placement out --no-check \
    -b "$MIN" -e "$MAX" -f 2 -w "$WARMUP" -n "$ITERS" --json "$work/ts-$round.json" > /dev/null
done

PY="$(ts_python json)"
"$PY" - "$work" "$ROUNDS" "$NP" <<'PYEOF'
import json, statistics, sys
work, rounds, np = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ref, ts = {}, {}
for r in range(1, rounds + 1):
    for line in open(f"{work}/ref-{r}.txt"):
        b, us = line.split()
        ref.setdefault(int(b), []).append(float(us))
    # The collective records only: a result also holds the hosts' telemetry records (no bytes there).
    for rec in json.load(open(f"{work}/ts-{r}.json"))["records"]:
        if rec["kind"] == "collective":
            ts.setdefault(rec["bytes"], []).append(rec["time_us"]["median"])
print(f"MPI all_reduce, float32 sum, {np} ranks, median of {rounds} rounds (each the median of the slowest rank over the iterations)\n")
print("| size (B) | hand-timed MPI loop (us) | trainscope (us) | overhead |")
print("|---:|---:|---:|---:|")
worst = 0.0
for b in sorted(ref):
    if b not in ts:
        sys.exit(f"bench-collectives: error: trainscope has no all_reduce record of {b} B (the reference loop has)")
    r, t = statistics.median(ref[b]), statistics.median(ts[b])
    over = (t - r) / r * 100
    if b >= 1 << 20:
        worst = max(worst, over)
    print(f"| {b} | {r:.2f} | {t:.2f} | {over:+.1f}% |")
verdict = "within" if worst <= 5.0 else "OUTSIDE"
print(f"\nlargest overhead at 1 MiB and above: {worst:+.1f}% ({verdict} the 5% target)")
sys.exit(0 if worst <= 5.0 else 1)
PYEOF
