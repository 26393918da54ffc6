"""A real PostgreSQL server for the history's tests: Debian's postgresql package, a cluster made in a temporary folder,
listening on a unix socket in that folder only (no TCP), stopped and removed at the end. PostgreSQL refuses to run as
root: as root the cluster is made and run as the `postgres` user (the package's), else `nobody`."""
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path


def binaries() -> Path | None:
    """The newest installed PostgreSQL's bin folder, None when none is."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


class Server:
    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.user = None
        if os.geteuid() == 0:
            self.user = next(u for u in ("postgres", "nobody") if _exists(u))
        self.root = Path(tempfile.mkdtemp(prefix="trainscope-pg-"))
        if self.user:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self.data = self.root / "data"
        self.log = self.root / "server.log"

    def _run(self, *args: str) -> None:
        as_user = ["runuser", "-u", self.user, "--"] if self.user else []
        done = subprocess.run([*as_user, *args], capture_output=True, text=True, timeout=120, cwd=self.root)
        if done.returncode:
            log = self.log.read_text()[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(args)}: exit {done.returncode}: {done.stdout[-2000:]}{done.stderr[-2000:]}{log}")

    def start(self) -> "Server":
        # --no-sync and fsync off: a cluster that lives for one test session needs no durability, and syncs cost seconds.
        self._run(str(self.bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync",
                  "-E", "UTF8", "--locale", "C")
        options = f"-k {self.root} -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60",
                  "start")
        return self

    def stop(self) -> None:
        try:
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str) -> str:
        return f"postgresql://postgres@/{database}?host={self.root}"

    def new_database(self) -> str:
        """A URL of a new, empty database on the server (one per test: no test sees another's history)."""
        import sqlalchemy as sa
        name = f"history_{uuid.uuid4().hex[:12]}"
        engine = sa.create_engine(self.url("postgres"), isolation_level="AUTOCOMMIT", future=True)
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql(f"CREATE DATABASE {name}")
        finally:
            engine.dispose()
        return self.url(name)


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
        return True
    except KeyError:
        return False
