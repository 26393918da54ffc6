"""The collectives are declared once, in the result schema's collective op (one oneOf entry each: name, shape, bus
factor, reduction, root, backends), which the build compiles in (the CollectiveRegistry unit tests hold the C++ to it)
and Python reads through reports/collective_facts.py. A consumer that keeps its own list of collectives or its own bus
factor formula fails here, where it is declared, instead of an integration test far away when a collective is added."""
import ast
import warnings
from pathlib import Path

import pytest
from synthetic import ROOT, make_record

from reports.collective_facts import BUS_FACTORS, collective, collectives, names, on_backend
from reports.errors import InputError
from reports.load import validate_record

FACTS_MODULE = ROOT / "reports" / "collective_facts.py"
SCANNED = ("reports", "tests", "scripts")


def test_the_facts_are_the_schemas_declarations(schema):
    entries = schema["$defs"]["collective"]["properties"]["op"]["oneOf"]
    assert names() == [e["const"] for e in entries]
    for c, e in zip(collectives(), entries):
        assert (c.shape, c.bus_factor_formula, c.reduces, c.rooted, list(c.backends)) == (
            e["x-shape"], e["x-bus-factor"], e["x-reduces"], e["x-rooted"], e["x-backends"])
        assert c.shape in ("flat", "gathered", "scattered", "exchanged") and c.bus_factor_formula in BUS_FACTORS
        assert c.backends and set(c.backends) <= {"mpi", "nccl"}
    assert len(set(names())) == len(names())


def test_each_bus_factor_is_its_formula():
    for n in range(1, 9):
        ring = (n - 1) / n
        assert [BUS_FACTORS[f](n) for f in ("2(n-1)/n", "(n-1)/n", "1")] == [2 * ring, ring, 1.0]
    assert (collective("all_reduce").bus_factor(4), collective("all_gather").bus_factor(4)) == (1.5, 0.75)
    assert collective("broadcast").bus_factor(4) == 1.0 and not collective("broadcast").whole_buffer
    assert collective("reduce_scatter").whole_buffer and collective("reduce_scatter").reduces
    assert on_backend("mpi") == [c.name for c in collectives() if "mpi" in c.backends]
    with pytest.raises(KeyError, match="'allreduce' is not a trainscope collective"):
        collective("allreduce")


def test_a_record_of_an_unknown_collective_names_the_declared_ones():
    with pytest.raises(InputError) as e:
        validate_record(dict(make_record(), op="allreduce"), "r.jsonl")
    assert f"'allreduce' is not one of {names()!r}" in str(e.value)


def _collections_of_names(tree: ast.AST, known: set[str]) -> list[tuple[int, str]]:
    """Literal sets, lists, tuples and dict keys of 3+ collective names that a module keeps as a table (assigned at
    module or class level) or classifies ops by (`op in (...)`): lists of collectives kept by hand. A test naming the
    ops it runs (`for op in (...)`, `--ops a,b,c`) chooses them and is not one."""
    def names_in(node: ast.AST) -> int:
        elts = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", [])
        return sum(isinstance(e, ast.Constant) and e.value in known for e in elts)

    literal = (ast.Set, ast.List, ast.Tuple, ast.Dict)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, literal) and names_in(right) >= 3:
                    found.append((node.lineno, "a membership test against its own list of collectives"))
        if isinstance(node, (ast.Module, ast.ClassDef)):
            for stmt in node.body:
                value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
                if isinstance(value, literal) and names_in(value) >= 3:
                    found.append((stmt.lineno, "a table of collectives of its own"))
    return found


def _bus_factor_formulas(tree: ast.AST) -> list[tuple[int, str]]:
    """(n - 1) / n in any form (2 * (n - 1) / n, (size - 1) / size): a bus factor computed outside the facts."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Name):
            n = node.right.id
            for sub in ast.walk(node.left):
                if (isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub) and isinstance(sub.left, ast.Name)
                        and sub.left.id == n and isinstance(sub.right, ast.Constant) and sub.right.value == 1):
                    found.append((node.lineno, "a bus factor formula of its own"))
    return found


def own_lists(source: str) -> list[tuple[int, str]]:
    with warnings.catch_warnings():  # another file's invalid escape sequences are not this test's business
        warnings.simplefilter("ignore")
        tree = ast.parse(source)
    return _collections_of_names(tree, set(names())) + _bus_factor_formulas(tree)


@pytest.mark.parametrize("source", [
    'WHOLE_BUFFER = {"all_gather", "reduce_scatter", "alltoall", "gather", "scatter"}',
    'OPS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast"]',
    'class Bench:\n    ROWS = {"all_reduce": 1, "reduce": 2, "gather": 3}',
    'def f(op):\n    return "sum" if op in ("all_reduce", "reduce_scatter", "reduce") else None',
    'def f(op, n):\n    return 2 * (n - 1) / n',
    'def f(op, size):\n    return (size - 1) / size',
])
def test_the_scan_finds_a_list_kept_by_hand(source):
    assert own_lists(source), source


@pytest.mark.parametrize("source", [
    'def test(run):\n    for op in ("all_reduce", "all_gather", "sendrecv"):\n        run(op)',
    'ARGS = ["--ops", "all_reduce,all_gather,reduce_scatter"]',
    'EXPECTED = {"all_reduce", "send"}',
    'def f(c):\n    return c.bus_factor(4) / c.bus_factor(2)',
])
def test_the_scan_leaves_a_tests_own_choices_alone(source):
    assert not own_lists(source), source


def test_no_consumer_keeps_its_own_list_of_collectives_or_bus_factors():
    offenders = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if path in (FACTS_MODULE, Path(__file__).resolve()):  # the facts, and this test's oracle of the formulas
                continue
            for line, what in own_lists(path.read_text()):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    assert not offenders, ("read the collectives from reports/collective_facts.py (the schema's declarations) instead:\n"
                           + "\n".join(offenders))
