"""`trainscope predict`: the alpha-beta fits of collective records (piecewise over protocol regimes), the
algorithm-aware form at other group sizes, the held-out check, and the command's one-line errors. Synthetic records made
from a known alpha and beta per regime, so each expected figure is exact (no timing here)."""
import json
import math
import random

import pytest
from synthetic import make_doc, make_record

from reports.__main__ import main
from reports.common.collective_facts import collective
from reports.predict.check import holdouts
from reports.predict.fit import SPLIT_GAIN, fit
from reports.predict.formulas import Point, fit_algorithm
from reports.predict.predict import Model, on_fabric
from reports.common.link_datasheet import Fabric
from reports.predict.series import all_series
from reports.common.load import Result

SIZES = [8 * 4 ** k for k in range(8)]  # 8 B .. 128 KiB
ALPHA, BETA = 3.25, 7.5e-4  # per step: us, us per byte


def ring_time(op, ranks, nbytes, alpha=ALPHA, beta=BETA):
    """The algorithm's cost written out (docs/prediction.md), not read from the code under test: (p-1)/p as 1 - 1/p."""
    passes = 2 if op == "all_reduce" else 1
    return passes * ((ranks - 1) * alpha + (1 - 1 / ranks) * nbytes * beta)


def record(op, ranks, nbytes, t_us, transport=None, dtype="float32", issue=None):
    r = make_record(op=op, nbytes=nbytes, samples=[t_us] * 5, dtype=dtype)
    r["ranks"] = r["processes"] = ranks
    if transport:
        r["transport"] = transport
    if issue:
        r["issue"] = issue
    return r


def calibration(write_doc, records, name="cal.json"):
    return str(write_doc(name, make_doc(records)))


def test_the_fit_recovers_a_known_alpha_and_beta():
    f = fit(SIZES, [ALPHA + n * BETA for n in SIZES])
    (r,) = f.regimes  # a clean line stays one line
    assert r.line.alpha_us == pytest.approx(ALPHA, rel=1e-9) and r.line.beta_us_per_byte == pytest.approx(BETA, rel=1e-9)
    assert (r.smallest, r.largest) == (SIZES[0], SIZES[-1]) and f.max_relative_error < 1e-9


def test_the_fit_weighs_each_point_by_its_relative_error():
    """One point 10% off at the largest size moves the small sizes' prediction little: relative weighting."""
    times = [ALPHA + n * BETA for n in SIZES]
    times[-1] *= 1.1
    f = fit(SIZES, times)
    assert abs(f.time_us(SIZES[0]) / times[0] - 1) < 0.05


def test_a_negative_latency_is_dropped_and_the_bandwidth_refitted():
    (r,) = fit([1000, 2000, 4000], [0.5, 2.0, 4.0]).regimes  # a line through them would cross zero above 0 bytes
    assert r.line.alpha_us == 0.0 and r.line.beta_us_per_byte > 0


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "alltoall"])
def test_the_ring_form_carries_a_fit_to_another_group_size_exactly(op):
    points = [Point(4, n, ring_time(op, 4, n)) for n in SIZES]
    m = fit_algorithm(collective(op), points)
    (r,) = m.per_step.regimes
    assert r.line.alpha_us == pytest.approx(ALPHA, rel=1e-9)
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
    (regime,) = doc["regimes"]
    assert regime["band_relative"] < 1e-9 and doc["fitted_ranks"] == [2] and regime["measured_bytes"] == [8, 128 << 10]
    assert regime["alpha_us"] == pytest.approx(14 * ALPHA, rel=1e-9)
    assert regime["per_step_alpha_us"] == pytest.approx(ALPHA, rel=1e-9)


@pytest.mark.parametrize("regimes", [1, 3])
def test_the_band_is_the_largest_relative_residual_of_the_regime_used(write_doc, tmp_path, regimes):
    """One point 20% off (512 B) on an exact line: with one line (--regimes 1) every size's band is the line's largest
    residual; in regimes (the rule cuts that point's run off, the other sizes lying on their line exactly) each size's
    band is its own regime's, so the point widens the small sizes' band only."""
    times = [ALPHA + n * BETA for n in SIZES]
    times[3] *= 1.2
    cal = calibration(write_doc, [record("all_gather", 2, n, t) for n, t in zip(SIZES, times)])
    out = tmp_path / "p.json"
    assert main(["predict", "collectives", "--calibration", cal, "--op", "all_gather", "--bytes", "64,64K", "--ranks", "2",
                 "--regimes", str(regimes), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    f = fit(SIZES, times, most=regimes)
    assert len(doc["regimes"]) == len(f.regimes) == (1 if regimes == 1 else 2)
    for p in doc["predictions"]:
        e = f.band(p["bytes"])
        (regime,) = p["regimes"]
        assert p["extrapolated"] == [] and doc["regimes"][regime]["band_relative"] == pytest.approx(e, rel=1e-12)
        assert (p["low_us"], p["high_us"]) == pytest.approx((p["time_us"] * (1 - e), p["time_us"] * (1 + e)), rel=1e-12)
    small, large = (p["high_us"] / p["time_us"] - 1 for p in doc["predictions"])
    assert small > 0.01 and (large == pytest.approx(small) if regimes == 1 else large < 1e-9)


SWEEP = [8 * 2 ** k for k in range(20)]  # 8 B .. 4 MiB, as `collectives -b 8 -e 4M -f 2` measures
EAGER, RENDEZVOUS, LARGE = (0.5, 2.0e-4), (4.0, 5.0e-5), (150.0, 1.0e-4)  # per step: alpha us, beta us per byte


def piecewise(nbytes, cuts=(16384,), lines=(EAGER, RENDEZVOUS)):
    """A time made of one line below each cut (the first size of the next regime) and the next line from it."""
    alpha, beta = lines[sum(nbytes >= c for c in cuts)]
    return alpha + nbytes * beta


def regimes_of(f):
    """Each regime's measured sizes, alpha and beta, in one flat list (pytest.approx compares flat sequences)."""
    return [x for r in f.regimes for x in (r.smallest, r.largest, r.line.alpha_us, r.line.beta_us_per_byte)]


def test_a_protocol_switch_is_two_regimes_cut_where_it_switches():
    f = fit(SWEEP, [piecewise(n) for n in SWEEP])
    assert regimes_of(f) == pytest.approx([8, 8192, *EAGER, 16384, 4 << 20, *RENDEZVOUS], rel=1e-9)
    assert f.max_relative_error < 1e-9


def test_two_switches_are_three_regimes():
    f = fit(SWEEP, [piecewise(n, (16384, 1 << 20), (EAGER, RENDEZVOUS, LARGE)) for n in SWEEP])
    assert regimes_of(f) == pytest.approx([8, 8192, *EAGER, 16384, 512 << 10, *RENDEZVOUS, 1 << 20, 4 << 20, *LARGE],
                                          rel=1e-9)


def test_one_regime_asked_is_one_line_through_the_switch():
    f = fit(SWEEP, [piecewise(n) for n in SWEEP], most=1)
    assert len(f.regimes) == 1 and f.max_relative_error > 0.5


def noisy(times, seed, spread):
    rng = random.Random(seed)  # a fixed seed: the same noise every run
    return [t * (1 + rng.uniform(-spread, spread)) for t in times]


@pytest.mark.parametrize("seed", range(5))
def test_noise_about_one_line_stays_one_line(seed):
    """10% noise at every size: a cut divides the squared residuals by less than SPLIT_GAIN, so no cut is taken."""
    times = noisy([ALPHA + n * BETA for n in SWEEP], seed, 0.1)
    assert len(fit(SWEEP, times).regimes) == 1


@pytest.mark.parametrize("seed", range(5))
def test_a_switch_shows_through_noise(seed):
    f = fit(SWEEP, noisy([piecewise(n) for n in SWEEP], seed, 0.05))
    assert [(r.smallest, r.largest) for r in f.regimes] == [(8, 8192), (16384, 4 << 20)]
    assert SPLIT_GAIN * sum(r * r for reg in f.regimes for r in reg.line.residuals) \
        < sum(r * r for r in fit(SWEEP, noisy([piecewise(n) for n in SWEEP], seed, 0.05), most=1).regimes[0].line.residuals)


def test_a_size_between_two_regimes_is_interpolated_and_its_band_reaches_both_lines():
    f = fit(SWEEP, [piecewise(n) for n in SWEEP])
    lo, hi = piecewise(8192), piecewise(16384)
    assert f.span(12288) == (0, 1) and f.time_us(12288) == pytest.approx(lo * (hi / lo) ** math.log2(1.5), rel=1e-9)
    t = f.time_us(12288)
    either = [abs(alpha + 12288 * beta - t) / t for alpha, beta in (EAGER, RENDEZVOUS)]
    assert f.band(12288) == pytest.approx(max(either), rel=1e-9)
    assert f.span(4) == (0, 0) and f.time_us(4) == pytest.approx(EAGER[0] + 4 * EAGER[1], rel=1e-9)  # the nearest regime
    assert f.span(1 << 30) == (1, 1) and f.band(1 << 30) < 1e-9


# A time per byte that grows with the size, as TCP through a token bucket: no line passes through these points.
BENT = {1 << 20: 10_000.0, 2 << 20: 23_700.0, 4 << 20: 51_000.0, 8 << 20: 104_500.0}


def test_the_line_is_pinned_to_its_points_and_interpolated_between_them():
    """One regime through four points off any line: at a measured size the prediction is the measurement; between two,
    the line times the log-size interpolation of their measured / fitted ratios; beyond the largest, the largest's."""
    sizes, times = list(BENT), list(BENT.values())
    f = fit(sizes, times, most=1)
    (r,) = f.regimes
    line = r.line.time_us
    assert r.line.max_relative_error > 0.05  # the line alone misses the points
    for n, t in BENT.items():
        assert f.time_us(n) == pytest.approx(t, rel=1e-12)
    mid = 3 << 20  # log2(3/2) of the way from 2 MiB to 4 MiB
    w = math.log2(1.5)
    ratio = (1 - w) * BENT[2 << 20] / line(2 << 20) + w * BENT[4 << 20] / line(4 << 20)
    assert f.time_us(mid) == pytest.approx(line(mid) * ratio, rel=1e-12)
    assert BENT[2 << 20] < f.time_us(mid) < BENT[4 << 20]
    assert f.time_us(32 << 20) == pytest.approx(line(32 << 20) * BENT[8 << 20] / line(8 << 20), rel=1e-12)


def test_a_point_measured_twice_pins_the_line_to_their_geometric_mean():
    f = fit([1000, 1000, 2000, 4000], [100.0, 400.0, 150.0, 300.0], most=1)
    assert f.time_us(1000) == pytest.approx(200.0, rel=1e-12)  # sqrt(100 x 400)


def test_the_pinning_carries_to_another_group_size_and_a_datasheet_fabric_drops_it():
    """Points at 2 ranks only: at 4 ranks each size's time is the ring form's from the per-step line, times the
    same ratio as at 2 ranks (the points' shape kept); on a datasheet fabric the line is the datasheet's, and no
    measurement of this link pins it."""
    op = collective("all_reduce")
    m = fit_algorithm(op, [Point(2, n, t) for n, t in BENT.items()], most=1)
    (r,) = m.per_step.regimes
    for n, t in BENT.items():
        ring4 = op.latency_steps(4) * r.line.alpha_us + op.bus_factor(4) * n * r.line.beta_us_per_byte
        ring2 = op.latency_steps(2) * r.line.alpha_us + op.bus_factor(2) * n * r.line.beta_us_per_byte
        assert m.time_us(2, n) == pytest.approx(t, rel=1e-12)
        assert m.time_us(4, n) == pytest.approx(ring4 * t / ring2, rel=1e-12)
    measured = Model(key=None, ranks=4, fitted_ranks=(2,), smallest=1 << 20, largest=8 << 20, points=4, algorithm=m)
    on = on_fabric(measured, Fabric("x", "network", "a datasheet's", 2.0))
    assert [g.ratios for g in on.algorithm.per_step.regimes] == [()]
    n = 4 << 20  # the datasheet's 2 GB/s per step: the ring form's bytes at it, the latency as fitted
    assert on.algorithm.time_us(4, n) == pytest.approx(op.latency_steps(4) * r.line.alpha_us + op.bus_factor(4) * n / 2e3,
                                                       rel=1e-12)


def test_the_ring_form_carries_each_regime_to_another_group_size():
    """Points at 2 and 4 ranks, per step the two regimes: one cut in the size for both group sizes, each regime's
    per-step alpha and beta recovered, and at 8 ranks each size takes its regime's."""
    def ring(ranks, n):
        alpha, beta = RENDEZVOUS if n >= 16384 else EAGER
        return ring_time("all_reduce", ranks, n, alpha, beta)
    m = fit_algorithm(collective("all_reduce"), [Point(p, n, ring(p, n)) for p in (2, 4) for n in SWEEP])
    assert regimes_of(m.per_step) == pytest.approx([8, 8192, *EAGER, 16384, 4 << 20, *RENDEZVOUS], rel=1e-9)
    for n in (1024, 1 << 20):
        assert m.time_us(8, n) == pytest.approx(ring(8, n), rel=1e-9)


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


def test_the_check_chooses_its_cuts_from_the_fitted_sizes_only():
    """The fitted sizes (every other one) lie on one line and the held-out ones 3x above it: a fit that saw a held-out
    point would cut; the check's fit is the one line, and every held-out point is predicted a third of its time."""
    points = [Point(2, n, (ALPHA + n * BETA) * (3 if k % 2 else 1)) for k, n in enumerate(SWEEP)]
    (h,) = holdouts(all_key("all_gather"), points)
    assert h.regimes == ((8, 2 << 20),) and h.fitted_on == 10
    assert h.relative() == pytest.approx([-2 / 3] * 10, rel=1e-9)


def test_the_check_finds_a_switch_in_the_fitted_sizes():
    """A switch from 32 KiB: the fitted sizes (8, 32, ..., 8K, 32K, ...) are cut between 8K and 32K; every held-out
    size but the one in that gap (16K, whose protocol the fitted sizes cannot tell) is predicted exactly."""
    points = [Point(2, n, piecewise(n, (32768,))) for n in SWEEP]
    (h,) = holdouts(all_key("all_gather"), points)
    assert h.regimes == ((8, 8192), (32768, 2 << 20))
    assert [b for b, meas, pred in h.errors if abs(pred / meas - 1) > 1e-9] == [16384]


def test_check_prints_each_series_and_the_overall_error(write_doc, capsys):
    recs = [record("reduce_scatter", 2, n, ALPHA + n * BETA * (1.1 if k % 2 else 1.0), transport=t)
            for t in ("shm", "tcp") for k, n in enumerate(SIZES)]
    assert main(["predict", "check", "--calibration", calibration(write_doc, recs)]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [ln.split() for ln in lines if not ln.startswith("#")]
    assert [r[:7] for r in rows] == [["reduce_scatter", t, "float32", "out", "blocking", "2", "sizes"] for t in ("shm", "tcp")]
    assert lines[-1].startswith("# all: 8 held-out point(s) in 2 check(s)")


def test_check_tells_a_cold_cache_series_from_its_hot_one(write_doc, capsys):
    recs = [record("reduce_scatter", 2, n, ALPHA + n * BETA * (1.1 if k % 2 else 1.0)) for k, n in enumerate(SIZES)]
    cold = [dict(r, cache="cold") for r in recs]
    assert main(["predict", "check", "--calibration", calibration(write_doc, recs + cold)]) == 0
    rows = [ln.split() for ln in capsys.readouterr().out.splitlines() if not ln.startswith("#")]
    assert sorted(r[4:6] for r in rows) == [["blocking", "2"], ["blocking", "cold"]]


@pytest.mark.parametrize(("args", "says"), [
    (["--op", "broadcast"], "holds no usable broadcast record (it has: all_reduce)"),
    (["--transport", "ib"], "holds no all_reduce records with transport ib (it has: shm, tcp)"),
    ([], "holds all_reduce records of several transports (shm, tcp): give --transport"),
    (["--transport", "shm", "--ranks", "1"], "--ranks 1: a collective's group size, 2 or more"),
    (["--transport", "shm", "--bytes", "1X"], "--bytes '1X': a size in bytes"),
    (["--transport", "shm", "--placement", "in"], "holds no all_reduce records with placement in (it has: out)"),
    (["--transport", "shm", "--fabric", "infiniband"], "--fabric 'infiniband' is not a fabric of the datasheet (nvlink2,"),
    (["--transport", "shm", "--regimes", "4"], "argument --regimes: invalid choice: 4 (choose from 1, 2, 3)"),
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


def test_a_fabric_what_if_keeps_each_regimes_latency(write_doc, tmp_path, capsys):
    """A calibration with a protocol switch: the what-if keeps each regime's own alpha and gives every regime the
    datasheet's beta; the output has a line per regime, and --regimes 1 one line for the whole range."""
    def ring(ranks, n):
        alpha, beta = RENDEZVOUS if n >= 16384 else EAGER
        return ring_time("all_reduce", ranks, n, alpha, beta)
    cal = calibration(write_doc, [record("all_reduce", 2, n, ring(2, n)) for n in SWEEP])
    out = tmp_path / "w.json"
    assert main(["predict", "collectives", "--calibration", cal, "--op", "all_reduce", "--bytes", "1K,1M", "--ranks", "8",
                 "--fabric", "ib-ndr", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert [r["measured_bytes"] for r in doc["regimes"]] == [[8, 8192], [16384, 4 << 20]]
    assert [x for r in doc["regimes"] for x in (r["per_step_alpha_us"], r["per_step_beta_us_per_byte"])] == \
        pytest.approx([*EAGER, *RENDEZVOUS], rel=1e-9)
    assert [p["regimes"] for p in doc["predictions"]] == [[0], [1]]
    (ndr,) = doc["what_if"]
    for p, n, (alpha, _) in zip(ndr["predictions"], (1024, 1 << 20), (EAGER, RENDEZVOUS)):
        assert p["time_us"] == pytest.approx(ring_time("all_reduce", 8, n, alpha, 1 / (50.0 * 1e3)), rel=1e-9)
    assert "from 20 record(s), 8..4M, in 2 regime(s) of the size" in text
    assert "#   8..8K: at 8 ranks alpha 7.000 us, beta 0.00035 us/B (2.857 GB/s); per step alpha 0.500 us" in text
    assert "#   16K..4M: at 8 ranks alpha 56.000 us" in text
    assert main(["predict", "collectives", "--calibration", cal, "--op", "all_reduce", "--bytes", "1K", "--ranks", "8",
                 "--regimes", "1"]) == 0
    assert "8..4M, in 1 regime(s) of the size" in capsys.readouterr().out


def issued(forms, slower=2.0):
    """all_reduce on the exact ring line in each form; the nonblocking calls `slower` times the blocking ones."""
    return [record("all_reduce", 2, n, ring_time("all_reduce", 2, n) * (slower if form == "nonblocking" else 1.0),
                   issue=form) for form in forms for n in SIZES]


@pytest.mark.parametrize(("forms", "args", "slower"), [
    (("blocking", "nonblocking"), ["--issue", "nonblocking"], 2.0),
    (("blocking", "nonblocking"), ["--issue", "blocking"], 1.0),
    (("nonblocking",), [], 2.0),  # one form measured: that one, unasked
    ((None,), ["--issue", "blocking"], 1.0),  # a record written before the field: a blocking call
])
def test_predict_collectives_fits_the_calls_form_asked(write_doc, tmp_path, capsys, forms, args, slower):
    out = tmp_path / "p.json"
    assert main(["predict", "collectives", "--calibration", calibration(write_doc, issued(forms)), "--op", "all_reduce",
                 "--bytes", "1M", "--ranks", "2", *args, "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["predictions"][0]["time_us"] == pytest.approx(slower * ring_time("all_reduce", 2, 1 << 20))
    assert doc["series"]["issue"] == ("nonblocking" if slower == 2.0 else "blocking")
    assert (", nonblocking calls" in capsys.readouterr().out) == (slower == 2.0)


def test_both_forms_measured_and_none_asked_is_one_line(write_doc, capsys):
    cal = calibration(write_doc, issued(("blocking", "nonblocking")))
    assert main(["predict", "collectives", "--calibration", cal, "--op", "all_reduce", "--bytes", "1M", "--ranks", "2"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == ("trainscope: error: the calibration holds all_reduce records of several issues (blocking, nonblocking): "
                    "give --issue")


def test_a_form_not_measured_is_one_line(write_doc, capsys):
    cal = calibration(write_doc, issued(("blocking",)))
    assert main(["predict", "collectives", "--calibration", cal, "--op", "all_reduce", "--bytes", "1M", "--ranks", "2",
                 "--issue", "nonblocking"]) == 2
    assert "holds no all_reduce records with issue nonblocking (it has: blocking)" in capsys.readouterr().err


def test_an_nccl_series_has_one_form():
    rec = dict(record("all_reduce", 2, 1024, 10.0), backend="nccl", timer="cuda_event")
    (key,) = all_series([Result("x", make_doc([]), records=[rec])])
    assert key.issue == "-" and key.describe() == "all_reduce float32 out-of-place"
