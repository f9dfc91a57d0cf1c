"""A real PostgreSQL server for the tests: ``initdb`` in a temporary folder, on 127.0.0.1.

PostgreSQL refuses to run as root; a root test run starts it as the ``postgres`` user (made by
the distribution's package) through ``runuser``. Without the binaries or such a user the tests
that need the server are skipped, saying why.
"""

from __future__ import annotations

import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

USER = "gensolver"  # the server's superuser (initdb -U); trust authentication on 127.0.0.1 only


def find_bin() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl`` (PATH first, then the Debian layout), or None."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
                         if Path(p).parent.name.isdigit() else 0, reverse=True):
        if Path(folder, "initdb").exists() and Path(folder, "pg_ctl").exists():
            return Path(folder)
    return None


def why_not() -> str | None:
    """Why no server can be started here, or None."""
    if find_bin() is None:
        return "PostgreSQL is not installed (no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to start PostgreSQL as"
        if shutil.which("runuser") is None:
            return "running as root and runuser is missing (PostgreSQL refuses to run as root)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'psycopg[binary]')"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    """One PostgreSQL cluster in a temporary folder, listening on 127.0.0.1:``port``."""

    def __init__(self, *, fsync: bool = False) -> None:
        #: False (tests): ``fsync=off``, nothing waits for the disk; True: PostgreSQL's defaults
        #: (``fsync=on``, ``synchronous_commit=on``), as an operator runs it
        self.fsync = fsync
        reason = why_not()
        if reason is not None:
            raise RuntimeError(reason)
        self.bin = find_bin()
        self.dir = Path(tempfile.mkdtemp(prefix="gensolver-pg-"))
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.port = 0

    def _run(self, *args: str, timeout: float = 120) -> None:
        cmd = self.as_user + [str(self.bin / args[0]), *args[1:]]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.dir)
        if out.returncode != 0:
            raise RuntimeError(f"{shlex.join(cmd)} failed ({out.returncode}): {out.stdout}{out.stderr}")

    def start(self) -> PgServer:
        data = self.dir / "data"
        self._run("initdb", "-D", str(data), "-A", "trust", "-U", USER, "--no-locale", "-E", "UTF8", "--no-sync")
        for attempt in range(3):  # a port found free may be taken before the server binds it
            self.port = _free_port()
            opts = f"-h 127.0.0.1 -p {self.port} -k {self.dir} -c max_connections=300"
            opts += " -c fsync=on -c synchronous_commit=on" if self.fsync else " -c fsync=off"
            try:
                self._run("pg_ctl", "-D", str(data), "-l", str(self.dir / "log"), "-o", opts, "-w", "-t", "60", "start")
                return self
            except RuntimeError:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database on this server; its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop", timeout=60)
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
