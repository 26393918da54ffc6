"""No hand-kept lists of a registry's names: the kernel ops and the collectives are declared once, in the result
schema (the kernel ops' enum; the collective op's oneOf entries, with their facts), from which the build makes the C++
registries, and every consumer reads them from there (helpers.kernel_ops(), reports/common/collective_facts.py, the
registries in C++); the subcommands and their options are declared once in C++ (bench/commands.cpp, the option
tables), from which the build generates the schema's config part, and Python reads them there
(reports/common/option_facts.py). A Python table or membership test, or a C++ string, that names 3 or more of a family is a
second list that the next one added will not be in; so is a bus factor formula outside the facts. Either fails here,
with its file and line, instead of in an integration test far away. A test naming the ops it runs (`for op in (...)`,
`--ops a,b,c`) chooses them and is not a list."""
import ast
import re
import warnings
from collections import Counter
from pathlib import Path

import pytest

from helpers import ROOT, kernel_ops

from reports.common.collective_facts import names as collective_names
from reports.common.option_facts import all_subcommands
from reports.traces.trace_roles import roles as trace_roles

# family -> its names, and where each family's one list is read from.
FAMILIES = {"kernel ops": set(kernel_ops()), "collectives": set(collective_names()), "subcommands": set(all_subcommands()),
            "trace roles": set(trace_roles())}
READ_FROM = {"kernel ops": "helpers.kernel_ops() in Python, allKernelOps() / kernelOpNameList() in C++",
             "collectives": "reports/common/collective_facts.py in Python, allCollectives() / collectiveNameList() in C++",
             "subcommands": "reports/common/option_facts.py in Python, subcommands() in C++",
             "trace roles": "reports/traces/trace_roles.py in Python, trace::Role (kernels/trace.h) in C++"}
FACTS_MODULE = ROOT / "reports" / "common" / "collective_facts.py"
PYTHON_DIRS = ("tests", "reports", "scripts")
CPP_DIRS = ("base", "bench", "comm", "kernels", "workloads", "tests", "fuzz")
# This file's examples; vendored third-party code; the facts, and the test holding them to their formulas (its oracle).
SKIP = (Path(__file__).resolve(), ROOT / "tests" / "data", FACTS_MODULE, ROOT / "tests" / "reports" / "test_collective_facts.py")
CPP_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
LEAST = 3


def _source_files(root, dirs, suffixes):
    for d in dirs:
        for path in sorted((root / d).rglob("*")):
            if path.suffix in suffixes and not any(path == s or s in path.parents for s in SKIP):
                yield path


def named(names, family):
    """The distinct names of `family` among `names`."""
    return sorted(set(names) & family)


def parsed(path: Path) -> ast.Module:
    with warnings.catch_warnings():  # another file's invalid escape sequences are not this test's business
        warnings.simplefilter("ignore")
        return ast.parse(path.read_text(), str(path))


def kept_strings(tree: ast.Module):
    """(line, strings) of each literal set, list, tuple or dict that a module keeps as a table (assigned at module or
    class level) or classifies by (`x in (...)`), and of each string there (split as a comma or space separated list):
    the candidates of every family, found in one walk of the tree."""
    literal = (ast.List, ast.Tuple, ast.Set, ast.Dict)

    def strings_in(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return re.split(r"[,\s]+", node.value)
        elts = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", [])
        return [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]

    found = []
    for node in ast.walk(tree):
        kept = []
        if isinstance(node, ast.Compare):
            kept = [r for op, r in zip(node.ops, node.comparators) if isinstance(op, (ast.In, ast.NotIn))]
        elif isinstance(node, (ast.Module, ast.ClassDef)):
            kept = [st.value for st in node.body if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None]
        for value in kept:
            if isinstance(value, literal) or (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                found.append((value.lineno, strings_in(value)))
    return found


def lists_of(candidates, family):
    """(line, names) of the candidates ((line, strings): kept_strings, cpp_strings) naming LEAST or more of `family`."""
    return [(line, names) for line, strings in candidates if len(names := named(strings, family)) >= LEAST]


def python_lists(tree: ast.Module, family):
    """(line, names) of each table or membership test of LEAST or more of `family`'s names."""
    return lists_of(kept_strings(tree), family)


def bus_factor_formulas(tree: ast.Module):
    """Lines computing (n - 1) / n in any form (2 * (n - 1) / n, (size - 1) / size): a bus factor outside the facts."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Name):
            n = node.right.id
            if any(isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub) and isinstance(sub.left, ast.Name)
                   and sub.left.id == n and isinstance(sub.right, ast.Constant) and sub.right.value == 1
                   for sub in ast.walk(node.left)):
                found.append(node.lineno)
    return found


def cpp_strings(text: str):
    """(line, words) of each C++ string literal in `text`."""
    return [(text.count("\n", 0, m.start()) + 1, re.split(r"[,\s]+", m.group(1))) for m in CPP_STRING.finditer(text)]


def cpp_lists(text: str, family):
    """(line, names) of each C++ string literal naming LEAST or more of `family` (a hand-written help or list)."""
    return lists_of(cpp_strings(text), family)


def findings(path: Path, root: Path, lists, formulas=()):
    """The scanner's lines for one file, from its lists per family and its bus factor formulas' lines."""
    where = path.relative_to(root)
    out = [f"{where}:{line}: {family_name} {names} (read them from {READ_FROM[family_name]})"
           for family_name, found in lists for line, names in found]
    return out + [f"{where}:{line}: a bus factor formula (read it from reports/common/collective_facts.py)" for line in formulas]


def hand_kept_lists(root=ROOT):
    """Every file read, parsed and walked once: each family's lists come from its one list of candidates, the bus
    factor formulas from the same tree."""
    out = []
    for path in _source_files(root, PYTHON_DIRS, {".py"}):
        tree = parsed(path)
        candidates = kept_strings(tree)
        out += findings(path, root, [(name, lists_of(candidates, family)) for name, family in FAMILIES.items()],
                        bus_factor_formulas(tree))
    for path in _source_files(root, CPP_DIRS, {".cpp", ".h", ".cu", ".cuh"}):
        candidates = cpp_strings(path.read_text(errors="replace"))
        out += findings(path, root, [(name, lists_of(candidates, family)) for name, family in FAMILIES.items()])
    return out


def test_no_consumer_keeps_its_own_list_of_a_registry():
    found = hand_kept_lists()
    assert not found, "hand-kept lists of a registry's names:\n" + "\n".join(found)


def test_the_scanner_reads_and_parses_each_file_once(tmp_path, monkeypatch):
    files = {"reports/kept.py": 'OPS = {"gemm", "conv2d", "softmax"}\n', "tests/plain.py": "X = 1\n",
             "bench/help.cpp": 'auto h = "gemm, conv2d, softmax";\n'}
    for name, source in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(source)
    reads, parses = Counter(), Counter()
    read_text, parse = Path.read_text, ast.parse
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: reads.update([self.name]) or read_text(self, *a, **k))
    monkeypatch.setattr(ast, "parse", lambda source, filename="<unknown>", *a, **k:
                        parses.update([Path(filename).name]) or parse(source, filename, *a, **k))
    found = hand_kept_lists(tmp_path)
    assert [f.split(":")[0] for f in found] == ["reports/kept.py", "bench/help.cpp"], found
    assert reads == {Path(name).name: 1 for name in files}, reads
    assert parses == {"kept.py": 1, "plain.py": 1}, parses


def written(tmp_path, source):
    kept = tmp_path / "kept.py"
    kept.write_text(source + "\n")
    return kept


def python_findings(path):
    """(whether any family's list was found, the lines of bus factor formulas) in one Python file."""
    tree = parsed(path)
    return any(python_lists(tree, family) for family in FAMILIES.values()), bus_factor_formulas(tree)


@pytest.mark.parametrize("source", [
    'OPS = {"gemm", "conv2d", "layernorm", "softmax"}',
    'HELP = "all, or a comma list of gemm, conv2d, softmax"',
    'WHOLE_BUFFER = {"all_gather", "reduce_scatter", "alltoall", "gather", "scatter"}',
    'class Bench:\n    ROWS = {"all_reduce": 1, "reduce": 2, "gather": 3}',
    'def f(op):\n    return "sum" if op in ("all_reduce", "reduce_scatter", "reduce") else None',
    'PYTHON_TOOLS = {"report", "compare", "analyze", "export"}',
    'SUBCOMMANDS = "env, links, collectives, kernels, train"',
    'COLORS = {"compute": "C0", "wait": "C3", "phase": "0.75"}',
])
def test_the_scanner_finds_a_python_list_kept_by_hand(tmp_path, source):
    assert python_findings(written(tmp_path, source))[0], source


@pytest.mark.parametrize("source", [
    'def f(op, n):\n    return 2 * (n - 1) / n',
    'def f(op, size):\n    return (size - 1) / size',
])
def test_the_scanner_finds_a_bus_factor_formula(tmp_path, source):
    assert python_findings(written(tmp_path, source))[1] == [2], source


@pytest.mark.parametrize("source", [
    'def test(run):\n    for op in ("all_reduce", "all_gather", "sendrecv"):\n        run(op)',
    'ARGS = ["--ops", "all_reduce,all_gather"]',
    'EXPECTED = {"all_reduce", "send"}',
    'PAIR = ("gemm", "softmax")',
    'def f(c):\n    return c.bus_factor(4) / c.bus_factor(2)',
])
def test_the_scanner_leaves_a_tests_own_choices_alone(tmp_path, source):
    assert python_findings(written(tmp_path, source)) == (False, []), source


def test_the_scanner_finds_a_hand_written_cpp_help(tmp_path):
    help_ = tmp_path / "help.cpp"
    help_.write_text('t.add("--ops",\n      "all, or a comma list of gemm, conv2d, attention, "\n      "softmax", f);\n'
                     'auto one = "gemm";\n')
    assert cpp_lists(help_.read_text(), FAMILIES["kernel ops"]) == [(2, ["attention", "conv2d", "gemm"])]
