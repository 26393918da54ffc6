#!/usr/bin/env bash
# Benchmark (not a test): trainscope's CPU GEMM (`trainscope kernels --backend cpu --shapes`) against numpy's
# matmul of the same float32 shapes on the same threads (issue #40): the attention's batched GEMM (48
# matrices of 256x256x64, B transposed: the score GEMM QK^T), a long-K GEMM (256x256x16384: a weight
# gradient over many tokens) and a plain square (1024^3). Each side runs in its own process, the same
# warm-up and timed runs, its median per shape; the sides alternate A B B A over the rounds (a busy spell of
# a shared host then falls on both), and the table gives the ratio of the medians over the rounds,
# trainscope's GFLOP/s over numpy's (> 1: trainscope faster). The load average is printed before and after:
# on a host others use, the figures say more about them than about the GEMMs. Exit 1 when the batched GEMM
# is under 0.9x numpy's (issue #40's target).
#   scripts/bench-gemm-vs-numpy.sh [rounds=4] [iterations=30] [threads=the CPUs this process may use]
# With TS_BUILD_GIVEN=1 the trainscope in TS_BUILD (default build/) is used as it is, without setup.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ts_bench_start
ROUNDS="${1:-4}"
ITERS="${2:-30}"
THREADS="${3:-$(nproc)}"
WARMUP=3
PY="$(ts_python numpy)"

# name batch M N K transB: the shapes file and numpy's worker both read this list.
cat > "$work/shapes.txt" <<'EOF'
batched 48 256 256 64 1
long-K 1 256 256 16384 0
square 1 1024 1024 1024 0
EOF
while read -r name batch m n k tb; do
  printf '[[shape]]\nop = "gemm"\nname = "%s"\nM = %s\nN = %s\nK = %s\nbatch = %s\ntransB = %s\n\n' \
    "$name" "$m" "$n" "$k" "$batch" "$tb"
done < "$work/shapes.txt" > "$work/shapes.toml"

# numpy's side: one line per shape, "name median_us", timed as trainscope times a kernel (each run alone,
# after the warm-up), so that only the library and its threading differ.
cat > "$work/numpy_side.py" <<'EOF'
import statistics, sys, time
import numpy as np
shapes, warmup, iters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
for line in open(shapes):
    name, batch, m, n, k, tb = line.split()
    batch, m, n, k, tb = int(batch), int(m), int(n), int(k), int(tb)
    a = rng.standard_normal((batch, m, k), dtype=np.float32)
    b = rng.standard_normal((batch, n, k) if tb else (batch, k, n), dtype=np.float32)
    b = b.transpose(0, 2, 1) if tb else b  # a view: numpy's matmul passes the transpose to BLAS
    if batch == 1:
        a, b = a[0], b[0]
    out = np.matmul(a, b)
    for _ in range(warmup):
        np.matmul(a, b, out=out)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        np.matmul(a, b, out=out)
        times.append(time.perf_counter() - t)
    print(name, statistics.median(times) * 1e6)
blas = sorted({ln.split()[-1] for ln in open("/proc/self/maps") if "blas" in ln and ln.split()[-1].startswith("/")})
print("#blas", np.__version__, *blas)
EOF

run_trainscope() {
  TRAINSCOPE_THREADS="$THREADS" "$TS_BUILD/trainscope" kernels --backend cpu --ops gemm --shapes "$work/shapes.toml" \
    --no-ceilings -w "$WARMUP" -n "$ITERS" --json "$work/ts-$1.json" > /dev/null
}
run_numpy() {
  OMP_NUM_THREADS="$THREADS" OPENBLAS_NUM_THREADS="$THREADS" \
    "$PY" "$work/numpy_side.py" "$work/shapes.txt" "$WARMUP" "$ITERS" > "$work/np-$1.txt"
}

echo "bench-gemm-vs-numpy: load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for round in $(seq 1 "$ROUNDS"); do
  echo "bench-gemm-vs-numpy: round $round/$ROUNDS" >&2
  if ((round % 2)); then
    run_trainscope "$round"
    run_numpy "$round"
  else
    run_numpy "$round"
    run_trainscope "$round"
  fi
done
echo "bench-gemm-vs-numpy: load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$PY" - "$work" "$ROUNDS" "$THREADS" <<'PYEOF'
import json, statistics, sys
work, rounds, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3]
shapes = [line.split() for line in open(f"{work}/shapes.txt")]
ts, ref, ratios, blas = {}, {}, {}, ""
for r in range(1, rounds + 1):
    for rec in json.load(open(f"{work}/ts-{r}.json"))["records"]:
        if rec.get("kind") == "kernel":
            ts.setdefault(rec["shape_name"], []).append(rec["time_us"]["median"])
    for line in open(f"{work}/np-{r}.txt"):
        if line.startswith("#blas"):
            blas = " ".join(line.split()[1:])
            continue
        name, us = line.split()
        ref.setdefault(name, []).append(float(us))
print(f"float32 GEMM, {threads} thread(s), median of {rounds} rounds A B B A (each the median of its timed runs); numpy {blas}\n")
print("| shape | trainscope GFLOP/s | numpy GFLOP/s | ratio (min-max over rounds) |")
print("|---|---:|---:|---:|")
for name, batch, m, n, k, tb in shapes:
    if name not in ts:
        sys.exit(f"bench-gemm-vs-numpy: error: trainscope wrote no gemm record for {name}")
    flops = 2.0 * int(batch) * int(m) * int(n) * int(k)
    t, r = statistics.median(ts[name]), statistics.median(ref[name])
    per_round = [b / a for a, b in zip(ts[name], ref[name])]
    dims = f"{batch}x{m}x{n}x{k}" + (" B^T" if tb == "1" else "")
    print(f"| {name} {dims} | {flops / t / 1e3:.1f} | {flops / r / 1e3:.1f} | "
          f"{r / t:.2f} ({min(per_round):.2f}-{max(per_round):.2f}) |")
    ratios[name] = r / t
met = ratios["batched"] >= 0.9
print(f"\nbatched GEMM at {ratios['batched']:.2f}x numpy's GFLOP/s ({'within' if met else 'OUTSIDE'} issue #40's >= 0.9x)")
sys.exit(0 if met else 1)
PYEOF
