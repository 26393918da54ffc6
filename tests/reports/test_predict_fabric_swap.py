"""`predict train --measured-fabric RESULT --fabric-link auto|all|intra|inter`: a what-if replaces one link class's
costs (by default the inter-host ops where the ranks are on several hosts) with a datasheet fabric's bandwidth or
another cluster's measured collectives. Synthetic sweeps on exact lines of known alpha and beta, so every what-if
step is exact (no timing here)."""
import pytest
from synthetic import make_doc, make_record
from test_predict_placement import BUCKET, COMPUTE, TP_BYTES, op_us, plans, predict, sweep  # noqa: F401 (plans: a fixture)
from test_predict_train import calibration_train

from reports.__main__ import main
from reports.common.link_datasheet import fabric as datasheet_fabric
from reports.predict.placement import LinkClass, Placement
from reports.predict.step_costs import StepCosts

OTHER = (20.0, 2e-3)  # the other cluster's measured line: t = alpha + n x beta


def other_sweep(transports=("ib",)):
    recs = []
    for transport in transports:
        for ranks in (2, 4):
            for n in (1024, 65536, 1 << 20):
                r = make_record(nbytes=n, samples=[OTHER[0] + n * OTHER[1]] * 5)
                r.update(ranks=ranks, processes=ranks)
                if transport is not None:  # None: a sweep run without --transports, whose records name none
                    r["transport"] = transport
                recs.append(r)
    return recs


@pytest.fixture
def cal(write_doc):
    return str(write_doc("cal.json", make_doc([calibration_train()] + sweep())))


@pytest.fixture
def other(write_doc):
    return str(write_doc("other.json", make_doc(other_sweep())))


def what_if(rec, kind):
    (w,) = [w for w in rec["what_if"] if w["kind"] == kind]
    return w


def test_across_hosts_the_measured_fabric_replaces_the_inter_host_ops_only(cal, other, plans, capsys, tmp_path):
    """tp 2 inside a host (shm) stays; dp 2 across hosts (tcp here) takes the other cluster's fit."""
    rec, out = predict(capsys, tmp_path, "--calibration", cal, "--plan", plans["tp2dp2"], "--ranks-per-host", "2",
                       "--intra-transport", "shm", "--inter-transport", "tcp", "--measured-fabric", other)
    assert rec["step_us"] == pytest.approx(COMPUTE + op_us("shm", TP_BYTES) + op_us("tcp", BUCKET))
    w = what_if(rec, "measured_fabric")
    assert w["step_us"] == pytest.approx(COMPUTE + op_us("shm", TP_BYTES) + OTHER[0] + BUCKET * OTHER[1])
    assert w["name"] == other and "for the inter-host ops (the others as calibrated)" in w["detail"]
    assert "# the fabric what-ifs replace the inter-host ops (the others as calibrated) (--fabric-link auto)" in out
    assert rec["fastest"] == other


@pytest.mark.parametrize("link, tp, dp", [("all", "other", "other"), ("intra", "other", "tcp"), ("inter", "shm", "other")])
def test_fabric_link_chooses_the_ops_a_what_if_replaces(cal, other, plans, capsys, tmp_path, link, tp, dp):
    rec, _ = predict(capsys, tmp_path, "--calibration", cal, "--plan", plans["tp2dp2"], "--ranks-per-host", "2",
                     "--intra-transport", "shm", "--inter-transport", "tcp", "--measured-fabric", other,
                     "--fabric-link", link)

    def cost(series, nbytes):
        return OTHER[0] + nbytes * OTHER[1] if series == "other" else op_us(series, nbytes)
    assert what_if(rec, "measured_fabric")["step_us"] == pytest.approx(COMPUTE + cost(tp, TP_BYTES) + cost(dp, BUCKET))


def test_on_one_host_a_what_if_replaces_every_op(cal, other, plans, capsys, tmp_path):
    rec, out = predict(capsys, tmp_path, "--calibration", cal, "--plan", plans["dp4"], "--transport", "tcp",
                       "--measured-fabric", other)
    assert what_if(rec, "measured_fabric")["step_us"] == pytest.approx(COMPUTE + OTHER[0] + BUCKET * OTHER[1])
    assert "# the fabric what-ifs replace every op (--fabric-link auto)" in out


def test_a_datasheet_fabric_replaces_the_swapped_links_ops_and_leaves_the_others_as_fitted(cal, write_doc):
    """The StepCosts behind --fabric: an intra-host op costs what it costs without the what-if, an inter-host op what
    it costs with every op on the fabric."""
    from reports.common.load import load_results
    from reports.predict.compute import ComputeRates
    from reports.predict.series import all_series
    series = all_series(load_results([cal]))
    rates = ComputeRates(cal, 1, 1.0, 1.0, 1.0, 0.0, 0.0)
    base = StepCosts(rates, series, [cal], placement=Placement(4, 2, "shm", "tcp"))
    fabric = datasheet_fabric("ib-ndr")
    inter, everywhere = base.on(fabric, LinkClass.INTER), base.on(fabric, None)
    inside, across = (0, 1), (0, 2)
    assert inter.op_us("all_reduce", 2, BUCKET, inside) == pytest.approx(base.op_us("all_reduce", 2, BUCKET, inside))
    assert inter.op_us("all_reduce", 2, BUCKET, across) == pytest.approx(everywhere.op_us("all_reduce", 2, BUCKET, across))
    assert inter.op_us("all_reduce", 2, BUCKET, across) != pytest.approx(base.op_us("all_reduce", 2, BUCKET, across))


@pytest.mark.parametrize("flags, message", [
    (["--transport", "tcp", "--fabric-link", "inter", "--measured-fabric", "OTHER"],
     "--fabric-link inter: every rank is on one host, so no op crosses hosts (place them with --ranks-per-host)"),
    (["--ranks-per-host", "1", "--intra-transport", "shm", "--inter-transport", "tcp", "--fabric-link", "intra",
      "--measured-fabric", "OTHER"], "--fabric-link intra: one rank per host (--ranks-per-host 1), so no op stays inside"),
    (["--transport", "tcp", "--measured-fabric", "SEVERAL"],
     "SEVERAL: measured over ib, roce: choose one with --measured-fabric-transport"),
    (["--transport", "tcp", "--measured-fabric", "SEVERAL", "--measured-fabric-transport", "nvlink"],
     "--measured-fabric-transport nvlink: SEVERAL measured no collectives over it (its transports: ib, roce)"),
    (["--transport", "tcp", "--measured-fabric", "MIXED"],
     "MIXED: measured over ib, - for the one measured without --transports: choose one with --measured-fabric-transport"),
    (["--transport", "tcp", "--measured-fabric", "NONE"],
     "NONE: holds no collectives records (measure the other cluster with `trainscope collectives ... --json FILE`)"),
])
def test_a_bad_fabric_what_if_is_one_line(cal, other, plans, write_doc, capsys, flags, message):
    files = {"OTHER": other, "SEVERAL": str(write_doc("several.json", make_doc(other_sweep(("ib", "roce"))))),
             "MIXED": str(write_doc("mixed.json", make_doc(other_sweep(("ib", None))))),
             "NONE": str(write_doc("none.json", make_doc([calibration_train()])))}
    flags = [files.get(f, f) for f in flags]
    for name in ("SEVERAL", "MIXED", "NONE"):
        message = message.replace(name, files[name])
    code = main(["predict", "train", "--calibration", cal, "--plan", plans["dp4"], *flags])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_the_chosen_series_of_a_file_of_several_is_the_one_taken(cal, plans, write_doc, capsys, tmp_path):
    several = other_sweep(("ib",)) + [dict(r, transport="roce", time_us=dict(r["time_us"], median=1e6),
                                           samples_us=[1e6] * 5) for r in other_sweep(("roce",))]
    path = str(write_doc("several.json", make_doc(several)))
    rec, _ = predict(capsys, tmp_path, "--calibration", cal, "--plan", plans["dp4"], "--transport", "tcp",
                     "--measured-fabric", path, "--measured-fabric-transport", "ib")
    assert what_if(rec, "measured_fabric")["step_us"] == pytest.approx(COMPUTE + OTHER[0] + BUCKET * OTHER[1])


def test_the_unnamed_series_of_a_file_is_chosen_by_the_name_its_messages_give_it(cal, plans, write_doc, capsys, tmp_path):
    mixed = [dict(r, time_us=dict(r["time_us"], median=1e6), samples_us=[1e6] * 5) for r in other_sweep(("ib",))]
    path = str(write_doc("mixed.json", make_doc(mixed + other_sweep((None,)))))
    rec, _ = predict(capsys, tmp_path, "--calibration", cal, "--plan", plans["dp4"], "--transport", "tcp",
                     "--measured-fabric", path, "--measured-fabric-transport", "-")
    assert what_if(rec, "measured_fabric")["step_us"] == pytest.approx(COMPUTE + OTHER[0] + BUCKET * OTHER[1])
