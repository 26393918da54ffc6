"""Data augmentation (issue #21): --augment crop-flip crops and flips each training image by draws keyed
by the sample's global position, so every layout trains on the same images (dp2 with SyncBatchNorm follows
the one-process run), augmentation changes the images (and so the losses), and a model whose samples are
not images refuses it in one line."""
import json

import pytest

from helpers import run_trainscope

CNN = ["--model", "cnn", "--preset", "tiny", "--batch", 8, "--lr", 0.05, "--optimizer", "sgd", "--steps", 5,
       "--warmup-steps", 1, "--no-ceiling"]


def losses(tmp_path, name, args, np=None):
    out = tmp_path / f"{name}.json"
    r = run_trainscope(["train", "--json", out] + CNN + args, np=np, timeout=600)
    assert r.rc == 0, r.err
    (rec,) = [x for x in json.loads(out.read_text())["records"] if x["kind"] == "train"]
    assert rec["config"]["augment"] == ("crop-flip" if "--augment" in args else "none")
    return [p["loss"] for p in rec["loss_curve"]]


def test_augmented_images_are_the_same_in_every_layout(tmp_path):
    one = losses(tmp_path, "one", ["--augment", "crop-flip"])
    two = losses(tmp_path, "dp2", ["--augment", "crop-flip", "--dp", 2], np=2)
    plain = losses(tmp_path, "plain", [])
    assert two == pytest.approx(one, rel=1e-5)
    assert one[0] != pytest.approx(plain[0], rel=1e-6), "the first step already sees other images"


def test_samples_that_are_not_images_refuse_it_in_one_line():
    r = run_trainscope(["train", "--model", "transformer", "--steps", 2, "--no-ceiling", "--augment", "crop-flip"])
    assert r.rc == 2 and len(r.error_lines()) == 1, r.err
    assert "--augment crop-flip is for images [C, H, W]" in r.error_lines()[0]
