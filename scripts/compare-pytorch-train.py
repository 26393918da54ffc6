#!/usr/bin/env python3
"""Benchmark (not a test; needs a CUDA GPU and PyTorch): one transformer training step of trainscope against
the same model in PyTorch, eager and torch.compile, in one run on the same GPU.

The PyTorch model is scripts/pytorch_mirror.py's mirror of workloads/: token + position embeddings, pre-layernorm
blocks (ln_1, attn.qkv, causal softmax attention, attn.proj, ln_2, mlp.fc, tanh-GELU, mlp.proj), ln_f and an
untied lm_head, cross-entropy on the next token; AdamW (lr 3e-4, betas 0.9/0.999, eps 1e-8, no decay), float32 or
bfloat16 autocast. Steps are timed with CUDA events after warm-up; tokens/s is at the median step.

    scripts/compare-pytorch-train.py [--preset gpt2] [--batch 8] [--steps 30] [--precision bfloat16] [--out DIR]

Prints a table and writes DIR/pytorch-train.json and trainscope's result DIR/trainscope-train.json.
"""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from pytorch_mirror import GPT_PRESETS as PRESETS, MOE_PRESETS, build_gpt  # noqa: E402  (layers, hidden, heads, seq_len, vocab)


def time_pytorch(torch, args, compiled):
    L, C, NH, T, V = PRESETS[args.preset]
    model = build_gpt(torch, L, C, NH, T, V, *MOE_PRESETS.get(args.preset, ())).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, fused=True)
    step_fn = torch.compile(model) if compiled else model
    idx = torch.randint(0, V, (args.batch, T), device="cuda")
    tgt = torch.randint(0, V, (args.batch, T), device="cuda")
    times = []
    for i in range(args.warmup + args.steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.precision == "bfloat16"):
            loss = step_fn(idx, tgt)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        end.record()
        torch.cuda.synchronize()
        if i >= args.warmup:
            times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="gpt2", choices=sorted(PRESETS))
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--precision", default="bfloat16", choices=["float32", "bfloat16"])
    p.add_argument("--trainscope", default=str(ROOT / "build" / "trainscope"))
    p.add_argument("--out", default=str(ROOT / "results"))
    args = p.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("compare-pytorch-train: PyTorch is not installed here")
    if not torch.cuda.is_available():
        sys.exit("compare-pytorch-train: no CUDA GPU is usable here")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tokens = args.batch * PRESETS[args.preset][3]
    rows = {}
    for name, compiled in (("pytorch eager", False), ("pytorch torch.compile", True)):
        rows[name] = time_pytorch(torch, args, compiled)
        print(f"{name}: {rows[name] / 1e3:.2f} ms/step", file=sys.stderr)
    ts_json = out / "trainscope-train.json"
    subprocess.run([args.trainscope, "train", "--device", "cuda", "--model", "transformer", "--preset", args.preset,
                    "--batch", str(args.batch), "--steps", str(args.warmup + args.steps), "--warmup-steps", str(args.warmup),
                    "--precision", args.precision, "--optimizer", "adamw", "--lr", "3e-4", "--no-ceiling",
                    "--json", str(ts_json)],
                   check=True, stdout=subprocess.DEVNULL)
    rec = next(r for r in json.loads(ts_json.read_text())["records"] if r["kind"] == "train")
    rows["trainscope"] = rec["step_time_us"]["median"]
    eager = rows["pytorch eager"]
    print(f"# transformer {args.preset}, batch {args.batch} x {PRESETS[args.preset][3]} tokens, {args.precision}, "
          f"{torch.cuda.get_device_name()}")
    print(f"# {'implementation':24s} {'step (ms)':>10s} {'tokens/s':>12s} {'vs eager':>9s}")
    for name, us in rows.items():
        print(f"  {name:24s} {us / 1e3:10.2f} {tokens / (us * 1e-6):12.0f} {eager / us:9.2f}x")
    (out / "pytorch-train.json").write_text(json.dumps({"preset": args.preset, "batch": args.batch, "precision": args.precision,
                                                        "device": torch.cuda.get_device_name(), "median_step_us": rows},
                                                       indent=2))


if __name__ == "__main__":
    main()
