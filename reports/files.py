"""Files the reports tool reads and writes, checked as trainscope checks its own (docs/reliability.md "Paths").

Inputs are regular files of bounded size, read as strict JSON (no NaN or Infinity, which Python's json
would otherwise accept). Outputs are checked before any work — an existing regular file or a new name in
a directory that can be written — and written atomically (a temporary file renamed over the target), so a
failure leaves the old file or none, never half of one, and never replaces a device, a FIFO or a link.
"""
import contextlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import InputError

# A result document with every sample of a long sweep is tens of MiB; a trace of a long run, hundreds.
MAX_INPUT_BYTES = int(os.environ.get("TRAINSCOPE_MAX_INPUT_BYTES", 2 << 30))


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISSOCK, "a socket"))
    for test, name in kinds:
        if test(mode):
            return name
    return "a special file"


def read_input(path: str | Path, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The text of a regular file (through links) of at most max_bytes; InputError naming what is wrong."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: is {_kind(st.st_mode)}, not a regular file")
    if st.st_size > max_bytes:
        raise InputError(f"{path}: {st.st_size} bytes, more than the {max_bytes} an input may be "
                         "(TRAINSCOPE_MAX_INPUT_BYTES raises the bound)")
    try:
        with open(p, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None
    if len(data) > max_bytes:  # it grew while being read
        raise InputError(f"{path}: more than the {max_bytes} bytes an input may be")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte {e.start})") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads_strict(text: str) -> Any:
    """json.loads that refuses NaN, Infinity and -Infinity (raises json.JSONDecodeError or ValueError)."""
    return json.loads(text, parse_constant=_no_constant)


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
