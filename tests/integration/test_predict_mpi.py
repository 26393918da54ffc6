"""`trainscope predict` on a real 2-rank MPI sweep, through the binary: `predict check` holds out measured sizes and
predicts them, `predict collectives` predicts sizes and a group size not measured. Structure only: every figure is
finite and positive and every measured series is checked; no timing threshold (the VM's noise is not the model's)."""
import json
import math

from helpers import run_trainscope


def test_predict_fits_a_real_sweep_and_predicts_its_held_out_sizes(tmp_path):
    cal = tmp_path / "sweep.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce,all_gather,reduce_scatter", "-b", "8",
                        "-e", "64K", "-f", "4", "-w", "1", "-n", "5", "--placement", "out", "--json", cal], np=2)
    assert r.rc == 0, r.err
    checked = tmp_path / "check.json"
    r = run_trainscope(["predict", "check", "--calibration", cal, "--json", checked])
    assert r.rc == 0, r.err
    checks = json.loads(checked.read_text())["checks"]
    assert sorted(c["series"]["op"] for c in checks) == ["all_gather", "all_reduce", "reduce_scatter"]
    for c in checks:
        assert c["ranks"] == 2 and c["held"] == "sizes" and c["fitted_on"] >= 2 and c["points"]
        for p in c["points"]:
            assert all(math.isfinite(p[k]) and p[k] > 0 for k in ("measured_us", "predicted_us")), p
    assert f"# all: {sum(len(c['points']) for c in checks)} held-out point(s) in {len(checks)} check(s)" in r.out

    predicted = tmp_path / "predict.json"
    r = run_trainscope(["predict", "collectives", "--calibration", cal, "--op", "all_reduce", "--bytes", "48,1M",
                        "--ranks", "4", "--json", predicted])
    assert r.rc == 0, r.err
    doc = json.loads(predicted.read_text())
    assert doc["fitted_ranks"] == [2] and doc["series"]["op"] == "all_reduce"
    assert [p["extrapolated"] for p in doc["predictions"]] == [["group size"], ["size", "group size"]]
    for p in doc["predictions"]:
        assert all(math.isfinite(p[k]) and p[k] > 0 for k in ("time_us", "high_us", "busbw_gbps")), p
        assert 0 <= p["low_us"] <= p["time_us"] <= p["high_us"]
