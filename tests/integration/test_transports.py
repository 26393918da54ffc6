"""Interconnect A/B on the CPU: `collectives --transports shm,tcp` re-launches itself once per Open MPI
transport, and merges both labelled series into one result."""
import json
import re
from pathlib import Path

import pytest

from helpers import measurements, run_trainscope


def test_shm_against_tcp_in_one_result(tmp_path, validate):
    out = tmp_path / "ab.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce,broadcast", "-b", "1K", "-e", "64K", "-f", "8", "-n", "3",
                        "--transports", "shm,tcp", "--launcher", "mpirun -np 2 --oversubscribe", "--json", out])
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    recs = measurements(doc)
    assert {x["transport"] for x in recs} == {"shm", "tcp"}
    for x in recs:
        assert x["transport_env"]["OMPI_MCA_btl"] == {"shm": "self,vader,tcp", "tcp": "self,tcp"}[x["transport"]]
        assert x["check"]["passed"] and x["ranks"] == 2
    by = {(x["transport"], x["op"], x["bytes"], x["in_place"]) for x in recs}
    assert len(by) == len(recs) == 2 * 2 * 3 * 2  # transports x ops x sizes x placements
    assert [l["step"] for l in doc["run"]["layouts"]] == ["shm", "tcp"]
    assert [v["name"] for v in doc["run"]["config"]["resolved"]["variants"]] == ["shm", "tcp"]
    assert "===== variant 1/2: shm" in r.out and "===== variant 2/2: tcp" in r.out
    assert not list(tmp_path.glob(".ab.json.parts*"))  # the per-variant files are cleaned up
    # ...and no line named them: every path printed exists after the run (issue #35).
    printed = re.findall(r"[\w./-]+\.jsonl?\b", r.out)
    assert str(out) in printed and all(Path(p).exists() for p in printed), printed
    assert r.out.count(f"# results: this variant's records go into {out} once every variant has run") == 2, r.out
    # The report draws one line per transport.
    rep = tmp_path / "rep"
    assert run_trainscope(["report", out, "-o", rep]).rc == 0
    assert "mpi/shm 2 ranks" in (rep / "index.html").read_text() and "mpi/tcp 2 ranks" in (rep / "index.html").read_text()


@pytest.mark.parametrize("args,np,message", [
    (["--transports", "shm,carrier-pigeon", "--json", "x.json"], None, "unknown transport 'carrier-pigeon' for the mpi backend (known: shm, tcp)"),
    (["--algos", "ring", "--json", "x.json"], None, "--algos and --protos are NCCL settings"),
    (["--transports", "shm"], None, "need --json FILE"),
    (["--launcher", "mpirun -np 2", "--json", "x.json"], None, "--launcher goes with --transports"),
    (["--transports", "shm", "--json", "x.json"], 2, "start trainscope without mpirun"),
])
def test_bad_variant_requests(args, np, message, tmp_path):
    args = [tmp_path / a if a == "x.json" else a for a in args]
    r = run_trainscope(["collectives", "--backend", "mpi"] + args, np=np)
    assert r.rc == 2, r.err
    assert len(r.error_lines()) == 1 and message in r.error_lines()[0], r.err


def test_a_failing_variant_keeps_every_measured_record(tmp_path, validate):
    """A planted wrong element fails both variants' checks: the merged result still holds every record,
    and the error names the first variant that failed."""
    out = tmp_path / "fail.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce", "-b", "1K", "-e", "4K", "-f", "4", "-n", "2",
                        "--transports", "shm,tcp", "--launcher", "mpirun -np 2 --oversubscribe", "--json", out],
                       env={"TRAINSCOPE_FAULT": "corrupt:rank=1:op=all_reduce:bytes=4K"})
    assert r.rc == 1, r.err
    assert "variant shm ended with exit code 1" in r.err
    doc = json.loads(out.read_text())
    validate(doc)
    assert {x["transport"] for x in measurements(doc)} == {"shm", "tcp"}
    assert [x["transport"] for x in measurements(doc) if not x["check"]["passed"]] == ["shm", "shm", "tcp", "tcp"]
