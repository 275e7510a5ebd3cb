"""Self-play simulation: bots play whole games through the engine contract only.

Used by ``python -m engine simulate`` and by the tests and benchmarks. Games that reach
the round cap are reported as unfinished, never dropped.
"""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from engine.core import Game, get_game

TAKE_EVENTS = {"caveman_recruited": "recruited", "cave_explored": "explored",
               "invention_made": "invented", "beast_hunted": "hunted",
               "fire_invented": "invented"}


@dataclass
class GameRecord:
    seed: int
    players: int
    rounds: int
    decisions: int
    winner: int | None
    finished: bool
    how: str
    taken: Counter = field(default_factory=Counter)


def play_game(game: Game, players: int, seed: int, bot: str, round_cap: int = 200,
              options: dict[str, Any] | None = None) -> GameRecord:
    """Play one game with the same bot in every seat."""
    from engine.cavemen.bots import BOTS  # the only game with bots so far

    choose = BOTS[bot]
    rng = random.Random(seed)
    state = game.setup([f"Player {i + 1}" for i in range(players)], seed, options)
    decisions = 0
    taken: Counter = Counter()
    conch_how = "kept"
    while game.result(state) is None and state.round <= round_cap:
        decision = game.pending(state)[0]
        action = choose(state, decision.seat, rng)
        state, events = game.apply(state, decision.seat, action)
        decisions += 1
        for ev in events:
            if ev.kind in TAKE_EVENTS:
                taken[ev.data["card"]] += 1
            elif ev.kind == "conch_won":
                conch_how = "bought" if ev.actor != ev.data["from"] else "kept (paid)"
            elif ev.kind == "conch_kept":
                conch_how = "kept"
    res = game.result(state)
    finished = res is not None
    played = state.round if finished else state.round - 1  # the capped round never began
    how = "unfinished"
    if finished:
        locked = "after the deck ran out" if state.fire_locked else "from the deck"
        how = f"Fire, conch {conch_how}, {locked}"
    return GameRecord(seed, players, played, decisions,
                      res.winners[0] if finished and res.winners else None, finished, how, taken)


def percentile(values: list[int], pct: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]


def simulate(name: str, players: int, games: int, bot: str, seed: int,
             round_cap: int = 200) -> tuple[list[GameRecord], float]:
    game = get_game(name)
    start = time.perf_counter()
    records = [play_game(game, players, seed + i, bot, round_cap) for i in range(games)]
    return records, time.perf_counter() - start


def report(name: str, players: int, bot: str, records: list[GameRecord],
           elapsed: float) -> str:
    """The simulator's printout (see ``python -m engine simulate --help``)."""
    from engine.core import get_game

    n = len(records)
    decisions = sum(r.decisions for r in records)
    rounds = [r.rounds for r in records]
    finished = [r for r in records if r.finished]
    wins = Counter(r.winner for r in finished)
    lines = [
        f"{name}: {n} games, {players} players, bot {bot}",
        f"speed: {n / elapsed:,.1f} games/s, {decisions / elapsed:,.0f} decisions/s "
        f"({elapsed:.1f} s)",
        f"rounds per game: median {statistics.median(rounds):g}, "
        f"p95 {percentile(rounds, 95)}, max {max(rounds)}",
        f"finished: {len(finished)}, unfinished (round cap): {n - len(finished)}",
        f"win share by seat (fair share {1 / players:.1%}):",
    ]
    for seat in range(players):
        share = wins[seat] / len(finished) if finished else 0.0
        lines.append(f"  seat {seat + 1}: {wins[seat]:5d}  {share:6.1%}  "
                     f"({share * players:.2f}x fair)")
    lines.append("how games were won:")
    for how, count in Counter(r.how for r in records).most_common():
        lines.append(f"  {count:5d}  {how}")
    taken: Counter = Counter()
    for r in records:
        taken.update(r.taken)
    state = get_game(name).setup(["a", "b"], 0)
    deck = state.deck
    lines.append("cards taken per game (recruited/explored/invented/hunted):")
    for cid in deck.deck_ids:
        card = deck.card(cid)
        lines.append(f"  {cid:5s} {card.type:9s} {card.name:18s} {taken[cid] / n:5.2f}")
    return "\n".join(lines)
