"""Pebbles, a toy game that lives outside the server: the proof that adding a game touches
only the game's own folders (this package and its ``templates/``), never ``pbem/``.

The rules, all four of them:

1. A pile holds 5 pebbles per player; the seeded draw picks who starts.
2. In turn, each player takes 1, 2 or 3 pebbles (never more than are left).
3. Whoever takes the last pebble wins.
4. A player who lets the deadline pass takes 1.

It offers the contract of ``engine.core.Game`` and none of the optional hooks (mypy checks
it: ``conformance.py``); ``tests/server/test_toy_game.py`` registers it and plays it by
email.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from engine.core import (
    Action,
    Decision,
    Event,
    GameOver,
    IllegalAction,
    NotYourTurn,
    Record,
    Result,
    Rng,
    SetupError,
    StateCorrupt,
    Summary,
    listed,
)

NAME = "pebbles"
TITLE = "Pebbles"
MIN_PLAYERS = 2
MAX_PLAYERS = 4
PER_PLAYER = 5
MOST = 3


@dataclass(frozen=True)
class State:
    players: tuple[str, ...]
    pile: int
    turn: int
    rng: Rng
    winner: int | None = None
    end: str | None = None  # "won" | "abandoned"


def setup(players: Sequence[str], seed: int,
          options: Mapping[str, Any] | None = None) -> State:
    return setup_with_events(players, seed, options)[0]


def setup_with_events(players: Sequence[str], seed: int,
                      options: Mapping[str, Any] | None = None) -> tuple[State, list[Event]]:
    if not MIN_PLAYERS <= len(players) <= MAX_PLAYERS:
        raise SetupError(f"Pebbles is for {MIN_PLAYERS} to {MAX_PLAYERS} players")
    first, rng = Rng(seed).randint(0, len(players) - 1)
    pile = PER_PLAYER * len(players)
    return State(tuple(players), pile, first, rng), [
        Event("pebbles_started", first, {"pile": pile})]


def pending(state: State) -> list[Decision]:
    return [] if state.end else [Decision(state.turn, "take", (("pile", state.pile),))]


def legal_actions(state: State, seat: int) -> list[Action]:
    if state.end or seat != state.turn:
        return []
    return [Action.of("take", count=n) for n in range(1, min(MOST, state.pile) + 1)]


def apply(state: State, seat: int, action: Action) -> tuple[State, list[Event]]:
    if state.end:
        raise GameOver("the game is over")
    if seat != state.turn:
        raise NotYourTurn(f"seat {seat} has no decision to make now", seat=seat)
    if not listed(action, legal_actions(state, seat)):
        raise IllegalAction(f"{action} is not a legal move now")
    count = int(action.get("count"))
    pile = state.pile - count
    events = [Event("pebbles_taken", seat, {"count": count, "left": pile})]
    if pile == 0:
        return replace(state, pile=0, winner=seat, end="won"), events + [
            Event("pebbles_won", seat)]
    return replace(state, pile=pile, turn=(seat + 1) % len(state.players)), events


def default_action(state: State, seat: int) -> Action:
    return legal_actions(state, seat)[0]


def email_choices(state: State, seat: int) -> list[Action]:
    return legal_actions(state, seat)


def choice_effect(state: State, seat: int, action: Action) -> dict[str, Any]:
    if not listed(action, legal_actions(state, seat)):
        return {}
    return {"left": state.pile - int(action.get("count"))}


def view(state: State, seat: int | None) -> dict[str, Any]:
    return {"game": NAME, "you": seat, "pile": state.pile, "turn": state.turn,
            "players": list(state.players), "result": _result_json(state)}


def _result_json(state: State) -> dict[str, Any] | None:
    found = result(state)
    return found.to_json() if found else None


def result(state: State) -> Result | None:
    if state.end is None:
        return None
    return Result(() if state.winner is None else (state.winner,), state.end)


def abandon(state: State) -> tuple[State, list[Event]]:
    if state.end:
        raise GameOver("the game is over")
    return replace(state, end="abandoned"), [Event("game_abandoned")]


def to_json(state: State) -> dict[str, Any]:
    return {"players": list(state.players), "pile": state.pile, "turn": state.turn,
            "rng": state.rng.to_json(), "winner": state.winner, "end": state.end}


def from_json(data: Mapping[str, Any]) -> State:
    try:
        return State(tuple(data["players"]), int(data["pile"]), int(data["turn"]),
                     Rng.from_json(data["rng"]), data["winner"], data["end"])
    except (KeyError, TypeError, ValueError) as exc:
        raise StateCorrupt(f"not a Pebbles state: {exc}") from None


def _random_bot(state: State, seat: int, rng: random.Random) -> Action:
    return rng.choice(legal_actions(state, seat))


def _heuristic_bot(state: State, seat: int, rng: random.Random) -> Action:
    """Leave a multiple of 4 when it can (the winning line of this Nim)."""
    best = state.pile % (MOST + 1)
    return Action.of("take", count=best) if best else _random_bot(state, seat, rng)


BOTS = {"random": _random_bot, "heuristic": _heuristic_bot}


class stats:  # noqa: N801  (the simulator's figures: who won, nothing scored or taken)
    @staticmethod
    def summary(state: State, events: Sequence[Event]) -> Summary:
        how = "unfinished" if state.end is None else f"{state.end} by seat {state.winner}"
        return {"how": how, "taken": Counter(), "points": None}

    @staticmethod
    def report(records: Sequence[Record]) -> list[str]:
        return []
