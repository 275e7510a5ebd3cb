"""Seat view: what reading one seat's view costs, and the game page's data built from it
against the same data as it read the rows before the view (issue 34, point 1).

Builds one game per game on a temporary SQLite database (migrated, memory mail) through
the services, and plays it to its end with the heuristic bot for every seat, each move
through the same service code as a player's click. Before each move, for the seat
whose decision is open, it times (``time.perf_counter``, the median of ``--reps``), in
one read-only transaction:

* ``rows``: the game page's data as it was read before the view
  (``tests.server.test_page_from_view.rows_page_data``, without the log),
* ``page``: the game page's data now (``reading._page_data``, without the log: the view
  without the effects, which the page asks for as it shows them),
* ``view``: the seat's whole view with every legal action's effect and the latest
  ``EVENTS`` events (``services.read_seat_view``: what an email or the API reads),

and prints for each the median and the largest over the game's decisions, and the
decision with the most legal actions. Templates are not rendered (``bench/page_time.py``
times whole pages). The machine is shared and noisy: compare within one run.

    .venv/bin/python bench/seat_view.py [--players 4] [--seed 3] [--reps 3]

Figures on this machine (2 cores shared with other work, load about 7), seed 3, 4
players, median / largest over the game's decisions:

    cavemen (228 decisions, at most 56 legal actions): rows 0.33 / 0.54 ms,
        page 0.51 / 0.94 ms, view 0.75 / 6.65 ms
    stoneage (258 decisions, at most 125 legal actions): rows 0.32 / 0.61 ms,
        page 0.62 / 3.41 ms, view 0.81 / 2.53 ms

The page's data costs about 0.2-0.3 ms more than before (a whole page takes 4-10 ms):
checking the engine's view is JSON (``as_json``, about 0.08 ms) and turning the legal
actions into JSON and notation and back into Actions for the templates (about 0.1 ms
for 20). The view with every effect costs most where a decision has many ways (a
discard, an order): ``choice_effect`` over 726 Stone Age orders takes about 28 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlmodel import select  # noqa: E402

from engine.registry import get_game  # noqa: E402
from pbem import create_app, services  # noqa: E402
from pbem.db import get_engine, read_scope, session_scope  # noqa: E402
from pbem.migrate import upgrade  # noqa: E402
from pbem.models import Decision, Game, Seat  # noqa: E402
from pbem.services import reading  # noqa: E402
from pbem.services.playing import act, locked_decision  # noqa: E402
from tests.server.test_page_from_view import rows_page_data  # noqa: E402

EVENTS = 30  # the view's events: the latest 30 (an email's since the reader's last one)
ZONES = ["Europe/Berlin", "America/New_York", "Asia/Tokyo", "UTC", "Australia/Sydney"]


def median_ms(reps: int, call: Callable[..., object], *args: object) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        call(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def measure(game_name: str, players: int, seed: int, reps: int) -> None:
    people = [services.PlayerIn(f"Player {i}", f"p{i}@bench.invalid", ("en", "de")[i % 2],
                                ZONES[i % len(ZONES)]) for i in range(players)]
    created = services.create_game(game_name, people, seed=seed,
                                   confirm_by_email=False, start=True)
    rng = random.Random(seed)
    figures: dict[str, list[float]] = {"rows": [], "page": [], "view": []}
    most = (0, "")
    while True:
        with read_scope() as s:
            decision = s.exec(select(Decision).where(Decision.game_id == created.game_id,
                                                     Decision.closed_at.is_(None))
                              .order_by(Decision.id)).first()
            if decision is None:
                break
            game = s.get(Game, created.game_id)
            seat = s.get(Seat, decision.seat_id)
            figures["rows"].append(median_ms(reps, rows_page_data, s, game, seat, False))
            figures["page"].append(median_ms(reps, reading._page_data, s, game, seat, False))
            since = max(0, game.event_seq - EVENTS)
            seen = services.read_seat_view(s, game, seat, since)
            figures["view"].append(median_ms(reps, services.read_seat_view, s, game, seat,
                                             since))
            if seen.mine is not None and len(seen.mine.legal) > most[0]:
                most = (len(seen.mine.legal), decision.kind)
        with session_scope() as s:
            game, seat, dec = locked_decision(s, created.game_id, decision.seat_id,
                                               decision.id)
            mod = get_game(game.engine)
            state = mod.from_json(json.loads(game.state))
            act(s, game, seat, dec, mod.BOTS["heuristic"](state, seat.position, rng),
                "player", state)
    count = len(figures["rows"])
    print(f"{game_name}: {count} decisions, at most {most[0]} legal actions ({most[1]})")
    for name, values in figures.items():
        print(f"  {name:5} median {statistics.median(values):6.2f} ms   "
              f"largest {max(values):6.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{os.path.join(folder, 'bench.sqlite3')}"
        upgrade(url)
        app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench",
                          "BASE_URL": "http://bench.invalid", "MAIL_BACKEND": "memory",
                          "MAIL_FROM": "pbem <games@bench.invalid>", "MAILBOX_DIR": folder,
                          "NOTICE_LIMIT_PER_ADDRESS": 10**6,
                          "NOTICE_LIMIT_PER_GAME": 10**6})
        with app.app_context(), app.test_request_context("/"):
            for name in ("cavemen", "stoneage"):
                measure(name, args.players, args.seed, args.reps)
        get_engine(app).dispose()


if __name__ == "__main__":
    main()
