"""The engine under threads: a call never sees the work of a call in another thread.

The clock runs its sweep and its mail loop in threads, and both call the engine. Two
kinds of test: threads that play their own seeded games at the same time, with the
interpreter switching threads as often as it can, must get what one thread gets playing
the same games alone; and a forced interleaving, in which another thread lists or plays
another game's actions each time a function of the game's rules returns inside ``apply``
(or ``choice_effect``), must not make a call accept an action of the other game's state.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from engine.core import Action, Game, IllegalAction
from engine.registry import get_game

GAMES = ("cavemen", "stoneage")
THREADS = 8
GAMES_A_THREAD = 1  # of each game and bot


Step = tuple[int, tuple[Action, ...], tuple[Action, ...], Action, Action, Any, tuple[Any, ...],
             Any]


def play(game: Game, bot_name: str, players: int, seed: int) -> list[Step]:
    """One seeded game played by ``bot_name``: for each decision the seat, its legal
    actions, the email's choices, the timeout's action, the action chosen, the effect
    ``choice_effect`` gives it, the events and the new state."""
    bot = game.BOTS[bot_name]
    rng = random.Random(seed)
    state = game.setup([f"p{i}" for i in range(players)], seed)
    steps: list[Step] = []
    while game.result(state) is None:
        seat = game.pending(state)[0].seat
        legal = tuple(game.legal_actions(state, seat))
        choices = tuple(game.email_choices(state, seat))
        timeout = game.default_action(state, seat)
        action = bot(state, seat, rng)
        effect = game.choice_effect(state, seat, action)
        state, events = game.apply(state, seat, action)
        steps.append((seat, legal, choices, timeout, action, effect, tuple(events), state))
    return steps


Deal = tuple[str, str, int, int]  # game, bot, players, seed


def deals(thread: int) -> list[Deal]:
    """The games one thread plays: both games, the random and the heuristic bot, in turn."""
    out = []
    for k in range(GAMES_A_THREAD):
        for name in GAMES:
            for bot_name in ("random", "heuristic"):
                game = get_game(name)
                players = game.MIN_PLAYERS + (thread + k) % (
                    game.MAX_PLAYERS - game.MIN_PLAYERS + 1)
                out.append((name, bot_name, players, 1000 * thread + k))
    return out


def play_all(mine: list[Deal]) -> list[list[Step]]:
    return [play(get_game(name), bot_name, players, seed)
            for name, bot_name, players, seed in mine]


@contextmanager
def switching_often() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def test_threads_playing_their_own_games_get_what_one_thread_gets() -> None:
    alone = {t: play_all(deals(t)) for t in range(THREADS)}
    together: dict[int, list[list[Step]]] = {}
    failures: dict[int, BaseException] = {}
    start = threading.Barrier(THREADS)

    def worker(t: int) -> None:
        try:
            start.wait()
            together[t] = play_all(deals(t))
        except BaseException as exc:  # noqa: BLE001  (reported by the test below)
            failures[t] = exc

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    with switching_often():
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == {}
    for t in range(THREADS):
        for deal, got, expected in zip(deals(t), together[t], alone[t], strict=True):
            assert len(got) == len(expected), deal
            for i, (g, e) in enumerate(zip(got, expected, strict=True)):
                assert g == e, (deal, i)


# --------------------------------------------------------------------------- interleaving


@contextmanager
def interleaved(module_file: str, other: Callable[[], object]) -> Iterator[None]:
    """Inside the block, each time a function of ``module_file`` returns in this thread,
    ``other`` runs to its end in another thread before this thread goes on."""
    pool = ThreadPoolExecutor(1)
    calls = 0

    def on_call(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call" and frame.f_code.co_filename == module_file:
            return on_return
        return None

    def on_return(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal calls
        if event == "return":
            calls += 1
            pool.submit(other).result()
        return on_return

    before = sys.gettrace()
    sys.settrace(on_call)
    try:
        yield
    finally:
        sys.settrace(before)
        pool.shutdown()
    assert calls > 0, "no function of the rules returned: the interleaving did nothing"


def state_deciding(game: Game, kind: str, seed: int = 7) -> tuple[Any, int]:
    """The first state of a seeded heuristic game with an open ``kind`` decision."""
    bot = game.BOTS["heuristic"]
    rng = random.Random(seed)
    state = game.setup(["a", "b", "c"], seed)
    while game.result(state) is None:
        decision = game.pending(state)[0]
        if decision.kind == kind:
            return state, decision.seat
        state, _ = game.apply(state, decision.seat, bot(state, decision.seat, rng))
    raise AssertionError(f"no {kind} decision in the game")


# (game, the decision of the state played, the decision of the state another thread uses)
PAIRS = [("stoneage", "place", "order"), ("stoneage", "order", "place"),
         ("stoneage", "feed", "place"), ("cavemen", "bid", "act"), ("cavemen", "act", "bid")]


def rules_file(name: str) -> str:
    return str(Path(sys.modules[f"engine.{name}.rules"].__file__ or ""))


def other_thread_lists_and_plays(game: Game, other: Any, seat: int) -> Callable[[], None]:
    def run() -> None:
        legal = game.legal_actions(other, seat)
        game.apply(other, seat, legal[0])
        game.legal_actions(other, seat)

    return run


@pytest.mark.parametrize(("name", "mine", "theirs"), PAIRS)
def test_apply_refuses_the_other_threads_action_while_it_lists_its_own(
        name: str, mine: str, theirs: str) -> None:
    game = get_game(name)
    state, seat = state_deciding(game, mine)
    other, other_seat = state_deciding(game, theirs)
    foreign = [a for a in game.legal_actions(other, other_seat)
               if a not in game.legal_actions(state, seat)]
    assert foreign
    with (interleaved(rules_file(name), other_thread_lists_and_plays(game, other, other_seat)),
          pytest.raises(IllegalAction)):
        game.apply(state, seat, foreign[0])


@pytest.mark.parametrize(("name", "mine", "theirs"), PAIRS)
def test_choice_effect_of_the_other_threads_action_is_empty_while_it_lists_its_own(
        name: str, mine: str, theirs: str) -> None:
    game = get_game(name)
    state, seat = state_deciding(game, mine)
    other, other_seat = state_deciding(game, theirs)
    foreign = next(a for a in game.legal_actions(other, other_seat)
                   if a not in game.legal_actions(state, seat))
    with interleaved(rules_file(name), other_thread_lists_and_plays(game, other, other_seat)):
        effect = game.choice_effect(state, seat, foreign)
    assert effect == {}


@pytest.mark.parametrize(("name", "mine", "theirs"), PAIRS)
def test_apply_plays_its_own_action_alike_while_another_thread_plays(
        name: str, mine: str, theirs: str) -> None:
    game = get_game(name)
    state, seat = state_deciding(game, mine)
    other, other_seat = state_deciding(game, theirs)
    action = game.legal_actions(state, seat)[-1]
    expected = game.apply(state, seat, action)
    with interleaved(rules_file(name), other_thread_lists_and_plays(game, other, other_seat)):
        got = game.apply(state, seat, action)
    assert got == expected
