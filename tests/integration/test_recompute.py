"""--recompute none|selective|full (issue #39): activation recomputation changes memory and time, not the function.
Every layout's loss curve under full and selective recomputation is the one without, bit for bit (dropout on, so its
masks must be drawn again alike in the recomputed forward; ZeRO-3 gathers a layer before its backward, which now
starts with the recomputed forward); the activations each rank holds (the allocator's peak for kActivations) are
what docs/architecture.md's formula says, for the transformer and the mlp, and smaller under recomputation (the cnn's
too, its batch norms' running statistics updated once a step as without); the extra FLOPs are recorded beside the
model's; a bad value is one error line."""
import json

import pytest

from helpers import run_trainscope

MODELS = {
    # b sequences of T tokens, C channels, H heads, L blocks, V vocabulary (the tiny preset: 2 blocks, 64, 4, 32, 256).
    "transformer": ["--model", "transformer", "--preset", "tiny", "--batch", 4],
    # An mlp whose hidden layers (width 256) are the most of its activations; 784 synthetic input features.
    "mlp": ["--model", "mlp", "--preset", "tiny", "--set", "depth=4", "--set", "width=256", "--batch", 8],
    # A ResNet of three basic blocks (one a stage) on 32x32 images: each block one recomputed unit.
    "cnn": ["--model", "cnn", "--preset", "tiny", "--batch", 8],
}
LAYOUTS = {
    "one": (None, []),
    "dp2": (2, []),
    "tp2": (2, ["--tp", 2]),
    "pp2": (2, ["--pp", 2, "--micro-batches", 2]),
    "zero3": (2, ["--zero", 3]),
}
DROPOUT = 0.1
FLOAT = 4


def train(tmp_path, name, model, mode, np=None, flags=(), validate=None):
    out = tmp_path / f"{model}-{name}-{mode}.json"
    args = ["train", "--no-ceiling", "--steps", 3, "--dropout", DROPOUT, "--recompute", mode, "--json", out]
    r = run_trainscope(args + MODELS[model] + list(flags), np=np, timeout=300)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    if validate:
        validate(doc)
    (rec,) = [x for x in doc["records"] if x["kind"] == "train"]
    return rec


def losses(rec):
    return [p["loss"] for p in rec["loss_curve"]]


def activations(rec):
    return [m["peak_bytes"]["activations"] for m in rec["memory"]["ranks"]]


def transformer_bytes(mode, b, T=32, C=64, H=4, L=2, V=256):
    """docs/architecture.md: a block holds 44 N C + 4 N + 3 b H T^2 floats (N = b T rows), 4 N C more with dropout;
    the rest of the model (embedding output and its dropout, final layernorm, LM head, loss, tokens) 4 N C + 2 N V + 5 N
    (+ 2 N C). Selective shares the three [b, H, T, T] buffers among the blocks; full keeps one block's buffers, each
    block's output and two input gradients."""
    N = b * T
    scores = 3 * b * H * T * T
    block = 44 * N * C + 4 * N + scores + 4 * N * C
    rest = 4 * N * C + 2 * N * V + 5 * N + 2 * N * C
    kept = {"none": L * block, "selective": L * (block - scores) + scores, "full": block + (L + 2) * N * C}[mode]
    return FLOAT * (rest + kept)


def mlp_bytes(mode, b, inputs=784, w=256, depth=4, classes=10):
    """docs/architecture.md: hidden layer i holds b in_i + 3 b w floats (its Linear's output and input gradient, its
    activation's two), 2 b w more with dropout; the rest (the input, the head, the loss) b in + 2 b K + b w + 2 b.
    Full keeps the largest hidden layer's buffers (the first's), each layer's output, the first's zero input gradient
    and two input gradients of b w. Selective recomputes nothing in the mlp (it has no attention)."""
    unit = [b * (inputs if i == 0 else w) + 5 * b * w for i in range(depth)]
    rest = b * inputs + 2 * b * classes + b * w + 2 * b
    kept = sum(unit) if mode != "full" else max(unit) + depth * b * w + b * inputs + 2 * b * w
    return FLOAT * (rest + kept)


FORMULA = {"transformer": transformer_bytes, "mlp": mlp_bytes}
# The formulas count every buffer the layers take; a small allowance for one added elsewhere (the differences
# between the modes are tens of percent).
TOLERANCE = 0.01


def modes(model):
    return ["none", "full", "selective"] if model == "transformer" else ["none", "full"]


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_recomputation_keeps_the_losses_bit_for_bit(tmp_path, model, layout, validate):
    np, flags = LAYOUTS[layout]
    recs = {mode: train(tmp_path, layout, model, mode, np, flags, validate) for mode in modes(model)}
    for mode, rec in recs.items():
        assert rec["config"]["recompute"] == mode and rec["memory"]["recompute"] == mode
        assert losses(rec) == losses(recs["none"]), mode
        assert len(losses(rec)) == 3
    if layout == "pp2":
        # Each stage holds its own units alone: one that holds a single unit (the mlp's first, half its FLOPs) gains
        # nothing from recomputing it (it keeps the unit's buffers, and its input and output besides); the
        # pipeline's ranks together hold less.
        assert sum(activations(recs["full"])) < sum(activations(recs["none"]))
    else:
        assert max(activations(recs["full"])) < min(activations(recs["none"]))
    if layout in ("one", "dp2") and model in FORMULA:  # every rank holds the whole model's activations for its share of the batch
        b = (4 if model == "transformer" else 8) // (np or 1)
        for mode, rec in recs.items():
            for measured in activations(rec):
                assert measured == pytest.approx(FORMULA[model](mode, b), rel=TOLERANCE), mode


def test_mixed_precision_rounds_inside_a_unit_as_between_layers(tmp_path):
    """bfloat16 rounds the activations and their gradients between the model's layers; an mlp unit holds three
    (Linear, activation, dropout) and rounds between them alike."""
    flags = ["--precision", "bfloat16"]
    assert losses(train(tmp_path, "bf16", "mlp", "full", flags=flags)) == losses(train(tmp_path, "bf16", "mlp", "none", flags=flags))


def test_batch_norms_running_statistics_are_updated_once_a_step(tmp_path):
    """The recomputed forward of a cnn block normalises with the batch's statistics again but leaves the running ones
    (each block's own, not shared with the other units' buffers): the evaluations, which normalise with the running
    statistics, are the same bit for bit."""
    flags = ["--synthetic-size", 1024, "--eval-every", 3, "--eval-batches", 2, "--warmup-steps", 1]

    def points(mode):
        rec = train(tmp_path, "eval", "cnn", mode, flags=flags)
        return [(p["step"], p["loss"], p["accuracy"]) for p in rec["eval"]["points"]]

    none = points("none")
    assert len(none) == 1 and none == points("full")


def test_selective_on_the_mlp_recomputes_nothing(tmp_path):
    none = train(tmp_path, "one", "mlp", "none")
    selective = train(tmp_path, "one", "mlp", "selective")
    assert losses(selective) == losses(none)
    assert activations(selective) == activations(none)
    assert selective["recompute_flops_per_step"] == 0


def test_the_recomputed_flops_are_recorded_beside_the_models(tmp_path):
    """flops_per_step stays the model's (MFU's numerator, as Megatron counts it); recompute_flops_per_step is the
    forward run again: every block's under full, q k^T (2 b H T^2 D a block) under selective."""
    recs = {mode: train(tmp_path, "one", "transformer", mode) for mode in ("none", "selective", "full")}
    flops = {m: r["flops_per_step"] for m, r in recs.items()}
    assert flops["none"] == flops["selective"] == flops["full"]
    b, T, C, H, L = 4, 32, 64, 4, 2
    block = 24 * b * T * C * C + 4 * b * T * T * C
    assert recs["none"]["recompute_flops_per_step"] == 0
    assert recs["full"]["recompute_flops_per_step"] == L * block
    assert recs["selective"]["recompute_flops_per_step"] == L * 2 * b * H * T * T * (C // H)


@pytest.mark.parametrize("args,message", [
    (["--recompute", "bogus"], "--recompute bogus: expected none, selective or full"),
])
def test_a_bad_recompute_is_one_error_line(tmp_path, args, message):
    r = run_trainscope(["train", "--no-ceiling", "--steps", 1, *args, "--json", tmp_path / "x.json"])
    assert r.rc == 2 and len(r.error_lines()) == 1 and message in r.error_lines()[0], r.err
    assert not (tmp_path / "x.json").exists()


def test_a_transformer_whose_model_states_exceed_the_cap_trains_under_zero3_with_full_recomputation(tmp_path):
    """Issue #39's acceptance: a transformer whose model states alone exceed a per-rank cap on one rank (16 bytes a
    parameter with Adam) trains at 4 ranks with ZeRO-3 (sharded from setup on) and full recomputation (the blocks'
    activations shared), its losses those of the uncapped run; without recomputation the same cap is not met."""
    model = ["--model", "transformer", "--preset", "tiny", "--set", "hidden=256", "--set", "heads=4", "--set", "layers=4",
             "--set", "seq_len=128", "--batch", 8, "--steps", 2, "--warmup-steps", 1, "--no-ceiling"]

    def run(name, flags, np):
        out = tmp_path / f"{name}.json"
        return run_trainscope(["train", *model, *flags, "--json", out], np=np, timeout=300), out

    def record(out):
        (rec,) = [x for x in json.loads(out.read_text())["records"] if x["kind"] == "train"]
        return rec

    r, free = run("free", ["--zero", 3, "--recompute", "full"], 4)
    assert r.rc == 0, r.err
    rec = record(free)
    one_rank_states = 16 * rec["parameters"]
    peak = max(max(m["total_peak_bytes"], m["setup_peak_bytes"]) for m in rec["memory"]["ranks"])
    cap = (peak + one_rank_states) // 2
    assert peak < cap < one_rank_states, (peak, one_rank_states)
    limit = ["--memory-limit", f"{cap // 1024}K"]

    # Refused for its model states, checked before anything is built (before, building its activations came first
    # and the line named them: advice that could not help).
    r, _ = run("one", limit, None)
    assert r.rc == 2 and len(set(r.error_lines())) == 1, r.err
    assert r.error_lines()[0].startswith(f"trainscope: error: --memory-limit {cap / 2**20:.1f} MiB per rank: single needs "), r.err
    assert "of model states per rank" in r.error_lines()[0]
    r, capped = run("capped", ["--zero", 3, "--recompute", "full", *limit], 4)
    assert r.rc == 0, r.err
    assert losses(record(capped)) == losses(rec)
    assert all(max(m["total_peak_bytes"], m["setup_peak_bytes"]) <= cap for m in record(capped)["memory"]["ranks"])
    r, _ = run("no-recompute", ["--zero", 3, *limit], 4)
    assert r.rc == 2 and len(set(r.error_lines())) == 1, r.err
    assert "needed" in r.error_lines()[0] and "activations" in r.error_lines()[0]
