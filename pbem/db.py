"""The database engine per app, sessions, and the per-dialect settings (SQLite WAL, and
on SQLite the gate that lets players' writes go before the clock's)."""

from __future__ import annotations

import fcntl
import select
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar, cast

from flask import Flask, current_app
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.engine.base import OptionEngine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.pool import ConnectionPoolEntry, Pool, PoolProxiedConnection
from sqlmodel import Session, SQLModel

READ_ONLY = "pbem_read_only"  # execution option of the engine behind ``read_scope``
# Execution option of a reader's connection that runs one statement only (``one_read``,
# ``LateLock.connection``): on SQLite no BEGIN, the statement is its own snapshot.
ONE_STATEMENT = "pbem_one_statement"

# Writing transactions begun in this context are background work (the clock's sweeps and
# its mail loop): see ``background_writes``.
_BACKGROUND: ContextVar[bool] = ContextVar("pbem_background_writes", default=False)
# How long a background writer gives way at most, per transaction, to players' writers
# (under a stream of players' writes that never stops, the clock still goes on, slowly).
GIVE_WAY_SECONDS = 0.2
# How long a foreground writer waits at most for a background one at the gate (one of the
# clock's transactions takes about 10 ms; after this SQLite's busy timeout takes over).
FOREGROUND_WAIT_SECONDS = 5.0
_GATE = "pbem_writer_gate"  # the gate's file, in the info of each SQLite connection
_GATE_HELD = "pbem_writer_gate_held"
_WAITING = "pbem_writer_gate_waiting"  # the file a player holds while waiting at the gate


@contextmanager
def background_writes() -> Iterator[None]:
    """Mark the writing transactions begun inside (in this thread) as background work,
    which on SQLite gives way to the players': see ``_sqlite_writer_gate``."""
    token = _BACKGROUND.set(True)
    try:
        yield
    finally:
        _BACKGROUND.reset(token)


def make_engine(url: str, connect_timeout: float = 10) -> Engine:
    """An engine for ``url``; SQLite gets WAL, NORMAL sync, a busy timeout,
    ``BEGIN IMMEDIATE`` transactions so that writers queue instead of failing, and the
    writer gate (``_sqlite_writer_gate``) for a database in a file; PostgreSQL a pool
    that replaces connections the server closed (``_postgres_liveness``) and gives up
    connecting after ``connect_timeout`` seconds (libpq's, at least 2), so that a
    server that does not answer (packets dropped) fails a request, /healthz among them,
    instead of holding it for the TCP timeout."""
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        file = bool(path) and path != ":memory:" and not path.startswith("file:")
        if file:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        _sqlite_pragmas(engine, path + ".writers" if file else None)
        return engine
    engine = create_engine(url, pool_size=10, max_overflow=10,
                           connect_args={"connect_timeout": max(2, round(connect_timeout)),
                                         "cursor_factory": _psycopg_cursor()})
    _postgres_liveness(engine)
    return engine


def _psycopg_cursor() -> type:
    """psycopg's cursor with a ``description`` whose columns are made only when read.

    SQLAlchemy asks every statement's cursor for its ``description``, but for a statement
    it has compiled before (every one of a confirm's) it only checks that there is one: it
    keeps the result's columns from the first time. psycopg builds a ``Column`` per column
    at each ask (its name decoded, its type looked up): 25-45 µs of CPU for the 66
    columns of a link's read, a third to a half of that statement's time in the client
    (bench/confirm_statements.py --profile). This one gives a
    sequence of the same length that builds the same columns, from the same result, the
    first time anything reads them."""
    from psycopg import Column, Cursor
    from psycopg.pq import ExecStatus

    tuples = (ExecStatus.TUPLES_OK, ExecStatus.SINGLE_TUPLE, ExecStatus.TUPLES_CHUNK)

    class Described:  # what Column reads of its cursor, as it was when asked
        __slots__ = ("_encoding", "adapters", "pgresult")

        def __init__(self, cursor: Any) -> None:
            self.pgresult = cursor.pgresult
            self._encoding = cursor._encoding
            self.adapters = cursor.adapters

    class Description(Sequence[Any]):
        __slots__ = ("_columns", "_fields", "_source")

        def __init__(self, cursor: Any, fields: int) -> None:
            self._source: Any = Described(cursor)
            self._fields = fields
            self._columns: list[Any] | None = None

        def _all(self) -> list[Any]:
            if self._columns is None:
                self._columns = [Column(self._source, i) for i in range(self._fields)]
            return self._columns

        def __len__(self) -> int:
            return self._fields

        def __getitem__(self, index: Any) -> Any:
            return self._all()[index]

        def __iter__(self) -> Iterator[Any]:
            return iter(self._all())

        def __eq__(self, other: object) -> bool:
            return self._all() == other

        __hash__ = None  # type: ignore[assignment]

        def __repr__(self) -> str:
            return repr(self._all())

    class LazyCursor(Cursor[Any]):
        @property
        def description(self) -> Any:
            res = self.pgresult
            if res and (res.nfields or res.status in tuples):
                return Description(self, res.nfields)
            return None

    return LazyCursor


def _postgres_liveness(engine: Engine) -> None:
    """A pooled connection the server has closed (a restart, a terminated backend, an idle
    timeout) is replaced when it is checked out, before anything is sent on it, as
    ``pool_pre_ping`` would, without its round trip at every checkout: an idle
    connection has nothing to read, while one whose server went away has its farewell
    (an error message, then the end of the stream) waiting, or is known to be closed.
    Raising DisconnectionError makes the pool open a new connection instead (up to three
    tries). (A server that vanished without closing the connection is found only by the
    next query, with or without a ping: the ping would wait as long.)"""

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry,
                     _proxy: PoolProxiedConnection) -> None:
        if not _looks_alive(dbapi_conn):
            raise DisconnectionError("the server closed this pooled connection")


def _looks_alive(dbapi_conn: Any) -> bool:
    """Whether an idle psycopg connection looks usable without a round trip."""
    if dbapi_conn.closed or getattr(dbapi_conn, "broken", False):
        return False
    try:
        readable, _, _ = select.select([dbapi_conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


def _sqlite_pragmas(engine: Engine, gate: str | None) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection,
                    _record: ConnectionPoolEntry) -> None:  # pragma: no cover - trivial
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:  # pragma: no cover - trivial
        # A read takes no lock at all (WAL gives it a snapshot) and may not write; a
        # transaction that may write takes the write lock at once, so that it never has
        # to upgrade a stale snapshot (which SQLite refuses instead of waiting).
        read = bool(conn.get_execution_options().get(READ_ONLY))
        info = conn.connection.info  # lives as long as the database connection
        if info.get("query_only") is not read:
            conn.exec_driver_sql(f"PRAGMA query_only={int(read)}")
            info["query_only"] = read
        if read:
            if not conn.get_execution_options().get(ONE_STATEMENT):
                conn.exec_driver_sql("BEGIN")
            # (else one statement in autocommit: SQLite reads it on a snapshot of its own,
            # and the ROLLBACK at its end has no transaction to end, so sends nothing)
            return
        if gate is not None:
            _enter_gate(info, gate)
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            _leave_gate(info)
            raise

    if gate is not None:
        _sqlite_writer_gate(engine)


def _sqlite_writer_gate(engine: Engine) -> None:
    """Players' writes go before the clock's.

    SQLite does not queue writers: one that finds the write lock taken sleeps and tries
    again, ever longer (up to 100 ms at a time), so a clock that writes one transaction
    after another leaves a player's confirm waiting for a moment when the lock happens to
    be free at its next try: hundreds of ms, or seconds. So a file next to the database
    (``<database>.writers``) is a gate, locked with ``flock`` from before a writer's
    ``BEGIN IMMEDIATE`` until its transaction ends: a foreground writer (a web request)
    holds it shared, a background writer (inside ``background_writes``: the clock's
    sweeps and mail loop) alone. A background writer takes it only once no foreground
    writer waits or writes (waiting at most ``GIVE_WAY_SECONDS``, then it goes on without
    it); a foreground writer waits only while a background one holds it, and goes on
    within a millisecond of its end (not at SQLite's next try). So a player waits for at
    most the clock's transaction under way, and the clock writes in the gaps. Readers
    never touch the gate; foreground writers do not wait for each other at it."""

    @event.listens_for(engine, "commit")
    def _on_commit(conn: Connection) -> None:  # pragma: no cover - trivial
        _leave_gate(conn.connection.info)

    @event.listens_for(engine, "rollback")
    def _on_rollback(conn: Connection) -> None:  # pragma: no cover - trivial
        _leave_gate(conn.connection.info)

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_conn: DBAPIConnection,
                    record: ConnectionPoolEntry) -> None:  # pragma: no cover - trivial
        _leave_gate(record.info)  # however the transaction ended

    @event.listens_for(engine, "close")
    def _on_close(_dbapi_conn: DBAPIConnection,
                  record: ConnectionPoolEntry) -> None:  # pragma: no cover - trivial
        for key in (_GATE, _WAITING):
            gate = record.info.pop(key, None)
            if gate is not None:
                gate.close()


def _gate_file(info: dict[str, Any], path: str, key: str = _GATE) -> IO[bytes]:
    """This connection's own open file of the gate (``flock`` locks belong to an open
    file, so each connection holds or waits on its own, also within one process); with
    ``key`` ``_WAITING``, of the gate's waiting room (``<gate>.waiting``)."""
    gate = info.get(key)
    if gate is None:
        name = path if key == _GATE else path + ".waiting"
        gate = info[key] = open(name, "ab")  # noqa: SIM115 - closed with the connection
    return gate


def _enter_gate(info: dict[str, Any], path: str) -> None:
    """Hold this connection's gate for the transaction about to begin (see
    ``_sqlite_writer_gate``): shared for a foreground writer, alone for a background one.
    A foreground writer that has to wait stands in the waiting room (a second file, held
    shared while it waits), and a background writer does not take the gate while anyone
    stands there: else, between two of the clock's transactions, the clock could take it
    again before the player's next try, time after time."""
    background = _BACKGROUND.get()
    gate = _gate_file(info, path)
    mode = fcntl.LOCK_EX if background else fcntl.LOCK_SH
    until = time.monotonic() + (GIVE_WAY_SECONDS if background else FOREGROUND_WAIT_SECONDS)
    waiting = None
    try:
        while True:
            try:
                if background:  # nobody in the waiting room: the room free to lock alone
                    room = _gate_file(info, path, _WAITING)
                    fcntl.flock(room, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.flock(room, fcntl.LOCK_UN)
                fcntl.flock(gate, mode | fcntl.LOCK_NB)
            except BlockingIOError:  # (background:) a player waits or writes;
                if time.monotonic() >= until:  # (foreground:) the clock writes
                    return  # (never forever: SQLite's own lock still orders the writers)
                if not background and waiting is None:
                    waiting = _gate_file(info, path, _WAITING)
                    fcntl.flock(waiting, fcntl.LOCK_SH)  # only ever held shared: at once
                time.sleep(0.0005)
                continue
            info[_GATE_HELD] = True
            return
    finally:
        if waiting is not None:
            fcntl.flock(waiting, fcntl.LOCK_UN)


def _leave_gate(info: dict[str, Any]) -> None:
    if info.pop(_GATE_HELD, False):
        fcntl.flock(info[_GATE], fcntl.LOCK_UN)


def init_app(app: Flask) -> None:
    app.extensions["pbem.engine"] = make_engine(
        app.config["DATABASE_URL"], float(app.config["DATABASE_CONNECT_TIMEOUT"]))


def get_engine(app: Flask | None = None) -> Engine:
    return cast(Engine, (app or current_app).extensions["pbem.engine"])


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


@contextmanager
def one_read(app: Flask | None = None) -> Iterator[Connection]:
    """A connection for one read-only statement (a page's single query), in autocommit:
    the statement is its own snapshot, with no BEGIN and no ROLLBACK (on PostgreSQL one
    round trip instead of three; on SQLite a reader's connection, ``_one_statement``).
    Never more than one statement: two would not share a snapshot."""
    engine = get_engine(app)
    if engine.dialect.name != "postgresql":
        with _one_statement(engine) as conn:
            yield conn
        return
    with _autocommit_reader(engine).connect() as conn:
        yield conn


@contextmanager
def _one_statement(engine: Engine) -> Iterator[Connection]:
    """SQLite: a reader's connection (``query_only``) for one statement, sent without a
    BEGIN (``ONE_STATEMENT``): SQLite runs a statement outside a transaction on a WAL
    snapshot of its own, so one statement reads what one transaction would, without the
    BEGIN statement and its ROLLBACK."""
    with _reader(engine).connect() as conn:
        conn.execution_options(**{ONE_STATEMENT: True})
        yield conn


_AUTOCOMMIT: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()


def _autocommit_reader(engine: Engine) -> Engine:
    reader = _AUTOCOMMIT.get(engine)
    if reader is None:
        reader = _AUTOCOMMIT[engine] = engine.execution_options(
            **{READ_ONLY: True}, isolation_level="AUTOCOMMIT")
    return reader


class LateLock:
    """The sessions of a change that reads before it takes its lock (``read_then_write``):
    ``read`` (or ``connection()``, for Core statements that load no objects into it),
    then ``write()``."""

    def __init__(self, read: Session, write: Callable[[], Session],
                 connection: Callable[[], Connection] | None = None) -> None:
        self.read = read
        self._write = write
        self._connection = connection or read.connection

    def connection(self) -> Connection:
        """A connection to read with before the lock, without the ORM's session, for one
        statement: on SQLite a reader's connection of its own in autocommit (ended by
        ``write()``; the statement is its own snapshot: ``_one_statement``, so use it for
        one statement, and not with the session's read); on PostgreSQL the session's,
        the first statement of its one transaction."""
        return self._connection()

    def write(self) -> Session:
        """End the read and give the writing session (call once)."""
        return self._write()


@contextmanager
def read_then_write(app: Flask | None = None) -> Iterator[LateLock]:
    """A change that reads first, waiting for no writer, then writes: ``.read`` is a
    session to read with, ``.write()`` ends the read and gives the session to write with,
    whose transaction commits when the block ends without an error (else it rolls back),
    as ``session_scope``'s.

    On SQLite the read is a ``read_scope`` and the write a ``session_scope`` of their own
    (a writing transaction holds the database's write lock from its BEGIN). On
    PostgreSQL both are one session, one transaction (READ COMMITTED) on one pooled
    connection: the read is its first statements (a plain SELECT waits for no lock), the
    write its statements after the game's lock (``lock_game_row``), each of which sees
    every change committed before it; one checkout, BEGIN and COMMIT instead of two, and
    no ROLLBACK. So on PostgreSQL the objects read are still in the writing session: a
    caller that reads them again under the lock must load them afresh
    (``populate_existing``), not from the session's identity map."""
    engine = get_engine(app)
    if engine.dialect.name == "postgresql":
        with session_scope(app) as session:
            yield LateLock(session, lambda: session)
        return
    reader = Session(_reader(engine), expire_on_commit=False)
    writers: list[Session] = []
    reads: list[Connection] = []

    def connection() -> Connection:
        if not reads:
            conn = _reader(engine).connect()
            conn.execution_options(**{ONE_STATEMENT: True})  # (see ``_one_statement``)
            reads.append(conn)
        return reads[0]

    def end_read() -> None:
        reader.close()  # ends the read; what it loaded stays usable
        while reads:
            reads.pop().close()

    def write() -> Session:
        end_read()
        writers.append(Session(engine, expire_on_commit=False))
        return writers[0]

    try:
        yield LateLock(reader, write, connection)
        for writer in writers:
            writer.commit()
    except BaseException:
        for writer in writers:
            writer.rollback()
        raise
    finally:
        end_read()
        for writer in writers:
            writer.close()


_READERS: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()


class _OwnPoolEngine(OptionEngine):
    """``engine.execution_options(...)`` (the same dialect, compiled statements and event
    listeners) with a pool of connections of its own (``OptionEngine`` shares its
    parent's)."""

    def __init__(self, proxied: Engine, options: dict[str, Any], pool: Pool) -> None:
        super().__init__(proxied, options)
        self._own_pool = pool

    @property
    def pool(self) -> Pool:
        return self._own_pool

    @pool.setter
    def pool(self, pool: Pool) -> None:
        self._own_pool = pool


def _reader(engine: Engine) -> Engine:
    """``engine`` with the options of a read-only transaction (made once per engine).

    On SQLite the readers have connections of their own, which stay ``query_only``:
    switching a connection between reading and writing (``PRAGMA query_only``) makes
    SQLite throw away every statement it has prepared on it, so each statement of the
    next transaction was parsed and planned again (a tenth of a confirm's time). The
    pool is emptied with the engine's (``Engine.dispose``)."""
    reader = _READERS.get(engine)
    if reader is None:
        options: dict[str, Any] = {READ_ONLY: True}
        if engine.dialect.name == "postgresql":  # one snapshot for every query, as SQLite
            options.update(postgresql_readonly=True, isolation_level="REPEATABLE READ")
            reader = engine.execution_options(**options)
        else:
            # a new pool with the listeners of the engine's (the pragmas)
            reader = _OwnPoolEngine(engine, options, engine.pool.recreate())
            event.listen(engine, "engine_disposed", _dispose_reader(reader))
        _READERS[engine] = reader
    return reader


def _dispose_reader(reader: Engine) -> Callable[[Engine], None]:
    def dispose(_engine: Engine) -> None:  # not reader.dispose(): it shares the event
        reader.pool.dispose()
        reader.pool = reader.pool.recreate()

    return dispose


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
