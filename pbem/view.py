"""One view of a seat, typed: what one reader (a seat, or a spectator) may see and
decide in a game, read once and rendered by the game page, every email and the API.

``read_seat_view`` builds it inside a caller's read scope; ``seat_view`` opens one from
a seat's page link. Every value is a frozen dataclass; what is the game's own (the board,
what a choice costs and brings, an event's data) is ``JSON``, checked where it comes in
(``as_json``): nothing in the view is ``Any``. The engine strips the secrets of other
seats from the board (``view``); events are kept to those the reader may see; no seat's
email address or link is in it. See docs/seat_view.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeAlias, cast

from sqlalchemy import Text, bindparam
from sqlalchemy import cast as sql_cast
from sqlalchemy import select as sa_select
from sqlmodel import Session

from engine.core import Action, format_action
from engine.core import Game as EngineGame
from engine.registry import get_game
from pbem import localize
from pbem.db import read_scope
from pbem.kinds import GameStatus, Invite, TokenKind
from pbem.models import Decision, EventLog, Game, Seat, as_utc, table_of
from pbem.services.plumbing import live_seat_page, load_state, seats_of
from pbem.services.reading import Clock, seat_clocks

JSON: TypeAlias = "None | bool | int | float | str | Sequence[JSON] | Mapping[str, JSON]"
"""JSON data as the engine's views are made of, read-only."""
JSONObject: TypeAlias = Mapping[str, JSON]

TALK_EVENT = "table_talk"  # a message to the table (``services.talk``)


class NotJSON(TypeError):
    """A value from the engine that is not JSON data (a bug of the game's)."""


def as_json(value: object) -> JSON:
    """``value`` itself, checked to be JSON data (lists or tuples, objects with string
    keys, scalars): the engine's data is used as it is, not copied."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        for item in value:
            as_json(item)
        return cast(Sequence[JSON], value)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotJSON(f"a JSON object's key must be a string: {key!r}")
            as_json(item)
        return cast(Mapping[str, JSON], value)
    raise NotJSON(f"not JSON data: {type(value).__name__}")


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
    data of its words)."""

    action: JSONObject
    notation: str
    effect: JSONObject

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


# --------------------------------------------------------------------------- reading


_DECISION = table_of(Decision).c
_OPEN = (sa_select(_DECISION.id, _DECISION.seat_id, _DECISION.position, _DECISION.kind,
                   _DECISION.opened_at, _DECISION.deadline_at)
         .where(_DECISION.game_id == bindparam("game_id"), _DECISION.closed_at.is_(None))
         .order_by(_DECISION.id))
_EVENT = table_of(EventLog).c
_EVENTS_AFTER = (sa_select(_EVENT.seq, _EVENT.kind, _EVENT.actor, sql_cast(_EVENT.data, Text),
                           sql_cast(_EVENT.visible_to, Text), _EVENT.created_at)
                 .where(_EVENT.game_id == bindparam("game_id"),
                        _EVENT.seq > bindparam("since"))
                 .order_by(_EVENT.seq))


def seat_view(raw: str, since: int | None = None) -> SeatView:
    """The view of the seat behind ``raw`` (a game page's or a one-click link, as the
    game page takes), in one read-only transaction; NotFound for a link that opens no
    page. ``since``: as ``read_seat_view``."""
    with read_scope() as s:
        _token, game, seat = live_seat_page(s, raw, TokenKind.PAGE, TokenKind.ACTION)
        return read_seat_view(s, game, seat, since)


def read_seat_view(s: Session, game: Game, seat: Seat | None, since: int | None = None,
                   language: str | None = None) -> SeatView:
    """The view of ``game`` for ``seat`` (None: a spectator), read in ``s`` (the
    caller's read scope). ``since``: the events after this one (default: those after
    the seat's last email that told its news, ``Seat.seen_event_seq``; all for a
    spectator). ``language``: the reader's (default: the seat's; English for a
    spectator)."""
    seats = seats_of(s, game.id)
    position = seat.position if seat is not None else None
    reader = Reader(position, language or (seat.language if seat is not None else "en"),
                    seat.timezone if seat is not None else "UTC")
    rows = s.connection().execute(_OPEN, {"game_id": game.id}).all()
    open_ = tuple(OpenDecision(r.id, r.position, r.kind, as_utc(r.opened_at),
                               as_utc(r.deadline_at) if r.deadline_at is not None else None,
                               seat is not None and r.seat_id == seat.id) for r in rows)
    mod = get_game(game.engine)
    state: object = load_state(mod, game) if game.state else None
    board = mine = None
    forms = Forms(None, None)
    if state is not None:
        tr = localize.translation_for(mod, state, reader.language)
        shown = as_object(localize.view(mod, mod.view(state, position), tr))
        board = Board(shown, _winners(shown))
        # the seat's decision to play (none while a bot plays it: the clock does)
        own = next((d for d in open_ if d.mine), None)
        if own is not None and seat is not None and position is not None and not seat.bot:
            mine = _my_decision(mod, state, position, own)
        if position is not None and game.status == GameStatus.ACTIVE:
            forms = _forms(mod, state, position)
    after = (since if since is not None
             else seat.seen_event_seq if seat is not None else 0)
    events = _events(s, game, position, after)
    names = [x.name for x in seats]
    return SeatView(
        game=GameInfo(game.id, game.engine, game.title, game.status, game.version,
                      game.event_seq, game.page_version, game.paused_at is not None,
                      game.policy.banked),
        reader=reader,
        seats=tuple(SeatInfo(x.position, x.name, x.bot is not None, x.robot,
                             x.invite == Invite.ACCEPTED, x.left_at is not None)
                    for x in seats),
        open=open_, mine=mine, forms=forms, board=board,
        clocks=tuple(sorted(seat_clocks(s, game, seats, rows).values(),
                            key=lambda c: c.position)),
        since=after, events=events,
        talk=tuple(TalkLine(e.seq, e.actor, names[e.actor] if e.actor is not None
                            and 0 <= e.actor < len(names) else "",
                            str(e.data.get("text", "")), e.created_at)
                   for e in events if e.kind == TALK_EVENT))


def _my_decision(mod: EngineGame[object], state: object, position: int,
                 decision: OpenDecision) -> MyDecision:
    """The reader's open decision with its legal actions and the email's choices."""
    legal = {a: Choice(as_object(a.to_json()), format_action(a),
                       as_object(mod.choice_effect(state, position, a)))
             for a in mod.legal_actions(state, position)}
    return MyDecision(
        decision, tuple(legal.values()),
        tuple(legal[a] for a in mod.email_choices(state, position) if a in legal))


def _forms(mod: EngineGame[object], state: object, position: int) -> Forms:
    """The seat's forms of a running game (the game's optional hooks)."""
    plan = getattr(mod, "plan_form", None)
    standing = getattr(mod, "standing_form", None)
    plan_form = plan(state, position) if plan is not None else None
    choices = standing(state, position) if standing is not None else None
    return Forms(None if plan_form is None else as_object(plan_form),
                 None if choices is None else [as_object(c) for c in choices])


def _winners(view: JSONObject) -> tuple[int, ...]:
    result = view.get("result")
    winners = result.get("winners") if isinstance(result, Mapping) else None
    if not isinstance(winners, Sequence) or isinstance(winners, str):
        return ()
    return tuple(w for w in winners if isinstance(w, int) and not isinstance(w, bool))


def _events(s: Session, game: Game, position: int | None,
            since: int) -> tuple[EventView, ...]:
    """The events after ``since`` that the reader at ``position`` may see, oldest first."""
    out: list[EventView] = []
    for seq, kind, actor, data, seen, at in s.connection().execute(
            _EVENTS_AFTER, {"game_id": game.id, "since": since}):
        visible = None if seen is None or seen == "null" else json.loads(seen)
        if visible is not None and position not in visible:
            continue
        raw = None if data is None else json.loads(data)
        out.append(EventView(seq, kind, actor, as_object(raw or {}), as_utc(at)))
    return tuple(out)
