#!/usr/bin/env python3
"""Benchmark (not a test): trainscope's CPU backend against PyTorch on the CPU (issue #20), training the same
models at the same batch sizes with the same threads, interleaved, as a table of step-time ratios.

    /usr/bin/python3 scripts/compare-pytorch-cpu.py [--rounds 3] [--steps N] [--warmup 3] [--threads 2]
        [--cases mlp-tiny,dp2-transformer-tiny,gemm,...] [--pytorch-env KEY=VALUE] [--out results]
        [--pytorch-memory-format contiguous|channels_last]
        [--trainscope build/trainscope]

Each case runs R rounds of (trainscope, PyTorch), the order alternating from round to round; a round's ratio is
trainscope's median step time over PyTorch's (> 1: trainscope is slower), and the table gives the median ratio
over the rounds and its min-max. Prints a markdown table and writes OUT/compare-pytorch-cpu.json (every round's
numbers, each side's per-step times, the settings and the machine); trainscope's own results go to
OUT/compare-pytorch-cpu/. Exits 2 with one line when PyTorch is missing, 1 with one line naming the case when
trainscope (or a PyTorch worker) fails or a mirror's parameter count differs from trainscope's.

What each side runs (the PyTorch models are scripts/pytorch_mirror.py's mirrors: same architecture, sizes,
float32, AdamW lr 1e-3, betas 0.9/0.999, eps 1e-8, no weight decay, constant schedule, as trainscope's defaults):
- trainscope: `train --model M --preset P --batch B --steps W+S --warmup-steps W --no-ceiling --json`; its step
  time is the train record's step_time_us.median (the slowest rank's for --dp 2).
- PyTorch: W warm-up then S timed steps of zero_grad(set_to_none), forward + cross-entropy, backward, the global
  gradient norm (trainscope computes it every step), optimizer step and loss.item(), each timed with
  time.perf_counter; random batches of the shapes trainscope's synthetic data has, made before the loop.
  With --pytorch-memory-format channels_last the CNN and its images are NHWC (`model.to(memory_format=
  torch.channels_last)`), the layout trainscope's CNN trains in on the CPU; PyTorch's default is NCHW.
- dp2: `mpirun -np 2 trainscope train --dp 2` against 2 processes of DistributedDataParallel over gloo (bucket
  25 MiB and overlap, as trainscope's defaults; each process pinned to one core, as mpirun binds ranks), each with
  threads // 2 threads (1 on 2 cores); a step's time is the slower rank's, as trainscope's.
- gemm: `trainscope kernels --ops gemm --shapes` one M x N x K GEMM with the bias+GELU epilogue (epilogue 3) against
  numpy's A @ B on the same shape; the ratio is trainscope's GFLOP/s as a fraction of numpy's (2 M N K FLOPs each,
  the epilogue not counted; numpy does no epilogue), so here > 1 is faster.

Threads: one number (--threads, default: the CPUs this process may use) for both sides. PyTorch gets
torch.set_num_threads plus OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS; numpy the same variables.
trainscope gets TRAINSCOPE_THREADS (its one thread policy: OpenBLAS and its kernels' OpenMP pool, README
"Threads"); its result's run.threads says what it ran with.
"""
import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import pytorch_mirror as mirror  # noqa: E402

NAME = "compare-pytorch-cpu"
# The environment variables trainscope reads its thread count from (see the docstring).
TORCH_THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

# name: what runs, and the timed steps by default (the heavy cases fewer, so that a round stays short).
CASES = {
    "mlp-tiny": dict(model="mlp", preset="tiny", batch=32, steps=50),
    "mlp-small": dict(model="mlp", preset="small", batch=32, steps=30),
    "cnn-tiny": dict(model="cnn", preset="tiny", batch=32, steps=10),
    "cnn-resnet20": dict(model="cnn", preset="resnet20", batch=32, steps=5),
    "transformer-tiny": dict(model="transformer", preset="tiny", batch=8, steps=30),
    "transformer-small": dict(model="transformer", preset="small", batch=8, steps=5),
    "dp2-transformer-tiny": dict(model="transformer", preset="tiny", batch=8, steps=30, dp=2),
    "dp2-transformer-small": dict(model="transformer", preset="small", batch=8, steps=5, dp=2),
    "gemm": dict(gemm=True, steps=20),
}
DEFAULT_GEMM = (2048, 1536, 384)  # transformer small's mlp.fc over batch 8 x 256 tokens: M = tokens, N = 4C, K = C


class Failure(Exception):
    """A case that could not be measured: one line for the user."""


def label(name, case, gemm_shape):
    if case.get("gemm"):
        return "GEMM {}x{}x{} + bias + GELU vs numpy matmul".format(*gemm_shape)
    what = f"{case['model']} {case['preset']}, batch {case['batch']}"
    return f"`--dp 2` vs DDP (gloo), {what}" if case.get("dp") else what


def trainscope_threads(threads):
    """The environment that gives trainscope `threads` compute threads per process."""
    return {"TRAINSCOPE_THREADS": str(threads)}


def last_line(text):
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else "(no output)"


def run_checked(cmd, env, what, timeout):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure(f"{what} ran past {timeout} s: {' '.join(cmd)}")
    if r.returncode != 0:
        raise Failure(f"{what} failed (exit {r.returncode}): {last_line(r.stderr or r.stdout)}")
    return r


def base_env():
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


# trainscope's side ---------------------------------------------------------------------------------------------

def run_trainscope_train(args, name, case, rnd, steps):
    out = Path(args.out) / NAME / f"{name}-round{rnd}.json"
    dp = case.get("dp", 1)
    threads = max(1, args.threads // dp)
    tenv = trainscope_threads(threads)
    env = base_env()
    env.update(tenv)
    cmd = [args.trainscope, "train", "--model", case["model"], "--preset", case["preset"], "--batch", str(case["batch"]),
           "--steps", str(args.warmup + steps), "--warmup-steps", str(args.warmup), "--optimizer", "adamw", "--lr", "1e-3",
           "--weight-decay", "0", "--no-ceiling", "--log-every", str(args.warmup + steps), "--json", str(out)]
    if dp > 1:
        cmd = args.mpirun.split() + ["-np", str(dp)] + [a for k in tenv for a in ("-x", k)] + cmd + ["--dp", str(dp)]
    run_checked(cmd, env, f"case {name}: trainscope", args.timeout)
    rec = next(r for r in json.loads(out.read_text())["records"] if r["kind"] == "train")
    return {"median_us": rec["step_time_us"]["median"], "min_us": rec["step_time_us"]["min"],
            "max_us": rec["step_time_us"]["max"], "timed_steps": rec["timed_steps"], "samples_us": rec.get("step_samples_us"),
            "parameters": rec["parameters"], "threads": threads, "command": cmd, "result": str(out)}


def run_trainscope_gemm(args, name, rnd):
    m, n, k = args.gemm
    work = Path(args.out) / NAME
    shapes = work / "gemm-shape.toml"
    shapes.write_text(f'[[shape]]\nop = "gemm"\nname = "bias+gelu"\nM = {m}\nN = {n}\nK = {k}\nepilogue = 3\n')
    out = work / f"{name}-round{rnd}.json"
    tenv = trainscope_threads(args.threads)
    env = base_env()
    env.update(tenv)
    cmd = [args.trainscope, "kernels", "--backend", "cpu", "--ops", "gemm", "--shapes", str(shapes), "--no-ceilings",
           "--json", str(out)]
    run_checked(cmd, env, f"case {name}: trainscope kernels", args.timeout)
    recs = [r for r in json.loads(out.read_text())["records"] if r.get("kind") == "kernel" and r.get("op") == "gemm"]
    if not recs:
        raise Failure(f"case {name}: trainscope kernels wrote no gemm record to {out}")
    rec = recs[0]
    return {"gflops": rec["tflops"] * 1e3, "median_us": rec["time_us"]["median"], "samples_us": rec["samples_us"],
            "threads": args.threads, "command": cmd, "result": str(out)}


# PyTorch's side (each in a fresh process, so that its threads are set before torch or numpy loads) ---------------

def run_worker(args, kind, name, case, steps):
    """PyTorch's (or numpy's) side in fresh processes: one, or for dp2 one per rank (RANK, WORLD_SIZE, MASTER_ADDR
    and MASTER_PORT, as torchrun sets them), started together; a dp2 step's time is the slower rank's."""
    dp = case.get("dp", 1)
    threads = max(1, args.threads // dp)
    env = base_env()
    env.update({k: str(threads) for k in TORCH_THREAD_ENV})
    env.update(kv.split("=", 1) for kv in args.pytorch_env)
    spec = dict(case, steps=steps, warmup=args.warmup, threads=threads, gemm_shape=args.gemm, seed=args.seed,
                memory_format=args.pytorch_memory_format)
    if dp > 1:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(dp))
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for rank in range(dp):
            out = Path(tmp) / f"rank{rank}.json"
            cmd = [sys.executable, __file__, "--worker", kind, "--spec", json.dumps(spec), "--worker-out", str(out)]
            procs.append((subprocess.Popen(cmd, env=dict(env, RANK=str(rank)), stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, text=True), out))
        deadline, failed = time.monotonic() + args.timeout, None
        for rank, (proc, _) in enumerate(procs):
            try:
                text, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q, _ in procs:
                    q.kill()
                raise Failure(f"case {name}: the {kind} worker ran past {args.timeout} s")
            if proc.returncode != 0 and failed is None:
                failed = f"case {name}: the {kind} worker (rank {rank}) failed (exit {proc.returncode}): {last_line(text)}"
                for q, _ in procs:
                    q.kill()  # the other rank would wait for it forever
        if failed:
            raise Failure(failed)
        results = [json.loads(out.read_text()) for _, out in procs]
    if dp == 1:
        return results[0]
    every = [r["samples_us"] for r in results]
    return dict(results[0], samples_us=[max(step) for step in zip(*every)], ranks_samples_us=every)


def torch_step_loop(torch, model, opt, batches, warmup, steps):
    params = [p for p in model.parameters()]
    times = []
    for i in range(warmup + steps):
        x, t = batches[i % len(batches)]
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(x, t)
        loss.backward()
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in params]))
        opt.step()
        loss.item(), norm.item()
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1e6)
    return times


def in_memory_format(torch, spec, model, batches):
    """The CNN and its images in --pytorch-memory-format (channels_last: PyTorch's NHWC, as trainscope's CNN is on
    the CPU); the other models as they are."""
    if spec["model"] != "cnn" or spec.get("memory_format", "contiguous") == "contiguous":
        return model, batches
    fmt = torch.channels_last
    return model.to(memory_format=fmt), [(x.contiguous(memory_format=fmt), t) for x, t in batches]


def worker_train(spec):
    import torch
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(spec["seed"])
    model = mirror.build(torch, spec["model"], spec["preset"])
    model.train()
    opt = mirror.make_optimizer(torch, model, **{k: v for k, v in mirror.OPTIMIZER_DEFAULTS.items() if k != "kind"})
    batches = [mirror.random_batch(torch, spec["model"], spec["preset"], spec["batch"]) for _ in range(4)]
    model, batches = in_memory_format(torch, spec, model, batches)
    times = torch_step_loop(torch, model, opt, batches, spec["warmup"], spec["steps"])
    x = batches[0][0]
    return {"samples_us": times, "parameters": mirror.parameter_count(model), "threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "channels_last": x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last) and x.shape[1] > 1}


def worker_ddp(spec):
    """One rank of DistributedDataParallel over gloo (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the
    environment): batch / WORLD_SIZE samples per rank, the slower rank's time per step taken by the caller."""
    import torch
    import torch.distributed as dist
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= world:
        os.sched_setaffinity(0, {cpus[rank]})  # as mpirun binds each rank to a core
    torch.set_num_threads(spec["threads"])
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
    torch.manual_seed(spec["seed"])  # the same weights on every rank (DDP broadcasts rank 0's anyway)
    model = mirror.build(torch, spec["model"], spec["preset"])
    count = mirror.parameter_count(model)
    # Buffers are not broadcast each step: the transformer's are constants, and trainscope syncs only gradients.
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=25, broadcast_buffers=False)
    opt = mirror.make_optimizer(torch, ddp, **{k: v for k, v in mirror.OPTIMIZER_DEFAULTS.items() if k != "kind"})
    gen = torch.Generator().manual_seed(spec["seed"] + 1 + rank)
    batches = [mirror.random_batch(torch, spec["model"], spec["preset"], spec["batch"] // world, gen) for _ in range(4)]
    times = torch_step_loop(torch, ddp, opt, batches, spec["warmup"], spec["steps"])
    dist.barrier()
    dist.destroy_process_group()
    return {"samples_us": times, "parameters": count, "threads": torch.get_num_threads(), "torch": torch.__version__,
            "cpus": sorted(os.sched_getaffinity(0))}


def worker_numpy_gemm(spec):
    import numpy as np
    m, n, k = spec["gemm_shape"]
    rng = np.random.default_rng(spec["seed"])
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    c = np.empty((m, n), dtype=np.float32)
    times = []
    for i in range(spec["warmup"] + spec["steps"]):
        start = time.perf_counter()
        np.matmul(a, b, out=c)
        if i >= spec["warmup"]:
            times.append((time.perf_counter() - start) * 1e6)
    med = statistics.median(times)
    return {"samples_us": times, "median_us": med, "gflops": 2.0 * m * n * k / (med * 1e-6) / 1e9, "numpy": np.__version__,
            "threads": spec["threads"]}


def worker_main(kind, spec, out):
    if kind == "train":
        result = worker_train(spec)
    elif kind == "ddp":
        result = worker_ddp(spec)
    else:
        result = worker_numpy_gemm(spec)
    Path(out).write_text(json.dumps(result))


# The comparison ---------------------------------------------------------------------------------------------------

def measure_case(args, name, case, rnd):
    steps = args.steps or case["steps"]
    if case.get("gemm"):
        sides = [("trainscope", lambda: run_trainscope_gemm(args, name, rnd)),
                 ("numpy", lambda: run_worker(args, "numpy", name, case, steps))]
    else:
        kind = "ddp" if case.get("dp") else "train"
        sides = [("trainscope", lambda: run_trainscope_train(args, name, case, rnd, steps)),
                 ("pytorch", lambda: run_worker(args, kind, name, case, steps))]
    if rnd % 2:
        sides.reverse()  # alternate which side runs first, so that a drift of the machine's speed favours neither
    got = {side: fn() for side, fn in sides}
    if case.get("gemm"):
        ts, ref = got["trainscope"], got["numpy"]
        return {"round": rnd, "first": sides[0][0], "trainscope": ts, "numpy": ref, "ratio": ts["gflops"] / ref["gflops"]}
    ts, pt = got["trainscope"], got["pytorch"]
    if ts["parameters"] != pt["parameters"]:
        raise Failure(f"case {name}: the PyTorch mirror has {pt['parameters']} parameters, trainscope "
                      f"{ts['parameters']}: scripts/pytorch_mirror.py no longer mirrors the model")
    pt["median_us"] = statistics.median(pt["samples_us"])
    pt["min_us"], pt["max_us"] = min(pt["samples_us"]), max(pt["samples_us"])
    return {"round": rnd, "first": sides[0][0], "trainscope": ts, "pytorch": pt, "ratio": ts["median_us"] / pt["median_us"]}


def summarize(name, case, rounds):
    ratios = [r["ratio"] for r in rounds]
    s = {"ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)}
    if case.get("gemm"):
        s["trainscope_gflops"] = statistics.median(r["trainscope"]["gflops"] for r in rounds)
        s["numpy_gflops"] = statistics.median(r["numpy"]["gflops"] for r in rounds)
    else:
        s["trainscope_ms"] = statistics.median(r["trainscope"]["median_us"] for r in rounds) / 1e3
        s["pytorch_ms"] = statistics.median(r["pytorch"]["median_us"] for r in rounds) / 1e3
    return s


def table(results, gemm_shape):
    lines = ["| model / preset | ratio (median, min-max) | trainscope | PyTorch / numpy |", "|---|---|---|---|"]
    for name, r in results.items():
        s, case = r["summary"], CASES[name]
        ratio = f"{s['ratio_median']:.2f} ({s['ratio_min']:.2f}-{s['ratio_max']:.2f})"
        if case.get("gemm"):
            ratio += " of numpy's GFLOP/s"
            cells = f"{s['trainscope_gflops']:.1f} GFLOP/s | {s['numpy_gflops']:.1f} GFLOP/s"
        else:
            cells = f"{s['trainscope_ms']:.3f} ms/step | {s['pytorch_ms']:.3f} ms/step"
        lines.append(f"| {label(name, case, gemm_shape)} | {ratio} | {cells} |")
    return "\n".join(lines)


def machine():
    info = {"host": platform.node(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "usable_cpus": len(os.sched_getaffinity(0)), "python": platform.python_version()}
    try:
        info["cpu"] = next(x.split(":", 1)[1].strip() for x in open("/proc/cpuinfo") if x.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return info


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], usage=__doc__.split("\n\n")[1].strip())
    p.add_argument("--rounds", type=int, default=3, help="rounds of (trainscope, PyTorch) per case (default 3)")
    p.add_argument("--steps", type=int, default=0, help="timed steps per run (default: each case's own, 5 to 50)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps before them (default 3)")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                   help="threads for both sides (default: this process's CPUs); --dp 2 gives each rank threads // 2")
    p.add_argument("--cases", default=",".join(CASES), help=f"comma list of {', '.join(CASES)} (default: all)")
    p.add_argument("--gemm", default=",".join(map(str, DEFAULT_GEMM)), help="M,N,K of the gemm case (default %(default)s)")
    p.add_argument("--pytorch-env", action="append", default=[], metavar="KEY=VALUE",
                   help="an environment variable for PyTorch's (and numpy's) processes only, e.g. OMP_WAIT_POLICY=PASSIVE "
                   "(repeatable; recorded in the JSON)")
    p.add_argument("--pytorch-memory-format", choices=["contiguous", "channels_last"], default="contiguous",
                   help="PyTorch's CNN and images: contiguous (NCHW, PyTorch's default) or channels_last (NHWC)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--trainscope", default=str(ROOT / "build" / "trainscope"))
    p.add_argument("--mpirun", default="mpirun --oversubscribe", help="the launcher of the dp2 cases (-np 2 is added)")
    p.add_argument("--timeout", type=int, default=1800, help="seconds one run of one side may take")
    p.add_argument("--out", default=str(ROOT / "results"))
    p.add_argument("--worker", choices=["train", "ddp", "numpy"], help=argparse.SUPPRESS)
    p.add_argument("--spec", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return args
    unknown = [c for c in args.cases.split(",") if c not in CASES]
    if unknown:
        p.error(f"--cases: unknown {', '.join(unknown)} (known: {', '.join(CASES)})")
    try:
        args.gemm = tuple(int(x) for x in args.gemm.split(","))
        assert len(args.gemm) == 3 and min(args.gemm) >= 1
    except (ValueError, AssertionError):
        p.error(f"--gemm {args.gemm}: expected M,N,K, three positive integers")
    bad = [kv for kv in args.pytorch_env if "=" not in kv or kv.startswith("=")]
    if bad:
        p.error(f"--pytorch-env {bad[0]}: expected KEY=VALUE")
    if args.rounds < 1 or args.steps < 0 or args.warmup < 0 or args.threads < 1:
        p.error("--rounds and --threads must be >= 1, --steps and --warmup >= 0")
    return args


def main():
    args = parse_args()
    if args.worker:
        return worker_main(args.worker, json.loads(args.spec), args.worker_out)
    try:
        import torch
    except ImportError:
        print(f"{NAME}: PyTorch is not installed for {sys.executable} (Debian: apt-get install python3-torch; "
              "run this script with /usr/bin/python3)", file=sys.stderr)
        return 2
    if not os.access(args.trainscope, os.X_OK):
        print(f"{NAME}: no trainscope binary at {args.trainscope} (build it, or pass --trainscope)", file=sys.stderr)
        return 1
    cases = args.cases.split(",")
    if any(CASES[c].get("dp") for c in cases) and not shutil.which(args.mpirun.split()[0]):
        print(f"{NAME}: the dp2 cases need {args.mpirun.split()[0]}, which is not on PATH", file=sys.stderr)
        return 1
    (Path(args.out) / NAME).mkdir(parents=True, exist_ok=True)
    doc = {"settings": {"rounds": args.rounds, "warmup": args.warmup, "steps": args.steps or "per case",
                        "threads": args.threads, "gemm": args.gemm, "seed": args.seed, "pytorch_env": args.pytorch_env,
                        "pytorch_memory_format": args.pytorch_memory_format,
                        "trainscope_thread_env": trainscope_threads(args.threads)},
           "machine": dict(machine(), load_before=os.getloadavg()), "torch": torch.__version__,
           "torch_config": torch.__config__.show(), "cases": {}}
    json_path = Path(args.out) / f"{NAME}.json"
    results = {}
    status = 0
    print(f"# {NAME}: {len(cases)} case(s) x {args.rounds} round(s), {args.threads} thread(s) each side, warm-up "
          f"{args.warmup}; torch {torch.__version__}; load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
    try:
        for rnd in range(args.rounds):  # rounds outermost: every case's rounds are spread over the whole run
            for name in cases:
                r = measure_case(args, name, CASES[name], rnd)
                results.setdefault(name, {"label": label(name, CASES[name], args.gemm), "rounds": []})["rounds"].append(r)
                print(f"# round {rnd + 1}/{args.rounds} {name}: ratio {r['ratio']:.3f}", file=sys.stderr)
    except Failure as e:
        print(f"{NAME}: {e}", file=sys.stderr)
        status = 1
    complete = {n: r for n, r in results.items() if len(r["rounds"]) == args.rounds}
    for name, r in complete.items():
        r["summary"] = summarize(name, CASES[name], r["rounds"])
    doc["cases"] = results
    doc["machine"]["load_after"] = os.getloadavg()
    json_path.write_text(json.dumps(doc, indent=1))
    if complete:
        print(f"# ratio = trainscope step time / PyTorch step time (> 1: trainscope slower), over {args.rounds} "
              f"round(s); {args.threads} thread(s); GEMM: trainscope's GFLOP/s / numpy's (> 1: trainscope faster)")
        print(table(complete, args.gemm))
    print(f"# raw numbers: {json_path}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
