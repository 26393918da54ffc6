"""Checkpoints for every layout (issue #19): each rank writes its own shard and the index places every piece in
its whole tensor, so a run resumes on the same layout bit for bit, and on another layout (resharded on load)
with the loss continuing within float32 rounding of the uninterrupted run. Under mpirun; mlp tiny, 5 steps,
checkpoint after 3."""
import json
import shutil

import pytest

from helpers import run_trainscope

MODEL = ["--model", "mlp", "--preset", "tiny", "--batch", 8, "--lr", 1e-2, "--warmup-steps", 0, "--no-ceiling"]
STEPS, SAVED = 5, 3
# name: (processes, layout flags)
LAYOUTS = {
    "single": (1, []),
    "zero0": (2, ["--zero", 0]),
    "zero1-dp4": (4, ["--zero", 1]),
    "zero2": (2, ["--zero", 2]),
    "zero3": (2, ["--zero", 3]),
    "tp2": (2, ["--tp", 2]),
    "pp2": (2, ["--pp", 2, "--micro-batches", 2]),
    "ps": (2, ["--sync", "ps"]),
}
# Every layout resumes on at least two others (and back: tp2 <-> single, pp2 <-> single, zero3 <-> zero1-dp4).
RESHARD = [
    ("zero0", "zero3"), ("zero0", "pp2"),
    ("zero1-dp4", "zero3"), ("zero1-dp4", "tp2"),
    ("zero2", "tp2"), ("zero2", "single"),
    ("zero3", "zero1-dp4"), ("zero3", "pp2"),
    ("tp2", "single"), ("tp2", "zero2"),
    ("pp2", "single"), ("pp2", "zero1-dp4"),
    ("ps", "tp2"), ("ps", "zero3"),
    ("single", "tp2"), ("single", "pp2"),
]
RTOL = 1e-5


def train(where, name, layout, args):
    np, flags = LAYOUTS[layout]
    out = where / f"{name}.json"
    r = run_trainscope(["train", *MODEL, *flags, *args, "--json", out], np=np if np > 1 else None, timeout=300)
    assert r.rc == 0, (name, r.err)
    (rec,) = [x for x in json.loads(out.read_text())["records"] if x["kind"] == "train"]
    return rec


def losses(rec):
    return [s["loss"] for s in rec["loss_curve"]]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Per layout: the uninterrupted run, and a checkpoint of its first SAVED steps."""
    tmp = tmp_path_factory.mktemp("ckpt-layouts")
    out = {}
    for name in LAYOUTS:
        whole = train(tmp, f"{name}-whole", name, ["--steps", STEPS])
        ckpt = tmp / f"{name}-ckpt"
        first = train(tmp, f"{name}-first", name, ["--steps", SAVED, "--checkpoint-dir", ckpt])
        out[name] = (whole, first, ckpt)
    return tmp, out


@pytest.mark.parametrize("layout", [n for n in LAYOUTS if n != "single"])
def test_every_layout_writes_its_own_shard_and_resumes_bit_for_bit(runs, layout, validate):
    tmp, r = runs
    whole, first, ckpt = r[layout]
    np, _ = LAYOUTS[layout]
    step = ckpt / f"step-{SAVED:08d}"
    index = json.loads((step / "index.json").read_text())
    files = sorted(p.name for p in step.iterdir())
    # Every rank that holds a piece no lower rank holds writes a file (a ps worker and a tp replica's twin need not).
    assert "index.json" in files and len(index["files"]) >= 2 and len(index["files"]) <= np, files
    assert first["checkpoint"]["saves"] == 1 and first["checkpoint"]["write_bytes"] > 0
    for t in index["tensors"].values():  # every element of every tensor written exactly once
        elements = sum(p["region"]["elements"][1] - p["region"]["elements"][0] for p in t["pieces"])
        size = 1
        for d in t["shape"]:
            size *= d
        assert elements == size, t
    work = tmp / f"{layout}-resume-ckpt"
    shutil.copytree(ckpt, work)
    rest = train(tmp, f"{layout}-resume", layout, ["--steps", STEPS, "--checkpoint-dir", work, "--resume"])
    assert rest["first_step"] == SAVED
    assert losses(rest) == losses(whole)[SAVED:], "a resume on the same layout is the uninterrupted run, bit for bit"
    assert rest["checkpoint"]["read_bytes"] > 0 and rest["checkpoint"]["read_s"] > 0


@pytest.mark.parametrize("source,target", RESHARD, ids=[f"{a}-to-{b}" for a, b in RESHARD])
def test_a_checkpoint_reshards_onto_another_layout(runs, source, target):
    tmp, r = runs
    whole, _, ckpt = r[source]
    work = tmp / f"{source}-to-{target}"
    shutil.copytree(ckpt, work)
    rest = train(tmp, f"{source}-to-{target}", target, ["--steps", STEPS, "--checkpoint-dir", work, "--resume"])
    assert rest["first_step"] == SAVED
    assert rest["layout"]["name"] != json.loads((ckpt / f"step-{SAVED:08d}" / "index.json").read_text())["config"]["resolved"]["layout"]["name"]
    assert losses(rest) == pytest.approx(losses(whole)[SAVED:], rel=RTOL)


def test_async_checkpoints_resume_exactly_and_record_their_stall(tmp_path, validate):
    ckpt = tmp_path / "ckpt"
    args = ["--checkpoint-dir", ckpt, "--checkpoint-every", 1, "--checkpoint-async"]
    first = train(tmp_path, "async-first", "zero1-dp4", ["--steps", SAVED, *args])
    validate(json.loads((tmp_path / "async-first.json").read_text()))
    c = first["checkpoint"]
    assert c["mode"] == "async" and c["saves"] == SAVED and len(c["stall_s"]) == SAVED
    assert sorted(p.name for p in ckpt.iterdir()) == ["latest"] + [f"step-{s:08d}" for s in range(1, SAVED + 1)]
    whole = train(tmp_path, "whole", "zero1-dp4", ["--steps", STEPS])
    rest = train(tmp_path, "async-rest", "zero1-dp4", ["--steps", STEPS, *args[:2], "--resume"])
    assert losses(rest) == losses(whole)[SAVED:]


def test_consolidate_writes_the_whole_model_from_any_layout(runs, tmp_path):
    """tp2's slices and ZeRO-3's pieces consolidate to the same tensors as one process's checkpoint of the same steps."""
    _, r = runs
    from test_train import read_safetensors
    got = {}
    for layout in ("single", "tp2", "zero3", "pp2"):
        out = tmp_path / f"{layout}.safetensors"
        res = run_trainscope(["checkpoint", "consolidate", r[layout][2], "-o", out])
        assert res.rc == 0, res.err
        got[layout] = read_safetensors(out)
    assert set(got["single"]) == {"layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias", "layers.4.weight", "layers.4.bias"}
    for layout in ("tp2", "zero3", "pp2"):
        assert set(got[layout]) == set(got["single"])
        for name, w in got["single"].items():
            assert got[layout][name].shape == w.shape
            assert abs(got[layout][name] - w).max() <= 1e-5 * max(1.0, abs(w).max()), (layout, name)


def test_consolidate_of_nothing_is_one_line(tmp_path):
    r = run_trainscope(["checkpoint", "consolidate", tmp_path / "none", "-o", tmp_path / "x.safetensors"])
    assert r.rc == 2 and len(r.error_lines()) == 1 and "does not exist" in r.error_lines()[0], r.err
    assert not (tmp_path / "x.safetensors").exists()


@pytest.mark.parametrize("change,message", [
    (["--optimizer", "sgd"], "was trained with --optimizer adamw, not sgd"),
    (["--set", "width=32"], "holds another model"),
    (["--seed", 7], "was trained on other data"),
])
def test_a_resume_into_another_run_is_one_line(tmp_path, change, message):
    ckpt = tmp_path / "ckpt"
    train(tmp_path, "first", "single", ["--steps", 2, "--checkpoint-dir", ckpt])
    r = run_trainscope(["train", *MODEL, "--steps", 4, "--checkpoint-dir", ckpt, "--resume", *change])
    assert r.rc == 2 and len(r.error_lines()) == 1 and message in r.error_lines()[0], r.err
