"""reports/common/option_facts.py reads the subcommands and their options from the result schema's config part, which the
build generates from the C++ option tables (tests/unit/test_config_schema.cpp holds the schema to them)."""
import json

import pytest

from reports.common.option_facts import (SCHEMA_PATH, all_subcommands, command_line, config_version, option, options,
                                         python_tools, subcommands)


def test_the_subcommands_with_tables_and_the_python_tools_are_subcommands():
    assert set(subcommands()) <= set(all_subcommands()) and set(python_tools()) <= set(all_subcommands())
    assert not set(subcommands()) & set(python_tools())  # a Python tool's flags are its own, not a table's
    assert "train" in subcommands() and "report" in python_tools()


@pytest.mark.parametrize("subcommand", subcommands())
def test_each_option_is_recorded_with_a_type_and_default_or_says_why_not(subcommand):
    keys = [o.key for o in options(subcommand)]
    assert len(keys) == len(set(keys)), keys
    for o in options(subcommand):
        if o.recorded:
            assert o.type in {"integer", "number", "string", "boolean", "array"} and o.default is not None, o
            assert not o.choices or o.default in o.choices, o
        else:
            assert o.type is None and o.not_recorded, o


def test_a_suite_steps_settings_as_a_command_line():
    """Each kind of option spelled as the command line takes it: a value, a repeated option, a flag turned off, on/off."""
    assert command_line("train", {"steps": 3, "set": ["depth=2", "width=8"], "ceiling": False, "overlap": False}) == [
        "--steps", "3", "--set", "depth=2", "--set", "width=8", "--no-ceiling", "--overlap", "off"]
    assert command_line("train", {"warmup_steps": 1}) == ["--warmup", "1"]  # its name now; the suite key stayed
    with pytest.raises(KeyError, match="suite key"):
        command_line("scale", {"train_args": "--steps 3"})
    with pytest.raises(KeyError, match="no option 'stepz'"):
        option("train", "stepz")
    with pytest.raises(KeyError, match="no option table"):
        options("report")


@pytest.mark.parametrize("subcommand", subcommands())
def test_each_recorded_option_is_part_of_the_identity_or_says_why_not(subcommand):
    """The schema says one of the two of each recorded option (bench/config_schema.cpp writes it from the declaration)."""
    properties = json.loads(SCHEMA_PATH.read_text())["$defs"][f"config_{subcommand}"]["properties"]
    for key, s in properties.items():
        if key != "resolved":
            assert (s.get("x-identity") is True) != bool(s.get("x-not-identity")), (key, s)


def test_a_train_records_identity_is_what_changes_the_work_or_the_numbers_of_a_step():
    """The judgement per option (bench/train/train_command.cpp declares it): what decides the work of a step or the numbers
    it computes separates records; where and how the run is watched, how long it is waited for, and a seed's draw do not."""
    apart = {"model", "preset", "set", "steps", "batch", "micro_batches", "precision", "loss_scale", "optimizer", "lr", "schedule",
             "lr_warmup", "weight_decay", "momentum", "beta1", "beta2", "clip_norm", "data", "augment", "dropout",
             "synthetic_size", "dp", "tp", "pp", "ep", "zero", "sync", "bucket_mb", "overlap", "pp_schedule", "pp_split",
             "checkpoint_every", "checkpoint_async"}
    same = {"seed", "device", "label", "timeout", "warmup_steps", "log_every", "ceiling", "eval_every", "eval_batches",
            "target_accuracy", "target_loss", "mllog", "memory_limit", "checkpoint_dir", "resume", "dump_logits", "trace"}
    by_key = {o.key: o for o in options("train") if o.recorded}
    assert apart | same <= set(by_key), (apart | same) - set(by_key)
    assert {k for k in apart if not by_key[k].identity} == set()
    assert {k for k in same if by_key[k].identity} == set()
    assert config_version() >= 1
