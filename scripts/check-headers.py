#!/usr/bin/env python3
"""Fails when a header of the tree does not compile alone, lacks `#pragma once`, or the headers include each other in
a cycle; prints each finding as PATH: WHAT (for a header that does not compile, the compiler's first lines).

    scripts/check-headers.py [--build DIR] [--all] [HEADER...]   (default: every header; DIR: $TS_BUILD or build)

A header compiles alone when a file holding only `#include "it"` compiles with the flags of a source of this build
that includes it: the defines and include folders of the target it belongs to (DIR/compile_commands.json; in a
unity build, where each command compiles a batch of CMake's that #includes several sources, the batch's flags serve
each of its sources). Most need no compile of their own: the build already compiled foo.h alone when foo.cpp includes
it first (the project's rule) and foo.cpp was compiled alone or first of its unity batch (a later source of a batch
comes after what the ones before it included), so only the others are compiled (per-file: 48 of 214 headers, about a
minute of CPU; unity, in batches of 32: 225 of 237, about 400 s of CPU without ccache (3 min 21 s on two cores), where
each is only parsed and checked (-fsyntax-only); --all compiles every one). A header that
no source of this build includes (the CUDA ones in a build without CUDA, fuzz/'s outside the fuzz build) is not
compiled, and the summary counts it. Each compile runs under ccache when there is one (and CCACHE_DISABLE is unset), so a second run compiles only
what changed. The cycles come from the tree's `#include "..."` lines alone, with no compiler. Run by scripts/test.sh
after the build, with the format and lint checks."""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parent.parent
HEADER_SUFFIXES = {".h", ".hpp", ".cuh"}
SOURCE_SUFFIXES = {".cpp", ".cc", ".cu"}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
FIRST_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)
PRAGMA_ONCE = re.compile(r"^#pragma once\s*$", re.M)
SHOWN_LINES = 12


def tree_files() -> List[Path]:
    """The tracked and untracked-but-not-ignored C++ and CUDA files, relative to the root."""
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard"], capture_output=True, text=True,
                         check=True).stdout
    return [Path(p) for p in out.splitlines() if Path(p).suffix in HEADER_SUFFIXES | SOURCE_SUFFIXES and (ROOT / p).is_file()]


def includes_of(path: Path, known: Set[Path]) -> List[Path]:
    """The tree's files that `path` includes with quotes: beside it first, then from the root (as -I<root> finds them)."""
    found = []
    for name in INCLUDE.findall((ROOT / path).read_text(errors="replace")):
        for candidate in (path.parent / name, Path(name)):
            candidate = Path(os.path.normpath(candidate))
            if candidate in known:
                found.append(candidate)
                break
    return found


def cycles(graph: Dict[Path, List[Path]]) -> List[List[Path]]:
    """The include cycles among headers: each strongly connected group of more than one (or one including itself)."""
    index: Dict[Path, int] = {}
    low: Dict[Path, int] = {}
    stack: List[Path] = []
    on_stack: Set[Path] = set()
    found: List[List[Path]] = []

    def visit(start: Path) -> None:  # Tarjan's algorithm, iterative: include chains may be deep
        work: List[Tuple[Path, int]] = [(start, 0)]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, i = work[-1]
            edges = graph.get(node, [])
            if i < len(edges):
                work[-1] = (node, i + 1)
                nxt = edges[i]
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1 or node in graph.get(node, []):
                    found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


UNITY_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"\s*$', re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
Flags = Dict[Path, Tuple[List[str], str]]


def unity_batch(unit: Path) -> Optional[List[Path]]:
    """The sources a unity batch of CMake (DIR/.../Unity/unity_N_cxx.cxx) includes, in its order; None for a file
    that is not one. Its first source is compiled as if alone only when the batch holds nothing before it: a later
    one's first include comes after everything the sources before it included."""
    if unit.parent.name != "Unity" or not unit.name.startswith("unity_"):
        return None
    if not unit.is_file():
        sys.exit(f"check-headers: {unit} is missing: configure the build again (scripts/setup.sh)")
    text = unit.read_text(errors="replace")
    return [(unit.parent / name).resolve() for name in UNITY_INCLUDE.findall(text)]


def first_in_batch(unit: Path) -> bool:
    """Whether the batch's first line of code (past CMake's comment) is the #include of its first source."""
    code = [line for line in COMMENT.sub("", unit.read_text(errors="replace")).splitlines() if line.strip()]
    return bool(code) and UNITY_INCLUDE.match(code[0]) is not None


def compile_flags(build: Path) -> Tuple[Flags, Set[Path]]:
    """Each source of the build (relative to the root): its compile command without its source, output and
    dependency-file arguments, and its directory; a source in a unity batch has the batch's command. And the sources
    the build compiled alone or first of their batch (their first include was compiled alone)."""
    db = build / "compile_commands.json"
    if not db.is_file():
        sys.exit(f"check-headers: {db} is missing: configure the build first (scripts/setup.sh)")
    flags: Flags = {}
    leading: Set[Path] = set()
    for entry in json.loads(db.read_text()):
        unit = (Path(entry["directory"]) / entry["file"]).resolve()
        batch = unity_batch(unit)
        sources = [unit] if batch is None else batch
        args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
        kept: List[str] = []
        skip = False
        for a in args:
            if skip:
                skip = False
            elif a in ("-o", "-c", "-MT", "-MF", "-MQ"):
                skip = True
            elif a not in ("-MD", "-MMD") and Path(a).resolve() != unit:
                kept.append(a)
        for i, source in enumerate(sources):
            if ROOT not in source.parents:
                continue
            flags[source.relative_to(ROOT)] = (kept, entry["directory"])
            if i == 0 and (batch is None or first_in_batch(unit)):
                leading.add(source.relative_to(ROOT))
    return flags, leading


def reach(graph: Dict[Path, List[Path]], start: Path) -> Set[Path]:
    seen: Set[Path] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), []):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def source_for(headers: List[Path], graph: Dict[Path, List[Path]], flags: Flags) -> Dict[Path, Path]:
    """For each header, a source of the build that includes it (directly or not); a C++ one before a CUDA one."""
    chosen: Dict[Path, Path] = {}
    wanted = set(headers)
    for source in sorted(flags, key=lambda s: (s.suffix == ".cu", str(s))):
        for header in reach(graph, source) & wanted:
            chosen.setdefault(header, source)
    return chosen


def own_source_first(header: Path, flags: Flags) -> Optional[Path]:
    """The source of `header` in this build (foo.cpp for foo.h) when it includes it first (the project's rule)."""
    for suffix in SOURCE_SUFFIXES:
        source = header.with_suffix(suffix)
        if source in flags:
            first = FIRST_INCLUDE.search((ROOT / source).read_text(errors="replace"))
            if first and Path(first.group(1)) == header:
                return source
    return None


def check_alone(header: Path, source: Path, flags: Flags, out: Path,
                launcher: List[str]) -> Optional[str]:
    """None when `header` compiles alone with the flags of `source`; else what the compiler said, shortened."""
    args, directory = flags[source]
    stem = out / header.with_suffix("")
    stem.parent.mkdir(parents=True, exist_ok=True)
    unit = stem.parent / (stem.name + ".alone" + (".cu" if source.suffix == ".cu" else ".cpp"))
    text = f'#include "{header}"\n'
    if not unit.exists() or unit.read_text() != text:  # unchanged, it keeps its time: ccache's direct mode hits
        unit.write_text(text)
    # Without ccache a C++ header is parsed and checked only (-fsyntax-only: every declaration and template it
    # instantiates, no code generated), half the CPU of -c at -O3 (2.8 against 5.4 s a header of bench/, sampled):
    # what it proves is the same, as no header's fault shows only in code generation. Under ccache -c stays, as
    # ccache caches an object file and runs -fsyntax-only every time. nvcc has no -fsyntax-only.
    output = ["-c", str(unit), "-o", str(stem) + ".alone.o"]
    if not launcher and source.suffix != ".cu":
        output = ["-fsyntax-only", str(unit)]
    p = subprocess.run(launcher + args + ["-I", str(ROOT)] + output, cwd=directory, capture_output=True, text=True)
    if p.returncode == 0:
        return None
    lines = [line for line in (p.stderr or p.stdout).splitlines() if line.strip()]
    return "\n".join(["    " + line for line in lines[:SHOWN_LINES]])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=Path, default=Path(os.environ.get("TS_BUILD", ROOT / "build")))
    parser.add_argument("--all", action="store_true", help="compile every header alone, those the build proved too")
    parser.add_argument("headers", nargs="*", type=Path)
    opts = parser.parse_args()
    files = tree_files()
    known = set(files)
    graph = {f: includes_of(f, known) for f in files}
    headers = sorted(f for f in files if f.suffix in HEADER_SUFFIXES)
    if opts.headers:
        asked = [Path(os.path.relpath(h.resolve(), ROOT)) for h in opts.headers]
        unknown = [str(h) for h in asked if h not in known or h.suffix not in HEADER_SUFFIXES]
        if unknown:
            print(f"check-headers: not headers of the tree: {', '.join(unknown)}", file=sys.stderr)
            return 2
        headers = asked

    failed = 0
    header_graph = {h: [i for i in graph[h] if i.suffix in HEADER_SUFFIXES] for h in graph if h.suffix in HEADER_SUFFIXES}
    for group in cycles(header_graph):
        print(f"{group[0]}: in an include cycle: {' -> '.join(map(str, group + [group[0]]))}")
        failed += 1

    for header in headers:
        if not PRAGMA_ONCE.search((ROOT / header).read_text(errors="replace")):
            print(f"{header}: no #pragma once: included twice, it is compiled twice")
            failed += 1

    flags, leading = compile_flags(opts.build.resolve())
    chosen = source_for(headers, graph, flags)
    firsts = {} if opts.all else {h: s for h in headers if (s := own_source_first(h, flags)) is not None}
    proven = {h for h, source in firsts.items() if source in leading}
    todo = [h for h in headers if h in chosen and h not in proven]
    launcher = ["ccache"] if shutil.which("ccache") and not os.environ.get("CCACHE_DISABLE") else []
    out = opts.build.resolve() / "header-check"
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(lambda h: (h, check_alone(h, chosen[h], flags, out, launcher)), todo))
    for header, error in results:
        if error is not None:
            print(f"{header}: does not compile alone (with the flags of {chosen[header]}):\n{error}")
            failed += 1
    skipped = [h for h in headers if h not in chosen and h not in proven]
    batched = len(firsts) - len(proven)
    print(f"check-headers: {len(headers)} headers: {len(proven)} compiled alone by the build (their source includes them "
          f"first, alone or first of its unity batch), {len(results)} compiled alone here"
          f"{f' ({batched} of them first in a source later in a unity batch)' if batched else ''}, "
          f"{len(skipped)} not compiled in this build "
          f"({', '.join(sorted({str(h.parent) for h in skipped})) or 'none'}); {failed} problem(s)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
