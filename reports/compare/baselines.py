"""A machine's baseline runs in a baseline directory: DIR/<machine key>/<started_at>.json, one file per run
of the baseline build (and DIR/<machine key>.json, the one-file layout of earlier releases, still read).
Several runs let compare see how far runs of one build land apart."""
import re
import shutil
from pathlib import Path

from ..common.errors import InputError
from ..common.load import Result


class Store:
    def __init__(self, directory: str | Path, key: str) -> None:
        self.dir = Path(directory)
        self.key = key
        self.runs_dir = self.dir / key
        self.legacy = self.dir / f"{key}.json"

    def describe(self) -> str:
        return f"{self.key}/*.json"

    def runs(self) -> list[Path]:
        """The baseline runs, oldest first (by the run's start time in the name)."""
        found = sorted(self.runs_dir.glob("*.json")) if self.runs_dir.is_dir() else []
        return ([self.legacy] if self.legacy.is_file() else []) + found

    def add(self, source: str | Path, result: Result, replace: bool = False) -> Path:
        """Stores the result file `source` as a run (the only one when `replace`); returns its path."""
        try:
            if replace:
                for old in self.runs():
                    old.unlink()
            self.runs_dir.mkdir(parents=True, exist_ok=True)
            stem = re.sub(r"[^A-Za-z0-9._-]+", "-", result.run["started_at"]).strip("-") or "run"
            path, n = self.runs_dir / f"{stem}.json", 1
            while path.exists():
                n += 1
                path = self.runs_dir / f"{stem}-{n}.json"
            shutil.copyfile(source, path)
        except OSError as e:
            raise InputError(f"{self.runs_dir}: cannot write: {e.strerror}") from None
        return path
