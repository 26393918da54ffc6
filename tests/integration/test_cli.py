"""The command line a new user meets first (issue #22): a missing or misspelt subcommand names the
subcommands, and a boolean flag's help gives each spelling its own line and the default in words."""
import json

import pytest

from helpers import run_trainscope

from reports.common.option_facts import all_subcommands

SUBCOMMANDS = ", ".join(all_subcommands())


@pytest.mark.parametrize("args,line", [
    ([], f"a subcommand is required: {SUBCOMMANDS}"),
    (["--frobnicate"], f"a subcommand is required: {SUBCOMMANDS}"),
    (["trian"], f"unknown subcommand 'trian' (did you mean train?): expected one of {SUBCOMMANDS}"),
    (["a\nb\x1b"], "unknown subcommand 'a\\x0ab\\x1b': expected one of"),  # one line whatever was typed
])
def test_a_missing_or_unknown_subcommand_names_the_subcommands(args, line):
    r = run_trainscope(args)
    assert r.rc == 2 and len(r.error_lines()) == 1, r.err
    assert line in r.error_lines()[0], r.err


@pytest.mark.parametrize("command,flag,default,alias", [(["train"], "ceiling", "on", ""), (["collectives"], "check", "on", ""),
                                                        (["kernels"], "ceiling", "on", "ceilings")])
def test_a_boolean_flags_help_says_its_default_in_words(command, flag, default, alias):
    """kernels' --ceilings is train's --ceiling since issue #35, its old name an alias the help names."""
    r = run_trainscope(command + ["--help"])
    assert r.rc == 0, r.err
    lines = [line.split(None, 1) for line in r.out.splitlines() if line.strip().startswith(f"--{flag} ") or
             line.strip().startswith(f"--no-{flag} ")]
    assert [words[0] for words in lines] == [f"--{flag}", f"--no-{flag}"], r.out
    set_note, clear_note = (f" (alias: --{alias})", f" (alias: --no-{alias})") if alias else ("", "")
    assert lines[0][1].endswith(f"(default: {default}){set_note}") and lines[1][1] == f"The opposite of --{flag}{clear_note}"
    assert "{false}" not in r.out and "{true}" not in r.out


def test_the_version_says_which_optional_parts_were_built():
    """setup.sh prints this line after the build: what can run on this machine (issue #22)."""
    r = run_trainscope(["--version"])
    assert r.rc == 0, r.err
    head, built = r.out.strip().split(", built with: ")
    assert head.startswith("trainscope ")
    parts = dict(p.rsplit(" ", 1) for p in built.split(", "))
    assert list(parts) == ["CUDA", "NCCL", "cuDNN", "MPI", "OpenBLAS", "oneDNN", "hwloc", "ibverbs", "NVTX"]
    assert set(parts.values()) <= {"yes", "no"} and parts["OpenBLAS"] == "yes"


@pytest.mark.parametrize("args", [
    ["train", "--dtype", "bf16"], ["train", "--precision", "fp16"], ["kernels", "--device", "cpu", "--precision", "bf16"],
    ["kernels", "--backend", "cpu", "--dtype", "bfloat16"],
])
def test_one_vocabulary_across_subcommands(args):
    """train's --precision and --device and kernels' --dtype and --backend are each other's aliases, bf16 and fp16
    everywhere (parsed only: TRAINSCOPE_PARSE_ONLY stops after the command line)."""
    r = run_trainscope(args, env={"TRAINSCOPE_PARSE_ONLY": "1"})
    assert r.rc == 0, r.err


def test_a_nccl_tests_command_line_runs_as_it_reads(tmp_path):
    """The flags a user pastes from nccl-tests (all_reduce_perf -b 8 -e 64 -f 2 -g 1 -t 1 -c 1 -z 0 -a 3 -R 0 -m 1)
    mean the same here: the sweep runs, checked."""
    out = tmp_path / "n.json"
    r = run_trainscope(["collectives", "--ops", "all_reduce", "-b", "8", "-e", "64", "-f", "2", "-g", "1", "-t", "1", "-c", "1",
                        "-z", "0", "-a", "3", "-R", "0", "-m", "1", "-n", "3", "-w", "1", "--json", out], np=2)
    assert r.rc == 0, r.err
    recs = [x for x in json.loads(out.read_text())["records"] if x["kind"] == "collective"]
    assert sorted({x["bytes"] for x in recs}) == [8, 16, 32, 64] and all(x["check"]["performed"] for x in recs)


@pytest.mark.parametrize("args,line", [
    (["-t", "2"], "-t 2 (as nccl-tests reads it): trainscope drives a process's GPUs from one thread"),
    (["-z", "1"], "-z 1 (as nccl-tests reads it): trainscope queues a size's iterations and waits for them once"),
    (["-a", "1"], "-a 1 (as nccl-tests reads it): trainscope reports the slowest rank's time"),
    (["-R", "1"], "-R 1 (as nccl-tests reads it): trainscope does not register its buffers"),
    (["-c", "2"], "-c 2: 0 (no check, --no-check) or 1 (check, --check)"),
])
def test_a_nccl_tests_flag_trainscope_cannot_honour_is_one_line(args, line):
    r = run_trainscope(["collectives"] + args)
    assert r.rc == 2 and len(r.error_lines()) == 1 and line in r.error_lines()[0], r.err


@pytest.mark.parametrize("args,line", [
    (["train", "--batch", "-1"], "--batch: must be a positive integer, got -1"),
    (["train", "--steps", "2147483648"], "--steps: 2147483648 is out of range (at most 2147483647)"),
    (["train", "--steps", "99999999999999999999"], "--steps: 99999999999999999999 is out of range (at most 2147483647)"),
    (["train", "--log-every", "-5"], "--log-every: must be a non-negative integer, got -5"),
    (["train", "--loss-scale-interval", "2147483648"], "--loss-scale-interval: 2147483648 is out of range (at most 2147483647)"),
    (["train", "--batch", "1.5"], "--batch: must be an integer, got '1.5'"),
    (["train", "--lr", "abc"], "--lr: must be a number, got 'abc'"),
    (["collectives", "-n", "2147483648"], "--iters: 2147483648 is out of range (at most 2147483647)"),
    (["kernels", "--iters", "-1"], "--iters: must be a positive integer, got -1"),
    (["scale", "--ranks", "2147483648"], "--ranks: 2147483648 is out of range (at most 2147483647)"),
])
def test_a_number_out_of_its_range_is_said_in_our_words(args, line):
    """Issue #34: CLI11's "At Most 1 required but received 2" and "Could not convert" said nothing of the range, and an
    int64 option took 99999999999999999999 as 2^63 - 1 steps and ran."""
    r = run_trainscope(args, timeout=60)
    assert r.rc == 2 and r.error_lines() == [f"trainscope: error: {line} (see trainscope --help)"], r.err


def test_control_bytes_of_an_error_reach_the_terminal_escaped(tmp_path):
    """A file name is echoed in the error line with its control bytes as \\xNN: one line, no escape sequence."""
    r = run_trainscope(["suite", tmp_path / "no\x1b[2Jsuch\n.toml"])
    assert r.rc == 2 and len(r.error_lines()) == 1, r.err
    assert "\x1b" not in r.err and "no\\x1b[2Jsuch\\x0a.toml" in r.error_lines()[0], r.err
