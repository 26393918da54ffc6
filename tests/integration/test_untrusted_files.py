"""What trainscope writes never goes through a link planted in its folder, a re-run never deletes what an earlier
run left, and every file it reads but did not write is a regular file of bounded size, read so that a FIFO, a
device or a file truncated under the run ends it with one line (issue #34 items 2-5, docs/reliability.md
"Files in shared folders"). Each case is bounded by a subprocess timeout: a hang fails the test."""
import os
import re
import struct
import subprocess
import time

import pytest

from helpers import base_env, read_jsonl, run_trainscope, trainscope_path

QUICK = ["collectives", "--ops", "all_reduce", "-b", "64", "-e", "64", "-n", "1", "-w", "0"]
TRAIN = ["train", "--steps", "3", "--warmup-steps", "1", "--no-ceiling"]
BOUND = 60  # seconds: each case ends in about one; a hang is far beyond it


def one_error(r):
    lines = r.error_lines()
    assert r.rc != 0 and len(lines) == 1, (r.rc, r.err)
    return lines[0]


def names_not_regular(line, path, kind):
    """The early check of --data says "file PATH: is a KIND, not a regular file"; the reader, should the file change
    after that check, "cannot read PATH: it is a KIND, not a regular file". Either is the one line wanted."""
    return re.search(rf"{re.escape(str(path))}: (it )?is a {kind}, not a regular file", line) is not None


def test_an_atomic_write_never_goes_through_a_link_planted_at_its_temporary_name(tmp_path):
    """The old temporary name was <out>.tmp.<pid>.<n>: a shell that plants the links and then execs trainscope
    (same pid) is the local attacker who guessed the pid."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    out = shared / "r.json"
    plant = "; ".join(f"ln -s {victim} {out}.tmp.$$.{n}" for n in range(10))
    cmd = f"{plant}; exec {trainscope_path()} {' '.join(QUICK)} --json {out}"
    r = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, env=base_env(), timeout=BOUND)
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "precious"
    assert not out.is_symlink() and '"records"' in out.read_text()


def test_a_final_name_that_is_a_link_is_refused_and_its_target_kept(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "r.json").symlink_to(victim)
    r = run_trainscope(QUICK + ["--json", tmp_path / "r.json"], timeout=BOUND)
    assert "is a symbolic link; only a regular file is replaced" in one_error(r)
    assert victim.read_text() == "precious"


def test_a_rerun_that_fails_after_start_up_keeps_the_earlier_stream(tmp_path):
    """An out.jsonl may be the only copy of a killed run's steps: a late error (a root outside the world, a data
    file that is not there) must leave it as it was."""
    stream = tmp_path / "out.jsonl"
    for args in (["collectives", "--ops", "broadcast", "--root", "5"],
                 TRAIN + ["--model", "mlp", "--data", f"text:{tmp_path / 'absent.txt'}"]):
        stream.write_text('{"kind": "run"}\n{"kind": "train_progress", "train_step": 0}\n')
        r = run_trainscope(args + ["--json", tmp_path / "out.json"], timeout=BOUND)
        one_error(r)
        assert stream.read_text() == '{"kind": "run"}\n{"kind": "train_progress", "train_step": 0}\n'
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_a_rerun_that_measures_keeps_the_earlier_stream_aside_and_says_so(tmp_path):
    stream = tmp_path / "out.jsonl"
    stream.write_text("earlier\n")
    (tmp_path / "out.jsonl.1").write_text("earliest\n")
    r = run_trainscope(QUICK + ["--json", tmp_path / "out.json"], timeout=BOUND)
    assert r.rc == 0, r.err
    assert f"kept the earlier {stream} as {stream}.2" in r.err
    assert (tmp_path / "out.jsonl.2").read_text() == "earlier\n" and (tmp_path / "out.jsonl.1").read_text() == "earliest\n"
    assert read_jsonl(stream)[0]["kind"] == "run"


def test_an_mllog_never_replaces_an_earlier_one(tmp_path):
    log = tmp_path / "run.mllog"
    log.write_text("earlier\n")
    r = run_trainscope(TRAIN + ["--model", "mlp", "--mllog", log], timeout=BOUND)
    assert r.rc == 0, r.err
    assert (tmp_path / "run.mllog.1").read_text() == "earlier\n" and ":::MLLOG" in log.read_text()


def mnist_dir(d, n=16):
    d.mkdir()
    (d / "train-images-idx3-ubyte").write_bytes(struct.pack(">IIII", 2051, n, 4, 4) + bytes(16 * n))
    (d / "train-labels-idx1-ubyte").write_bytes(struct.pack(">II", 2049, n) + bytes(n))
    return d


def fifo_data(tmp_path, kind):
    """A --data whose file (or one of its folder's files) is a FIFO nobody writes to."""
    if kind == "text":
        os.mkfifo(tmp_path / "f")
        return ["--model", "transformer", "--data", f"text:{tmp_path / 'f'}"], tmp_path / "f"
    if kind == "mnist":
        d = mnist_dir(tmp_path / "mnist")
        os.unlink(d / "train-images-idx3-ubyte")
        os.mkfifo(d / "train-images-idx3-ubyte")
        return ["--model", "mlp", "--data", f"mnist:{d}"], d / "train-images-idx3-ubyte"
    d = tmp_path / "cifar"
    d.mkdir()
    for b in range(2, 6):
        (d / f"data_batch_{b}.bin").write_bytes(bytes(3073))
    os.mkfifo(d / "data_batch_1.bin")
    return ["--model", "cnn", "--data", f"cifar10:{d}"], d / "data_batch_1.bin"


@pytest.mark.parametrize("kind", ["text", "mnist", "cifar10"])
def test_a_fifo_as_training_data_is_one_line_not_a_hang(tmp_path, kind):
    args, fifo = fifo_data(tmp_path, kind)
    r = run_trainscope(TRAIN + args, timeout=BOUND)
    assert names_not_regular(one_error(r), fifo, "FIFO") and r.rc == 2


def test_a_fifo_as_training_data_in_a_suite_is_one_line_not_a_hang(tmp_path):
    os.mkfifo(tmp_path / "f")
    suite = tmp_path / "s.toml"
    suite.write_text(f'[[step]]\nkind = "train"\nmodel = "transformer"\ndata = "text:{tmp_path / "f"}"\nsteps = 3\n'
                     'warmup_steps = 1\nceiling = false\n')
    r = run_trainscope(["suite", suite, "--json", tmp_path / "s.json"], timeout=BOUND)
    assert names_not_regular(one_error(r), tmp_path / "f", "FIFO")


def test_a_device_as_training_data_says_what_it_is(tmp_path):
    r = run_trainscope(TRAIN + ["--model", "transformer", "--data", "text:/dev/zero"], timeout=BOUND)
    line = one_error(r)
    assert names_not_regular(line, "/dev/zero", "character device") and "No such file" not in line


def test_a_data_file_truncated_while_training_is_one_line_not_sigbus(tmp_path):
    data = tmp_path / "t.txt"
    data.write_bytes(bytes(range(32, 127)) * 400)
    out = tmp_path / "t.json"
    cmd = [trainscope_path(), "train", "--model", "transformer", "--data", f"text:{data}", "--steps", "100000", "--no-ceiling",
           "--json", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=base_env({"TRAINSCOPE_FAULT": "delay:rank=0:ms=20"}))
    stream = tmp_path / "t.jsonl"
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline and proc.poll() is None:
        if stream.exists() and sum(r["kind"] == "train_progress" for r in read_jsonl(stream)) >= 3:
            break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail(f"no steps trained: {proc.communicate()[1]}")
    os.truncate(data, 0)
    try:
        _, err = proc.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the run went on after its data file was truncated")
    lines = [line for line in err.splitlines() if line.startswith("trainscope: error:")]
    assert proc.returncode == 2, (proc.returncode, err)  # not 135 / -SIGBUS
    assert len(lines) == 1 and f"{data} changed while in use: it is 0 bytes now, 38000 when it was opened" in lines[0], err


@pytest.fixture(name="checkpoint")
def fixture_checkpoint(tmp_path):
    """A finished checkpoint of a small run, and its step directory."""
    ck = tmp_path / "ck"
    r = run_trainscope(TRAIN + ["--model", "mlp", "--checkpoint-dir", ck], timeout=BOUND)
    assert r.rc == 0, r.err
    return ck, ck / (ck / "latest").read_text().strip()


def resume(ck):
    return run_trainscope(["train", "--model", "mlp", "--steps", "5", "--warmup-steps", "1", "--no-ceiling", "--resume",
                           "--checkpoint-dir", ck], timeout=BOUND)


def replace_with_fifo(path):
    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize("which", ["latest", "index.json", "rank-00000.safetensors"])
def test_checkpoint_files_that_are_fifos_are_one_line_not_a_hang(checkpoint, which):
    ck, step = checkpoint
    path = ck / which if which == "latest" else step / which
    replace_with_fifo(path)
    assert f"cannot read {path}: it is a FIFO, not a regular file" in one_error(resume(ck))


@pytest.mark.parametrize("which", ["latest", "index.json"])
def test_checkpoint_metadata_linked_to_dev_zero_is_refused_at_once(checkpoint, which):
    ck, step = checkpoint
    path = ck / which if which == "latest" else step / which
    path.unlink()
    path.symlink_to("/dev/zero")
    line = one_error(resume(ck))
    assert f"cannot read {path}: it is a character device, not a regular file" in line, line


def test_checkpoint_metadata_over_its_bound_is_refused_before_it_is_read(checkpoint):
    ck, _ = checkpoint
    with open(ck / "latest", "r+b") as f:
        f.truncate(1 << 20)  # sparse: no time to write, and far past what a step name needs
    assert f"cannot read {ck / 'latest'}: it is 1048576 bytes, more than the 4096 this input may be" in one_error(resume(ck))
