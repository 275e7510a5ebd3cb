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
from functools import lru_cache
from pathlib import Path

from sqlalchemy.engine import URL, make_url

log = logging.getLogger("pbem.wake")

MAIL = "mail"  # the clock's mail loop: an email was queued
NOTICES = "notices"  # the clock's notice loop: a notice of another channel was queued
NOTICES_QUEUED = "pbem.notices_queued"  # session.info: ring NOTICES after the commit
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
