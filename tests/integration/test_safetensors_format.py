"""trainscope's .safetensors files, read by an independent parser written here with numpy (the format as
Hugging Face specifies it, not trainscope's reader): the byte layout, every dtype, an empty tensor, a
scalar and the metadata. The file comes from the unit test Safetensors.WritesTheSampleForThePythonFormatTest,
which writes it where TS_SAFETENSORS_SAMPLE says; the values below are the ones it writes."""
import json
import os
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def unit_test_binary() -> Path:
    if "TS_UNIT_TESTS" in os.environ:
        return Path(os.environ["TS_UNIT_TESTS"])
    trainscope = Path(os.environ.get("TRAINSCOPE", ROOT / "build" / "trainscope"))
    return trainscope.parent / "tests" / "ts_unit_tests"


def bfloat16_to_float32(raw: np.ndarray) -> np.ndarray:
    return (raw.astype(np.uint32) << 16).view(np.float32)


NUMPY_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I8": "i1", "U8": "u1"}
SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I8": 1, "U8": 1}


def parse(path: Path):
    """Returns (metadata, {name: array}, header key order), asserting the format's rules on the way."""
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0, "the data buffer starts 8-byte aligned"
    raw_header = data[8 : 8 + n].decode("utf-8")
    assert raw_header.startswith("{")
    assert raw_header.rstrip(" ").endswith("}"), "the JSON, then spaces up to the multiple of 8"
    header = json.loads(raw_header)
    buffer = data[8 + n :]
    metadata = header.pop("__metadata__", {})
    spans = sorted((e["data_offsets"][0], e["data_offsets"][1], name) for name, e in header.items())
    end = 0
    for begin, stop, name in spans:
        assert begin == end, f"{name}: tensors are contiguous"
        end = stop
    assert end == len(buffer), "the tensors cover the whole buffer"
    tensors = {}
    for name, e in header.items():
        begin, stop = e["data_offsets"]
        shape = tuple(e["shape"])
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        assert stop - begin == count * SIZES[e["dtype"]], name
        chunk = buffer[begin:stop]
        if e["dtype"] == "BF16":
            array = bfloat16_to_float32(np.frombuffer(chunk, dtype="<u2"))
        else:
            array = np.frombuffer(chunk, dtype=NUMPY_DTYPES[e["dtype"]])
        tensors[name] = (e["dtype"], array.reshape(shape))
    return metadata, tensors, list(header)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    binary = unit_test_binary()
    if not binary.exists():
        pytest.skip(f"unit test binary not found at {binary} (set TS_UNIT_TESTS or TRAINSCOPE)")
    path = tmp_path_factory.mktemp("st") / "sample.safetensors"
    proc = subprocess.run(
        [str(binary), "--gtest_filter=Safetensors.WritesTheSampleForThePythonFormatTest"],
        env={**os.environ, "TS_SAFETENSORS_SAMPLE": str(path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert path.exists()
    return path


def test_every_dtype_reads_back_exactly(sample):
    metadata, tensors, order = parse(sample)
    assert metadata == {"format": "pt", "note": "trainscope sample"}
    assert order == ["weight", "bf16", "half", "ids", "big", "bytes", "int8", "empty", "scalar"], "the order written"
    expected = {
        "weight": ("F32", np.array([[-1.0, -0.5, 0.0], [0.5, 1.0, 1.5]], dtype=np.float32)),
        "bf16": ("BF16", np.array([1.0, -2.5, 3.140625, 0.0078125], dtype=np.float32)),
        "half": ("F16", np.array([0.5, -1.25, 65504.0], dtype=np.float16)),
        "ids": ("I32", np.array([[-1, 0], [7, 2147483647]], dtype=np.int32)),
        "big": ("I64", np.array([-(2**40), 2**62], dtype=np.int64)),
        "bytes": ("U8", np.array([0, 1, 127, 128, 255], dtype=np.uint8)),
        "int8": ("I8", np.array([-128, 0, 127], dtype=np.int8)),
        "empty": ("F32", np.zeros((0, 4), dtype=np.float32)),
        "scalar": ("F64", np.array(3.25, dtype=np.float64)),
    }
    assert set(tensors) == set(expected)
    for name, (dtype, values) in expected.items():
        got_dtype, got = tensors[name]
        assert got_dtype == dtype, name
        assert got.shape == values.shape, name
        assert got.dtype == values.dtype, name
        np.testing.assert_array_equal(got, values, err_msg=name)


def test_pytorch_style_loader_would_accept_the_header(sample):
    """What safetensors' own loader insists on beyond the layout: a header under 100 MB, metadata of
    strings only, known dtype names, and offsets as non-negative integer pairs."""
    data = sample.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    assert n < 100_000_000
    header = json.loads(data[8 : 8 + n])
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in header["__metadata__"].items())
    for name, e in header.items():
        if name == "__metadata__":
            continue
        assert set(e) == {"dtype", "shape", "data_offsets"}, name
        assert e["dtype"] in SIZES
        assert all(isinstance(d, int) and d >= 0 for d in e["shape"])
        assert len(e["data_offsets"]) == 2 and all(isinstance(o, int) and o >= 0 for o in e["data_offsets"])
