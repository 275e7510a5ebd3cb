"""The database engine per app, sessions, and the per-dialect settings (SQLite WAL)."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

from flask import Flask, current_app
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, SQLModel

READ_ONLY = "pbem_read_only"  # execution option of the engine behind ``read_scope``


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite gets WAL, NORMAL sync, a busy timeout and
    ``BEGIN IMMEDIATE`` transactions so that writers queue instead of failing."""
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        _sqlite_pragmas(engine)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=10)


def _sqlite_pragmas(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:  # pragma: no cover - trivial
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:  # pragma: no cover - trivial
        # A read takes no lock at all (WAL gives it a snapshot) and may not write; a
        # transaction that may write takes the write lock at once, so that it never has
        # to upgrade a stale snapshot (which SQLite refuses instead of waiting).
        read = bool(conn.get_execution_options().get(READ_ONLY))
        info = conn.connection.info  # lives as long as the database connection
        if info.get("query_only") is not read:
            conn.exec_driver_sql(f"PRAGMA query_only={int(read)}")
            info["query_only"] = read
        conn.exec_driver_sql("BEGIN" if read else "BEGIN IMMEDIATE")


def init_app(app: Flask) -> None:
    app.extensions["pbem.engine"] = make_engine(app.config["DATABASE_URL"])


def get_engine(app: Flask | None = None) -> Engine:
    return (app or current_app).extensions["pbem.engine"]


@contextmanager
def session_scope(app: Flask | None = None) -> Iterator[Session]:
    """A session whose transaction commits on success and rolls back on any error; on
    SQLite it holds the write lock from its start (use ``read_scope`` to only read)."""
    with Session(get_engine(app), expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


@contextmanager
def read_scope(app: Flask | None = None) -> Iterator[Session]:
    """A session that only reads: it never waits for a writer and holds up none. On
    SQLite a deferred transaction on a WAL snapshot, with writing refused
    (``query_only``); on PostgreSQL a READ ONLY REPEATABLE READ transaction (one snapshot
    too, and it can never fail to serialise). Nothing is committed."""
    with Session(_reader(get_engine(app)), expire_on_commit=False) as session:
        yield session  # closing ends the transaction and keeps what was loaded


@contextmanager
def read_connection(app: Flask | None = None) -> Iterator[Connection]:
    """``read_scope`` for Core statements, without the ORM's session (a few statements
    that load no objects: the one query of a page's "has anything changed?")."""
    with _reader(get_engine(app)).connect() as conn:
        yield conn  # closing rolls the transaction back


_READERS: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()


def _reader(engine: Engine) -> Engine:
    """``engine`` with the options of a read-only transaction (made once per engine)."""
    reader = _READERS.get(engine)
    if reader is None:
        options: dict[str, Any] = {READ_ONLY: True}
        if engine.dialect.name == "postgresql":  # one snapshot for every query, as SQLite
            options.update(postgresql_readonly=True, isolation_level="REPEATABLE READ")
        reader = _READERS[engine] = engine.execution_options(**options)
    return reader


M = TypeVar("M", bound=SQLModel)


def get_row(session: Session, model: type[M], key: Any) -> M:
    """The row ``key`` of ``model`` that a live token or a foreign key points to. It is
    there (rows are deleted only with their whole game), so its absence is a bug or a
    damaged database, not a request to refuse: LookupError."""
    row = session.get(model, key)
    if row is None:
        raise LookupError(f"{model.__name__} {key!r} is missing")
    return row


class _Saved(Protocol):
    id: int | None


def saved_id(row: _Saved) -> int:
    """The id of a row that is in the database (an object gets its id when it is
    flushed; None before that, when nothing may use it)."""
    if row.id is None:
        raise ValueError(f"{type(row).__name__} has no id yet: it was never flushed")
    return row.id


def is_postgres(app: Flask | None = None) -> bool:
    return get_engine(app).dialect.name == "postgresql"


def create_all(app: Flask | None = None) -> None:
    """Create tables directly (tests); production uses Alembic migrations."""
    from pbem import models  # noqa: F401  (registers the tables)

    SQLModel.metadata.create_all(get_engine(app))
