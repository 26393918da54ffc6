"""trainscope's subcommands and their options as the C++ declares them, once: the result schema's config part
(schema/result-v1.schema.json, $defs config_<subcommand>, generated from the C++ tables by bench/config_schema.h and
held to them by tests/unit/test_config_schema.cpp). Each option's suite key (the key its value has in a record's
config), its flags, its value's type, choices and default, why a table leaves it out of the record, and whether records
that differ in it are one measurement (its part in a record's identity). The reports and the tests read options here and
keep no list of their own."""
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "result-v1.schema.json"
PREFIX = "config_"


@dataclass(frozen=True)
class Option:
    key: str                     # the suite key: the option's name in a suite step and in the record's config
    flags: tuple[str, ...]       # the command line's names that set it ("-w", "--warmup", "--warmup-steps"); () for a suite key
    clear_flags: tuple[str, ...]  # those that turn a flag off ("--no-ceiling")
    type: str | None             # its value's JSON type in the record (None: not recorded)
    choices: tuple[str, ...]     # a closed choice's names, as the record writes them
    default: Any                 # its value when nothing sets it (None: not recorded)
    form: str = ""               # how its text is written: "list" (comma-separated), "size" (64M), "on-off" (a boolean)
    not_recorded: str = ""       # why the record's config leaves it out ("": it is there, under `key`)
    not_identity: str = ""       # why records that differ in it are one measurement ("": it is part of their identity)

    @property
    def recorded(self) -> bool:
        return not self.not_recorded

    @property
    def identity(self) -> bool:
        """Records whose configs differ in it measured different things (compare does not pair them)."""
        return self.recorded and not self.not_identity

    @property
    def flag(self) -> str | None:
        """Its long name on the command line (the first --name), None for a suite key."""
        return next((f for f in self.flags if f.startswith("--")), None)


@cache
def _defs() -> dict[str, Any]:
    defs: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())["$defs"]
    return defs


def all_subcommands() -> tuple[str, ...]:
    """Every subcommand of trainscope, in the registry's order (bench/commands.cpp)."""
    return tuple(_defs()[PREFIX + "run"]["x-subcommands"])


def python_tools() -> tuple[str, ...]:
    """The subcommands that the Python tool in reports/ runs (their flags are its own, not an option table)."""
    return tuple(_defs()[PREFIX + "run"]["x-python-tools"])


@cache
def subcommands() -> tuple[str, ...]:
    """The subcommands with an option table, in the registry's order (those whose config a run records)."""
    return tuple(name for name in all_subcommands() if "x-not-recorded" in _defs().get(PREFIX + name, {}))


@cache
def options(subcommand: str) -> tuple[Option, ...]:
    """Every option of the subcommand's table: those recorded in the table's order, then those it leaves out."""
    if subcommand not in subcommands():
        raise KeyError(f"{subcommand!r} has no option table ({', '.join(subcommands())})")
    config = _defs()[PREFIX + subcommand]
    out = [Option(key, tuple(s["x-flags"]), tuple(s.get("x-clear-flags", ())), s["type"], tuple(s.get("enum", ())),
                  s.get("default"), s.get("x-form", ""), not_identity=s.get("x-not-identity", ""))
           for key, s in config["properties"].items() if key != "resolved"]
    out += [Option(n["key"], tuple(n["x-flags"]), (), None, (), None, not_recorded=n["why"]) for n in config["x-not-recorded"]]
    return tuple(out)


def config_version() -> int:
    """The form of a record's config that the options describe (bench/config_version.h): a record that states another, or
    none, has a config the readers do not read."""
    current: int = _defs()[PREFIX + "version"]["x-current"]
    return current


def described_config(record: dict[str, Any]) -> dict[str, Any] | None:
    """The record's (a run's, a train record's) config when its options are the ones described here, else None."""
    config: dict[str, Any] | None = record.get("config") if record.get("config_version") == config_version() else None
    return config


def option(subcommand: str, key: str) -> Option:
    """The option of that suite key; KeyError naming the subcommand's keys otherwise."""
    for o in options(subcommand):
        if o.key == key:
            return o
    raise KeyError(f"{subcommand} has no option {key!r} ({', '.join(o.key for o in options(subcommand))})")


def command_line(subcommand: str, settings: dict[str, Any]) -> list[str]:
    """The command-line arguments that set each suite key to its value, as a suite step would ({"steps": 3,
    "ceiling": False, "set": ["depth=2"]} -> --steps 3 --no-ceiling --set depth=2)."""
    argv: list[str] = []
    for key, value in settings.items():
        o = option(subcommand, key)
        if o.flag is None:
            raise KeyError(f"{subcommand} {key} is a suite key: the command line has no flag for it")
        if o.form == "on-off":
            argv += [o.flag, "on" if value else "off"]
        elif o.type == "boolean":
            if not value and not o.clear_flags:
                raise KeyError(f"{subcommand} {o.flag} cannot be turned off on the command line")
            argv.append(o.flag if value else o.clear_flags[0])
        else:
            for item in value if isinstance(value, list) else [value]:
                argv += [o.flag, str(item)]
    return argv
