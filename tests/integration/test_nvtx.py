"""NVTX ranges, seen through NVTX's own injection interface (tests/tools/nvtx_recorder.cpp receives the
calls Nsight Systems would): the "trainscope" domain, its named categories, every phase of a training step
nested as it runs, the data-parallel collectives as start/end ranges, and the collectives benchmark."""
from collections import Counter
from pathlib import Path

import pytest

from helpers import run_trainscope, trainscope_path

RECORDER = Path(trainscope_path()).parent / "tests" / "libts_nvtx_recorder.so"
pytestmark = pytest.mark.skipif(not RECORDER.exists(), reason=f"built without NVTX (no {RECORDER})")


class Log:
    """One process's NVTX calls: pushes with the depth they opened at, and the start/end ranges."""

    def __init__(self, path):
        self.domains, self.categories, self.pushes, self.starts, self.ends = [], {}, [], {}, set()
        depth = 0
        for line in path.read_text().splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "domain":
                self.domains.append(rest)
            elif kind == "category":
                cid, name = rest.split(" ", 1)
                self.categories[int(cid)] = name
            elif kind == "push":
                cat, payload, message = rest.split(" ", 2)
                self.pushes.append({"category": int(cat), "payload": None if payload == "-" else int(payload), "message": message, "depth": depth})
                depth += 1
            elif kind == "pop":
                depth -= 1
                assert depth >= 0, f"{path}: a pop without a push"
            elif kind == "start":
                rid, cat, message = rest.split(" ", 2)
                self.starts[int(rid)] = (int(cat), message)
            elif kind == "end":
                self.ends.add(int(rest))
        self.final_depth = depth

    def category_of(self, message):
        cats = {self.categories[p["category"]] for p in self.pushes if p["message"] == message}
        assert len(cats) == 1, (message, cats)
        return cats.pop()


def recorded(tmp_path, args, np=None):
    r = run_trainscope(args, np=np, env={"NVTX_INJECTION64_PATH": str(RECORDER), "TS_NVTX_LOG": str(tmp_path / "nvtx")})
    assert r.rc == 0, r.err
    logs = [Log(p) for p in sorted(tmp_path.glob("nvtx.*"))]
    assert len(logs) == (np or 1)
    for log in logs:
        assert log.domains == ["trainscope"]
        assert log.final_depth == 0, "every pushed range is popped"
        assert log.ends == set(log.starts), "every started range is ended"
    return logs


def test_a_training_step_is_nested_ranges_by_category(tmp_path):
    (log,) = recorded(tmp_path, ["train", "--model", "mlp", "--preset", "tiny", "--steps", 3, "--warmup-steps", 1, "--micro-batches", 2,
                                 "--no-ceiling", "--json", tmp_path / "r.json"])
    assert set(log.categories.values()) >= {"compute", "communication", "data", "optimizer", "step"}
    steps = [p for p in log.pushes if p["message"] == "step"]
    assert [p["payload"] for p in steps] == [0, 1, 2] and all(p["depth"] == 0 for p in steps)
    assert log.category_of("step") == "step"
    assert log.category_of("data") == "data"
    assert log.category_of("forward") == "compute" and log.category_of("backward") == "compute"
    assert log.category_of("optimizer") == "optimizer"
    counts = Counter(p["message"] for p in log.pushes)
    assert counts["forward"] == counts["backward"] == 3 * 2 and counts["optimizer"] == 3  # --steps counts the warm-up; two micro-batches a step
    assert {p["payload"] for p in log.pushes if p["message"] == "forward"} == {0, 1}
    layers = [p for p in log.pushes if p["message"] == "forward layer"]
    assert layers and all(p["depth"] == 2 for p in layers), "layers open inside the step's forward"


def test_data_parallel_collectives_are_ranges_on_every_rank(tmp_path):
    logs = recorded(tmp_path, ["train", "--model", "mlp", "--preset", "tiny", "--steps", 2, "--warmup-steps", 0, "--dp", 2, "--no-ceiling",
                               "--json", tmp_path / "r.json"], np=2)
    for log in logs:
        reduces = [cat for cat, message in log.starts.values() if message == "all_reduce"]
        assert reduces and all(log.categories[c] == "communication" for c in reduces)
        assert log.category_of("sync") == "communication"


def test_the_collectives_benchmark_names_each_measurement(tmp_path):
    (log,) = recorded(tmp_path, ["collectives", "--backend", "mpi", "--ops", "all_reduce,broadcast", "-b", "1K", "-e", "4K", "-f", 4, "-n", 2,
                                 "-w", 1, "--json", tmp_path / "c.json"])
    named = [p["message"] for p in log.pushes if log.categories[p["category"]] == "communication"]
    assert any(m.startswith("all_reduce") for m in named) and any(m.startswith("broadcast") for m in named), named
