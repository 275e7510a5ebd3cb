"""My-games timing: does ``POST /my`` take longer for an address that plays here?

An outside audit timed the form that asks for a link to one's games: 6.0 ms for an
address that plays here against 3.2 ms for one that does not, in every one of 169 pairs,
so the form told anyone whether an address plays here. Since then the request only
queues a request row (the same statements for any address) and the clock's mail loop
looks the address up (``pbem.services.my_games``); this bench measures what is left.

It fills a database with ``--games`` started Cavemen games (3 players each), the known
address playing in ``--known-games`` of them, then times ``--pairs`` pairs of requests
through the Flask test client (in-process, no sockets): one for the known address, one
for an address that plays nowhere, in alternating order. It prints, per database, the
median and 90th percentile of each and the ratio of the medians, and how many pairs had
the known address slower (about half, when the two cannot be told apart). The mail loop
does not run while timing (the outbox only grows by the requests' rows); the caps are
lifted so that every request does its full work.

SQLite is a temporary file (WAL, as pbem configures it); PostgreSQL a throwaway cluster
(tests/pgcluster.py) started and removed by this script.

    .venv/bin/python bench/my_timing.py [--db sqlite|postgresql|both] [--pairs 400]

Figures (2 shared cores, load below 1, ``--pairs 400``, 200 games, the known address in
5), median per request, known / unknown address:

    before (commit e416c47)  SQLite  6.12 / 1.27 ms (4.80x), known slower in 400 of 400 pairs
                             PostgreSQL 12.74 / 2.01 ms (6.32x), 400 of 400
    after                    SQLite  1.64 / 1.64 ms (1.00x), known slower in 203 of 400
                             PostgreSQL  3.19 / 3.16 ms (1.01x), 216 of 400

To time older code, copy this file into a checkout of it and run it there (the script
puts its own checkout first on ``sys.path``).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.pgcluster

from pbem import create_app, services  # noqa: E402
from pbem.migrate import upgrade  # noqa: E402

KNOWN, UNKNOWN = "known@bench.example", "nobody@bench.example"
NO_CAPS = {"CREATE_LIMIT_PER_HOUR": 10**9, "NOTICE_LIMIT_PER_ADDRESS": 10**9,
           "NOTICE_LIMIT_PER_GAME": 10**9, "INVITE_LIMIT_PER_ADDRESS": 10**9,
           "MY_GAMES_LIMIT_PER_ADDRESS": 10**9}
CSRF_RE = re.compile(r'name="csrf" value="([^"]+)"')


@contextlib.contextmanager
def database(kind: str, tmp: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp / 'bench.sqlite3'}"
        return
    from tests.pgcluster import PostgresCluster

    cluster = PostgresCluster()
    cluster.start()
    try:
        yield cluster.url("postgres")
    finally:
        cluster.stop()


def fill(app, games: int, known_games: int) -> None:
    """``games`` started games of three players; the known address plays in the first
    ``known_games``."""
    with app.app_context():
        for n in range(games):
            first = KNOWN if n < known_games else f"p{n}a@bench.example"
            players = [services.PlayerIn(f"P{n}{c}", addr, "en", "UTC") for c, addr in
                       (("a", first), ("b", f"p{n}b@bench.example"),
                        ("c", f"p{n}c@bench.example"))]
            services.create_game("cavemen", players, seed=n, confirm_by_email=False,
                                 start=True)


def ask(client, csrf: str, address: str) -> float:
    start = time.perf_counter()
    resp = client.post("/my", data={"csrf": csrf, "email": address}, follow_redirects=True)
    elapsed = time.perf_counter() - start
    assert resp.status_code == 200, resp.status_code
    return elapsed * 1000


def run(kind: str, pairs: int, games: int, known_games: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, database(kind, Path(tmp)) as url:
        upgrade(url)
        app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench", "MAIL_BACKEND": "memory",
                          "MAIL_FROM": "pbem <games@bench.example>", "BASE_URL":
                          "http://bench.example", "MAILBOX_DIR": tmp, **NO_CAPS})
        app.instance_path = tmp
        fill(app, games, known_games)
        client = app.test_client()
        csrf = CSRF_RE.search(client.get("/my").get_data(as_text=True)).group(1)
        for _ in range(20):  # warm up: connections, statement caches, templates
            ask(client, csrf, KNOWN)
            ask(client, csrf, UNKNOWN)
        known, unknown = [], []
        for n in range(pairs):
            order = (KNOWN, UNKNOWN) if n % 2 == 0 else (UNKNOWN, KNOWN)
            times = {addr: ask(client, csrf, addr) for addr in order}
            known.append(times[KNOWN])
            unknown.append(times[UNKNOWN])
        report(kind, known, unknown)


def report(kind: str, known: list[float], unknown: list[float]) -> None:
    def line(name: str, ms: list[float]) -> str:
        p90 = statistics.quantiles(ms, n=10)[-1]
        return f"  {name:<22} median {statistics.median(ms):6.2f} ms   p90 {p90:6.2f} ms"

    slower = sum(k > u for k, u in zip(known, unknown, strict=True))
    print(f"{kind}: {len(known)} pairs")
    print(line("plays here", known))
    print(line("plays nowhere", unknown))
    print(f"  ratio of the medians   {statistics.median(known) / statistics.median(unknown):.2f}"
          f"   known slower in {slower} of {len(known)} pairs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--db", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--known-games", type=int, default=5)
    args = parser.parse_args()
    for kind in ("sqlite", "postgresql") if args.db == "both" else (args.db,):
        run(kind, args.pairs, args.games, args.known_games)


if __name__ == "__main__":
    main()
