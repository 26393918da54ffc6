"""The Debian packages (scripts/package.sh, cmake/TrainscopePackaging.cmake): `trainscope`, the CPU-only build, and
`trainscope-cuda`, the CUDA build depending on NVIDIA's packages.

Unpacked into a temporary folder (as `dpkg -x` does), with no TRAINSCOPE_HOME and no source tree to fall back on,
trainscope runs `env`, finds a shipped suite by name and writes a report. Installed for real with dpkg in a clean
root (tests/tools/clean_root.sh: an overlay of this machine in a mount namespace, /usr/local/cuda* hidden for a
machine without NVIDIA's libraries), `trainscope` installs and runs `env`, MPI collectives and `report` with no
NVIDIA library present; `trainscope-cuda` is refused there by dpkg with a line naming each NVIDIA package it needs
(installed anyway, it could not start: issue #36), and starts where the toolkit is."""
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

import pytest

from helpers import ROOT, base_env, loaded_later, trainscope_path

CLEAN_ROOT = ROOT / "tests" / "tools" / "clean_root.sh"
# NVIDIA's libraries by soname prefix, and the package of NVIDIA's Debian 12 CUDA repository holding each (by name
# prefix: the CUDA ones end in the toolkit's <major>-<minor>, cmake/TrainscopePackaging.cmake says where they come from).
NVIDIA_PACKAGES = {
    "libcudart.so.": "cuda-cudart-",
    "libcublasLt.so.": "libcublas-",
    "libcublas.so.": "libcublas-",
    "libcupti.so.": "cuda-cupti-",
    "libcudnn.so.": "libcudnn9-cuda-",
    "libnccl.so.": "libnccl2",
}


def package(kind, out):
    """Runs scripts/package.sh KIND OUT and returns the path of the .deb it made, or skips saying why it could not."""
    if not shutil.which("cpack") or not shutil.which("dpkg-deb"):
        pytest.skip("needs cpack and dpkg-deb (cmake, dpkg)")
    build = Path(trainscope_path()).parent
    if not (build / "CPackConfig.cmake").exists():
        pytest.skip(f"{build} has no CPackConfig.cmake: not a CMake build directory")
    p = subprocess.run([ROOT / "scripts" / "package.sh", kind, out], capture_output=True, text=True, timeout=3000,
                       env=base_env({"TS_BUILD": str(build)}))
    if kind == "cuda" and p.returncode == 2 and "is not a CUDA build" in p.stderr:
        pytest.skip(f"no trainscope-cuda here: {p.stderr.strip()}")
    assert p.returncode == 0, p.stderr[-3000:]
    debs = p.stdout.split()
    assert len(debs) == 1, p.stdout
    return Path(debs[0])


@pytest.fixture(scope="module")
def cpu_deb(tmp_path_factory):
    return package("cpu", tmp_path_factory.mktemp("cpu-deb"))


@pytest.fixture(scope="module")
def cuda_deb(tmp_path_factory):
    return package("cuda", tmp_path_factory.mktemp("cuda-deb"))


@pytest.fixture(scope="module")
def unpacked(cpu_deb, tmp_path_factory):
    root = tmp_path_factory.mktemp("unpacked")
    subprocess.run(["dpkg-deb", "-x", cpu_deb, root], check=True)
    return root


def control(deb, field):
    return subprocess.run(["dpkg-deb", "-f", deb, field], capture_output=True, text=True, check=True).stdout.strip()


def depends(deb):
    return [d.strip().split()[0] for d in control(deb, "Depends").split(",") if d.strip()]


def needed(binary):
    """The sonames a binary links (its DT_NEEDED entries)."""
    out = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out)


def nvidia_needed(binary):
    return [s for s in needed(binary) if any(s.startswith(p) for p in NVIDIA_PACKAGES)]


def package_of(name, prefixes):
    """The one of `prefixes` that `name` starts with (a soname's prefix, or a package's)."""
    return next(p for p in prefixes if name.startswith(p))


def nvidia_packages_linked(deb, tmp_path):
    """The NVIDIA package prefixes (NVIDIA_PACKAGES' values) of the libraries the packaged binary links or loads
    later, sorted."""
    root = tmp_path / "linked"
    subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
    libs = nvidia_needed(root / "usr" / "bin" / "trainscope") + loaded_later()
    return sorted({NVIDIA_PACKAGES[package_of(lib, NVIDIA_PACKAGES)] for lib in libs})


@functools.cache
def clean_root_refusal():
    """Why a clean root cannot be made here (not root, or the kernel or sandbox refuses the mounts), or None."""
    if os.geteuid() != 0:
        return "not root: the clean root needs a mount namespace, overlayfs and chroot"
    if not shutil.which("unshare") or not shutil.which("chroot"):
        return "needs unshare and chroot (util-linux, coreutils)"
    with tempfile.TemporaryDirectory() as empty:
        p = subprocess.run([CLEAN_ROOT, "--no-cuda", empty, empty, "true"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0 and re.search(r"not permitted|Permission denied|unknown filesystem type", p.stderr):
        return f"this kernel or sandbox refuses the clean root's mounts: {p.stderr.strip()}"
    assert p.returncode == 0, f"the clean root failed for another reason than permission: {p.stderr}"
    return None


def in_clean_root(debs_dir, out, command, cuda):
    """Runs COMMAND (bash) as root of a throw-away copy of this machine, with /usr/local/cuda* hidden unless cuda."""
    why = clean_root_refusal()
    if why:
        # Loudly: a skipped test is easy to miss in -q output, a warning is listed at the end.
        warnings.warn(f"CLEAN-ROOT PACKAGE TESTS SKIPPED: {why}")
        pytest.skip(f"CLEAN-ROOT PACKAGE TESTS SKIPPED: {why}")
    args = [CLEAN_ROOT] + ([] if cuda else ["--no-cuda"]) + [debs_dir, out, command]
    return subprocess.run(args, capture_output=True, text=True, timeout=600, env=base_env())


# What a machine without NVIDIA's libraries is, checked inside the root: no file behind any NVIDIA soname the loader
# knows of (ld.so.cache still lists the hidden toolkit's) nor in the toolkit's directories (the CUDA binary's
# RUNPATH), so that a test passing there did not find them.
NO_NVIDIA = r"""
for lib in $(ldconfig -p | grep -oE '=> \S*(libcudart|libcublas|libcudnn|libnccl|libcupti)[^ ]*' | cut -c4-) \
  /usr/local/cuda*/lib*/lib{cudart,cublas,cudnn,nccl,cupti}*; do
  if [ -e "$lib" ]; then echo "an NVIDIA library is present: $lib" >&2; exit 99; fi
done
"""


def test_the_package_holds_the_binary_the_reports_and_the_suites(unpacked):
    share = unpacked / "usr" / "share" / "trainscope"
    assert os.access(unpacked / "usr" / "bin" / "trainscope", os.X_OK)
    assert (share / "reports" / "__main__.py").is_file() and (share / "suites" / "quick.toml").is_file()
    assert not list(share.rglob("__pycache__"))


def test_the_cpu_package_depends_only_on_debian_packages_installed_here_and_links_no_nvidia_library(cpu_deb, unpacked):
    assert control(cpu_deb, "Package") == "trainscope"
    names = depends(cpu_deb)
    assert {"libopenmpi3", "libopenblas0", "python3-matplotlib", "python3-jsonschema"} <= set(names), names
    missing = [n for n in names if subprocess.run(["dpkg", "-s", n], capture_output=True).returncode != 0]
    assert not missing, f"Depends names packages that are not installed here: {missing}"
    assert not nvidia_needed(unpacked / "usr" / "bin" / "trainscope")


def test_the_cuda_package_replaces_trainscope_and_depends_on_each_nvidia_library_it_links(cuda_deb, tmp_path):
    assert control(cuda_deb, "Package") == "trainscope-cuda"
    for field in ("Conflicts", "Replaces", "Provides"):
        assert control(cuda_deb, field) == "trainscope", field
    subprocess.run(["dpkg-deb", "-x", cuda_deb, tmp_path], check=True)
    libs = nvidia_needed(tmp_path / "usr" / "bin" / "trainscope")
    assert any(lib.startswith("libnccl.so.") for lib in libs), libs  # the library of the report
    names = depends(cuda_deb)
    assert loaded_later(), "the CUDA build lists nothing trainscope loads later (BUILD/loaded-later.txt)"
    for lib in libs + loaded_later():
        wanted = NVIDIA_PACKAGES[package_of(lib, NVIDIA_PACKAGES)]
        assert any(n.startswith(wanted) for n in names), f"{lib} is used but no {wanted}* package in Depends: {names}"
    # The rest are Debian's, installed here (the NVIDIA ones are not: the toolkit here is no Debian package).
    debian = [n for n in names if not any(n.startswith(v) for v in NVIDIA_PACKAGES.values())]
    missing = [n for n in debian if subprocess.run(["dpkg", "-s", n], capture_output=True).returncode != 0]
    assert not missing, f"Depends names packages that are not installed here: {missing}"


def test_the_cpu_package_installs_and_runs_env_mpi_collectives_and_report_without_any_nvidia_library(cpu_deb, tmp_path):
    p = in_clean_root(cpu_deb.parent, tmp_path, NO_NVIDIA + f"""
set -ex
dpkg -i /debs/{cpu_deb.name}
dpkg -s trainscope | grep -x 'Status: install ok installed'
cd /out
trainscope env --json env.json
mpirun -np 2 --oversubscribe trainscope collectives --backend mpi --ops all_reduce -b 8 -e 1K -w 1 -n 2 --json coll.json
trainscope report coll.json -o report
""", cuda=False)
    assert p.returncode == 0, p.stderr[-4000:]
    assert (tmp_path / "env.json").is_file()
    records = [r for r in json.loads((tmp_path / "coll.json").read_text())["records"] if r["kind"] == "collective"]
    assert {(r["backend"], r["ranks"], r["check"]["passed"]) for r in records} == {("mpi", 2, True)}, records
    assert sorted({r["bytes"] for r in records}) == [8 << i for i in range(8)]  # 8 B to 1 KiB
    assert (tmp_path / "report" / "index.html").is_file()


def test_the_cuda_binary_cannot_start_without_nvidia_libraries(cuda_deb, tmp_path):
    # The reproduction of issue #36: forced past its Depends into a machine without NVIDIA's libraries (what the single
    # package of before was, with no Depends on them), the CUDA build does not start. This is why it depends on them.
    p = in_clean_root(cuda_deb.parent, tmp_path, NO_NVIDIA + f"""
dpkg -i --force-depends /debs/{cuda_deb.name} >/dev/null 2>&1 || exit 98
trainscope env
""", cuda=False)
    assert p.returncode == 127, (p.returncode, p.stderr[-3000:])
    assert "error while loading shared libraries: lib" in p.stderr, p.stderr


def test_dpkg_refuses_the_cuda_package_naming_each_missing_nvidia_package(cuda_deb, tmp_path):
    p = in_clean_root(cuda_deb.parent, tmp_path, NO_NVIDIA + f"""
dpkg -i /debs/{cuda_deb.name}; echo "dpkg exit $?"
dpkg -s trainscope-cuda | grep '^Status:'
""", cuda=False)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "dpkg exit 1" in p.stdout and "Status: install ok unpacked" in p.stdout, p.stdout  # not configured
    nvidia = [d for d in depends(cuda_deb) if any(d.startswith(v) for v in NVIDIA_PACKAGES.values())]
    # One Depends per NVIDIA package the binary's libraries come from (cuBLAS and cuBLASLt share one), no other.
    assert sorted(package_of(d, NVIDIA_PACKAGES.values()) for d in nvidia) == nvidia_packages_linked(cuda_deb, tmp_path), nvidia
    for name in nvidia:
        assert re.search(rf"^ trainscope-cuda depends on {re.escape(name)}\b.*; however:$", p.stderr, re.M), (name, p.stderr)
        assert f"Package {name} is not installed." in p.stderr, (name, p.stderr)


def test_the_cuda_package_replaces_trainscope_and_starts_where_the_toolkit_is_present(cpu_deb, cuda_deb, tmp_path):
    # The toolkit here is NVIDIA's installer's, not its Debian packages: dpkg cannot see it, so the install is forced
    # past the Depends (what a user with a runfile toolkit does); the binary must then start from its RUNPATH. The
    # CPU package installed before is removed in its favour (both own /usr/bin/trainscope).
    debs = tmp_path / "debs"
    debs.mkdir()
    for deb in (cpu_deb, cuda_deb):
        shutil.copy(deb, debs)
    p = in_clean_root(debs, tmp_path, f"""
set -ex
dpkg -i /debs/{cpu_deb.name}
dpkg -i --force-depends /debs/{cuda_deb.name}
dpkg-query -W -f '${{Package}} ${{Status}}\\n' 'trainscope*'
trainscope --version
trainscope env --json /out/env.json
""", cuda=True)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "trainscope-cuda install ok installed" in p.stdout and "trainscope install ok installed" not in p.stdout
    assert "built with: CUDA yes" in p.stdout, p.stdout
    assert (tmp_path / "env.json").is_file()


def run_installed(root, args, cwd):
    # No TRAINSCOPE_HOME: the binary must take its data from beside itself (the package's share/trainscope), before
    # the source tree it was built from, which the suite's path in the output shows.
    env = base_env()
    env.pop("TRAINSCOPE_HOME", None)
    return subprocess.run([root / "usr" / "bin" / "trainscope", *map(str, args)], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def test_the_unpacked_binary_runs_finds_a_suite_by_name_and_writes_a_report(unpacked, tmp_path):
    root = unpacked
    r = run_installed(root, ["env", "--json", tmp_path / "env.json"], tmp_path)
    assert r.returncode == 0, r.stderr
    r = run_installed(root, ["suite", "quick", "--check-only"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"({root / 'usr' / 'share' / 'trainscope' / 'suites' / 'quick.toml'})" in r.stdout, r.stdout
    r = run_installed(root, ["report", tmp_path / "env.json", "-o", tmp_path / "report"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "report" / "index.html").is_file()


def test_an_unknown_suite_name_lists_the_shipped_ones(unpacked, tmp_path):
    r = run_installed(unpacked, ["suite", "nosuch"], tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("trainscope: error: suite nosuch: no such file, and no suite of that name in "), r.stderr
    assert "ci" in r.stderr and "quick" in r.stderr and len(r.stderr.splitlines()) == 1
