"""`trainscope predict train`: a layout's training step predicted from its plan (`train ... --plan N --json PLAN`: every
rank's schedule, from the trainer's own code) replayed over this cluster's fitted costs (step_costs.py), with the
breakdown a train record has per rank, a band, what-if fabrics, and beside a measured run of the same layout its
error field by field."""
import argparse
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..common.collective_issue import ISSUES, NONBLOCKING
from ..common.errors import InputError
from ..common.files import write_atomically
from ..common.json_types import Record
from ..common.link_datasheet import Fabric
from ..common.load import Result, load_results
from ..common.predicted_vs_measured import (FIGURES, Job, comparable, error, job_of_train, measured_figures, measured_step,
                                            predicted)
from . import fabric_swap, placement, ps_async
from .placement import LinkClass
from .compute import Wanted, compute_rates
from .predict import describe_fit
from .prediction_record import prediction_document, prediction_record
from .ps_async import AsyncPsStep
from .replay import Progress, StepReplay, replay
from .schedule import parse_schedule, parse_window
from .formulas import Point
from .series import COLD, HOT, SeriesKey, all_series
from .step_costs import End, MeasuredFabric, StepCosts
from .step_figures import mfu, mfu_line, rank_table
from .what_if import Knob, Need, WhatIf, WhatIfKind, needed


def add_parser(ps: Any, calibration: Any, fabric_help: str) -> None:
    t = ps.add_parser("train", help="a layout's step time per rank with its breakdown, from its plan (`train ... --plan N "
                      "--json PLAN`) replayed over the calibration's fitted costs")
    calibration(t)
    t.add_argument("--plan", required=True, metavar="PLAN", help="the result of `trainscope train <flags> --plan N --json "
                   "PLAN`: every rank's schedule of one step")
    placement.add_arguments(t)
    add_issue_argument(t)
    add_cache_argument(t)
    t.add_argument("--fabric", action="append", default=[], metavar="NAME", help="what-if: the step with every "
                   f"collective's bandwidth the datasheet's for this fabric (repeatable; {fabric_help})")
    fabric_swap.add_arguments(t)
    t.add_argument("--progress", choices=PROGRESS_CHOICES, default="auto", help="how a collective moves beside compute: "
                   "independent (from its issue: NCCL), in-waits (only once its members wait for it: MPI's nonblocking "
                   "collectives), auto (by the calibration's backend; default)")
    t.add_argument("--compute-speedup", type=float, metavar="X", help="what-if: compute X times faster than the "
                   "calibration's (another device's measured or datasheet ratio)")
    t.add_argument("--target-ms", type=float, metavar="MS", help="what the step would need to take MS: its collectives' "
                   "bandwidth, or its compute, how many times faster (each alone)")
    t.add_argument("--measured", metavar="RESULT", help="a train result of the same layout: its figures beside the "
                   "prediction, and the error of each")
    t.add_argument("--json", metavar="OUT", help="write the prediction (and the comparison) as a trainscope result: one "
                   "train_prediction record, which report and compare put beside the measured runs of the same layout")


def add_cache_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache", choices=(COLD, HOT), default=COLD, help="the caches to cost the collectives from "
                        "where the calibration measured both (collectives --cache both): cold (default: a step's "
                        "collectives find their buffers evicted by its other data) or hot (as a sweep's loop); an op "
                        "measured from one is costed from that one")


def add_issue_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--issue", choices=ISSUES, default=NONBLOCKING, help="the MPI calls' form to cost the collectives "
                        "from where the calibration measured both (collectives --issue both): nonblocking (default: the "
                        "form the trainer issues) or blocking; an op measured in one form is costed from that one")


@dataclass(frozen=True)
class PlanDoc:
    path: str
    records: list[Record]  # train_plan, one per rank, by rank
    batch: int  # samples (items) per step
    precision: str
    backend: str  # the device kind the plan is for (cpu, cuda)

    @property
    def first(self) -> Record:
        return self.records[0]

    def describe(self) -> str:
        r = self.first
        return (f"{r['model']} {r['preset']}, {r['layout']} at {r['ranks']} ranks (micro-batch {r['micro_batch']} x "
                f"{r['micro_batches']})")

    @property
    def tp(self) -> int:
        """The layout's tensor-parallel degree: its ranks' tp coordinates (a plan's layout is its name)."""
        return 1 + max(int(r["coordinates"].get("tp_rank", 0)) for r in self.records)

    @property
    def job(self) -> Job:
        r = self.first
        return Job(r["model"], r["preset"], r["layout"], int(r["ranks"]), self.backend, self.precision)


def load_plan(path: str) -> PlanDoc:
    res = load_results([path])[0]
    records = sorted(res.records_of("train_plan"), key=lambda r: int(r["rank"]))
    if not records:
        raise InputError(f"--plan {path}: holds no train_plan record (write one with `trainscope train <flags> --plan N "
                         "--json FILE`)")
    missing = [r["rank"] for r in records if r.get("schedule") is None]
    if missing:
        why = records[[r["rank"] for r in records].index(missing[0])].get("schedule_unsupported") or "no schedule"
        raise InputError(f"--plan {path}: rank {missing[0]} has no schedule to replay: {why}")
    if [r["rank"] for r in records] != list(range(int(records[0]["ranks"]))):
        raise InputError(f"--plan {path}: its ranks are not 0..{int(records[0]['ranks']) - 1}, once each")
    config = res.doc["run"]["config"]
    return PlanDoc(path, records, int(config["batch"]), str(config.get("precision", "float32")),
                   str(config.get("device") or "cpu").split(":")[0])


def costs_for(plan: PlanDoc, results: Sequence[Result], series: dict[SeriesKey, list[Point]],
              calibration: Sequence[str], args: argparse.Namespace) -> StepCosts:
    """The plan's costs: compute at the calibration run nearest its micro-batch and tensor-parallel degree, collectives
    from `series`, each op from its link class's series under the placement `args` give (placement.py), in the MPI
    calls' form --issue prefers."""
    r = plan.first
    wanted = Wanted(r["model"], r["preset"], plan.precision, plan.backend)
    where = placement.placement_of(args, int(r["ranks"]), series)
    rates = compute_rates(results, wanted, int(r["micro_batch"]), int(r["ranks"]), plan.tp)
    return StepCosts(rates, series, calibration, args.transport, args.issue, placement=where, cache=args.cache)


@dataclass(frozen=True)
class Predicted:
    nominal: StepReplay
    band: tuple[float, float]  # the step's time with every cost at the low, and at the high end of its band
    ps_async: AsyncPsStep | None = None  # --sync ps-async: its steady state's bounds (ps_async.py)


def _schedules(plan: PlanDoc) -> tuple[dict[int, list[Any]], int]:
    """Every rank's events and the steps of their window (schedule.parse_window)."""
    return parse_window({int(r["rank"]): r["schedule"] for r in plan.records})


def _async_ps(plan: PlanDoc, costs: StepCosts) -> tuple[AsyncPsStep, StepReplay]:
    """ps-async's steady state (ps_async.py) over `costs`: each rank's own compute and update from its schedule."""
    schedules, _ = _schedules(plan)
    facts = {int(r["rank"]): ps_async.Facts.of(r) for r in plan.records}
    own = {rank: ps_async.own_work(list(parse_schedule(rank, events)), rank, costs.compute_us,
                                   costs.host_us(rank) if facts[rank].worker else 0.0)
           for rank, events in schedules.items()}
    return ps_async.steady_state(facts, own, lambda a, b: costs.op_us(ps_async.TRANSFER_OP, 2, facts[a].shard_bytes, (a, b)),
                                 costs.progress)


def step_of(plan: PlanDoc, costs: StepCosts) -> StepReplay:
    """The plan's step over `costs`: its schedules replayed, or ps-async's steady state."""
    if ps_async.is_async_ps(plan.records):
        return _async_ps(plan, costs)[1]
    schedules, steps = _schedules(plan)
    return replay(schedules, costs, costs.progress, steps)


def predict_plan(plan: PlanDoc, costs: StepCosts) -> Predicted:
    low, high = (step_of(plan, costs.at(e)).step_us for e in (End.LOW, End.HIGH))
    if ps_async.is_async_ps(plan.records):
        figures, nominal = _async_ps(plan, costs)
        return Predicted(nominal, (low, high), figures)
    return Predicted(step_of(plan, costs), (low, high))


_PROGRESS_WORDS = {Progress.INDEPENDENT: "from their issue on, beside compute (independent)",
                   Progress.IN_WAITS: "only while their members wait for them, as MPI's do (in-waits)"}
PROGRESS_CHOICES = ("auto",) + tuple(p.value for p in Progress)


def progress_of(choice: str, costs: StepCosts) -> Progress:
    """--progress: as asked, or (auto) IN_WAITS where the calibration's collectives ran on MPI, whose nonblocking
    collectives move only inside the library, INDEPENDENT where they ran on NCCL's own stream."""
    if choice != "auto":
        return Progress(choice)
    return Progress.IN_WAITS if "mpi" in costs.backends() else Progress.INDEPENDENT


def _check_what_ifs(args: argparse.Namespace) -> None:
    for flag, v in (("--compute-speedup", args.compute_speedup), ("--target-ms", args.target_ms)):
        if v is not None and not (math.isfinite(v) and v > 0):
            raise InputError(f"{flag} {v}: a finite number above 0")


def _what_ifs(args: argparse.Namespace, plan: PlanDoc, costs: StepCosts, fabrics: list[Fabric],
              measured: list[MeasuredFabric], link: LinkClass | None) -> list[WhatIf]:
    """The step with the swapped link (fabric_swap.py) on each datasheet fabric and each measured one, and with compute
    --compute-speedup times faster."""
    which = fabric_swap.describe_swap(link)
    on = [WhatIf(f.name, WhatIfKind.FABRIC, f"{f.detail}, {f.gbps:.4g} GB/s per direction (datasheet), latencies as fitted, "
                 f"for {which}", predict_plan(plan, costs.on(f, link)).nominal) for f in fabrics]
    on += [WhatIf(m.name, WhatIfKind.MEASURED_FABRIC, f"collectives fitted from {m.name}'s measurements, for {which}",
                  predict_plan(plan, costs.on(m, link)).nominal) for m in measured]
    if args.compute_speedup:
        on.append(WhatIf(f"compute {args.compute_speedup:g}x", WhatIfKind.COMPUTE,
                         f"compute {args.compute_speedup:g} times the calibration's speed",
                         predict_plan(plan, costs.scaled(args.compute_speedup)).nominal))
    return on


def _needs(args: argparse.Namespace, plan: PlanDoc, costs: StepCosts) -> list[Need]:
    if not args.target_ms:
        return []
    return [needed(lambda c: step_of(plan, c).step_us, costs, args.target_ms * 1e3, k) for k in Knob]


def run(args: argparse.Namespace, fabrics: list[Fabric]) -> int:
    _check_what_ifs(args)
    placement.check_ranks_per_host(args)
    plan = load_plan(args.plan)
    measured = _measured(args.measured, plan) if args.measured else None
    results = load_results(args.calibration)
    costs = costs_for(plan, results, all_series(results), args.calibration, args)
    costs = replace(costs, progress=progress_of(args.progress, costs))
    link = fabric_swap.swapped_link(args, costs.placement)  # a link no op is of: one line before any replay
    others = fabric_swap.measured_fabrics(args)
    p = predict_plan(plan, costs)
    on = _what_ifs(args, plan, costs, fabrics, others, link)
    needs = _needs(args, plan, costs)
    utilization = mfu(plan, costs.rates, p.nominal.step_us, p.band)
    _print(args, plan, costs, p, measured, utilization)
    _print_what_ifs(args, link, p.nominal, on)
    for need in needs:
        print(f"# to reach {args.target_ms:g} ms: {need.describe(args.target_ms * 1e3)}")
    if args.json:
        record = prediction_record(plan, costs, p, on, args.target_ms, needs,
                                   (args.measured, measured) if measured else None, utilization)
        doc = prediction_document(args, plan, record, results)
        write_atomically(args.json, json.dumps(doc, indent=1) + "\n")
        print(f"# written: {args.json}")
    return 0


def _measured(path: str, plan: PlanDoc) -> Record:
    """The train record of `path` that ran the plan's layout at its rank count."""
    trains = [r for res in load_results([path]) for r in res.records_of("train") if comparable(r)]
    same = [r for r in trains if job_of_train(r) == plan.job]
    if not same:
        seen = ", ".join(sorted({f"{r['model']} {r['preset']} {job_of_train(r).layout} at {r['world_size']} "
                                 f"({r['backend']}, {r['precision']})" for r in trains})) or "no completed train record"
        raise InputError(f"--measured {path}: no completed train run of {plan.describe()} on {plan.backend} in "
                         f"{plan.precision} (it has: {seen})")
    return same[0]


def _coordinates(r: Record, varying: set[str]) -> str:
    """The rank's place on the axes its plan's ranks differ in (dp0 tp1), as the plan's table names it."""
    return " ".join(f"{k.removesuffix('_rank')}{v}" for k, v in r["coordinates"].items() if k in varying) or "-"


def _print(args: argparse.Namespace, plan: PlanDoc, costs: StepCosts, prediction: Predicted,
           measured: Record | None, utilization: Record) -> None:
    p, band = prediction.nominal, prediction.band
    print(f"# trainscope predict train: {plan.describe()}; plan {plan.path}; calibration {', '.join(args.calibration)}")
    print(f"# compute: {costs.rates.describe()}")
    print(f"# collectives move {_PROGRESS_WORDS[costs.progress]} (--progress {args.progress})")
    _print_placement(plan, costs)
    for line in (calls_costed(costs), caches_costed(costs)):
        if line:
            print(f"# {line}")
    if costs.out_for_in:
        print(f"# called in place, costed from out-of-place series (the calibration measured none in place; collectives "
              f"--placement both does): {', '.join(sorted(costs.out_for_in))}")
    for (op, ranks, link, _), fitted in sorted(costs.used().items()):
        first, *regimes = describe_fit(fitted)
        print(f"# {op} on {ranks} ranks, {link.value} ({fitted.key.describe()}): {first}")
        for line in regimes:
            print(f"# {line}")
    # The record's per-rank figures are medians over its steps: beside a window's mean step they would be a step that
    # does not communicate, so only the step (its mean) is put beside a window's prediction.
    theirs = {int(k["rank"]): k for k in measured_figures(measured, args.measured, p.steps)["ranks"]} if measured else {}
    beside = bool(theirs) and p.steps == 1
    head = "".join(f" {f.name + '(us)':>18}" for f in FIGURES)
    print(f"# {'rank':>4} {'coordinates':<14}{head}" + ("  (measured beside each: predicted / measured)" if beside else ""))
    varying = {k for k in plan.first["coordinates"] if len({r["coordinates"][k] for r in plan.records}) > 1}
    coordinates = {int(r["rank"]): _coordinates(r, varying) for r in plan.records}
    for rank, where in coordinates.items():
        cells = "".join(_cell(predicted(asdict(p.rank(rank)), f), theirs.get(rank, {}).get(f.field)) for f in FIGURES)
        print(f"  {rank:>4} {where:<14}{cells}")
    print("\n".join(rank_table(plan, p, coordinates, theirs)))
    throughput = plan.batch / p.step_us * 1e6 if p.step_us > 0 else 0.0
    if prediction.ps_async:
        print(f"# {prediction.ps_async.describe()}")
    print(f"# step: {p.step_us:.1f} us (band {band[0]:.1f}..{band[1]:.1f}), throughput {throughput:.1f} samples/s")
    print(mfu_line(utilization, costs.rates.record, measured))
    if p.steps > 1:
        print(f"# the plan's steps differ: each figure is the mean step of its window of {p.steps} steps "
              f"({p.window_us:.1f} us)")
    if measured:
        m = measured_step(measured, p.steps)
        print(f"# measured step ({'median' if p.steps == 1 else 'mean'} of {measured['timed_steps']}): {m:.1f} us; error "
              f"(predicted - measured) / measured {error(p.step_us, m):+.1%}")
        if not band[0] <= m <= band[1]:
            print("# the measured step lies outside the band: a finding (a slow link, a straggler, a busy host, or what "
                  "the model leaves out: docs/prediction.md)")


def _print_what_ifs(args: argparse.Namespace, link: LinkClass | None, p: StepReplay, on: list[WhatIf]) -> None:
    if any(w.kind is not WhatIfKind.COMPUTE for w in on):
        print(f"# the fabric what-ifs replace {fabric_swap.describe_swap(link)} (--fabric-link {args.fabric_link})")
    for w in on:
        q = w.step
        print(f"# what-if {w.name}: step {q.step_us:.1f} us, {p.step_us / q.step_us:.2f}x this cluster's speed"
              if q.step_us > 0 else f"# what-if {w.name}: step 0 us")
    if on:
        best = min(on, key=lambda w: w.step.step_us)
        print(f"# fastest: {best.name}" if best.step.step_us < p.step_us else "# fastest: this cluster as measured")


def _print_placement(plan: PlanDoc, costs: StepCosts) -> None:
    """Where the ranks sit, and each group's link class (what its ops are costed from)."""
    if costs.placement is None:
        return
    groups = placement.links_by_group(costs.placement, plan.records)
    print(f"# placement: {costs.placement.describe()}; groups: "
          + (", ".join(f"{g} {' and '.join(links)}" for g, links in groups.items()) or "none"))


def calls_costed(costs: StepCosts) -> str | None:
    """Which form of the MPI calls each collective was costed from, and why (None where the backend has one form)."""
    by = _ops_by(costs, "issue")
    if not by:
        return None
    return (f"MPI calls costed as measured {'; '.join(f'{form} for {ops}' for form, ops in by.items())} "
            f"({_why(by, costs.issue, 'issue', 'in the other form only')})")


def caches_costed(costs: StepCosts) -> str | None:
    """Which caches' series each collective was costed from, where the calibration measured cold ones at all."""
    by = _ops_by(costs, "cache")
    if costs.cache == COLD and not any(k.cache == COLD for k in costs.series):
        return None  # a calibration from before --cache: nothing to choose between, nothing to say
    return (f"collectives costed from {'; '.join(f'{cache} caches for {ops}' for cache, ops in by.items())} "
            f"({_why(by, costs.cache, 'cache', 'from the other caches only')})")


def _ops_by(costs: StepCosts, axis: str) -> dict[str, str]:
    """The ops costed, by their series' value of `axis` (a SeriesKey field; "-": none, left out), sorted, as text."""
    by: dict[str, list[str]] = {}
    for (op, _, _, _), m in sorted(costs.used().items()):
        value = getattr(m.key, axis)
        if value != "-" and op not in by.get(value, []):
            by.setdefault(value, []).append(op)
    return {value: ", ".join(ops) for value, ops in sorted(by.items())}


def _why(by: dict[str, str], preferred: str, option: str, only: str) -> str:
    """The option that chose, and the ops the calibration measured the other way only."""
    other = [ops for value, ops in by.items() if value != preferred]
    why = f"--{option} {preferred}"
    if other:
        why += f"; the calibration measured {', '.join(other)} {only}: collectives --{option} both measures both"
    return why


def _cell(value: float, measured: float | None) -> str:
    return f" {value:>18.1f}" if measured is None else f" {f'{value:.0f}/{measured:.0f}':>18}"
