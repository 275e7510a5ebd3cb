"""Write-lock probe for bench/confirm_throughput.py: how long each writing transaction
holds the write lock, timed in the server's own processes, with pbem left unchanged.

Used two ways:

* as a gunicorn config file, ``gunicorn --config bench/lock_probe.py ...``: it takes over
  every setting of ``pbem.gunicorn_conf`` (pbem's deployed config: the redacting access
  log) and adds a ``post_fork`` hook (chained to pbem's, should it ever have one) that
  installs the probe in each worker when ``BENCH_LOCK_DIR`` is set;
* imported by a wrapper around the clock process (``install(directory, "clock")``).

What is timed, per DBAPI connection (class-level listeners on ``sqlalchemy.engine.Engine``,
so they apply to the engine pbem creates after the fork):

* start of the hold, SQLite: the end of the ``BEGIN IMMEDIATE`` statement
  (``after_cursor_execute``, which runs once ``cursor.execute`` has returned, that is once
  SQLite has granted the lock). pbem issues it from its ``begin`` listener in pbem/db.py
  for every transaction that may write; read-only transactions issue a plain ``BEGIN``
  and are not timed. The statement's ``before_cursor_execute`` gives the time the lock
  was asked for (the wait is the difference: time queued behind other writers).
* start of the hold, PostgreSQL: the end of the first statement of the transaction that
  contains ``FOR UPDATE`` (``lock_game`` in pbem/services/plumbing.py locks the game row);
  the wait is that statement's duration. Writing transactions without one are not timed.
  The ``begin`` event forgets a start left by a transaction that never ended (PostgreSQL
  only: on SQLite pbem's own ``begin`` listener issues the ``BEGIN IMMEDIATE``, and the
  order of the two listeners must not matter).
* end of the hold: when the DBAPI ``commit()`` or ``rollback()`` returns. The ``commit``
  and ``rollback`` engine events fire *before* the DBAPI call and there is no "after"
  event (nor a ``do_commit`` dialect event), so ``install`` wraps the two methods
  ``do_commit`` / ``do_rollback`` of each engine's dialect object (once per dialect, at
  its first ``engine_connect``). Every way a transaction ends goes through them:
  ``Connection.commit``/``rollback`` and the pool's reset-on-return rollback alike. On
  SQLite pbem sets ``isolation_level=None`` and issues BEGIN itself; sqlite3's
  ``commit()`` still sends COMMIT while a transaction is open, so the lock is released
  inside that call.

Each sample is one line ``asked acquired released`` (``time.monotonic()``, which is one
clock for every process of the machine, so the bench compares it with its window) appended
with one ``write(2)`` to ``<BENCH_LOCK_DIR>/<role>-<pid>.txt`` (O_APPEND) right after the
release: nothing is buffered, so the bench reads every sample as soon as its window ends,
and the write costs a few microseconds outside the lock.
"""

from __future__ import annotations

import os
import time

from gunicorn.config import KNOWN_SETTINGS

from pbem import gunicorn_conf as _pbem_conf

# every setting pbem deploys with (what gunicorn would read from pbem.gunicorn_conf)
_SETTINGS = {s.name for s in KNOWN_SETTINGS}
globals().update({k: v for k, v in vars(_pbem_conf).items() if k in _SETTINGS})
_base_post_fork = getattr(_pbem_conf, "post_fork", None)


def post_fork(server, worker):  # a gunicorn hook
    if _base_post_fork is not None:
        _base_post_fork(server, worker)
    directory = os.environ.get("BENCH_LOCK_DIR")
    if directory:
        install(directory, "worker")


def install(directory: str, role: str) -> None:
    """Time every writing transaction of this process into ``directory``."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    fd = os.open(os.path.join(directory, f"{role}-{os.getpid()}.txt"),
                 os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    asked: dict[int, float] = {}  # DBAPI connection -> start of the locking statement
    held: dict[int, tuple[float, float]] = {}  # DBAPI connection -> (asked, acquired)

    def key(conn_or_fairy) -> int:
        return id(getattr(conn_or_fairy, "dbapi_connection", conn_or_fairy))

    def locking(conn, statement: str) -> bool:
        if conn.dialect.name == "sqlite":
            return statement.lstrip().upper().startswith("BEGIN IMMEDIATE")
        return "FOR UPDATE" in statement.upper() and key(conn.connection) not in held

    def before(conn, _cursor, statement, _params, _context, _many):
        if locking(conn, statement):
            asked[key(conn.connection)] = time.monotonic()

    def after(conn, _cursor, statement, _params, _context, _many):
        now = time.monotonic()
        k = key(conn.connection)
        t0 = asked.pop(k, None)
        if t0 is not None and locking(conn, statement):
            held[k] = (t0, now)

    def begin(conn):
        if conn.dialect.name != "sqlite":
            held.pop(key(conn.connection), None)

    def ended(fairy) -> None:
        now = time.monotonic()
        sample = held.pop(key(fairy), None)
        if sample is not None:
            os.write(fd, f"{sample[0]:.6f} {sample[1]:.6f} {now:.6f}\n".encode())

    def wrap(dialect) -> None:
        if getattr(dialect, "_bench_lock_probe", False):
            return
        commit, rollback = dialect.do_commit, dialect.do_rollback

        def do_commit(fairy):
            try:
                commit(fairy)
            finally:
                ended(fairy)

        def do_rollback(fairy):
            try:
                rollback(fairy)
            finally:
                ended(fairy)

        dialect.do_commit, dialect.do_rollback = do_commit, do_rollback
        dialect._bench_lock_probe = True

    event.listen(Engine, "engine_connect", lambda conn: wrap(conn.dialect))
    event.listen(Engine, "before_cursor_execute", before)
    event.listen(Engine, "after_cursor_execute", after)
    event.listen(Engine, "begin", begin)


def read_samples(directory, role: str | None = None) -> list[tuple[float, float, float]]:
    """Every sample written so far into ``directory`` (by ``role`` only, if given)."""
    from pathlib import Path

    out = []
    for path in sorted(Path(directory).glob(f"{role or '*'}-*.txt")):
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3:
                out.append((float(parts[0]), float(parts[1]), float(parts[2])))
    return out
