"""The command line in our words (issue #35): the help and the errors without CLI11's internals ("ENUM:value in
{cnn->1,...} OR {1,...}", "Check maybe value in {off->0,on->1} OR {0,1} FAILED", "Could not convert"), an unknown
option answered with the closest of the subcommand's own ("did you mean --steps?") in the order typed, one name per
concept across subcommands with the old names kept, one default --timeout, and nccl-tests' remaining flags each
taken with its meaning or answered with one line."""
import json
import re

import pytest

from helpers import run_trainscope

from reports.common.option_facts import all_subcommands, option, options
from reports.common.option_facts import subcommands as table_subcommands

INTERNALS = ["->", "ENUM:", "OR {", "FAILED", "Could not convert", "not expected", "required INT", "At Most", "At least"]
PARSE_ONLY = {"TRAINSCOPE_PARSE_ONLY": "1"}


def subcommands():
    r = run_trainscope(["--help"])
    assert r.rc == 0, r.err
    section = r.out.split("Subcommands:", 1)[1]
    return [line.split()[0] for line in section.splitlines() if line.startswith("  ") and line.split()]


def test_no_help_shows_parser_internals():
    names = subcommands()
    assert set(all_subcommands()) <= set(names), names
    for name in names:
        r = run_trainscope([name, "--help"])
        assert r.rc == 0, (name, r.err)
        for marker in ("->", "ENUM:", "OR {"):
            assert marker not in r.out, (name, marker, r.out)


def test_a_choice_is_listed_with_its_default():
    r = run_trainscope(["train", "--help"])
    assert r.rc == 0, r.err
    assert "--model {mlp,cnn,transformer}=mlp" in r.out and "--overlap {on,off}=on" in r.out, r.out
    assert re.search(r"--precision,--dtype \{float32,tf32,bfloat16,float16\}=float32", r.out), r.out


def test_the_large_subcommands_group_their_options():
    for name, heading in [("train", "Layout over the processes:"), ("collectives", "nccl-tests' flags:"),
                          ("kernels", "What is measured:"), ("links", "The run and its output:")]:
        r = run_trainscope([name, "--help"])
        assert r.rc == 0 and heading in r.out, (name, r.out)


@pytest.mark.parametrize("args,line", [
    (["train", "--overlap", "maybe"], "--overlap: 'maybe' is not on or off"),
    (["train", "--resume=maybe"], "--resume is a flag: give it alone (or ={true,false}), not 'maybe'"),
    (["train", "--steps"], "--steps needs a value"),
    (["train", "--ceiling", "3"], "train: unexpected argument '3'"),
    (["kernels", "--conv-layout", "x"], "--conv-layout: 'x' is not nchw or nhwc"),
    (["scale", "--mode", "x"], "--mode x: expected weak or strong"),
    (["links", "--bogus"], "links: unknown option --bogus"),
])
def test_a_parse_error_is_said_without_parser_internals(args, line):
    r = run_trainscope(args, env=PARSE_ONLY)
    assert r.rc == 2 and r.error_lines() == [f"trainscope: error: {line} (see trainscope --help)"], r.err
    assert not any(marker in r.err for marker in INTERNALS), r.err


@pytest.mark.parametrize("args,line", [
    (["train", "--stpes", "3"], "train: unknown option --stpes (did you mean --steps?)"),
    (["collectives", "--opps", "all"], "collectives: unknown option --opps (did you mean --ops?)"),
    (["kernels", "--no-celings"], "kernels: unknown option --no-celings (did you mean --no-ceiling?)"),
    (["train", "--bogus", "--stpes=3"], "train: unknown options --bogus, --stpes (did you mean --steps?)"),  # as typed
    (["train", "--steps", "3", "--stpes", "3"], "train: unknown option --stpes (did you mean --steps?) (see"),  # 3 is its value
    (["trian"], "unknown subcommand 'trian' (did you mean train?)"),
])
def test_an_unknown_option_is_answered_with_the_closest_of_the_subcommands_own(args, line):
    r = run_trainscope(args, env=PARSE_ONLY)
    assert r.rc == 2 and len(r.error_lines()) == 1 and line in r.error_lines()[0], r.err


def train_config(tmp_path, name, flags):
    out = tmp_path / f"{name}.json"
    r = run_trainscope(["train", "--model", "mlp", "--steps", "3", "--json", out] + flags, timeout=300)
    assert r.rc == 0, r.err
    return json.loads(out.read_text())["run"]["config"]


def test_an_old_name_sets_what_its_new_name_sets(tmp_path):
    """train's --warmup-steps is now -w/--warmup, as in every measuring subcommand; --no-ceilings is kernels' old
    name of --no-ceiling (parsed only: tests/unit/test_option_aliases.cpp holds every alias to its option)."""
    new = train_config(tmp_path, "new", ["-w", "2", "--no-ceiling"])
    old = train_config(tmp_path, "old", ["--warmup-steps", "2", "--no-ceiling"])
    assert new == old and new["warmup_steps"] == 2, (new, old)
    assert run_trainscope(["kernels", "--no-ceilings", "--warmup-steps"], env=PARSE_ONLY).rc == 2  # train's alone
    assert run_trainscope(["kernels", "--no-ceilings", "-w", "1"], env=PARSE_ONLY).rc == 0


def test_one_default_timeout():
    """Every subcommand with a --timeout (reports/common/option_facts.py: the tables as the schema has them) has one default,
    and its help says it."""
    timed = {name: option(name, "timeout").default for name in table_subcommands() if "timeout" in {o.key for o in options(name)}}
    assert {"links", "collectives", "kernels", "train"} <= set(timed) and set(timed.values()) == {600}, timed
    for name in timed:
        r = run_trainscope([name, "--help"])
        assert r.rc == 0 and "--timeout FLOAT=600 " in r.out, (name, r.out)


@pytest.mark.parametrize("args,line", [
    (["-N", "2"], "-N 2 (as nccl-tests reads it): nccl-tests repeats the whole sweep and prints each cycle; trainscope repeats "
                  "each size --trials times"),
    (["-p", "2"], "-p 2: 0 or 1 (with one thread per process, NCCL is set up the same either way)"),
    (["-y", "1"], "-y 1 (as nccl-tests reads it): trainscope launches every operation on a stream of its own"),
    (["-C", "1"], "-C 1 (as nccl-tests reads it): trainscope reports the time of the operation itself"),
    (["-S", "1"], "-S 1 (as nccl-tests reads it): trainscope's table has no timestamp column"),
    (["-O", "1"], "-O 1: nccl-tests has no -O; its reduction is -o (here -o/--redop), its output file -J"),
    (["-T", "nan"], "--timeout: nan is not a finite number"),  # -T is --timeout
])
def test_each_remaining_nccl_tests_flag_is_one_line(args, line):
    r = run_trainscope(["collectives"] + args)
    assert r.rc == 2 and len(r.error_lines()) == 1 and line in r.error_lines()[0], r.err


def test_the_nccl_tests_flags_that_mean_the_same_here_are_taken(tmp_path):
    """-J FILE writes the result document (--json), -T the timeout; -N 1, -p 0/1, -y 0, -C 0, -S 0 are what trainscope does."""
    out = tmp_path / "j.json"
    r = run_trainscope(["collectives", "--ops", "all_reduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "-N", "1", "-p", "1",
                        "-y", "0", "-C", "0", "-S", "0", "-T", "77", "-J", out], np=2, timeout=300)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    assert doc["run"]["config"]["timeout"] == 77, doc["run"]["config"]
    assert [x["bytes"] for x in doc["records"] if x["kind"] == "collective"] == [8, 8]  # out-of-place, in-place
