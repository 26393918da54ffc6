#!/usr/bin/env python3
"""PyTorch's numbers beside trainscope's, on the same GPU in the same call (scripts/gpu-rerun.sh): matrix products
(bf16, float32, tf32) and copies (device to device, host to device and back, pinned and pageable), each timed with
CUDA events around every repetition after warm-ups; the median is reported. One line per measurement on stdout,
everything in --json. Runs with the device's python3 (the one that has torch); one line and exit 2 without it.

    python3 scripts/gpu-peers.py [--json FILE] [--gemm 8192] [--copy-mib 1024] [--host-mib 256]
"""
import argparse
import json
import statistics
import sys
from typing import Any, Callable


def timed(torch: Any, fn: Callable[[], None], warmup: int, reps: int) -> list[float]:
    """Milliseconds of each of `reps` calls of fn, by CUDA events, after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end))
    return out


def time_matmul(torch: Any, dev: Any, n: int, dtype: Any, reps: int) -> list[float]:
    x = torch.randn(n, n, device=dev, dtype=dtype)
    y = torch.randn(n, n, device=dev, dtype=dtype)
    z = torch.empty(n, n, device=dev, dtype=dtype)

    def product() -> None:
        torch.matmul(x, y, out=z)
    return timed(torch, product, 3, reps)


def time_copy(torch: Any, dst: Any, src: Any, non_blocking: bool, reps: int) -> list[float]:
    def copy() -> None:
        dst.copy_(src, non_blocking=non_blocking)
    return timed(torch, copy, 2, reps)


def nccl_version(torch: Any) -> str:
    v = torch.cuda.nccl.version()  # a tuple (2, 28, 9) in recent releases, an int (22809) in older ones
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="write the measurements here")
    p.add_argument("--gemm", type=int, default=8192, help="M = N = K of the matrix products")
    p.add_argument("--copy-mib", type=int, default=1024, help="device-to-device copy size")
    p.add_argument("--host-mib", type=int, default=256, help="host-device copy size")
    p.add_argument("--reps", type=int, default=10)
    a = p.parse_args()
    try:
        import torch
    except ImportError as e:
        print(f"gpu-peers: error: this python3 has no torch ({e})", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("gpu-peers: error: torch sees no CUDA device", file=sys.stderr)
        return 2

    dev = torch.device("cuda:0")
    props = torch.cuda.get_device_properties(dev)
    doc: dict[str, Any] = {
        "tool": "pytorch",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "nccl": nccl_version(torch),
        "device": props.name,
        "multiprocessors": props.multi_processor_count,
        "measurements": [],
    }
    print(f"gpu-peers: torch {doc['torch']} (CUDA {doc['cuda']}, cuDNN {doc['cudnn']}, NCCL {doc['nccl']}) on {props.name}")

    def record(name: str, ms: list[float], amount: float, unit: str, note: str) -> None:
        med = statistics.median(ms)
        value = amount / (med / 1e3)
        doc["measurements"].append({"name": name, "median_ms": med, "samples_ms": ms, "value": value, "unit": unit,
                                    "note": note})
        print(f"{name}: {value:.1f} {unit} (median of {len(ms)}: {med:.3f} ms; {note})")

    for name, dtype, tf32 in (("matmul_bf16", torch.bfloat16, False), ("matmul_float32", torch.float32, False),
                              ("matmul_tf32", torch.float32, True)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        record(name, time_matmul(torch, dev, a.gemm, dtype, a.reps), 2.0 * a.gemm ** 3 / 1e12, "TFLOP/s",
               f"{a.gemm}x{a.gemm}x{a.gemm}, random normal data")
    torch.backends.cuda.matmul.allow_tf32 = False

    size = a.copy_mib << 20
    src = torch.empty(size, dtype=torch.uint8, device=dev).fill_(1)
    record("copy_d2d", time_copy(torch, torch.empty_like(src), src, False, a.reps), size / 1e9, "GB/s",
           f"{a.copy_mib} MiB, each byte counted once (read and written: twice that)")
    del src

    hsize = a.host_mib << 20
    dbuf = torch.empty(hsize, dtype=torch.uint8, device=dev)
    for kind, pinned in (("pinned", True), ("pageable", False)):
        hbuf = torch.empty(hsize, dtype=torch.uint8, pin_memory=pinned).fill_(1)
        record(f"copy_h2d_{kind}", time_copy(torch, dbuf, hbuf, pinned, a.reps), hsize / 1e9, "GB/s", f"{a.host_mib} MiB")
        record(f"copy_d2h_{kind}", time_copy(torch, hbuf, dbuf, pinned, a.reps), hsize / 1e9, "GB/s", f"{a.host_mib} MiB")

    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, OSError) as e:  # CUDA errors, out of memory: one line, not a traceback
        print(f"gpu-peers: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        sys.exit(1)
