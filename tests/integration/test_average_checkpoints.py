"""Checkpoints of model averaging (issue #36): under --sync average the data-parallel replicas differ between
averagings (the parameters) and, without --average-optimizer, always (the optimizer state), so a checkpoint that
kept data-parallel rank 0's alone resumed every rank from rank 0's copy, and the resumed run trained otherwise.
Each rank now writes its own copies where they differ, and a resume on the same layout is the uninterrupted run,
bit for bit, for every setting: with and without --average-optimizer, saved on an averaging step and between two.
Under mpirun -np 2; mlp tiny, averaged every 2 steps, 5 steps, saved after 2 (an averaging) or 3 (between)."""
import json
import shutil

import pytest

from helpers import run_trainscope

BASE = ["--model", "mlp", "--preset", "tiny", "--batch", 8, "--optimizer", "adamw", "--lr", 1e-2, "--warmup-steps", 0,
        "--no-ceiling"]
AVERAGE = ["--sync", "average", "--average-every", 2]
MODEL = BASE + AVERAGE
STEPS = 5
SETTINGS = {"params": [], "params+optimizer": ["--average-optimizer"]}
SAVES = {"on-averaging": 2, "between-averagings": 3}


def train(where, name, args, model=MODEL):
    out = where / f"{name}.json"
    r = run_trainscope(["train", *model, *args, "--json", out], np=2, timeout=300)
    assert r.rc == 0, (name, r.err)
    (rec,) = [x for x in json.loads(out.read_text())["records"] if x["kind"] == "train"]
    return rec


def losses(rec):
    return [s["loss"] for s in rec["loss_curve"]]


def replicas(ckpt, step):
    """The checkpoint's tensors that are data-parallel rank 1's own copies, by kind."""
    index = json.loads((ckpt / f"step-{step:08d}" / "index.json").read_text())
    return sorted(name for name, t in index["tensors"].items() if t["kind"] == "replica")


@pytest.fixture(scope="module")
def wholes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("average-whole")
    return {s: train(tmp, s, ["--steps", STEPS, *flags]) for s, flags in SETTINGS.items()}


@pytest.mark.parametrize("save", list(SAVES))
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_a_resume_of_model_averaging_is_the_uninterrupted_run(tmp_path, wholes, setting, save):
    flags, saved = SETTINGS[setting], SAVES[save]
    ckpt = tmp_path / "ckpt"
    train(tmp_path, "first", ["--steps", saved, "--checkpoint-dir", ckpt, *flags])
    # What differs from rank 0's copy is saved as rank 1's own: the parameters between averagings, the
    # optimizer state unless it was just averaged with them (an mlp has no buffers).
    own = replicas(ckpt, saved)
    params_differ, moments_differ = save == "between-averagings", save == "between-averagings" or not flags
    assert any(n.endswith(".weight@dp1") for n in own) == params_differ, own
    assert any(n.endswith(".exp_avg@dp1") for n in own) == moments_differ, own
    assert all(n.endswith("@dp1") for n in own)
    work = tmp_path / "resume-ckpt"
    shutil.copytree(ckpt, work)
    rest = train(tmp_path, "rest", ["--steps", STEPS, "--checkpoint-dir", work, "--resume", *flags])
    assert rest["first_step"] == saved
    assert losses(rest) == losses(wholes[setting])[saved:], "a resume on the same layout is the uninterrupted run"


def test_batch_norms_running_statistics_are_each_replicas_own(tmp_path):
    """A CNN's batch norm statistics are never averaged (and without SyncBatchNorm each rank's are its own batches'):
    each rank's are saved, so evaluations after a resume read the same statistics."""
    cnn = ["cnn" if a == "mlp" else a for a in MODEL] + ["--sync-bn", "off", "--eval-every", 1, "--eval-batches", 1]
    whole = train(tmp_path, "whole", ["--steps", STEPS], cnn)
    ckpt = tmp_path / "ckpt"
    train(tmp_path, "first", ["--steps", 3, "--checkpoint-dir", ckpt], cnn)
    assert any("running_mean@dp1" in n for n in replicas(ckpt, 3)), replicas(ckpt, 3)
    rest = train(tmp_path, "rest", ["--steps", STEPS, "--checkpoint-dir", ckpt, "--resume"], cnn)
    assert losses(rest) == losses(whole)[3:]
    evals = [(p["step"], p["loss"]) for p in rest["eval"]["points"]]
    assert evals and evals == [(p["step"], p["loss"]) for p in whole["eval"]["points"] if p["step"] > 3]


def test_consolidate_writes_rank_0s_model_of_a_checkpoint_with_replicas(tmp_path):
    from test_train import read_safetensors
    ckpt = tmp_path / "ckpt"
    train(tmp_path, "first", ["--steps", 3, "--checkpoint-dir", ckpt])
    assert replicas(ckpt, 3)
    out = tmp_path / "model.safetensors"
    r = run_trainscope(["checkpoint", "consolidate", ckpt, "-o", out, "--optimizer"])
    assert r.rc == 0, r.err
    names = set(read_safetensors(out))
    assert "layers.0.weight" in names and "layers.0.weight.exp_avg" in names and not any("@" in n for n in names)


@pytest.mark.parametrize("change,np", [(AVERAGE, 1), ([], 2)], ids=["one-rank", "allreduce"])
def test_replicas_saved_apart_resume_only_as_themselves_else_one_line(tmp_path, change, np):
    ckpt = tmp_path / "ckpt"
    train(tmp_path, "first", ["--steps", 3, "--checkpoint-dir", ckpt])
    r = run_trainscope(["train", *BASE, *change, "--steps", STEPS, "--checkpoint-dir", ckpt, "--resume"],
                       np=np if np > 1 else None, timeout=300)
    assert r.rc == 2 and len(r.error_lines()) == 1, r.err
    assert "holds the 2 data-parallel replicas of --sync average apart" in r.error_lines()[0], r.err
