"""Clock stall: how long the clock takes to play 1,000 due timeouts, and how long players
wait for their confirms meanwhile (SQLite, and PostgreSQL with ``--db postgresql``).

Builds a database at the migrations' head (a temporary SQLite file, WAL as pbem sets it;
or a throwaway PostgreSQL cluster, ``tests/pgcluster.py``) holding ``--due`` Cavemen
games whose open decision is past its deadline and ``--games`` more whose decision is
open with its deadline hours ahead; each of those gets a one-click action token for its
player (the heuristic bot's choice). The games are cloned from three real games
(3, 4 and 5 players) exactly as ``bench/sweep_time.py`` does. Then it starts pbem under
gunicorn (``--workers`` sync workers, ``--config python:pbem.gunicorn_conf``, as
deployed) and ``--clients`` client threads that confirm at a steady total ``--rate``: each
confirm is ``GET /a/<token>`` (the confirmation page) and ``POST /a/<token>`` with the
page's ``sig``, as a player does; a POST is the write that may wait for the clock.

1. Reference: the clients confirm for ``--reference`` seconds with no clock running.
2. Clock: a separate process plays the due timeouts while the clients go on. By default
   (``--clock sweep``) it is a loop of ``pbem.clock.sweep(app)`` (what the clock's
   scheduler runs every ``CLOCK_INTERVAL``), sweeping again at once until a sweep finds
   no timeout due; the figure is the time from its first sweep's start to the end of the
   sweep that played the last one. ``--clock real`` starts the real clock instead
   (``flask --app pbem pbem clock``, ``PBEM_CLOCK_INTERVAL=--interval``, its mail loop
   delivering the emails to the memory backend meanwhile); its window is from the first
   timeout's move to the last one's (the times stored with the moves).

It prints the time to play all due timeouts (and the longest write transaction of the
clock process: on SQLite, how long it held the database's write lock at most), the
confirms completed in that window with the p50/p99 latency of their POSTs (and GETs),
and the same for the reference window. The clients confirm at a paced rate (not as fast
as they can), so the latency is that of one player's confirm, not of a queue of them.
At the end it checks that every due decision got exactly one move and that no decision
has two. The machine has 2 cores, shared by the servers, the clock and the clients.

    .venv/bin/python bench/clock_stall.py [--db sqlite|postgresql|both] [--due 1000]
        [--games 1500] [--rate 40] [--clients 4] [--reference 4] [--clock sweep|real]

Figures (2 cores, otherwise quiet; before = ef85a70, after = branch clock19, pairs run
back to back, defaults unless said):

* SQLite, 40 confirms/s: before, the clock played 1,000 in 4.59 / 3.99 s (2 sweeps) while
  confirm POSTs waited p50 104 / 144 ms, p99 2,519 / 2,253 ms, and only 39 / 21 were
  answered in the window (the clients asked for about 170): SQLite's busy handler found
  the write lock free only by luck between the clock's back-to-back transactions. After:
  3.64 / 3.61 s (1 sweep, the clock yields to players), POST p50 17.0 / 15.9 ms, p99
  48.5 / 54.3 ms, 146 / 144 answered (all); reference with no clock p50 7 ms, p99 12-14 ms.
* SQLite, ``--rate 10``: before 4.46 s, POST p99 2,338 ms; after 2.93 s, p99 35 ms.
  With hardly any confirms (``--rate 0.5``) the clock takes 2.00 s (CPU 1.89 s).
* PostgreSQL, 40 confirms/s: before 9.02 s, POST p99 72 ms; after 6.99 s, p99 60.5 ms
  (row locks: players wait only for CPU; the GETs slow down as much).
* ``--clock real`` (the clock process, its mail loop delivering the 4,000 emails
  meanwhile), SQLite, a busy machine: 7.35 s, POST p99 87 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for pbem and tests.pgcluster when run as a script
sys.path.insert(0, str(ROOT / "bench"))

from confirm_throughput import Server, free_port, gunicorn, quantile  # noqa: E402
from sweep_time import BASE_URL, bulk_load, database, make_templates  # noqa: E402

SIG_RE = re.compile(rb'name="sig" value="([0-9a-f]+)"')
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
NO_CAPS = {"CREATE_LIMIT_PER_HOUR": "100000", "NOTICE_LIMIT_PER_ADDRESS": "100000",
           "NOTICE_LIMIT_PER_GAME": "100000", "INVITE_LIMIT_PER_ADDRESS": "100000"}
BIN = Path(sys.executable).parent


# --------------------------------------------------------------------------- building


def build(url: str, args, secret: str) -> list[str]:
    """The games (see the module's docstring); returns the raw action tokens."""
    from sqlalchemy import select, update

    from engine.cavemen.bots import heuristic_bot
    from engine.registry import get_game
    from pbem import create_app
    from pbem.db import get_engine, session_scope
    from pbem.migrate import upgrade
    from pbem.models import Decision, Game, Outbox, utcnow
    from pbem.tokens import mint_many

    upgrade(url)
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": secret, "BASE_URL": BASE_URL,
                      "MAIL_BACKEND": "memory"})
    templates = make_templates(app)
    t0 = utcnow().replace(microsecond=0) - timedelta(minutes=10)
    plan = [[{"timeouts": list(range(args.due)), "reminders": [], "at": t0}]]
    total = args.due + args.games
    bulk = argparse.Namespace(games=total, decisions=total, closed=0, seed=1)
    bulk_load(app, templates, bulk, t0 + timedelta(hours=1), plan)  # steady: hours ahead
    mod = get_game("cavemen")
    rng = random.Random(1)
    with app.app_context(), session_scope() as s:
        games = {g.id: g for g in s.execute(select(Game)).scalars()}
        specs = []
        for d in s.execute(select(Decision).where(Decision.closed_at.is_(None),
                                               Decision.deadline_at > utcnow())
                        .order_by(Decision.id)).scalars():
            state = mod.from_json(json.loads(games[d.game_id].state))
            specs.append({"kind": "action", "game_id": d.game_id, "seat_id": d.seat_id,
                          "decision_id": d.id,
                          "action": heuristic_bot(state, d.position, rng).to_json()})
        raws = mint_many(s, specs)
        s.execute(update(Outbox).where(Outbox.status == "pending")
                  .values(status="sent", sent_at=utcnow()))
    if url.startswith("postgresql"):
        with get_engine(app).connect() as conn:
            conn.exec_driver_sql("ANALYZE")
            conn.commit()
    get_engine(app).dispose()
    random.Random(2).shuffle(raws)
    return raws


# --------------------------------------------------------------------------- clients


class Clients:
    """``n`` threads confirming one token after another at a steady total rate; each
    records (kind, start, end, status) with wall-clock times (comparable with the clock
    process's and the database's)."""

    def __init__(self, port: int, tokens: list[str], n: int, rate: float) -> None:
        self.port, self.n, self.period = port, n, n / rate
        self.tokens = iter(tokens)
        self.lock = threading.Lock()
        self.records: list[tuple[str, float, float, int]] = []
        self.stop = threading.Event()
        self.exhausted = False
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                        for i in range(n)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=120)

    def _next(self) -> str | None:
        with self.lock:
            raw = next(self.tokens, None)
            self.exhausted |= raw is None
            return raw

    def _run(self, i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        slot = time.monotonic() + self.period * i / self.n  # spread the clients' phases
        while not self.stop.is_set():
            time.sleep(max(0.0, slot - time.monotonic()))
            slot = max(slot + self.period, time.monotonic() - self.period)
            raw = self._next()
            if raw is None:
                return
            status, page = self._call(conn, "GET", raw, None)
            sig = SIG_RE.search(page) if status == 200 else None
            if sig is not None:
                self._call(conn, "POST", raw, b"sig=" + sig.group(1))
        conn.close()

    def _call(self, conn, method: str, raw: str, body: bytes | None) -> tuple[int, bytes]:
        t0 = time.time()
        try:
            conn.request(method, f"/a/{raw}", body=body,
                         headers=FORM if body is not None else {})
            resp = conn.getresponse()
            data, status = resp.read(), resp.status
        except (OSError, http.client.HTTPException):
            conn.close()
            data, status = b"", -1
        with self.lock:
            self.records.append((method, t0, time.time(), status))
        return status, data

    def window(self, start: float, end: float, method: str = "POST") -> tuple[list[float], int]:
        """Latencies of the answered requests started in [start, end], and the number of
        failed ones."""
        with self.lock:
            got = [r for r in self.records if r[0] == method and start <= r[1] <= end]
        answered = (200, 303)  # a page, or a move's 303 to its page (Post/Redirect/Get)
        return [t1 - t0 for _, t0, t1, st in got if st in answered], \
            sum(1 for *_, st in got if st not in answered)


def lat(values: list[float]) -> str:
    if not values:
        return "p50      - ms  p99      - ms  max      - ms"
    return (f"p50 {statistics.median(values) * 1000:6.1f} ms  "
            f"p99 {quantile(values, 0.99) * 1000:6.1f} ms  "
            f"max {max(values) * 1000:6.1f} ms")


# --------------------------------------------------------------------------- the clock


def sweeper(url: str, instance: str) -> None:
    """The ``--clock sweep`` process: ready on stdout, waits for a line on stdin, then
    sweeps back to back until a sweep plays no timeout; prints its figures as JSON."""
    from sqlalchemy import event

    from pbem import create_app
    from pbem.clock import sweep
    from pbem.db import get_engine

    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench", "BASE_URL": BASE_URL,
                      "MAIL_BACKEND": "memory"})
    app.instance_path = instance
    engine = get_engine(app)
    holds: list[float] = []
    began: dict[int, float] = {}

    @event.listens_for(engine, "begin")
    def _begin(conn) -> None:  # after pbem's own listener: BEGIN IMMEDIATE has returned
        began[id(conn)] = time.perf_counter()

    def _end(conn) -> None:
        start = began.pop(id(conn), None)
        if start is not None:
            holds.append(time.perf_counter() - start)

    event.listen(engine, "commit", _end)
    event.listen(engine, "rollback", _end)
    from engine.registry import get_game

    get_game("cavemen")  # loaded, as in a clock that has been running
    with engine.connect():
        pass
    print("ready", flush=True)
    sys.stdin.readline()
    holds.clear()
    cpu0, start = time.process_time(), time.time()
    sweeps: list[dict] = []
    while True:
        t0 = time.time()
        counts = sweep(app)
        if not counts["timeouts"]:
            break
        sweeps.append({**counts, "seconds": time.time() - t0, "end": time.time()})
    writes = [h for h in holds if h > 0]
    print(json.dumps({"start": start, "end": sweeps[-1]["end"] if sweeps else start,
                      "sweeps": sweeps, "cpu": time.process_time() - cpu0,
                      "longest": max(writes, default=0.0), "transactions": len(writes),
                      "p99_hold": quantile(writes, 0.99) if writes else 0.0}), flush=True)


def timeout_window(url: str) -> tuple[float, float, int]:
    """First and last timeout move's time (epoch seconds) and their count."""
    from sqlalchemy import create_engine, func, select

    from pbem.models import Move

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            first, last, n = conn.execute(select(func.min(Move.created_at),
                                                 func.max(Move.created_at), func.count())
                                          .where(Move.source == "timeout")).one()
    finally:
        engine.dispose()
    if not n:
        return 0.0, 0.0, 0
    return (as_epoch(first), as_epoch(last), n)


def as_epoch(value) -> float:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def due_left(url: str) -> int:
    from sqlalchemy import create_engine, func, select

    from pbem.models import Decision, utcnow

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(select(func.count()).select_from(Decision).where(
                Decision.closed_at.is_(None), Decision.deadline_at <= utcnow())).scalar()
    finally:
        engine.dispose()


def check(url: str, due: int) -> tuple[str, bool]:
    """Every due decision got exactly one move (a timeout's), no decision two."""
    from sqlalchemy import create_engine, func, select

    from pbem.models import Move

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            doubled = conn.execute(select(Move.decision_id).group_by(Move.decision_id)
                                   .having(func.count() > 1)).all()
            by_source = {str(source): n for source, n in conn.execute(
                select(Move.source, func.count()).group_by(Move.source)).all()}
    finally:
        engine.dispose()
    ok = not doubled and by_source.get("timeout", 0) == due
    return (f"{'OK' if ok else 'FAILED'}: moves by source {by_source}; decisions with "
            f"more than one move: {len(doubled)}"), ok


# --------------------------------------------------------------------------- a run


def run_one(kind: str, url: str, args, tmp: Path) -> dict:
    secret = "bench-" + os.urandom(8).hex()
    t0 = time.monotonic()
    tokens = build(url, args, secret)
    print(f"\n=== {kind} === built in {time.monotonic() - t0:.1f} s: {args.due} games past "
          f"their deadline, {len(tokens)} with a confirm link", flush=True)
    instance = tmp / f"instance-{kind}"
    instance.mkdir()
    port = free_port()
    env = dict(os.environ, PBEM_DATABASE_URL=url, PBEM_SECRET_KEY=secret,
               PBEM_BASE_URL=f"http://127.0.0.1:{port}", PBEM_MAIL_BACKEND="memory",
               PBEM_MAILBOX_DIR=str(tmp / f"mailbox-{kind}"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               **{f"PBEM_{k}": v for k, v in NO_CAPS.items()})
    web = Server("pbem", gunicorn("pbem:create_app()", port, args.workers,
                                  ["--config", "python:pbem.gunicorn_conf"]),
                 env, port, tmp / f"web-{kind}.log")
    processes = [web]
    try:
        web.start()
        web.wait_ready("/healthz")
        clients = Clients(port, tokens, args.clients, args.rate)
        clients.start()
        time.sleep(args.warmup)
        ref_start = time.time()
        time.sleep(args.reference)
        ref_end = time.time()
        if args.clock == "sweep":
            clock = subprocess.Popen(
                [sys.executable, __file__, "--sweeper", url, str(instance)], cwd=ROOT,
                env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            try:
                if clock.stdout.readline().strip() != "ready":
                    raise RuntimeError("the sweeper did not start")
                clock.stdin.write("go\n")
                clock.stdin.flush()
                figures = json.loads(clock.stdout.readline())
                clock.wait(timeout=60)
            finally:
                if clock.poll() is None:
                    clock.kill()
                    clock.wait()
            start, end = figures["start"], figures["end"]
            played = sum(s["timeouts"] for s in figures["sweeps"])
            errors = sum(s["errors"] for s in figures["sweeps"])
            seconds = [s["seconds"] for s in figures["sweeps"]]
            how = (f"by {len(figures['sweeps'])} sweep(s) "
                   f"({', '.join(f'{x:.2f} s' for x in seconds)}); "
                   f"clock CPU {figures['cpu']:.2f} s; {figures['transactions']} write "
                   f"transactions, longest {figures['longest'] * 1000:.1f} ms, p99 "
                   f"{figures['p99_hold'] * 1000:.1f} ms; errors {errors}")
        else:
            clock = Server("clock", [str(BIN / "flask"), "--app", "pbem", "pbem", "clock"],
                           dict(env, PBEM_CLOCK_INTERVAL=str(args.interval)), 0,
                           tmp / f"clock-{kind}.log")
            processes.append(clock)
            clock.start()
            limit = time.monotonic() + args.timeout
            while due_left(url) and time.monotonic() < limit:
                time.sleep(0.05)
            start, end, played = timeout_window(url)
            how = f"real clock (interval {args.interval:g} s, its mail loop delivering)"
        time.sleep(args.tail)
        clients.finish()
    finally:
        for p in processes:
            p.stop()
    seconds = end - start
    during, failed = clients.window(start, end)
    gets, _ = clients.window(start, end, "GET")
    ref, ref_failed = clients.window(ref_start, ref_end)
    ref_gets, _ = clients.window(ref_start, ref_end, "GET")
    verdict, ok = check(url, args.due)
    print(f"clock: {played} due timeouts played in {seconds:.2f} s {how}")
    print(f"  confirms while the clock played them: {len(during):4d} POST  {lat(during)}"
          f"  (failed {failed}) | GET {lat(gets)}")
    print(f"  confirms with no clock (reference):   {len(ref):4d} POST  {lat(ref)}"
          f"  (failed {ref_failed}) | GET {lat(ref_gets)}")
    print(f"  {verdict}")
    if clients.exhausted:
        print("  NOTE: the clients ran out of tokens (raise --games)")
    return {"db": kind, "seconds": seconds, "played": played, "during": during, "ref": ref,
            "ok": ok}


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--sweeper":
        sweeper(sys.argv[2], sys.argv[3])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="sqlite")
    parser.add_argument("--due", type=int, default=1000, help="games past their deadline")
    parser.add_argument("--games", type=int, default=1500,
                        help="games with an open decision and a confirm link")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rate", type=float, default=40.0,
                        help="confirms per second of all clients together")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds before measuring")
    parser.add_argument("--reference", type=float, default=4.0,
                        help="seconds of confirms with no clock")
    parser.add_argument("--tail", type=float, default=0.3,
                        help="seconds the clients go on after the clock is done")
    parser.add_argument("--clock", choices=["sweep", "real"], default="sweep")
    parser.add_argument("--interval", type=float, default=0.5,
                        help="--clock real: PBEM_CLOCK_INTERVAL")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="--clock real: give up after this many seconds")
    args = parser.parse_args()
    kinds = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    print(f"{os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.2f}; "
          f"{args.clients} clients confirming {args.rate:g}/s in all, gunicorn "
          f"{args.workers} sync workers, clock: {args.clock}")
    results = []
    with tempfile.TemporaryDirectory(prefix="pbem-bench-stall-") as tmp_name:
        for kind in kinds:
            work = Path(tmp_name) / kind
            work.mkdir()
            with database(kind, work) as url:
                results.append(run_one(kind, url, args, work))
    print(f"\n=== summary === (load average now {os.getloadavg()[0]:.2f})")
    for r in results:
        print(f"{r['db']:<11} {r['played']} due timeouts in {r['seconds']:.2f} s; confirm "
              f"POST during: {lat(r['during'])}; reference: {lat(r['ref'])}")
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
