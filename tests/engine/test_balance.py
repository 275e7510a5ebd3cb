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
