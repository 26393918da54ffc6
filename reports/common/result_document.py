"""The result documents the Python tool writes (schema/result-v1.schema.json): `import`'s records of other tools' output
and `predict train`'s prediction. One builder of the run's envelope, so that every document the tool writes names the
tool, its build and its command line alike, and one check, so that what it writes is what report, compare and export
read back (strict JSON, then the schema)."""
import datetime
from collections.abc import Sequence
from dataclasses import dataclass

from .json_types import JsonObject, Record, ResultDoc
from .load import validate
from .settings import build_name
from .strict_json import check

SCHEMA = "trainscope/result/v1"


@dataclass
class Envelope:
    """What a document's run says besides its command: where and when, as the schema's `run` has it."""
    hosts: list[JsonObject]
    world: JsonObject
    layouts: list[JsonObject]
    environment: dict[str, str]
    started_at: str
    ended_at: str


def timestamp(seconds: float) -> str:
    """A POSIX time as the result's timestamps are written (UTC, milliseconds, a Z)."""
    t = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def result_document(subcommand: str, argv: Sequence[str], config: JsonObject, where: Envelope,
                    records: list[Record]) -> ResultDoc:
    """The document of `records`, its run the tool's build (TRAINSCOPE_VERSION, TRAINSCOPE_GIT_COMMIT) and its command
    line `trainscope <subcommand> <argv>`."""
    return {"schema": SCHEMA,
            "run": {"tool": {"name": "trainscope", "version": build_name("TRAINSCOPE_VERSION"),
                             "git_commit": build_name("TRAINSCOPE_GIT_COMMIT")},
                    "subcommand": subcommand, "command_line": ["trainscope", subcommand, *argv], "config": config,
                    "started_at": where.started_at, "ended_at": where.ended_at, "hosts": where.hosts,
                    "world": where.world, "layouts": where.layouts, "environment": where.environment},
            "records": records}


def checked(doc: ResultDoc, name: str) -> ResultDoc:
    """`doc` when the readers will read it back; else InputError naming `name` and the first field at fault."""
    check(doc, name)
    validate(doc, name)
    return doc
