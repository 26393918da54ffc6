"""No hand-kept lists of a registry's names: the kernel ops are declared once (the result schema's enum, from which the
build makes the C++ registry) and every consumer reads them from there (helpers.kernel_ops(), the registry in C++).
A Python collection, or a C++ string, that names 3 or more of them is a second list that the next op added will not
be in: it fails here, with its file and line, instead of in an integration test far away."""
import ast
import re
from pathlib import Path

from helpers import ROOT, kernel_ops

# family -> its names. A family whose consumers all read the one list joins here.
FAMILIES = {"kernel ops": set(kernel_ops())}
PYTHON_DIRS = ("tests", "reports", "scripts")
CPP_DIRS = ("base", "bench", "comm", "kernels", "workloads", "tests", "fuzz")
SKIP = (Path(__file__).resolve(), ROOT / "tests" / "data")  # this file's examples; vendored third-party code
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


def python_lists(path: Path, family):
    """(line, names) of each list, tuple, set or dict literal in a Python file naming LEAST or more of `family`,
    and each string naming them as a comma or space separated list."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            elts = node.keys if isinstance(node, ast.Dict) else node.elts
            names = named((e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)), family)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = named(re.split(r"[,\s]+", node.value), family)
        else:
            continue
        if len(names) >= LEAST:
            found.append((node.lineno, names))
    return found


def cpp_lists(path: Path, family):
    """(line, names) of each C++ string literal naming LEAST or more of `family` (a hand-written help or list)."""
    found = []
    text = path.read_text(errors="replace")
    for m in CPP_STRING.finditer(text):
        names = named(re.split(r"[,\s]+", m.group(1)), family)
        if len(names) >= LEAST:
            found.append((text.count("\n", 0, m.start()) + 1, names))
    return found


def hand_kept_lists(root=ROOT):
    out = []
    for family_name, family in FAMILIES.items():
        for path in _source_files(root, PYTHON_DIRS, {".py"}):
            out += [f"{path.relative_to(root)}:{line}: {family_name} {names}" for line, names in python_lists(path, family)]
        for path in _source_files(root, CPP_DIRS, {".cpp", ".h", ".cu", ".cuh"}):
            out += [f"{path.relative_to(root)}:{line}: {family_name} {names}" for line, names in cpp_lists(path, family)]
    return out


def test_no_consumer_keeps_its_own_list_of_kernel_ops():
    found = hand_kept_lists()
    assert not found, ("hand-kept lists of a registry's names (read them from helpers.kernel_ops() in Python, "
                       "allKernelOps() / kernelOpNameList() in C++):\n" + "\n".join(found))


def test_the_scanner_finds_a_hand_kept_list(tmp_path):
    """The check can fail: the list test_kernels.py once kept, a help string that names the ops, and a family's
    few names in prose pass."""
    family = FAMILIES["kernel ops"]
    kept = tmp_path / "kept.py"
    kept.write_text('OPS = {"gemm", "conv2d", "layernorm", "softmax"}\nPAIR = ("gemm", "softmax")\n'
                    'HELP = "all, or a comma list of gemm, conv2d, softmax"\n')
    assert python_lists(kept, family) == [(1, ["conv2d", "gemm", "layernorm", "softmax"]), (3, ["conv2d", "gemm", "softmax"])]
    help_ = tmp_path / "help.cpp"
    help_.write_text('t.add("--ops",\n      "all, or a comma list of gemm, conv2d, attention, "\n      "softmax", f);\n'
                     'auto one = "gemm";\n')
    assert cpp_lists(help_, family) == [(2, ["attention", "conv2d", "gemm"])]
