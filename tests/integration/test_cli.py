"""The command line a new user meets first (issue #22): a missing or misspelt subcommand names the
subcommands, and a boolean flag's help gives each spelling its own line and the default in words."""
import json

import pytest

from helpers import run_trainscope

SUBCOMMANDS = "env, links, collectives, kernels, train, checkpoint, scale, suite, report, compare, analyze, export, import, accept"


@pytest.mark.parametrize("args,line", [
    ([], f"a subcommand is required: {SUBCOMMANDS}"),
    (["--frobnicate"], f"a subcommand is required: {SUBCOMMANDS}"),
    (["trian"], f"unknown subcommand 'trian': expected one of {SUBCOMMANDS}"),
    (["a\nb\x1b"], "unknown subcommand 'a\\x0ab\\x1b': expected one of"),  # one line whatever was typed
])
def test_a_missing_or_unknown_subcommand_names_the_subcommands(args, line):
    r = run_trainscope(args)
    assert r.rc == 2 and len(r.error_lines()) == 1, r.err
    assert line in r.error_lines()[0], r.err


@pytest.mark.parametrize("command,flag,default", [(["train"], "ceiling", "on"), (["collectives"], "check", "on"),
                                                  (["kernels"], "ceilings", "on")])
def test_a_boolean_flags_help_says_its_default_in_words(command, flag, default):
    r = run_trainscope(command + ["--help"])
    assert r.rc == 0, r.err
    lines = [line.split(None, 1) for line in r.out.splitlines() if line.strip().startswith(f"--{flag} ") or
             line.strip().startswith(f"--no-{flag} ")]
    assert [words[0] for words in lines] == [f"--{flag}", f"--no-{flag}"], r.out
    assert lines[0][1].endswith(f"(default: {default})") and lines[1][1] == f"The opposite of --{flag}"
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
