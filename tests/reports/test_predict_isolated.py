"""A measured size off the lines of the sizes on both its sides is set apart before a series is fitted
(reports/predict/isolated.py); a protocol switch (a step: the sizes after it move too) is not. Synthetic series with
exact expected factors, and the namespace cluster's two 100 Mbit/s all_reduce series of 2026-12-02 (docs/prediction.md:
one size's five iterations during a transient; the other series' switch at 2 KiB)."""
import json

import pytest
from synthetic import make_doc, make_record

from reports.__main__ import main
from reports.predict.formulas import Point
from reports.predict.isolated import ISOLATED, set_apart

SIZES = [8 * 4 ** k for k in range(9)]  # 8 B .. 512 KiB, by 4x as the benchmarks sweep
ALPHA, BETA = 5.0, 2e-3


def line(n: int) -> float:
    return ALPHA + n * BETA


def apart_of(points):
    return [(a.point.ranks, a.point.bytes, round(a.factor, 6)) for a in set_apart(points)[1]]


@pytest.mark.parametrize("factor", [1.8, 1 / 1.8, 4.0])
def test_a_spike_or_a_dip_between_two_sizes_on_each_side_is_set_apart_with_its_factor(factor):
    points = [Point(2, n, line(n) * (factor if i == 5 else 1)) for i, n in enumerate(SIZES)]
    # Both sides' lines are the series' own line (alpha-beta through two points): the factor is the one planted.
    kept, apart = set_apart(points)
    (a,) = apart
    assert a.point is points[5] and points[5] not in kept and len(kept) == len(SIZES) - 1
    assert (a.factor > ISOLATED) == (factor > 1) and a.factor == pytest.approx(factor, rel=1e-9)


def test_a_point_within_the_factor_and_the_ends_are_kept():
    near = [Point(2, n, line(n) * (1.4 if i == 4 else 1)) for i, n in enumerate(SIZES)]
    assert apart_of(near) == []
    for end in (0, 1, len(SIZES) - 2, len(SIZES) - 1):  # fewer than two sizes beyond: never judged
        points = [Point(2, n, line(n) * (5 if i == end else 1)) for i, n in enumerate(SIZES)]
        assert apart_of(points) == [], end


def test_a_protocol_switch_is_a_step_not_a_spike():
    # The 100 Mbit/s blocking all_reduce, in place (us): eager to 512 B, then the link's rate from 2 KiB on.
    sweep = {8: 13.37, 32: 12.80, 128: 12.49, 512: 13.34, 2048: 174.53, 8192: 697.74, 32768: 2807.84, 131072: 11229.50,
             524288: 44895.81, 2097152: 181901.43, 8388608: 1101087.95}
    assert apart_of([Point(2, n, t) for n, t in sweep.items()]) == []
    # The same link's nonblocking series, one size measured during a transient (all 5 iterations 1.7x and more).
    sweep = {8: 30.07, 32: 30.01, 128: 30.81, 512: 30.51, 2048: 168.75, 8192: 695.78, 32768: 2810.91, 131072: 19970.60,
             524288: 44844.61, 2097152: 183569.28, 8388608: 768321.70}
    ((ranks, nbytes, factor),) = apart_of([Point(2, n, t) for n, t in sweep.items()])
    left = 2810.91 + (2810.91 - 695.78) / (32768 - 8192) * (131072 - 32768)  # the line of 8 KiB and 32 KiB, carried
    right = 44844.61 - (183569.28 - 44844.61) / (2097152 - 524288) * (524288 - 131072)  # of 512 KiB and 2 MiB
    assert (ranks, nbytes) == (2, 131072) and factor == pytest.approx(19970.60 / max(left, right), abs=1e-6)


def test_each_group_size_is_judged_on_its_own_points():
    points = [Point(2, n, line(n) * (3 if i == 4 else 1)) for i, n in enumerate(SIZES)]
    points += [Point(4, n, 2 * line(n)) for n in SIZES]  # the same size at 4 ranks lies on its own line
    assert apart_of(points) == [(2, SIZES[4], pytest.approx(3, rel=1e-9))]


def test_predict_leaves_the_point_out_of_the_fit_and_says_so(write_doc, tmp_path, capsys):
    times = [line(n) for n in SIZES]
    times[5] *= 2.0
    records = [make_record(op="all_gather", nbytes=n, samples=[t] * 5) for n, t in zip(SIZES, times)]
    for r in records:
        r["ranks"] = r["processes"] = 2
    cal = str(write_doc("cal.json", make_doc(records)))
    out = tmp_path / "p.json"
    assert main(["predict", "collectives", "--calibration", cal, "--op", "all_gather", "--bytes", str(SIZES[5]),
                 "--ranks", "2", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"set apart: 8K at 2 ranks, {times[5]:.3f} us, 2.00x the lines of the sizes on both sides" in text, text
    doc = json.loads(out.read_text())
    # The line through the other sizes, exact again: the size set apart is predicted from it, not from its own point.
    (p,) = doc["predictions"]
    assert p["time_us"] == pytest.approx(line(SIZES[5]), rel=1e-9) and doc["points"] == len(SIZES) - 1
    assert doc["regimes"][0]["band_relative"] < 1e-9
