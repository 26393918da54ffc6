"""Files the reports tool reads and writes, checked as trainscope checks its own (docs/reliability.md "Paths").

Inputs are regular files of bounded size (settings.max_input_bytes), refused by their size before a byte is read,
opened without blocking (a path swapped for a FIFO after the check cannot hold the tool) and checked again once open;
a file whose first block holds a NUL byte is no text and is refused there (a sparse file of 2 GiB was read whole, 4.26
GB of memory, before it was found not to be JSON). JSON is read under one policy, strict_json.py. Outputs are checked
before any work — an existing regular file or a new name in a directory that can be written — and written atomically
(a temporary file renamed over the target), so a failure leaves the old file or none, never half of one, and never
replaces a device, a FIFO or a link.
"""
import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import InputError
from .settings import max_input_bytes

HEAD_BYTES = 64 << 10  # the first block, looked at before the rest is read


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISSOCK, "a socket"))
    for test, name in kinds:
        if test(mode):
            return name
    return "a special file"


def _check(path: str | Path, st: os.stat_result, max_bytes: int, hint: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: is {_kind(st.st_mode)}, not a regular file")
    if st.st_size > max_bytes:
        raise InputError(f"{path}: {st.st_size} bytes, more than the {max_bytes} an input may be{hint}")


@contextlib.contextmanager
def open_input(path: str | Path, max_bytes: int | None = None) -> Iterator[tuple[BinaryIO, int]]:
    """An input file open for reading, and the most bytes that may be read from it: a regular file (through links) of
    at most max_bytes (default TRAINSCOPE_MAX_INPUT_BYTES) whose first block holds no NUL byte; InputError naming what
    is wrong."""
    hint = " (TRAINSCOPE_MAX_INPUT_BYTES raises the bound)" if max_bytes is None else ""
    max_bytes = max_input_bytes() if max_bytes is None else max_bytes
    try:
        _check(path, os.stat(path), max_bytes, hint)  # before opening: opening a device can have effects of its own
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        try:
            _check(path, os.fstat(fd), max_bytes, hint)  # what was opened, should the path have changed meanwhile
            head = os.pread(fd, HEAD_BYTES, 0)
        except OSError as e:
            raise InputError(f"{path}: cannot read: {e.strerror}") from None
        if (nul := head.find(0)) >= 0:
            raise InputError(f"{path}: not text: a NUL byte at byte {nul}")
        yield f, max_bytes


def decode(data: bytes, path: str | Path, offset: int = 0) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte {offset + e.start})") from None


def read_input(path: str | Path, max_bytes: int | None = None) -> str:
    """The text of an input file (open_input), read whole."""
    with open_input(path, max_bytes) as (f, max_bytes):
        try:
            data = f.read(max_bytes + 1)
        except OSError as e:
            raise InputError(f"{path}: cannot read: {e.strerror}") from None
    if len(data) > max_bytes:  # it grew while being read
        raise InputError(f"{path}: more than the {max_bytes} bytes an input may be")
    return decode(data, path)


def _creatable(path: Path, what: str) -> None:
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InputError(f"{what} {path}: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(f"{what} {path}: cannot create it in {ancestor}: permission denied")


def check_output_file(path: str | Path, what: str) -> None:
    """An existing regular file (not a link) that can be replaced, or a new name that can be created."""
    p = Path(path)
    if str(path).endswith("/"):
        raise InputError(f"{what} {path}: names a directory (a file name is expected)")
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        _creatable(p, what)
        return
    except OSError as e:
        raise InputError(f"{what} {path}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{what} {path}: is {_kind(st.st_mode)}; only a regular file is replaced")
    _creatable(p, what)


def check_output_dir(path: str | Path, what: str) -> None:
    """An existing directory that can be written into, or one that can be created."""
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            raise InputError(f"{what} {path}: is {_kind(p.stat().st_mode)}, not a directory")
        if not os.access(p, os.W_OK | os.X_OK):
            raise InputError(f"{what} {path}: cannot write into it: permission denied")
        return
    _creatable(p, what)


def write_atomically(path: str | Path, data: str | bytes) -> None:
    """Writes through a temporary file in the same directory, renamed over `path`."""
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data.encode() if isinstance(data, str) else data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, p)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as e:
        raise InputError(f"{path}: cannot write: {e.strerror}") from None


@contextlib.contextmanager
def staged_directory(outdir: str | Path) -> Iterator[Path]:
    """A temporary directory beside `outdir` to write a set of files into; when the block ends without an
    error, each file is renamed into `outdir` (created if needed), so a failure part-way leaves `outdir` as
    it was. Other files already in `outdir` are kept."""
    out = Path(outdir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    except OSError as e:
        raise InputError(f"{outdir}: cannot write: {e.strerror}") from None
    try:
        yield stage
        for f in sorted(stage.iterdir()):
            os.replace(f, out / f.name)
    except OSError as e:
        raise InputError(f"{outdir}: cannot write: {e.strerror}") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def runs_of_the_same_set(path: str | Path) -> list[Path]:
    """The runs committed beside a result as one set (NAME-1.json, NAME-2.json, ...: several runs of one build), this
    one included, sorted; [path] when its name is not of that form. The calibrations read the set for the spread
    between runs, which resampling one run cannot show."""
    path = Path(path)
    if not re.search(r"-\d+\.json$", path.name):
        return [path]
    return sorted(path.parent.glob(re.sub(r"-\d+\.json$", "-*.json", path.name)))
