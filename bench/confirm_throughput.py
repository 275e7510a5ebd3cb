"""Confirm throughput: confirm POSTs per second under 16 concurrent clients, against a
Flask-plus-one-SQLite-write baseline measured in the same run at the same worker count;
with the write lock's hold time per confirm, optionally on PostgreSQL and with open game
pages polling.

Servers, each a gunicorn subprocess (sync workers, ``--workers``, 2 by default like
STACK-NOTES) on a free loopback port, all started by this script and all stopped at its
end, also on error:

* ``baseline``: a minimal Flask app (``baseline_app`` below) whose ``POST /write`` does
  one INSERT, committed, into SQLite with ``journal_mode=WAL`` + ``synchronous=NORMAL``.
  It stays SQLite with ``--db postgresql`` too: the aim (a third of it) is defined
  against it.
* ``pbem queued``: ``pbem:create_app()`` with pbem's gunicorn settings
  (``pbem.gunicorn_conf``, as deployed, through bench/lock_probe.py: see below) on a
  database of its own; requests only queue email (Outbox rows) and no clock runs, so the
  emails stay in the outbox and delivery costs nothing.
* ``pbem +clock``: the same on a second database, plus one clock process
  (``flask --app pbem pbem clock``) whose mail loop delivers the queued emails during the
  run (on SQLite it polls the outbox every ``PBEM_MAIL_POLL_INTERVAL`` s, on PostgreSQL a
  NOTIFY wakes it) to a local aiosmtpd sink (its own subprocess; ``--mail dev`` writes
  .eml files instead). The clock competes for the same cores and the same write lock, as
  in a real deployment; its CPU counts as server CPU.

``--db sqlite`` (default): each pbem database is a temp SQLite file (WAL, as pbem sets
it). ``--db postgresql``: one throwaway cluster started by this script with
tests/pgcluster.py (as the test suite runs it: fsync, synchronous_commit and
full_page_writes off, so commits cost less than on a durable server) and removed at the
end; each pbem database is a fresh database in it. The cluster's processes (backends and
all) count as server CPU in the pbem runs: they do the database work that SQLite does
inside pbem's processes. Every database is migrated with
``pbem.migrate.upgrade``.

``--workers 1,2,4`` runs everything once per worker count, in that order, each time on
fresh servers and fresh databases: the baseline (warm-up, run #1), each pbem
configuration, the baseline again (run #2, ``--baseline-runs``); each pbem figure is
compared with the median of the baseline runs *at the same worker count*.

Open games are prepared by this process on each configuration's database with
``services.create_game(..., confirm_by_email=False, start=True)`` (each game with
addresses of its own; the sending caps are lifted as well); for each game's first open
decision it mints one action token (``pbem.tokens.mint``) for the heuristic bot's choice,
and marks the games' initial emails as already sent (else the clock would deliver that
backlog during the run). So every confirm hits a different open decision, always the
first decision of a fresh game (bench/confirm_latency.py covers whole games); on
PostgreSQL no two confirms wait for the same game row.

Each client thread (16, spread over ``--client-procs`` processes) does, for its own
tokens, ``GET /a/<token>`` (the confirm page), reads the hidden ``sig`` and
``POST /a/<token>`` with it, until the time is up; against the baseline it only POSTs.
Rates count responses completed inside the measured window; a 1.5 s warm-up precedes it.

Write lock (``--lock-probe``, on by default): pbem's gunicorn runs with
``--config bench/lock_probe.py``, which takes every setting of pbem.gunicorn_conf and adds
a ``post_fork`` hook; the clock runs under a wrapper (``CLOCK_WITH_PROBE``) that installs
the same probe. Per writing transaction it records when the lock was asked for, granted
and released (its docstring says exactly how): on SQLite from the end of pbem's
``BEGIN IMMEDIATE`` (a read-only transaction's plain ``BEGIN`` is not counted) to the
return of the DBAPI COMMIT/ROLLBACK; on PostgreSQL from the end of the first
``SELECT ... FOR UPDATE`` (``lock_game``) to the same. Only samples released inside the
window count. On SQLite the lock is one and exclusive, so a hold ends at the latest when
the next writer (worker or clock) is granted it: a release stamped later than that is cut
to that grant, and the cuts are printed (how many, by how much). Two causes: the process
was descheduled between the release inside COMMIT and its timestamp (more busy processes
than cores), or the COMMIT call went on after the release: SQLite runs the WAL
auto-checkpoint (every 1000 pages; it syncs the database file at synchronous=NORMAL)
inside the committing call once the transaction is over. A standalone loop of one-row
commits here showed commit calls of up to 85 ms every ~1000 pages against a median of
0.02 ms; cuts of 100-200 ms appear in the runs. A holder descheduled *while* it holds the
lock still counts: the lock is held meanwhile. Printed: the holds' count (per confirm
POST), hold p50/p99, the wait before the grant (on PostgreSQL the locking statement's
time), and the sum of the holds' time inside the window / the window. On SQLite that is
the busy share of the one write lock (workers and clock separately; together at most
100 %); on PostgreSQL the locks are game rows, several held at once, so it is the mean number
of game rows locked at any moment.

Pollers (``--pollers N``, ``--poll-every S``): N simulated open game pages, one asyncio
loop in a process of their own. Each page is loaded once before the window (its ETag kept,
as a browser has it), then polled during the window with ``GET /g/<page token>`` every S
s on a fixed schedule, the pages spread evenly over the S s, with ``If-None-Match`` when
the last answer had an ``ETag`` (a 304 keeps the old one, a 200 takes its new one or
none). The page tokens (``mint(s, "page", game, seat)``) are the confirming seats' of
games spread evenly over the run's tokens: the early ones are confirmed in the run (their
page changes), the late ones maybe not. Printed: polls/s answered in the window, the
shares of 200 and 304, poll p50/p99 latency, the pollers' CPU, and how late polls started
against their schedule (more than 1 % over 100 ms late is flagged: the pollers fell
behind). The server CPU per confirm then includes serving the polls.

Per run: confirm POSTs/s, POST and GET p50/p99 latency, server CPU per confirm (GET and
POST together; from /proc, a second and less noise-sensitive way to compare), client CPU,
the machine's busy share and the part of it by processes not this bench's, the moves
stored and their emails. Per worker count: the ratio of each configuration to the
baseline median (the aim is 1/3) and by server CPU per request. At the end a summary
table: config x workers, with POST/s, ratio, POST p50/p99, CPU ms per confirm, lock hold
p50/p99 and held share, polls/s and 304 share (with pollers), and POST/s at 4 workers /
at 2 (when both ran).

The machine has 2 cores shared by the servers and the clients: compare figures within
one run. gunicorn's sync workers close the connection after each response, so the
clients' keep-alive connections are re-opened for every request. All servers write an
access log line per request (pbem's redacting one for pbem, gunicorn's for the baseline)
to their log file in the temp dir.

    .venv/bin/python bench/confirm_throughput.py [--duration 6] [--configs queued,clock]
        [--workers 2 | --workers 1,2,4] [--db sqlite|postgresql] [--mail smtp|dev]
        [--pollers 0 --poll-every 5] [--no-lock-probe] [--post-only]
    .venv/bin/python bench/confirm_throughput.py --db postgresql --workers 1,2,4
    .venv/bin/python bench/confirm_throughput.py --workers 2 --pollers 200
    .venv/bin/python bench/confirm_throughput.py --against ../wt-before  # side by side

``--against DIR`` (a checkout of other code, e.g. ``git worktree add --detach ../wt-before
HEAD~3``; same database schema): each configuration also runs on DIR's pbem and clock
(``old queued``, ``old +clock``: servers started with DIR as their working folder and
first on PYTHONPATH), just before the same configuration on this checkout's, at the same
worker count and against the same baselines: a before/after comparison in one go, on a
machine whose other load changes from minute to minute.

Figures (issue 35 point 6, 2 shared cores, other processes busy 43-70 % of them; ratio to
the baseline, server CPU ms per confirm; ``--against`` a worktree of 0868480), old -> new:
SQLite 2 workers, two runs: queued 0.078 -> 0.072 and 0.078 -> 0.086 (CPU 6.73 -> 6.83,
6.73 -> 5.82), +clock 0.075 -> 0.073 and 0.059 -> 0.086 (CPU 8.53 -> 6.60, 10.03 -> 6.18);
SQLite 4 workers: queued 78 -> 151 confirms/s, +clock 152 -> 160 (CPU 7.37 -> 5.71,
6.53 -> 6.15); PostgreSQL 4 workers: queued 62 -> 74, +clock 56 -> 78 (CPU 12.56 -> 10.20,
14.97 -> 10.02). Run to run the rates swing by up to 2x with the others' load.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import http.client
import math
import multiprocessing
import os
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SIG_RE = re.compile(rb'name="sig" value="([0-9a-f]+)"')
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
# A page (200), or a move's 303 to the page that says it (Post/Redirect/Get).
ANSWERED = (200, 303)
NO_CAPS = {"CREATE_LIMIT_PER_HOUR": "100000", "NOTICE_LIMIT_PER_ADDRESS": "100000",
           "NOTICE_LIMIT_PER_GAME": "100000", "INVITE_LIMIT_PER_ADDRESS": "100000"}
CONFIG_NAMES = {"queued": "pbem queued", "clock": "pbem +clock"}
# ``--against``: a configuration run on the other checkout's code (key ``<config>:old``).
OLD_NAMES = {"queued": "old queued", "clock": "old +clock"}
OLD = ":old"


def config_of(key: str) -> str:
    """The configuration (``queued``, ``clock``) of a run's key (``queued:old``...)."""
    return key.removesuffix(OLD)
CLK_TCK = os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- baseline app


def baseline_app():
    """Imported by gunicorn: ``confirm_throughput:baseline_app()``. One SQLite write per
    POST, committed (autocommit INSERT), on one connection per worker process."""
    from flask import Flask, request

    path = os.environ["BENCH_BASELINE_DB"]
    app = Flask("baseline")
    local: dict[str, sqlite3.Connection] = {}

    def db() -> sqlite3.Connection:
        if "conn" not in local:
            conn = sqlite3.connect(path, isolation_level=None, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=30000")
            local["conn"] = conn
        return local["conn"]

    @app.post("/write")
    def write():
        db().execute("INSERT INTO hit (at, body) VALUES (?, ?)",
                     (time.time(), request.get_data(as_text=True)[:200]))
        return "ok\n"

    @app.get("/healthz")
    def healthz():
        return "ok\n"

    return app


def create_baseline_db(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE hit (id INTEGER PRIMARY KEY, at REAL, body TEXT)")
    conn.close()


# --------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if this bench process dies (Linux)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def proc_children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
        return [int(x) for x in text.split()]
    except OSError:
        return []


def proc_cpu(pid: int) -> float:
    """utime + stime of one process, in seconds (0 if it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and all its descendants alive now."""
    return proc_cpu(pid) + sum(tree_cpu(child) for child in proc_children(pid))


class Cluster:
    """The PostgreSQL cluster's processes as a server whose CPU counts (``cpu``): the
    backends do pbem's database work, which SQLite does inside pbem's own processes."""

    name = "postgresql"

    def __init__(self, cluster) -> None:
        self.cluster = cluster

    def cpu(self) -> float:
        return tree_cpu(self.cluster.proc.pid)


def machine_cpu() -> tuple[float, float, float]:
    """(busy, steal, total) jiffies from /proc/stat, all cores together."""
    values = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    steal = values[7] if len(values) > 7 else 0
    total = sum(values[:8])
    return total - idle - steal, steal, total


class Server:
    def __init__(self, name: str, argv: list[str], env: dict[str, str], port: int,
                 log: Path, cwd: Path = ROOT) -> None:
        self.name, self.argv, self.env, self.port, self.log = name, argv, env, port, log
        self.cwd = cwd  # gunicorn and flask put their working folder first on sys.path
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(self.argv, cwd=self.cwd, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, preexec_fn=_die_with_parent)

    def wait_ready(self, path: str | None, timeout: float = 60.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n"
                                   + self.log_tail())
            try:
                if path is None:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    return
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", path)
                if conn.getresponse().status == 200:
                    conn.close()
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready after {timeout:.0f} s:\n" + self.log_tail())

    def pids(self) -> list[int]:
        return [self.proc.pid, *proc_children(self.proc.pid)] if self.proc else []

    def cpu(self) -> float:
        return sum(proc_cpu(pid) for pid in self.pids())

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def term(self) -> None:
        """SIGTERM to the server's own process group (``stop`` waits for it)."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)

    def stop(self) -> None:
        """SIGTERM to the server's own process group, then SIGKILL if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.term()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):  # any worker left behind
            os.killpg(self.proc.pid, signal.SIGKILL)


def gunicorn(app: str, port: int, workers: int, extra: list[str]) -> list[str]:
    return [str(BIN / "gunicorn"), "--workers", str(workers), "--bind", f"127.0.0.1:{port}",
            "--no-control-socket", *extra, app]


# --------------------------------------------------------------------------- clients


def client_thread(kind: str, port: int, tokens: list[str] | None, start_at: float,
                  deadline: float, records: list, closes: list[int]) -> None:
    """One client: a keep-alive http.client connection (re-opened when the server closes).
    Records (op, start, end, status); status -1 for a connection error."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        t0 = time.monotonic()
        try:
            conn.request(method, path, body=body, headers=FORM if body is not None else {})
            resp = conn.getresponse()
            data = resp.read()
            status = resp.status
            if conn.sock is None:
                closes[0] += 1
        except (OSError, http.client.HTTPException):
            conn.close()
            status, data = -1, b""
        records.append((method, t0, time.monotonic(), status))
        return status, data

    time.sleep(max(0.0, start_at - time.monotonic()))
    if kind == "baseline":
        while time.monotonic() < deadline:
            call("POST", "/write", b"x=1")
    else:
        for item in tokens:
            if time.monotonic() >= deadline:
                break
            raw, _, known_sig = item.partition(":")
            if known_sig:  # --post-only: the confirm page's sig was worked out beforehand
                call("POST", f"/a/{raw}", b"sig=" + known_sig.encode())
                continue
            status, page = call("GET", f"/a/{raw}", None)
            sig = SIG_RE.search(page) if status == 200 else None
            if sig is not None:
                call("POST", f"/a/{raw}", b"sig=" + sig.group(1))
        else:
            now = time.monotonic()
            records.append(("EXHAUSTED", now, now, 0))
    conn.close()


def client_process(kind: str, port: int, token_lists: list, start_at: float,
                   deadline: float, pipe) -> None:
    cpu0 = os.times()
    records: list = []
    closes = [0]
    threads = [threading.Thread(target=client_thread, daemon=True,
                                args=(kind, port, tokens, start_at, deadline, records, closes))
               for tokens in token_lists]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cpu1 = os.times()
    pipe.send((records, (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system), closes[0]))
    pipe.close()


# --------------------------------------------------------------------------- pollers


async def fetch_page(port: int, path: str, etag: str | None,
                     timeout: float = 60.0) -> tuple[int, str | None]:
    """One GET over a new connection (``Connection: close``), with ``If-None-Match`` when
    ``etag`` is given: (status, the response's ETag or None); status -1 on any error."""
    import asyncio

    async def go() -> tuple[int, str | None]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            head = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                    "Connection: close\r\nAccept-Encoding: identity\r\n")
            if etag is not None:
                head += f"If-None-Match: {etag}\r\n"
            writer.write((head + "\r\n").encode("latin-1"))
            raw = await reader.readuntil(b"\r\n\r\n")
            lines = raw.decode("latin-1").split("\r\n")
            status = int(lines[0].split()[1])
            headers = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
            if status in (204, 304) or 100 <= status < 200:
                pass
            elif "content-length" in headers:
                await reader.readexactly(int(headers["content-length"]))
            else:
                await reader.read()  # to the end: we asked the server to close
            return status, headers.get("etag")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    try:
        return await asyncio.wait_for(go(), timeout)
    except (OSError, ValueError, IndexError, asyncio.IncompleteReadError,
            asyncio.LimitOverrunError):  # OSError includes TimeoutError
        return -1, None


def load_pages(port: int, pages: list[str], concurrency: int = 8) -> dict[str, str | None]:
    """Each page fetched once, as a browser loads it before it starts polling: its ETag
    (None if the answer had none). Outside the measured window."""
    import asyncio

    async def main() -> dict[str, str | None]:
        sem = asyncio.Semaphore(concurrency)

        async def one(raw: str) -> tuple[str, str | None]:
            async with sem:
                status, etag = await fetch_page(port, f"/g/{raw}", None)
                if status != 200:
                    raise RuntimeError(f"GET /g/<page token> answered {status}")
                return raw, etag

        return dict(await asyncio.gather(*(one(raw) for raw in pages)))

    return asyncio.run(main())


def poller_process(port: int, pages: list[str], etags: dict[str, str | None], every: float,
                   start_at: float, deadline: float, pipe) -> None:
    """All simulated open game pages in one asyncio loop: page i polls at
    ``start_at + every * i / len(pages)``, then every ``every`` s on that fixed schedule
    (a poll whose turn came while the previous one was still waiting starts at once, late).
    Records ("POLL", start, end, status) and each poll's lateness against its schedule."""
    import asyncio

    cpu0 = os.times()
    records: list = []
    lags: list[float] = []

    async def page(i: int, raw: str) -> None:
        etag = etags.get(raw)
        due = start_at + every * i / len(pages)
        while due < deadline:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            t0 = time.monotonic()
            lags.append(t0 - due)
            status, new = await fetch_page(port, f"/g/{raw}", etag)
            records.append(("POLL", t0, time.monotonic(), status))
            if status == 200:
                etag = new  # a 304 keeps the ETag the page has
            due += every

    async def main() -> None:
        await asyncio.gather(*(page(i, raw) for i, raw in enumerate(pages)))

    asyncio.run(main())
    cpu1 = os.times()
    pipe.send((records, (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system), lags))
    pipe.close()


@dataclass
class Run:
    name: str
    start: float
    end: float  # the window's end: the deadline, or the first client out of tokens
    records: list
    client_cpu: float
    server_cpu: float
    sink_cpu: float
    busy: float  # machine CPU busy fraction of all cores during the window
    steal: float
    cpu_seconds: float  # all cores' seconds in the window (busy or not)
    closes: int
    exhausted: bool
    moves: int = 0
    outbox: dict = field(default_factory=dict)
    poll_cpu: float = 0.0  # the pollers' process (also in client_cpu)
    lags: list = field(default_factory=list)  # each poll's start behind its schedule, s
    # role -> [(asked, acquired, released, release as stamped)]: see cut_to_next_grant
    locks: dict = field(default_factory=dict)

    def ok(self, method: str) -> list[float]:
        return [t1 - t0 for m, t0, t1, st in self.records
                if m == method and st in ANSWERED and t1 <= self.end]

    def errors(self) -> int:
        return sum(1 for m, _, t1, st in self.records
                   if m in ("GET", "POST") and st not in ANSWERED and t1 <= self.end)

    def polls(self) -> list[tuple[float, int]]:
        """(latency, status) of the polls answered inside the window."""
        return [(t1 - t0, st) for m, t0, t1, st in self.records
                if m == "POLL" and st > 0 and self.start <= t0 and t1 <= self.end]

    def holds(self, role: str) -> list[tuple[float, float, float, float]]:
        """The write-lock samples of ``role`` released inside the window."""
        return [h for h in self.locks.get(role, []) if self.start <= h[2] <= self.end]

    def held_share(self, role: str) -> float:
        """Sum of the holds' time inside the window / the window."""
        held = sum(max(0.0, min(h[2], self.end) - max(h[1], self.start))
                   for h in self.locks.get(role, []))
        return held / self.seconds if self.seconds else 0.0

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def rate(self, method: str = "POST") -> float:
        return len(self.ok(method)) / self.seconds

    @property
    def others(self) -> float:
        """Busy fraction of all cores used by processes other than this bench's."""
        ours = self.server_cpu + self.client_cpu + self.sink_cpu
        return max(0.0, self.busy - ours / self.cpu_seconds) if self.cpu_seconds else 0.0


def drive(name: str, kind: str, port: int, token_lists: list, procs: int, duration: float,
          servers: list, sink: Server | None, polls: tuple | None = None,
          lock_dir: Path | None = None, exclusive: bool = True) -> Run:
    """Run the clients for ``duration`` seconds (after all have started) and collect.
    ``servers``: whatever has a ``cpu()`` whose CPU counts as the server's. ``polls``:
    (page tokens, their ETags, seconds between polls) for a poller process."""
    ctx = multiprocessing.get_context("fork")
    procs = max(1, min(procs, len(token_lists)))
    start_at = time.monotonic() + 0.3 + 0.1 * (procs + bool(polls))
    deadline = start_at + duration
    workers, pipes = [], []
    poll_pipe = None
    try:
        if polls:
            poll_pipe, send = ctx.Pipe(duplex=False)
            p = ctx.Process(target=poller_process, daemon=True,
                            args=(port, *polls, start_at, deadline, send))
            p.start()
            send.close()
            workers.append(p)
        for i in range(procs):
            recv, send = ctx.Pipe(duplex=False)
            p = ctx.Process(target=client_process, daemon=True,
                            args=(kind, port, token_lists[i::procs], start_at, deadline, send))
            p.start()
            send.close()
            workers.append(p)
            pipes.append(recv)
        time.sleep(max(0.0, start_at - time.monotonic()))
        cpu0 = sum(s.cpu() for s in servers)
        sink0 = sink.cpu() if sink else 0.0
        m0 = machine_cpu()
        time.sleep(max(0.0, deadline - time.monotonic()))
        cpu1 = sum(s.cpu() for s in servers)
        sink1 = sink.cpu() if sink else 0.0
        m1 = machine_cpu()
        records, client_cpu, closes = [], 0.0, 0
        for recv in pipes:
            if not recv.poll(120):
                raise RuntimeError("a client process did not report within 120 s")
            recs, cpu, c = recv.recv()
            records += recs
            client_cpu += cpu
            closes += c
        poll_cpu, lags = 0.0, []
        if poll_pipe is not None:
            if not poll_pipe.poll(120):
                raise RuntimeError("the pollers did not report within 120 s")
            recs, poll_cpu, lags = poll_pipe.recv()
            records += recs
            client_cpu += poll_cpu
        for p in workers:
            p.join(10)
    finally:
        for p in workers:
            if p.is_alive():
                p.terminate()
                p.join(5)
    out_of_tokens = [t0 for m, t0, _, _ in records if m == "EXHAUSTED" and t0 < deadline]
    end = min([deadline, *out_of_tokens])
    total = m1[2] - m0[2]
    run = Run(name, start_at, end, records, client_cpu, cpu1 - cpu0, sink1 - sink0,
              (m1[0] - m0[0]) / total if total else 0.0,
              (m1[1] - m0[1]) / total if total else 0.0, total / CLK_TCK, closes,
              bool(out_of_tokens), poll_cpu=poll_cpu, lags=lags)
    if lock_dir is not None:
        from lock_probe import read_samples

        run.locks = cut_to_next_grant({role: read_samples(lock_dir, role)
                                       for role in ("worker", "clock")}, exclusive)
    return run


def cut_to_next_grant(locks: dict[str, list], exclusive: bool) -> dict[str, list]:
    """Samples (asked, acquired, released) -> (asked, acquired, released, as stamped). On
    SQLite the write lock is one and exclusive, so a hold ends at the latest when the next
    writer (of any process) was granted it: a release stamped later than that (the process
    was descheduled between the release inside COMMIT and its timestamp, common with more
    busy processes than cores) is cut to that grant. PostgreSQL's row locks overlap: kept."""
    rows = sorted(((a, role, q, r) for role, samples in locks.items()
                   for q, a, r in samples), key=lambda row: row[0])
    out: dict[str, list] = {role: [] for role in locks}
    for i, (a, role, q, r) in enumerate(rows):
        end = min(r, rows[i + 1][0]) if exclusive and i + 1 < len(rows) else r
        out[role].append((q, a, max(a, end), r))
    return out


# --------------------------------------------------------------------------- pbem games


class Games:
    """Prepares open games and one action token per game, in this process."""

    def __init__(self, url: str, secret: str, players: int) -> None:
        from pbem import create_app

        self.app = create_app({"DATABASE_URL": url, "MAIL_BACKEND": "memory",
                               "SECRET_KEY": secret, "BASE_URL": "http://127.0.0.1",
                               **{k: int(v) for k, v in NO_CAPS.items()}})
        self.players = players
        self.seed = 1
        self.seats: list[tuple[str, int]] = []  # (game, seat) of each token last made

    def tokens(self, count: int) -> list[str]:
        import json
        import random

        from sqlalchemy import update
        from sqlmodel import select

        from engine.cavemen.bots import heuristic_bot
        from engine.registry import get_game
        from pbem import services
        from pbem.db import session_scope
        from pbem.models import Decision, Game, Outbox, Seat, utcnow
        from pbem.tokens import mint

        mod = get_game("cavemen")
        rng = random.Random(self.seed)
        raws: list[str] = []
        self.seats = []
        with self.app.app_context():
            ids = []
            for _ in range(count):
                people = [services.PlayerIn(f"Player {i}", f"p{i}.g{self.seed}@bench.invalid")
                          for i in range(self.players)]
                ids.append(services.create_game("cavemen", people, seed=self.seed,
                                                confirm_by_email=False, start=True).game_id)
                self.seed += 1
            for i in range(0, len(ids), 400):
                chunk = ids[i:i + 400]
                with session_scope() as s:
                    games = {g.id: g for g in s.exec(select(Game).where(Game.id.in_(chunk)))}
                    done = set()
                    for d in s.exec(select(Decision).where(Decision.game_id.in_(chunk),
                                                           Decision.closed_at.is_(None))
                                    .order_by(Decision.id)):
                        if d.game_id in done:
                            continue
                        done.add(d.game_id)
                        state = mod.from_json(json.loads(games[d.game_id].state))
                        action = heuristic_bot(state, d.position, rng).to_json()
                        raws.append(mint(s, "action", d.game_id, d.seat_id, d.id, action))
                        self.seats.append((d.game_id, d.seat_id))
                    s.execute(update(Outbox)
                              .where(Outbox.game_id.in_(chunk), Outbox.status == "pending")
                              .values(status="sent", sent_at=utcnow()))
                    for seat in s.exec(select(Seat).where(Seat.game_id.in_(chunk))):
                        seat.seen_event_seq = games[seat.game_id].event_seq
        return raws

    def pages(self, count: int) -> list[str]:
        """Game-page tokens (``pbem.tokens.mint(s, "page", ...)``) for ``count`` seats
        spread evenly over the tokens last made: the seat that confirms, in games from the
        first (confirmed early in the run) to the last (maybe never)."""
        from pbem.db import session_scope
        from pbem.tokens import mint_many

        if not self.seats or count <= 0:
            return []
        picks = [self.seats[i * len(self.seats) // count] for i in range(count)]
        with self.app.app_context(), session_scope() as s:
            return mint_many(s, [{"kind": "page", "game_id": g, "seat_id": seat,
                                  "decision_id": None, "action": None} for g, seat in picks])

    def dispose(self) -> None:
        from pbem.db import get_engine

        get_engine(self.app).dispose()

    def counts(self) -> tuple[int, int]:
        """(moves, outbox rows) so far."""
        from sqlalchemy import func
        from sqlmodel import select

        from pbem.db import session_scope
        from pbem.models import Move, Outbox

        with self.app.app_context(), session_scope() as s:
            return (s.exec(select(func.count()).select_from(Move)).one(),
                    s.exec(select(func.max(Outbox.id))).one() or 0)

    def outbox_since(self, last_id: int) -> dict[str, int]:
        from sqlalchemy import func
        from sqlmodel import select

        from pbem.db import session_scope
        from pbem.models import Outbox

        with self.app.app_context(), session_scope() as s:
            rows = s.exec(select(Outbox.status, func.count()).where(Outbox.id > last_id)
                          .group_by(Outbox.status)).all()
            return dict(rows)


def split(tokens: list[str], clients: int) -> list[list[str]]:
    return [tokens[i::clients] for i in range(clients)]


# --------------------------------------------------------------------------- report


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, min(len(ordered), math.ceil(q * len(ordered)))) - 1]


def lat(values: list[float]) -> str:
    if not values:
        return "p50     - ms  p99     - ms"
    return (f"p50 {statistics.median(values) * 1000:6.1f} ms  "
            f"p99 {quantile(values, 0.99) * 1000:6.1f} ms")


def ms(value: float | None, width: int = 6) -> str:
    return f"{'-':>{width}}" if value is None else f"{value * 1000:{width}.1f}"


def report(run: Run, kind: str, pg: bool = False) -> None:
    posts = run.ok("POST")
    n = max(1, len(posts))
    line = (f"{run.name:<13} POST {run.rate('POST'):8.1f}/s  {lat(posts)}")
    if kind == "pbem":
        gets = run.ok("GET")
        line += f"  | GET {run.rate('GET'):7.1f}/s  {lat(gets)}"
    print(line)
    polled = run.polls()
    detail = (f"{'':13} {len(posts)} POSTs in {run.seconds:.2f} s, errors {run.errors()}; "
              f"server CPU {run.server_cpu / n * 1000:.2f} ms per POST"
              f"{' (GET included)' if kind == 'pbem' else ''}"
              f"{' (and the polls)' if polled else ''}, "
              f"clients {run.client_cpu / n * 1000:.2f} ms; machine busy "
              f"{run.busy * 100:.0f}% of all cores ({run.others * 100:.0f}% by other "
              f"processes), steal {run.steal * 100:.0f}%")
    if run.sink_cpu:
        detail += f"; SMTP sink {run.sink_cpu / n * 1000:.2f} ms"
    answered = sum(1 for r in run.records if r[0] in ("GET", "POST") and r[3] > 0)
    if answered:
        detail += f"; server closed the connection after {run.closes / answered:.0%} of answers"
    print(detail)
    if kind == "pbem":
        ob = ", ".join(f"{k} {v}" for k, v in sorted(run.outbox.items())) or "none"
        print(f"{'':13} moves stored {run.moves} (with POSTs still in flight at the end); "
              f"their emails: {ob}")
    for role, who in (("worker", "gunicorn workers"), ("clock", "clock process")):
        holds = run.holds(role)
        if not holds and (role == "clock" or not run.locks):
            continue
        hold = [h[2] - h[1] for h in holds]
        wait = [h[1] - h[0] for h in holds]
        cut = [h[3] - h[2] for h in holds if h[3] > h[2]]
        if pg:
            share = f"game rows locked {run.held_share(role):.2f} at once on average"
        else:
            share = f"held {run.held_share(role):.0%} of the window"
        print(f"{'':13} write lock, {who}: {len(holds)} holds ({len(holds) / n:.2f} per "
              f"POST), hold {lat(hold)}, wait for it {lat(wait)}; {share}")
        if cut:
            print(f"{'':13}   ({len(cut)} release stamps later than the next grant, cut to "
                  f"it: by {statistics.median(cut) * 1000:.1f} ms median, "
                  f"{max(cut) * 1000:.1f} ms max)")
    if run.lags or polled:
        statuses = [st for _, st in polled]
        ok, nm = statuses.count(200), statuses.count(304)
        other = len(statuses) - ok - nm
        errors = sum(1 for m, t0, t1, st in run.records
                     if m == "POLL" and st <= 0 and run.start <= t0 and t1 <= run.end)
        late = sum(1 for lag in run.lags if lag > 0.1)
        print(f"{'':13} polls: {len(polled) / run.seconds:.1f}/s answered ({len(polled)}), "
              f"200 {ok / max(1, len(polled)):.0%}, 304 {nm / max(1, len(polled)):.0%}"
              f"{f', other {other}' if other else ''}{f', errors {errors}' if errors else ''}; "
              f"latency {lat([t for t, _ in polled])}; pollers' CPU "
              f"{run.poll_cpu / max(1, len(run.lags)) * 1000:.2f} ms per poll")
        lag50 = ms(statistics.median(run.lags) if run.lags else None).strip()
        lag100 = ms(max(run.lags) if run.lags else None).strip()
        print(f"{'':13} polls started behind schedule: median {lag50} ms, max {lag100} ms, "
              f"{late} of "
              f"{len(run.lags)} more than 100 ms late"
              f"{' -- THE POLLERS FELL BEHIND' if late > 0.01 * len(run.lags) else ''}")
    if run.exhausted:
        print(f"{'':13} NOTE: a client ran out of tokens; window cut to {run.seconds:.2f} s")


@dataclass
class Row:
    """One line of the summary: a pbem configuration at one worker count."""

    name: str
    workers: int
    run: Run
    base: float  # the baseline's median POST/s at this worker count

    @property
    def ratio(self) -> float:
        return self.run.rate("POST") / self.base if self.base else 0.0


def summary(rows: list[Row], args) -> None:
    polls = args.pollers > 0
    pg = " (PostgreSQL: game rows locked at once, on average)" if args.db == "postgresql" else ""
    print("\nsummary: POST = confirm POSTs/s; ratio = POST/s / baseline median at the same "
          "worker count; p50/p99 of the POST, ms; CPU = server CPU ms per confirm (GET+POST"
          f"{', polls included' if polls else ''}); lock = the write lock's hold per writing "
          "transaction of the workers, ms, and the share of the window it was held"
          f"{pg}"
          "; other = share of all cores busy with processes not this bench's (noise); "
          "x4/2 = POST/s at 4 workers / at 2")
    head = (f"{'config':<13} {'w':>2} {'POST/s':>8} {'ratio':>6} {'p50':>6} {'p99':>6} "
            f"{'CPU':>6} {'lock50':>6} {'lock99':>6} {'held':>5}")
    if polls:
        head += f" {'poll/s':>6} {'304':>4}"
    print(head + f" {'other':>5} {'x4/2':>5}")
    rate = {(r.name, r.workers): r.run.rate("POST") for r in rows}
    for r in rows:
        run = r.run
        posts = run.ok("POST")
        hold = [h[2] - h[1] for h in run.holds("worker")]
        share = run.held_share("worker")
        held = ("-" if not run.locks else f"{share:.2f}" if args.db == "postgresql"
                else f"{share:.0%}")
        ratio = f"{r.ratio:6.3f}" if r.base else f"{'-':>6}"
        line = (f"{r.name:<13} {r.workers:>2} {run.rate('POST'):8.1f} {ratio} "
                f"{ms(statistics.median(posts) if posts else None)} "
                f"{ms(quantile(posts, 0.99) if posts else None)} "
                f"{run.server_cpu / max(1, len(posts)) * 1000:6.2f} "
                f"{ms(statistics.median(hold) if hold else None)} "
                f"{ms(quantile(hold, 0.99) if hold else None)} {held:>5}")
        if polls:
            polled = run.polls()
            share = sum(1 for _, st in polled if st == 304) / max(1, len(polled))
            line += f" {len(polled) / run.seconds:6.1f} {share:4.0%}"
        line += f" {run.others:5.0%}"
        two = rate.get((r.name, 2))
        line += (f" {run.rate('POST') / two:5.2f}" if r.workers == 4 and two else f" {'':>5}")
        print(line)


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=6.0, help="seconds per measured run")
    parser.add_argument("--warmup", type=float, default=1.5, help="seconds before each run")
    parser.add_argument("--clients", type=int, default=16, help="concurrent client threads")
    parser.add_argument("--client-procs", type=int, default=2,
                        help="processes the client threads are spread over")
    parser.add_argument("--workers", default="2",
                        help="gunicorn sync workers per server; a comma-separated list (e.g. "
                             "1,2,4) runs everything once per count, on fresh servers and "
                             "databases")
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite",
                        help="pbem's database (the baseline stays Flask + one SQLite write); "
                             "postgresql: a throwaway cluster (tests/pgcluster.py)")
    parser.add_argument("--players", type=int, default=4, choices=range(2, 6))
    parser.add_argument("--mail", choices=("dev", "smtp"), default="smtp",
                        help="where the clock of '+clock' delivers: smtp to an aiosmtpd sink "
                             "or dev (.eml files)")
    parser.add_argument("--configs", default="queued,clock",
                        help="comma-separated pbem configurations: queued (no clock), "
                             "clock (a clock process delivering during the run)")
    parser.add_argument("--baseline-runs", type=int, default=2,
                        help="baseline runs per worker count (the second after the pbem runs; "
                             "0: none, no ratios)")
    parser.add_argument("--post-only", action="store_true",
                        help="clients send only the confirm POSTs, with the form's sig worked "
                             "out beforehand (as if each confirm page had been fetched before "
                             "the window): the rate of confirm POSTs alone")
    parser.add_argument("--max-games", type=int, default=8000,
                        help="cap on games prepared per pbem run")
    parser.add_argument("--lock-probe", action=argparse.BooleanOptionalAction, default=True,
                        help="time the write lock's holds in pbem's processes "
                             "(bench/lock_probe.py)")
    parser.add_argument("--pollers", type=int, default=0,
                        help="simulated open game pages polling GET /g/<page token> during "
                             "each pbem run")
    parser.add_argument("--poll-every", type=float, default=5.0,
                        help="seconds between two polls of one page")
    parser.add_argument("--against", type=Path, default=None,
                        help="a checkout of other code (a worktree of the commit before): "
                             "each configuration runs on its pbem too ('old queued', 'old "
                             "+clock'), just before the same configuration on this "
                             "checkout's, on a fresh database of the same schema")
    args = parser.parse_args()
    args.configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if not args.configs or set(args.configs) - set(CONFIG_NAMES):
        parser.error("--configs takes queued and/or clock")
    if args.against is not None:
        args.against = args.against.resolve()
        if not (args.against / "pbem" / "__init__.py").is_file():
            parser.error(f"--against: no pbem checkout at {args.against}")
    # the runs in order: each configuration on the other code first, then on this code
    args.keys = [key for c in args.configs
                 for key in ([c + OLD] if args.against else []) + [c]]
    try:
        args.workers = [int(w) for w in args.workers.split(",") if w.strip()]
    except ValueError:
        parser.error("--workers takes a comma-separated list of counts")
    if not args.workers or min(args.workers) < 1:
        parser.error("--workers takes counts of 1 or more")
    if args.pollers < 0 or args.poll_every <= 0:
        parser.error("--pollers takes 0 or more, --poll-every more than 0")
    args.rate_seen = 0.0  # the best confirm POSTs/s of a run so far: how many games to make

    def on_signal(signum, _frame):
        raise SystemExit(f"stopped by signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    servers: list[Server] = []
    started = time.monotonic()
    cluster = None
    with tempfile.TemporaryDirectory(prefix="pbem-bench-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            if args.db == "postgresql":
                sys.path.insert(0, str(ROOT))  # for tests.pgcluster
                from tests.pgcluster import PostgresCluster

                cluster = PostgresCluster()  # the tests' throwaway cluster
                cluster.start()
            run_all(args, tmp, servers, cluster)
        finally:
            for server in servers:
                server.stop()
            if cluster is not None:
                cluster.stop()
    print(f"wall time {time.monotonic() - started:.0f} s; all servers stopped"
          f"{' and the PostgreSQL cluster removed' if cluster else ''}")


def run_all(args, tmp: Path, servers: list[Server], cluster) -> None:
    secret = "bench-" + os.urandom(16).hex()
    sink = None
    if "clock" in args.configs and args.mail == "smtp":
        sp = free_port()
        sink = Server("smtp sink", [str(BIN / "aiosmtpd"), "-n", "-l", f"127.0.0.1:{sp}",
                                    "-c", "aiosmtpd.handlers.Sink"],
                      dict(os.environ), sp, tmp / "smtp.log")
        servers.append(sink)
        sink.start()  # ready by the time the first pbem server is

    print(f"confirm throughput: {args.clients} concurrent clients over {args.client_procs} "
          f"client process(es), gunicorn sync workers {','.join(map(str, args.workers))} "
          f"per server (fresh servers and databases per count), loopback, "
          f"{args.duration:g} s per run after a {args.warmup:g} s warm-up; "
          f"{os.cpu_count()} cores shared by servers and clients")
    where = ("an aiosmtpd sink subprocess" if sink else ".eml files in a temp dir (dev)")
    if cluster is None:
        db = "SQLite WAL (synchronous=NORMAL), one database file"
    else:
        db = ("PostgreSQL (a throwaway cluster as the tests run it: fsync, synchronous_commit "
              "and full_page_writes off; its processes' CPU counts as server CPU), one "
              "database")
    print(f"pbem: {db} per configuration and worker count, {args.players}-player games; "
          f"requests only queue email. 'queued' = no clock (emails stay in the outbox); "
          f"'+clock' = a clock process delivers them during the run, to {where}")
    print("each pbem confirm = GET /a/<token> (confirm page) + POST with its sig; the "
          "baseline (Flask + one SQLite write per POST, whatever --db) only POSTs; "
          + (f"it runs {args.baseline_runs} time(s) per worker count, at that count, first "
             "before the pbem runs and then after them" if args.baseline_runs else
             "no baseline runs (--baseline-runs 0): no ratios"))
    if args.lock_probe:
        lock = ("BEGIN IMMEDIATE granted -> COMMIT/ROLLBACK returned" if cluster is None else
                "first SELECT ... FOR UPDATE answered -> COMMIT/ROLLBACK returned")
        print(f"write lock per writing transaction of pbem's processes: {lock}")
    if args.against:
        print(f"'old ...' = the same configuration served by the pbem (and clock) of "
              f"{args.against}, run just before this checkout's, each on a fresh database "
              "(migrated and filled by this checkout's code)")
    if args.pollers:
        print(f"pollers: {args.pollers} open game pages in one asyncio process, each "
              f"GET /g/<page token> every {args.poll_every:g} s with If-None-Match once it "
              "has an ETag (each page loaded once before the window, as a browser would)")
    print()

    rows: list[Row] = []
    t0 = time.monotonic()
    for workers in args.workers:
        print(f"== {workers} worker{'s' if workers > 1 else ''} ==")
        rows += run_workers(args, workers, tmp, servers, cluster, secret, sink)
        print()
    summary(rows, args)
    print(f"(all worker counts took {time.monotonic() - t0:.0f} s)")


def run_workers(args, workers: int, tmp: Path, servers: list[Server], cluster,
                secret: str, sink: Server | None) -> list[Row]:
    """Fresh servers and databases at ``workers`` workers: baseline, pbem configurations,
    baseline again; the servers are stopped before returning."""
    from pbem.migrate import upgrade

    mine: list[Server] = []
    base_db = tmp / f"baseline-w{workers}.sqlite3"
    create_baseline_db(base_db)
    bp = free_port()
    baseline = Server("baseline", gunicorn("confirm_throughput:baseline_app()", bp,
                                           workers, ["--pythonpath", str(ROOT / "bench"),
                                                     "--access-logfile", "-"]),
                      dict(os.environ, BENCH_BASELINE_DB=str(base_db)),
                      bp, tmp / f"baseline-w{workers}.log")
    mine.append(baseline)
    pbems: dict[str, Server] = {}
    clocks: dict[str, Server] = {}
    urls: dict[str, str] = {}
    lock_dirs: dict[str, Path | None] = {}
    for cfg in args.keys:
        code = args.against if cfg.endswith(OLD) else ROOT  # whose pbem serves it
        tag = f"{cfg.replace(':', '-')}-w{workers}"
        if cluster is None:
            urls[cfg] = f"sqlite:///{tmp / f'pbem-{tag}.sqlite3'}"
        else:
            urls[cfg] = cluster.url(cluster.create_database())
        upgrade(urls[cfg])
        port = free_port()
        env = dict(os.environ, PBEM_DATABASE_URL=urls[cfg], PBEM_SECRET_KEY=secret,
                   PBEM_BASE_URL=f"http://127.0.0.1:{port}",
                   PBEM_MAILBOX_DIR=str(tmp / f"mailbox-{tag}"),
                   **{f"PBEM_{k}": v for k, v in NO_CAPS.items()})
        if code != ROOT:
            env["PYTHONPATH"] = os.pathsep.join(
                [str(code), *filter(None, [os.environ.get("PYTHONPATH")])])
        if sink is not None:
            env.update(PBEM_MAIL_BACKEND="smtp", PBEM_SMTP_HOST="127.0.0.1",
                       PBEM_SMTP_PORT=str(sink.port),
                       PBEM_MAIL_FROM="pbem bench <pbem@bench.invalid>")
        else:
            env["PBEM_MAIL_BACKEND"] = "dev"
        conf = "python:pbem.gunicorn_conf"
        lock_dirs[cfg] = None
        if args.lock_probe:
            lock_dirs[cfg] = tmp / f"locks-{tag}"
            lock_dirs[cfg].mkdir()
            env["BENCH_LOCK_DIR"] = str(lock_dirs[cfg])
            conf = str(ROOT / "bench" / "lock_probe.py")  # pbem's settings + the probe
        names = OLD_NAMES if cfg.endswith(OLD) else CONFIG_NAMES
        pbems[cfg] = Server(names[config_of(cfg)],
                            gunicorn("pbem:create_app()", port, workers, ["--config", conf]),
                            env, port, tmp / f"pbem-{tag}.log", cwd=code)
        mine.append(pbems[cfg])
        if config_of(cfg) == "clock":
            argv = [str(BIN / "flask"), "--app", "pbem", "pbem", "clock"]
            if args.lock_probe:
                argv = [sys.executable, "-c", CLOCK_WITH_PROBE, *argv[1:]]
                env["BENCH_DIR"] = str(ROOT / "bench")
            clocks[cfg] = Server("clock", argv, env, 0, tmp / f"clock-{tag}.log", cwd=code)
            mine.append(clocks[cfg])
    servers += mine
    games: dict[str, Games] = {}
    try:
        for server in mine:
            if server not in clocks.values():  # a clock runs only around its own runs
                server.start()
        if sink is not None:
            sink.wait_ready(None)
        baseline.wait_ready("/healthz")
        for server in pbems.values():
            server.wait_ready("/healthz")
        games = {cfg: Games(urls[cfg], secret, args.players) for cfg in args.keys}
        db = Cluster(cluster) if cluster is not None else None
        return measure(args, workers, baseline, pbems, clocks, games, lock_dirs, secret, sink,
                       db)
    finally:
        for g in games.values():
            g.dispose()
        for server in mine:  # all at once: each takes about a second to shut down
            server.term()
        for server in mine:
            server.stop()
            servers.remove(server)


def measure(args, workers: int, baseline: Server, pbems: dict[str, Server],
            clocks: dict[str, Server], games: dict[str, Games],
            lock_dirs: dict[str, Path | None], secret: str, sink: Server | None,
            db: Cluster | None) -> list[Row]:
    configs = args.keys
    warm = 6 * args.clients
    t0 = time.monotonic()
    warm_tokens = {cfg: games[cfg].tokens(warm) for cfg in configs}
    prep_seconds = time.monotonic() - t0
    base_runs: list[Run] = []
    pbem_runs: dict[str, Run] = {}

    def baseline_run(label: str, warmup: bool) -> None:
        lists = [None] * args.clients
        if warmup:
            drive("warm-up", "baseline", baseline.port, lists, args.client_procs,
                  args.warmup, [baseline], None)
        run = drive(label, "baseline", baseline.port, lists, args.client_procs,
                    args.duration, [baseline], None)
        base_runs.append(run)
        report(run, "baseline")

    if args.baseline_runs:
        baseline_run("baseline #1", True)
    for cfg in configs:
        server, clock = pbems[cfg], clocks.get(cfg)
        measured = [server] + ([clock] if clock else []) + ([db] if db else [])
        if clock:
            start_clock(clock)
        warm_run = drive("warm-up", "pbem", server.port,
                         split(warm_tokens[cfg], args.clients), args.client_procs,
                         args.warmup, measured, sink)
        if clock:  # no clock while games are prepared: it would deliver their first emails
            clock.stop()
        # twice the rate seen so far (others' load may have slowed the warm-up)
        estimate = max(warm_run.rate("POST"), args.rate_seen, 1.0)
        need = min(args.max_games, math.ceil(estimate * args.duration * 2.0) + 4 * args.clients)
        t0 = time.monotonic()
        tokens = games[cfg].tokens(need)
        polls = None
        if args.pollers:
            pages = games[cfg].pages(args.pollers)
            polls = (pages, load_pages(server.port, pages), args.poll_every)
        if args.post_only:
            from pbem.tokens import form_signature

            tokens = [f"{t}:{form_signature(secret, t)}" for t in tokens]
        prep_seconds += time.monotonic() - t0
        if clock:
            start_clock(clock)
        moves0, outbox0 = games[cfg].counts()
        run = drive(server.name, "pbem", server.port, split(tokens, args.clients),
                    args.client_procs, args.duration, measured, sink, polls, lock_dirs[cfg],
                    exclusive=args.db == "sqlite")
        moves1, _ = games[cfg].counts()
        run.moves, run.outbox = moves1 - moves0, games[cfg].outbox_since(outbox0)
        args.rate_seen = max(args.rate_seen, run.rate("POST"))
        if clock:
            clock.stop()
        pbem_runs[cfg] = run
        report(run, "pbem", args.db == "postgresql")
    for i in range(1, args.baseline_runs):
        baseline_run(f"baseline #{i + 1}", False)

    base = base_cpu = 0.0
    if base_runs:
        base = statistics.median(r.rate("POST") for r in base_runs)
        base_cpu = statistics.median(r.server_cpu / max(1, len(r.ok("POST")))
                                     for r in base_runs)
        print(f"baseline median {base:.1f} POST/s at {workers} workers, server CPU "
              f"{base_cpu * 1000:.2f} ms per POST")
    for run in pbem_runs.values():
        cpu = run.server_cpu / max(1, len(run.ok("POST")))
        line = f"{run.name:<13} {run.rate('POST'):7.1f} confirm POSTs/s"
        if base:
            ratio = run.rate("POST") / base
            line += (f" = {ratio:.3f} of the baseline ({'meets' if ratio >= 1 / 3 else 'misses'}"
                     f" the aim of 1/3); by server CPU per request "
                     f"{base_cpu / cpu if cpu else 0:.3f}")
        print(line)
    print(f"(preparing games and tokens in this process took {prep_seconds:.1f} s, "
          f"outside the measured windows)")
    return [Row(run.name, workers, run, base) for run in pbem_runs.values()]


# The clock process with the lock probe installed first: ``python -c CLOCK_WITH_PROBE
# --app pbem pbem clock`` is ``flask --app pbem pbem clock`` (click reads sys.argv[1:]).
CLOCK_WITH_PROBE = """\
import os, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
import lock_probe
lock_probe.install(os.environ["BENCH_LOCK_DIR"], "clock")
from flask.cli import main
main()
"""


def start_clock(clock: Server, timeout: float = 60.0) -> None:
    """Start the clock process and wait until it logs that it runs."""
    clock.start()
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if clock.proc.poll() is not None:
            raise RuntimeError(f"the clock exited with {clock.proc.returncode}:\n"
                               + clock.log_tail())
        if "clock running" in clock.log_tail():
            return
        time.sleep(0.1)
    raise RuntimeError("the clock did not start:\n" + clock.log_tail())


if __name__ == "__main__":
    main()
