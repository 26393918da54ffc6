"""What the reports tool prints, made safe for a terminal: text from a result (a host name, a label, a suite's name, an
imported nccl-tests rank line) or from a path reached the terminal raw, and an escape sequence in it could retitle the
window, clear the screen or hide the line before it. Every control character but newline and tab, the C1 controls,
Unicode's bidirectional overrides (which reorder what is shown) and lone surrogates are shown escaped, `\\x1b` as the
binary's own messages show a stranger's bytes. One helper, `printable`; main() puts stdout and stderr behind it.
"""
import re
from typing import Any, TextIO

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_UNSAFE_IN_A_LINE = re.compile(_UNSAFE.pattern[:-1] + "\n\t]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: str, one_line: bool = False) -> str:
    """`text` with what a terminal would act on escaped; with one_line, newlines and tabs too (an error line)."""
    return (_UNSAFE_IN_A_LINE if one_line else _UNSAFE).sub(_escape, text)


class Escaping:
    """A text stream that writes everything through printable()."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(printable(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding: the stream's own
        return getattr(self.stream, name)
