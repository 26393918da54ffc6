"""scripts/check-headers.py, the lint stage's check that every header compiles alone, has #pragma once, and that no
headers include each other in a cycle: on a small tree of its own (a git repository with a compile_commands.json),
each defect is one line naming the header and the exit is 1; the same tree mended passes, and a header its own
source includes first counts as compiled by the build."""
import json
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT

SCRIPT = ROOT / "scripts" / "check-headers.py"


def tree(root, files):
    """A git repository at `root` holding `files` and the script, and a build folder with the compile commands of
    its sources."""
    if not shutil.which("g++") or not shutil.which("git"):
        pytest.skip("needs g++ and git")
    (root / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, root / "scripts" / SCRIPT.name)
    for name, text in files.items():
        (root / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "."], check=True)
    build = root / "build"
    build.mkdir()
    sources = [n for n in files if n.endswith(".cpp")]
    (build / "compile_commands.json").write_text(json.dumps([
        {"directory": str(build), "file": str(root / s),
         "command": f"g++ -std=c++20 -I{root} -o {s}.o -c {root / s}"} for s in sources]))
    return build


def check(root, build):
    return subprocess.run([sys.executable, str(root / "scripts" / SCRIPT.name), "--build", str(build)],
                          capture_output=True, text=True, timeout=120)


BROKEN = {
    "a.h": '#pragma once\n#include "b.h"\n',
    "b.h": '#pragma once\n#include "a.h"\n',
    "c.h": '#pragma once\ninline std::string c() { return "c"; }\n',  # needs <string>, which only main.cpp includes
    "d.h": "inline int d() { return 4; }\n",
    "e.h": "#pragma once\nint e();\n",
    "e.cpp": '#include "e.h"\nint e() { return 5; }\n',
    "main.cpp": '#include <string>\n#include "c.h"\n#include "a.h"\n#include "d.h"\n#include "e.h"\nint main() {}\n',
}


def test_each_defect_is_named_and_fails(tmp_path):
    build = tree(tmp_path, BROKEN)
    p = check(tmp_path, build)
    assert p.returncode == 1, p.stdout + p.stderr
    findings = [line for line in p.stdout.splitlines() if not line.startswith("    ")]
    assert "a.h: in an include cycle: a.h -> b.h -> a.h" in findings, p.stdout
    assert "c.h: does not compile alone (with the flags of main.cpp):" in findings, p.stdout
    assert "d.h: no #pragma once: included twice, it is compiled twice" in findings, p.stdout
    assert len(findings) == 3, p.stdout
    assert "'string'" in p.stdout or "std::string" in p.stdout  # the compiler's own words follow


def test_the_mended_tree_passes_and_a_header_its_source_includes_first_is_not_compiled_again(tmp_path):
    mended = dict(BROKEN, **{"b.h": "#pragma once\n",
                             "c.h": '#pragma once\n#include <string>\ninline std::string c() { return "c"; }\n',
                             "d.h": "#pragma once\ninline int d() { return 4; }\n"})
    build = tree(tmp_path, mended)
    p = check(tmp_path, build)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "5 headers: 1 compiled alone by the build (their source includes them first), 4 compiled alone here" in p.stderr
    assert not (build / "header-check" / "e.alone.o").exists() and (build / "header-check" / "c.alone.o").exists()
