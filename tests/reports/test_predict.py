"""`trainscope predict`: the alpha-beta fits of collective records, the algorithm-aware form at other group sizes,
the held-out check, and the command's one-line errors. Synthetic records made from a known alpha and beta, so each
expected figure is exact (no timing here)."""
import json

import pytest
from synthetic import make_doc, make_record

from reports.__main__ import main
from reports.common.collective_facts import collective
from reports.predict.check import holdouts
from reports.predict.fit import fit
from reports.predict.formulas import Point, fit_algorithm
from reports.predict.series import all_series
from reports.common.load import Result

SIZES = [8 * 4 ** k for k in range(8)]  # 8 B .. 128 KiB
ALPHA, BETA = 3.25, 7.5e-4  # per step: us, us per byte


def ring_time(op, ranks, nbytes, alpha=ALPHA, beta=BETA):
    """The algorithm's cost written out (docs/prediction.md), not read from the code under test: (p-1)/p as 1 - 1/p."""
    passes = 2 if op == "all_reduce" else 1
    return passes * ((ranks - 1) * alpha + (1 - 1 / ranks) * nbytes * beta)


def record(op, ranks, nbytes, t_us, transport=None, dtype="float32"):
    r = make_record(op=op, nbytes=nbytes, samples=[t_us] * 5, dtype=dtype)
    r["ranks"] = r["processes"] = ranks
    if transport:
        r["transport"] = transport
    return r


def calibration(write_doc, records, name="cal.json"):
    return str(write_doc(name, make_doc(records)))


def test_the_fit_recovers_a_known_alpha_and_beta():
    f = fit(SIZES, [ALPHA + n * BETA for n in SIZES])
    assert f.alpha_us == pytest.approx(ALPHA, rel=1e-9) and f.beta_us_per_byte == pytest.approx(BETA, rel=1e-9)
    assert f.max_relative_error < 1e-9


def test_the_fit_weighs_each_point_by_its_relative_error():
    """One point 10% off at the largest size moves the small sizes' prediction little: relative weighting."""
    times = [ALPHA + n * BETA for n in SIZES]
    times[-1] *= 1.1
    f = fit(SIZES, times)
    assert abs(f.time_us(SIZES[0]) / times[0] - 1) < 0.05


def test_a_negative_latency_is_dropped_and_the_bandwidth_refitted():
    f = fit([1000, 2000, 4000], [0.5, 2.0, 4.0])  # a line through them would cross zero above 0 bytes
    assert f.alpha_us == 0.0 and f.beta_us_per_byte > 0


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "alltoall"])
def test_the_ring_form_carries_a_fit_to_another_group_size_exactly(op):
    points = [Point(4, n, ring_time(op, 4, n)) for n in SIZES]
    m = fit_algorithm(collective(op), points)
    assert m.per_step.alpha_us == pytest.approx(ALPHA, rel=1e-9)
    for ranks in (2, 8, 64):
        assert m.time_us(ranks, 1 << 20) == pytest.approx(ring_time(op, ranks, 1 << 20), rel=1e-9)


def test_a_broadcast_is_taken_as_measured_at_any_group_size():
    points = [Point(2, n, ALPHA + n * BETA) for n in SIZES]
    m = fit_algorithm(collective("broadcast"), points)
    assert m.time_us(16, 4096) == pytest.approx(ALPHA + 4096 * BETA, rel=1e-9)


def test_the_command_predicts_the_formulas_value_and_says_it_extrapolates(write_doc, tmp_path, capsys):
    cal = calibration(write_doc, [record("all_reduce", 2, n, ring_time("all_reduce", 2, n)) for n in SIZES])
    out = tmp_path / "p.json"
    assert main(["predict", "collectives", "--calibration", cal, "--op", "all_reduce", "--bytes", "1K,1M", "--ranks", "8",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "carried from 2 ranks by the 2(n-1)/n form" in text and "size, group size" in text
    doc = json.loads(out.read_text())
    p1k, p1m = doc["predictions"]
    assert p1k["time_us"] == pytest.approx(ring_time("all_reduce", 8, 1024), rel=1e-9)
    assert p1k["extrapolated"] == ["group size"] and p1m["extrapolated"] == ["size", "group size"]
    assert p1m["busbw_gbps"] == pytest.approx((1 << 20) / p1m["time_us"] / 1e3 * 2 * 7 / 8, rel=1e-12)
    assert doc["band_relative"] < 1e-9 and doc["fitted_ranks"] == [2]
    assert doc["alpha_us"] == pytest.approx(14 * ALPHA, rel=1e-9)


def test_the_band_is_the_fits_largest_relative_residual(write_doc, tmp_path):
    times = [ALPHA + n * BETA for n in SIZES]
    times[3] *= 1.2
    cal = calibration(write_doc, [record("all_gather", 2, n, t) for n, t in zip(SIZES, times)])
    out = tmp_path / "p.json"
    assert main(["predict", "collectives", "--calibration", cal, "--op", "all_gather", "--bytes", "4K", "--ranks", "2",
                 "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    f = fit(SIZES, times)
    (p,) = doc["predictions"]
    assert p["extrapolated"] == [] and doc["band_relative"] == pytest.approx(f.max_relative_error, rel=1e-12)
    assert (p["low_us"], p["high_us"]) == pytest.approx((p["time_us"] * (1 - f.max_relative_error),
                                                         p["time_us"] * (1 + f.max_relative_error)), rel=1e-12)


def test_the_holdout_of_an_exact_series_has_no_error():
    points = [Point(2, n, ALPHA + n * BETA) for n in SIZES] + [Point(4, n, ring_time("all_gather", 4, n, 2 * ALPHA, BETA))
                                                               for n in SIZES]
    checks = holdouts(all_key("all_gather"), points)
    assert [(h.ranks, h.held, h.fitted_on, len(h.errors)) for h in checks] == [
        (2, "sizes", 4, 4), (4, "sizes", 4, 4), (2, "group size", 8, 8), (4, "group size", 8, 8)]
    assert all(h.max_abs < 1e-9 for h in checks[:2])


def all_key(op):
    (key,) = all_series([Result("x", make_doc([]), records=[record(op, 2, 8, 1.0)])])
    return key


def test_check_prints_each_series_and_the_overall_error(write_doc, capsys):
    recs = [record("reduce_scatter", 2, n, ALPHA + n * BETA * (1.1 if k % 2 else 1.0), transport=t)
            for t in ("shm", "tcp") for k, n in enumerate(SIZES)]
    assert main(["predict", "check", "--calibration", calibration(write_doc, recs)]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [ln.split() for ln in lines if not ln.startswith("#")]
    assert [r[:6] for r in rows] == [["reduce_scatter", t, "float32", "out", "2", "sizes"] for t in ("shm", "tcp")]
    assert lines[-1].startswith("# all: 8 held-out point(s) in 2 check(s)")


@pytest.mark.parametrize(("args", "says"), [
    (["--op", "broadcast"], "holds no usable broadcast record (it has: all_reduce)"),
    (["--transport", "ib"], "holds no all_reduce records with transport ib (it has: shm, tcp)"),
    ([], "holds all_reduce records of several transports (shm, tcp): give --transport"),
    (["--transport", "shm", "--ranks", "1"], "--ranks 1: a collective's group size, 2 or more"),
    (["--transport", "shm", "--bytes", "1X"], "--bytes '1X': a size in bytes"),
    (["--transport", "shm", "--placement", "in"], "holds no all_reduce records with placement in (it has: out)"),
    (["--transport", "shm", "--fabric", "infiniband"], "--fabric 'infiniband' is not a fabric of the datasheet (nvlink2,"),
])
def test_a_calibration_without_what_is_asked_is_one_line_and_exit_2(write_doc, capsys, args, says):
    cal = calibration(write_doc, [record("all_reduce", 2, n, ALPHA + n * BETA, transport=t) for t in ("shm", "tcp")
                                  for n in SIZES])
    base = {"--op": "all_reduce", "--bytes": "1M", "--ranks": "2"}
    given = dict(base, **dict(zip(args[::2], args[1::2])))
    assert main(["predict", "collectives", "--calibration", cal, *[x for kv in given.items() for x in kv]]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("trainscope: error: ") and says in line, line
    assert captured.out == ""


def test_two_algorithms_of_one_op_are_not_pooled(write_doc, capsys):
    recs = [dict(record("reduce_scatter", 2, n, ALPHA + n * BETA), algo=a) for a in ("block", "counts") for n in SIZES]
    assert main(["predict", "collectives", "--calibration", calibration(write_doc, recs), "--op", "reduce_scatter",
                 "--bytes", "1M", "--ranks", "2"]) == 2
    assert "holds reduce_scatter records of several algos (block, counts): give calibration results that measured one" \
        in capsys.readouterr().err


def test_one_measured_size_is_too_few_to_fit(write_doc, capsys):
    cal = calibration(write_doc, [record("all_reduce", 2, 1024, 10.0)])
    assert main(["predict", "collectives", "--calibration", cal, "--op", "all_reduce", "--bytes", "1M", "--ranks", "2"]) == 2
    assert "1 measured size(s); a fit of alpha and beta needs at least 2" in capsys.readouterr().err


def test_check_with_nothing_to_hold_out_is_one_line(write_doc, capsys):
    cal = calibration(write_doc, [record("all_reduce", 2, n, 10.0 + n) for n in (8, 16)])
    assert main(["predict", "check", "--calibration", cal]) == 2
    assert "no series with 3 or more measured sizes" in capsys.readouterr().err


def test_a_fabric_what_if_moves_each_step_at_the_datasheets_bandwidth(write_doc, tmp_path, capsys):
    """--fabric: the fitted alpha, each step's beta 1 / the fabric's per-direction GB/s (reports/schema/link-datasheet.json:
    InfiniBand NDR 400 Gb/s = 50 GB/s), no band; the output names the fastest and by how much."""
    cal = calibration(write_doc, [record("all_reduce", 2, n, ring_time("all_reduce", 2, n)) for n in SIZES])
    out = tmp_path / "w.json"
    assert main(["predict", "collectives", "--calibration", cal, "--op", "all_reduce", "--bytes", "8,16M", "--ranks", "8",
                 "--fabric", "ib-ndr", "--fabric", "ethernet-10g", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    doc = json.loads(out.read_text())
    ndr, eth = doc["what_if"]
    assert (ndr["fabric"], ndr["gbps"], eth["fabric"], eth["gbps"]) == ("ib-ndr", 50.0, "ethernet-10g", 1.25)
    for w in (ndr, eth):
        for p, n in zip(w["predictions"], (8, 16 << 20)):
            expected = ring_time("all_reduce", 8, n, beta=1 / (w["gbps"] * 1e3))
            assert p["time_us"] == pytest.approx(expected, rel=1e-9)
            assert p["low_us"] == p["high_us"] == p["time_us"]
    here = doc["predictions"][1]["time_us"]  # 16 MiB at this calibration's 7.5e-4 us/B a step: 1.33 GB/s
    assert f"# 16M: ib-ndr fastest, {here / ndr['predictions'][1]['time_us']:.2f}x this cluster's link" in text
    assert "# what-if ib-ndr: InfiniBand NDR 400 Gb/s, 50.000 GB/s per direction (datasheet)" in text
