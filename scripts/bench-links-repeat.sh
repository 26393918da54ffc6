#!/usr/bin/env bash
# Benchmark (not a test): does `trainscope links`' MPI bandwidth repeat? RUNS identical runs of
# `trainscope links --tests mpi` (4 MiB messages, window 64, 5 warm-up and 20 timed windows: the defaults) interleaved
# with osu_bw's 4 MiB figure (its defaults: window 64, 2 warm-up and 20 timed windows) under the same mpirun, 2 ranks
# on this host, A B B A (trainscope first in odd rounds, osu_bw first in even ones) so that drift of a noisy machine
# falls on both. Prints each run's figure and the load average before it, then each tool's median and spread
# ((max - min) / median) and trainscope / osu_bw. The target (issue #40): trainscope's runs within 5% of each other.
#   scripts/bench-links-repeat.sh [runs=5] [osu_bw binary=$OSU_BW]
# OSU_BW defaults to /tmp/osu/inst/libexec/osu-micro-benchmarks/mpi/pt2pt/osu_bw; its 4194304-byte line is read
# (MB/s, 1e6 bytes/s). With TS_BUILD_GIVEN=1 the programs in TS_BUILD (default build/) are used as they are, without
# setup.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ts_bench_start
ts_mpi_env
RUNS="${1:-5}"
OSU_BW="${2:-${OSU_BW:-/tmp/osu/inst/libexec/osu-micro-benchmarks/mpi/pt2pt/osu_bw}}"
[[ -x "$OSU_BW" ]] || { echo "bench-links-repeat: error: no osu_bw at $OSU_BW (give its path as the second argument or OSU_BW)" >&2; exit 2; }

load() { cut -d' ' -f1-3 /proc/loadavg; }
trainscope_run() {
  echo "$(load)" > "$work/ts-$1.load"
  mpirun -np 2 "$TS_BUILD/trainscope" links --tests mpi --json "$work/ts-$1.json" > /dev/null
}
osu_run() {
  echo "$(load)" > "$work/osu-$1.load"
  mpirun -np 2 "$OSU_BW" > "$work/osu-$1.txt"
}

echo "bench-links-repeat: $RUNS round(s), $(nproc) CPU(s); $(uptime)" >&2
for run in $(seq 1 "$RUNS"); do
  echo "bench-links-repeat: round $run/$RUNS" >&2
  if (( run % 2 )); then trainscope_run "$run"; osu_run "$run"; else osu_run "$run"; trainscope_run "$run"; fi
done
echo "bench-links-repeat: done; $(uptime)" >&2

PY="$(ts_python json)"
"$PY" - "$work" "$RUNS" <<'PYEOF'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
ts, osu = [], []
print("MPI bandwidth, 4 MiB messages, 2 ranks on one host, interleaved A B B A\n")
print("| round | load (1, 5, 15 min) before trainscope | trainscope (GB/s) | load before osu_bw | osu_bw (GB/s) |")
print("|---:|---|---:|---|---:|")
for r in range(1, runs + 1):
    [bw] = [x for x in json.load(open(f"{work}/ts-{r}.json"))["records"] if x["kind"] == "link" and x["test"] == "mpi_bandwidth"]
    lines = [line.split() for line in open(f"{work}/osu-{r}.txt") if line.split()[:1] == ["4194304"]]
    if not lines:
        sys.exit(f"bench-links-repeat: error: osu_bw printed no 4194304-byte line (see {work}/osu-{r}.txt)")
    ts.append(bw["bandwidth_gbps"])
    osu.append(float(lines[0][1]) / 1e3)
    print(f"| {r} | {open(f'{work}/ts-{r}.load').read().strip()} | {ts[-1]:.3f} | {open(f'{work}/osu-{r}.load').read().strip()} | {osu[-1]:.3f} |")


def spread(xs):
    return (max(xs) - min(xs)) / statistics.median(xs) * 100


print(f"\ntrainscope: median {statistics.median(ts):.3f} GB/s, spread {spread(ts):.1f}% "
      f"({'within' if spread(ts) <= 5 else 'OUTSIDE'} the 5% target)")
print(f"osu_bw:     median {statistics.median(osu):.3f} GB/s, spread {spread(osu):.1f}%")
print(f"trainscope / osu_bw (medians): {statistics.median(ts) / statistics.median(osu):.3f}")
sys.exit(0 if spread(ts) <= 5 else 1)
PYEOF
