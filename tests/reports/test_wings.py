"""reports/ is a package of wings (issue #37), as bench/ is: common/ is what every wing reads, each other wing one
part of the tool (compare, accept, import_export, traces, html). Dependencies point one way: a wing imports common
and itself, and another wing only where it is built on it and says so in its __init__.py (BUILT_ON, with why);
common imports no wing; every module lives in a wing but the entry point (reports/__main__.py, which dispatches the
subcommands to the wings). The rule is read from the source (ast), nothing is imported, so a new import that
breaks it fails here, in the first seconds of the suite."""
import ast
import textwrap
from pathlib import Path

REPORTS = Path(__file__).resolve().parents[2] / "reports"
COMMON = "common"
ENTRY = ("__init__.py", "__main__.py")  # the package's own files: the entry point may import every wing


def built_on(init: Path) -> tuple[str, ...] | None:
    """A wing's declared bases: the literal BUILT_ON in its __init__.py (None when it declares none)."""
    for node in ast.parse(init.read_text()).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (node.targets[0] if isinstance(node, ast.Assign)
                                                                      else None)
        if isinstance(target, ast.Name) and target.id == "BUILT_ON" and node.value is not None:
            return tuple(ast.literal_eval(node.value))
    return None


def imported(path: Path, root: Path) -> list[tuple[int, list[str]]]:
    """Each module of the package `path` imports, as (line, its parts under the package root)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    package = parts[:-1]  # an __init__.py's package is its own folder, which is parts[:-1] too
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            if node.level - 1 > len(package):
                continue  # beyond the package: not ours
            base = package[:len(package) - (node.level - 1)]
            if node.module:
                found.append((node.lineno, base + node.module.split(".")))
            else:
                found += [(node.lineno, base + [a.name]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == root.name:
            rest = node.module.split(".")[1:]
            found += [(node.lineno, rest + [a.name]) for a in node.names] if not rest else [(node.lineno, rest)]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".")[1:]) for a in node.names if a.name.split(".")[0] == root.name]
    return found


def violations(root: Path) -> list[str]:
    """Every break of the wing rule in the package at `root`, one line each (empty: the layering holds)."""
    wings = {d.name: built_on(d / "__init__.py") for d in sorted(root.iterdir()) if (d / "__init__.py").is_file()}
    out = [f"{root.name}/{f.name}: a module outside any wing (put it in the wing it belongs to, or in {COMMON}/)"
           for f in sorted(root.glob("*.py")) if f.name not in ENTRY]
    for wing, bases in wings.items():
        if bases is None:
            out.append(f"{root.name}/{wing}/__init__.py: declares no BUILT_ON (the wings it is built on; () for none)")
        elif wing == COMMON and bases:
            out.append(f"{root.name}/{wing}/__init__.py: {COMMON} is built on no wing (it declares {', '.join(bases)})")
        else:
            out += [f"{root.name}/{wing}/__init__.py: BUILT_ON names '{b}', which is not another wing ({COMMON} is "
                    "every wing's base unsaid)" for b in bases if b not in wings or b in (wing, COMMON)]

    def reaches(start: str, goal: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(b == goal or (b not in seen and reaches(b, goal, seen | {b})) for b in wings.get(start) or ())

    out += [f"{root.name}/{w}/__init__.py: BUILT_ON makes a cycle through {w}" for w in wings if reaches(w, w)]
    used: dict[str, set[str]] = {w: set() for w in wings}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if len(rel.parts) == 1:
            continue  # the entry point, or a stray module already named above
        wing, allowed = rel.parts[0], {rel.parts[0], COMMON, *(wings.get(rel.parts[0]) or ())}
        for line, target in imported(path, root):
            if not target:
                continue  # the package itself (`import reports`)
            if target[0] not in wings:
                out.append(f"{root.name}/{rel}:{line}: imports {root.name}.{'.'.join(target)}, which is in no wing")
            elif wing == COMMON and target[0] != COMMON:
                out.append(f"{root.name}/{rel}:{line}: {COMMON} imports the wing {target[0]} (move what both need into "
                           f"{COMMON}/)")
            elif target[0] not in allowed:
                out.append(f"{root.name}/{rel}:{line}: the wing {wing} imports the wing {target[0]}, which is not among "
                           f"its BUILT_ON ({', '.join(wings.get(wing) or ()) or 'none'}): move what both need into "
                           f"{COMMON}/, or declare the base in {root.name}/{wing}/__init__.py with why")
            elif target[0] != wing:
                used[wing].add(target[0])
    out += [f"{root.name}/{w}/__init__.py: BUILT_ON names '{b}', which none of its modules imports (a stale declaration)"
            for w, bases in wings.items() if w != COMMON  # named above
            for b in bases or () if b in wings and b not in (w, COMMON) and b not in used[w]]
    return out


def test_the_reports_wings_import_only_their_bases():
    assert violations(REPORTS) == []


def test_the_reports_have_their_wings_and_an_entry_point_only():
    assert {d.name for d in REPORTS.iterdir() if (d / "__init__.py").is_file()} == {
        "common", "compare", "accept", "import_export", "traces", "html", "history", "predict"}
    assert sorted(f.name for f in REPORTS.glob("*.py")) == sorted(ENTRY)


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


def test_the_rule_names_each_kind_of_break(tmp_path):
    """The checker on a package made to break the rule once per way it can be broken (so the test above cannot pass
    by finding nothing at all)."""
    root = _package(tmp_path / "reports", {
        "__init__.py": "",
        "__main__.py": "from .a import x\nfrom .b import y\n",  # the entry point: free
        "stray.py": "",
        "common/__init__.py": "BUILT_ON: tuple[str, ...] = ()\n",
        "common/load.py": "from ..a import x\n",
        "common/ok.py": "from . import load\nfrom .load import z\n",
        "a/__init__.py": "BUILT_ON: tuple[str, ...] = ()\n",
        "a/x.py": "from ..common.load import z\nfrom ..b.y import w\n",
        "a/deep/__init__.py": "",
        "a/deep/x.py": "import reports.b.y\n",
        "b/__init__.py": "BUILT_ON = ('a',)\n",
        "b/y.py": "from ..a import x\nfrom reports.common import load\nfrom reports.c import q\n",
        "c/__init__.py": "BUILT_ON = ('b', 'common')\n",
        "c/q.py": "from reports import stray\n",
        "d/__init__.py": "",
    })
    assert violations(root) == [
        "reports/stray.py: a module outside any wing (put it in the wing it belongs to, or in common/)",
        "reports/c/__init__.py: BUILT_ON names 'common', which is not another wing (common is every wing's base unsaid)",
        "reports/d/__init__.py: declares no BUILT_ON (the wings it is built on; () for none)",
        "reports/a/deep/x.py:1: the wing a imports the wing b, which is not among its BUILT_ON (none): move what both "
        "need into common/, or declare the base in reports/a/__init__.py with why",
        "reports/a/x.py:2: the wing a imports the wing b, which is not among its BUILT_ON (none): move what both need "
        "into common/, or declare the base in reports/a/__init__.py with why",
        "reports/b/y.py:3: the wing b imports the wing c, which is not among its BUILT_ON (a): move what both need into "
        "common/, or declare the base in reports/b/__init__.py with why",
        "reports/c/q.py:1: imports reports.stray, which is in no wing",
        "reports/common/load.py:1: common imports the wing a (move what both need into common/)",
        "reports/c/__init__.py: BUILT_ON names 'b', which none of its modules imports (a stale declaration)",
    ]


def test_the_rule_refuses_common_on_a_wing_and_a_cycle_of_bases(tmp_path):
    root = _package(tmp_path / "reports", {
        "__init__.py": "",
        "common/__init__.py": "BUILT_ON = ('a',)\n",
        "a/__init__.py": "BUILT_ON = ('b',)\n",
        "a/x.py": "from ..b import y\n",
        "b/__init__.py": "BUILT_ON = ('a',)\n",
        "b/y.py": "from ..a import x\n",
    })
    assert violations(root) == [
        "reports/common/__init__.py: common is built on no wing (it declares a)",
        "reports/a/__init__.py: BUILT_ON makes a cycle through a",
        "reports/b/__init__.py: BUILT_ON makes a cycle through b",
    ]
