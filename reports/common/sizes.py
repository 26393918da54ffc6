"""Message sizes as trainscope's command lines spell them: whole bytes with the binary suffixes K, M, G (as the
collectives' -b/-e take them), read and written."""
from .errors import InputError

_SHIFTS = (("G", 30), ("M", 20), ("K", 10))


def size_label(b: int) -> str:
    for unit, shift in _SHIFTS:
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{unit}"
    return str(int(b))


def parse_size(text: str, option: str) -> int:
    """A size of at least one byte: `4096`, `4K`, `1M`, `2G`; InputError naming the option otherwise."""
    t = text.strip()
    shift = dict(_SHIFTS).get(t[-1:].upper(), 0)
    digits = t[:-1] if shift else t
    if not digits.isdigit() or int(digits) < 1:
        raise InputError(f"{option} {text!r}: a size in bytes of at least 1, with an optional K, M or G (binary) suffix")
    return int(digits) << shift


def parse_sizes(text: str, option: str) -> list[int]:
    """A comma-separated list of sizes (parse_size), in the order given."""
    return [parse_size(part, option) for part in text.split(",")]
