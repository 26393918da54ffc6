"""scripts/gpu-predict.py (issue #41 on a GPU: the first contact's two-process layouts predicted from its calibration
steps) on a folder laid out as the first contact's logs, measured here on the CPU: the steps' file names, job, layouts
and micro-batches from scripts/gpu-plan.sh, two MPI ranks in place of the two processes on one GPU."""
import json
import re
import shutil
import subprocess

import pytest

from helpers import ROOT, base_env, run_trainscope

SCRIPT = ROOT / "scripts" / "gpu-predict.py"


def plan_values(name: str) -> list[str]:
    """A bash array of scripts/gpu-plan.sh, one element a line."""
    return subprocess.run(["bash", "-c", f'source "{ROOT}/scripts/gpu-plan.sh" && printf "%s\\n" "${{{name}[@]}}"'],
                          capture_output=True, text=True, check=True).stdout.splitlines()


def job_here() -> list[str]:
    """The pair's job without its --device cuda:0 (this host has none)."""
    job = plan_values("TS_GPU_PAIR_JOB")
    at = job.index("--device")
    return job[:at] + job[at + 2:]


def layouts() -> dict[str, list[str]]:
    return {name: flags.split() for name, flags in (entry.split(":", 1) for entry in plan_values("TS_GPU_PAIR_LAYOUTS"))}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("first-contact-logs")
    job, batch = job_here(), plan_values("TS_GPU_PAIR_BATCH")[0]
    runs = [([*job, "--batch", batch, *flags, "--json", d / f"pair-train-{name}.json"], 2)
            for name, flags in layouts().items()]
    for b in map(int, plan_values("TS_GPU_CALIBRATION_MICRO_BATCHES")):
        runs += [([*job, "--batch", b, "--json", d / f"cal-b{b}.json"], None),
                 ([*job, "--batch", 2 * b, "--dp", "2", "--json", d / f"pair-cal-dp-b{b}.json"], 2)]
    runs.append((["collectives", "--backend", "mpi", "--ops", "all_reduce,all_gather,reduce_scatter,sendrecv,send",
                  "-b", "8", "-e", "1M", "-f", "8", "-n", "5", "-w", "1", "--json", d / "pair-nccl.json"], 2))
    for args, np in runs:
        r = run_trainscope(args, np=np)
        assert r.rc == 0, r.err
    return d


def predict(logs, out, timeout=300):
    return subprocess.run(["/usr/bin/python3", SCRIPT, logs, "--out", out], capture_output=True, text=True,
                          timeout=timeout, env=base_env())


def test_each_pair_layout_is_predicted_from_its_own_command_line_and_the_calibration_steps(logs, tmp_path):
    p = predict(logs, tmp_path / "out")
    assert p.returncode == 0, p.stdout + p.stderr
    rows = [line.split() for line in p.stdout.splitlines() if line.startswith("  ")]
    assert len(rows) == len(layouts()), p.stdout
    for name, flags in layouts().items():
        measured = json.loads((logs / f"pair-train-{name}.json").read_text())
        train = next(r for r in measured["records"] if r["kind"] == "train")
        # The plan is of the job that ran: its layout, micro-batch and world size.
        plan = [r for r in json.loads((tmp_path / "out" / f"plan-{name}.json").read_text())["records"]
                if r["kind"] == "train_plan"]
        assert len(plan) == train["world_size"] and {r["layout"] for r in plan} == {train["layout"]["name"]}, name
        for tag, kind in (("alone", "one-process train"), ("with-pair-dp", None)):
            record = json.loads((tmp_path / "out" / f"predict-{name}-{tag}.json").read_text())["records"][0]
            step = record["measured"]["step_us"]
            assert record["measured"]["source"] == str(logs / f"pair-train-{name}.json")
            assert record["measured"]["error"] == pytest.approx((record["step_us"] - step) / step)
            row = next(r for r in rows if f"{record['step_us'] / 1e3:.3f}" in r)
            assert f"{record['measured']['error']:+.1%}" in row, (row, record["measured"])
            log = (tmp_path / "out" / f"predict-{name}-{tag}.log").read_text()
            compute = next(line for line in log.splitlines() if line.startswith("# compute:"))
            if kind:
                assert kind in compute, compute
    # Data parallelism at its micro-batch takes the two processes' run at it where that column has them.
    dp = next(n for n, f in layouts().items() if "--dp" in f)
    log = (tmp_path / "out" / f"predict-{dp}-with-pair-dp.log").read_text()
    assert re.search(r"^# compute: 2-rank data-parallel train .*pair-cal-dp-b\d+\.json", log, re.M), log
    assert re.search(rf"^# alone: median \|error\| [\d.]+% over {len(layouts())} layout\(s\)", p.stdout, re.M), p.stdout


def test_a_folder_without_the_calibration_is_one_line_and_a_failed_run_is_its_row(logs, tmp_path):
    p = predict(tmp_path, tmp_path / "out")
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        f"gpu-predict: error: {tmp_path} holds no pair-nccl.json, cal-b*.json, pair-train-*.json (the first contact's "
        "steps pair-nccl, cal-b*, pair-train-*)"], p.stderr
    # A run that failed on the device (its record not completed), and no pair-cal-dp runs (those steps skipped).
    d = tmp_path / "logs"
    shutil.copytree(logs, d, ignore=shutil.ignore_patterns("pair-cal-dp-*", "predict"))
    failed = d / "pair-train-tp.json"
    doc = json.loads(failed.read_text())
    for r in doc["records"]:
        r["completed"] = False
    failed.write_text(json.dumps(doc))
    # A command line that names files to write: under --plan nothing is written but the plan.
    edited = d / "pair-train-dp.json"
    doc = json.loads(edited.read_text())
    doc["run"]["command_line"] += ["--mllog", str(tmp_path / "w.mllog"), "--trace", str(tmp_path / "w-trace"),
                                   "--dump-logits", str(tmp_path / "w.json"), "--checkpoint-dir", str(tmp_path / "w-ck")]
    edited.write_text(json.dumps(doc))
    p = predict(d, tmp_path / "out2")
    assert not [f for f in tmp_path.iterdir() if f.name.startswith("w")], sorted(tmp_path.iterdir())
    assert p.returncode == 1, p.stdout + p.stderr
    assert "  pair-train-tp" in p.stdout and "not predicted: the run did not complete" in p.stdout, p.stdout
    assert f"# no 'with pair dp' column: {d} holds no cal-b*.json or pair-cal-dp-b*.json" in p.stdout
    assert re.search(rf"^# alone: median \|error\| [\d.]+% over {len(layouts()) - 1} layout\(s\)", p.stdout, re.M), p.stdout


def test_a_bad_folder_or_build_is_one_line_and_a_command_line_not_of_train_is_its_row(logs, tmp_path):
    for args, text in (([tmp_path / "none"], f"{tmp_path / 'none'}: not a folder"),
                       ([logs, "--trainscope", tmp_path / "no-build"], f"{tmp_path / 'no-build'}: no trainscope build here")):
        p = subprocess.run(["/usr/bin/python3", SCRIPT, *args, "--out", tmp_path / "out"], capture_output=True, text=True,
                           timeout=60, env=base_env())
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and text in p.stderr, p.stderr
    d = tmp_path / "logs"
    shutil.copytree(logs, d, ignore=shutil.ignore_patterns("predict"))
    doc = json.loads((d / "pair-train-pp.json").read_text())
    doc["run"]["command_line"][1] = "collectives"  # a record whose command line would run something else
    (d / "pair-train-pp.json").write_text(json.dumps(doc))
    p = predict(d, tmp_path / "out3")
    assert p.returncode == 1 and "pair-train-pp            not predicted: not a train command line: collectives" in p.stdout, \
        p.stdout
    assert not (tmp_path / "out3" / "plan-pp.json").exists()
