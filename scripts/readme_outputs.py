#!/usr/bin/python3
"""Runs every command the README and the task pages (docs/tasks/*.md) show, and checks or rewrites the output
they show for it.

    scripts/readme_outputs.py --check            # every `$ ` command runs as shown (exit 0), or says what does not
    scripts/readme_outputs.py --write            # refresh the outputs shown from fresh runs
    scripts/readme_outputs.py --check --only train,collectives   # the blocks under headings containing these words
    scripts/readme_outputs.py --check --file docs/tasks/gate-ci.md   # one page (repeatable)
    scripts/readme_outputs.py --check --file README.md --chain acceptance   # one chain of a page

A runnable block is a fenced block whose lines start with `$ ` (a command; a line ending in `\\` goes on) followed
by what it printed (stdout and stderr together). The README shows excerpts: `...` stands for lines left out, and
the lines shown are a subsequence of the real output. So each shown line is matched with a line of the fresh
output by its *shape* — the line with every number, hex id and the date turned into `#` — in order, and
`--write` puts the fresh line in its place: the excerpt stays the one a person chose, its figures become
today's. A shown line that no longer has a line of the same shape (a renamed column, a message that changed)
is stale: `--check` fails on it, `--write` leaves it and names it.

A command "runs as shown" when its exit status is the one the README implies: an error line
(`trainscope: error: ...`) shown after it means it must fail (1 or 2) with that line; a command followed by
`echo $?` may end 0, 1 or 3 (compare's verdicts, which depend on the machine's noise; the shapes of its lines
are then reported, not required); every other command must exit 0.

Each page's commands run in order, exactly as printed, in a scratch directory of its own that looks like a fresh
clone after scripts/setup.sh (build/, bench/, scripts/, tests/, reports/, docs/ are links to this checkout; no
results/), with the environment of the caller: nothing is set up that the page does not show. A shown
`$ export NAME=VALUE ...` sets those variables for the page's later commands, as it would in the reader's shell
(the pages show Open MPI's root allowance that way). The outputs are compared under the hostname they show (`vm`,
in a UTS namespace when root): a name is a word of a line's shape, not a figure. A hidden set-up block
(`<!-- readme-setup`) is refused: what a command needs is shown before it.
`<!-- readme-chain: NAME -->` starts a chain: the commands from there to the next chain (or the page's end) run in a
scratch directory of their own, as a reader who starts reading there would, with the variables the page exported
before it; what they need they make themselves, so a chain that reads an earlier one's files fails. Chains are
what the tests run side by side (tests/integration/test_readme_runs.py); a page's first chain is `start`.
`<!-- readme-varies: REGEX -->` names the shown lines that report events a run may not have (a ceiling
re-measured, a straggler): their absence is reported, not a failure; `<!-- readme-ranked: REGEX -->` the rows
of a ranked list (compare's, worst first), matched by their place rather than by what they name. A command whose
program is not installed here (nsys) is skipped, and said so.
"""
import argparse
import dataclasses
import difflib
import os
import re
import resource
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TASKS = ROOT / "docs" / "tasks"
HOSTNAME = "vm"  # what the README's outputs show
LINKED = ("build", "bench", "scripts", "tests", "reports", "docs")
ELISION = "..."
DROPPED = "\0dropped"  # the mark of a shown line --write removes (an event this run did not have)
ERROR_PREFIX = "trainscope: error:"
VERDICT_CODES = {0, 1, 3}  # compare: pass, regression, inconclusive (2 is bad input)
TIMEOUT_S = 900
MIN_SIMILARITY = 0.9  # of two shapes, for a shown line to count as the same line with other words nearby

SHAPE_RULES = [
    (re.compile(r"\b[0-9a-f]{7,40}\b"), "#"),  # commit ids
    (re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?"), "#"),  # every number
    (re.compile(r"#([.:/,x-]?#)+"), "#"),  # dates, versions, sizes like 2x2
    (re.compile(r"\s+"), " "),  # column widths follow the figures
]


def shape(line: str) -> str:
    for pattern, repl in SHAPE_RULES:
        line = pattern.sub(repl, line)
    return line.strip()


@dataclasses.dataclass
class Command:
    text: str  # without the `$ `; continuation lines joined
    line: int  # 0-based index of its `$ ` line in README.md
    shown: list[int]  # the indices of the output lines shown after it


@dataclasses.dataclass
class Block:
    heading: str
    varies: str  # a regular expression: shown lines it matches report events a run may not have (a re-measured ceiling)
    ranked: str  # a regular expression: shown lines it matches are rows of a ranked list (see match)
    commands: list[Command]
    chain: str = "start"  # the chain it belongs to (`<!-- readme-chain: NAME -->`): runs in a scratch directory of its own


def pages() -> list[Path]:
    """The README, then the task pages it indexes."""
    return [README, *sorted(TASKS.glob("*.md"))]


def shown_path(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def closing(lines: list[str], start: int, ends: Callable[[str], bool], what: str, name: str = "README.md") -> int:
    """The index of the first line from `start` that `ends` accepts; a page without one is one error line."""
    found = next((j for j in range(start, len(lines)) if ends(lines[j])), None)
    if found is None:
        sys.exit(f"readme: error: {name}:{start}: {what} is never closed")
    return found


def parse(lines: list[str], name: str = "README.md") -> list[Block]:
    blocks, heading, varies, ranked, chain, i = [], "", "", "", "start", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#") and not line.startswith("#!"):
            heading = line.lstrip("#").strip()
        if line.startswith("<!-- readme-varies:"):
            varies = line[len("<!-- readme-varies:"):].rsplit("-->", 1)[0].strip()
        if line.startswith("<!-- readme-ranked:"):
            ranked = line[len("<!-- readme-ranked:"):].rsplit("-->", 1)[0].strip()
        if line.startswith("<!-- readme-chain:"):
            chain = line[len("<!-- readme-chain:"):].rsplit("-->", 1)[0].strip()
            if not re.fullmatch(r"[a-z][a-z0-9-]*", chain) or any(b.chain == chain for b in blocks):
                sys.exit(f"readme: error: {name}:{i + 1}: a chain's name is a new lower-case word ('{chain}')")
        if line.startswith("<!-- readme-setup"):
            sys.exit(f"readme: error: {name}:{i + 1}: a hidden set-up block: show its commands (`$ ...`) instead, "
                     "so that the page runs as printed")
        if line.startswith("```") and not (line.strip() == "```" and i + 1 < len(lines) and lines[i + 1].startswith("$ ")):
            i = closing(lines, i + 1, lambda x: x.startswith("```"), "a code block", name) + 1  # a block of code, not run
            continue
        if line.startswith("```"):
            commands, i, end = [], i + 1, closing(lines, i + 1, lambda x: x.startswith("```"), "a code block", name)
            while i < end:
                if lines[i].startswith("$ "):
                    start, text = i, lines[i][2:]
                    while text.endswith("\\"):
                        i += 1
                        text = text[:-1] + lines[i].strip()
                    commands.append(Command(text, start, []))
                elif commands:
                    commands[-1].shown.append(i)
                i += 1
            blocks.append(Block(heading, varies, ranked, commands, chain))
            varies = ranked = ""  # these comments belong to the block right after them
        i += 1
    return blocks


def scratch_dir() -> Path:
    d = Path(tempfile.mkdtemp(prefix="readme-"))
    for name in LINKED:
        (d / name).symlink_to(ROOT / name)
    return d


# What the caller's environment may not bring in: the check's runs must get from the page, not from the shell that
# started the check, Open MPI's root allowance and oversubscription, and where trainscope's data lives.
NOT_INHERITED = re.compile(r"^(OMPI_ALLOW_RUN_AS_ROOT.*|OMPI_MCA_rmaps_base_oversubscribe|OMPI_MCA_orte_default_hostfile|"
                           r"TRAINSCOPE_HOME|TRAINSCOPE_FAULT|TRAINSCOPE_THREADS|OMP_NUM_THREADS)$")


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not NOT_INHERITED.match(k)}


def exported(text: str) -> dict[str, str] | None:
    """The variables a shown `export NAME=VALUE ...` sets (None for any other command)."""
    words = shlex.split(text, comments=True)
    if not words or words[0] != "export":
        return None
    return dict(w.split("=", 1) for w in words[1:] if "=" in w)


def missing_program(text: str) -> str | None:
    words = [w for w in text.split() if "=" not in w]
    program = words[0] if words else ""
    if program in ("for", "cd", "export") or "/" in program:  # shell words, and paths the run itself resolves
        return None
    return None if shutil.which(program) else program


def children_cpu_s() -> float:
    """CPU seconds used so far by the commands run (and waited for): what a command costs the machine, which the
    README check's share of the test time is made of (its wall time grows with whatever else runs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(text: str, cwd: Path, env: dict[str, str]) -> tuple[int, list[str]]:
    """Exit status and output lines; a run past TIMEOUT_S is status 124 (as timeout(1) says it) with that line."""
    try:
        r = subprocess.run(["bash", "-c", text], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, errors="replace", timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return 124, [f"still running after {TIMEOUT_S} s"]
    # this checkout's paths as a user in the repository sees them (the scratch directory links to them)
    # and tabs as a terminal shows them
    return r.returncode, [line.replace(f"{ROOT}/", "").expandtabs() for line in r.stdout.splitlines()]


def label(line_shape: str) -> str:
    """What a line is about, without its values: its first word (the first two when it starts with `#`)."""
    words = line_shape.split()
    return " ".join(words[:2] if words and words[0] == "#" else words[:1])


def similar(want: str, got: str) -> bool:
    if ELISION in want:  # a line the README cut short (a long commit id, a list: `..., max_bytes, ...)`)
        parts = [re.escape(p.rstrip("#").strip()) for p in want.split(ELISION)]
        return re.match(".*".join(parts), got) is not None
    return want == got or difflib.SequenceMatcher(None, want, got).ratio() >= MIN_SIMILARITY


SHAPE, LABEL, RANK = "shape", "label", "rank"  # how a shown line found its fresh one


def match(shown: list[str], output: list[str], ranked: str = "") -> list[tuple[int, str] | None]:
    """For each shown line, (the index of its line in output, how it was found), in order: the first line after the
    previous match of the same shape, else the most similar (at least MIN_SIMILARITY), else the first unused one of
    the same label (an error line needs its shape); None where there is none. Rows of a ranked list (lines `ranked`
    matches: compare's rows, worst first) take the next row of their label wherever they are: what stands first
    is the point, not which record it is. Rows found by label right after a `...` are then moved to just before the
    next line found by shape, as an excerpt that skips to the end of a list shows its last rows."""
    shapes = [shape(o) for o in output]
    found: list[tuple[int, str] | None] = []
    used: set[int] = set()
    start = 0
    for s in shown:
        if s.strip() == ELISION:
            found.append(None)
            continue
        want = shape(s)
        after = range(start, len(output))
        by_label = next((j for j in after if j not in used and label(shapes[j]) == label(want)), None) if label(want) else None
        at, how = None, SHAPE
        if ranked and re.search(ranked, s):
            at, how = by_label, RANK
        else:
            at = next((j for j in after if shapes[j] == want), None)
            if at is None:
                scored = ((difflib.SequenceMatcher(None, want, shapes[j]).ratio(), -j) for j in after if similar(want, shapes[j]))
                best = max(scored, default=None)
                at = -best[1] if best else None
            if at is None and not s.startswith(ERROR_PREFIX):
                at, how = by_label, LABEL
        found.append(None if at is None else (at, how))
        if at is not None:
            used.add(at)
            if how != LABEL:  # a line found by its label alone may stand elsewhere in a run's output
                start = at + 1
    i = 0
    while i < len(shown):
        run_end = i
        while run_end < len(shown) and (f := found[run_end]) is not None and f[1] != SHAPE:
            run_end += 1
        if run_end > i and i > 0 and shown[i - 1].strip() == ELISION:
            anchor = next((f[0] for f in found[run_end:] if f is not None and f[1] == SHAPE), len(output))
            tail = range(anchor - (run_end - i), anchor)
            if tail.start >= 0 and all(label(shapes[j]) == label(shape(shown[k])) for k, j in zip(range(i, run_end), tail)):
                for k, j in zip(range(i, run_end), tail):
                    found[k] = (j, found[k][1])  # type: ignore[index]
        i = max(run_end, i + 1)
    return found


def refreshed(shown: str, fresh: str) -> str:
    """The fresh line, cut as the README cut the shown one (a line with a cut inside it stays as written), without
    trailing blanks."""
    fresh = fresh.rstrip()
    if shown.endswith(ELISION) and ELISION not in shown[:-len(ELISION)]:
        return fresh[:len(shown) - len(ELISION)] + ELISION
    return shown if ELISION in shown else fresh


@dataclasses.dataclass
class Outcome:
    problems: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    ran: int = 0


def check_command(lines: list[str], block: Block, n: int, rc: int, output: list[str], outcome: Outcome, write: bool,
                  name: str = "README.md") -> None:
    cmd = block.commands[n]
    nxt = block.commands[n + 1] if n + 1 < len(block.commands) else None
    where = f"{name}:{cmd.line + 1}"
    shown = [lines[k] for k in cmd.shown]
    lenient = nxt is not None and nxt.text.strip() == "echo $?"
    if cmd.text.strip() == "echo $?":  # the previous command's status (see main)
        if shown and shown[0] != output[0]:
            outcome.notes.append(f"{where}: exit status now {output[0]} (README shows {shown[0]}; verdicts vary)")
            if write:
                lines[cmd.shown[0]] = output[0]
        return
    error = next((s for s in shown if s.startswith(ERROR_PREFIX)), None)
    if error is not None:
        ok = rc in (1, 2)
    elif lenient:
        ok = rc in VERDICT_CODES
    else:
        ok = rc == 0
    if not ok:
        tail = " | ".join(output[-3:])
        outcome.problems.append(f"{where}: `{cmd.text}` exited {rc} ({'expected an error' if error else 'expected 0'}): {tail}")
        return
    for k, found in zip(cmd.shown, match(shown, output, block.ranked)):
        if lines[k].strip() == ELISION:
            continue
        event = bool(block.varies and re.search(block.varies, lines[k]))
        if found is not None and found[1] == LABEL and event:
            found = None  # another event of the kind (a different ceiling re-measured) is not this one
        if found is None:
            gone = f"{name}:{k + 1}: no such line any more: {lines[k]}"
            (outcome.notes if lenient or event else outcome.problems).append(gone)
            if write and event:
                lines[k] = DROPPED  # this run had no such event: its line goes
            continue
        at, how = found
        if how == LABEL:
            outcome.notes.append(f"{name}:{k + 1}: now reads: {output[at]}")
        if write:
            lines[k] = refreshed(lines[k], output[at])


def chains(blocks: list[Block]) -> list[str]:
    """The page's chains, in order."""
    return list(dict.fromkeys(b.chain for b in blocks))


def run_page(path: Path, only: list[str] | None, outcome: Outcome, write: bool, chain: str | None = None) -> None:
    """Runs one page's commands in order (of one chain, or every chain), each chain in a fresh scratch directory, as
    a reader who opens the page there in a fresh clone after scripts/setup.sh would; the variables the page exported
    before a chain are set for it, as in that reader's shell."""
    name = shown_path(path)
    lines = path.read_text().splitlines()
    blocks = parse(lines, name)
    env = environment()
    for c in chains(blocks):
        chosen = [b for b in blocks if b.chain == c and (not only or any(w in b.heading.lower() for w in only))]
        if chain is None or c == chain:
            run_chain(lines, chosen, name, dict(env), outcome, write)
        for b in blocks:
            if b.chain == c:
                for cmd in b.commands:
                    env.update(exported(cmd.text) or {})
    if write:
        path.write_text("\n".join(line for line in lines if line != DROPPED) + "\n")


def run_chain(lines: list[str], blocks: list[Block], name: str, env: dict[str, str], outcome: Outcome, write: bool) -> None:
    if not blocks:
        return
    cwd = scratch_dir()
    try:
        for block in blocks:
            prev_rc = 0
            for n, cmd in enumerate(block.commands):
                if (variables := exported(cmd.text)) is not None:
                    env.update(variables)
                if missing := missing_program(cmd.text):
                    outcome.notes.append(f"{name}:{cmd.line + 1}: skipped: {missing} is not installed here")
                    continue
                t0, cpu0 = time.monotonic(), children_cpu_s()
                # `echo $?` is the previous command's status, which the checker has (each command runs a shell of its own)
                rc, out = run(cmd.text, cwd, env) if cmd.text.strip() != "echo $?" else (0, [str(prev_rc)])
                print(f"readme: {time.monotonic() - t0:6.1f} s  cpu {children_cpu_s() - cpu0:6.1f} s  rc {rc}  "
                      f"{name} ({block.chain}): {cmd.text[:100]}", file=sys.stderr, flush=True)
                check_command(lines, block, n, rc, out, outcome, write, name)
                prev_rc = rc
                outcome.ran += 1
    finally:
        if os.environ.get("READMEOUT_KEEP"):
            print(f"readme: scratch directory of {name} ({blocks[0].chain}): {cwd}", file=sys.stderr)
        else:
            shutil.rmtree(cwd, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="run every command; exit 1 when one fails or shows stale lines")
    mode.add_argument("--write", action="store_true", help="run every command and rewrite the pages' outputs")
    p.add_argument("--only", help="comma-separated words: only the blocks under a heading containing one of them")
    p.add_argument("--file", action="append", help="only this page (README.md, docs/tasks/NAME.md); repeatable")
    p.add_argument("--chain", help="only this chain of the pages (`<!-- readme-chain: NAME -->`; a page's first is start)")
    p.add_argument("--keep", action="store_true", help="keep the scratch directories (their paths are printed)")
    args = p.parse_args()
    if os.geteuid() == 0 and socket.gethostname() != HOSTNAME and not os.environ.get("READMEOUT_IN_UTS"):
        # the outputs name the host; give the runs the README's name in a UTS namespace of their own
        argv = ["unshare", "--uts", "sh", "-c", f'hostname {HOSTNAME} && exec "$0" "$@"', sys.executable, *sys.argv]
        return subprocess.run(argv, env={**os.environ, "READMEOUT_IN_UTS": "1"}).returncode
    if args.keep:
        os.environ["READMEOUT_KEEP"] = "1"
    chosen = pages()
    if args.file:
        wanted = {(ROOT / f).resolve() for f in args.file}
        chosen = [p for p in chosen if p.resolve() in wanted]
        if len(chosen) != len(wanted):
            sys.exit(f"readme: error: --file names a page that is not README.md or docs/tasks/*.md: {', '.join(args.file)}")
    only = [w.strip().lower() for w in args.only.split(",")] if args.only else None
    if args.chain and not any(args.chain in chains(parse(p.read_text().splitlines(), shown_path(p))) for p in chosen):
        sys.exit(f"readme: error: --chain {args.chain}: no page chosen has that chain")
    if args.chain and args.write:
        sys.exit("readme: error: --chain with --write: a page is rewritten from a run of all its chains")
    outcome = Outcome()
    for page in chosen:
        if args.chain is None or args.chain in chains(parse(page.read_text().splitlines(), shown_path(page))):
            run_page(page, only, outcome, args.write, args.chain)
    for note in outcome.notes:
        print(f"readme: note: {note}", file=sys.stderr)
    for problem in outcome.problems:
        print(f"readme: FAIL: {problem}", file=sys.stderr)
    print(f"readme: {outcome.ran} command(s) ran in {len(chosen)} page(s), {len(outcome.problems)} problem(s)"
          + (", pages rewritten" if args.write else ""), file=sys.stderr)
    return 1 if outcome.problems else 0


if __name__ == "__main__":
    sys.exit(main())
