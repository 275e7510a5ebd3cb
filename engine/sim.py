"""Self-play simulation: bots play whole games through the engine contract only.

Used by ``python -m engine simulate`` and by the tests and benchmarks. Games that reach
the round cap are reported as unfinished, never dropped. A game offers its bots as
``BOTS`` and its own figures as ``stats`` (``summary(state, events)`` and
``report(records)``); the rest is the same for every game.
"""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from engine.core import Event, Game
from engine.registry import get_game


@dataclass
class GameRecord:
    seed: int
    players: int
    rounds: int
    decisions: int
    winner: int | None
    finished: bool
    how: str
    taken: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)  # decisions asked, by kind
    points: list[int] | None = None  # final scores by seat, for games that score
    winners: tuple[int, ...] = ()
    seats: tuple[str, ...] = ()  # the bot in each seat


def play_game(game: Game, players: int, seed: int, bot: str, round_cap: int = 200,
              options: dict[str, Any] | None = None,
              seats: list[str] | None = None) -> GameRecord:
    """Play one game with the same bot in every seat, or ``seats`` naming one per seat."""
    chooser = [game.BOTS[b] for b in (seats or [bot] * players)]
    rng = random.Random(seed)
    state = game.setup([f"Player {i + 1}" for i in range(players)], seed, options)
    decisions = 0
    kinds: Counter[str] = Counter()
    events: list[Event] = []
    while game.result(state) is None and state.round <= round_cap:
        decision = game.pending(state)[0]
        action = chooser[decision.seat](state, decision.seat, rng)
        state, new = game.apply(state, decision.seat, action)
        events.extend(new)
        decisions += 1
        kinds[decision.kind] += 1
    res = game.result(state)
    finished = res is not None
    played = state.round if finished else state.round - 1  # the capped round never began
    info = game.stats.summary(state, events)
    winners = tuple(res.winners) if res is not None else ()
    return GameRecord(seed, players, played, decisions,
                      winners[0] if len(winners) == 1 else None, finished, info["how"],
                      info["taken"], kinds, info["points"], winners,
                      tuple(seats or [bot] * players))


def percentile(values: list[int], pct: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]


def simulate(name: str, players: int, games: int, bot: str, seed: int,
             round_cap: int = 200, against: str | None = None,
             ) -> tuple[list[GameRecord], float]:
    """Bots play ``games`` games. With ``against``, one seat plays ``bot`` and the others
    ``against``; the seat of ``bot`` moves round the table from game to game."""
    game = get_game(name)
    start = time.perf_counter()
    records = []
    for i in range(games):
        seats = None
        if against:
            seats = [against] * players
            seats[i % players] = bot
        records.append(play_game(game, players, seed + i, bot, round_cap, seats=seats))
    return records, time.perf_counter() - start


def report(name: str, players: int, bot: str, records: list[GameRecord],
           elapsed: float) -> str:
    """The simulator's printout (see ``python -m engine simulate --help``).

    Wins by seat count a shared win as a fraction for each winner; the email load is
    the decisions a player is asked per round (each may be one email)."""
    n = len(records)
    decisions = sum(r.decisions for r in records)
    rounds = [r.rounds for r in records]
    finished = [r for r in records if r.finished]
    wins: defaultdict[int, float] = defaultdict(float)  # a shared win counts a fraction
    for r in finished:
        for w in r.winners:
            wins[w] += 1 / len(r.winners)
    shared = sum(1 for r in finished if len(r.winners) > 1)
    versus = records[0].seats if records and len(set(records[0].seats)) > 1 else None
    title = f"{name}: {n} games, {players} players, bot {bot}"
    if versus:
        title += f" against {next(b for b in versus if b != bot)}"
    lines = [
        title,
        f"speed: {n / elapsed:,.1f} games/s, {decisions / elapsed:,.0f} decisions/s "
        f"({elapsed:.1f} s)",
        f"rounds per game: median {statistics.median(rounds):g}, "
        f"p95 {percentile(rounds, 95)}, max {max(rounds)}",
        f"finished: {len(finished)}, unfinished (round cap): {n - len(finished)}",
        f"win share by seat (fair share {1 / players:.1%}):",
    ]
    for seat in range(players):
        share = wins[seat] / len(finished) if finished else 0.0
        lines.append(f"  seat {seat + 1}: {wins[seat]:7.1f}  {share:6.1%}  "
                     f"({share * players:.2f}x fair)")
    if shared:
        lines.append(f"shared wins: {shared}")
    if versus:
        alone = sum(1 for r in finished if len(r.winners) == 1
                    and r.seats[r.winners[0]] == bot)
        lines.append(f"{bot} won alone: {alone} of {n} ({alone / n:.1%})")
    seat_rounds = sum(r.rounds * r.players for r in records) or 1
    kinds: Counter[str] = Counter()
    for r in records:
        kinds.update(r.kinds)
    lines.append(f"decisions per player per round: {decisions / seat_rounds:.2f}")
    for kind, count in kinds.most_common():
        lines.append(f"  {kind:10s} {count / seat_rounds:5.2f}")
    lines.append("how games were won:")
    for how, count in Counter(r.how for r in records).most_common():
        lines.append(f"  {count:5d}  {how}")
    lines.extend(get_game(name).stats.report(records))
    return "\n".join(lines)
