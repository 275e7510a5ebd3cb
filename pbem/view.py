"""One view of a seat, typed: what one reader (a seat, or a spectator) may see and
decide in a game, read once and rendered by the game page, every email and the API.

The values only: ``pbem.services.viewing`` reads them (``seat_view`` from a seat's
link, ``read_seat_view`` in a caller's read scope). Every value is a frozen dataclass;
what is the game's own (the board, what a choice costs and brings, an event's data) is
``JSON``, checked where it comes in (``as_json``): nothing in the view is ``Any``. The
engine strips the secrets of other seats from the board; events are only those the
reader may see; no seat's email address or link is in it. See docs/seat_view.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeAlias, cast

from typing_extensions import TypeAliasType

from engine.core import Action
from pbem.kinds import GameStatus

# A named recursive alias (PEP 695's, spelled for Python 3.11): mypy reads it as the
# string alias it was, and pydantic can make a JSON Schema of it (the API's document).
JSON = TypeAliasType(
    "JSON", "None | bool | int | float | str | Sequence[JSON] | Mapping[str, JSON]")
"""JSON data as the engine's views are made of, read-only."""
JSONObject: TypeAlias = Mapping[str, JSON]


class NotJSON(TypeError):
    """A value from the engine that is not JSON data (a bug of the game's)."""


_SCALARS = frozenset({str, int, float, bool, type(None)})


def as_json(value: object) -> JSON:
    """``value`` itself, checked to be JSON data (lists or tuples, objects with string
    keys, scalars): the engine's data is used as it is, not copied. (One walk with a
    stack, the exact types first, a container's scalars checked where they stand and
    never stacked: a game's view is checked for every page and email.)"""
    stack = [value]
    push = stack.append
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict or (kind is not list and kind is not tuple and isinstance(item, dict)):
            for key, child in cast(dict[object, object], item).items():
                if type(key) is not str and not isinstance(key, str):
                    raise NotJSON(f"a JSON object's key must be a string: {key!r}")
                if type(child) not in _SCALARS:
                    push(child)
        elif kind is list or kind is tuple or isinstance(item, list | tuple):
            for child in cast(Sequence[object], item):
                if type(child) not in _SCALARS:
                    push(child)
        elif kind not in _SCALARS and not isinstance(item, bool | int | float | str):
            raise NotJSON(f"not JSON data: {kind.__name__}")  # an enum's member passes
    return cast(JSON, value)


def as_object(value: object) -> JSONObject:
    """``value`` checked to be a JSON object."""
    checked = as_json(value)
    if not isinstance(checked, Mapping):
        raise NotJSON(f"not a JSON object: {type(value).__name__}")
    return checked


# --------------------------------------------------------------------------- the values


@dataclass(frozen=True, slots=True)
class GameInfo:
    """The game: its key, engine, title, status and counters (``version`` moves with
    every move, ``event_seq`` with every event, ``page_version`` with every change a
    page shows); ``paused``: the host paused it; ``banked``: each seat has a time bank."""

    id: str
    engine: str
    title: str
    status: GameStatus
    version: int
    event_seq: int
    page_version: int
    paused: bool
    banked: bool


@dataclass(frozen=True, slots=True)
class Reader:
    """Who reads: a seat's ``position`` (None: a spectator), in which language and zone."""

    position: int | None
    language: str
    timezone: str


@dataclass(frozen=True, slots=True)
class SeatInfo:
    """A seat as every reader may see it: never an address or a link. ``bot``: a bot
    plays it now (seated as one, ``robot``, or standing in); ``joined``: its player
    accepted the invitation; ``left``: its player left the game."""

    position: int
    name: str
    bot: bool
    robot: bool
    joined: bool
    left: bool


@dataclass(frozen=True, slots=True)
class OpenDecision:
    """A decision the game waits for: whose (``position``), what ``kind``, since and
    until when (UTC; no deadline: None); ``mine``: the reader's own."""

    id: int
    position: int
    kind: str
    opened_at: datetime
    deadline_at: datetime | None
    mine: bool


@dataclass(frozen=True, slots=True)
class Choice:
    """A legal action of the reader's decision: the engine's action as JSON data
    (``Action.to_json``; ``to_action`` reads it back), the same in the game's notation
    (what ``parse_action`` accepts) and what it costs and brings now (``effect``, the
    data of its words; None where the view was read without them: the game page asks
    the game for those it shows, a few of up to hundreds of orders)."""

    action: JSONObject
    notation: str
    effect: JSONObject | None

    def to_action(self) -> Action:
        return Action.from_json(self.action)


@dataclass(frozen=True, slots=True)
class MyDecision:
    """The reader's decision to play now: the decision, its legal actions (in the
    engine's order) and those a decision email offers as one-click links (``email``, in
    its order)."""

    decision: OpenDecision
    legal: tuple[Choice, ...]
    email: tuple[Choice, ...]


@dataclass(frozen=True, slots=True)
class Forms:
    """What a seat may set ahead in a running game, where the game offers it (else
    None): what its standing plan may name (``plan``, the game's ``plan_form``) and its
    standing choices with their values now (``standing``, ``standing_form``)."""

    plan: JSONObject | None
    standing: Sequence[JSONObject] | None


@dataclass(frozen=True, slots=True)
class Board:
    """The game as the reader may see it: the engine's view for that seat, its printed
    names in the reader's language; ``winners``: the winning seats once it is over."""

    view: JSONObject
    winners: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class EventView:
    """An event of the log the reader may see."""

    seq: int
    kind: str
    actor: int | None
    data: JSONObject
    created_at: datetime


@dataclass(frozen=True, slots=True)
class TalkLine:
    """A message to the table: who said it (seat and name), what, when."""

    seq: int
    position: int | None
    name: str
    text: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Clock:
    """A player's clock as a page shows it, now: ``left`` seconds; ``deciding``: a
    decision of theirs is open, so it runs (else a time bank waits for their turn);
    ``running``: it runs at this moment (not in a stop the policy makes, a vacation or a
    pause); ``runs``: the spans (Unix seconds) in which it runs from its start (the
    decision's opening, or the end of a vacation) until it runs out (the first
    ``services.viewing.RUNS_SHOWN``; ``rest``: the seconds after them), from which the page's script
    (static/clock.js) tells the time left as time passes, with no request. The spans
    do not move with the clock, and the page is the same page all along (its ETag does
    not move with the clock; only the words written at rendering do, which the script
    puts right)."""

    position: int
    left: float
    deciding: bool
    running: bool
    runs: tuple[tuple[int, int], ...] = ()
    rest: float = 0.0

    @property
    def runs_attr(self) -> str:
        return " ".join(f"{a}-{b}" for a, b in self.runs)


@dataclass(frozen=True, slots=True)
class SeatView:
    """Everything one reader may see and decide in a game, read at one moment."""

    game: GameInfo
    reader: Reader
    seats: tuple[SeatInfo, ...]
    open: tuple[OpenDecision, ...]
    mine: MyDecision | None
    forms: Forms
    board: Board | None
    clocks: tuple[Clock, ...]
    since: int
    events: tuple[EventView, ...]
    talk: tuple[TalkLine, ...]

    def clock_of(self, position: int) -> Clock | None:
        return next((c for c in self.clocks if c.position == position), None)
