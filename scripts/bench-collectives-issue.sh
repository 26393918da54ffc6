#!/usr/bin/env bash
# Benchmark (not a test): the two forms of the MPI calls training issues, blocking (MPI_Allreduce) and nonblocking
# waited for at once (MPI_Iallreduce + MPI_Wait, `collectives --issue both`), for all_reduce, all_gather and
# reduce_scatter out of place at sizes 1 KiB .. max bytes by 16x. Several rounds, each one run measuring both forms
# (each op's blocking section, then its nonblocking one), so that a noisy host's drift falls on both. The table: per
# op and size, the median over rounds of each form's median time, and nonblocking / blocking. The load average is
# printed before and after: on a busy host the figures measure the host too.
#   scripts/bench-collectives-issue.sh [ranks=2] [rounds=3] [max bytes=4194304] [iterations=50]
# With TS_BUILD_GIVEN=1 the trainscope in TS_BUILD (default build/) is used as it is, without setup.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ts_bench_start
ts_mpi_env
NP="${1:-2}"
ROUNDS="${2:-3}"
MAX="${3:-$((4 << 20))}"
ITERS="${4:-50}"
PY="$(ts_python)"

echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$ROUNDS"); do
  echo "bench-collectives-issue: round $round/$ROUNDS" >&2
  mpirun -np "$NP" "$TS_BUILD/trainscope" collectives --backend mpi --ops all_reduce,all_gather,reduce_scatter \
    --issue both --placement out -b 1K -e "$MAX" -f 16 -w 5 -n "$ITERS" --json "$work/round-$round.json" >/dev/null
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$work" "$ROUNDS" "$NP" <<'PYEOF'
import json, statistics, sys
from collections import defaultdict
work, rounds, ranks = sys.argv[1], int(sys.argv[2]), sys.argv[3]
times = defaultdict(list)  # (op, bytes, issue) -> each round's median time
for r in range(1, rounds + 1):
    for rec in json.load(open(f"{work}/round-{r}.json"))["records"]:
        if rec["kind"] == "collective" and rec["check"]["passed"]:
            times[(rec["op"], rec["bytes"], rec["issue"])].append(rec["time_us"]["median"])
print(f"# {ranks} ranks, {rounds} round(s); time = median over rounds of each run's median (us), out of place")
print(f"# {'op':<15} {'bytes':>9} {'blocking':>10} {'nonblocking':>12} {'nb/b':>6}")
for op, size in sorted({(k[0], k[1]) for k in times}):
    b, nb = (statistics.median(times[(op, size, f)]) for f in ("blocking", "nonblocking"))
    print(f"  {op:<15} {size:>9} {b:>10.1f} {nb:>12.1f} {nb / b:>6.2f}")
PYEOF
