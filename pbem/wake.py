"""Wake-ups across processes on one machine, for SQLite (PostgreSQL has NOTIFY).

A loop that waits for work (the clock's mail loop, its notice loop; later the bot
workers) binds a Unix datagram socket of its own in the database's wake folder: the
folder ``<database file>.wake`` next to the SQLite file (so two servers on one machine,
each with its own database, never mix), named ``<topic>.<pid>.<n>.sock``. A process that
has queued work rings the topic after its transaction commits (never before: the woken
loop must see the row): one byte to every socket of the topic in the folder. So several
listeners of one topic (two clocks by mistake) are each woken, and a ring nobody hears
is no error. Ringing never blocks: a full socket buffer means the listener has a wake-up
waiting already. A listener's poll stays as the fallback (a datagram lost, a listener
not yet up, a database without a file).

``Waiter`` is what a loop waits on, on either database: a listener of a topic on
SQLite, a ``LISTEN`` on a channel on PostgreSQL (its transaction's ``NOTIFY`` wakes it
at the commit), and the poll in any case.

A socket's path must fit in 107 bytes: when the folder is too deep for that, the
listener binds a Linux abstract socket named by a hash of the path it would have had,
and writes an empty file of that path ending in ``.abstract`` instead of ``.sock``
(the ringer finds it in the same folder; nothing in the temp dir, which systemd's
``PrivateTmp`` would give each unit its own of). Elsewhere such a listener only polls.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import logging
import os
import select
import socket
import sys
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url

log = logging.getLogger("pbem.wake")

MAIL = "mail"  # the clock's mail loop: an email was queued
NOTICES = "notices"  # the clock's notice loop: a notice of another channel was queued
NOTICES_QUEUED = "pbem.notices_queued"  # session.info: ring NOTICES after the commit
BOTS = "bots"  # the bot workers: a bot's decision was opened (``pbem.bots``)
BOTS_QUEUED = "pbem.bots_queued"  # session.info: ring BOTS after the commit
BOTS_CHANNEL = "pbem_bots"  # PostgreSQL's NOTIFY channel of the same
_PATH_MAX = 107  # sun_path holds 108 bytes with the terminating NUL
_numbers = itertools.count(1)  # listeners of one process, each its own socket


@lru_cache(maxsize=64)
def folder_for(url: str | URL) -> Path | None:
    """The wake folder of the database at ``url``, or None when it has none (PostgreSQL,
    an in-memory SQLite)."""
    parsed = make_url(url) if isinstance(url, str) else url
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    path = Path(os.path.realpath(database))  # one folder however the file is reached
    return path.with_name(path.name + ".wake")


def _abstract(path: str | Path) -> bytes:
    """The abstract socket address of a listener whose path is too long to bind."""
    return b"\0pbem-wake:" + hashlib.sha256(os.fsencode(path)).hexdigest().encode()


def _make_folder(folder: Path) -> bool:
    """Create the wake folder; False if it cannot be made."""
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        return True
    except OSError:
        log.warning("cannot make the wake folder %s: polling only", folder, exc_info=True)
        return False


def ring(url: str | URL, topic: str) -> int:
    """Wake every listener of ``topic`` on the database at ``url``; how many were rung.
    Never raises: a wake-up is a hint, the listeners' polls are the guarantee."""
    folder = folder_for(url)
    if folder is None:
        return 0
    rung = 0
    prefix = topic + "."
    try:
        entries = [e.path for e in os.scandir(folder) if e.name.startswith(prefix)
                   and e.name.endswith((".sock", ".abstract"))]
    except OSError:  # no folder: nobody listens yet
        return 0
    if not entries:
        return 0
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.setblocking(False)
        for path in entries:
            try:
                sock.sendto(b"!", path if path.endswith(".sock") else _abstract(path))
                rung += 1
            except (BlockingIOError, InterruptedError):
                rung += 1  # its buffer is full: it has wake-ups waiting already
            except ConnectionRefusedError:  # a listener that died without closing
                with contextlib.suppress(OSError):
                    os.unlink(path)
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ENOBUFS):
                    log.debug("wake %s: %s", path, exc)
    return rung


class Listener:
    """One waiting loop's socket for ``topic`` on the database at ``url`` (a no-op whose
    ``wait`` only sleeps when the database has no wake folder)."""

    def __init__(self, url: str | URL, topic: str) -> None:
        self.path: Path | None = None
        self.sock: socket.socket | None = None
        folder = folder_for(url)
        if folder is None or not _make_folder(folder):
            return
        name = f"{topic}.{os.getpid()}.{next(_numbers)}"
        path = folder / f"{name}.sock"
        address: str | bytes = os.fspath(path)
        if len(os.fsencode(path)) > _PATH_MAX:
            if not sys.platform.startswith("linux"):
                log.warning("wake folder %s too deep for a socket: polling only", folder)
                return
            path = folder / f"{name}.abstract"
            address = _abstract(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # left by a process of the same id that died
            sock.bind(address)
            sock.setblocking(False)
            if isinstance(address, bytes):
                path.touch(mode=0o600)  # (after the bind: a ringer finds it listening)
        except OSError:
            sock.close()
            log.warning("cannot listen at %s: polling only", path, exc_info=True)
            return
        self.path, self.sock = path, sock

    @property
    def listening(self) -> bool:
        return self.sock is not None

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a ring; True if rung (every ring waiting is
        taken: one pass of the loop serves them all)."""
        if self.sock is None:
            return False
        try:
            ready, _, _ = select.select([self.sock], [], [], max(timeout, 0.0))
        except InterruptedError:
            return False
        if not ready:
            return False
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while self.sock.recv(64):
                pass
        return True

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            self.path = None

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class Waiter:
    """What a loop waits on for ``topic``: on SQLite a ``Listener`` of the database's
    wake folder, on PostgreSQL a connection that ``LISTEN``s on ``channel`` (None: no
    channel, only the poll); and in any case the wait's timeout, the poll. ``event``, if
    given, is a thread event of this process that wakes it too (set by a commit in this
    process). A wait is cut in slices of a quarter second, so that a stop is seen
    promptly. A lost connection is logged, and listened to again at the next wait."""

    SLICE = 0.25

    def __init__(self, url: URL, topic: str, channel: str | None = None,
                 event: threading.Event | None = None) -> None:
        self.url, self.topic, self.channel, self.event = url, topic, channel, event
        self.postgres = url.get_backend_name() == "postgresql"
        self.listener: Listener | None = None
        self.conn: Any = None  # psycopg.Connection, when listening on PostgreSQL

    def start(self) -> None:
        """Listen before the loop's first pass, so that work committed after the pass
        began wakes the wait that follows it (a failure here is retried at the wait)."""
        if not self.postgres:
            self.listener = Listener(self.url, self.topic)
            return
        try:
            self._connection()
        except Exception:  # noqa: BLE001 - the database away for a moment
            log.exception("%s: LISTEN failed; polling instead", self.topic)
            self.close()

    def wait(self, stop: threading.Event, timeout: float) -> bool:
        """Until rung (True), ``stop`` is set or ``timeout`` seconds are up (False)."""
        deadline = time.monotonic() + max(timeout, 0.0)
        try:
            if self.postgres:
                return self._wait_notified(stop, deadline)
            return self._wait_rung(stop, deadline)
        finally:
            if self.event is not None:
                self.event.clear()

    def _wait_rung(self, stop: threading.Event, deadline: float) -> bool:
        if self.listener is None:
            self.listener = Listener(self.url, self.topic)
        while not stop.is_set() and (left := deadline - time.monotonic()) > 0:
            if self.event is not None and self.event.is_set():
                return True
            if self.listener.listening:
                if self.listener.wait(min(left, self.SLICE)):
                    return True
            elif self.event is not None:
                if self.event.wait(min(left, self.SLICE)):
                    return True
            else:
                stop.wait(min(left, self.SLICE))
        return False

    def _wait_notified(self, stop: threading.Event, deadline: float) -> bool:
        if self.channel is None:
            stop.wait(max(0.0, deadline - time.monotonic()))
            return False
        try:
            conn = self._connection()
            while not stop.is_set() and (left := deadline - time.monotonic()) > 0:
                if list(conn.notifies(timeout=min(left, self.SLICE), stop_after=1)):
                    return True
        except Exception:  # noqa: BLE001 - a lost connection: poll, then listen again
            log.exception("%s: LISTEN failed; polling instead", self.topic)
            self.close()
            stop.wait(max(0.0, deadline - time.monotonic()))
        return False

    def _connection(self) -> Any:
        if self.conn is None and self.channel is not None:
            import psycopg

            url = self.url.set(drivername="postgresql")
            self.conn = psycopg.connect(url.render_as_string(hide_password=False),
                                        autocommit=True)
            self.conn.execute(f"LISTEN {self.channel}")
        return self.conn

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()
            self.listener = None
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
            self.conn = None
