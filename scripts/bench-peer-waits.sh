#!/usr/bin/env bash
# Benchmark (not a test): the dp 2 tiny transformer's exposed communication, split into waiting for peers and
# transfer (issue #40), against a collectives sweep of the training's all-reduce at the same bytes and ranks. The
# training and the sweep alternate A B B A over the rounds; the table gives, per round, process 0's exposed time,
# its waiting and transfer parts (medians per step, the record's split), the training's own all-reduce from launch
# to completion and as transfer (from the last member's launch), and the sweep of each of the step's collectives
# (the gradients' all-reduce and the loss's 8-byte mean) at its op and size, called as the training calls it (in
# place, nonblocking) from hot and from cold caches (--cache both: the step's buffers are not in cache when its
# all-reduce runs), summed per step. Issue #40's goal: the exposed transfer within 2x of the sweeps' time (the ratio
# is to the cold sweeps), the rest shown as waiting. The load
# average is printed before and after: on a busy host both sides measure the host.
#   scripts/bench-peer-waits.sh [rounds=4] [steps=40]
# With TS_BUILD_GIVEN=1 the trainscope in TS_BUILD (default build/) is used as it is, without setup.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ts_bench_start
ts_mpi_env
ROUNDS="${1:-4}"
STEPS="${2:-40}"
PY="$(ts_python numpy)"
TS="$TS_BUILD/trainscope"

train() {
  mpirun -np 2 --oversubscribe "$TS" train --model transformer --preset tiny --batch 32 --dp 2 --steps "$STEPS" \
    --no-ceiling --log-every 1000 --json "$work/train-$1.json" >/dev/null
}
sweep() {  # each of the training's collectives (op and bytes, from the first training run's record) alone
  local op bytes
  while read -r op bytes; do  # mpirun reads its standard input: given none, so that it cannot eat the loop's
    mpirun -np 2 --oversubscribe "$TS" collectives --backend mpi --ops "$op" -b "$bytes" -e "$bytes" -n 200 -w 20 \
      --placement in --issue nonblocking --cache both --json "$work/sweep-$1-$op-$bytes.json" >/dev/null </dev/null
  done < <("$PY" -c "import json,sys; d=json.load(open(sys.argv[1]))
for c in next(r for r in d['records'] if r['kind']=='train')['collectives']: print(c['op'], c['bytes'])" "$work/train-1.json")
}

echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
  if (( r % 2 )); then train "$r"; sweep "$r"; else sweep "$r"; train "$r"; fi
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$work" "$ROUNDS" <<'PYEOF'
import json, sys
work, rounds = sys.argv[1], int(sys.argv[2])
print(f"# {'round':>5} {'exposed':>9} {'waiting':>9} {'transfer':>9} {'ar time':>9} {'ar xfer':>9} {'sweep hot':>9} "
      f"{'cold':>9} {'xfer/cold':>10}   (ms, process 0)")
ratios = []


def swept_per_step(r: int, t: dict) -> dict[str, float]:
    """Per cache state, the step's collectives as the sweeps timed them alone: each one's median times its calls a step."""
    per_step = {"hot": 0.0, "cold": 0.0}
    for c in t["collectives"]:
        sweep = json.load(open(f"{work}/sweep-{r}-{c['op']}-{c['bytes']}.json"))["records"]
        for x in (x for x in sweep if x["kind"] == "collective"):
            per_step[x["cache"]] += x["time_us"]["median"] * c["count"] / t["timed_steps"]
    return per_step


for r in range(1, rounds + 1):
    t = next(x for x in json.load(open(f"{work}/train-{r}.json"))["records"] if x["kind"] == "train")
    row = t["ranks"][0]
    c = max(t["collectives"], key=lambda c: c["bytes"])  # the gradients' all-reduce
    swept = swept_per_step(r, t)
    hot_us, sweep_us = swept["hot"], swept["cold"]
    ratio = row["exposed_transfer_us"] / sweep_us
    ratios.append(ratio)
    print(f"  {r:>5} {row['exposed_communication_us'] / 1e3:>9.3f} {row['waiting_for_peers_us'] / 1e3:>9.3f} "
          f"{row['exposed_transfer_us'] / 1e3:>9.3f} {c['time_us']['median'] / 1e3:>9.3f} {c['transfer_us']['median'] / 1e3:>9.3f} "
          f"{hot_us / 1e3:>9.3f} {sweep_us / 1e3:>9.3f} {ratio:>10.2f}")
sizes = " and ".join(f"{c['bytes']} B {c['op']}" for c in t["collectives"])
print(f"# {sizes} over 2 ranks ('ar': the largest); exposed transfer / cold sweeps' time, median over rounds: "
      f"{sorted(ratios)[len(ratios) // 2]:.2f}")
PYEOF
