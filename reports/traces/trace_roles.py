"""The roles of trace spans, what each is to the analysis, declared once: the trace schema's enum of args.role
(schema/trace-v2.schema.json, $defs.spanArgs), which kernels/trace.h's trace::Role names too (a unit test holds the
two together), with the Kineto category each role's spans carry (the schema's rules on an "X" event). The analysis
reads the roles from here and keeps no list of them; each name below is checked against the schema when this loads,
so a role renamed there fails here, not as a span the analysis silently no longer finds."""
import json
from functools import cache
from pathlib import Path

from ..common.json_types import JsonObject

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schema" / "trace-v2.schema.json"


@cache
def _schema() -> JsonObject:
    schema: JsonObject = json.loads(SCHEMA_PATH.read_text())
    return schema


def roles() -> tuple[str, ...]:
    """Every role, in the schema's order (trace::Role's)."""
    return tuple(_schema()["$defs"]["spanArgs"]["properties"]["role"]["enum"])


def kineto_categories() -> dict[str, str]:
    """{role: the Kineto category (`cat`) a trace-v2 span of that role has}, from the schema's rules."""
    span_rules = next(rule["then"] for rule in _schema()["$defs"]["event"]["allOf"]
                      if rule["if"]["properties"]["ph"].get("const") == "X")
    out = {}
    for rule in span_rules["allOf"]:
        for role in rule["if"]["properties"]["args"]["properties"]["role"]["enum"]:
            out[role] = rule["then"]["properties"]["cat"]["const"]
    return out


def main_thread_name() -> str:
    """The name a trace gives its rank's main thread on the host (thread_name metadata), the schema's $defs.mainThread."""
    name: str = _schema()["$defs"]["mainThread"]["const"]
    return name


def _role(name: str) -> str:
    if name not in roles():
        raise AssertionError(f"{SCHEMA_PATH.name} declares no trace role '{name}' (its roles: {', '.join(roles())})")
    return name


STEP = _role("step")  # one training step
PHASE = _role("phase")  # a part of a step on the host: data, sync, checkpoint, eval
COMPUTE = _role("compute")  # forward, backward, the optimizer
COMMUNICATION = _role("communication")  # a collective or send/recv, launch to observed completion
WAIT = _role("wait")  # the host blocked on communication
KERNEL = _role("kernel")
MEMCPY = _role("memcpy")
MEMSET = _role("memset")
DEVICE = frozenset({KERNEL, MEMCPY, MEMSET})  # the device's work (CUPTI's spans on a stream)
