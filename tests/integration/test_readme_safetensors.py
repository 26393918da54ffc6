"""The README's lines for reading a consolidated checkpoint (issue #36) run as printed, in a directory laid out as
the repository (its scripts/, the consolidated model.safetensors), and give the shape their comment says; and
torch.load, which the README says cannot read the file, cannot (where Debian's python3-torch is installed)."""
import ast
import re

import pytest

from helpers import ROOT, run_trainscope


def readme_block():
    text = (ROOT / "README.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "model.safetensors" in b]
    return block


@pytest.fixture(scope="module")
def consolidated(tmp_path_factory):
    where = tmp_path_factory.mktemp("readme-safetensors")
    ckpt = where / "ckpt"
    r = run_trainscope(["train", "--model", "transformer", "--preset", "tiny", "--batch", 8, "--steps", 2, "--warmup-steps", 0,
                        "--no-ceiling", "--checkpoint-dir", ckpt])
    assert r.rc == 0, r.err
    r = run_trainscope(["checkpoint", "consolidate", ckpt, "-o", where / "model.safetensors"])
    assert r.rc == 0, r.err
    (where / "scripts").symlink_to(ROOT / "scripts")
    return where


def test_the_readmes_reading_of_a_consolidated_checkpoint_runs_as_printed(consolidated, monkeypatch):
    monkeypatch.chdir(consolidated)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    *lines, last = [line for line in readme_block().splitlines() if line.strip()]
    scope: dict = {}
    exec("\n".join(lines), scope)
    expression, comment = last.split("#", 1)
    shown = ast.literal_eval(comment.split(":")[0].strip())
    assert eval(expression, scope) == shown


def test_torch_load_cannot_read_it(consolidated):
    torch = pytest.importorskip("torch", reason="Debian's python3-torch is not installed")
    with pytest.raises(Exception):
        torch.load(consolidated / "model.safetensors")
