#!/usr/bin/env python3
"""A small PyTorch DDP job on the CPU (gloo, processes on this host) traced by torch.profiler: one Chrome trace per
rank, OUT/rank<r>.pt.trace.json, for `trainscope analyze OUT` (beside a trainscope trace of a comparable job:
`trainscope analyze OUT DIR`). The model is trainscope's `mlp tiny` (scripts/pytorch_mirror.py builds it as trainscope
does), batch 16 per rank, AdamW (trainscope's default optimizer).

  python3 scripts/pytorch-ddp-trace.py OUT [--ranks 2] [--steps 4]
"""
import argparse
import os
import sys
import tempfile

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.profiler import ProfilerActivity, profile, schedule
except ImportError:
    sys.exit("pytorch-ddp-trace: error: PyTorch is not installed for this python3 (Debian: apt-get install python3-torch; "
             "run it with /usr/bin/python3)")

from pytorch_mirror import MLP_INPUT, MLP_PRESETS, OPTIMIZER_DEFAULTS, build_mlp  # beside this script


def train(rank: int, ranks: int, steps: int, out: str, store: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=ranks)
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the ranks share this host's cores
    model = torch.nn.parallel.DistributedDataParallel(build_mlp(torch, *MLP_PRESETS["tiny"]))
    opt = torch.optim.AdamW(model.parameters(), lr=OPTIMIZER_DEFAULTS["lr"])
    x, y = torch.randn(16, *MLP_INPUT), torch.randint(0, 10, (16,))
    # One step to wait and one to warm up, then `steps` recorded (ProfilerStep#N each).
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=steps)) as prof:
        for _ in range(steps + 2):
            opt.zero_grad()
            model(x, y).backward()
            opt.step()
            prof.step()
    prof.export_chrome_trace(os.path.join(out, f"rank{rank}.pt.trace.json"))
    dist.destroy_process_group()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="directory for the traces (created)")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=4)
    a = p.parse_args()
    if not 1 <= a.ranks <= 64 or not 1 <= a.steps <= 1000:
        print("pytorch-ddp-trace: --ranks must be 1..64 and --steps 1..1000", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:  # the rendezvous file, outside OUT (analyze reads every *.json there)
        mp.spawn(train, args=(a.ranks, a.steps, a.out, os.path.join(tmp, "store")), nprocs=a.ranks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
