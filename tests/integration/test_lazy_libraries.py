"""cuBLASLt is loaded when first used, not when trainscope starts (kernels/cuda/cublaslt_library.h): linked, its
relocations cost every process of the CUDA build 0.1 s of CPU and 26,000 page faults before main, most of them
processes that never run a GPU GEMM. The binary does not link it; on a host without a usable GPU no run opens it
(the record's cuBLAS version is null: none was used); where a GPU is usable the run opens it and records its version,
and a library that cannot be loaded leaves that version unknown, not a crash."""
import json
import subprocess
from pathlib import Path

import pytest

from helpers import base_env, loaded_later, trainscope_path


def cuda_build():
    ldd = subprocess.run(["ldd", trainscope_path()], capture_output=True, text=True).stdout
    if "libcudart" not in ldd:
        pytest.skip("a build without CUDA has no cuBLASLt to load")
    return ldd


def opened_libraries(args, env=None):
    """The shared objects the dynamic loader initialised while trainscope ran `args` (LD_DEBUG=libs)."""
    r = subprocess.run([trainscope_path(), *args], capture_output=True, text=True, timeout=120,
                       env=base_env({"LD_DEBUG": "libs", **(env or {})}))
    return r, [line.split("calling init:")[1].strip() for line in r.stderr.splitlines() if "calling init:" in line]


def test_the_binary_does_not_link_cublaslt():
    assert "libcublasLt" not in cuda_build()


def test_a_host_without_a_usable_gpu_never_opens_cublaslt(tmp_path):
    cuda_build()
    r, opened = opened_libraries(["train", "--model", "mlp", "--preset", "tiny", "--steps", "3", "--warmup-steps", "1",
                                  "--no-ceiling", "--json", str(tmp_path / "train.json")])
    assert r.returncode == 0, r.stderr[-2000:]
    assert not [lib for lib in opened if "libcublasLt" in lib], opened
    assert set(find_all(json.loads((tmp_path / "train.json").read_text()), "cublas")) == {None}  # not asked: no GPU


def test_where_a_gpu_is_usable_the_run_opens_cublaslt_and_records_its_version(tmp_path):
    cuda_build()
    fake = Path(trainscope_path()).parent / "tests" / "libts_fake_gpu.so"  # one H200 that answers every query
    if not fake.exists():
        pytest.skip(f"no fake GPU library at {fake}")
    r, opened = opened_libraries(["env", "--json", str(tmp_path / "env.json")],
                                 {"LD_PRELOAD": str(fake), "TS_FAKE_GPU": "h200:1"})
    assert r.returncode == 0, r.stderr[-2000:]
    (loaded,) = {lib for lib in opened if "libcublasLt.so." in lib}
    # What the GPU scripts check before a run (the build's list, kernels/CMakeLists.txt) is what the run opens.
    assert Path(loaded).name in loaded_later(), (loaded, loaded_later())
    major = loaded.rsplit("libcublasLt.so.", 1)[1].split(".")[0]
    (cublas,) = {v for v in find_all(json.loads((tmp_path / "env.json").read_text()), "cublas") if v is not None}
    assert cublas.split(".")[0] == major

    broken = tmp_path / "lib"  # found first on LD_LIBRARY_PATH, and not a library: the version is unknown, no more
    broken.mkdir()
    (broken / loaded.rsplit("/", 1)[1]).write_bytes(b"")
    r = subprocess.run([trainscope_path(), "env", "--json", str(tmp_path / "env2.json")], capture_output=True, text=True,
                       timeout=120, env=base_env({"LD_LIBRARY_PATH": str(broken), "LD_PRELOAD": str(fake), "TS_FAKE_GPU": "h200:1"}))
    assert r.returncode == 0, r.stderr
    assert set(find_all(json.loads((tmp_path / "env2.json").read_text()), "cublas")) == {None}


def find_all(doc, key):
    """Every value of `key` anywhere in a JSON document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k == key:
                yield v
            yield from find_all(v, key)
    elif isinstance(doc, list):
        for v in doc:
            yield from find_all(v, key)
