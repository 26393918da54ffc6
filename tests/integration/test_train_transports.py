"""The same training job on each fabric (issue #41): `train --transports shm,tcp` re-launches itself once per Open MPI
transport (the machinery of `collectives --transports`), merges the train records into one result, each labelled with
its transport and environment, prints the fabrics side by side, and the report tables them; `scale --transports` runs
each point once per transport. The fabric carries the same sums: the losses are the same on each."""
import json
import re
from pathlib import Path

import pytest

from helpers import measurements, run_trainscope

BASE = ["train", "--model", "mlp", "--preset", "tiny", "--batch", "16", "--steps", "4", "--no-ceiling"]
JOB = BASE + ["--warmup-steps", "1"]
ENV_OF = {"shm": "self,vader,tcp", "tcp": "self,tcp"}


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    out = tmp_path_factory.mktemp("fabrics") / "fabrics.json"
    r = run_trainscope(JOB + ["--transports", "shm,tcp", "--launcher", "mpirun -np 2 --oversubscribe", "--json", out,
                              "--trace", out.parent / "trace", f"--checkpoint-dir={out.parent / 'ckpt'}"])
    assert r.rc == 0, r.err
    return out, r


def test_one_train_record_per_transport_with_its_environment(merged, validate):
    out, r = merged
    doc = json.loads(out.read_text())
    validate(doc)
    trains = [x for x in measurements(doc) if x["kind"] == "train"]
    assert [x["transport"] for x in trains] == ["shm", "tcp"]
    for x in trains:
        assert x["transport_env"] == {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": ENV_OF[x["transport"]]}
        assert x["completed"] and x["world_size"] == 2 and x["layout"]["name"] == "dp=2"
        assert "algo" not in x and "proto" not in x  # NCCL's axes are the collectives' alone
    assert doc["run"]["subcommand"] == "train"
    assert [v["name"] for v in doc["run"]["config"]["resolved"]["variants"]] == ["shm", "tcp"]
    assert [layout["step"] for layout in doc["run"]["layouts"]] == ["shm", "tcp"]
    assert not list(out.parent.glob(".fabrics.json.parts*"))  # each run's own files are removed once merged


def test_each_run_writes_its_own_files(merged):
    """The paths a run writes are made each transport's own: no run overwrites another's trace or checkpoints."""
    folder = merged[0].parent
    for transport in ("shm", "tcp"):
        assert sorted(p.name for p in (folder / "trace" / transport).glob("rank-*.json")) == ["rank-0.json", "rank-1.json"]
        assert (folder / "ckpt" / transport / "latest").exists()


def test_the_fabric_does_not_change_the_math(merged):
    doc = json.loads(merged[0].read_text())
    curves = [[p["loss"] for p in x["loss_curve"]] for x in doc["records"] if x["kind"] == "train"]
    assert len(curves) == 2 and len(curves[0]) == 4 and curves[0] == curves[1]


def test_the_console_sets_the_fabrics_side_by_side(merged):
    out, r = merged
    lines = r.out.splitlines()
    assert "===== variant 1/2: shm" in r.out and "===== variant 2/2: tcp" in r.out
    head = next(i for i, line in enumerate(lines) if line.startswith("# transports side by side: mlp tiny dp=2, 2 rank(s)"))
    assert lines[head + 1].split() == ["#", "transport", "step(ms)", "exposed(ms)", "items/s", "step", "vs", "shm"]
    rows = [line.split() for line in lines[head + 2:head + 4]]
    assert [row[0] for row in rows] == ["shm", "tcp"] and rows[0][4] == "1.00x"
    doc = json.loads(out.read_text())
    for row, x in zip(rows, [x for x in doc["records"] if x["kind"] == "train"]):
        assert float(row[1]) == pytest.approx(x["step_time_us"]["median"] / 1e3, abs=5e-4)
        assert float(row[3]) == pytest.approx(x["throughput_per_s"], abs=0.05)
    assert lines[head + 4:] == ["#", f"# results: {out} (2 variants merged)"]


def test_the_report_tables_the_fabrics(merged, tmp_path):
    out, _ = merged
    rep = tmp_path / "rep"
    r = run_trainscope(["report", out, "-o", rep])
    assert r.rc == 0, r.err
    html = (rep / "index.html").read_text().replace("\n", "")
    assert "Fabrics side by side" in html
    for transport in ("shm", "tcp"):
        assert f"<td>mlp tiny dp=2</td><td>{transport}</td>" in html
    assert "mlp tiny dp=2 over tcp" in html


def test_a_run_that_fails_keeps_every_transports_records(tmp_path, validate):
    """A rank that dies in each transport's run: the merged result still holds what each measured, labelled, the summary
    names each transport that failed, and every file a line names exists once the command ends (issue #35)."""
    out = tmp_path / "fail.json"
    r = run_trainscope(JOB + ["--transports", "shm,tcp", "--launcher", "mpirun -np 2 --oversubscribe", "--json", out],
                       env={"TRAINSCOPE_FAULT": "die:rank=1:step=2"})
    assert r.rc != 0 and "variant shm ended with exit code" in r.err, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    assert {x["transport"] for x in measurements(doc) if x["kind"] in ("train", "train_progress")} == {"shm", "tcp"}
    for transport in ("shm", "tcp"):
        assert re.search(rf"^  {transport} +failed: ", r.out, re.M), r.out
    printed = re.findall(r"[\w./-]+\.jsonl?\b", r.out + r.err)
    assert str(out) in printed and all(Path(p).exists() for p in printed), printed


@pytest.mark.parametrize("args,np,message", [
    (["--transports", "shm,carrier-pigeon", "--json", "x.json"], None,
     "--transports: unknown transport 'carrier-pigeon' for the mpi backend (known: shm, tcp)"),
    (["--transports", "shm"], None, "--transports needs --json FILE for the merged result"),
    (["--launcher", "mpirun -np 2", "--json", "x.json"], None, "--launcher goes with --transports"),
    (["--transports", "shm", "--json", "x.json"], 2, "--transports launches one run per setting itself: start trainscope without mpirun"),
    (["--transports", "shm", "--json", "x.json", "--warmup-steps", "4"], None, "--warmup-steps 4 leaves none of the 4 steps"),
])
def test_bad_requests_are_one_line_and_run_nothing(args, np, message, tmp_path):
    args = [tmp_path / a if a == "x.json" else a for a in args]
    r = run_trainscope(BASE + args, np=np)
    assert r.rc == 2, r.err
    assert len(r.error_lines()) == 1 and message in r.error_lines()[0], r.err
    assert "===== variant" not in r.out and not list(tmp_path.iterdir())


def test_scale_runs_every_point_on_each_transport(tmp_path, validate):
    """`scale --transports`: each rank count once per transport, every record labelled, the efficiency of each transport
    against its own smallest point (a curve each: the series names the transport), the same losses on each."""
    out = tmp_path / "scale.json"
    r = run_trainscope(["scale", "--ranks", "1,2", "--batch", "8", "--transports", "shm,tcp", "--launcher-args=--oversubscribe",
                        "--model", "mlp", "--preset", "tiny", "--steps", "3", "--warmup-steps", "1", "--no-ceiling", "--json", out])
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    scaling = [x for x in doc["records"] if x["kind"] == "scaling"]
    assert [(x["transport"], x["ranks"]) for x in scaling] == [("shm", 1), ("shm", 2), ("tcp", 1), ("tcp", 2)]
    for x in scaling:
        assert x["completed"] and x["series"].endswith(f" over {x['transport']}")
        assert x["transport_env"]["OMPI_MCA_btl"] == ENV_OF[x["transport"]] and x["baseline_ranks"] == 1
    trains = [x for x in doc["records"] if x["kind"] == "train"]
    assert [(x["transport"], x["world_size"]) for x in trains] == [("shm", 1), ("shm", 2), ("tcp", 1), ("tcp", 2)]
    assert [p["loss"] for p in trains[1]["loss_curve"]] == [p["loss"] for p in trains[3]["loss_curve"]]
    assert "# over shm: Open MPI shared memory" in r.out and "# over tcp: Open MPI TCP" in r.out
    assert sorted(p.name for p in (tmp_path / "scale.json.points").glob("*.json")) == \
        ["ranks1-shm.json", "ranks1-tcp.json", "ranks2-shm.json", "ranks2-tcp.json"]


def test_scale_names_an_unknown_transport_before_any_point(tmp_path):
    r = run_trainscope(["scale", "--ranks", "1,2", "--transports", "shm,carrier-pigeon", "--model", "mlp", "--json",
                        tmp_path / "s.json"])
    assert r.rc == 2, r.err
    assert r.error_lines() == ["trainscope: error: --transports: unknown transport 'carrier-pigeon' for the mpi backend "
                               "(known: shm, tcp)"], r.err
    assert not list(tmp_path.iterdir())
