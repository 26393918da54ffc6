"""`trainscope collectives --ops alltoallv` under mpirun at 3 ranks: each --alltoallv-counts pattern (uniform, skewed, a
file with zero blocks and a rank that receives nothing) checks clean in several dtypes and both MPI forms, its records
follow the formulas of docs/architecture.md ("Formulas": bytes = count x the busiest rank's units x the element size),
uniform counts move exactly what alltoall moves, a planted wrong element is caught, and bad counts are one line and
exit 2 before any work."""
import json

import pytest

from helpers import measurements, run_trainscope
from reports.common.collective_facts import bus_factor

NP = 3
SKEWED_3 = [[3, 0, 1], [3, 1, 0], [3, 1, 1]]  # ExchangeMatrix::skewed(3): rank 0 hot, zero blocks 0->1 and 1->2
ROUTED_3 = [[0, 5, 2], [0, 0, 7], [0, 1, 3]]  # rank 0 receives nothing, rank 1 keeps nothing, 1 -> 0 and 0 -> 0 empty
ELT = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int32": 4, "int8": 1, "uint8": 1}


def busiest(w):
    n = len(w)
    return max(max(sum(row) for row in w), max(sum(w[s][d] for s in range(n)) for d in range(n)))


def counts_file(tmp_path, weights):
    path = tmp_path / "counts.json"
    path.write_text(json.dumps({"counts": weights, "source": "a MoE layer's routing, by hand"}))
    return str(path)


@pytest.mark.parametrize("pattern", ["uniform", "skewed", "file"])
def test_each_pattern_checks_clean_and_follows_the_formulas(pattern, tmp_path, validate):
    weights = {"uniform": [[1] * NP] * NP, "skewed": SKEWED_3, "file": ROUTED_3}[pattern]
    counts = counts_file(tmp_path, weights) if pattern == "file" else pattern
    out = tmp_path / "a2av.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "alltoall,alltoallv", "--alltoallv-counts", counts,
                        "-b", "8", "-e", "256K", "-f", "8", "-d", "float32,float16,int8,float64", "--issue", "both",
                        "-w", "1", "-n", "2", "--json", out], np=NP)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    v = [rec for rec in measurements(doc) if rec["op"] == "alltoallv"]
    dtypes, forms = ("float32", "float16", "int8", "float64"), ("blocking", "nonblocking")
    assert {(rec["dtype"], rec["issue"]) for rec in v} == {(t, i) for t in dtypes for i in forms}
    for rec in v:
        assert rec["check"] == {"performed": True, "passed": True, "wrong": 0}, rec
        assert not rec["in_place"]  # measured out of place only (comm/collectives/alltoallv.cpp says why)
        assert rec["alltoallv_counts"]["pattern"] == pattern and rec["alltoallv_counts"]["weights"] == weights
        assert rec["bytes"] == rec["count"] * busiest(weights) * ELT[rec["dtype"]]
        assert rec["bus_factor"] == pytest.approx(bus_factor("alltoall", NP))
        assert rec["algbw_gbps"] == pytest.approx(rec["bytes"] / (rec["time_us"]["median"] * 1e-6) / 1e9, rel=1e-12)
    if pattern == "file":
        assert v[0]["alltoallv_counts"]["file"] == counts
    section = f"--alltoallv-counts {counts}"
    # alltoallv: 4 dtypes x 2 forms; alltoall (no nonblocking MPI call here): 4 dtypes, blocking only
    assert r.out.count(section) == 8 and r.out.count("# Out of bounds values : 0 OK") == 8 + 4
    if pattern == "uniform":  # alltoall's exchange: the same sizes and counts as alltoall's records
        a = {(rec["dtype"], rec["bytes"], rec["count"]) for rec in measurements(doc)
             if rec["op"] == "alltoall" and not rec["in_place"]}
        assert {(rec["dtype"], rec["bytes"], rec["count"]) for rec in v if rec["issue"] == "blocking"} == a


def test_a_planted_wrong_element_is_caught(tmp_path, validate):
    # Skewed on 3 ranks: 9 units at the busiest rank, 36 B a unit in float32: 1152 B is 32 elements a unit.
    out = tmp_path / "corrupt.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "alltoallv", "--alltoallv-counts", "skewed",
                        "-b", "1152", "-e", "4608", "-f", "4", "-w", "1", "-n", "2", "--json", out], np=NP,
                       env={"TRAINSCOPE_FAULT": "corrupt:rank=2:op=alltoallv:bytes=1152"})
    assert r.rc == 1, r.err
    assert "result check failed: alltoallv float32 1.12 KiB out-of-place --alltoallv-counts skewed: 1 wrong element(s)" \
        in r.err, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    assert [(b["bytes"], b["check"]["wrong"]) for b in measurements(doc) if not b["check"]["passed"]] == [(1152, 1)]


BAD_COUNTS = [
    ({"counts": [[1, 2], [3, 4]]}, "a 2 x 2 matrix, but the run has 3 rank(s)"),
    ({"counts": [[1, 1, 1], [1, -2, 1], [1, 1, 1]]}, "counts[1][1] is -2: negative"),
    ({"counts": [[1, 1, 1], [1, 1.5, 1], [1, 1, 1]]}, "counts[1][1] is 1.5: not a whole number"),
    ({"counts": [[0, 0, 0], [0, 0, 0], [0, 0, 0]]}, "every entry is 0: the exchange moves nothing"),
    ({"counts": [[1, 1, 1], [1, 1], [1, 1, 1]]}, "counts[1] is not a row of 3 entries"),
    ({"weights": [[1]]}, "not an object whose \"counts\" is an n x n array"),
]


@pytest.mark.parametrize("doc,message", BAD_COUNTS, ids=[m.split(":")[0] for _, m in BAD_COUNTS])
def test_bad_counts_are_one_line_and_exit_2_before_any_work(doc, message, tmp_path):
    path = tmp_path / "counts.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "bad.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "alltoallv", "--alltoallv-counts", path, "--json", out],
                       np=NP)
    assert r.rc == 2, (r.rc, r.err)
    (line,) = r.error_lines()
    assert line.startswith(f"trainscope: error: --alltoallv-counts {path}: ") and message in line, r.err
    assert not out.exists()
    assert "alltoallv" not in r.out  # no section started


@pytest.mark.parametrize("args,message", [
    (["--alltoallv-counts", "skewd"], "--alltoallv-counts skewd: neither uniform, skewed nor an existing file"),
    (["--alltoallv-counts", "skewed", "--ops", "all_reduce"],
     "--alltoallv-counts skewed: applies to alltoallv, which --ops leaves out"),
])
def test_a_pattern_that_is_no_pattern_is_one_line(args, message, tmp_path):
    r = run_trainscope(["collectives", "--backend", "mpi", "--json", tmp_path / "x.json"] + args)
    assert r.rc == 2, (r.rc, r.err)
    assert r.error_lines() == [f"trainscope: error: {message}"], r.err


def test_a_file_that_cannot_be_read_is_one_line(tmp_path):
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "alltoallv", "--alltoallv-counts", tmp_path,
                        "--json", tmp_path / "x.json"])
    assert r.rc == 2, (r.rc, r.err)
    (line,) = r.error_lines()
    assert line.startswith(f"trainscope: error: --alltoallv-counts {tmp_path}: "), r.err
