"""The one JSON policy of the reports tool: every JSON file it reads (result documents and the lines of their streams,
trace files, PyTorch profiler traces, nccl-tests' -J output) and the document `import` writes hold to it, and a file
that breaks it is one line naming the file and the place (a JSON path), exit 2 (docs/reliability.md).

- Nesting: at most MAX_DEPTH arrays and objects inside one another (a result nests about 6 deep). Python's parser
  recurses, so a file nested 100,000 deep was a RecursionError, and one a few hundred deep could still overflow what
  walks the document after (the schema's validator, the export's flattening).
- Numbers: no NaN or Infinity; no number a double reads as infinity (`1e400`); integers within int64, what trainscope's
  writer can write and more than a Kineto trace's nanosecond clock needs (an integer of 10^30 reached numpy as an
  object it could not compute with).
- Strings, keys included: whole characters. JSON may escape one half of a UTF-16 surrogate pair alone (`\\ud800`);
  Python reads it as a string that cannot be written out as UTF-8, so a report failed at its last step.

Size is bounded before a file is read (files.py).
"""
import json
import math
import re
from typing import Any

from .errors import InputError

MAX_DEPTH = 64
INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Constant(ValueError):
    """NaN, Infinity or -Infinity, which Python's parser would read as numbers."""


def _no_constant(name: str) -> Any:
    raise _Constant(f"{name} is not a JSON number")


def _where(path: tuple[str | int, ...]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" if re.fullmatch(r"\w+", p) else f"[{json.dumps(p)}]"
                         for p in path)


def _surrogate(text: str) -> str:
    found = _SURROGATE.search(text)
    return f"\\u{ord(found.group()):04x}" if found else ""


def _leaf(v: Any) -> str:
    """How a number or string breaks the policy, or ""."""
    t = type(v)
    if t is float:
        if math.isnan(v):
            return "NaN is not a JSON number"
        if math.isinf(v):
            return "a number beyond the range of a double (read as infinity)"
    elif t is int:
        if not INT_MIN <= v <= INT_MAX:
            return f"the integer {v} is outside -2^63..2^63-1"
    elif t is str:
        if bad := _surrogate(v):
            return f"a lone UTF-16 surrogate ({bad}), which is no character"
    return ""


def violation(value: Any) -> str:
    """Where and how `value` (parsed JSON) breaks the policy, or "" when it keeps it. Walks without recursion, and
    looks at most values inline: a trace holds millions."""
    if not isinstance(value, (dict, list)):
        why = _leaf(value)
        return f"$: {why}" if why else ""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if len(path) >= MAX_DEPTH:
            return f"{_where(path)}: nested deeper than {MAX_DEPTH} arrays and objects"
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, v in items:
            if isinstance(key, str) and (bad := _surrogate(key)):
                return f"{_where(path)}: a key holds a lone UTF-16 surrogate ({bad}), which is no character"
            t = type(v)
            if t is dict or t is list:
                stack.append((v, path + (key,)))
            elif (t is float and not math.isfinite(v)) or (t is int and not INT_MIN <= v <= INT_MAX) or (
                    t is str and _SURROGATE.search(v)):
                return f"{_where(path + (key,))}: {_leaf(v)}"
    return ""


def check(value: Any, name: str) -> None:
    """InputError `name: <where>: <what>` when `value` breaks the policy."""
    if why := violation(value):
        raise InputError(f"{name}: {why}")


def loads(text: str, name: str) -> Any:
    """The JSON value of `text` under the policy. A syntax error is json.JSONDecodeError, for the caller to word (a
    stream's torn last line is no error); a breach of the policy is InputError naming `name`."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise InputError(f"{name}: nested deeper than {MAX_DEPTH} arrays and objects") from None
    except json.JSONDecodeError:
        raise
    except _Constant as e:
        raise InputError(f"{name}: {e}") from None
    except ValueError as e:  # the only other one: an integer past Python's 4300 digits
        raise InputError(f"{name}: an integer of more than 4300 digits ({e})") from None
    check(value, name)
    return value
