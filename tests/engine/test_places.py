"""Where each player finished (``places``, for the result email's "you came second"):
the winners first, then as each game ranks the rest; tied players share a place."""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine import cavemen, stoneage


def played(game: Any, players: int, seed: int) -> Any:
    """A game played to its end by the heuristic bot in every seat."""
    rng = random.Random(seed)
    state = game.setup([f"P{i}" for i in range(players)], seed)
    while game.result(state) is None:
        decision = game.pending(state)[0]
        state, _ = game.apply(state, decision.seat,
                              game.BOTS["heuristic"](state, decision.seat, rng))
    return state


def assert_ranked_by(places: list[int], keys: list[Any]) -> None:
    """``places`` is the competition ranking of ``keys`` (higher is better): 1, 2, 2, 4."""
    for a, key in enumerate(keys):
        assert places[a] == 1 + sum(other > key for other in keys)


@pytest.mark.parametrize("seed", range(4))
def test_stone_age_places_follow_points_then_the_tie_break(seed):
    state = played(stoneage, 4, seed)
    keys = [(f["total"], f["tiebreak"]) for f in
            (stoneage.final_scores(state, s) for s in range(state.n))]
    places = stoneage.places(state)
    assert [s for s, p in enumerate(places) if p == 1] == list(state.winners)
    assert_ranked_by(places, keys)


@pytest.mark.parametrize("seed", range(4))
def test_cavemen_places_put_fire_first_then_inventing(seed):
    state = played(cavemen, 4, seed)
    places = cavemen.places(state)
    winner = cavemen.result(state).winners
    assert [s for s, p in enumerate(places) if p == 1] == list(winner)
    assert_ranked_by(places, [(s in winner, cavemen.scores(state, s).inventing)
                              for s in range(state.n)])


def test_no_places_before_the_end_or_without_a_winner():
    for game in (stoneage, cavemen):
        state = game.setup(["a", "b", "c"], 3)
        assert game.places(state) == []
        assert game.places(game.abandon(state)[0]) == []

