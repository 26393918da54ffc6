"""Command line of the reports tool: `python3 -m reports report|compare ...`.

Exit codes: 0 fine (compare: no regression), 1 compare found a regression, 2 bad input. Errors are one
line on stderr, never a traceback.
"""
import argparse
import json
import shutil
import sys
from pathlib import Path

from .analyze import analyze, format_table as format_analysis
from .compare import compare, format_json, format_junit, format_markdown, format_table, machine_key
from .errors import InputError
from .kernel_breakdown import coverage_failures
from .load import load_result, load_results
from .report import write_report


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise InputError(message)


def _parser():
    p = _Parser(prog="trainscope", description="trainscope reports: HTML reports and regression comparison of result documents")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    r = sub.add_parser("report", help="write an HTML report (plots embedded), PNGs and summary.md")
    r.add_argument("results", nargs="+", help="result documents (trainscope .json); several are overlaid")
    r.add_argument("-o", "--output", required=True, help="directory to write index.html, the plots and summary.md into")
    r.add_argument("--label", action="append", help="a name per result, in order (default: the run's label, or host and date)")
    r.add_argument("--title", default="trainscope report")
    r.add_argument("--trace", help="a `train --trace` directory: adds the profile section (one step of every rank, breakdown, stragglers)")
    c = sub.add_parser("compare", help="compare a candidate result with a baseline; exit 1 on a regression")
    c.add_argument("files", nargs="+", metavar="RESULT", help="BASELINE CANDIDATE, or CANDIDATE with --baseline-dir")
    c.add_argument("--baseline-dir", help="find the baseline as DIR/<machine key>.json (see README)")
    c.add_argument("--save-baseline", action="store_true", help="with --baseline-dir: store CANDIDATE as this machine's baseline")
    c.add_argument("--threshold", type=float, default=5.0, help="percent change that matters (default 5)")
    c.add_argument("--alpha", type=float, default=0.01, help="significance level of the noise test (default 0.01)")
    c.add_argument("--markdown", help="write a markdown summary (for a CI job summary)")
    c.add_argument("--junit", help="write JUnit XML: one test case per compared record")
    c.add_argument("--json", help="write the comparison as JSON")
    a = sub.add_parser("analyze", help="where each step of a --trace run went, per rank; stragglers; pipeline bubbles")
    a.add_argument("trace_dir", help="the directory `trainscope train --trace DIR` wrote")
    a.add_argument("--json", help="also write the analysis as JSON here")
    a.add_argument("--straggler-ms", type=float, default=1.0, help="name a rank whose median arrival skew exceeds this (default 1 ms) and 3x the others'")
    a.add_argument("--kernels-result", metavar="RESULT", help="a `trainscope kernels` result: the kernel breakdown gives each kernel's roofline fraction "
                   "where its name matches one measured op and shape")
    a.add_argument("--check-kernel-coverage", type=float, metavar="PCT", help="exit 1 when, on some rank, the device's busy time (union of "
                   "its kernel spans) is more than PCT percent off the step (median over steps)")
    return p


def _analyze(args):
    if args.check_kernel_coverage is not None and not args.check_kernel_coverage > 0:
        raise InputError("--check-kernel-coverage must be a positive percentage")
    kernel_records = load_result(args.kernels_result).records_of("kernel") if args.kernels_result else ()
    result = analyze(args.trace_dir, args.straggler_ms, kernel_records)
    print(format_analysis(result))
    if args.json:
        _write(args.json, json.dumps(result, indent=1))
    if args.check_kernel_coverage is not None:
        failures = coverage_failures(result.get("kernels"), args.check_kernel_coverage)
        if failures:
            print(f"trainscope: kernel coverage check failed ({args.check_kernel_coverage:g}%): " + "; ".join(failures), file=sys.stderr)
            return 1
        print(f"kernel coverage: every rank's device busy time is within {args.check_kernel_coverage:g}% of its step")
    return 0


def _write(path, text):
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    except OSError as e:
        raise InputError(f"{path}: cannot write: {e.strerror}") from None


def _report(args):
    results = load_results(args.results, args.label)
    index = write_report(results, args.output, args.title, args.trace)
    print(f"report: {index} (plots and summary.md beside it)")
    return 0


def _compare(args):
    if not args.threshold > 0:
        raise InputError("--threshold must be a positive percentage")
    if not 0 < args.alpha < 1:
        raise InputError("--alpha must be between 0 and 1")
    if args.baseline_dir:
        if len(args.files) != 1:
            raise InputError("with --baseline-dir give only the candidate result")
        candidate = load_result(args.files[0])
        base_path = Path(args.baseline_dir) / f"{machine_key(candidate)}.json"
        if args.save_baseline:
            Path(args.baseline_dir).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(args.files[0], base_path)
            print(f"compare: saved {args.files[0]} as the baseline {base_path}")
            return 0
        if not base_path.exists():
            raise InputError(f"no baseline for this machine in {args.baseline_dir}: expected {base_path.name} (store one with --save-baseline)")
        baseline = load_result(base_path)
    else:
        if args.save_baseline:
            raise InputError("--save-baseline needs --baseline-dir")
        if len(args.files) != 2:
            raise InputError("compare takes BASELINE CANDIDATE (or CANDIDATE with --baseline-dir)")
        baseline, candidate = load_result(args.files[0]), load_result(args.files[1])
    cmp = compare(baseline, candidate, threshold=args.threshold / 100.0, alpha=args.alpha)
    sys.stdout.write(format_table(cmp))
    if not cmp.rows:
        # A gate that compared nothing must not pass: the two runs measured different things.
        raise InputError(f"nothing to compare: no record of {candidate.path} matches one of {baseline.path} (see the lists above)")
    if args.markdown:
        _write(args.markdown, format_markdown(cmp))
    if args.junit:
        _write(args.junit, format_junit(cmp))
    if args.json:
        _write(args.json, format_json(cmp))
    return 1 if cmp.regressions else 0


def main(argv=None):
    try:
        args = _parser().parse_args(argv)
        return {"report": _report, "compare": _compare, "analyze": _analyze}[args.command](args)
    except InputError as e:
        print(f"trainscope: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # never a traceback: say what broke, in one line
        print(f"trainscope: error: internal error in reports: {type(e).__name__}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
