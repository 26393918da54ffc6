"""`predict train --ranks-per-host K --intra-transport A --inter-transport B`: each op costed from the series of the
link it crosses (its members on one host, or not). A synthetic calibration of two transports on exact lines of known
alpha and beta at every group size, so every expected step is exact (no timing here)."""
import json
import sys

import pytest
from synthetic import make_doc, make_record
from test_predict_train import BUCKET, ELEMENTS, LAYER_FLOPS, calibration_train, plan_doc, plan_record

from reports.__main__ import main
from reports.predict.placement import LinkClass, Placement
from reports.predict.replay import replay

# t = alpha + n x beta of every measured op, at each group size measured: shared memory inside a host, TCP across.
LINES = {"shm": (10.0, 1e-3), "tcp": (40.0, 4e-3)}
COMPUTE = 30 + 50 + 20  # forward, backward, optimizer of the plans below (test_predict_train's costs)
TP_BYTES = 8000


def op_us(transport, nbytes):
    alpha, beta = LINES[transport]
    return alpha + nbytes * beta


def sweep(transports=("shm", "tcp"), group_sizes=(2, 4)):
    recs = []
    for transport in transports:
        for ranks in group_sizes:
            for n in (1024, 65536, 1 << 20):
                r = make_record(nbytes=n, samples=[op_us(transport, n)] * 5)
                r.update(ranks=ranks, processes=ranks, transport=transport)
                recs.append(r)
    return recs


def all_reduce(id, group, members, nbytes):
    return [{"issue": id, "op": "all_reduce", "group": group, "group_size": len(members), "members": members,
             "bytes": nbytes}, {"wait": id}]


def forward():
    return {"compute": "forward", "layer": 0, "micro_batch": 0, "flops": LAYER_FLOPS}


def backward():
    return {"compute": "backward", "layer": 0, "micro_batch": 0, "flops": 2 * LAYER_FLOPS}


def dp4(rank):
    """dp 4: the gradients' all-reduce over the four ranks."""
    return {"events": [forward(), backward(), *all_reduce(1, "dp", [0, 1, 2, 3], BUCKET),
                       {"compute": "optimizer", "elements": ELEMENTS}]}


def tp2_dp2(rank):
    """tp 2 x dp 2 (tp groups 0-1 and 2-3, dp groups 0,2 and 1,3): a tensor-parallel sum after the forward, the
    gradients' all-reduce after the backward."""
    tp = [rank - rank % 2, rank - rank % 2 + 1]
    dp = [rank % 2, rank % 2 + 2]
    return {"events": [forward(), *all_reduce(1, "tp", tp, TP_BYTES), backward(), *all_reduce(2, "dp", dp, BUCKET),
                       {"compute": "optimizer", "elements": ELEMENTS}]}


@pytest.fixture
def cal(write_doc):
    return str(write_doc("cal.json", make_doc([calibration_train()] + sweep())))


@pytest.fixture
def plans(write_doc):
    return {name: str(write_doc(f"{name}.json", plan_doc([plan_record(r, 4, make(r)) for r in range(4)])))
            for name, make in (("dp4", dp4), ("tp2dp2", tp2_dp2))}


def predict(capsys, tmp_path, *args):
    out = tmp_path / "p.json"
    code = main(["predict", "train", *args, "--json", str(out)])
    got = capsys.readouterr()
    assert code == 0, got.err
    (rec,) = [r for r in json.loads(out.read_text())["records"] if r["kind"] == "train_prediction"]
    return rec, got.out


@pytest.mark.parametrize("k, transport", [(4, "shm"), (2, "tcp"), (1, "tcp")])
def test_a_data_parallel_all_reduce_is_intra_host_only_when_its_four_ranks_share_one(cal, plans, capsys, tmp_path, k,
                                                                                     transport):
    rec, out = predict(capsys, tmp_path, "--calibration", cal, "--plan", plans["dp4"], "--ranks-per-host", str(k),
                       "--intra-transport", "shm", "--inter-transport", "tcp")
    assert rec["step_us"] == pytest.approx(COMPUTE + op_us(transport, BUCKET))
    link = "intra-host" if k == 4 else "inter-host"
    assert rec["placement"] == {"ranks_per_host": k, "hosts": 4 // k, "intra_transport": "shm", "inter_transport": "tcp",
                                "nics_per_host": None, "groups": {"dp": [link]}}
    assert [(c["op"], c["group_size"], c["link"], c["series"]["transport"]) for c in rec["collectives"]] == \
        [("all_reduce", 4, link, transport)]
    assert f"# all_reduce on 4 ranks, {link} (all_reduce float32 out-of-place over {transport}): fitted at 4" in out
    assert {4: "every rank on one host;", 2: "2 ranks per host on 2 hosts (host h: ranks 2h..2h+1, by slot);",
            1: "one rank per host on 4 hosts;"}[k] in out


def test_without_a_placement_every_rank_is_on_one_host_as_before(cal, plans, capsys, tmp_path):
    rec, out = predict(capsys, tmp_path, "--calibration", cal, "--plan", plans["dp4"], "--transport", "tcp")
    assert rec["step_us"] == pytest.approx(COMPUTE + op_us("tcp", BUCKET))
    assert rec["placement"] == {"ranks_per_host": 4, "hosts": 1, "intra_transport": "tcp", "inter_transport": None,
                                "nics_per_host": None, "groups": {"dp": ["intra-host"]}}
    assert "# placement: 4 ranks, every rank on one host; intra-host ops from tcp; groups: dp intra-host" in out


def test_tensor_parallelism_inside_a_host_and_data_parallelism_across_pick_their_own_links(cal, plans, capsys, tmp_path):
    rec, out = predict(capsys, tmp_path, "--calibration", cal, "--plan", plans["tp2dp2"], "--ranks-per-host", "2",
                       "--intra-transport", "shm", "--inter-transport", "tcp")
    assert rec["step_us"] == pytest.approx(COMPUTE + op_us("shm", TP_BYTES) + op_us("tcp", BUCKET))
    assert rec["placement"]["groups"] == {"dp": ["inter-host"], "tp": ["intra-host"]}
    assert [(c["group_size"], c["link"], c["series"]["transport"]) for c in rec["collectives"]] == \
        [(2, "inter-host", "tcp"), (2, "intra-host", "shm")]
    assert ("# placement: 4 ranks, 2 ranks per host on 2 hosts (host h: ranks 2h..2h+1, by slot); intra-host ops "
            "from shm, inter-host ops from tcp; groups: dp inter-host, tp intra-host") in out
    assert rec["per_rank"][0]["transfer_us"] == pytest.approx(op_us("shm", TP_BYTES) + op_us("tcp", BUCKET))


@pytest.mark.parametrize("plan, nics, flows", [
    ("tp2dp2", 1, 2),  # dp groups (0,2) and (1,3) both leave host 0 at once through its one NIC
    ("tp2dp2", 2, 1),  # a NIC each
    ("dp4", 1, 1),  # one group, two of its ranks on each host: the ring leaves a host once
])
def test_sibling_groups_crossing_hosts_at_once_share_the_hosts_nics(cal, plans, capsys, tmp_path, plan, nics, flows):
    rec, out = predict(capsys, tmp_path, "--calibration", cal, "--plan", plans[plan], "--ranks-per-host", "2",
                       "--intra-transport", "shm", "--inter-transport", "tcp", "--nics-per-host", str(nics))
    alpha, beta = LINES["tcp"]
    across = alpha + flows * beta * BUCKET  # the fitted time per byte times the flows sharing the busiest NIC
    assert rec["step_us"] == pytest.approx(COMPUTE + across + (op_us("shm", TP_BYTES) if plan == "tp2dp2" else 0))
    assert rec["placement"]["nics_per_host"] == nics
    assert f"inter-host ops from tcp sharing {nics} NIC(s) per host" in out


def test_a_pipeline_transfer_crosses_hosts_where_its_two_ranks_do():
    """The replay hands each op its members: at 2 ranks per host a send from rank 0 to rank 1 is intra-host, one from
    rank 1 to rank 2 inter-host."""
    asked = []

    class Costs:
        def compute_us(self, event, rank):
            return 0.0

        def host_us(self, rank):
            return 0.0

        def op_us(self, op, group_size, nbytes, members, in_place=False):
            asked.append((op, members, Placement(4, 2, "shm", "tcp").link_of(members)))
            return 1.0

    def transfer(id, op, rank, peer):
        return [{"issue": id, "op": op, "group": "pp", "group_size": 4, "members": sorted([rank, peer]), "bytes": 64,
                 "peer": peer}, {"wait": id}]
    replay({0: transfer(1, "send", 0, 1), 1: transfer(1, "recv", 1, 0) + transfer(2, "send", 1, 2),
            2: transfer(1, "recv", 2, 1)}, Costs())
    assert asked == [("send", (0, 1), LinkClass.INTRA), ("send", (1, 2), LinkClass.INTER)]


@pytest.mark.parametrize("flags, message", [
    (["--ranks-per-host", "0"], "--ranks-per-host 0: 1 or more"),
    (["--ranks-per-host", "3"], "--ranks-per-host 3: does not divide the 4 ranks (each host holds K of them)"),
    (["--ranks-per-host", "8"], "--ranks-per-host 8: does not divide the 4 ranks"),
    (["--ranks-per-host", "2", "--intra-transport", "nvlink", "--inter-transport", "tcp"],
     "--intra-transport nvlink: the calibration holds no collectives measured over it (its transports: shm, tcp)"),
    (["--ranks-per-host", "2", "--intra-transport", "shm", "--inter-transport", "ib"],
     "--inter-transport ib: the calibration holds no collectives measured over it (its transports: shm, tcp)"),
    (["--ranks-per-host", "2", "--intra-transport", "shm"],
     "--ranks-per-host 2 puts the 4 ranks on 2 hosts: give --intra-transport and --inter-transport (the calibration's "
     "transports: shm, tcp)"),
    (["--ranks-per-host", "2", "--transport", "shm"], "puts the 4 ranks on 2 hosts: give --intra-transport and"),
    (["--transport", "shm", "--inter-transport", "tcp"], "give it, or --intra-transport and --inter-transport, not both"),
    (["--ranks-per-host", "2", "--intra-transport", "shm", "--inter-transport", "tcp", "--nics-per-host", "0"],
     "--nics-per-host 0: 1 or more"),
    (["--transport", "shm", "--nics-per-host", "1"],
     "--nics-per-host 1: every rank is on one host, so no op crosses hosts (place them with --ranks-per-host)"),
])
def test_a_bad_placement_is_one_line(cal, plans, capsys, flags, message):
    code = main(["predict", "train", "--calibration", cal, "--plan", plans["dp4"], *flags])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_hosts_over_a_calibration_of_one_series_say_what_to_measure(write_doc, plans, capsys):
    one = str(write_doc("one.json", make_doc([calibration_train()] + sweep(("shm",)))))
    code = main(["predict", "train", "--calibration", one, "--plan", plans["dp4"], "--ranks-per-host", "2"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert ("--ranks-per-host 2 puts the 4 ranks on 2 hosts, but the calibration holds one transport series (shm): "
            "measure both link classes, each with `collectives --transports NAME`") in err


@pytest.mark.parametrize("flags, message", [
    (["--ranks-per-host", "3"], "--ranks-per-host 3: does not divide the 4 ranks"),
    (["--ranks-per-host", "2"], "--ranks-per-host 2 puts the 4 ranks on 2 hosts: give --intra-transport and"),
])
def test_search_refuses_a_bad_placement_before_planning_any_candidate(cal, capsys, monkeypatch, flags, message):
    """TRAINSCOPE_BIN is an existing file that is no trainscope: planning a candidate with it would fail otherwise."""
    monkeypatch.setenv("TRAINSCOPE_BIN", sys.executable)
    code = main(["predict", "search", "--calibration", cal, "--ranks", "4", *flags, "--", "--model", "mlp"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
