"""Health and metrics: what ``/healthz``, ``/healthz?deep=1`` and ``/metrics`` cost on a
database with a server's history, and what the clock's heartbeat costs a sweep.

Builds a database at the migrations' head holding ``--emails`` outbox rows (default
100,000: mostly sent, some undeliverable by a bounce, a few pending and due, a few failed
in the last hour), ``--moves`` moves (each with its closed decision; default 100,000, in
one game: the counts do not care which game) and ``--replies`` inbound messages (default
10,000, by outcome), plus a clock heartbeat; then asks each URL ``--repeats`` times
through the Flask test client (no HTTP: the figure is the app's and the database's) and
prints the median and the 95th percentile in ms, and times ``pbem.health.beat`` (the
clock's one extra write per sweep: an upsert in a transaction of its own).

SQLite is a temporary file; PostgreSQL a throwaway cluster (``tests/pgcluster.py``) on a
free loopback port, analysed after the load.

    .venv/bin/python bench/health_bench.py                 # both databases
    .venv/bin/python bench/health_bench.py --db sqlite --emails 1000000

Figures (issue 33 point 4, 2 cores shared with three other jobs, defaults: 100,000
emails, 100,000 moves, 10,000 replies, 30 requests each; median / p95 in ms):

  SQLite      /healthz 0.25 / 6.6, ?deep=1 1.05 / 9.3, /metrics 38.2 / 51.7,
              heartbeat write 0.27 / 4.3
  PostgreSQL  /healthz 0.32 / 0.75, ?deep=1 1.81 / 6.2, /metrics 55.4 / 64.0,
              heartbeat write 0.43 / 3.7

The deep check reads the outbox through its ``(status, next_attempt_at)`` index and the
failures through ``failed_at``'s, so it does not grow with the sent mail; /metrics counts
whole tables (moves, emails and replies by kind), so it grows with them: about 0.4 ms per
thousand rows, fine for a scrape every 15 s or more.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for pbem and tests.pgcluster when run as a script

CHUNK = 5000


def load(url: str, args) -> object:
    from sqlalchemy import insert, text

    from pbem import create_app
    from pbem.db import get_engine
    from pbem.kinds import Inbound, OutboxStatus, Process
    from pbem.migrate import upgrade
    from pbem.models import (
        Decision,
        Game,
        Heartbeat,
        InboundMessage,
        Move,
        Outbox,
        Seat,
        table_of,
        utcnow,
    )

    upgrade(url)
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "x" * 40, "MAIL_BACKEND": "memory",
                      "MAIL_FROM": "games@example.org", "METRICS": True})
    now = utcnow()
    engine = get_engine(app)
    with engine.begin() as conn:
        conn.execute(insert(table_of(Game)).values(
            id="g1", engine="cavemen", options={}, seed=1, version=0, status="active",
            policy={"hours_per_decision": 48}, idle_rounds=0, created_at=now, event_seq=0,
            page_version=0, spectator_key="k"))
        conn.execute(insert(table_of(Seat)).values(
            id=1, game_id="g1", position=0, name="Ann", email="ann@example.com",
            language="en", timezone="UTC", is_host=True, invite="accepted", robot=False,
            seen_event_seq=0, timeouts_in_row=0, vacation_used_hours=0, mute_notices=False,
            talk_now=False))
        for start in range(0, args.moves, CHUNK):
            ids = range(start + 1, min(args.moves, start + CHUNK) + 1)
            conn.execute(insert(table_of(Decision)), [
                {"id": i, "game_id": "g1", "seat_id": 1, "position": 0, "seq": i,
                 "kind": "bid", "opened_at": now, "closed_at": now, "closed_by": "player",
                 "reminders_sent": 0} for i in ids])
            conn.execute(insert(table_of(Move)), [
                {"game_id": "g1", "decision_id": i, "position": 0, "action": {"kind": "pass"},
                 "source": ("player", "bot", "timeout")[i % 3], "created_at": now}
                for i in ids])
        for start in range(0, args.emails, CHUNK):
            rows = []
            for i in range(start, min(args.emails, start + CHUNK)):
                status, error, failed = OutboxStatus.SENT.value, None, None
                if i % 100 == 1:
                    status, error = OutboxStatus.UNDELIVERABLE.value, "bounced: 5.1.1 no"
                    failed = now - timedelta(days=2)
                elif i % 1000 == 2:
                    status = OutboxStatus.PENDING.value
                elif i % 1000 == 3:
                    status, error = OutboxStatus.PENDING.value, "connection refused"
                    failed = now - timedelta(minutes=10)
                rows.append({"to_addr": "ann@example.com", "rcpt": "ann@example.com",
                             "to_name": "Ann", "language": "en", "template": "turn",
                             "context": {}, "idempotency_key": f"k{i}", "status": status,
                             "attempts": 1, "next_attempt_at": now - timedelta(seconds=30),
                             "last_error": error, "message_id": f"<{i}@x>",
                             "created_at": now - timedelta(days=1), "failed_at": failed})
            conn.execute(insert(table_of(Outbox)), rows)
        outcomes = [o.value for o in Inbound]
        for start in range(0, args.replies, CHUNK):
            conn.execute(insert(table_of(InboundMessage)), [
                {"key": f"{i:064d}", "received_at": now, "outcome": outcomes[i % len(outcomes)],
                 "answered": False, "lines": 0, "played": 0}
                for i in range(start, min(args.replies, start + CHUNK))])
        conn.execute(insert(table_of(Heartbeat)).values(
            process="clock:bench:1", kind=Process.CLOCK.value, started_at=now, beat_at=now,
            swept_at=now, sweep_seconds=0.01, sweeps=1, messages=0))
        if engine.dialect.name == "postgresql":
            conn.execute(text("ANALYZE"))
    return app


def timed(fn, repeats: int) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


def run(name: str, url: str, args) -> None:
    from pbem import health
    from pbem.kinds import Process

    started = time.perf_counter()
    app = load(url, args)
    print(f"{name}: loaded {args.emails:,} emails, {args.moves:,} moves, "
          f"{args.replies:,} replies in {time.perf_counter() - started:.1f} s")
    client = app.test_client()
    for path in ("/healthz", "/healthz?deep=1", "/metrics"):
        status = client.get(path).status_code
        median, p95 = timed(lambda p=path: client.get(p), args.repeats)
        print(f"  {path:<16} {status}  median {median:7.2f} ms   p95 {p95:7.2f} ms")
    with app.app_context():
        median, p95 = timed(lambda: health.beat(Process.CLOCK, swept=0.01), args.repeats)
    print(f"  {'heartbeat write':<16}      median {median:7.2f} ms   p95 {p95:7.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--emails", type=int, default=100_000)
    parser.add_argument("--moves", type=int, default=100_000)
    parser.add_argument("--replies", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        if args.db in ("sqlite", "both"):
            run("SQLite", f"sqlite:///{Path(folder) / 'health.sqlite3'}", args)
        if args.db in ("postgresql", "both"):
            from tests.pgcluster import PostgresCluster

            cluster = PostgresCluster()
            cluster.start()
            try:
                run("PostgreSQL", cluster.url(cluster.create_database()), args)
            finally:
                cluster.stop()


if __name__ == "__main__":
    main()
