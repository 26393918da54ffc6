"""Synthetic result documents built in code, so that every case (noise, regressions, hostile strings) is
known exactly."""
import copy
import json
import random
import sys
from pathlib import Path

from reports.common.collective_facts import collective

ROOT = Path(__file__).resolve().parents[2]

HOST = {
    "hostname": "node-a", "os": "Linux 6.1 x86_64",
    "cpu": {"model": "Test CPU", "threads": 8, "memory_bytes": 34359738368, "sockets": 1, "cores": 4, "numa_nodes": 1,
            "numa": [{"node": 0, "memory_bytes": 34359738368, "cpus": "0-7"}]},
    "gpus": {"available": False, "reason": "no GPU", "devices": [], "links": {"reason": "no GPUs"}},
    "nics": {"rdma": [], "rdma_reason": "none", "net": [{"name": "eth0", "state": "up", "speed_mbps": 10000, "mtu": 1500}]},
    "versions": {"trainscope": "0.1.0", "git_commit": "abc", "mpi": "Open MPI v4.1.4", "driver": None, "cuda_driver": None,
                 "cuda_runtime": None, "cublas": None, "cudnn": None, "nccl": None},
}


def make_doc(records, hostname="node-a", label="", environment=None):
    host = copy.deepcopy(HOST)
    host["hostname"] = hostname
    return {
        "schema": "trainscope/result/v1",
        "run": {"tool": {"name": "trainscope", "version": "0.1.0", "git_commit": "abc"}, "subcommand": "collectives",
                "command_line": ["trainscope"], "config": {"label": label}, "started_at": "2026-11-22T10:00:00.000Z",
                "ended_at": "2026-11-22T10:01:00.000Z", "hosts": [host],
                "world": {"processes": 2, "hosts": 1, "bootstrap": "mpi"},
                "layouts": [{"step": "collectives", "backend": "mpi", "size": 2, "gpus_per_process": 1,
                             "ranks": [{"rank": 0, "device": "cpu", "process": 0, "host": hostname},
                                       {"rank": 1, "device": "cpu", "process": 1, "host": hostname}]}],
                "environment": environment or {}},
        "records": records,
    }


def make_fleet_doc(records, ranks_by_host, suite=None):
    """A run across several hosts ({host: [ranks]}), as the launcher records it; `suite`: a suite's name."""
    doc = make_doc(records, hostname=next(iter(ranks_by_host)))
    run = doc["run"]
    run["hosts"] = [dict(copy.deepcopy(HOST), hostname=h) for h in ranks_by_host]
    ranks = sum(len(r) for r in ranks_by_host.values())
    run["world"] = {"processes": ranks, "hosts": len(ranks_by_host), "bootstrap": "mpi"}
    run["launcher"] = {"kind": "mpirun", "job_id": "1", "nodes": None, "tasks": ranks, "tasks_per_node": None,
                       "ranks_by_host": ranks_by_host}
    run["layouts"] = []
    if suite:
        run["subcommand"], run["config"] = "suite", {"suite": f"/somewhere/{suite}.toml", "name": suite, "steps": []}
    return doc


def span(name, cat, a, b, tid=0, **args):
    """A complete trace event ("X") on process 0 from a to b (microseconds), its args given as keywords."""
    return {"ph": "X", "name": name, "cat": cat, "ts": a, "dur": b - a, "pid": 0, "tid": tid, "args": args}


def stats(samples):
    s = sorted(samples)
    n = len(s)
    mean = sum(s) / n
    sd = (sum((x - mean) ** 2 for x in s) / (n - 1)) ** 0.5 if n > 1 else 0.0
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    p95 = s[min(n - 1, int(round(0.95 * (n - 1))))]
    return {"min": s[0], "median": med, "mean": mean, "p95": p95, "max": s[-1], "stdev": sd, "cv": sd / mean, "n": n}


def make_record(op="all_reduce", nbytes=1 << 20, samples=None, in_place=False, trials=1, wrong=0, dtype="float32"):
    samples = samples or [100.0] * 20
    st = stats(samples)
    algbw = nbytes / (st["median"] * 1e-6) / 1e9
    factor = collective(op).bus_factor(2)
    return {"kind": "collective", "op": op, "backend": "mpi", "dtype": dtype, "redop": "sum" if collective(op).reduces else None,
            "root": None, "ranks": 2, "processes": 2, "bytes": nbytes, "count": nbytes // 4, "in_place": in_place, "graph": 0,
            "iters": len(samples) // trials, "trials": trials, "timer": "steady_clock", "time_us": st, "samples_us": samples,
            "host_time_us": stats([st["mean"]] * trials), "algbw_gbps": algbw, "bus_factor": factor, "busbw_gbps": algbw * factor,
            "rank_spread": {"unit": "process", "fastest": 0, "fastest_median_us": st["median"], "slowest": 1, "slowest_median_us": st["median"]},
            "check": {"performed": True, "passed": wrong == 0, "wrong": wrong}}


def noisy(center, spread, n=30, seed=1):
    rng = random.Random(seed)
    return [max(0.001, rng.gauss(center, spread)) for _ in range(n)]




def make_link(test, src, dst, engine="ce", direction="uni", bw=None, latency=None, host="node-a", peak=None, **extra):
    """A link record as trainscope links writes it (bw in GB/s, or a latency in us)."""
    samples = [latency] * 5 if latency is not None else [1000.0] * 5
    nbytes = 4 if latency is not None else int(bw * 1e9 * 1000e-6)
    st = stats(samples)
    rec = {"kind": "link", "test": test, "src": src, "dst": dst, "engine": engine, "direction": direction, "bytes": nbytes,
           "time_us": st, "samples_us": samples, "bandwidth_gbps": None if latency is not None else nbytes / 1000e-6 / 1e9,
           "latency_us": st if latency is not None else None,
           "link": {"type": "pcie", "detail": "x", "peak_gbps": peak, "fraction_of_peak": (bw / peak) if (peak and bw) else None},
           "check": {"performed": True, "passed": True, "wrong": 0}, "host": host}
    rec.update(extra)
    return rec


def make_ceiling(ceiling, value, level=None, **extra):
    """A kernel_ceiling record as trainscope kernels writes it (memory ones with their level)."""
    rec = {"kind": "kernel_ceiling", "ceiling": ceiling, "value": value, "unit": "TFLOP/s" if ceiling == "compute" else "GB/s",
           "source": "gemm square 2048 float32 (OpenBLAS)" if ceiling == "compute" else f"copy in {level}", "time_us": stats([1000.0] * 5),
           "clock_mhz": None, "warmup": 2, "trials": 5, "others_cpu_fraction": 0.02}
    if ceiling == "memory":
        rec.update(level=level, working_set_bytes=1 << 20, capacity_bytes=None if level == "dram" else 2 << 20)
    rec.update(extra)
    return rec


def make_kernel(op, shape_name, tflops, intensity, ceiling_tflops, ceiling_gbps, level="dram", suspect=False, cause=None, rechecked=None):
    """A kernel record placed on the roofline of the ceilings given (flops and bytes consistent with tflops and intensity)."""
    flops = 1e9
    us = flops / (tflops * 1e12) * 1e6
    attainable = min(ceiling_tflops, intensity * ceiling_gbps / 1e3)
    rec = {"kind": "kernel", "op": op, "shape_name": shape_name, "shape": {"n": 1}, "dtype": "float32", "backend": "cpu", "flops": flops,
           "bytes": flops / intensity, "time_us": stats([us] * 3), "samples_us": [us] * 3, "tflops": tflops, "gbps": tflops * 1e3 / intensity,
           "arithmetic_intensity": intensity, "clock_mhz": None, "ceiling_suspect": suspect,
           "roofline": {"bound": "compute" if attainable == ceiling_tflops else "memory", "ceiling_tflops": ceiling_tflops, "ceiling_gbps": ceiling_gbps,
                        "memory_level": level, "attainable_tflops": attainable, "fraction_of_ceiling": tflops / attainable, "rechecked_ceiling": rechecked},
           "check": {"performed": True, "passed": True, "max_rel_err": 1e-7, "tolerance": 1e-5}}
    if suspect:
        rec["ceiling_suspect_cause"] = cause
    return rec


def telemetry(host="node-a", others=None, load=1.0, throttled=False):
    """A telemetry record of one sample: `others`, the fraction of the CPUs other processes used (None: not measured)."""
    rng = lambda v: None if v is None else {"min": v, "median": v, "max": v}  # noqa: E731
    return {"kind": "telemetry", "host": host, "process": 0, "interval_s": 0.2,
            "samples": [{"t_s": 0.0, "cpu_busy_fraction": None, "cpu_busy_others_fraction": None, "load1": load, "cpu_freq_mhz": None, "gpus": []}],
            "summary": {"duration_s": 1.0, "cpu_busy_fraction": rng(0.9), "cpu_busy_others_fraction": rng(others), "load1": rng(load),
                        "cpu_freq_mhz": None, "gpus": [], "throttled": throttled}}


def make_train(mfu=None, **extra):
    """A train record of a tiny run (one rank unless `extra` says otherwise), with its MFU when given."""
    rec = {"kind": "train", "model": "mlp", "preset": "tiny", "backend": "cuda", "device": "cuda:0 (NVIDIA H100 80GB HBM3)",
           "precision": "bfloat16", "world_size": 1, "config": {}, "parameters": 10, "flops_per_step": 1e12, "items_per_step": 8,
           "item": "samples", "first_step": 0, "steps_done": 3, "warmup_steps": 1, "timed_steps": 2, "completed": True,
           "peak_memory_bytes": 1 << 20, "loss": {"initial": 2.3, "final": 2.2},
           "loss_curve": [{"step": i, "loss": 2.3, "lr": 0.1, "grad_norm": 1.0} for i in range(3)],
           "step_time_us": stats([2000.0, 2000.0]), "throughput_per_s": 4000.0, "tflops": 500.0}
    if mfu is not None:
        rec["mfu"] = mfu
    rec.update(extra)
    return rec
