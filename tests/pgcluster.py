"""A throwaway PostgreSQL cluster on a free loopback port, for the tests and the benches.

PostgreSQL refuses to run as root, so as root the cluster runs as the ``postgres`` user
(``runuser``). Binaries are taken from /usr/lib/postgresql/*/bin (Debian's ``postgresql``).
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresUnavailable(Exception):
    pass


class PostgresCluster:
    """A throwaway PostgreSQL cluster in a temporary directory on a free loopback port."""

    def __init__(self) -> None:
        bindirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
        if not bindirs or not os.path.exists(os.path.join(bindirs[-1], "initdb")):
            raise PostgresUnavailable("no PostgreSQL server binaries in "
                                      "/usr/lib/postgresql/*/bin (apt-get install postgresql)")
        self.bin = bindirs[-1]
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="pbem-pg-"))
        self.data, self.sock = self.root / "data", self.root / "sock"
        self.log = self.root / "postgres.log"
        self.proc: subprocess.Popen | None = None
        self._names = itertools.count(1)
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresUnavailable("running as root and no 'postgres' user") from None
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self._as_user = ["runuser", "-u", "postgres", "--"]
        else:
            os.chmod(self.root, 0o700)

    def _run(self, *cmd: str) -> None:
        done = subprocess.run([*self._as_user, *cmd], capture_output=True, text=True,
                              timeout=120)
        if done.returncode != 0:
            raise PostgresUnavailable(f"{cmd[0]} failed: {done.stderr or done.stdout}")

    def start(self) -> None:
        self._run(f"{self.bin}/initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "-E", "UTF8", "--locale=C", "--no-sync")
        self._run("mkdir", "-p", str(self.sock))
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [*self._as_user, f"{self.bin}/postgres", "-D", str(self.data),
                 "-p", str(self.port), "-k", str(self.sock),
                 "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
                 "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                 "-c", "max_connections=200"],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(self.dsn("postgres"), connect_timeout=2):
                    return
            except psycopg.OperationalError as exc:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise PostgresUnavailable(
                        f"postgres did not start: {exc}\n{self.log.read_text()[-2000:]}"
                    ) from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(PostgresUnavailable, subprocess.TimeoutExpired):
                self._run(f"{self.bin}/pg_ctl", "-D", str(self.data), "-m", "immediate",
                          "-w", "stop")
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)

    def dsn(self, db: str) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={db}"

    def url(self, db: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{db}"

    def create_database(self, template: str | None = None) -> str:
        name = f"t{next(self._names)}"
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            clause = f" TEMPLATE {template}" if template else ""
            conn.execute(f"CREATE DATABASE {name}{clause}")
        return name
