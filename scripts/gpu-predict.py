#!/usr/bin/env python3
"""Issue #41 on a GPU: the first contact's two-process layouts predicted from its own calibration steps, beside what
they measured. Runs here after the device call (the plans and `predict train` are host work, no device minutes), on
the first contact's logs unpacked:

    tar -xzf first-contact-logs.tar.gz && scripts/gpu-predict.py first-contact-logs

For each `pair-train-<layout>.json` there: its plan made again from the command line that ran it (the record's
`run.command_line`, --json replaced by --plan at its world size, so the plan is of exactly that job), then `predict
train` twice from the same collectives (`pair-nccl.json`, the pair's sweep): compute from the job alone on the GPU
(`cal-b<micro-batch>.json`), and with the two processes' data-parallel runs added (`pair-cal-dp-b<micro-batch>.json`:
the GPU shared as in the layouts; compute.py prefers them at the layout's micro-batch). The table: each prediction and
its error against the measured step, the measured step, and the median |error| of each column. Plans, predictions
and their logs go to --out (default LOGS/predict). Exit 0 when every layout was predicted, 1 when one was not (its
row says why), 2 when the folder lacks the calibration (one line)."""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# (column, the calibration files' patterns besides the sweep)
CALIBRATIONS = (("alone", ("cal-b*.json",)), ("with pair dp", ("cal-b*.json", "pair-cal-dp-b*.json")))
SWEEP = "pair-nccl.json"


class Refused(Exception):
    """A layout that cannot be predicted: its row says why."""


def fail(message: str) -> None:
    print(f"gpu-predict: error: {message}", file=sys.stderr)
    sys.exit(2)


def train_record(path: Path) -> tuple[dict, dict]:
    """The result document and its train record; Refused when the run wrote none (it failed on the device)."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise Refused(f"unreadable ({e})") from None
    records = [r for r in doc.get("records", []) if r.get("kind") == "train"]
    if not records or records[0].get("completed") is not True:
        raise Refused("the run did not complete (its log on the device says why)")
    return doc, records[0]


def plan_command(trainscope: str, doc: dict, world: int, plan: Path) -> list[str]:
    """The measured run's own command line with --json OUT replaced by --plan WORLD --json PLAN. The line comes from
    a file and runs as argv, no shell; `train --plan` trains nothing and writes its --json alone (a line's --mllog,
    --trace, --dump-logits or --checkpoint-dir writes nothing: tests/integration/test_gpu_predict.py)."""
    argv = list(doc["run"]["command_line"][1:])
    if not argv or argv[0] != "train":
        raise Refused(f"not a train command line: {' '.join(argv[:3])}")
    kept, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--json":
            skip = True
        elif not a.startswith("--json="):
            kept.append(a)
    return [trainscope, *kept, "--plan", str(world), "--json", str(plan)]


def run(cmd: list[str], log: Path, timeout_s: int = 300) -> None:
    try:  # a plan or a prediction takes seconds: one that does not end is a row, not a hung script
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise Refused(f"{Path(cmd[0]).name} {cmd[1]} did not end within {timeout_s} s") from None
    log.write_text(" ".join(cmd) + "\n" + p.stdout + p.stderr)
    if p.returncode != 0:
        lines = (p.stderr or p.stdout).strip().splitlines()
        raise Refused(f"{Path(cmd[0]).name} {cmd[1]} exit {p.returncode}: {lines[-1] if lines else ''} ({log})")


def predict_layout(trainscope: str, logs: Path, out: Path, measured: Path,
                   calibrations: list[tuple[str, tuple[str, ...]]]) -> tuple[str, float, list[dict]]:
    """The layout's name, its measured step (us) and one prediction record per calibration column."""
    doc, record = train_record(measured)
    name = measured.stem.removeprefix("pair-train-")
    plan = out / f"plan-{name}.json"
    run(plan_command(trainscope, doc, int(record["world_size"]), plan), out / f"plan-{name}.log")
    predictions = []
    for column, patterns in calibrations:
        tag = column.replace(" ", "-")
        calibration = sorted({str(f) for p in patterns for f in logs.glob(p)}) + [str(logs / SWEEP)]
        prediction = out / f"predict-{name}-{tag}.json"
        run([trainscope, "predict", "train", "--calibration", *calibration, "--plan", str(plan), "--measured",
             str(measured), "--json", str(prediction)], out / f"predict-{name}-{tag}.log")
        predictions.append(json.loads(prediction.read_text())["records"][0])
    return record["layout"]["name"], predictions[0]["measured"]["step_us"], predictions


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", type=Path, help="the first contact's logs folder (first-contact-logs/, unpacked)")
    ap.add_argument("--trainscope", default=str(ROOT / "build" / "trainscope"), help="this host's build")
    ap.add_argument("--out", type=Path, help="where the plans and predictions go (default: LOGS/predict)")
    a = ap.parse_args()
    if not a.logs.is_dir():
        fail(f"{a.logs}: not a folder (the first contact's logs, unpacked from first-contact-logs.tar.gz)")
    missing = [p for p in (SWEEP, "cal-b*.json", "pair-train-*.json") if not any(a.logs.glob(p))]
    if missing:
        fail(f"{a.logs} holds no {', '.join(missing)} (the first contact's steps pair-nccl, cal-b*, pair-train-*)")
    if not Path(a.trainscope).is_file():
        fail(f"{a.trainscope}: no trainscope build here (scripts/setup.sh, or --trainscope PATH)")
    out = a.out or a.logs / "predict"
    out.mkdir(parents=True, exist_ok=True)
    # A column whose runs are missing (a step skipped or failed on the device) is left out, and said.
    calibrations = [(c, ps) for c, ps in CALIBRATIONS if all(any(a.logs.glob(p)) for p in ps)]
    for c, ps in CALIBRATIONS:
        if (c, ps) not in calibrations:
            print(f"# no '{c}' column: {a.logs} holds no {' or '.join(ps)}")
    columns = [c for c, _ in calibrations]
    print(f"# {'layout':<24}" + "".join(f" {c + ' (ms)':>18} {'error':>8}" for c in columns) + f" {'measured (ms)':>14}")
    errors: dict[str, list[float]] = {c: [] for c in columns}
    refused = 0
    for measured in sorted(a.logs.glob("pair-train-*.json")):
        try:
            layout, step_us, predictions = predict_layout(a.trainscope, a.logs, out, measured, calibrations)
        except Refused as e:
            print(f"  {measured.stem:<24} not predicted: {e}")
            refused += 1
            continue
        cells = ""
        for column, p in zip(columns, predictions):
            errors[column].append(abs(p["measured"]["error"]))
            cells += f" {p['step_us'] / 1e3:>18.3f} {p['measured']['error']:>+8.1%}"
        print(f"  {layout:<24}{cells} {step_us / 1e3:>14.3f}")
    for column in columns:
        if errors[column]:
            print(f"# {column}: median |error| {statistics.median(errors[column]):.1%} over {len(errors[column])} "
                  f"layout(s), worst {max(errors[column]):.1%}")
    print(f"# plans, predictions and their logs: {out}")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
