"""`trainscope predict search`: the best layouts for N ranks, each predicted from its own plan.

The candidates are every way of splitting N ranks into data x tensor x pipeline parallel (dp x tp x pp = N), each
ZeRO stage where there is data parallelism, and for a pipeline 1, 2 and 4 micro-batches per stage; for a model with
experts, every expert-parallel split too: ep > 1 carved out of the data-parallel ranks (dp x ep x tp x pp = N). Which
of them a model can run (tp dividing its heads, pp its layers, ep its experts, micro-batches its batch, the memory
limit) is not decided here: each candidate's plan is made by the trainer itself (`trainscope train <flags> --plan
N`), and a candidate the trainer refuses is listed as skipped with the trainer's own one line, so no layout rule is
written twice; one whose ops the calibration did not measure is listed with what it lacks. Whether the model has
experts is the trainer's word too: the ep splits are planned after the others, when one of their plans says so (its
`experts`), or when none could be planned (then the trainer's lines say what each ep split lacks), so a dense
model's list is not filled with ep refusals. Each
plan is replayed over the calibration's costs (train_command.predict_plan); the ranking is by predicted step time
among the layouts whose every rank fits --memory-limit. With a what-if fabric (--fabric, --measured-fabric: one), each
candidate is replayed on it too and the ranking is by that step: the best layout on the fabric one would buy, which
need not be the best here (a layout that moves more bytes across hosts gains more from a faster inter-host link)."""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..common.errors import InputError
from ..common.files import write_atomically
from ..common.link_datasheet import Fabric, fabrics
from ..common.load import Result, load_results
from . import fabric_swap, placement
from .placement import LinkClass
from .formulas import Point
from .series import SeriesKey, all_series
from .step_costs import MeasuredFabric
from .step_figures import plan_memory
from .train_command import (PROGRESS_CHOICES, PlanDoc, Predicted, add_cache_argument, add_issue_argument, costs_for,
                            load_plan, predict_plan, progress_of)

# The flags a candidate sets: a search's train flags may not give them.
SET_BY_SEARCH = ("--dp", "--tp", "--pp", "--ep", "--zero", "--micro-batches", "--plan", "--json", "--memory-limit",
                 "--sync", "--transports")
STAGES = (1, 2, 4)  # micro-batches per pipeline stage a candidate tries
PLAN_TIMEOUT_S = 600


@dataclass(frozen=True)
class Candidate:
    dp: int
    tp: int
    pp: int
    zero: int
    micro_batches: int
    ep: int = 1  # expert-parallel ranks, carved out of the data-parallel ones: the replicas are dp x ep

    @property
    def flags(self) -> list[str]:
        return ["--dp", str(self.dp), "--tp", str(self.tp), "--pp", str(self.pp), "--ep", str(self.ep), "--zero",
                str(self.zero), "--micro-batches", str(self.micro_batches)]

    @property
    def name(self) -> str:
        """As the trainer's layout names its axes (dp, tp, pp, ep)."""
        axes = (("dp", self.dp), ("tp", self.tp), ("pp", self.pp), ("ep", self.ep))
        parts = [f"{axis}{n}" for axis, n in axes if n > 1] or ["dp1"]
        return " x ".join(parts) + (f" zero{self.zero}" if self.zero else "") + \
            (f" mb{self.micro_batches}" if self.micro_batches > 1 else "")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def candidates(ranks: int, expert_parallel: bool = False) -> list[Candidate]:
    """Every dp x tp x pp = ranks, ZeRO 0-3 where the replicas are more than one, and 1, 2, 4 micro-batches per stage
    with pp > 1; with expert_parallel, instead every split with ep > 1 taken from the data-parallel ranks
    (dp x ep x tp x pp = ranks)."""
    out = []
    for tp in _divisors(ranks):
        for pp in _divisors(ranks // tp):
            replicas = ranks // tp // pp  # dp x ep
            for ep in [e for e in _divisors(replicas) if e > 1] if expert_parallel else [1]:
                for zero in range(4) if replicas > 1 else (0,):
                    for per_stage in STAGES if pp > 1 else (1,):
                        out.append(Candidate(replicas // ep, tp, pp, zero, per_stage * pp, ep))
    return out


@dataclass(frozen=True)
class Outcome:
    candidate: Candidate
    plan: PlanDoc | None  # the trainer's, when it planned the layout (predicted or not)
    predicted: Predicted | None
    skipped: str  # the trainer's line when it refused the layout, or what the calibration lacks to predict it; else ""
    what_if_us: float | None = None  # its step on the what-if fabric, when the search has one

    @property
    def ranked_us(self) -> float:
        """The step the ranking is by: on the what-if fabric where there is one."""
        if self.what_if_us is not None:
            return self.what_if_us
        return self.predicted.nominal.step_us if self.predicted else 0.0

    @property
    def peak_bytes(self) -> float:
        return max(float(r["total_bytes"]) for r in self.plan.records) if self.plan else 0.0

    @property
    def fits(self) -> bool:
        return self.plan is not None and all(r.get("fits") is not False for r in self.plan.records)


def add_parser(ps: Any, calibration: Any) -> None:
    s = ps.add_parser("search", help="the best layouts for N ranks: every dp x tp x pp (x ep for a model with experts), "
                      "ZeRO stage and micro-batch count planned by the trainer and predicted, ranked by step time under "
                      "a memory limit")
    calibration(s)
    s.add_argument("--ranks", required=True, type=int, help="the ranks to lay the model out over")
    s.add_argument("--memory-limit", default="0", help="bytes per rank a layout must fit (as train's; 0: no limit)")
    placement.add_arguments(s)
    add_issue_argument(s)
    add_cache_argument(s)
    s.add_argument("--fabric", metavar="NAME", help="what-if: rank the layouts by their step with the swapped link's "
                   f"bandwidth this datasheet fabric's (--fabric-link; one of {', '.join(fabrics())})")
    fabric_swap.add_arguments(s)
    s.add_argument("--progress", choices=PROGRESS_CHOICES, default="auto", help="how a collective moves beside compute "
                   "(as predict train's; auto: by the calibration's backend)")
    s.add_argument("--top", type=int, default=10, help="layouts to list (default 10; the skipped are counted)")
    s.add_argument("--json", metavar="OUT", help="write every candidate (its prediction, memory, or why it was refused)")
    s.add_argument("train_flags", nargs=argparse.REMAINDER, metavar="-- TRAIN_FLAGS",
                   help="after --: the train flags of the model (--model, --preset, --batch, --precision, ...)")


def _train_flags(args: argparse.Namespace) -> list[str]:
    flags = [f for f in args.train_flags if f != "--"] if args.train_flags[:1] == ["--"] else list(args.train_flags)
    if not flags:
        raise InputError("predict search: give the model's train flags after --, e.g. -- --model mlp --preset small "
                         "--batch 16")
    bad = [f for f in flags if f.split("=")[0] in SET_BY_SEARCH]
    if bad:
        raise InputError(f"predict search: {bad[0]} is set by each candidate; give only the model's flags after --")
    return flags


def _trainscope() -> str:
    path = os.environ.get("TRAINSCOPE_BIN", "")
    if not path or not Path(path).is_file():
        raise InputError("predict search makes each candidate's plan with the trainscope binary: run it as `trainscope "
                         "predict search` (TRAINSCOPE_BIN names the binary)")
    return path


def _plan(binary: str, flags: list[str], c: Candidate, args: argparse.Namespace, folder: str) -> PlanDoc | str:
    """The candidate's plan, or the trainer's one line refusing it."""
    out = f"{folder}/plan-{c.dp}-{c.tp}-{c.pp}-{c.ep}-{c.zero}-{c.micro_batches}.json"
    cmd = [binary, "train", *flags, *c.flags, "--plan", str(args.ranks), "--memory-limit", args.memory_limit,
           "--json", out]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=PLAN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:  # a plan runs no step: this long is a hang, not a slow candidate
        raise InputError(f"{' '.join(cmd)}: made no plan in {PLAN_TIMEOUT_S} s (stopped)") from None
    lines = done.stderr.strip().splitlines()
    if done.returncode == 2:
        return (lines[-1] if lines else "refused").removeprefix("trainscope: error: ")
    if done.returncode != 0:  # not a refusal: a failure of the trainer's own, which the search does not hide
        how = f"killed by {signal.Signals(-done.returncode).name}" if done.returncode < 0 else f"exit {done.returncode}"
        raise InputError(f"{' '.join(cmd)}: {how}" + (f": {lines[-1].strip()}" if lines else ""))
    return load_plan(out)


def run(args: argparse.Namespace) -> int:
    if args.ranks < 1 or args.ranks > 1 << 16:
        raise InputError(f"--ranks {args.ranks}: from 1 to {1 << 16}")
    if args.top < 1:
        raise InputError(f"--top {args.top}: 1 or more")
    placement.check_ranks_per_host(args, args.ranks)
    flags, binary = _train_flags(args), _trainscope()
    results = load_results(args.calibration)
    series = all_series(results)
    where = placement.placement_of(args, args.ranks, series)  # a bad one is one line before any candidate is planned
    what_if = _what_if(args)
    link = fabric_swap.swapped_link(args, where)
    with tempfile.TemporaryDirectory(prefix="trainscope-search-") as folder:
        def outcomes_of(todo: list[Candidate]) -> list[Outcome]:
            got = []
            for i, c in enumerate(todo, 1):
                print(f"# plan {i}/{len(todo)}: {c.name}", file=sys.stderr, flush=True)
                plan = _plan(binary, flags, c, args, folder)
                got.append(Outcome(c, None, None, plan) if isinstance(plan, str) else
                           _predicted(c, plan, results, series, args, what_if, link))
            return got
        outcomes = outcomes_of(candidates(args.ranks))
        plans = [o.plan for o in outcomes if o.plan]
        if not plans or any(_has_experts(p) for p in plans):  # the trainer's word on the model's experts
            outcomes += outcomes_of(candidates(args.ranks, expert_parallel=True))
    _print(args, flags, outcomes, where, what_if, link)
    if args.json:
        doc = _doc(args, flags, outcomes, where)
        if what_if:
            doc["what_if"] = {"name": what_if.name, "kind": _kind(what_if), "detail": _describe(what_if, link),
                              "link": link.value if link else "all"}
        write_atomically(args.json, json.dumps(doc, indent=2) + "\n")
        print(f"# written: {args.json}")
    return 0


def _has_experts(plan: PlanDoc) -> bool:
    """Whether the trainer's plan says the model has a mixture of experts to divide (a plan written before the field:
    none)."""
    return int(plan.first.get("experts", 0)) > 0


def _predicted(c: Candidate, plan: PlanDoc, results: Sequence[Result], series: dict[SeriesKey, list[Point]],
               args: argparse.Namespace, what_if: Fabric | MeasuredFabric | None, link: LinkClass | None) -> Outcome:
    """The candidate's plan replayed over the calibration (and the what-if fabric), or what the calibration lacks."""
    try:
        costs = costs_for(plan, results, series, args.calibration, args)
        costs = replace(costs, progress=progress_of(args.progress, costs))
        on = predict_plan(plan, costs.on(what_if, link)).nominal.step_us if what_if else None
        return Outcome(c, plan, predict_plan(plan, costs), "", on)
    except InputError as e:  # a cost the calibration lacks (an op it did not measure): that candidate only
        return Outcome(c, plan, None, f"not predicted: {e}")


def _what_if(args: argparse.Namespace) -> Fabric | MeasuredFabric | None:
    """The one what-if fabric the layouts are ranked on, if any; InputError for more than one or an unknown one."""
    given = ([args.fabric] if args.fabric else []) + list(args.measured_fabric)
    if len(given) > 1:
        raise InputError(f"predict search ranks on one what-if fabric: give one --fabric or one --measured-fabric (given: "
                         f"{', '.join(given)}); `predict train` compares several for one layout")
    if args.fabric:
        return fabric_swap.datasheet_fabric(args.fabric)
    measured = fabric_swap.measured_fabrics(args)
    return measured[0] if measured else None


def _kind(what_if: Fabric | MeasuredFabric) -> str:
    return "measured_fabric" if isinstance(what_if, MeasuredFabric) else "fabric"


def _describe(what_if: Fabric | MeasuredFabric | None, link: LinkClass | None) -> str:
    if what_if is None:
        return ""
    source = (f"collectives fitted from {what_if.name}'s measurements" if isinstance(what_if, MeasuredFabric) else
              f"{what_if.detail}, {what_if.gbps:.4g} GB/s per direction (datasheet), latencies as fitted")
    return f"{what_if.name}: {source}, for {fabric_swap.describe_swap(link)}"


def _doc(args: argparse.Namespace, flags: Sequence[str], outcomes: list[Outcome], where: placement.Placement) -> dict[str, Any]:
    def one(o: Outcome) -> dict[str, Any]:
        c = o.candidate
        got: dict[str, Any] = {"layout": o.candidate.name, "dp": c.dp, "tp": c.tp, "pp": c.pp, "ep": c.ep,
                               "zero": c.zero, "micro_batches": c.micro_batches}
        if o.predicted:
            assert o.plan is not None
            got.update(step_us=o.predicted.nominal.step_us, band_us=list(o.predicted.band), peak_bytes=o.peak_bytes,
                       fits=o.fits, memory_per_rank=[{"rank": r["rank"], **plan_memory(r)} for r in o.plan.records])
            if o.what_if_us is not None:
                got["what_if_step_us"] = o.what_if_us
        else:
            got["refused"] = o.skipped
        return got
    return {"ranks": args.ranks, "train_flags": list(flags), "memory_limit": args.memory_limit,
            "placement": where.as_json(), "candidates": [one(o) for o in outcomes]}


def _rank_key(o: Outcome) -> tuple[bool, float]:
    """Those that fit first, each by its predicted step."""
    return (not o.fits, o.ranked_us)


def _print(args: argparse.Namespace, flags: Sequence[str], outcomes: list[Outcome], where: placement.Placement,
           what_if: Fabric | MeasuredFabric | None, link: LinkClass | None) -> None:
    planned = sorted((o for o in outcomes if o.predicted), key=_rank_key)
    print(f"# trainscope predict search: {' '.join(flags)} on {args.ranks} ranks"
          + (f", at most {args.memory_limit} per rank" if args.memory_limit != "0" else "")
          + f"; calibration {', '.join(args.calibration)}")
    print(f"# placement: {where.describe()}")
    if what_if:
        print(f"# ranked by the step on the what-if fabric {_describe(what_if, link)}; samples/s on it too")
    on = f" {'on ' + what_if.name + '(ms)':>16}" if what_if else ""
    label = "here(ms)" if what_if else "step(ms)"
    print(f"# {'':>3} {label:>10} {'band(ms)':>17}{on} {'samples/s':>11} {'peak MiB':>9} {'fits':>5}  layout")
    for i, o in enumerate(planned[:args.top], 1):
        assert o.predicted and o.plan
        step = o.predicted.nominal.step_us
        band = f"{o.predicted.band[0] / 1e3:.3f}..{o.predicted.band[1] / 1e3:.3f}"
        rate = o.plan.batch / o.ranked_us * 1e6 if o.ranked_us > 0 else 0.0
        on = f" {o.ranked_us / 1e3:>16.3f}" if what_if else ""
        print(f"  {i:>3} {step / 1e3:>10.3f} {band:>17}{on} {rate:>11.1f} {o.peak_bytes / 2 ** 20:>9.1f} "
              f"{'yes' if o.fits else 'no':>5}  {o.candidate.name}")
    skipped = [o for o in outcomes if o.skipped]
    print(f"# {len(planned)} layout(s) predicted, {sum(o.fits for o in planned)} fit; {len(skipped)} refused by the "
          "trainer or not predicted"
          + "".join(f"\n#   {o.candidate.name}: {o.skipped}" for o in skipped[:5])
          + (f"\n#   ... and {len(skipped) - 5} more" if len(skipped) > 5 else ""))
