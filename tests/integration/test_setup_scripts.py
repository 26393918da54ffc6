"""The set-up scripts (issue #35): run.sh builds only the programs its job runs (not the unit tests,
micro-benchmarks or fuzz targets that test.sh builds), says each stage, and suggests mpirun commands that
work as printed for root; the README names every package each script installs. run.sh --dry-run prints each
stage's command and runs none of them, so these take seconds."""
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT

SCRIPTS = ROOT / "scripts"
BUILD = ROOT / "build"
# Sources of the targets only scripts/test.sh needs: the unit, MPI, GPU and fake-GPU tests, the micro-benchmarks,
# the hand-timed MPI reference loop, the fuzz targets.
TEST_ONLY_SOURCES = re.compile(r"/(tests|fuzz)/|/bench/(micro|reference)/")
UNITY_INCLUDE = re.compile(r'^#include "(.+)"$', re.M)  # a line of a unity batch (CMake's Unity/unity_N_cxx.cxx)


def without_root_allowance() -> dict[str, str]:
    """The environment of a user's shell: no Open MPI allowance that the scripts set for themselves."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_MCA_"))}


@pytest.fixture(scope="module")
def dry_run() -> str:
    env = {**without_root_allowance(), "TS_BUILD": str(BUILD)}
    r = subprocess.run([SCRIPTS / "run.sh", "--dry-run"], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stderr


def test_run_announces_each_stage_with_the_time(dry_run):
    stages = re.findall(r"^(run|setup): \[\d+:\d\d\] (\S+)", dry_run, re.M)
    words = [w for _, w in stages]
    assert "setting" in words and "would" in words and "running" in words, dry_run
    assert re.search(r"^setup: \[\d+:\d\d\] (packages: all \d+ installed|installing \d+ of \d+ packages)", dry_run, re.M), dry_run


def test_run_builds_exactly_the_programs_it_runs(dry_run):
    build = re.search(r"^setup: .*would build .*: cmake --build (\S+) -j\d+ --target (.+)$", dry_run, re.M)
    assert build, f"run.sh builds every target (no --target):\n{dry_run}"
    targets = build.group(2).split()
    job = re.search(r"^run: \[[\d:]+\] running the quick suite .*?: (mpirun .*)$", dry_run, re.M)
    assert job, dry_run
    programs = {Path(w).name for w in shlex.split(job.group(1)) if w.startswith(build.group(1) + "/")}
    assert programs and set(targets) == programs


def test_run_build_compiles_no_test_or_benchmark_source(dry_run):
    """What run.sh's targets compile, from the build's own graph: none of test.sh's sources, while the whole
    build has them (so the check can fail)."""
    if not (BUILD / "build.ninja").exists() or shutil.which("ninja") is None:
        pytest.skip("no build/build.ninja (scripts/setup.sh configures it)")
    targets = re.search(r"would build .*--target (.+)$", dry_run, re.M).group(1).split()
    known = subprocess.run(["ninja", "-C", BUILD, "-t", "targets", "all"], capture_output=True, text=True, check=True).stdout
    assert all(re.search(rf"^{re.escape(t)}: ", known, re.M) for t in targets), targets

    def compiled(*names):
        """The sources the targets compile: in a unity build (scripts/setup.sh's default) those of each batch."""
        out = subprocess.run(["ninja", "-C", BUILD, "-t", "commands", *names], capture_output=True, text=True, check=True).stdout
        units = [BUILD / shlex.split(line.split(" -c ")[-1])[0] for line in out.splitlines() if " -c " in line]
        return [str(s) for u in units for s in (UNITY_INCLUDE.findall(u.read_text()) if u.parent.name == "Unity" else [u])]

    theirs = [s for s in compiled() if TEST_ONLY_SOURCES.search(s)]
    ours = [s for s in compiled(*targets) if TEST_ONLY_SOURCES.search(s)]
    assert theirs, "the whole build compiles no test source: the pattern is stale"
    assert not ours, "\n".join(ours)


def test_the_mpirun_commands_run_suggests_work_as_printed(dry_run):
    """As root, Open MPI refuses to start without --allow-run-as-root or the allowance variables, which run.sh sets
    only for itself: each suggested mpirun must start a process from a plain shell."""
    if shutil.which("mpirun") is None:
        pytest.skip("no mpirun")
    suggested = [line.split("#")[0].split() for line in dry_run.splitlines() if line.strip().startswith("mpirun")]
    assert suggested, dry_run
    for words in suggested:
        launcher = words[:words.index("-np")]
        r = subprocess.run([*launcher, "-np", "1", "true"], capture_output=True, text=True, timeout=60,
                           env=without_root_allowance())
        assert r.returncode == 0, f"{' '.join(launcher)}: {r.stderr[-500:]}"


def dry_setup(build: Path, cmake_args: str = "") -> str:
    """What scripts/setup.sh would configure for the build folder `build`, with TRAINSCOPE_CMAKE_ARGS."""
    env = {**os.environ, "TS_BUILD": str(build), "TS_DRY_RUN": "1", "TRAINSCOPE_CMAKE_ARGS": cmake_args}
    r = subprocess.run([SCRIPTS / "setup.sh"], capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    line = re.search(r"would configure: (.+)$", r.stderr, re.M)
    assert line, r.stderr
    return line.group(1)


def unity_of(configure: str) -> str | None:
    """The value the configure command gives CMAKE_UNITY_BUILD (the last -D of it wins), None when none."""
    values = re.findall(r"-DCMAKE_UNITY_BUILD(?::BOOL)?=(\S+)", configure)
    return values[-1] if values else None


def test_setup_configures_a_fresh_build_folder_as_a_unity_build_and_leaves_an_existing_one_as_it_is(tmp_path):
    assert unity_of(dry_setup(tmp_path / "fresh")) == "ON"
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "CMakeCache.txt").write_text("CMAKE_BUILD_TYPE:STRING=Release\n")  # a per-file build's cache
    assert unity_of(dry_setup(tmp_path / "old")) is None
    assert unity_of(dry_setup(tmp_path / "fresh", "-DCMAKE_UNITY_BUILD=OFF")) == "OFF"  # the user's choice wins
    assert unity_of(dry_setup(tmp_path / "old", "-DCMAKE_UNITY_BUILD=ON")) == "ON"


def installed_by(script: Path) -> list[str]:
    """The Debian packages a script installs: its PACKAGES list and the names it gives ts_apt_install."""
    text = script.read_text()
    names = []
    if m := re.search(r"^PACKAGES=\((.*?)\)", text, re.M | re.S):
        names += re.sub(r"#.*", "", m.group(1)).split()  # bash: a word starting with # comments out the rest of the line
    for m in re.finditer(r"^\s*(?:\[[^]]*\] \|\| )?ts_apt_install ([^\n]+)$", text, re.M):
        names += [w for w in m.group(1).split() if not w.startswith(('"', "$"))]
    return names


def test_the_readme_names_every_package_each_script_installs():
    install = (ROOT / "README.md").read_text().split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    scripts = sorted(SCRIPTS.glob("*.sh"))
    packages = {s.name: installed_by(s) for s in scripts}
    assert "libopenmpi-dev" in packages["setup.sh"] and "python3-torch" in packages["test.sh"] and packages["fuzz.sh"]
    missing = [f"{script}: {p}" for script, names in packages.items() for p in names if f"`{p}`" not in install]
    assert not missing, "not in the README's Install section: " + ", ".join(missing)


def test_test_sh_announces_each_stage_with_its_expected_time_and_pytest_shows_progress():
    lines = (SCRIPTS / "test.sh").read_text().splitlines()
    stages = ("scripts/setup.sh", "scripts/check-format.sh", "ctest ", "scripts/fuzz.sh", "scripts/package.sh cpu", "-m pytest")
    for stage in stages:
        at = next(i for i, line in enumerate(lines) if stage in line and not line.lstrip().startswith("#"))
        said = max((i for i, line in enumerate(lines[:at]) if line.startswith("ts_stage ")), default=-1)
        assert at - said <= 6 and re.search(r"\d+ min", lines[said]), f"{stage}: no ts_stage line with its time just before it"
    pytest_line = next(line for line in lines if "-m pytest" in line)
    assert " -q " not in pytest_line and re.search(r" -v\b", pytest_line)


@pytest.mark.parametrize("apt_rc", [0, 100])
def test_packages_installed_in_the_background_say_so_and_a_failed_install_fails(tmp_path, apt_rc):
    """test.sh has setup.sh install the tests' packages while the build runs (ts_apt_install_background, then
    ts_apt_wait): their lines come out when waited for, and an install that failed fails the script with one line,
    not a test stage later that misses a package. apt-get is a stand-in here, exiting `apt_rc`."""
    if os.geteuid() != 0:
        pytest.skip("ts_apt_install runs apt-get through sudo when not root")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "apt-get").write_text(f'#!/bin/sh\n[ "$1" = update ] && exit 0\necho "E: stand-in" >&2\nexit {apt_rc}\n')
    (fake / "apt-get").chmod(0o755)
    script = f'source {SCRIPTS / "lib.sh"}; ts_apt_install_background no-such-package-of-trainscope; echo building; ts_apt_wait; echo done'
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "TS_DRY_RUN": "0"}
    r = subprocess.run(["bash", "-c", f"set -euo pipefail; {script}"], capture_output=True, text=True, timeout=60, env=env)
    assert "installing 1 of 1 packages with apt-get" in r.stderr and "no-such-package-of-trainscope" in r.stderr, r.stderr
    assert r.stdout.splitlines()[0] == "building"  # the caller went on while the install ran
    if apt_rc == 0:
        assert r.returncode == 0 and r.stdout.splitlines() == ["building", "done"], r.stdout + r.stderr
    else:
        assert r.returncode == apt_rc and "done" not in r.stdout, r.stdout + r.stderr
        assert f"error: installing the packages in the background failed (exit {apt_rc})" in r.stderr, r.stderr
