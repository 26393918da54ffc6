"""`predict search` and expert parallelism: the ep splits (carved out of the data-parallel ranks) are planned for a
model whose plans say it has experts, and ranked with the others; a dense model's search never asks the trainer for
one. A stand-in trainer hands out plans (test_predict_search_fabric's) and logs every layout it is asked for."""
import json

import pytest
from synthetic import make_doc
from test_predict_placement import BUCKET, COMPUTE, dp4, op_us, sweep
from test_predict_search_fabric import PLACED, local_heavy
from test_predict_train import calibration_train, plan_doc, plan_record

from reports.__main__ import main
from reports.predict.search import Candidate, candidates

# The model flags the stand-in knows: a dense one (its plans say no experts), a mixture of 4 experts, and a mixture
# the trainer refuses at every split without --ep (as the host check refuses one whose experts only --ep spreads).
DENSE, MOE, ONLY_EP = "mlp", "transformer", "huge"


def test_the_expert_parallel_splits_are_every_ep_of_the_data_parallel_ranks():
    got = {(c.dp, c.ep, c.tp, c.pp) for c in candidates(4, expert_parallel=True)}
    assert got == {(2, 2, 1, 1), (1, 4, 1, 1), (1, 2, 2, 1), (1, 2, 1, 2)}
    assert all(c.ep == 1 for c in candidates(4))
    ep = [c for c in candidates(4, expert_parallel=True) if (c.dp, c.ep, c.tp, c.pp) == (1, 2, 1, 2)]
    assert {(c.zero, c.micro_batches) for c in ep} == {(z, m) for z in range(4) for m in (2, 4, 8)}
    assert Candidate(1, 2, 1, 1, 1, ep=2).name == "tp2 x ep2 zero1" and Candidate(2, 1, 1, 0, 1, ep=2).name == "dp2 x ep2"
    assert Candidate(2, 1, 1, 0, 1, ep=2).flags[-6:-4] == ["--ep", "2"]


@pytest.fixture
def setup(write_doc, tmp_path, monkeypatch):
    """The calibration and the stand-in: dp4's plan for a split without --ep (the dense model's saying experts 0, the
    mixture's 4), local_heavy's (cheaper here) for one with; the dense model refuses --ep as the trainer does."""
    cal = str(write_doc("cal.json", make_doc([calibration_train()] + sweep())))

    def plan(name, make, experts):
        records = [dict(plan_record(r, 4, make(r)), experts=experts) for r in range(4)]
        return str(write_doc(f"plan-{name}.json", plan_doc(records)))
    plans = {DENSE: plan("dense", dp4, 0), MOE: plan("moe", dp4, 4), "ep": plan("ep", local_heavy, 4)}
    log = tmp_path / "asked.txt"
    fake = tmp_path / "trainscope"
    fake.write_text(f"""#!/bin/sh
# a shell script, not python: the search starts it once per candidate
while [ $# -gt 1 ]; do
  case "$1" in --dp|--tp|--pp|--ep|--zero|--micro-batches) key="$key $2";; esac
  case "$1" in --model) model=$2;; --ep) ep=$2;; --json) out=$2;; esac
  shift
done
echo "$key" >> "{log}"
if [ "$model" = {DENSE} ] && [ "$ep" -gt 1 ]; then
  echo "trainscope: error: --ep $ep: the mlp model has no experts to divide" >&2; exit 2
fi
if [ "$model" = {ONLY_EP} ] && [ "$ep" = 1 ]; then
  echo "trainscope: error: the transformer has 4e+12 parameters: too many for this host" >&2; exit 2
fi
if [ "$ep" -gt 1 ]; then cp "{plans["ep"]}" "$out"; elif [ "$model" = {DENSE} ]; then cp "{plans[DENSE]}" "$out"
else cp "{plans[MOE]}" "$out"; fi
""")
    fake.chmod(0o755)
    monkeypatch.setenv("TRAINSCOPE_BIN", str(fake))
    return cal, log


def search(capsys, tmp_path, cal, model):
    out = tmp_path / f"search-{model}.json"
    code = main(["predict", "search", "--calibration", cal, "--ranks", "4", *PLACED, "--top", "100", "--json", str(out),
                 "--", "--model", model])
    got = capsys.readouterr()
    assert code == 0, got.err
    return json.loads(out.read_text())["candidates"], got.out


def asked_ep(log):
    return sorted({int(line.split()[3]) for line in log.read_text().splitlines()})


def test_a_mixtures_search_plans_and_ranks_its_expert_parallel_splits(setup, capsys, tmp_path):
    cal, log = setup
    got, out = search(capsys, tmp_path, cal, MOE)
    ep = [c for c in got if c["ep"] > 1]
    assert {c["layout"] for c in ep} >= {"dp2 x ep2", "ep4", "tp2 x ep2", "pp2 x ep2 mb2", "ep4 zero3"}
    assert len(ep) == len(candidates(4, expert_parallel=True)) and all("step_us" in c for c in ep)
    assert len(got) == len(candidates(4)) + len(ep)
    cheaper = COMPUTE + op_us("shm", BUCKET) + op_us("tcp", 1000)  # local_heavy's step: below dp4's
    assert ep[0]["step_us"] == pytest.approx(cheaper) and cheaper < COMPUTE + op_us("tcp", BUCKET)
    listed = [line for line in out.splitlines() if line.startswith("  ")]  # ranked: every ep split first
    assert len(listed) == len(got) and all("ep" in line.split("yes")[-1] for line in listed[:len(ep)])
    assert not any("ep" in line.split("yes")[-1] for line in listed[len(ep):])


def test_a_dense_models_search_asks_for_no_expert_parallel_split(setup, capsys, tmp_path):
    cal, log = setup
    got, out = search(capsys, tmp_path, cal, DENSE)
    assert asked_ep(log) == [1] and all(c["ep"] == 1 for c in got) and len(got) == len(candidates(4))
    assert "refused" not in json.dumps(got) and " ep" not in out


def test_a_mixture_no_split_without_ep_can_hold_is_searched_over_its_ep_splits(setup, capsys, tmp_path):
    """No plan without --ep says whether the model has experts: the ep splits are planned, and the trainer decides."""
    cal, log = setup
    got, out = search(capsys, tmp_path, cal, ONLY_EP)
    assert asked_ep(log) == [1, 2, 4]
    assert all("too many for this host" in c["refused"] for c in got if c["ep"] == 1)
    assert [c["layout"] for c in got if "step_us" in c] == [c.name for c in candidates(4, expert_parallel=True)]
