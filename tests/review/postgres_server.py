"""A throwaway PostgreSQL server for tests: initdb into a temporary folder, pg_ctl start on a
free port, the unix socket in that folder, trust authentication, nothing on the network.

initdb refuses to run as root, so as root the server runs as ``nobody`` (through runuser) in a
folder it owns. ``skip_reason()`` says why the tests cannot run here, or None.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType


def bindir() -> Path | None:
    """The newest /usr/lib/postgresql/*/bin with initdb (or the one of initdb on PATH)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _as_server_user() -> list[str]:
    return ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []


def skip_reason() -> str | None:
    if bindir() is None:
        return "no PostgreSQL binaries (/usr/lib/postgresql/*/bin/initdb); run `make db-deps`"
    if os.geteuid() == 0 and not shutil.which("runuser"):
        return "running as root without runuser: initdb refuses to run as root"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """``with PostgresServer() as pg: open_database(pg.url)``; ``stop()``/``start()`` again to
    simulate an outage (the data folder is kept until the ``with`` ends)."""

    def __init__(self) -> None:
        self.bin = bindir()
        if self.bin is None:
            raise RuntimeError(skip_reason() or "no PostgreSQL")
        self.root = Path(tempfile.mkdtemp(prefix="aula-pg-", dir="/tmp"))
        self.data = self.root / "data"
        self.port = free_port()
        self._initialised = False

    @property
    def url(self) -> str:
        return f"postgresql://aula@/aula?host={self.root}&port={self.port}"

    def _run(self, *args: str) -> None:
        done = subprocess.run([*_as_server_user(), *args], capture_output=True, text=True,
                              timeout=120, cwd=self.root)
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{args[0]} failed: {done.stderr or done.stdout}\n{tail}")

    def start(self) -> PostgresServer:
        if not self._initialised:
            if os.geteuid() == 0:
                shutil.chown(self.root, "nobody")
            os.chmod(self.root, 0o755)
            self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "aula",
                      "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync")
            self._initialised = True
        opts = (f"-k {self.root} -p {self.port} -c listen_addresses='' -c fsync=off "
                "-c full_page_writes=off -c max_connections=50")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", opts,
                  "-l", str(self.root / "server.log"), "-w", "-t", "60", "start")
        if not getattr(self, "_created", False):
            self._run(str(self.bin / "createdb"), "-h", str(self.root), "-p", str(self.port),
                      "-U", "aula", "aula")
            self._created = True
        return self

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast",
                      "-w", "stop")

    def close(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
