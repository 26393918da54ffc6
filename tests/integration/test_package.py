"""The Debian package (scripts/package.sh, cmake/TrainscopePackaging.cmake) installs a trainscope that runs where it
lands: unpacked into a temporary folder (as `dpkg -x` does, and `apt-get install` under /usr), with no
TRAINSCOPE_HOME and no source tree to fall back on, it runs `env`, finds a shipped suite by name and writes a
report. Its Depends names Debian packages that exist (they are installed here)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT, base_env, trainscope_path


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory):
    if not shutil.which("cpack") or not shutil.which("dpkg-deb"):
        pytest.skip("needs cpack and dpkg-deb (cmake, dpkg)")
    build = Path(trainscope_path()).parent
    if not (build / "CPackConfig.cmake").exists():
        pytest.skip(f"{build} has no CPackConfig.cmake: not a CMake build directory")
    out = tmp_path_factory.mktemp("package")
    p = subprocess.run([ROOT / "scripts" / "package.sh", out], capture_output=True, text=True, timeout=600,
                       env=base_env({"TS_BUILD": str(build)}))
    assert p.returncode == 0, p.stderr[-3000:]
    deb = Path(p.stdout.split()[-1])
    root = out / "root"
    subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
    return deb, root


def run_installed(root, args, cwd):
    # No TRAINSCOPE_HOME: the binary must take its data from beside itself (the package's share/trainscope), before
    # the source tree it was built from, which the suite's path in the output shows.
    env = base_env()
    env.pop("TRAINSCOPE_HOME", None)
    return subprocess.run([root / "usr" / "bin" / "trainscope", *map(str, args)], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def test_the_package_holds_the_binary_the_reports_and_the_suites(unpacked):
    _, root = unpacked
    share = root / "usr" / "share" / "trainscope"
    assert os.access(root / "usr" / "bin" / "trainscope", os.X_OK)
    assert (share / "reports" / "__main__.py").is_file() and (share / "suites" / "quick.toml").is_file()
    assert not list(share.rglob("__pycache__"))


def test_its_dependencies_are_debian_packages_installed_here(unpacked):
    deb, _ = unpacked
    depends = subprocess.run(["dpkg-deb", "-f", deb, "Depends"], capture_output=True, text=True, check=True).stdout
    names = [d.strip().split()[0] for d in depends.split(",") if d.strip()]
    assert {"libopenmpi3", "libopenblas0", "python3-matplotlib", "python3-jsonschema"} <= set(names), depends
    missing = [n for n in names if subprocess.run(["dpkg", "-s", n], capture_output=True).returncode != 0]
    assert not missing, f"Depends names packages that are not installed here: {missing}"


def test_the_unpacked_binary_runs_finds_a_suite_by_name_and_writes_a_report(unpacked, tmp_path):
    _, root = unpacked
    r = run_installed(root, ["env", "--json", tmp_path / "env.json"], tmp_path)
    assert r.returncode == 0, r.stderr
    r = run_installed(root, ["suite", "quick", "--check-only"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"({root / 'usr' / 'share' / 'trainscope' / 'suites' / 'quick.toml'})" in r.stdout, r.stdout
    r = run_installed(root, ["report", tmp_path / "env.json", "-o", tmp_path / "report"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "report" / "index.html").is_file()


def test_an_unknown_suite_name_lists_the_shipped_ones(unpacked, tmp_path):
    _, root = unpacked
    r = run_installed(root, ["suite", "nosuch"], tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("trainscope: error: suite nosuch: no such file, and no suite of that name in "), r.stderr
    assert "ci" in r.stderr and "quick" in r.stderr and len(r.stderr.splitlines()) == 1
