"""`trainscope predict collectives` (a collective's time at sizes and group sizes, from the calibration's fits) and
`trainscope predict check` (the fits' error on held-out measured points): the command line, the tables and --json."""
import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict
from statistics import median
from typing import Any

from ..common.collective_facts import collective, names as collective_names
from ..common.collective_issue import ISSUES
from ..common.errors import InputError
from ..common.files import check_output_file, write_atomically
from ..common.link_datasheet import fabrics
from ..common.load import load_results
from ..common.sizes import parse_sizes, size_label
from .check import HeldOut, holdouts
from .fit import MAX_REGIMES
from .predict import Prediction, describe_fit, model, on_fabric, predict, regimes_json
from .series import HOT, SeriesKey, all_series, select
from . import search, train_command
from .fabric_swap import datasheet_fabric

PLACEMENTS = ("out", "in")


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("predict", help="predict collective times at untried sizes and group sizes, and a layout's training "
                       "step, from this cluster's own results, and the model's error on them")
    ps = p.add_subparsers(dest="predict_command", metavar="COMMAND", required=True, parser_class=type(p))
    c = ps.add_parser("collectives", help="predicted time, band and busbw of a collective at each size, on N ranks")
    _calibration(c)
    c.add_argument("--op", required=True, choices=collective_names(), metavar="OP", help="the collective")
    c.add_argument("--bytes", required=True, help="sizes, comma-separated, with K/M/G binary suffixes (as collectives' -b)")
    c.add_argument("--ranks", required=True, type=int, help="the group size to predict at")
    c.add_argument("--transport", help="the transport series to fit (needed when the calibration measured several)")
    c.add_argument("--dtype", help="the dtype series to fit (needed when the calibration measured several)")
    c.add_argument("--placement", choices=PLACEMENTS, default="out", help="out-of-place (default) or in-place records")
    c.add_argument("--issue", choices=ISSUES, help="the MPI calls' form of the series to fit, blocking or nonblocking "
                   "(needed when the calibration measured both: collectives --issue both)")
    c.add_argument("--fabric", action="append", default=[], metavar="NAME", help="what-if: the same collective with each "
                   "step's bandwidth the datasheet's for this fabric (repeatable; " + ", ".join(fabrics()) + ")")
    _regimes(c)
    c.add_argument("--json", metavar="OUT", help="write the predictions and the fit as JSON")
    c.set_defaults(predict_run=_collectives)
    k = ps.add_parser("check", help="the fits' error on the calibration's own points: fitted on every other size (and on "
                      "the other group sizes), predicting the rest")
    _calibration(k)
    k.add_argument("--op", action="append", choices=collective_names(), metavar="OP", help="only this collective "
                   "(repeatable; default: every one measured)")
    _regimes(k)
    k.add_argument("--json", metavar="OUT", help="write each held-out point's measured and predicted time as JSON")
    k.set_defaults(predict_run=_check)
    train_command.add_parser(ps, _calibration, ", ".join(fabrics()))
    ps.choices["train"].set_defaults(predict_run=_train)
    search.add_parser(ps, _calibration)
    ps.choices["search"].set_defaults(predict_run=search.run)


def _calibration(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--calibration", nargs="+", required=True, metavar="RESULT", help="collectives results of the "
                        "cluster (several: their records pooled; `collectives --transports` gives one series per transport)")


def _regimes(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--regimes", type=int, choices=range(1, MAX_REGIMES + 1), default=MAX_REGIMES, metavar="N",
                        help=f"at most N regimes of the size per fit, each its own alpha and beta (1..{MAX_REGIMES}, "
                        f"default {MAX_REGIMES}; 1: one line over every size; docs/prediction.md: the rule)")


def run(args: argparse.Namespace) -> int:
    if args.json:
        check_output_file(args.json, "--json")  # before anything is read
    code: int = args.predict_run(args)
    return code


def _collectives(args: argparse.Namespace) -> int:
    sizes = parse_sizes(args.bytes, "--bytes")
    if args.ranks < 2:
        raise InputError(f"--ranks {args.ranks}: a collective's group size, 2 or more")
    what_ifs = [datasheet_fabric(name) for name in args.fabric]  # before anything is read
    series = all_series(load_results(args.calibration))
    key, points = select(series, args.op, args.transport, args.dtype, args.placement, args.calibration, args.issue)
    m = model(collective(args.op), key, points, args.ranks, args.regimes)
    preds = [predict(m, n) for n in sizes]
    on = {f.name: [predict(on_fabric(m, f), n) for n in sizes] for f in what_ifs}
    print(f"# trainscope predict collectives: {key.describe()} on {args.ranks} ranks; calibration "
          f"{', '.join(args.calibration)}")
    for line in describe_fit(m):
        print(f"# {line}")
    for f in what_ifs:
        print(f"# what-if {f.name}: {f.detail}, {f.gbps:.3f} GB/s per direction (datasheet) as each step's bandwidth, alpha "
              "as measured here; a peak, so the time is a bound below the fabric's")
    columns = "".join(f" {'on ' + name + '(us)':>18}" for name in on)
    print(f"# {'size':>8} {'ranks':>6} {'time(us)':>11} {'band(us)':>21} {'busbw(GB/s)':>12}{columns}  extrapolated")
    for i, p in enumerate(preds):
        band = f"{p.low_us:.2f}..{p.high_us:.2f}"
        cells = "".join(f" {on[name][i].time_us:>18.2f}" for name in on)
        print(f"  {size_label(p.bytes):>8} {p.ranks:>6} {p.time_us:>11.2f} {band:>21} {p.busbw_gbps:>12.3f}{cells}  "
              f"{', '.join(p.extrapolated) or '-'}")
    for i, p in enumerate(preds if on else []):
        print(f"# {size_label(p.bytes)}: {_fastest(p, {name: rows[i] for name, rows in on.items()})}")
    if args.json:
        doc = {"series": _key_json(key), "ranks": args.ranks, "fitted_ranks": list(m.fitted_ranks), "points": m.points,
               "measured_bytes": [m.smallest, m.largest], "regimes": regimes_json(m),
               "predictions": [asdict(p) for p in preds],
               "what_if": [{"fabric": f.name, "detail": f.detail, "gbps": f.gbps,
                            "predictions": [asdict(p) for p in on[f.name]]} for f in what_ifs]}
        _write_json(args.json, doc)
    return 0


def _train(args: argparse.Namespace) -> int:
    return train_command.run(args, [datasheet_fabric(name) for name in args.fabric])


def _fastest(here: Prediction, on: dict[str, Prediction]) -> str:
    """Which of this cluster's link and the what-if fabrics moves the size fastest, and by how much."""
    name, best = min(on.items(), key=lambda kv: kv[1].time_us)
    if best.time_us >= here.time_us:
        return f"this cluster's link is the fastest ({here.time_us:.2f} us; {name} {best.time_us:.2f} us)"
    return f"{name} fastest, {here.time_us / best.time_us:.2f}x this cluster's link ({best.time_us:.2f} vs {here.time_us:.2f} us)"


def _key_json(key: SeriesKey) -> dict[str, Any]:
    return key.as_json()


def _write_json(path: str, doc: dict[str, Any]) -> None:
    write_atomically(path, json.dumps(doc, indent=2) + "\n")
    print(f"# written: {path}")


def _check(args: argparse.Namespace) -> int:
    series = all_series(load_results(args.calibration))
    wanted = set(args.op or [k.op for k in series])
    checks = [h for key in sorted(series) if key.op in wanted for h in holdouts(key, series[key], args.regimes)]
    if not checks:
        raise InputError(f"the calibration ({', '.join(args.calibration)}) holds no series with 3 or more measured sizes"
                         + (f" of {', '.join(sorted(wanted))}" if args.op else "") + ": nothing to hold out")
    _print_checks(args.calibration, checks)
    if args.json:
        _write_json(args.json, {"checks": [dict(series=_key_json(h.key), ranks=h.ranks, held=h.held, fitted_on=h.fitted_on,
                                                regimes=[list(r) for r in h.regimes], median_abs_error=h.median_abs,
                                                max_abs_error=h.max_abs,
                                                points=[dict(bytes=b, measured_us=t, predicted_us=p) for b, t, p in h.errors])
                                           for h in checks]})
    return 0


def _print_checks(calibration: Sequence[str], checks: list[HeldOut]) -> None:
    print(f"# trainscope predict check: held-out error of the alpha-beta fits; calibration {', '.join(calibration)}")
    print("# sizes: fitted on every other measured size, predicting the others; group size: fitted on the other group "
          "sizes; regimes: the fit's, chosen from the fitted points only; error = (predicted - measured) / measured")
    print(f"# {'op':<15} {'transport':<9} {'dtype':<8} {'place':<5} {'form':<11} {'ranks':>5} {'held':<10} {'fitted':>6} "
          f"{'regimes':>7} {'points':>6} {'median|err|':>11} {'max|err|':>9}  worst at")
    for h in checks:
        k = h.key
        form = k.issue if k.cache == HOT else f"{k.issue} {k.cache}"  # a cold series beside its hot one
        print(f"  {k.op:<15} {k.transport:<9} {k.dtype:<8} {k.placement:<5} {form:<11} {h.ranks:>5} {h.held:<10} "
              f"{h.fitted_on:>6} {len(h.regimes):>7} {len(h.errors):>6} {h.median_abs:>11.1%} {h.max_abs:>9.1%}  "
              f"{size_label(h.worst_bytes)}")
    every = [abs(e) for h in checks for e in h.relative()]
    print(f"# all: {len(every)} held-out point(s) in {len(checks)} check(s): median |error| {median(every):.1%}, "
          f"max {max(every):.1%}")
