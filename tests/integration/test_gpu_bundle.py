"""scripts/gpu-bundle.sh makes ONE file under the device tool's 64 MiB whose binaries resolve every library and every
symbol on a lent GPU machine. That machine is simulated here: a root (entered with chroot) holding glibc, libstdc++
and libgcc_s alone, CUDA's runtime, cuBLAS, CUPTI and NVTX where the device has them (a toolkit folder, or PyTorch's
CUDA 13 wheel folder nvidia/cu13/lib), and NCCL and cuDNN only in PyTorch's wheel folders. The library search is
the device's own (scripts/gpu-libpath.sh, taken from the bundle), and the loader itself checks it (`ldd -r`: bind
now, warn of every missing symbol). docs/gpu-validation.md."""
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from helpers import ROOT, base_env, loaded_later, trainscope_path

LIMIT = 64 << 20  # the device tool's limit on the working tree that travels, the bundle included
SITE = "opt/torch/.venv/lib/python3.12/site-packages"  # where the device's python3 keeps PyTorch's wheels
C_RUNTIME = re.compile(r"^(ld-linux-x86-64|libc|libm|libmvec|libpthread|libdl|librt|libutil|libresolv|libstdc\+\+|libgcc_s)\.so")
TOOLKIT = ("libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libcupti.so.13", "libnvtx3interop.so.1")
DEVICE_CUDA = re.compile(r"^lib(cudart|cublas|cublasLt|cudnn.*|nccl|cupti|nvtx3interop|cuda|nvidia-ml)\.so")


def build_dir() -> Path:
    return Path(trainscope_path()).parent


def resolved(binary: Path) -> dict[str, str]:
    """soname -> path as this machine's loader finds them."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return {m[1]: m[2] for m in re.finditer(r"^\s*(\S+) => (/\S+)", out, re.M)}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    build = build_dir()
    if "libcudart.so" not in subprocess.run(["ldd", build / "trainscope"], capture_output=True, text=True).stdout:
        pytest.skip(f"{build} was built without CUDA: there is no GPU bundle to make")
    out = tmp_path_factory.mktemp("bundle") / "gpu-bundle.tar.gz"
    env = base_env({"TS_BUILD": str(build)})
    env.pop("NCCL_TESTS_SRC", None)
    p = subprocess.run([ROOT / "scripts" / "gpu-bundle.sh", out], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "run(carry=" in p.stderr and "gpu-first-contact.sh" in p.stderr, p.stderr
    return out, p.stderr


def link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src.resolve(), dst)  # the file, not a symbolic link to it (relative ones break in the root)
    except OSError:  # another file system
        shutil.copy2(src.resolve(), dst)


def chroot(root: Path, *args: str) -> subprocess.CompletedProcess:
    """Runs ARGS inside ROOT through its loader (the root has no /bin/sh), as root or in a user namespace."""
    tool = shutil.which("chroot") or "/usr/sbin/chroot"
    enter = [tool, str(root)] if os.geteuid() == 0 else [shutil.which("unshare") or "unshare", "-r", tool, str(root)]
    env = {"PATH": "/bin"}
    return subprocess.run([*enter, "/lib64/ld-linux-x86-64.so.2", "--library-path", "/opt/bash-libs", *args],
                          capture_output=True, text=True, env=env, timeout=120)


def make_device_root(root: Path, unpacked: Path, layout: str) -> None:
    """A root laid out as the lent machine: the C runtime, the bundle, CUDA's libraries where the device has them."""
    build = build_dir()
    here = {**resolved(build / "trainscope"), **resolved(build / "tests" / "ts_gpu_tests")}
    bash_libs = resolved(Path("/bin/bash"))
    for name, path in {**here, **bash_libs}.items():
        if C_RUNTIME.match(name):
            link_or_copy(Path(path), root / "lib/x86_64-linux-gnu" / name)
    for name, path in bash_libs.items():  # bash's own (libtinfo): seen by bash only, not by the binaries it checks
        if not C_RUNTIME.match(name):
            link_or_copy(Path(path), root / "opt/bash-libs" / name)
    link_or_copy(Path("/lib64/ld-linux-x86-64.so.2").resolve(), root / "lib64/ld-linux-x86-64.so.2")
    link_or_copy(Path("/bin/bash"), root / "bin/bash")
    (root / "dev").mkdir()
    (root / "dev/null").touch()  # a plain file does for bash's redirections
    (root / "tmp").mkdir()
    shutil.copytree(unpacked, root / "bundle", symlinks=True)

    cuda_dir = Path(here["libcudart.so.13"]).parent
    wheels = root / SITE / "nvidia"
    toolkit = root / "usr/local/cuda/lib64" if layout == "toolkit" else wheels / "cu13/lib"
    for name in TOOLKIT:
        if (cuda_dir / name).exists():
            link_or_copy(cuda_dir / name, toolkit / name)
    nccl = Path(here["libnccl.so.2"])
    link_or_copy(nccl, wheels / "nccl/lib/libnccl.so.2")
    cudnn = Path(here["libcudnn.so.9"]).parent
    for lib in cudnn.glob("libcudnn*.so.9"):
        link_or_copy(lib, wheels / "cudnn/lib" / lib.name)
    if layout == "toolkit":
        # Decoys where a toolkit may keep its own NCCL and cuDNN: loadable, but without their symbols. The search
        # must take the wheels' first, or the loader reports every NCCL and cuDNN symbol undefined.
        decoy = Path(here["libgcc_s.so.1"])
        link_or_copy(decoy, toolkit / "libnccl.so.2")
        link_or_copy(decoy, toolkit / "libcudnn.so.9")


def trace(root: Path, path: str, binary: str) -> str:
    """The loader's own `ldd -r` of BINARY inside ROOT under the library search PATH."""
    p = chroot(root, "/bin/bash", "-c",
               f'LD_LIBRARY_PATH="{path}" LD_BIND_NOW=1 LD_WARN=1 LD_TRACE_LOADED_OBJECTS=1 '
               f'/lib64/ld-linux-x86-64.so.2 {binary} 2>&1')
    return p.stdout + p.stderr


def unresolved(listing: str) -> list[str]:
    missing = re.compile(r"not found|undefined symbol|no version information")
    return [line.strip() for line in listing.splitlines() if missing.search(line)]


@pytest.fixture(scope="module")
def unpacked(bundle, tmp_path_factory):
    path, _ = bundle
    into = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(path) as t:
        t.extractall(into)
    return into / "gpu-bundle"


def test_the_bundle_is_one_file_under_the_device_limit_with_what_the_device_lacks(bundle, unpacked):
    path, log = bundle
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    size = path.stat().st_size
    assert 0 < size < LIMIT, f"{size} bytes"
    assert f"{size} bytes" in log
    assert sorted(p.name for p in (unpacked / "bin").iterdir()) == ["trainscope", "ts_gpu_tests"]
    libs = sorted(p.name for p in (unpacked / "lib").iterdir())
    assert "libopenblas.so.0" in libs and "libfmt.so.9" in libs, libs
    assert not [lib for lib in libs if C_RUNTIME.match(lib) or DEVICE_CUDA.match(lib)], libs  # the device's own serve
    assert (unpacked / "scripts" / "gpu-libpath.sh").is_file() and (unpacked / "scripts" / "gpu-first-contact.sh").is_file()
    assert (unpacked / "loaded-later.txt").read_text().split() == loaded_later()  # the device's checks preload them
    manifest = (unpacked / "MANIFEST.txt").read_text()
    assert "bin/trainscope" in manifest and "NCCL " in manifest


@pytest.mark.parametrize("layout", ["toolkit", "wheels"])
def test_every_library_and_symbol_resolves_in_the_device_layout(unpacked, tmp_path, layout):
    root = tmp_path / "root"
    make_device_root(root, unpacked, layout)
    p = chroot(root, "/bin/bash", "/bundle/scripts/gpu-libpath.sh", "/bundle/lib")
    assert p.returncode == 0, p.stderr
    path = p.stdout.strip()
    wheel_dirs = [d for d in path.split(":") if "/site-packages/nvidia/" in d]
    assert path.split(":")[0] == "/bundle/lib" and wheel_dirs, path
    if layout == "toolkit":  # the wheels before the toolkit
        assert path.index("/usr/local/cuda") > max(path.index(d) for d in wheel_dirs), path

    for binary in ("/bundle/bin/trainscope", "/bundle/bin/ts_gpu_tests"):
        listing = trace(root, path, binary)
        assert not unresolved(listing), "\n".join(unresolved(listing))
        found = dict(re.findall(r"^\s*(\S+) => (/\S+)", listing, re.M))
        assert found, listing
        assert found["libnccl.so.2"] == f"/{SITE}/nvidia/nccl/lib/libnccl.so.2"
        assert found["libcudnn.so.9"] == f"/{SITE}/nvidia/cudnn/lib/libcudnn.so.9"
        assert found["libcudart.so.13"].startswith("/usr/local/cuda/" if layout == "toolkit" else f"/{SITE}/nvidia/cu13/")
        # libcuda and NVML are the driver's: loaded at run time, so never needed to start.
        assert not [n for n in found if n.startswith(("libcuda.so", "libnvidia-ml.so"))], found

    # The device's preflight check (the same function) agrees.
    p = chroot(root, "/bin/bash", "/bundle/scripts/gpu-libpath.sh", "--check", "/bundle/lib",
               "/bundle/bin/trainscope", "/bundle/bin/ts_gpu_tests")
    assert p.returncode == 0 and "every library and symbol of 2 binaries resolved" in p.stdout, p.stdout[-3000:]


def test_a_library_missing_from_the_bundle_or_missing_symbols_fail_the_check(unpacked, tmp_path):
    root = tmp_path / "root"
    make_device_root(root, unpacked, "wheels")
    path = chroot(root, "/bin/bash", "/bundle/scripts/gpu-libpath.sh", "/bundle/lib").stdout.strip()
    fmt = root / "bundle/lib/libfmt.so.9"
    fmt.unlink()
    listing = trace(root, path, "/bundle/bin/trainscope")
    assert "libfmt.so.9 => not found" in listing, listing
    check = chroot(root, "/bin/bash", "/bundle/scripts/gpu-libpath.sh", "--check", "/bundle/lib", "/bundle/bin/trainscope")
    assert check.returncode == 1 and "unresolved" in check.stdout and "libfmt.so.9" in check.stdout.splitlines()[-1]

    # A library of the right name without the symbols the binary needs: the loader names each one.
    link_or_copy(root / "bundle/lib/libz.so.1", fmt)
    listing = trace(root, path, "/bundle/bin/trainscope")
    assert [line for line in unresolved(listing) if "undefined symbol: _ZN3fmt" in line], listing
    check = chroot(root, "/bin/bash", "/bundle/scripts/gpu-libpath.sh", "--check", "/bundle/lib", "/bundle/bin/trainscope")
    assert check.returncode == 1 and "undefined symbol" in check.stdout.splitlines()[-1]


def test_a_bundle_over_the_limit_is_refused_with_one_line(bundle, tmp_path):
    # The limit is on all that travels: the tracked files, the untracked ones git does not ignore, and the bundle.
    files = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    tree = sum((ROOT / f).stat().st_size for f in files if f and (ROOT / f).is_file())
    out = tmp_path / "gpu-bundle.tar.gz"
    p = subprocess.run([ROOT / "scripts" / "gpu-bundle.sh", out], capture_output=True, text=True, timeout=600,
                       env=base_env({"TS_BUILD": str(build_dir()), "TS_GPU_CARRY_LIMIT": str(tree + (1 << 20))}))
    assert p.returncode == 1 and not out.exists(), p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "together over the device's limit" in p.stderr, p.stderr


def test_the_cuda_check_reads_all_of_ldds_output(tmp_path):
    # `ldd | grep -q libcudart` under pipefail: grep left at the first match, ldd died of SIGPIPE writing the rest, and
    # the pipeline failed, so a CUDA build was called one "built without CUDA" (seen once with the tests run three at a
    # time). An ldd whose output fills the pipe (libcudart first) makes that certain; the check must still pass it.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ldd").write_text("#!/bin/sh\necho 'libcudart.so.13 => /x/libcudart.so.13'\n"
                              "i=0; while [ $i -lt 20000 ]; do echo \"libfiller$i.so => /x/libfiller$i.so\"; i=$((i+1)); done\n")
    (fake / "ldd").chmod(0o755)
    out = tmp_path / "gpu-bundle.tar.gz"
    p = subprocess.run([ROOT / "scripts" / "gpu-bundle.sh", out], capture_output=True, text=True, timeout=600,
                       env=base_env({"TS_BUILD": str(build_dir()), "TS_GPU_CARRY_LIMIT": "1",
                                     "PATH": f"{fake}:{os.environ['PATH']}"}))
    assert "built without CUDA" not in p.stderr, p.stderr
    assert p.returncode == 1 and "over the device's limit of 1" in p.stderr, p.stderr  # the next check's refusal


def test_the_device_scripts_unpack_the_bundle_file_and_run_from_it(bundle, tmp_path):
    # As on the device: the bundle travels as one file and the script unpacks it; here `env` runs without a GPU.
    path, _ = bundle
    p = subprocess.run([ROOT / "scripts" / "gpu-rerun.sh", "--bundle", path, "--out", tmp_path / "out", "--no-peers", "env"],
                       capture_output=True, text=True, timeout=120, env=base_env({"TMPDIR": str(tmp_path)}))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "step preflight-libs: ok" in p.stdout and "step env: ok" in p.stdout, p.stdout
    summary = (tmp_path / "out" / "rerun-summary.md").read_text()
    assert "bundle: trainscope GPU bundle, made " in summary and f"{tmp_path}/ts-gpu-bundle." in summary, summary
