"""The bot levels beside the heuristic: ``easy`` and the search bot ``strong`` of Stone Age
and Cavemen (engine/search.py, engine/<game>/search.py).

The strong bot is built with a fixed number of rollouts here (``make_strong(rollouts=N)``),
so its choices depend only on the state and the rng. Positions come from seeded games of
the heuristic bot: every decision kind each game asks is met."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

from engine import cavemen, stoneage
from engine.cavemen import search as cavemen_search
from engine.core import Rng
from engine.search import Budget, SearchBot
from engine.stoneage import search as stoneage_search
from engine.stoneage.data import CARD_SLOTS

GAMES = {"stoneage": stoneage, "cavemen": cavemen}
KINDS = {"stoneage": {"place", "order", "tools", "card", "build", "pick", "feed"},
         "cavemen": {"bid", "act", "casualty", "discard"}}


def positions(name: str, players: int, seeds: range) -> Iterator[tuple[Any, int, str]]:
    """Every decision of heuristic games: (state, seat, kind)."""
    game = GAMES[name]
    for seed in seeds:
        rng = random.Random(seed)
        state = game.setup([f"P{i}" for i in range(players)], seed)
        while game.result(state) is None:
            d = game.pending(state)[0]
            yield state, d.seat, d.kind
            state, _ = game.apply(state, d.seat, game.BOTS["heuristic"](state, d.seat, rng))


@cache
def sample(name: str, per_kind: int = 2) -> list[tuple[Any, int, str]]:
    """A few positions of each decision kind with more than one legal action."""
    game = GAMES[name]
    found: dict[str, list[tuple[Any, int, str]]] = {}
    for players in (2, 3, 4):
        for state, seat, kind in positions(name, players, range(3)):
            mine = found.setdefault(kind, [])
            if len(mine) < per_kind * players and len(game.legal_actions(state, seat)) > 1:
                mine.append((state, seat, kind))
    return [p for kind in sorted(found) for p in found[kind][::3][:per_kind]]


@pytest.mark.parametrize("name", ["stoneage", "cavemen"])
def test_every_level_is_offered(name: str) -> None:
    assert {"random", "heuristic", "easy", "strong"} <= set(GAMES[name].BOTS)


@pytest.mark.parametrize("name", ["stoneage", "cavemen"])
def test_strong_bot_plays_a_legal_action_for_every_decision_kind(name: str) -> None:
    game = GAMES[name]
    bot = game.bots.make_strong(rollouts=4)
    seen = set()
    for state, seat, kind in sample(name):
        action = bot(state, seat, random.Random(1))
        assert action in game.legal_actions(state, seat), (kind, action)
        seen.add(kind)
    assert KINDS[name] <= seen


@pytest.mark.parametrize("name", ["stoneage", "cavemen"])
def test_easy_bot_plays_whole_games_with_legal_actions(name: str) -> None:
    game = GAMES[name]
    for players in (2, 4):
        rng = random.Random(players)
        state = game.setup([f"P{i}" for i in range(players)], players)
        while game.result(state) is None:
            seat = game.pending(state)[0].seat
            action = game.BOTS["easy"](state, seat, rng)
            assert action in game.legal_actions(state, seat)
            state, _ = game.apply(state, seat, action)


@pytest.mark.parametrize("name", ["stoneage", "cavemen"])
def test_strong_bot_with_fixed_rollouts_is_deterministic(name: str) -> None:
    game = GAMES[name]
    for state, seat, _ in sample(name, per_kind=1):
        first = [game.bots.make_strong(rollouts=5)(state, seat, random.Random(seed))
                 for seed in (3, 4)]
        again = [game.bots.make_strong(rollouts=5)(state, seat, random.Random(seed))
                 for seed in (3, 4)]
        assert first == again


def test_the_search_spends_exactly_its_rollouts() -> None:
    state, seat, _ = next(p for p in sample("stoneage") if p[2] == "place")
    bot = stoneage_search.make_strong(rollouts=13)
    bot(state, seat, random.Random(0))
    assert bot.last["rollouts"] == 13 and bot.last["candidates"] > 1


# --------------------------------------------------------------------------- hidden information


def _stoneage_place() -> tuple[stoneage.State, int]:
    for state, seat, kind in positions("stoneage", 2, range(1)):
        if kind == "place" and state.round == 3 and len(state.pile) > 4:
            return state, seat
    raise AssertionError("no placement in round 3")


def _hidden_reordered(state: stoneage.State) -> stoneage.State:
    """The same position with the pile, the tiles under the tops and the dice changed."""
    stacks = tuple((s[0], *reversed(s[1:])) if s else s for s in state.stacks)
    return state._replace(pile=tuple(reversed(state.pile)), stacks=stacks,
                          rng=Rng(state.rng.seed + 99, 7))


def test_stoneage_worlds_do_not_depend_on_the_hidden_order() -> None:
    state, seat = _stoneage_place()
    other = _hidden_reordered(state)
    assert other != state
    for seed in range(5):
        assert (stoneage_search.determinise(state, seat, random.Random(seed))
                == stoneage_search.determinise(other, seat, random.Random(seed)))


def test_stoneage_strong_bot_decides_alike_whatever_the_hidden_order() -> None:
    state, seat = _stoneage_place()
    other = _hidden_reordered(state)
    bot = stoneage.bots.make_strong(rollouts=20)
    for seed in range(3):
        assert bot(state, seat, random.Random(seed)) == bot(other, seat, random.Random(seed))


def test_stoneage_worlds_keep_what_the_seat_knows() -> None:
    state, seat = _stoneage_place()
    world = stoneage_search.determinise(state, seat, random.Random(0))
    assert world.civ == state.civ and world.boards == state.boards
    assert [s[:1] for s in world.stacks] == [s[:1] for s in state.stacks]
    assert [len(s) for s in world.stacks] == [len(s) for s in state.stacks]
    assert len(world.pile) == len(state.pile)
    assert sorted(world.pile) == sorted(state.pile) or len(state.pile) == 0
    stoneage.check_invariants(world)


def test_stoneage_an_opponents_face_down_extra_card_is_not_read() -> None:
    state, seat = _stoneage_place()
    other = 1 - seat
    opponent = state.boards[other]
    hidden, swapped = state.pile[0], state.pile[1]
    extra = opponent._replace(cards=(*opponent.cards, "G05", hidden))
    pile = tuple(c for c in state.pile if c != hidden)
    civ = [c for c in state.civ if c != "G05"]
    pile = tuple(c for c in pile if c != "G05")
    if len(civ) < CARD_SLOTS:
        civ.append(pile[-1])
        pile = pile[:-1]
    boards = list(state.boards)
    boards[other] = extra
    one = state._replace(boards=tuple(boards), pile=pile, civ=tuple(civ))
    stoneage.check_invariants(one)
    boards[other] = opponent._replace(cards=(*opponent.cards, "G05", swapped))
    two = one._replace(boards=tuple(boards),
                       pile=tuple(hidden if c == swapped else c for c in pile))
    stoneage.check_invariants(two)
    for seed in range(3):
        assert (stoneage_search.determinise(one, seat, random.Random(seed))
                == stoneage_search.determinise(two, seat, random.Random(seed)))


def test_stoneage_another_seats_chosen_order_is_forgotten() -> None:
    state = next(p[0] for p in positions("stoneage", 3, range(2)) if p[0].order)
    other = (state.turn + 1) % state.n
    assert stoneage_search.determinise(state, other, random.Random(0)).order == ()
    mine = stoneage_search.determinise(state, state.turn, random.Random(0))
    assert mine.order == state.order  # its own order a seat knows


def test_cavemen_worlds_do_not_depend_on_the_draw_order() -> None:
    state, seat, _ = next(p for p in positions("cavemen", 3, range(1)) if p[0].round == 3)
    other = state._replace(draw=tuple(reversed(state.draw)), rng=Rng(5, 5))
    bot = cavemen.bots.make_strong(rollouts=12)
    for seed in range(3):
        assert (cavemen_search.determinise(state, seat, random.Random(seed))
                == cavemen_search.determinise(other, seat, random.Random(seed)))
        assert bot(state, seat, random.Random(seed)) == bot(other, seat, random.Random(seed))


# --------------------------------------------------------------------------- budget


@pytest.mark.parametrize("name", ["stoneage", "cavemen"])
def test_strong_bot_keeps_roughly_to_its_cpu_budget(name: str) -> None:
    game = GAMES[name]
    bot = game.bots.make_strong(budget_ms=60)
    spent = []
    for state, seat, _ in sample(name, per_kind=1):
        start = time.thread_time()
        bot(state, seat, random.Random(0))
        spent.append(time.thread_time() - start)
    # A check that the budget is obeyed, not a measurement (bench/arena.py measures): a
    # search that ignored it would take its default second or more at every decision.
    # The median, not the worst: a rollout under way when the budget runs out finishes
    # its current step, and one long Cavemen rollout was seen to take a decision to
    # 0.8 s (a known weakness, in the note).
    assert statistics.median(spent) < 0.060 + 0.100, sorted(spent)[-3:]


def test_a_budget_needs_time_or_rollouts() -> None:
    with pytest.raises(ValueError):
        Budget(ms=0)
    with pytest.raises(ValueError):
        Budget(ms=None, rollouts=0)
    assert Budget(ms=None, rollouts=5).rollouts == 5


def test_a_single_legal_action_is_played_without_search() -> None:
    for state, seat, _ in positions("cavemen", 2, range(3)):
        legal = cavemen.legal_actions(state, seat)
        if len(legal) == 1:
            bot = cavemen_search.make_strong(rollouts=50)
            assert isinstance(bot, SearchBot)
            assert bot(state, seat, random.Random(0)) == legal[0]
            assert bot.last["rollouts"] == 0
            return
    raise AssertionError("no decision with one legal action")


# --------------------------------------------------------------------------- strength


@pytest.mark.slow
def test_easy_beats_the_heuristic_in_two_player_stone_age() -> None:
    """150 seat-swapped games (bench/arena.py measured 60 % over 400)."""
    won = 0.0
    for seed in range(75):
        for seat_easy in (0, 1):
            rng = random.Random(seed)
            state = stoneage.setup(["A", "B"], seed)
            while stoneage.result(state) is None:
                seat = stoneage.pending(state)[0].seat
                bot = stoneage.BOTS["easy" if seat == seat_easy else "heuristic"]
                state, _ = stoneage.apply(state, seat, bot(state, seat, rng))
            winners = state.winners
            won += 1 / len(winners) if seat_easy in winners else 0
    assert won / 150 > 0.5
