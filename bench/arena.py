"""Arena: two bots of one game play seat-swapped games; who wins, by how much, how fast.

Bot A sits in one seat and bot B in all the others; each deal (a seed) is played once
with A in every seat in turn, so no seat's advantage favours either bot (asking for a
number of games that is not a multiple of the player count rounds it up). Prints A's win
rate (a shared win counts as a share) with its 95 % Wilson interval and the fair share
(1/players), the games A won alone, the shared wins, the mean final score of each bot
(Stone Age; Cavemen has no score, so its rounds are shown), the CPU milliseconds each bot
spent per decision (median, p99, mean, from ``time.thread_time`` around each call), and
for Stone Age the civilization cards and buildings each bot bought per game.

Bots are the game's ``BOTS`` by name; ``strong`` is built with ``--budget`` ms of CPU per
decision (default: the server's, ``engine.search.DEFAULT_BUDGET_MS``), or exactly
``--rollouts`` rollouts (reproducible). ``--jobs`` plays the deals in that many processes.
Deterministic for a seed with ``--rollouts`` (deal ``i`` uses seed ``seed + i``; each game's
bots draw from ``random.Random`` of its seed and seat of A).

    .venv/bin/python bench/arena.py --game stoneage --players 2 --bots strong heuristic \\
        --games 400 --jobs 2

Figures (issue 22; 2 cores shared with other jobs; CPU per decision from thread time;
"CI": Wilson 95 %; scores: mean final score; strong at the default 100 ms unless said):
  stoneage 2p strong vs heuristic, 400 games: 85.2 % [81.4, 88.4], scores 286.9 vs 228.4,
    cards/buildings 16.6/5.8 vs 11.9/5.3, strong CPU ms median 100.6, p99 102.1, max 122.9.
  stoneage 3p (one strong, two heuristic), 60 games: 85.0 % [73.9, 91.9] (fair 33.3 %),
    202.3 vs 146.9; 4p, 40 games: 75.0 % [59.8, 85.8] (fair 25 %), 166.6 vs 128.3.
  cavemen 2p, 400 games: 92.5 % [89.5, 94.7], 19.1 rounds a game, strong CPU ms median
    100.2, p99 101.1, max 114.0. Before the deck's scores cache was bounded: 92.2 %
    [89.2, 94.5], max 2685 ms (full garbage collections over millions of cached tableaux);
    3p (then), 60 games: 78.3 % [66.4, 86.9] (fair 33.3 %), median 100.3, p99 101.5 ms.
  Earlier, at 50 ms: stoneage 2p 250 games 86.4 % [81.6, 90.1], 277.0 vs 223.9; cavemen 2p
    260 games 88.1 % [83.6, 91.5]. At 1000 ms, stoneage 2p, 4 games: 4 won, 314.5 vs 225.2.
  stoneage easy vs heuristic: 2p 400 games 60.4 % [55.5, 65.0], 237.1 vs 224.0; 3p 300 games
    48.0 % [42.4, 53.6]; 4p 200 games 45.2 % [38.5, 52.2]. Heuristic mirror 2p: 153.4 points,
    3.1 cards, 5.9 buildings a player; easy mirror: 222.2, 17.1 cards, 3.3 buildings.
"""

from __future__ import annotations

import argparse
import importlib
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from engine.core import Bot, Game
from engine.registry import get_game
from engine.search import DEFAULT_BUDGET_MS

ROUND_CAP = 300


@dataclass
class Outcome:
    """One game from A's side."""

    seat: int  # A's seat
    share: float  # A's share of the win: 1 alone, 1/k shared among k, 0 lost
    shared: bool
    finished: bool
    rounds: int
    points: list[float] | None  # final scores by seat
    cards: list[int] | None = None  # Stone Age: civilization cards held, by seat
    buildings: list[int] | None = None
    ms: dict[str, list[float]] = field(default_factory=dict)  # CPU ms per decision, A/B


def make_bot(game: str, name: str, budget: float | None, rollouts: int | None,
             options: dict[str, Any] | None = None) -> Bot:
    """The bot ``name`` of ``game``; ``strong`` with the given budget and ``options``."""
    if name == "strong":
        bots = importlib.import_module(f"engine.{game}.bots")
        factory: Callable[..., Bot] = bots.make_strong
        return factory(budget_ms=budget, rollouts=rollouts, **(options or {}))
    return get_game(game).BOTS[name]


Task = tuple[str, int, str, str, float | None, int | None, int, int, dict[str, Any]]


def play(args: Task) -> Outcome:
    """One game: deal ``seed``, A in ``seat``, B elsewhere."""
    name, players, bot_a, bot_b, budget, rollouts, seed, seat_a, options = args
    game = get_game(name)
    a = make_bot(name, bot_a, budget, rollouts, options)
    b = make_bot(name, bot_b, budget, rollouts, options)
    rng = random.Random(seed * 10 + seat_a)
    state = game.setup([f"P{i + 1}" for i in range(players)], seed)
    ms: dict[str, list[float]] = {"A": [], "B": []}
    while game.result(state) is None and state.round <= ROUND_CAP:
        seat = game.pending(state)[0].seat
        who = "A" if seat == seat_a else "B"
        t0 = time.thread_time()
        action = (a if who == "A" else b)(state, seat, rng)
        ms[who].append((time.thread_time() - t0) * 1000)
        state, _ = game.apply(state, seat, action)
    return _outcome(game, state, seat_a, ms)


def _outcome(game: Game, state: Any, seat_a: int, ms: dict[str, list[float]]) -> Outcome:
    res = game.result(state)
    winners = tuple(res.winners) if res is not None else ()
    share = 1 / len(winners) if seat_a in winners else 0.0
    points = game.stats.summary(state, [])["points"]
    out = Outcome(seat_a, share, len(winners) > 1 and seat_a in winners, res is not None,
                  state.round, None if points is None else [float(p) for p in points], ms=ms)
    if game.NAME == "stoneage":
        out.cards = [len(b.cards) for b in state.boards]
        out.buildings = [len(b.buildings) for b in state.boards]
    return out


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(math.ceil(pct / 100 * len(ordered))) - 1)]


def report(opts: argparse.Namespace, outcomes: list[Outcome], elapsed: float) -> list[str]:
    n, players = len(outcomes), opts.players
    a, b = opts.bots
    wins = sum(o.share for o in outcomes)
    low, high = wilson(wins, n)
    alone = sum(1 for o in outcomes if o.share == 1)
    budget = f"{opts.rollouts} rollouts" if opts.rollouts else f"{opts.budget:g} ms"
    lines = [
        f"arena {opts.game} {players}p: A={a} vs B={b} (x{players - 1}), {n} games, "
        f"budget {budget}, seed {opts.seed}, {elapsed:.0f} s"
        + (f", options {' '.join(opts.option)}" if opts.option else ""),
        f"A win rate {wins / n:.1%}  95% CI [{low:.1%}, {high:.1%}]  "
        f"(fair share {1 / players:.1%}; won alone {alone}, "
        f"shared wins {sum(o.shared for o in outcomes)}, "
        f"unfinished {sum(not o.finished for o in outcomes)})",
    ]
    scored = [o for o in outcomes if o.points is not None]
    if scored:
        mine = [o.points[o.seat] for o in scored if o.points]
        theirs = [p for o in scored if o.points for s, p in enumerate(o.points) if s != o.seat]
        lines.append(f"mean score: A {statistics.fmean(mine):.1f} "
                     f"(sd {statistics.pstdev(mine):.1f}), B {statistics.fmean(theirs):.1f} "
                     f"(sd {statistics.pstdev(theirs):.1f})")
    lines.append(f"rounds per game: mean {statistics.fmean(o.rounds for o in outcomes):.1f}")
    if outcomes[0].cards is not None:
        for who, pick in (("A", lambda o, s: s == o.seat), ("B", lambda o, s: s != o.seat)):
            cards = [c for o in outcomes for s, c in enumerate(o.cards or []) if pick(o, s)]
            tiles = [t for o in outcomes for s, t in enumerate(o.buildings or []) if pick(o, s)]
            lines.append(f"bought per game: {who} cards {statistics.fmean(cards):.1f}, "
                         f"buildings {statistics.fmean(tiles):.1f}")
    for who, name in (("A", a), ("B", b)):
        ms = [m for o in outcomes for m in o.ms[who]]
        lines.append(f"CPU ms per decision {who} ({name}): median {percentile(ms, 50):.2f}, "
                     f"p99 {percentile(ms, 99):.1f}, mean {statistics.fmean(ms):.2f}, "
                     f"max {max(ms):.1f} ({len(ms)} decisions)")
    return lines


class _Inline:
    """``map`` in this process (``--jobs 1``), as a context manager like a pool."""

    def __enter__(self) -> _Inline:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn: Callable[[Task], Outcome], tasks: list[Task]) -> Iterator[Outcome]:
        return map(fn, tasks)


def _number(text: str) -> float | int | None:
    if text.lower() == "none":
        return None
    return float(text) if "." in text else int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="stoneage", choices=["stoneage", "cavemen"])
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--bots", nargs=2, default=["strong", "heuristic"],
                        metavar=("A", "B"))
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET_MS,
                        help="CPU ms per decision for the strong bot (default: the game's default)")
    parser.add_argument("--rollouts", type=int, default=None,
                        help="a fixed number of rollouts per decision instead of --budget")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--progress", type=int, default=0, metavar="N",
                        help="print the figures so far to stderr every N games")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                        help="an option of the strong bot (horizon, guard; 'none' for None)")
    opts = parser.parse_args()
    options = {k: _number(v) for k, v in (o.split("=", 1) for o in opts.option)}
    deals = math.ceil(opts.games / opts.players)
    tasks = [(opts.game, opts.players, opts.bots[0], opts.bots[1], opts.budget, opts.rollouts,
              opts.seed + i, seat, options)
             for i in range(deals) for seat in range(opts.players)]
    start = time.perf_counter()
    outcomes: list[Outcome] = []
    with ProcessPoolExecutor(opts.jobs) if opts.jobs > 1 else _Inline() as pool:
        for outcome in pool.map(play, tasks):
            outcomes.append(outcome)
            if opts.progress and len(outcomes) % opts.progress == 0:
                print(f"after {len(outcomes)} games:", file=sys.stderr)
                print("\n".join(report(opts, outcomes, time.perf_counter() - start)),
                      file=sys.stderr, flush=True)
    print("\n".join(report(opts, outcomes, time.perf_counter() - start)))


if __name__ == "__main__":
    main()
