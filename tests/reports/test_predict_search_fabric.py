"""`predict search --fabric NAME` / `--measured-fabric RESULT`: the layouts ranked by their step on a what-if fabric,
which need not be the order here. Exact: a synthetic calibration of known lines (test_predict_placement's), two
candidates' plans handed out by a stand-in trainer, their steps computed from the same costs the tool uses."""
import json
import sys

import pytest
from synthetic import make_doc
from test_predict_placement import BUCKET, COMPUTE, all_reduce, backward, dp4, forward, op_us, sweep
from test_predict_train import ELEMENTS, calibration_train, plan_doc, plan_record

from reports.__main__ import main
from reports.common.link_datasheet import fabric as datasheet_fabric
from reports.common.load import load_results
from reports.predict.compute import ComputeRates
from reports.predict.placement import LinkClass, Placement
from reports.predict.series import all_series
from reports.predict.step_costs import StepCosts

SMALL = 1000  # bytes of the inter-host all-reduce of the layout that keeps its large one inside a host
ACROSS = (0, 2)  # two ranks on different hosts (2 per host)
PLACED = ["--ranks-per-host", "2", "--intra-transport", "shm", "--inter-transport", "tcp"]


def local_heavy(rank):
    """The large all-reduce inside a host (ranks 0-1, 2-3), a small one across: cheap here, where crossing is slow."""
    inside = [rank - rank % 2, rank - rank % 2 + 1]
    across = [rank % 2, rank % 2 + 2]
    return {"events": [forward(), backward(), *all_reduce(1, "tp", inside, BUCKET), *all_reduce(2, "dp", across, SMALL),
                       {"compute": "optimizer", "elements": ELEMENTS}]}


@pytest.fixture
def setup(write_doc, tmp_path, monkeypatch):
    """The calibration, and a stand-in trainer that hands out dp4's plan for --dp 4 and local_heavy's for --dp 2 --tp 2,
    refusing every other candidate as the trainer refuses a layout (exit 2, one line)."""
    cal = str(write_doc("cal.json", make_doc([calibration_train()] + sweep())))
    plans = {"4-1-1-0-1": dp4, "2-2-1-0-1": local_heavy}
    files = {key: str(write_doc(f"plan-{key}.json", plan_doc([plan_record(r, 4, make(r)) for r in range(4)])))
             for key, make in plans.items()}
    fake = tmp_path / "trainscope"
    fake.write_text(f"""#!{sys.executable}
import shutil, sys
a = sys.argv
key = "-".join(a[a.index(f) + 1] for f in ("--dp", "--tp", "--pp", "--zero", "--micro-batches"))
plans = {files!r}
if key not in plans:
    print("trainscope: error: not a layout of this test", file=sys.stderr)
    sys.exit(2)
shutil.copy(plans[key], a[a.index("--json") + 1])
""")
    fake.chmod(0o755)
    monkeypatch.setenv("TRAINSCOPE_BIN", str(fake))
    return cal


def search(capsys, tmp_path, cal, *flags):
    out = tmp_path / "search.json"
    code = main(["predict", "search", "--calibration", cal, "--ranks", "4", *PLACED, *flags, "--json", str(out), "--",
                 "--model", "mlp"])
    got = capsys.readouterr()
    assert code == 0, got.err
    doc = json.loads(out.read_text())
    return {c["layout"]: c for c in doc["candidates"] if "step_us" in c}, doc, got.out


def on_fabric(cal, fabric, nbytes_across_four, nbytes_across_two):
    """The inter-host ops' times on the fabric, as the tool's costs give them (the datasheet swap's own formula)."""
    series = all_series(load_results([cal]))
    costs = StepCosts(ComputeRates(cal, 1, 1.0, 1.0, 1.0, 0.0, 0.0), series, [cal],
                      placement=Placement(4, 2, "shm", "tcp")).on(fabric, LinkClass.INTER)
    return (costs.op_us("all_reduce", 4, nbytes_across_four, (0, 1, 2, 3)),
            costs.op_us("all_reduce", 2, nbytes_across_two, ACROSS))


def test_the_what_if_fabric_ranks_the_layouts_by_their_step_on_it(setup, capsys, tmp_path):
    cal = setup
    here, _, _ = search(capsys, tmp_path, cal)
    assert here["dp4"]["step_us"] == pytest.approx(COMPUTE + op_us("tcp", BUCKET))
    assert here["dp2 x tp2"]["step_us"] == pytest.approx(COMPUTE + op_us("shm", BUCKET) + op_us("tcp", SMALL))
    assert here["dp2 x tp2"]["step_us"] < here["dp4"]["step_us"]  # here crossing hosts is slow: keep the bytes inside

    got, doc, out = search(capsys, tmp_path, cal, "--fabric", "ib-ndr")
    four, two = on_fabric(cal, datasheet_fabric("ib-ndr"), BUCKET, SMALL)
    assert got["dp4"]["what_if_step_us"] == pytest.approx(COMPUTE + four)
    assert got["dp2 x tp2"]["what_if_step_us"] == pytest.approx(COMPUTE + op_us("shm", BUCKET) + two)
    assert got["dp4"]["step_us"] == pytest.approx(here["dp4"]["step_us"])  # the step here is kept beside
    ranked = [line.split()[-1] for line in out.splitlines() if line.startswith("  ")]
    assert ranked == ["dp4", "tp2"]  # on NDR crossing is cheap: dp4's one all-reduce wins (the layout column's last word)
    assert doc["what_if"] == {"name": "ib-ndr", "kind": "fabric", "link": "inter-host",
                              "detail": doc["what_if"]["detail"]} and "the inter-host ops" in doc["what_if"]["detail"]
    assert "# ranked by the step on the what-if fabric ib-ndr: " in out


def test_a_measured_fabric_ranks_as_its_own_fit_says(setup, write_doc, capsys, tmp_path):
    cal = setup
    other = str(write_doc("other.json", make_doc(sweep(("shm",)))))  # the other cluster crosses hosts at shm's speed
    got, doc, _ = search(capsys, tmp_path, cal, "--measured-fabric", other)
    assert got["dp4"]["what_if_step_us"] == pytest.approx(COMPUTE + op_us("shm", BUCKET))
    assert got["dp2 x tp2"]["what_if_step_us"] == pytest.approx(COMPUTE + op_us("shm", BUCKET) + op_us("shm", SMALL))
    assert doc["what_if"]["kind"] == "measured_fabric" and doc["what_if"]["name"] == other


@pytest.mark.parametrize("flags, message", [
    (["--measured-fabric", "OTHER", "--measured-fabric", "OTHER"], "give one --fabric or one --measured-fabric (given: "
                                                                   "OTHER, OTHER)"),
    (["--fabric", "ib-ndr", "--measured-fabric", "OTHER"], "predict search ranks on one what-if fabric: give one --fabric "
                                                           "or one --measured-fabric (given: ib-ndr, OTHER)"),
    (["--fabric", "warp-drive"], "--fabric 'warp-drive' is not a fabric of the datasheet"),
])
def test_a_bad_what_if_is_one_line_before_any_candidate_is_planned(setup, write_doc, capsys, monkeypatch, flags,
                                                                   message):
    other = str(write_doc("other.json", make_doc(sweep(("shm",)))))
    monkeypatch.setenv("TRAINSCOPE_BIN", sys.executable)  # planning with it would fail: nothing may be planned
    flags = [other if f == "OTHER" else f for f in flags]
    code = main(["predict", "search", "--calibration", setup, "--ranks", "4", *PLACED, *flags, "--", "--model", "mlp"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and message.replace("OTHER", other) in err, err
