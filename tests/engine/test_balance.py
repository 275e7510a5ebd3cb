"""The deck and the heuristic bot make games of the intended shape (cavemen.md, "The
deck"): every game ends, a typical game lasts 10 to 25 rounds, no seat is far ahead.

The full measurement (2,000 games per player count) is the simulator's job; this is the
same check on a smaller sample, so a rules or deck change that breaks the shape fails CI.
"""

from __future__ import annotations

import statistics
from collections import Counter

import pytest

from engine.sim import simulate

GAMES = 120


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_heuristic_games_end_in_10_to_25_rounds_without_a_dominant_seat(players: int) -> None:
    records, _ = simulate("cavemen", players, GAMES, "heuristic", seed=1000 * players,
                          round_cap=150)
    assert all(r.finished for r in records), [r.seed for r in records if not r.finished]
    assert 10 <= statistics.median(r.rounds for r in records) <= 25
    wins = Counter(r.winner for r in records)
    fair = GAMES / players
    # 1.5x fair share over 2,000 games; a small sample gets a wider margin (about 3 sigma).
    assert max(wins.values()) <= fair * 1.5 + 3 * (fair ** 0.5), wins


STONEAGE_GAMES = 90


@pytest.mark.parametrize("players", [2, 3, 4])
def test_stoneage_heuristic_games_end_in_10_to_20_rounds_without_a_dominant_seat(
        players: int) -> None:
    records, _ = simulate("stoneage", players, STONEAGE_GAMES, "heuristic",
                          seed=2000 * players, round_cap=60)
    assert all(r.finished for r in records), [r.seed for r in records if not r.finished]
    assert 10 <= statistics.median(r.rounds for r in records) <= 20
    wins: Counter = Counter()
    for r in records:
        for w in r.winners:
            wins[w] += 1 / len(r.winners)
    fair = STONEAGE_GAMES / players
    # 1.3x fair share over 2,000 games (the simulator); about 3 sigma more on a sample.
    assert max(wins.values()) <= fair * 1.3 + 3 * (fair ** 0.5), wins
    assert statistics.median(p for r in records for p in r.points) >= 80


def test_stoneage_heuristic_bot_beats_the_random_bot() -> None:
    """At least 95% of 2-player games (the simulator's figure is over 2,000 games)."""
    games = 60
    records, _ = simulate("stoneage", 2, games, "heuristic", seed=7, against="random")
    assert [r.seats for r in records[:2]] == [("heuristic", "random"), ("random", "heuristic")]
    won = sum(1 for r in records if len(r.winners) == 1 and r.seats[r.winners[0]] == "heuristic")
    assert won >= 0.95 * games, won
