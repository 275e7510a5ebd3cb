"""Server fixtures: every test that takes ``app`` runs on SQLite and on PostgreSQL.

PostgreSQL is a throwaway cluster started once per session (as the ``postgres`` user when
the tests run as root, because PostgreSQL refuses to run as root); under pytest-xdist each
worker is a session of its own, so each has its own cluster and database, and its own
SQLite files under its own temporary folder. The schema comes from the real migrations,
applied once to a database that each test empties first (PostgreSQL) or to a template
file that each test copies (SQLite). Under ``CI=true`` a PostgreSQL that cannot start
fails the tests; elsewhere they are skipped with the reason.

A game that takes seconds to play into position (``saved``) is played once per worker and
database, then copied into the database of each test that asks for it.
"""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import psycopg
import pytest
from flask import Flask
from jinja2 import BytecodeCache
from sqlalchemy.engine import make_url

from pbem import create_app, db, mail, services
from pbem.db import get_engine
from pbem.migrate import upgrade
from pbem.models import metadata
from pbem.web import api  # noqa: F401  (see below)
from tests.pgcluster import PostgresCluster, PostgresUnavailable
from tests.server.helpers import (
    BASE_URL,
    MAIL_FROM,
    PLAYERS,
    SECRET,
    BrowserClient,
    Inbox,
    Mail,
    Table,
)
from tests.smtpsink import SmtpSink

# (pbem.web.api is imported above, before any test freezes the clock: a module imported
# under freezegun keeps its FakeDatetime for good, and pydantic then refuses to build the
# JSON API's adapters of the view, whose times are datetimes.)

# --------------------------------------------------------------------------- PostgreSQL


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


# Every row deleted, children first, in one round trip; quicker than a new database or
# TRUNCATE.
EMPTY_TABLES = "; ".join(f'DELETE FROM "{table.name}"'
                         for table in reversed(metadata.sorted_tables))


def empty_tables(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(EMPTY_TABLES)


@pytest.fixture(scope="session")
def pg_emptier(pg_cluster: PostgresCluster, pg_database: str) -> Iterator[psycopg.Connection]:
    """A connection kept open to empty the tests' database before each test."""
    with psycopg.connect(pg_cluster.dsn(pg_database), autocommit=True) as conn:
        yield conn


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sqlite-template") / "template.sqlite3"
    upgrade(f"sqlite:///{path}")
    return path


# --------------------------------------------------------------------------- SMTP


class SmtpServer(SmtpSink):
    """The tests' SMTP server: keeps every message as the recipient reads it."""

    def __init__(self) -> None:
        super().__init__()
        self.mails: list[Mail] = []
        self.recipients: list[list[str]] = []

    def received(self, envelope) -> None:
        self.recipients.append(list(envelope.rcpt_tos))
        self.mails.append(Mail.parse(envelope.original_content or envelope.content))

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
    request.getfixturevalue("pg_emptier").execute(EMPTY_TABLES)
    return request.getfixturevalue("pg_cluster").url(request.getfixturevalue("pg_database"))


def app_config(db_url: str, tmp_path: Path, **overrides) -> dict:
    """The tests' configuration: memory mail, sending caps out of the way (the tests of
    the caps set their own), and every decision mailed at once (FOLLOW_UP_MINUTES and
    TAKEBACK_GRACE_SECONDS 0: the tests of the held-back follow-up email and of the
    take-back's grace set their own)."""
    return {"TESTING": True, "DATABASE_URL": db_url, "SECRET_KEY": SECRET,
            "BASE_URL": BASE_URL, "MAIL_BACKEND": "memory", "MAIL_FROM": MAIL_FROM,
            "MAILBOX_DIR": str(tmp_path / "mailbox"), "API_WAIT_DIR": str(tmp_path / "waits"),
            "CREATE_LIMIT_PER_HOUR": 1000,
            "NOTICE_LIMIT_PER_ADDRESS": 1000, "NOTICE_LIMIT_PER_GAME": 1000,
            "INVITE_LIMIT_PER_ADDRESS": 1000, "HANDOVER_LIMIT_PER_GAME": 1000,
            "FOLLOW_UP_MINUTES": 0, "TAKEBACK_GRACE_SECONDS": 0, **overrides}


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
        app.test_client_class = BrowserClient
        apps.append(app)
        return app

    yield build
    for app in apps:
        get_engine(app).dispose()


@pytest.fixture(scope="session")
def idle_apps() -> list[Flask]:
    return []


@pytest.fixture
def app(db_url, tmp_path, idle_apps) -> Iterator[Flask]:
    """The app with the tests' configuration, on this test's database.

    Building an app costs tens of milliseconds (werkzeug compiles every URL rule), so the
    app of one test is handed to the next with an engine on the new test's database and
    an empty mail backend; a test that changed its configuration gets no successor."""
    config = app_config(db_url, tmp_path)
    if idle_apps:
        app = idle_apps.pop()
        app.config.update(config)  # this test's database and mailbox folder
        db.init_app(app)
        app.extensions["pbem.mail"] = mail.MemoryBackend()
    else:
        app = create_app(config)
        app.jinja_env.bytecode_cache = TEMPLATE_CACHE
        app.test_client_class = BrowserClient
    as_given = copy.deepcopy(dict(app.config))
    yield app
    get_engine(app).dispose()
    if dict(app.config) == as_given:
        idle_apps.append(app)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def inbox(app) -> Inbox:
    return Inbox(app)


GAME_SEED = 7  # round 1 ends with the conch holder's hunt that needs a casualty choice


def start_game(app: Flask, players=PLAYERS, seed: int = GAME_SEED, hours: float = 48,
               title: str = "", game: str = "cavemen") -> services.Created:
    with app.app_context():
        created = services.create_game(game, list(players), {"hours_per_decision": hours},
                                       seed=seed,
                                       title=title, confirm_by_email=False, start=True)
        counts = mail.deliver_due()
    assert counts == {"sent": len(players), "failed": 0, "skipped": 0}
    return created


def new_table(app: Flask, client, inbox: Inbox) -> Table:
    """A started 3-player game (Ann, Bob, Cy), its first emails delivered."""
    created = start_game(app)
    return Table(app, client, inbox, created.game_id, created.admin_token, bot_seed=GAME_SEED)


@pytest.fixture
def table(app, client, inbox) -> Table:
    """A started 3-player game (Ann, Bob, Cy), its first emails delivered."""
    return new_table(app, client, inbox)


# --------------------------------------------------------------------------- saved games


def _dsn(db_url: str) -> str:
    """The psycopg connection string of a SQLAlchemy PostgreSQL URL."""
    return make_url(db_url).set(drivername="postgresql").render_as_string(hide_password=False)


def _sqlite_path(db_url: str) -> str:
    return db_url.split("///", 1)[1]


@dataclass
class DatabaseCopy:
    """Every row of a test database (and its id counters): a SQLite file, or each
    PostgreSQL table in COPY's binary format with the sequences' positions."""

    sqlite_file: Path | None = None
    tables: dict[str, bytes] | None = None
    sequences: dict[str, tuple[int, bool]] | None = None

    @classmethod
    def take(cls, db_url: str, folder: Path) -> DatabaseCopy:
        if db_url.startswith("sqlite"):
            path = folder / "copy.sqlite3"
            with (contextlib.closing(sqlite3.connect(_sqlite_path(db_url))) as src,
                  contextlib.closing(sqlite3.connect(path)) as dst):
                src.backup(dst)
            return cls(sqlite_file=path)
        with psycopg.connect(_dsn(db_url)) as conn:
            tables = {}
            for table in metadata.sorted_tables:
                with conn.cursor().copy(f'COPY "{table.name}" TO STDOUT (FORMAT binary)') as cp:
                    tables[table.name] = b"".join(cp)
            names = conn.execute("SELECT relname FROM pg_class WHERE relkind = 'S' AND "
                                 "relnamespace = 'public'::regnamespace").fetchall()
            sequences = {name: conn.execute(f'SELECT last_value, is_called FROM "{name}"')
                         .fetchone() for (name,) in names}
        return cls(tables=tables, sequences=sequences)

    def put(self, db_url: str) -> None:
        """Write the rows into the (empty, migrated) database at ``db_url``."""
        if self.sqlite_file is not None:
            with (contextlib.closing(sqlite3.connect(self.sqlite_file)) as src,
                  contextlib.closing(sqlite3.connect(_sqlite_path(db_url))) as dst):
                src.backup(dst)
            return
        with psycopg.connect(_dsn(db_url)) as conn:
            for table in metadata.sorted_tables:  # parents first
                with conn.cursor().copy(f'COPY "{table.name}" FROM STDIN (FORMAT binary)') as cp:
                    cp.write(self.tables[table.name])
            for name, (value, called) in self.sequences.items():
                conn.execute("SELECT setval(%s, %s, %s)", (name, value, called))


@dataclass
class SavedTable:
    """A table played into position: its database, the emails its app had sent, the web
    client's cookies and the bots' random state."""

    database: DatabaseCopy
    sent: list
    cookies: dict
    rng: object
    game_id: str
    admin: str


@pytest.fixture(scope="session")
def saved_tables() -> dict[tuple[str, str], SavedTable]:
    return {}


@pytest.fixture
def saved(request, app, client, inbox, db_url, saved_tables, tmp_path_factory):
    """``saved(name, build)``: the Table that ``build()`` plays into position on this
    test's app, client and inbox. It is built once per worker and database kind; each
    later test gets a copy of it in its own fresh database, so no test sees another's
    writes. ``build`` must depend on nothing but ``name`` (no frozen clock, no patches)."""

    def get(name: str, build: Callable[[], Table]) -> Table:
        key = (name, make_url(db_url).get_backend_name())
        if key not in saved_tables:
            table = build()
            get_engine(app).dispose()  # every write is on disk before the copy
            saved_tables[key] = SavedTable(
                DatabaseCopy.take(db_url, tmp_path_factory.mktemp("saved")),
                list(inbox.backend.sent), dict(client._cookies), table.rng.getstate(),
                table.game_id, table.admin)
            return table
        copy = saved_tables[key]
        get_engine(app).dispose()
        copy.database.put(db_url)
        inbox.backend.sent[:] = copy.sent
        client._cookies.update(copy.cookies)  # werkzeug's cookie jar has no public setter
        table = Table(app, client, inbox, copy.game_id, copy.admin)
        table.rng.setstate(copy.rng)
        return table

    return get


@pytest.fixture
def frozen():
    """The clock frozen at ``timekit.T0`` (the host and deadline tests)."""
    from freezegun import freeze_time

    from tests.server.timekit import T0

    with freeze_time(T0) as freezer:
        yield freezer


@pytest.fixture
def game(app, frozen):
    """A game started at ``timekit.T0`` (see ``timekit.new_game``)."""
    from tests.server.timekit import new_game

    return new_game(app)
