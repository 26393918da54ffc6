"""Command line of the reports tool: `python3 -m reports report|compare|predict ...`.

Exit codes: 0 fine (compare: pass), 1 compare found a regression (or, under `--missing fail`, a record of the
baseline the candidate lacks), 2 bad input, 3 compare could not decide (inconclusive: too few samples, too noisy,
or measured under contention beyond what the data settle; with `--inconclusive pass|fail`, 0 or 1 instead).
Errors are one line on stderr, never a traceback.
"""
import argparse
import json
import math
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO, cast

from .compare import baselines
from .traces.analyze import analyze, format_side_by_side, format_table as format_analysis
from .compare.compare import compare, format_json, format_junit, format_markdown, format_table, machine_key
from .common.errors import InputError
from .import_export.export import FORMATS
from .common.files import check_output_dir, check_output_file, write_atomically
from .import_export.import_records import Tool
from .import_export.importers import import_results
from .traces.kernel_breakdown import coverage_failures
from .common.collective_facts import names as collective_names
from .common.load import Result, load_result, load_results
from .accept.accept import accept, format_junit as format_acceptance_junit, format_table as format_acceptance
from .accept.rules import Rules, default_for as default_rules, from_toml as rules_from_toml, shipped as shipped_rules
from .common.policy import Inconclusive, Missing, Policy, apply as apply_policy, from_toml, parse_override
from .common.memory import memory_text
from .common.terminal import Escaping, printable
from .history import check as history_check, commands as history
from .predict import commands as predict


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise InputError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="trainscope", description="trainscope reports: HTML reports and regression comparison of result documents")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    r = sub.add_parser("report", help="write an HTML report (plots embedded), PNGs and summary.md")
    r.add_argument("results", nargs="+", help="result documents (trainscope .json, or the .jsonl stream of a run that did not "
                   "finish, marked incomplete); several are overlaid")
    r.add_argument("-o", "--output", required=True, help="directory to write index.html, the plots and summary.md into")
    r.add_argument("--label", action="append", help="a name per result, in order (default: the run's label, or host and date)")
    r.add_argument("--title", default="trainscope report")
    r.add_argument("--trace", help="a `train --trace` directory: adds the profile section (one step of every rank, breakdown, "
                   "stragglers)")
    r.add_argument("--rules", metavar="TOML", help="node acceptance rules: adds a PASS/FAIL per host (default: the shipped "
                   "rules of the bring-up suite the results ran, when there are some)")
    r.add_argument("--reference", action="append", default=[], metavar="RESULT", help="with the acceptance rules: a result "
                   "of a known good node that their fraction-of-reference limits read (repeatable)")
    r.add_argument("--history", metavar="DB", help="adds the trend section: these results' records across the commits of a "
                   "history (a `history --db` value: a SQLite file or postgresql://...; see history report)")
    v = sub.add_parser("accept", help="node acceptance: PASS/FAIL per host against a rules file: exit 0 all pass, 1 a host "
                       "fails, 3 inconclusive (a host failed a rule while busy with other work)")
    v.add_argument("results", nargs="+", help="result documents (one cluster run, or one run per node)")
    v.add_argument("--rules", metavar="TOML", help="the rules (see README; default: the shipped rules of the bring-up suite "
                   "the results ran)")
    v.add_argument("--junit", help="write JUnit XML: one test case per host, a failure listing its failing rules")
    v.add_argument("--reference", action="append", default=[], metavar="RESULT", help="a result of a known good node (or a "
                   "baseline run) that the rules' fraction-of-reference limits read (repeatable: the median of them)")
    v.add_argument("--policy", metavar="TOML", help="when a host counts as busy: max_others_busy, max_load_per_cpu (as for "
                   "compare; default 25%% of the CPUs)")
    c = sub.add_parser("compare", help="compare a candidate result with a baseline: exit 0 pass, 1 regression, 3 inconclusive")
    c.add_argument("files", nargs="+", metavar="RESULT", help="BASELINE... CANDIDATE (several baselines: runs of one build, "
                   "whose spread joins the interval); with --baseline or --baseline-dir, CANDIDATE... (one or several runs)")
    c.add_argument("--baseline", action="append", default=[], metavar="RESULT", help="a run of the baseline (repeatable); the "
                   "positional results are then all runs of the candidate")
    c.add_argument("--baseline-dir", help="find this machine's baseline runs in DIR (DIR/<machine key>/*.json; see README)")
    c.add_argument("--save-baseline", action="store_true", help="with --baseline-dir: when this machine has no baseline yet, "
                   "store CANDIDATE as its first run and exit 0 (a first CI run); otherwise compare as usual")
    c.add_argument("--add-baseline", action="store_true", help="with --baseline-dir: store CANDIDATE as one more run of this "
                   "machine's baseline, without comparing (run the same build several times to build a baseline)")
    c.add_argument("--replace-baseline", action="store_true", help="with --baseline-dir: make CANDIDATE this machine's only "
                   "baseline run, without comparing (a deliberate refresh)")
    c.add_argument("--policy", metavar="TOML",
                   help="thresholds and noise limits from a file (see README); the options below override it")
    c.add_argument("--threshold", type=float, help="percent change that matters (default 5)")
    c.add_argument("--threshold-for", action="append", default=[], metavar="KIND[.METRIC]=PCT",
                   help="a threshold for one kind (collective, kernel, link, train) or one of its metrics; repeatable")
    c.add_argument("--max-cv", type=float, help="percent robust cv above which a record cannot pass (default 10)")
    c.add_argument("--max-cv-for", action="append", default=[], metavar="KIND[.METRIC]=PCT",
                   help="a noise limit for one kind or metric")
    c.add_argument("--min-samples", type=int, help="samples each side needs (default 5)")
    c.add_argument("--confidence", type=float, help="percent confidence of the effect's interval (default 99)")
    c.add_argument("--inconclusive", choices=[Inconclusive.PASS.value, Inconclusive.FAIL.value],
                   help="what an inconclusive outcome does to the exit code: pass (exit 0: only a regression beyond doubt "
                   "fails) or fail (exit 1); default: exit 3, for the gate to decide")
    c.add_argument("--missing", choices=[m.value for m in Missing],
                   help="what a record only the baseline has (the candidate did not measure it) does: fail (exit 1) or pass "
                   "(default: listed and counted, the exit code as the compared records say); records only in the candidate "
                   "are new and fail nothing")
    c.add_argument("--markdown", help="write a markdown summary (for a CI job summary)")
    c.add_argument("--junit",
                   help="write JUnit XML: one test case per compared record (regression: failure; inconclusive: skipped)")
    c.add_argument("--json", help="write the comparison as JSON")
    m = sub.add_parser("memory", help="each train record's memory per rank by kind, beside its layout's model-state formula")
    m.add_argument("results", nargs="+", help="result documents (trainscope .json or .jsonl)")
    m.add_argument("--label", action="append", help="a name per result, in order")
    x = sub.add_parser("export", help="result documents as CSV (a row per record) or OpenMetrics text (Prometheus)")
    x.add_argument("results", nargs="+", help="result documents (trainscope .json or .jsonl)")
    x.add_argument("--format", required=True, choices=sorted(FORMATS), help="csv or openmetrics")
    x.add_argument("-o", "--output", help="write here (default: standard output)")
    x.add_argument("--label", action="append", help="a name per result, in order")
    i = sub.add_parser("import", help="nccl-tests (text or -J JSON) or OSU collective tests' output as a result document, "
                       "for compare and report")
    i.add_argument("files", nargs="+", metavar="FILE", help="the tools' output files (several: one document)")
    # --json: what every measuring subcommand calls the result document it writes; -o/--output stay as aliases.
    i.add_argument("--json", "-o", "--output", dest="output", metavar="FILE",
                   help="write the result document here (default: standard output); alias: -o, --output")
    i.add_argument("--from", dest="tool", choices=[t.value for t in Tool], help="the tool (default: told from the text)")
    i.add_argument("--label", help="the run's label in reports (default: the tool and its programs)")
    i.add_argument("--op", choices=collective_names(), help="the collective, for nccl-tests output that does not name its "
                   "test (before 2.16)")
    i.add_argument("--ranks", type=int, help="how many ranks ran (OSU's output does not say)")
    a = sub.add_parser("analyze", help="where each step of a --trace run went, per rank; stragglers; pipeline bubbles")
    a.add_argument("trace_dirs", nargs="+", metavar="TRACE_DIR",
                   help="the directory `trainscope train --trace DIR` wrote, or one of PyTorch profiler traces "
                   "(a file per rank); several: each, then all side by side")
    a.add_argument("--json", help="also write the analysis as JSON here")
    a.add_argument("--straggler-ms", type=float, default=1.0,
                   help="name a rank whose median arrival skew exceeds this (default 1 ms) and 3x the others'")
    a.add_argument("--kernels-result", metavar="RESULT", help="a `trainscope kernels` result: the kernel breakdown gives each "
                   "kernel's roofline fraction where its name matches one measured op and shape")
    a.add_argument("--check-kernel-coverage", type=float, metavar="PCT", help="exit 1 when, on some rank, the device's busy time "
                   "(union of its kernel spans) is more than PCT percent off the step (median over steps)")
    history_check.add_check_parser(history.add_parsers(sub), history.DB_HELP)
    predict.add_parsers(sub)
    return p


def _analyze(args: argparse.Namespace) -> int:
    if args.check_kernel_coverage is not None and not 0 < args.check_kernel_coverage < math.inf:
        raise InputError("--check-kernel-coverage must be a positive percentage")
    if not args.straggler_ms >= 0 or args.straggler_ms == float("inf"):
        raise InputError(f"--straggler-ms {args.straggler_ms}: must be a finite number of milliseconds, 0 or more")
    if args.json:
        check_output_file(args.json, "--json")
    kernel_records = load_result(args.kernels_result).records_of("kernel") if args.kernels_result else ()
    results = [(d, analyze(d, args.straggler_ms, kernel_records)) for d in args.trace_dirs]
    if len(results) == 1:
        print(format_analysis(results[0][1]))
    else:
        for d, result in results:
            print(f"## {d}\n{format_analysis(result)}\n")
        print(format_side_by_side(results))
    if args.json:
        _write(args.json, json.dumps(results[0][1] if len(results) == 1 else
                                     {"traces": [dict(r, trace_dir=d) for d, r in results]}, indent=1))
    if args.check_kernel_coverage is not None:
        failures = [f"{d}: {f}" if len(results) > 1 else f for d, r in results
                    for f in coverage_failures(r.get("kernels"), args.check_kernel_coverage)]
        if failures:
            print(f"trainscope: kernel coverage check failed ({args.check_kernel_coverage:g}%): " + "; ".join(failures),
                  file=sys.stderr)
            return 1
        print(f"kernel coverage: every rank's device busy time is within {args.check_kernel_coverage:g}% of its step")
    return 0


def _export(args: argparse.Namespace) -> int:
    if args.output:
        check_output_file(args.output, "-o/--output")  # before anything is read
    text = FORMATS[args.format](load_results(args.results, args.label))
    if args.output:
        _write(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def _import(args: argparse.Namespace) -> int:
    if args.ranks is not None and not 2 <= args.ranks <= 1 << 20:
        raise InputError(f"--ranks {args.ranks}: a collective's ranks, from 2 to {1 << 20}")
    if args.output:
        check_output_file(args.output, "--json")  # before anything is read
    argv = [*args.files] + [x for opt, v in (("-o", args.output), ("--from", args.tool), ("--label", args.label),
                                             ("--op", args.op), ("--ranks", args.ranks)) if v is not None for x in (opt, str(v))]
    doc = import_results(args.files, args.tool, args.op, args.ranks, args.label, argv)
    text = json.dumps(doc, indent=1) + "\n"
    if args.output:
        _write(args.output, text)
        counts = ", ".join(f"{s['records']} record(s) from {s['file']} ({s['tool']} {s['benchmark']})"
                           for s in doc["run"]["config"]["source"])
        print(f"import: {args.output}: {counts}")
    else:
        sys.stdout.write(text)
    return 0


def _memory(args: argparse.Namespace) -> int:
    print(memory_text(load_results(args.results, args.label)))
    return 0


def _write(path: str, text: str) -> None:
    write_atomically(path, text)


def _rules(args: argparse.Namespace, results: list[Result]) -> Rules | None:
    return rules_from_toml(args.rules) if args.rules else default_rules(results)


def _accept(args: argparse.Namespace) -> int:
    if args.junit:
        check_output_file(args.junit, "--junit")
    results = load_results(args.results)
    rules = _rules(args, results)
    if rules is None:
        raise InputError("no --rules given, and the results are not of one shipped suite with default rules "
                         f"({', '.join(f.stem for f in shipped_rules())})")
    reference = load_results(args.reference) if args.reference else []
    acc = accept(results, rules, reference, from_toml(args.policy) if args.policy else Policy())
    sys.stdout.write(format_acceptance(acc))
    if acc.judged_nothing:
        raise InputError(acc.nothing_judged())
    if args.junit:
        _write(args.junit, format_acceptance_junit(acc))
    return acc.exit_code


def _report(args: argparse.Namespace) -> int:
    # Here, not at the top: the HTML report brings matplotlib (0.25 s of import), which no other command needs.
    from .html.report import write_report
    check_output_dir(args.output, "-o/--output")
    results = load_results(args.results, args.label)
    rules = _rules(args, results)
    reference = load_results(args.reference) if args.reference else []
    more = []
    if args.history:
        history.require_sqlalchemy("report --history")
        from .history.report import section_for_results
        more.append(lambda plots: section_for_results(results, args.history, plots))
    index = write_report(results, args.output, args.title, args.trace, accept(results, rules, reference) if rules else None,
                         more)
    print(f"report: {index} (plots and summary.md beside it)")
    return 0


def _policy(args: argparse.Namespace) -> Policy:
    policy = from_toml(args.policy) if args.policy else Policy()
    scalars = ("threshold", "max_cv", "min_samples", "confidence", "inconclusive", "missing")
    settings: dict[str, Any] = {k: getattr(args, k) for k in scalars if getattr(args, k) is not None}
    tables: dict[str, dict[str, float]] = {"thresholds": {}, "max_cvs": {}}
    for table, option, values in (("thresholds", "--threshold-for", args.threshold_for),
                                  ("max_cvs", "--max-cv-for", args.max_cv_for)):
        for text in values:
            tables[table].update(parse_override(text, option))
    settings.update({k: v for k, v in tables.items() if v})
    return apply_policy(policy, settings, "command line")


def _compare(args: argparse.Namespace) -> int:
    for option, path in (("--markdown", args.markdown), ("--junit", args.junit), ("--json", args.json)):
        if path:
            check_output_file(path, option)  # before anything is read or compared
    policy = _policy(args)
    storing = [o for o, on in (("--save-baseline", args.save_baseline), ("--add-baseline", args.add_baseline),
                               ("--replace-baseline", args.replace_baseline)) if on]
    if storing and not args.baseline_dir:
        raise InputError(f"{storing[0]} needs --baseline-dir")
    if len(storing) > 1:
        raise InputError(f"{' and '.join(storing)}: give one of them")
    if args.baseline and args.baseline_dir:
        raise InputError("give --baseline or --baseline-dir, not both")
    if args.baseline_dir:
        candidates = [load_result(f) for f in args.files]
        keys = {machine_key(c) for c in candidates}
        if len(keys) > 1:
            raise InputError(f"the candidate runs are of different machines ({', '.join(sorted(keys))}): "
                             "compare them one machine at a time")
        store = baselines.Store(args.baseline_dir, keys.pop())
        runs = store.runs()
        if args.replace_baseline or args.add_baseline or (args.save_baseline and not runs):
            for f, c in zip(args.files, candidates):
                if c.incomplete:  # a crashed run would make every later comparison against it meaningless
                    raise InputError(f"{f} is incomplete ({c.incomplete}): a baseline run must be one that finished")
            paths = [store.add(f, c, replace=args.replace_baseline and i == 0)
                     for i, (f, c) in enumerate(zip(args.files, candidates))]
            how = ("no baseline for this machine yet: stored" if args.save_baseline else
                   "replaced this machine's baseline with" if args.replace_baseline else "added as baseline run(s)")
            print(f"compare: {how} {', '.join(map(str, paths))} ({len(store.runs())} run(s) now; nothing compared, exit 0)")
            return 0
        if not runs:
            raise InputError(f"no baseline for this machine in {args.baseline_dir}: expected {store.describe()} "
                             "(--save-baseline stores the candidate when none exists)")
        base = [load_result(p) for p in runs]
    elif args.baseline:
        base, candidates = [load_result(f) for f in args.baseline], [load_result(f) for f in args.files]
    else:
        if len(args.files) < 2:
            raise InputError("compare takes BASELINE... CANDIDATE (or CANDIDATE... with --baseline or --baseline-dir)")
        base, candidates = [load_result(f) for f in args.files[:-1]], [load_result(args.files[-1])]
    cmp = compare(base, candidates, policy)
    sys.stdout.write(format_table(cmp))
    if not cmp.rows:
        # A gate that compared nothing must not pass: the two runs measured different things.
        unfinished = f"; incomplete: {'; '.join(cmp.incomplete)}" if cmp.incomplete else ""
        raise InputError(f"nothing to compare: no record of {cmp.candidate} matches one of {cmp.baseline} (see the lists above)"
                         + unfinished)
    if args.markdown:
        _write(args.markdown, format_markdown(cmp))
    if args.junit:
        _write(args.junit, format_junit(cmp))
    if args.json:
        _write(args.json, format_json(cmp))
    return cmp.exit_code


def _data_on_stdout(args: argparse.Namespace) -> bool:
    """Whether the command writes a file's bytes to standard output (export, import without -o): kept as they are
    where they go to a file or a pipe, escaped only where they reach a terminal."""
    return args.command in ("export", "import") and not args.output and not sys.stdout.isatty()


def main(argv: Sequence[str] | None = None) -> int:
    # A reader that closes the pipe (`analyze DIR | head -3`) ends this process as it ends any Unix tool,
    # quietly, by SIGPIPE: no BrokenPipeError traceback, and no exit code 0 that a gate could take for a pass.
    # Only Python's main thread may set a handler: main() called in-process from another thread (a test under
    # pytest-xdist, whose worker execnet may start off the main thread) keeps its caller's, and runs.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    out, err = sys.stdout, sys.stderr
    sys.stderr = cast(TextIO, Escaping(err))  # a text stream in all that is used of one
    try:
        args = _parser().parse_args(argv)
        if not _data_on_stdout(args):
            sys.stdout = cast(TextIO, Escaping(out))
        return {"report": _report, "compare": _compare, "analyze": _analyze, "memory": _memory,
                "export": _export, "import": _import, "accept": _accept, "history": history.run,
                "predict": predict.run}[args.command](args)
    except InputError as e:
        print(f"trainscope: error: {printable(str(e), one_line=True)}", file=sys.stderr)
        return 2
    except Exception as e:  # never a traceback: say what broke, in one line
        print(f"trainscope: error: internal error in reports: {type(e).__name__}: {printable(str(e), one_line=True)}",
              file=sys.stderr)
        return 2
    finally:
        sys.stdout, sys.stderr = out, err


if __name__ == "__main__":
    sys.exit(main())
