"""``pbem serve``: the whole server (web, clock, inbound) under one supervisor.

Each part runs as a child process of the same Python (``python -m gunicorn ...``,
``python -m flask --app pbem pbem clock``, ...), in a process group of its own. Their
output comes back through pipes as one stream, each line prefixed with the child's
name. A child that dies is started again after a pause that doubles from
``Backoff.first`` up to ``Backoff.most`` seconds (back to the first once it ran for
``Backoff.steady`` seconds); a child that dies within ``Backoff.steady`` seconds of its
start ``Backoff.give_up`` times in a row is a configuration the supervisor cannot mend, so
it stops everything, says why, and exits with status 1. SIGTERM or SIGINT (Ctrl-C) stops
every child (SIGTERM, then SIGKILL for what still runs after ``stop_seconds``) and exits
with status 0. What a dead child leaves behind in its group (gunicorn's workers) is
killed before it is started again, and each child gets SIGTERM from the kernel if the
supervisor itself dies (``PR_SET_PDEATHSIG``), so no process outlives it.

Ports: the web server on ``port``, the SMTP receiver on :func:`inbound_port` of it
(2525 for 5000, moved by as much as ``port`` is), unless ``PBEM_INBOUND_PORT`` says
otherwise; the dev mailbox is a page of the web server. So two checkouts run side by
side with ``PORT=5000`` and ``PORT=5100``.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any

WEB_PORT = 5000  # the web port of the embedded defaults ...
INBOUND_PORT = 2525  # ... and the receiver's beside it
NAME_WIDTH = 7  # "inbound"


@dataclass(frozen=True)
class Backoff:
    """When to start a dead child again, and when to give up."""

    first: float = 1.0  # seconds before the first restart
    most: float = 30.0  # the longest pause
    # a child that ran this long was healthy: back to ``first`` (a start alone takes a
    # few seconds on a busy machine: imports, the app)
    steady: float = 30.0
    give_up: int = 5  # deaths in a row within ``steady`` seconds of the start


def inbound_port(port: int) -> int:
    """The SMTP receiver's port for a web server on ``port``: as far from 2525 as
    ``port`` is from 5000 (5100: 2625), or ``port + 1`` where that would leave the
    unprivileged ports (a web port under 3499)."""
    moved = INBOUND_PORT + port - WEB_PORT
    return moved if 1024 <= moved <= 65535 and moved != port else port + 1


@dataclass(frozen=True)
class Spec:
    """A child: its name in the log and its command line."""

    name: str
    argv: tuple[str, ...]


def specs(*, host: str, port: int, workers: int, inbound: str | None,
          stop_seconds: float, python: str = sys.executable, bots: int = 0) -> list[Spec]:
    """The children of ``serve``: gunicorn, the clock, the inbound receiver (``inbound``
    "smtp" or "imap"; None: none), and ``bots`` bot workers (``pbem bots``; 0: none, the
    clock plays the bots)."""
    flask = (python, "-m", "flask", "--app", "pbem", "pbem")
    web = (python, "-m", "gunicorn", "--workers", str(workers), "--bind", f"{host}:{port}",
           # gunicornc's socket would be one per user ($HOME/.gunicorn), shared by two
           # checkouts; the supervisor is what controls this gunicorn
           "--no-control-socket",
           "--graceful-timeout", str(max(1, int(stop_seconds) - 2)),
           "--config", "python:pbem.gunicorn_conf", "pbem:create_app()")
    children = [Spec("web", web), Spec("clock", (*flask, "clock"))]
    if inbound:
        children.append(Spec("inbound", (*flask, "inbound",
                                         *(["--imap"] if inbound == "imap" else []))))
    if bots:  # the bot workers: one child, itself the supervisor of ``bots`` workers
        children.append(Spec("bots", (*flask, "bots", "--workers", str(bots))))
    return children


@dataclass
class Child:
    spec: Spec
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    restart_at: float | None = 0.0  # start now
    pause: float = 0.0
    quick_deaths: int = 0
    reader: threading.Thread | None = None


class GaveUp(Exception):
    """A child died at once too many times in a row."""


class Supervisor:
    """Runs ``children`` until :meth:`stop` (or a signal, see :meth:`run`)."""

    def __init__(self, children: list[Spec], env: Mapping[str, str], *,
                 out: IO[bytes] | None = None, backoff: Backoff = Backoff(),
                 stop_seconds: float = 10.0, tick: float = 0.1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.children = [Child(spec) for spec in children]
        self.env = dict(env)
        self.out = out if out is not None else sys.stdout.buffer
        self.backoff, self.stop_seconds, self.tick, self.now = backoff, stop_seconds, tick, clock
        self.stopping = threading.Event()
        self.write_lock = threading.Lock()
        self.width = max([NAME_WIDTH, *(len(c.spec.name) for c in self.children)])

    # ------------------------------------------------------------------ the log stream
    def say(self, text: str, name: str = "serve") -> None:
        """One line of the stream, prefixed with ``name``."""
        line = f"{name:<{self.width}} | {text.rstrip()}\n".encode("utf-8", "replace")
        with self.write_lock, contextlib.suppress(OSError, ValueError):
            self.out.write(line)  # gone (a closed terminal): the children run on, their
            self.out.flush()  # output still drained

    def _copy(self, child: Child, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            self.say(raw.decode("utf-8", "replace").rstrip("\r\n"), child.spec.name)
        stream.close()

    # ------------------------------------------------------------------ children
    def _start(self, child: Child) -> None:
        child.restart_at = None
        child.started = self.now()
        try:
            proc = subprocess.Popen(child.spec.argv, env=self.env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    process_group=0,
                                    preexec_fn=functools.partial(_die_with_parent, os.getpid()))
        except OSError as exc:
            self.say(f"{child.spec.name} could not be started: {exc}")
            child.proc = None
            self._died(child, None)
            return
        child.proc = proc
        assert proc.stdout is not None
        child.reader = threading.Thread(target=self._copy, args=(child, proc.stdout),
                                        name=f"serve-{child.spec.name}", daemon=True)
        child.reader.start()
        self.say(f"started {child.spec.name} (pid {proc.pid})")

    def _died(self, child: Child, status: int | None) -> None:
        """``child`` exited by itself: clear its group, count, and plan its restart."""
        if child.proc is not None:
            _kill_group(child.proc.pid, signal.SIGKILL)  # gunicorn's workers, if any
            if child.reader is not None:
                child.reader.join(timeout=1.0)
        ran = self.now() - child.started
        if ran >= self.backoff.steady:
            child.quick_deaths, child.pause = 0, 0.0
        else:
            child.quick_deaths += 1
        how = "could not start" if status is None else describe_exit(status)
        if child.quick_deaths >= self.backoff.give_up:
            raise GaveUp(f"{child.spec.name} stopped {child.quick_deaths} times in a row "
                         f"within {self.backoff.steady:g} s of its start (the last time it "
                         f"{how}); not starting it again: its output above says why")
        child.pause = (self.backoff.first if child.pause == 0
                       else min(child.pause * 2, self.backoff.most))
        child.restart_at = self.now() + child.pause
        child.proc = None
        self.say(f"{child.spec.name} {how} after {ran:.1f} s; starting it again in "
                 f"{child.pause:g} s")

    def _step(self) -> None:
        for child in self.children:
            if child.proc is not None:
                status = child.proc.poll()
                if status is not None:
                    self._died(child, status)
            if child.restart_at is not None and self.now() >= child.restart_at:
                self._start(child)

    def announce_when_listening(self, host: str, port: int, lines: list[str],
                                within: float = 120.0) -> None:
        """Say ``lines`` once something accepts connections on ``host``:``port`` (the
        web server: a connection opened and closed, which gunicorn does not log)."""

        def wait() -> None:
            end = self.now() + within
            while not self.stopping.is_set() and self.now() < end:
                try:
                    with socket.create_connection((host.strip("[]"), port), timeout=1):
                        break
                except OSError:
                    self.stopping.wait(0.2)
            else:
                return
            for line in lines:
                self.say(line)

        threading.Thread(target=wait, name="serve-announce", daemon=True).start()

    # ------------------------------------------------------------------ running
    def stop(self, *_args: Any) -> None:
        """Ask :meth:`run` to stop every child and return (a signal handler too)."""
        self.stopping.set()

    def run(self, *, handle_signals: bool = True) -> int:
        """Start the children and keep them running until SIGTERM/SIGINT (0) or until one
        cannot be kept running (1)."""
        if handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, self.stop)
        status = 0
        try:
            while not self.stopping.is_set():
                self._step()
                self.stopping.wait(self.tick)
        except GaveUp as exc:
            self.say(f"giving up: {exc}")
            status = 1
        finally:
            self._stop_all()
        return status

    def _stop_all(self) -> None:
        running = [c for c in self.children if c.proc is not None and c.proc.poll() is None]
        if running:
            self.say(f"stopping {', '.join(c.spec.name for c in running)}")
        for child in running:
            assert child.proc is not None
            with contextlib.suppress(ProcessLookupError):
                child.proc.send_signal(signal.SIGTERM)
        deadline = self.now() + self.stop_seconds
        for child in running:
            assert child.proc is not None
            try:
                child.proc.wait(timeout=max(0.0, deadline - self.now()))
            except subprocess.TimeoutExpired:
                self.say(f"{child.spec.name} did not stop within {self.stop_seconds:g} s: "
                         f"killed")
        for child in self.children:
            if child.proc is not None:
                _kill_group(child.proc.pid, signal.SIGKILL, within=0)
                child.proc.wait()
                _kill_group(child.proc.pid, signal.SIGKILL)  # and wait for what is left
                if child.reader is not None:
                    child.reader.join(timeout=2.0)
                child.proc = None
        self.say("stopped")


def describe_exit(status: int) -> str:
    """``exited with status 1`` or ``was killed by SIGKILL``."""
    if status < 0:
        try:
            return f"was killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"was killed by signal {-status}"
    return f"exited with status {status}"


def _kill_group(pgid: int, sig: int, within: float = 2.0) -> None:
    """Send ``sig`` to the process group ``pgid``; with SIGKILL, wait (up to ``within``
    seconds) until the group is gone, so that no process of it holds a port still."""
    end = time.monotonic() + within
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
        while sig == signal.SIGKILL and time.monotonic() < end:
            time.sleep(0.02)
            os.killpg(pgid, 0)  # ProcessLookupError once none is left


_PR_SET_PDEATHSIG = 1
try:
    _prctl: Any = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: the stop on SIGTERM still holds
    _prctl = None


def _die_with_parent(parent: int) -> None:
    """In the child, before exec: SIGTERM when the supervisor dies, even by SIGKILL (and
    no start at all if it died already)."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        os._exit(1)
