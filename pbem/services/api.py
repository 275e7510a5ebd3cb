"""What the public JSON API (``pbem.web.api``, ``/api/v1/...``) asks of the services: a
seat's view, its legal actions, a move, a message to the table, whether the game page
changed, the host's overview. Each reads or writes through the services the pages use
(``viewing``, ``playing.act_from_page``, ``talk.say``, ``reading.page_stamp``), so the
API keeps the pages' rules: the same exactly-once move, the same talk limits.

A seat is known by its game page's link token only (``TokenKind.PAGE``; a one-click
link's token opens no API), the host by the host page's (``TokenKind.ADMIN``). The
values answered are frozen dataclasses: the view's own (``pbem.view``) and those here;
``DOCUMENT`` is their JSON Schema for the OpenAPI document. See docs/api.md.
"""

from __future__ import annotations

import random
import secrets
from collections import Counter
from dataclasses import dataclass
from typing import Annotated, TypeVar, cast

from pydantic import Field, TypeAdapter
from sqlmodel import col, select

from engine.core import Action, Worlds, format_action
from engine.registry import get_game
from pbem.db import read_scope
from pbem.errors import NotFound, ServiceError
from pbem.forms import DB_INT_MAX
from pbem.kinds import Invite, OutboxStatus, SeatBot, TokenKind
from pbem.models import Outbox, utcnow
from pbem.services import allowance
from pbem.services.playing import act_from_page
from pbem.services.plumbing import (
    live_seat_page,
    live_token,
    load_state,
    lock_game,
    seats_of,
)
from pbem.services.reading import page_stamp
from pbem.services.talk import say
from pbem.services.viewing import read_seat_view
from pbem.tokens import lookup
from pbem.view import (
    JSON,
    Board,
    Choice,
    GameInfo,
    OpenDecision,
    SeatInfo,
    SeatView,
    as_json,
)

T = TypeVar("T")
API_VERSION = "v1"
TALK_CLIP = 10_000  # characters of a message read at most (the talk box's form clips too)


class Unauthorized(ServiceError):
    """No live token of the kind the route takes (none, garbled, unknown, revoked, of
    another kind)."""

    code = "auth/unauthorized"
    status = 401


# --------------------------------------------------------------------------- the values

Id = Annotated[int, Field(ge=1, le=DB_INT_MAX)]
Count = Annotated[int, Field(ge=0, le=DB_INT_MAX)]


@dataclass(frozen=True, slots=True)
class ActRequest:
    """A move: the open ``decision`` it answers, the game's ``version`` it was chosen
    on (``game.version`` of the view), the ``action`` in the game's notation (a
    ``Choice.notation``: what ``parse_action`` accepts)."""

    decision: Id
    version: Count
    action: Annotated[str, Field(max_length=2000)]


@dataclass(frozen=True, slots=True)
class TalkRequest:
    """A message to the table (plain text; one paragraph is kept)."""

    text: Annotated[str, Field(max_length=TALK_CLIP)]


@dataclass(frozen=True, slots=True)
class Legal:
    """The seat's open decision to play now (None: none is the seat's) with its legal
    actions in the game's notation and what each costs and brings (``effect``), and
    the game's ``version`` to act on."""

    decision: OpenDecision | None
    version: int
    legal: tuple[Choice, ...]


@dataclass(frozen=True, slots=True)
class Acted:
    """A move recorded: the decision it closed, the action as the engine took it (its
    notation), the game's version and page version after it, whether the same seat must
    decide again at once and whether the game is over."""

    decision: int
    action: str
    version: int
    page_version: int
    again: bool
    finished: bool


@dataclass(frozen=True, slots=True)
class Said:
    """A message posted to the table, as kept (one paragraph, control characters
    dropped)."""

    text: str


@dataclass(frozen=True, slots=True)
class Changed:
    """The game page's counters now: ``page_version`` moves with every change a page
    shows (a move, a message, a seat's state), ``version`` with every move."""

    version: int
    page_version: int


@dataclass(frozen=True, slots=True)
class HostSeat:
    """A seat as the host sees it: the seat, and where its invitation stands."""

    seat: SeatInfo
    invite: Invite


@dataclass(frozen=True, slots=True)
class World:
    """A world the seat cannot tell from the game, for a client's own search bot: the
    game's state (the engine's JSON, ``from_json`` reads it) with everything the seat
    cannot know drawn anew at random (the engine's ``determinise``: card piles' order,
    hidden tiles, other seats' face-down cards and private choices, a fresh random
    source for the dice), at the game's ``version``; ``position``: the seat's. A new
    draw at every request; never the hidden truth."""

    engine: str
    position: int
    version: int
    state: JSON


@dataclass(frozen=True, slots=True)
class BotCpuToday:
    """The CPU time (seconds) the game's bots used today (UTC) and the host's bots in
    all of the host's games, the day's allowance of each, and the milliseconds a strong
    bot thinks per move now (the host's choice; the default budget once either
    allowance is spent, until 00:00 UTC)."""

    game_seconds: float
    host_seconds: float
    game_allowance: float
    host_allowance: float
    strong_bot_ms: float


@dataclass(frozen=True, slots=True)
class HostView:
    """The host's overview: the game, its seats, the decisions it waits for, the board
    as a spectator sees it (no seat's hidden cards), its emails by status, and in a
    game with strong bots their CPU today (``bot_cpu``; None without one)."""

    game: GameInfo
    seats: tuple[HostSeat, ...]
    open: tuple[OpenDecision, ...]
    board: Board | None
    mail: dict[OutboxStatus, int]
    bot_cpu: BotCpuToday | None = None


@dataclass(frozen=True, slots=True)
class ErrorBody:
    """What was refused: a stable ``code`` (``area/reason``: the engine's own for a
    move it refused, e.g. ``action/illegal``), a message in English, and for a move
    refused as stale or already recorded the game's ``version`` now."""

    code: str
    message: str
    version: int | None = None
    kind: str | None = None


@dataclass(frozen=True, slots=True)
class ApiError:
    """Every answer that is not a success."""

    error: ErrorBody


# Each type of the API with its adapter: the answers are serialised by the adapter of
# their type, and the OpenAPI document's schemas are made from the same adapters.
ADAPTERS: dict[str, TypeAdapter[object]] = {
    cls.__name__: TypeAdapter(cls)
    for cls in (SeatView, Legal, Acted, Said, Changed, World, HostView, ApiError,
                ActRequest, TalkRequest)}


def dump(value: object) -> bytes:
    """``value`` (one of the API's types) as JSON text: times ISO 8601 in UTC."""
    return ADAPTERS[type(value).__name__].dump_json(value)


def parse(cls: type[T], data: bytes) -> T:
    """``data`` (JSON text) read as ``cls``, strictly: no number from a string, no
    true for 1; ``pydantic.ValidationError`` for anything else."""
    value: T = ADAPTERS[cls.__name__].validate_json(data, strict=True)  # type: ignore[assignment]
    return value


# --------------------------------------------------------------------------- the seat


def _seat_check(raw: str | None) -> str:
    """``raw`` if it is a live game page link's token; else Unauthorized."""
    if raw is None:
        raise Unauthorized("send the game page's link token as 'Authorization: Bearer "
                           "<token>'")
    with read_scope() as s:
        if lookup(s, raw, TokenKind.PAGE) is None:
            raise Unauthorized("this token opens no seat's game page")
    return raw


def seat_view(raw: str | None, since: int = 0) -> SeatView:
    """The view of the seat whose game page link is ``raw``, with the events after
    ``since`` (0: all the seat may see)."""
    if raw is None:
        _seat_check(raw)
    with read_scope() as s:
        try:
            _token, game, seat = live_seat_page(s, raw or "", TokenKind.PAGE)
        except ServiceError:
            raise Unauthorized("this token opens no seat's game page") from None
        return read_seat_view(s, game, seat, since)


def legal(raw: str | None) -> Legal:
    """The seat's decision to play now and its legal actions."""
    seen = seat_view(raw, since=DB_INT_MAX)
    mine = seen.mine
    return Legal(mine.decision if mine else None, seen.game.version,
                 mine.legal if mine else ())


def act(raw: str | None, request: ActRequest) -> Acted:
    """Play ``request`` for the seat, as the game page's decision form does
    (``playing.act_from_page``: exactly once; a decision taken is AlreadyRecorded, a
    closed one TurnOver), on the game's version it names (else StaleVersion)."""
    raw = _seat_check(raw)
    try:
        outcome = act_from_page(raw, request.decision, request.action,
                                version=request.version)
    except NotFound:  # the link is live (checked above): the decision is none of its seat's
        raise NotFound("no decision of this seat has that id",
                       reason="decision/unknown") from None
    now = changed(raw)
    return Acted(outcome.decision_id, format_action(Action.from_json(outcome.action)),
                 now.version, now.page_version, outcome.again, outcome.finished)


def world(raw: str | None) -> World:
    """A world the seat cannot tell from its game (``World``), for its own bot."""
    with read_scope() as s:
        try:
            _token, game, seat = live_seat_page(s, raw or "", TokenKind.PAGE)
        except ServiceError:
            raise Unauthorized("this token opens no seat's game page") from None
        mod = get_game(game.engine)
        if not hasattr(mod, "determinise"):
            raise NotFound("this game draws no worlds", reason="world/none")
        state = load_state(mod, game)
        version = game.version
    # a fresh source, never the game's: nothing of the truth may steer the draws
    drawn = cast("Worlds[object]", mod).determinise(state, seat.position,
                                                    random.Random(secrets.randbits(64)))
    return World(game.engine, seat.position, version, as_json(mod.to_json(drawn)))


def talk(raw: str | None, request: TalkRequest) -> Said:
    """Post a message to the table for the seat (``talk.say``: the talk box's rules
    and its limit per hour)."""
    return Said(say(_seat_check(raw), request.text))


def changed(raw: str | None) -> Changed:
    """The game page's counters now (one indexed read, as a live page's ETag)."""
    stamp = page_stamp(raw) if raw is not None else None
    if stamp is None or not stamp.reader.startswith(f"{TokenKind.PAGE}:"):
        raise Unauthorized("this token opens no seat's game page")
    return Changed(stamp.version, stamp.page_version)


# --------------------------------------------------------------------------- the host


def host_view(raw: str | None) -> HostView:
    """The host's overview of the game whose host page link is ``raw``."""
    with read_scope() as s:
        try:
            token = live_token(s, raw or "", TokenKind.ADMIN)
        except ServiceError:
            raise Unauthorized("this token opens no host page") from None
        game = lock_game(s, token.game_id, lock=False)
        board = read_seat_view(s, game, None, since=DB_INT_MAX)
        seats = seats_of(s, game.id)
        mail = Counter(s.exec(select(Outbox.status).where(Outbox.game_id == game.id)
                              .order_by(col(Outbox.id))).all())
        cpu = None
        if any(seat.bot == SeatBot.STRONG for seat in seats):
            host = next((seat.email for seat in seats if seat.is_host), "")
            used = allowance.bot_cpu(s.connection(), game.id, host, utcnow())
            cpu = BotCpuToday(used.game_seconds, used.host_seconds, used.game_allowance,
                              used.host_allowance, used.budget(game.policy.bot_ms))
    return HostView(board.game,
                    tuple(HostSeat(info, seat.invite)
                          for info, seat in zip(board.seats, seats, strict=True)),
                    board.open, board.board, {OutboxStatus(k): v for k, v in mail.items()},
                    cpu)
