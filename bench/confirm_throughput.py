"""Confirm throughput: confirm POSTs per second under 16 concurrent clients, against a
Flask-plus-one-SQLite-write baseline measured in the same run.

Servers, each a gunicorn subprocess (sync workers, 2 by default, like STACK-NOTES) on a
free loopback port, all started by this script and all stopped at its end, also on error:

* ``baseline``: a minimal Flask app (``baseline_app`` below) whose ``POST /write`` does
  one INSERT, committed, into SQLite with ``journal_mode=WAL`` + ``synchronous=NORMAL``.
* ``pbem queued``: ``pbem:create_app()`` (``--config python:pbem.gunicorn_conf``, as
  deployed) on a temp SQLite file; requests only queue email (Outbox rows) and no clock
  runs, so the emails stay in the outbox and delivery costs nothing.
* ``pbem +clock``: the same on a second temp SQLite file, plus one clock process
  (``flask --app pbem pbem clock``) whose mail loop delivers the queued emails during the
  run (it polls the outbox every ``PBEM_MAIL_POLL_INTERVAL`` s on SQLite) to a local
  aiosmtpd sink (its own subprocess; ``--mail dev`` writes .eml files instead). The clock
  competes for the same cores and the same SQLite write lock, as in a real deployment;
  its CPU counts as server CPU. (This replaces the old ``inline`` configuration, which
  delivered in the request: pbem no longer has ``DELIVER_INLINE``.)

Open games are prepared by this process on each configuration's database with
``services.create_game(..., confirm_by_email=False, start=True)`` (each game with
addresses of its own; the sending caps are lifted as well); for each game's first open
decision it mints one action token (``pbem.tokens.mint``) for the heuristic bot's choice,
and marks the games' initial emails as already sent (else the clock would deliver that
backlog during the run). So every confirm hits a different open decision, always the
first decision of a fresh game (bench/confirm_latency.py covers whole games).

Each client thread (16, spread over ``--client-procs`` processes) does, for its own
tokens, ``GET /a/<token>`` (the confirm page), reads the hidden ``sig`` and
``POST /a/<token>`` with it, until the time is up; against the baseline it only POSTs.
Rates count responses completed inside the measured window; a 1.5 s warm-up precedes it.
The baseline runs before and after the pbem runs; the ratio uses their median.

The machine has 2 cores shared by the servers and the clients: the clients' CPU is
reported, and the server CPU per request (from /proc) is a second, less noise-sensitive
way to compare. gunicorn's sync workers close the connection after each response, so
the clients' keep-alive connections are re-opened for every request. All servers write
an access log line per request (pbem's redacting one for pbem, gunicorn's for the
baseline) to their log file in the temp dir.

    .venv/bin/python bench/confirm_throughput.py [--duration 6] [--configs queued,clock]
                                                 [--mail smtp|dev]
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
NO_CAPS = {"CREATE_LIMIT_PER_HOUR": "100000", "NOTICE_LIMIT_PER_ADDRESS": "100000",
           "NOTICE_LIMIT_PER_GAME": "100000", "INVITE_LIMIT_PER_ADDRESS": "100000"}
CONFIG_NAMES = {"queued": "pbem queued", "clock": "pbem +clock"}
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


def machine_cpu() -> tuple[float, float, float]:
    """(busy, steal, total) jiffies from /proc/stat, all cores together."""
    values = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    steal = values[7] if len(values) > 7 else 0
    total = sum(values[:8])
    return total - idle - steal, steal, total


class Server:
    def __init__(self, name: str, argv: list[str], env: dict[str, str], port: int,
                 log: Path) -> None:
        self.name, self.argv, self.env, self.port, self.log = name, argv, env, port, log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, stdout=out,
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

    def stop(self) -> None:
        """SIGTERM to the server's own process group, then SIGKILL if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
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

    def ok(self, method: str) -> list[float]:
        return [t1 - t0 for m, t0, t1, st in self.records
                if m == method and st == 200 and t1 <= self.end]

    def errors(self) -> int:
        return sum(1 for m, _, t1, st in self.records
                   if m in ("GET", "POST") and st != 200 and t1 <= self.end)

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
          servers: list[Server], sink: Server | None) -> Run:
    """Run the clients for ``duration`` seconds (after all have started) and collect."""
    ctx = multiprocessing.get_context("fork")
    procs = max(1, min(procs, len(token_lists)))
    start_at = time.monotonic() + 0.3 + 0.1 * procs
    deadline = start_at + duration
    workers, pipes = [], []
    try:
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
    return Run(name, start_at, end, records, client_cpu, cpu1 - cpu0, sink1 - sink0,
               (m1[0] - m0[0]) / total if total else 0.0,
               (m1[1] - m0[1]) / total if total else 0.0, total / CLK_TCK, closes,
               bool(out_of_tokens))


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
                    s.execute(update(Outbox)
                              .where(Outbox.game_id.in_(chunk), Outbox.status == "pending")
                              .values(status="sent", sent_at=utcnow()))
                    for seat in s.exec(select(Seat).where(Seat.game_id.in_(chunk))):
                        seat.seen_event_seq = games[seat.game_id].event_seq
        return raws

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


def report(run: Run, kind: str) -> None:
    posts = run.ok("POST")
    n = max(1, len(posts))
    line = (f"{run.name:<13} POST {run.rate('POST'):8.1f}/s  {lat(posts)}")
    if kind == "pbem":
        gets = run.ok("GET")
        line += f"  | GET {run.rate('GET'):7.1f}/s  {lat(gets)}"
    print(line)
    detail = (f"{'':13} {len(posts)} POSTs in {run.seconds:.2f} s, errors {run.errors()}; "
              f"server CPU {run.server_cpu / n * 1000:.2f} ms per POST"
              f"{' (GET included)' if kind == 'pbem' else ''}, "
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
    if run.exhausted:
        print(f"{'':13} NOTE: a client ran out of tokens; window cut to {run.seconds:.2f} s")


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=6.0, help="seconds per measured run")
    parser.add_argument("--warmup", type=float, default=1.5, help="seconds before each run")
    parser.add_argument("--clients", type=int, default=16, help="concurrent client threads")
    parser.add_argument("--client-procs", type=int, default=2,
                        help="processes the client threads are spread over")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
    parser.add_argument("--players", type=int, default=4, choices=range(2, 6))
    parser.add_argument("--mail", choices=("dev", "smtp"), default="smtp",
                        help="where the clock of '+clock' delivers: smtp to an aiosmtpd sink "
                             "or dev (.eml files)")
    parser.add_argument("--configs", default="queued,clock",
                        help="comma-separated pbem configurations: queued (no clock), "
                             "clock (a clock process delivering during the run)")
    parser.add_argument("--baseline-runs", type=int, default=2,
                        help="baseline runs (the second after the pbem runs)")
    parser.add_argument("--post-only", action="store_true",
                        help="clients send only the confirm POSTs, with the form's sig worked "
                             "out beforehand (as if each confirm page had been fetched before "
                             "the window): the rate of confirm POSTs alone")
    parser.add_argument("--max-games", type=int, default=8000,
                        help="cap on games prepared per pbem run")
    args = parser.parse_args()
    args.configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if not args.configs or set(args.configs) - set(CONFIG_NAMES):
        parser.error("--configs takes queued and/or clock")

    def on_signal(signum, _frame):
        raise SystemExit(f"stopped by signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    servers: list[Server] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pbem-bench-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            run_all(args, tmp, servers)
        finally:
            for server in servers:
                server.stop()
    print(f"wall time {time.monotonic() - started:.0f} s; all servers stopped")


def run_all(args, tmp: Path, servers: list[Server]) -> None:
    from pbem.migrate import upgrade

    create_baseline_db(tmp / "baseline.sqlite3")
    secret = "bench-" + os.urandom(16).hex()
    configs = args.configs

    sink = None
    if "clock" in configs and args.mail == "smtp":
        sp = free_port()
        sink = Server("smtp sink", [str(BIN / "aiosmtpd"), "-n", "-l", f"127.0.0.1:{sp}",
                                    "-c", "aiosmtpd.handlers.Sink"],
                      dict(os.environ), sp, tmp / "smtp.log")
        servers.append(sink)

    bp = free_port()
    baseline = Server("baseline", gunicorn("confirm_throughput:baseline_app()", bp,
                                           args.workers, ["--pythonpath", str(ROOT / "bench"),
                                                          "--access-logfile", "-"]),
                      dict(os.environ, BENCH_BASELINE_DB=str(tmp / "baseline.sqlite3")),
                      bp, tmp / "baseline.log")
    servers.append(baseline)
    pbems: dict[str, Server] = {}
    clocks: dict[str, Server] = {}
    urls: dict[str, str] = {}
    for cfg in configs:
        urls[cfg] = f"sqlite:///{tmp / f'pbem-{cfg}.sqlite3'}"
        upgrade(urls[cfg])
        port = free_port()
        env = dict(os.environ, PBEM_DATABASE_URL=urls[cfg], PBEM_SECRET_KEY=secret,
                   PBEM_BASE_URL=f"http://127.0.0.1:{port}",
                   PBEM_MAILBOX_DIR=str(tmp / f"mailbox-{cfg}"),
                   **{f"PBEM_{k}": v for k, v in NO_CAPS.items()})
        if sink is not None:
            env.update(PBEM_MAIL_BACKEND="smtp", PBEM_SMTP_HOST="127.0.0.1",
                       PBEM_SMTP_PORT=str(sink.port),
                       PBEM_MAIL_FROM="pbem bench <pbem@bench.invalid>")
        else:
            env["PBEM_MAIL_BACKEND"] = "dev"
        pbems[cfg] = Server(CONFIG_NAMES[cfg],
                            gunicorn("pbem:create_app()", port, args.workers,
                                     ["--config", "python:pbem.gunicorn_conf"]),
                            env, port, tmp / f"pbem-{cfg}.log")
        servers.append(pbems[cfg])
        if cfg == "clock":
            clocks[cfg] = Server("clock", [str(BIN / "flask"), "--app", "pbem", "pbem",
                                           "clock"], env, 0, tmp / "clock.log")
            servers.append(clocks[cfg])
    for server in servers:
        if server not in clocks.values():  # a clock runs only around its own runs
            server.start()
    if sink is not None:
        sink.wait_ready(None)
    baseline.wait_ready("/healthz")
    for server in pbems.values():
        server.wait_ready("/healthz")

    games = {cfg: Games(urls[cfg], secret, args.players) for cfg in configs}
    warm = 6 * args.clients
    t0 = time.monotonic()
    warm_tokens = {cfg: games[cfg].tokens(warm) for cfg in configs}
    prep_seconds = time.monotonic() - t0

    print(f"confirm throughput: {args.clients} concurrent clients over {args.client_procs} "
          f"client process(es), gunicorn {args.workers} sync workers per server, loopback, "
          f"{args.duration:g} s per run after a {args.warmup:g} s warm-up; "
          f"{os.cpu_count()} cores shared by servers and clients")
    where = ("an aiosmtpd sink subprocess" if sink else ".eml files in a temp dir (dev)")
    print(f"pbem: SQLite WAL (synchronous=NORMAL), {args.players}-player games, one database "
          f"per configuration; requests only queue email. 'queued' = no clock (emails stay "
          f"in the outbox); '+clock' = a clock process delivers them during the run, to "
          f"{where}")
    print("each pbem confirm = GET /a/<token> (confirm page) + POST with its sig; the "
          "baseline client only POSTs (one SQLite write each)\n")

    base_runs: list[Run] = []
    pbem_runs: dict[str, Run] = {}

    def baseline_run(label: str, warmup: bool) -> None:
        lists = [None] * args.clients
        if warmup:
            drive("warm-up", "baseline", bp, lists, args.client_procs, args.warmup,
                  [baseline], None)
        run = drive(label, "baseline", bp, lists, args.client_procs, args.duration,
                    [baseline], None)
        base_runs.append(run)
        report(run, "baseline")

    baseline_run("baseline #1", True)
    for cfg in configs:
        server, clock = pbems[cfg], clocks.get(cfg)
        measured = [server] + ([clock] if clock else [])
        if clock:
            start_clock(clock)
        warm_run = drive("warm-up", "pbem", server.port,
                         split(warm_tokens[cfg], args.clients), args.client_procs,
                         args.warmup, measured, sink)
        if clock:  # no clock while games are prepared: it would deliver their first emails
            clock.stop()
        estimate = max(warm_run.rate("POST"), 1.0)
        need = min(args.max_games, math.ceil(estimate * args.duration * 2.0) + 4 * args.clients)
        t0 = time.monotonic()
        tokens = games[cfg].tokens(need)
        if args.post_only:
            from pbem.tokens import form_signature

            tokens = [f"{t}:{form_signature(secret, t)}" for t in tokens]
        prep_seconds += time.monotonic() - t0
        if clock:
            start_clock(clock)
        moves0, outbox0 = games[cfg].counts()
        run = drive(server.name, "pbem", server.port, split(tokens, args.clients),
                    args.client_procs, args.duration, measured, sink)
        moves1, _ = games[cfg].counts()
        run.moves, run.outbox = moves1 - moves0, games[cfg].outbox_since(outbox0)
        if clock:
            clock.stop()
        pbem_runs[cfg] = run
        report(run, "pbem")
    for i in range(1, args.baseline_runs):
        baseline_run(f"baseline #{i + 1}", False)

    base = statistics.median(r.rate("POST") for r in base_runs)
    base_cpu = statistics.median(r.server_cpu / max(1, len(r.ok("POST"))) for r in base_runs)
    print(f"\nbaseline median {base:.1f} POST/s, server CPU {base_cpu * 1000:.2f} ms per POST")
    for _cfg, run in pbem_runs.items():
        ratio = run.rate("POST") / base if base else 0.0
        cpu = run.server_cpu / max(1, len(run.ok("POST")))
        print(f"{run.name:<13} {run.rate('POST'):7.1f} confirm POSTs/s = {ratio:.3f} of the "
              f"baseline ({'meets' if ratio >= 1 / 3 else 'misses'} the aim of 1/3); by server "
              f"CPU per request {base_cpu / cpu if cpu else 0:.3f}")
    print(f"(preparing games and tokens in this process took {prep_seconds:.1f} s, "
          f"outside the measured windows; {len(servers)} server process groups)")


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
