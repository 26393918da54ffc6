"""The memory account in the reports: `reports memory` prints every rank's memory by kind beside its layout's
formula, the training section draws it and tables it, and a record from before the accounts says so rather
than failing."""
import json
import subprocess
import sys

from synthetic import ROOT, make_doc
from test_training_mesh import Plots, parallel_record

from reports.common.load import Result
from reports.html.sections.training import TrainingSection

MIB = 2**20
KINDS = ("parameters", "gradients", "optimizer", "master_weights", "activations", "comm_buffers", "workspace")


def account(rank, params_mib, formula_mib):
    peaks = dict.fromkeys(KINDS, 0)
    peaks.update(parameters=params_mib * MIB, gradients=params_mib * MIB, optimizer=2 * params_mib * MIB, activations=MIB)
    states = 4 * params_mib * MIB
    return {"rank": rank, "peak_bytes": peaks, "total_peak_bytes": states + MIB, "setup_peak_bytes": states,
            "model_states_bytes": states,
            "formula_bytes": {"parameters": formula_mib / 4 * MIB, "gradients": formula_mib / 4 * MIB,
                              "optimizer": formula_mib / 2 * MIB, "master_weights": 0.0, "model_states": formula_mib * MIB}}


def zero3_record():
    rec = parallel_record([{"dp_rank": r, "tp_rank": 0, "pp_rank": 0} for r in range(2)])
    rec["layout"] = dict(rec["layout"], zero=3, name="dp=2 zero=3")
    rec["memory"] = {"limit_bytes": 400 * MIB, "ranks": [account(0, 66, 256), account(1, 66, 256)]}
    return rec


def run_memory(*paths):
    return subprocess.run([sys.executable, "-m", "reports", "memory", *map(str, paths)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def memory_of(tmp_path, validate, name, *records):
    """`reports memory` on a valid document of these records, written as NAME.json."""
    doc = make_doc(list(records))
    validate(doc)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return run_memory(path)


def test_reports_memory_prints_each_rank_beside_the_formula(tmp_path, validate):
    r = memory_of(tmp_path, validate, "zero3", zero3_record())
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines() if line.startswith("mlp tiny")]
    # run (4 words), rank, 7 kinds, model states, formula, ratio, peak
    assert [row[4] for row in rows] == ["0", "1"]
    assert rows[0][5:] == ["66.0", "66.0", "132.0", "0.0", "1.0", "0.0", "0.0", "264.0", "256.0", "1.031", "265.0"]


def test_a_recomputed_run_says_so_in_its_name(tmp_path, validate):
    rec = zero3_record()
    rec["memory"]["recompute"] = "full"
    r = memory_of(tmp_path, validate, "full", rec)
    assert r.returncode == 0, r.stderr
    assert [line.split()[:5] for line in r.stdout.splitlines() if line.startswith("mlp tiny")] == [
        ["mlp", "tiny", "dp=2", "zero=3", "recompute=full"]] * 2


def test_a_record_without_an_account_says_so(tmp_path, validate):
    rec = parallel_record([{"dp_rank": r, "tp_rank": 0, "pp_rank": 0} for r in range(2)])
    r = memory_of(tmp_path, validate, "old", rec)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("no train record carries a memory account")
    assert not [b for b in TrainingSection().build([Result(path="r.json", doc={}, records=[rec])], Plots())
                if b.get("file") == "training_memory"]


def test_the_training_section_draws_and_tables_the_memory():
    blocks = TrainingSection().build([Result(path="r.json", doc={}, records=[zero3_record()])], Plots())
    assert [b for b in blocks if b.get("file") == "training_memory"]
    (table,) = [b for b in blocks if b["kind"] == "table" and b["caption"].startswith("Memory per rank")]
    assert [row[1] for row in table["rows"]] == ["0", "1"]
    assert table["rows"][0][-2] == "1.031"
