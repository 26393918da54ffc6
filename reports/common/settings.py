"""The environment variables the reports tool reads, each read when it is needed and checked: a bad value is one line
naming the variable, exit 2 (`TRAINSCOPE_MAX_INPUT_BYTES=abc` was a 13-line traceback from every subcommand, read as
the package was imported)."""
import os
import re

from .errors import InputError

# A result document with every sample of a long sweep is tens of MiB; a trace of a long run, hundreds.
DEFAULT_MAX_INPUT_BYTES = 2 << 30
MAX_INPUT_BYTES_CEILING = 1 << 40  # past what any machine would hold of a file read whole
MAX_NAME_CHARS = 200


def max_input_bytes() -> int:
    """TRAINSCOPE_MAX_INPUT_BYTES: the most bytes an input file may have (a whole number, 1 to 2^40)."""
    text = os.environ.get("TRAINSCOPE_MAX_INPUT_BYTES")
    if text is None:
        return DEFAULT_MAX_INPUT_BYTES
    if not re.fullmatch(r"[0-9]{1,13}", text) or not 1 <= int(text) <= MAX_INPUT_BYTES_CEILING:
        raise InputError(f"TRAINSCOPE_MAX_INPUT_BYTES={text[:40]}: not a whole number of bytes from 1 to "
                         f"{MAX_INPUT_BYTES_CEILING} (unset, it is {DEFAULT_MAX_INPUT_BYTES})")
    return int(text)


def build_name(variable: str) -> str:
    """TRAINSCOPE_VERSION or TRAINSCOPE_GIT_COMMIT, which the binary sets to the build's own, for what `import` writes as
    the run's tool: printable text of at most MAX_NAME_CHARS characters, or "unknown" when unset."""
    text = os.environ.get(variable)
    if text is None:
        return "unknown"
    if not text or len(text) > MAX_NAME_CHARS or not text.isprintable():
        raise InputError(f"{variable}={text[:40]}: not the name of a build (printable text of 1 to {MAX_NAME_CHARS} characters)")
    return text
