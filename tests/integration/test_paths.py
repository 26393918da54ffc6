"""trainscope against hostile paths (issue #17, docs/reliability.md "Paths"): every output path is checked
before anything is measured, a path that is not a regular file is never replaced, input files are
refused when they are devices or too large, and names from input never become path components."""
import os
import stat
from pathlib import Path

from helpers import run_trainscope

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
