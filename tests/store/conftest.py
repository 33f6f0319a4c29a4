"""The engines the store tests run against: SQLite always; PostgreSQL when a real server can be started here (the
``postgresql`` package's initdb/pg_ctl, started for the session in a temporary folder), else those tests are skipped
with the reason. ``store_url`` gives each test a fresh, empty database on each engine."""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("sqlalchemy", reason="the results store needs SQLAlchemy: pip install 'pytest-genai[store]'")

START_TIMEOUT_S = 90
#: Run beside the server: once the pytest that started it is gone (a SIGTERM, which pytest does not turn into a
#: teardown, or a SIGKILL), stop the server and delete its folder. argv: pytest's pid, the folder, the stop command.
_REAPER = """
import os, shutil, subprocess, sys, time
parent, base, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False
while alive(parent):
    time.sleep(0.5)
subprocess.run(stop, capture_output=True, timeout=60)
shutil.rmtree(base, ignore_errors=True)
"""


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """A throwaway PostgreSQL cluster (initdb in a temp folder, unix socket only, trust auth)."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.base: str | None = None
        self.port = _free_port()
        self.prefix: list[str] = []
        self.reaper: subprocess.Popen | None = None

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*self.prefix, *args], capture_output=True, text=True, timeout=START_TIMEOUT_S)

    def start(self) -> None:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            self.reason = "psycopg is not installed (pip install 'psycopg[binary]') so SQLAlchemy cannot reach PostgreSQL"
            return
        initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
        if not initdb or not pg_ctl:
            self.reason = ("no PostgreSQL server binaries (initdb, pg_ctl) on this machine; install Debian's "
                           "'postgresql' package to run these tests")
            return
        self.base = tempfile.mkdtemp(prefix="genai-pg-")
        if os.geteuid() == 0:  # initdb refuses root: run the server as the postgres user
            import pwd

            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                self.reason = "running as root and there is no 'postgres' user to run the server as"
                return
            os.chown(self.base, user.pw_uid, user.pw_gid)
            self.prefix = [shutil.which("runuser") or "runuser", "-u", "postgres", "--"]
        data = os.path.join(self.base, "data")
        try:
            done = self._run(initdb, "-D", data, "-A", "trust", "-U", "postgres", "--no-sync")
            if done.returncode:
                self.reason = f"initdb failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
                return
            opts = f"-k {self.base} -p {self.port} -c listen_addresses='' -c fsync=off"
            done = self._run(pg_ctl, "-D", data, "-o", opts, "-l", os.path.join(self.base, "log"), "-w",
                             "-t", str(START_TIMEOUT_S), "start")
            if done.returncode:
                log = Path(self.base, "log")
                tail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
                self.reason = f"pg_ctl start failed: {(done.stderr or done.stdout).strip()} {tail}"
                return
            # pg_ctl daemonizes the server: nothing would stop it if this pytest died without its teardown
            self.reaper = subprocess.Popen([sys.executable, "-c", _REAPER, str(os.getpid()), self.base, *self._stop()],
                                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, start_new_session=True)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.reason = f"the PostgreSQL server could not be started: {exc}"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@/{database}?host={self.base}&port={self.port}"

    def new_database(self) -> str:
        import sqlalchemy

        name = "t_" + uuid.uuid4().hex[:12]
        engine = sqlalchemy.create_engine(self.url(), isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
        engine.dispose()
        return self.url(name)

    def _stop(self) -> list[str]:
        return [*self.prefix, _pg_bin("pg_ctl") or "pg_ctl", "-D", os.path.join(self.base, "data"), "-m", "immediate",
                "stop"]

    def stop(self) -> None:
        if self.reaper is not None:
            self.reaper.kill()
            self.reaper.wait()
        if self.base and self.reason is None:
            subprocess.run(self._stop(), capture_output=True, text=True, timeout=START_TIMEOUT_S)
        if self.base:
            shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store on each engine."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    if server.reason:
        pytest.skip(f"PostgreSQL: {server.reason}")
    return server.new_database()
