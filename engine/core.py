"""The game-agnostic engine contract, shared value types, errors and the seeded RNG.

Every game is a module (or object) offering the functions of :class:`Game`:

- ``setup(players, seed, options) -> State``: a fresh, immutable, JSON-serialisable state
  that carries its own RNG, so the same seed and the same actions rebuild the same game.
- ``pending(state) -> list[Decision]``: who must decide what now; several seats may be
  asked at once (simultaneous decisions), one seat may be asked several times in a row.
  Empty only when the game is over.
- ``legal_actions(state, seat) -> list[Action]``: the single source of truth; ``apply``
  accepts exactly these.
- ``apply(state, seat, action) -> (State, list[Event])``: everything automatic (draws,
  shuffles, dice, payments) happens inside until the next decision is needed.
- ``default_action(state, seat) -> Action``: what a timeout plays; always legal.
- ``email_choices(state, seat) -> list[Action]``: the legal actions a decision email
  offers as one-click links (the game page offers them all).
- ``choice_effect(state, seat, action) -> dict``: what a legal action costs and brings
  now (JSON values only, never anything still hidden), for the words of a choice ("Hunt
  Mammoth: +6 Food, +2 Teeth, then a casualty draw"); ``{}`` for an illegal one.
- optional ``explain(state, seat, text) -> dict``: why the command ``text`` is not a
  legal move now, as data for the refusal's words (``{"why": "pay/size", "given": 4,
  "need": 5}``); ``{}`` when there is nothing more to say than "not allowed".
- optional ``choice_variants(state, seat, action) -> list[Action]``: the legal actions the
  confirmation page of a one-click link for ``action`` lets the player pick instead
  (the same move with another number), ``action`` among them; empty for none.
- ``BOTS`` (``random``, ``heuristic``: ``choose(state, seat, rng) -> Action``) and
  ``stats`` (the simulator's game-specific figures).
- ``view(state, seat | None) -> dict``: what that seat (or a spectator) may see.
- ``result(state) -> Result | None``.
- ``to_json(state) -> dict`` and ``from_json(data) -> State``: an exact round trip.
- optional ``ROUND_EVENT``: the kind of the event that begins a round, with the round
  number in its data (``{"round": 3}``); the server groups the game log by it.

Nothing here knows a clock, a database or I/O.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# --------------------------------------------------------------------------- errors


class EngineError(Exception):
    """Root of all engine errors. ``code`` is stable (``area/reason``); ``data`` names the input."""

    code = "engine/error"

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class NotYourTurn(EngineError):
    """The seat has no open decision."""

    code = "turn/not_yours"


class IllegalAction(EngineError):
    """The action is not among the legal actions of the seat's open decision."""

    code = "action/illegal"


class InvalidAction(EngineError):
    """The action could not be read at all (bad syntax, unknown kind, bad parameter types)."""

    code = "action/invalid"


class AmbiguousAction(EngineError):
    """A typed command matches more than one legal action."""

    code = "action/ambiguous"


class IncompleteAction(AmbiguousAction):
    """A command names the start of one or more legal actions but leaves out a word the
    player must name (a payment, a count, a card); ``candidates`` are the full moves."""

    code = "action/incomplete"


class GameOver(EngineError):
    """The game has ended; nothing more can be played."""

    code = "game/over"


class StateCorrupt(EngineError):
    """A serialised state cannot be read back, or breaks an invariant."""

    code = "state/corrupt"


class SetupError(EngineError):
    """A game cannot be set up with the given players or options."""

    code = "setup/invalid"


# --------------------------------------------------------------------------- values


def _freeze(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, Mapping):
        raise InvalidAction("action parameters may not be mappings")
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class Action:
    """A move: a kind and named parameters (scalars or tuples of scalars), hashable."""

    kind: str
    args: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, kind: str, **args: Any) -> Action:
        """Build an action, dropping parameters whose value is None."""
        items = []
        for key in sorted(args):
            value = args[key]
            if value is None:
                continue
            if type(value) is list or type(value) is tuple or isinstance(value, Mapping):
                value = _freeze(value)
            items.append((key, value))
        return cls(kind, tuple(items))

    def get(self, name: str, default: Any = None) -> Any:
        for key, value in self.args:
            if key == name:
                return value
        return default

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **{k: _thaw(v) for k, v in self.args}}

    @classmethod
    def from_json(cls, data: Any) -> Action:
        """Read an action back; raises InvalidAction on anything malformed."""
        if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str):
            raise InvalidAction("an action needs a 'kind'", value=repr(data)[:200])
        args = {k: v for k, v in data.items() if k != "kind"}
        for key, value in args.items():
            if not isinstance(key, str) or not _is_scalar_or_list(value):
                raise InvalidAction(f"bad parameter {key!r}", value=repr(value)[:200])
        return cls.of(data["kind"], **args)

    def __str__(self) -> str:
        return format_action(self)


def _is_scalar_or_list(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return all(isinstance(v, str | int | bool) for v in value)
    return value is None or isinstance(value, str | int | bool)


def format_action(action: Action) -> str:
    """The action in the notation ``parse_action`` accepts: ``kind value value ...``.

    Parameters appear in name order; tuples expand to their items. Examples: ``pass``,
    ``bid 3``, ``recruit H03 teeth``, ``discard B01 C02``.
    """
    words = [action.kind]
    for _, value in action.args:
        if isinstance(value, tuple):
            words.extend(str(v) for v in value)
        else:
            words.append(str(value))
    return " ".join(words)


def parse_action(text: str, legal: Sequence[Action], *, exact: bool = False) -> Action:
    """Match a command against the legal actions, like a chess SAN parser.

    Syntax first (words separated by blanks, case-insensitive), then an exact match on the
    formatted legal actions, then a unique match of the same words in any order after the
    first (``take brick wood`` for ``take wood brick``). A typed command (``exact`` False)
    may also shorten each of its words to a unique prefix (``hun mam`` for ``hunt
    mammoth``), but never leave a word out: nothing the player did not name (a resource,
    a count, a card, a target) is ever filled in. A form (``exact`` True) names every
    word in full. Raises InvalidAction, IllegalAction, IncompleteAction (the words begin
    one or more legal actions but leave something out) or AmbiguousAction.
    """
    words = text.strip().lower().split()
    if not words:
        raise InvalidAction("empty command", text=text)
    formatted = [(format_action(a).lower().split(), a) for a in legal]
    exact_match = [a for w, a in formatted if w == words]
    if exact_match:
        return exact_match[0]
    key = (words[0], sorted(words[1:]))
    same = [a for w, a in formatted if (w[0], sorted(w[1:])) == key]
    if len(same) == 1:
        return same[0]
    if not exact:
        shortened = [a for w, a in formatted if len(w) == len(words)
                     and all(full.startswith(part) for full, part in zip(w, words, strict=True))]
        if len(shortened) == 1:
            return shortened[0]
        if len(shortened) > 1:
            raise AmbiguousAction(
                f"{text!r} matches {len(shortened)} actions", text=text,
                candidates=[format_action(a) for a in shortened[:10]])
    if len(same) > 1:
        raise AmbiguousAction(f"{text!r} matches {len(same)} actions", text=text,
                              candidates=[format_action(a) for a in same[:10]])
    longer = [a for w, a in formatted if len(w) > len(words) and w[: len(words)] == words]
    if longer:
        raise IncompleteAction(
            f"{text!r} leaves out part of the move", text=text,
            candidates=[format_action(a) for a in longer[:10]])
    if not any(w[0] == words[0] for w, _ in formatted):
        raise IllegalAction(f"no legal action of kind {words[0]!r} now", text=text)
    raise IllegalAction(f"{text!r} is not a legal action now", text=text)


@dataclass(frozen=True, slots=True)
class Decision:
    """An open decision: which seat, what kind (``bid``, ``act``, ...), and prompt data."""

    seat: int
    kind: str
    data: tuple[tuple[str, Any], ...] = ()

    def get(self, name: str, default: Any = None) -> Any:
        for key, value in self.data:
            if key == name:
                return value
        return default

    def to_json(self) -> dict[str, Any]:
        return {"seat": self.seat, "kind": self.kind, "data": {k: _thaw(v) for k, v in self.data}}


@dataclass(frozen=True, slots=True)
class Event:
    """A fact for the log. ``visible_to`` None means everyone; else the seats that may read it."""

    kind: str
    actor: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    visible_to: tuple[int, ...] | None = None

    def is_visible_to(self, seat: int | None) -> bool:
        return self.visible_to is None or (seat is not None and seat in self.visible_to)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "actor": self.actor, "data": dict(self.data),
            "visible_to": None if self.visible_to is None else list(self.visible_to),
        }


@dataclass(frozen=True, slots=True)
class Result:
    """The end of a game: the winning seats (empty when abandoned) and how it ended."""

    winners: tuple[int, ...]
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"winners": list(self.winners), "reason": self.reason}


# --------------------------------------------------------------------------- RNG


@dataclass(frozen=True, slots=True)
class Rng:
    """A seeded random source that lives inside the state: a seed and a draw counter.

    Each use derives a fresh ``random.Random`` from (seed, counter) and returns the
    advanced Rng, so a state never shares mutable random state with anything.
    """

    seed: int
    counter: int = 0

    def _random(self) -> random.Random:
        key = self.seed * 1_000_003 + self.counter
        # random.Random seeds with abs(); keep negative seeds apart from positive ones.
        return random.Random(key if key >= 0 else (1 << 128) - key)

    def shuffled(self, items: Iterable[Any]) -> tuple[tuple[Any, ...], Rng]:
        out = list(items)
        self._random().shuffle(out)
        return tuple(out), Rng(self.seed, self.counter + 1)

    def randint(self, low: int, high: int) -> tuple[int, Rng]:
        return self._random().randint(low, high), Rng(self.seed, self.counter + 1)

    def dice(self, count: int, sides: int = 6) -> tuple[tuple[int, ...], Rng]:
        r = self._random()
        return tuple(r.randint(1, sides) for _ in range(count)), Rng(self.seed, self.counter + 1)

    def to_json(self) -> list[int]:
        return [self.seed, self.counter]

    @classmethod
    def from_json(cls, data: Any) -> Rng:
        if (not isinstance(data, list) or len(data) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in data)):
            raise StateCorrupt("rng must be [seed, counter]", value=repr(data)[:100])
        return cls(data[0], data[1])


# --------------------------------------------------------------------------- contract


class Game(Protocol):
    """What a game module offers (see the module docstring)."""

    NAME: str
    TITLE: str
    MIN_PLAYERS: int
    MAX_PLAYERS: int
    BOTS: Mapping[str, Any]  # name -> choose(state, seat, random.Random) -> Action
    stats: Any  # the simulator's figures: summary(state, events), report(records)

    def setup(self, players: Sequence[str], seed: int,
              options: Mapping[str, Any] | None = None) -> Any: ...
    def pending(self, state: Any) -> list[Decision]: ...
    def legal_actions(self, state: Any, seat: int) -> list[Action]: ...
    def apply(self, state: Any, seat: int, action: Action) -> tuple[Any, list[Event]]: ...
    def default_action(self, state: Any, seat: int) -> Action: ...
    def email_choices(self, state: Any, seat: int) -> list[Action]: ...
    def choice_effect(self, state: Any, seat: int, action: Action) -> dict[str, Any]: ...
    def view(self, state: Any, seat: int | None) -> dict[str, Any]: ...
    def result(self, state: Any) -> Result | None: ...
    def to_json(self, state: Any) -> dict[str, Any]: ...
    def from_json(self, data: Mapping[str, Any]) -> Any: ...


def listed(action: Action, legal: Iterable[Action]) -> bool:
    """``action`` is one of ``legal`` exactly, types included (``True`` is not ``1``)."""
    key = json.dumps(action.to_json(), sort_keys=True)
    return any(json.dumps(a.to_json(), sort_keys=True) == key for a in legal)


def check_turn(game: Game, state: Any, seat: int) -> None:
    """Raise GameOver or NotYourTurn unless ``seat`` has an open decision."""
    if game.result(state) is not None:
        raise GameOver("the game is over")
    if not any(d.seat == seat for d in game.pending(state)):
        raise NotYourTurn(f"seat {seat} has no decision to make now", seat=seat)

