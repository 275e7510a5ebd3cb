"""Server fixtures: every test that takes ``app`` runs on SQLite and on PostgreSQL.

PostgreSQL is a throwaway cluster started once per session (as the ``postgres`` user when
the tests run as root, because PostgreSQL refuses to run as root). The schema comes from
the real migrations, applied once to a database that each test empties first
(PostgreSQL) or to a template file that each test copies (SQLite). Under ``CI=true`` a
PostgreSQL that cannot start fails the tests; elsewhere they are skipped with the reason.
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import psycopg
import pytest
from flask import Flask
from jinja2 import BytecodeCache

from pbem import create_app, mail, services
from pbem.db import get_engine
from pbem.migrate import upgrade
from tests.server.helpers import BASE_URL, PLAYERS, SECRET, Inbox, Mail, Table

# --------------------------------------------------------------------------- PostgreSQL


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


def give_up_on_postgres(reason: object) -> NoReturn:
    """Under CI a missing PostgreSQL fails the tests; on a workstation they are skipped."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL is required under CI=true but could not start: {reason}")
    pytest.skip(f"PostgreSQL not available (under CI=true this fails): {reason}")


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PostgresCluster]:
    try:
        cluster = PostgresCluster()
        cluster.start()
    except PostgresUnavailable as exc:
        give_up_on_postgres(exc)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def pg_database(pg_cluster: PostgresCluster) -> str:
    """The tests' database, migrated to head once; each test starts by emptying it."""
    name = pg_cluster.create_database()
    upgrade(pg_cluster.url(name))
    return name


def empty_tables(dsn: str) -> None:
    """Delete every row (children first); quicker than a new database or TRUNCATE."""
    from pbem.models import metadata

    with psycopg.connect(dsn) as conn:
        for table in reversed(metadata.sorted_tables):
            conn.execute(f'DELETE FROM "{table.name}"')


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sqlite-template") / "template.sqlite3"
    upgrade(f"sqlite:///{path}")
    return path


# --------------------------------------------------------------------------- SMTP


class SmtpServer:
    """A real SMTP server (aiosmtpd) on a loopback port chosen up front; it can be started
    late (or stopped) to play a mail server that is down."""

    def __init__(self) -> None:
        self.port = free_port()
        self.mails: list[Mail] = []
        self.recipients: list[list[str]] = []
        self._controller = None

    async def handle_DATA(self, server, session, envelope) -> str:  # aiosmtpd's hook
        self.recipients.append(list(envelope.rcpt_tos))
        self.mails.append(Mail.parse(envelope.original_content or envelope.content))
        return "250 Message accepted for delivery"

    def start(self) -> None:
        from aiosmtpd.controller import Controller

        self._controller = Controller(self, hostname="127.0.0.1", port=self.port)
        self._controller.start()

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def to(self, addr: str, template: str | None = None) -> list[Mail]:
        return [m for m in list(self.mails)
                if m.to_addr == addr and (template is None or m.template == template)]


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    """An SMTP server, not yet started: call ``smtp.start()``."""
    server = SmtpServer()
    try:
        yield server
    finally:
        server.stop()


# --------------------------------------------------------------------------- the app


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path) -> str:
    """A fresh database at the migrations' head, one per test."""
    if request.param == "sqlite":
        path = tmp_path / "pbem.sqlite3"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    cluster = request.getfixturevalue("pg_cluster")
    name = request.getfixturevalue("pg_database")
    empty_tables(cluster.dsn(name))
    return cluster.url(name)


def app_config(db_url: str, tmp_path: Path, **overrides) -> dict:
    return {"TESTING": True, "DATABASE_URL": db_url, "SECRET_KEY": SECRET,
            "BASE_URL": BASE_URL, "MAIL_BACKEND": "memory", "DELIVER_INLINE": True,
            "MAILBOX_DIR": str(tmp_path / "mailbox"), "CREATE_LIMIT_PER_HOUR": 1000,
            **overrides}


class SessionBytecodeCache(BytecodeCache):
    """Compiled templates shared by the apps of one test session (each test builds its
    own app; compiling the templates anew for each would cost about a second)."""

    def __init__(self) -> None:
        self.store: dict[str, bytes] = {}

    def load_bytecode(self, bucket) -> None:
        if bucket.key in self.store:
            bucket.bytecode_from_string(self.store[bucket.key])

    def dump_bytecode(self, bucket) -> None:
        self.store[bucket.key] = bucket.bytecode_to_string()


TEMPLATE_CACHE = SessionBytecodeCache()


@pytest.fixture
def make_app(db_url, tmp_path) -> Iterator[Callable[..., Flask]]:
    """Build an app on this test's database with config overrides; disposed afterwards."""
    apps: list[Flask] = []

    def build(**overrides) -> Flask:
        app = create_app(app_config(db_url, tmp_path, **overrides))
        app.jinja_env.bytecode_cache = TEMPLATE_CACHE
        apps.append(app)
        return app

    yield build
    for app in apps:
        get_engine(app).dispose()


@pytest.fixture
def app(make_app) -> Flask:
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def inbox(app) -> Inbox:
    return Inbox(app)


GAME_SEED = 7  # round 1 ends with the conch holder's hunt that needs a casualty choice


def start_game(app: Flask, players=PLAYERS, seed: int = GAME_SEED, hours: float = 48,
               title: str = "") -> services.Created:
    with app.app_context():
        created = services.create_game("cavemen", list(players), hours, seed=seed,
                                       title=title, confirm_by_email=False, start=True)
        counts = mail.deliver_due()
    assert counts == {"sent": len(players), "failed": 0, "skipped": 0}
    return created


@pytest.fixture
def table(app, client, inbox) -> Table:
    """A started 3-player game (Ann, Bob, Cy), its first emails delivered."""
    created = start_game(app)
    return Table(app, client, inbox, created.game_id, created.admin_token, bot_seed=GAME_SEED)
