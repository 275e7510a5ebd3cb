"""Page time: the game page at the end of a long game, its render time and size.

Builds one game on a temporary SQLite database (migrated with ``pbem.migrate.upgrade``,
memory mail backend) through the services, ``create_game(..., start=True)``, and plays it
to its end with the game's heuristic bot for every seat, each move through the same
service code as a player's click (``services.playing.locked_decision`` / ``act``); the
emails are queued, never rendered. Then, through the Flask test client (the whole
request: routing, the service's reads, the template, the response), it requests
``--reps`` times (default 40, after 3 untimed) each of:

* the seat's game page (``GET /g/<token>``, a page token of seat 0),
* the spectators' page (``GET /watch/<key>``),
* where the server offers them, the oldest round of the log as the game page's script
  fetches it (``GET /g/<token>/log/1?part=1``) and as a page of its own without scripts
  (``GET /g/<token>/log/1``),

and prints for each the size of the HTML and of its log (the element ``id="log"``), the
median and the largest wall time (``time.perf_counter``), the
median CPU time of this thread (``time.thread_time``: less disturbed by other processes on
a shared machine). The machine is shared and noisy: quote the
medians, compare ratios within one run.

Then the game page and the spectators' page are asked again ``--cheap-reps`` times
(default 2000) with the ``If-None-Match`` of their ``ETag``, as a page left open asks
whether anything changed: each is answered ``304 Not Modified`` from one indexed read
(``pbem.web.fresh``). The health check (``GET /healthz``, no database) is timed alike:
the floor of any request through Flask, a yardstick that a loaded machine moves as much
as the 304s. These rows add ``app CPU ms``, the app's own WSGI call without the test
client's work (building the environ, wrapping the response), a good part of such a small
request through the test client.

Figures on this machine (2 shared cores, load below 1), the seat's game page at the end:

    cavemen 5 players, seed 3 (681 log entries): before (commit 4bd01d5, the whole log)
        35 ms, log 31.9 KiB; after (the last two rounds open, older ones folded and
        loaded when opened) 11 ms, log 14.0 KiB (the page 38 KiB both times: the board
        grew in between); a folded round: 2.4 ms
    stoneage 4 players, seed 3 (527 entries): 27 ms, log 22.6 KiB before; 9 ms after

    issue 19, before (bc2fa5e) -> a4780b9 (the log's entries and round headings written
    with the language and clock read once, its rows and the open decisions as plain rows,
    an index on events by kind), CPU medians: cavemen 10.1 -> 4.2 ms, stoneage 13.2 ->
    4.8 ms; a folded round 3.6 -> 1.9 ms

Asked again unchanged (branch etag19 on commit 1c8c6d8, load 2), CPU through the test
client / the app alone: the game page 0.42 / 0.26 ms against 7.1 ms for the page
(cavemen; stoneage 0.43 / 0.26 ms), the spectators' page 0.40 / 0.28 ms; the health
check, the floor of any request, 0.17 / 0.08 ms. Runs at load 4-5 read up to 0.52 /
0.36 ms: compare within one run.

    .venv/bin/python bench/page_time.py
    .venv/bin/python bench/page_time.py --game stoneage --players 4 --reps 20
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sqlmodel import select
from werkzeug.test import EnvironBuilder

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.registry import games, get_game
from pbem import create_app, services
from pbem.db import get_engine, session_scope
from pbem.migrate import upgrade
from pbem.models import Decision, EventLog, Game, Seat
from pbem.services.playing import act, locked_decision
from pbem.tokens import mint

ZONES = ("Europe/Berlin", "America/New_York", "Asia/Tokyo", "UTC", "Australia/Sydney")


def play_to_end(game_name: str, players: int, seed: int) -> tuple[str, int]:
    """A game played to its end by bots, as clicks; its id and the moves played."""
    people = [services.PlayerIn(f"Player {i}", f"p{i}@bench.invalid", ("en", "de")[i % 2],
                                ZONES[i % len(ZONES)]) for i in range(players)]
    created = services.create_game(game_name, people, seed=seed,
                                   confirm_by_email=False, start=True)
    rng, moves = random.Random(seed), 0
    while True:
        with session_scope() as s:
            decision = s.exec(select(Decision).where(Decision.game_id == created.game_id,
                                                     Decision.closed_at.is_(None))
                              .order_by(Decision.id)).first()
            if decision is None:
                return created.game_id, moves
            game, seat, dec = locked_decision(s, created.game_id, decision.seat_id,
                                               decision.id)
            mod = get_game(game.engine)
            state = mod.from_json(json.loads(game.state))
            act(s, game, seat, dec, mod.BOTS["heuristic"](state, seat.position, rng),
                 "player", state)
            moves += 1


LOG = re.compile(rb'<(\w+)[^>]*\bid="log"[^>]*>.*?</\1>', re.S)


def timed_get(client, url: str, reps: int, headers: dict | None = None) -> dict:
    walls, cpus, size, status, log = [], [], 0, 0, 0
    for i in range(reps + 3):
        w, c = time.perf_counter(), time.thread_time()
        resp = client.get(url, headers=headers)
        body = resp.get_data()
        c, w = time.thread_time() - c, time.perf_counter() - w
        status, size = resp.status_code, len(body)
        found = LOG.search(body)
        log = len(found.group(0)) if found else 0
        if i >= 3:
            walls.append(w)
            cpus.append(c)
    return {"status": status, "size": size, "log": log, "wall": statistics.median(walls),
            "max": max(walls), "cpu": statistics.median(cpus)}


def profile(client, url: str, reps: int = 20) -> None:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(reps):
        client.get(url).get_data()
    prof.disable()
    stats = pstats.Stats(prof).strip_dirs()
    print(f"\nprofile of {reps} game pages, by own time:")
    stats.sort_stats("tottime").print_stats(25)
    print("by total time:")
    stats.sort_stats("cumulative").print_stats(40)


def timed_wsgi(app, url: str, reps: int, headers: dict, status: int) -> float:
    """The median CPU time of the app alone answering ``url`` with ``status`` (its WSGI
    call, with the environ built once: none of the test client's own work)."""
    environ = EnvironBuilder(path=url, headers=headers).get_environ()
    cpus, statuses = [], []
    for i in range(reps + 3):
        c = time.thread_time()
        b"".join(app.wsgi_app(dict(environ), lambda status, _headers, _exc=None:
                              statuses.append(status)))
        c = time.thread_time() - c
        if i >= 3:
            cpus.append(c)
    assert {int(s.split()[0]) for s in statuses} == {status}, set(statuses)
    return statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", choices=sorted(games()), default="cavemen")
    parser.add_argument("--players", type=int, default=5)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--profile", action="store_true",
                        help="request the seat's game page 20 more times under cProfile "
                             "(untimed) and print the top entries by own and total time")
    parser.add_argument("--cheap-reps", type=int, default=2000,
                        help="requests of each page answered 304")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.2f} "
          "(other processes on this machine make figures vary)")
    with tempfile.TemporaryDirectory(prefix="pbem-bench-page-") as tmp:
        url = f"sqlite:///{tmp}/bench.sqlite3"
        upgrade(url)
        app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench",
                          "BASE_URL": "http://bench.invalid", "MAIL_BACKEND": "memory",
                          "MAIL_FROM": "pbem <games@bench.invalid>", "MAILBOX_DIR": tmp,
                          "FOLLOW_UP_MINUTES": 0, "TAKEBACK_GRACE_SECONDS": 0,
                          "NOTICE_LIMIT_PER_ADDRESS": 10**6,
                          "NOTICE_LIMIT_PER_GAME": 10**6})
        app.instance_path = tmp
        start = time.perf_counter()
        with app.app_context():
            game_id, moves = play_to_end(args.game, args.players, args.seed)
            with session_scope() as s:
                game = s.get(Game, game_id)
                entries = len(s.exec(select(EventLog.id).where(EventLog.game_id == game_id))
                              .all())
                seat0 = s.exec(select(Seat).where(Seat.game_id == game_id,
                                                  Seat.position == 0)).one()
                raw = mint(s, "page", game_id, seat0.id)
                status, key = game.status, game.spectator_key
        print(f"{args.game}, {args.players} players, seed {args.seed}: {moves} moves, "
              f"{entries} log entries, game {status}, built in "
              f"{time.perf_counter() - start:.0f} s")
        pages = {"game page (seat 0)": f"/g/{raw}", "spectators' page": f"/watch/{key}"}
        if "play.game_log_round" in app.view_functions:
            pages["oldest round, fragment"] = f"/g/{raw}/log/1?part=1"
            pages["oldest round, own page"] = f"/g/{raw}/log/1"
        client = app.test_client()
        print(f"\n{'request':<26}{'status':>7}{'KiB':>7}{'log KiB':>9}{'median ms':>11}"
              f"{'max ms':>9}{'CPU ms':>9}   ({args.reps} requests each)")
        for name, path in pages.items():
            r = timed_get(client, path, args.reps)
            print(f"{name:<26}{r['status']:>7}{r['size'] / 1024:>7.1f}{r['log'] / 1024:>9.1f}"
                  f"{r['wall'] * 1000:>11.1f}{r['max'] * 1000:>9.1f}{r['cpu'] * 1000:>9.1f}")
        print(f"\n{'asked again, unchanged':<26}{'status':>7}{'median ms':>11}{'max ms':>9}"
              f"{'CPU ms':>9}{'app CPU ms':>12}   ({args.cheap_reps} requests each, "
              "If-None-Match)")
        cheap = [(f"{name}, 304", path, {"If-None-Match": client.get(path).headers["ETag"]})
                 for name, path in list(pages.items())[:2]]
        for name, path, headers in [*cheap, ("health check (floor)", "/healthz", {})]:
            r = timed_get(client, path, args.cheap_reps, headers)
            app_cpu = timed_wsgi(app, path, args.cheap_reps, headers, r["status"])
            print(f"{name:<26}{r['status']:>7}{r['wall'] * 1000:>11.3f}"
                  f"{r['max'] * 1000:>9.3f}{r['cpu'] * 1000:>9.3f}{app_cpu * 1000:>12.3f}")
        if args.profile:
            profile(client, pages["game page (seat 0)"])
        get_engine(app).dispose()
    print(f"(load average now {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
