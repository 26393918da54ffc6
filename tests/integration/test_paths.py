"""trainscope against hostile paths (issue #17, docs/reliability.md "Paths"): every output path is checked
before anything is measured, a path that is not a regular file is never replaced, input files are
refused when they are devices or too large, and names from input never become path components."""
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from helpers import ROOT, Run, base_env, run_trainscope, trainscope_path

# The quickest measuring run: one small collective sweep on one process.
QUICK = ["collectives", "--ops", "all_reduce", "-b", "64", "-e", "64", "-n", "1", "-w", "0"]


def one_error(r):
    lines = r.error_lines()
    assert r.rc != 0 and len(lines) == 1, (r.rc, r.err)
    return lines[0]


def measured_nothing(r):
    return "all_reduce" not in r.out and "size" not in r.out


def test_json_never_replaces_a_device_a_fifo_or_a_link(tmp_path):
    dev = tmp_path / "null"
    os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null of our own
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    target = tmp_path / "target.json"
    target.write_text("keep")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    for path, kind in ((dev, "a character device"), (fifo, "a FIFO"), (link, "a symbolic link")):
        r = run_trainscope(QUICK + ["--json", path], timeout=60)
        assert f"--json {path}: is {kind}; only a regular file is replaced" in one_error(r)
        assert measured_nothing(r), r.out
    assert stat.S_ISCHR(os.lstat(dev).st_mode) and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert link.is_symlink() and target.read_text() == "keep"


def test_json_that_is_a_directory_is_refused_before_the_sweep(tmp_path):
    r = run_trainscope(QUICK + ["--json", tmp_path], timeout=60)
    assert f"--json {tmp_path}: is a directory" in one_error(r) and measured_nothing(r)
    assert not Path(f"{tmp_path}.jsonl").exists()
    r = run_trainscope(QUICK + ["--json", f"{tmp_path}/x/"], timeout=60)
    assert "names a directory (a file name is expected)" in one_error(r)


def test_train_checks_where_it_writes_before_training(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    train = ["train", "--steps", "3", "--warmup-steps", "1", "--no-ceiling"]
    for flag, path, why in (("--checkpoint-dir", afile, "is a regular file, not a directory"),
                            ("--dump-logits", fifo, "is a FIFO; only a regular file is replaced"),
                            ("--mllog", fifo, "is a FIFO; only a regular file is replaced"),
                            ("--trace", afile, "is a regular file, not a directory")):
        r = run_trainscope(train + [flag, path], timeout=120)
        assert f"{flag} {path}: {why}" in one_error(r)
        assert "loss" not in r.out  # no step trained
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_input_files_that_are_devices_are_not_read(tmp_path):
    r = run_trainscope(["links", "--tests", "memory", "--pairs", "/dev/zero"], timeout=60)
    assert "--pairs /dev/zero: is a character device, not a regular file" in one_error(r)
    r = run_trainscope(["suite", "/dev/zero"], timeout=60)
    assert "suite /dev/zero: is a character device, not a regular file" in one_error(r)
    r = run_trainscope(["kernels", "--shapes", "/dev/zero"], timeout=60)
    assert "--shapes /dev/zero: is a character device, not a regular file" in one_error(r)


def test_a_pairs_file_naming_an_unknown_host_stops_the_run_before_measuring(tmp_path):
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("nohost-a nohost-b\n")
    r = run_trainscope(["links", "--tests", "memory,mpi", "--pairs", pairs], np=2, timeout=120)
    assert r.rc != 0 and "host 'nohost-a' has no rank in this run" in r.err
    assert "GB/s" not in r.out  # the host-memory test never ran


def test_a_suite_name_never_leaves_the_results_folder(tmp_path):
    suite = tmp_path / "evil.toml"
    suite.write_text('[suite]\nname = "../../../../tmp/evil"\n\n[[step]]\nkind = "env"\n')
    r = run_trainscope(["suite", suite], timeout=120, cwd=tmp_path)
    assert r.rc == 0, r.err
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json"))
    assert len(written) == 1 and written[0].startswith("results/_.._.._.._.._tmp_evil-"), written


def test_suite_report_folder_is_checked_before_the_steps_run(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text('[suite]\nname = "s"\n\n[[step]]\nkind = "env"\n')
    afile = tmp_path / "afile"
    afile.write_text("x")
    r = run_trainscope(["suite", suite, "--json", tmp_path / "r.json", "--report", afile], timeout=120)
    assert f"--report {afile}: is a regular file, not a directory" in one_error(r)
    assert not (tmp_path / "r.json").exists() and "step 1/1" not in r.out


NOBODY = 65534


@pytest.fixture
def unwritable(tmp_path):
    """(a folder anyone may write, a folder in it nobody but root may) for runs as user nobody: root writes
    everywhere, so a permission test must drop it. Outside tmp_path, whose parents only root may enter."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv, to run trainscope as user nobody")
    top = Path(tempfile.mkdtemp(prefix="trainscope-perm-"))
    top.chmod(0o777)
    locked = top / "locked"
    locked.mkdir(mode=0o555)
    locked.chmod(0o555)
    yield top, locked
    shutil.rmtree(top)


def as_nobody(args, cwd, home):
    cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] + [str(a) for a in args]
    env = base_env({"HOME": str(home)})  # root's home is not nobody's to write (matplotlib's cache)
    return Run(subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, cwd=cwd))


@pytest.mark.parametrize("flag", ["--json", "--trace", "--checkpoint-dir", "--dump-logits", "--mllog"])
def test_a_folder_that_cannot_be_written_is_one_line_before_training(unwritable, flag):
    top, locked = unwritable
    target = locked / "out"
    args = [trainscope_path(), "train", "--model", "mlp", "--steps", "2", "--no-ceiling", flag, target]
    if flag != "--json":
        args += ["--json", top / "ok.json"]
    r = as_nobody(args, cwd=top, home=top)
    line = one_error(r)
    assert r.rc == 2 and f"{flag} {target}" in line and "Permission denied" in line, r.err
    assert "step" not in r.out and not (top / "ok.json").exists() and not (top / "ok.jsonl").exists()


def test_the_report_tool_refuses_a_folder_it_cannot_write(unwritable):
    top, locked = unwritable
    sample = ROOT / "tests" / "reports" / "data" / "ci-quiet-1.json"  # a committed real run
    r = as_nobody(["/usr/bin/python3", "-m", "reports", "report", sample, "-o", locked / "report"], cwd=ROOT, home=top)
    assert r.rc == 2 and "ermission denied" in r.err and len(r.err.strip().splitlines()) == 1, r.err
    assert not (locked / "report").exists()
