"""`trainscope predict train`: compute rates from a one-process calibration run, a plan's schedules replayed over the
fitted costs, and the command's figures and one-line errors. Synthetic records with known costs, so every expected
figure is exact (no timing here)."""

import pytest
from synthetic import make_doc, make_train, stats

from reports.common.errors import InputError
from reports.common.load import Result
from reports.predict.compute import Wanted, compute_rates

FORWARD_US, BACKWARD_US, OPTIMIZER_US = 300.0, 500.0, 40.0
FORWARD_FLOPS, PARAMETERS = 1e6, 2000


def calibration_train(micro_batch=8, scale=1.0, **extra):
    """A one-process mlp tiny run at `micro_batch` whose phases took the constants above (times `scale`)."""
    rec = make_train(backend="cpu", device="cpu", precision="float32", flops_per_step=3 * FORWARD_FLOPS,
                     recompute_flops_per_step=0.0, parameters=PARAMETERS,
                     config={"resolved": {"micro_batch": micro_batch}},
                     phases_us={k: stats([v * scale] * 3) for k, v in
                                (("forward", FORWARD_US), ("backward", BACKWARD_US), ("optimizer", OPTIMIZER_US))},
                     step_time_us=stats([900.0 * scale, 1000.0 * scale, 1100.0 * scale]))
    rec.update(extra)
    return rec


WANTED = Wanted("mlp", "tiny", "float32", "cpu")


def result(records, path="cal.json"):
    return Result(path, make_doc(records), records=records)


def test_the_rates_are_the_phases_over_their_flops_and_elements():
    r = compute_rates([result([calibration_train()])], WANTED, 8)
    assert r.forward_us_per_flop == pytest.approx(FORWARD_US / FORWARD_FLOPS)
    assert r.backward_us_per_flop == pytest.approx(BACKWARD_US / (2 * FORWARD_FLOPS))
    assert r.optimizer_us_per_element == pytest.approx(OPTIMIZER_US / PARAMETERS)
    assert (r.band_low, r.band_high) == pytest.approx((0.1, 0.1))  # min 900 and p95 1100 about the median 1000


def test_the_nearest_micro_batch_in_ratio_is_taken():
    runs = [calibration_train(4, 1.0), calibration_train(16, 2.0), calibration_train(64, 3.0)]
    assert compute_rates([result(runs)], WANTED, 12).micro_batch == 16  # 16/12 is nearer than 12/4
    assert compute_rates([result(runs)], WANTED, 8).micro_batch == 16   # a tie in ratio: the larger one
    assert compute_rates([result(runs)], WANTED, 2).micro_batch == 4


@pytest.mark.parametrize("other", [dict(world_size=2), dict(preset="small"), dict(precision="bfloat16"),
                                   dict(backend="cuda"), dict(completed=False)])
def test_a_calibration_without_a_matching_one_process_run_is_one_line(other):
    with pytest.raises(InputError, match=r"no completed one-process train run of mlp tiny in float32 on cpu: run "
                                         r"`trainscope train --model mlp --preset tiny --batch 8"):
        compute_rates([result([calibration_train(**other)])], WANTED, 8)
