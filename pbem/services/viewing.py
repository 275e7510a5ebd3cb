"""Reading one view of a seat (``pbem.view``): what the game page, every email and the
API render from. ``seat_view`` from a seat's link, ``read_seat_view`` in a caller's read
scope, ``build_seat_view`` from the rows and the state a caller has read already (the
game page: ``reading._page_data``). Changes nothing. See docs/seat_view.md."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from sqlalchemy import Text, bindparam
from sqlalchemy import cast as sql_cast
from sqlalchemy import select as sa_select
from sqlmodel import Session

from engine.core import Action, format_action
from engine.core import Game as EngineGame
from engine.registry import get_game
from pbem import localize
from pbem.clocks import Stops, running_between, running_spans
from pbem.db import read_scope
from pbem.kinds import GameStatus, Invite, TokenKind
from pbem.mail.addresses import clock_stops
from pbem.models import Decision, EventLog, Game, Seat, as_utc, table_of, utcnow
from pbem.services.plumbing import bank_of, clock_start, live_seat_page, load_state, seats_of
from pbem.view import (
    Board,
    Choice,
    Clock,
    EventView,
    Forms,
    GameInfo,
    JSONObject,
    MyDecision,
    OpenDecision,
    Reader,
    SeatInfo,
    SeatView,
    TalkLine,
    as_object,
)

TALK_EVENT = "table_talk"  # a message to the table (``services.talk``)
RUNS_SHOWN = 128  # the spans of a running clock a page's script is given at most


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
    mod = get_game(game.engine)
    state: object = load_state(mod, game) if game.state else None
    after = (since if since is not None
             else seat.seen_event_seq if seat is not None else 0)
    return build_seat_view(s, game, seat, seats_of(s, game.id), mod, state,
                           language or (seat.language if seat is not None else "en"), after)


def build_seat_view(s: Session, game: Game, seat: Seat | None, seats: Sequence[Seat],
                    mod: EngineGame[object], state: object, language: str,
                    since: int | None, effects: bool = True, legal: bool = True,
                    forms: bool = True, keep: KeptActions | None = None) -> SeatView:
    """``read_seat_view`` from the game's ``seats`` (by position), its engine ``mod``
    and ``state`` (None before it starts) as the caller has read them; ``since``: None
    reads no events (the game page reads its log by rounds); ``effects``: False leaves
    each choice's ``effect`` None (the game page asks for those it shows); ``legal``:
    False leaves ``mine`` None, the reader's legal actions not asked of the game (an
    email that lists no commands); ``forms``: False leaves the forms None (the emails
    show none); ``keep``: filled with the engine's actions behind ``mine``."""
    position = seat.position if seat is not None else None
    reader = Reader(position, language, seat.timezone if seat is not None else "UTC")
    rows = s.connection().execute(_OPEN, {"game_id": game.id}).all()
    open_ = tuple(OpenDecision(r.id, r.position, r.kind, as_utc(r.opened_at),
                               as_utc(r.deadline_at) if r.deadline_at is not None else None,
                               seat is not None and r.seat_id == seat.id) for r in rows)
    board = mine = None
    shown_forms = Forms(None, None)
    if state is not None:
        tr = localize.translation_for(mod, state, language)
        shown = as_object(localize.view(mod, mod.view(state, position), tr))
        board = Board(shown, _winners(shown))
        # the seat's decision to play (none while a bot plays it: the clock does)
        own = next((d for d in open_ if d.mine), None)
        if (legal and own is not None and seat is not None and position is not None
                and not seat.bot):
            mine = _my_decision(mod, state, position, own, effects, keep)
        if forms and position is not None and game.status == GameStatus.ACTIVE:
            shown_forms = _forms(mod, state, position)
    events = _events(s, game, position, since) if since is not None else ()
    names = [x.name for x in seats]
    return SeatView(
        game=GameInfo(game.id, game.engine, game.title, game.status, game.version,
                      game.event_seq, game.page_version, game.paused_at is not None,
                      game.policy.banked),
        reader=reader,
        seats=tuple(SeatInfo(x.position, x.name, x.bot is not None, x.robot,
                             x.invite == Invite.ACCEPTED, x.left_at is not None)
                    for x in seats),
        open=open_, mine=mine, forms=shown_forms, board=board,
        clocks=tuple(sorted(seat_clocks(s, game, seats, open_).values(),
                            key=lambda c: c.position)),
        since=since if since is not None else game.event_seq, events=events,
        talk=tuple(TalkLine(e.seq, e.actor, names[e.actor] if e.actor is not None
                            and 0 <= e.actor < len(names) else "",
                            str(e.data.get("text", "")), e.created_at)
                   for e in events if e.kind == TALK_EVENT))


@dataclass(slots=True)
class KeptActions:
    """The engine's actions behind ``SeatView.mine`` as the view was built (``legal``,
    ``email``: in the same order as its choices), for a caller that renders forms of
    them (the game page): no round trip through their JSON (``Choice.to_action``)."""

    legal: list[Action] = field(default_factory=list)
    email: list[Action] = field(default_factory=list)


def _my_decision(mod: EngineGame[object], state: object, position: int,
                 decision: OpenDecision, effects: bool,
                 keep: KeptActions | None) -> MyDecision:
    """The reader's open decision with its legal actions and the email's choices."""
    legal = {a: Choice(as_object(a.to_json()), format_action(a),
                       as_object(mod.choice_effect(state, position, a)) if effects else None)
             for a in mod.legal_actions(state, position)}
    email = [a for a in mod.email_choices(state, position) if a in legal]
    if keep is not None:
        keep.legal, keep.email = list(legal), email
    return MyDecision(decision, tuple(legal.values()), tuple(legal[a] for a in email))


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
        # an object JSON decoded is JSON data by its making: only anything else is checked
        out.append(EventView(seq, kind, actor,
                             raw if type(raw) is dict else as_object(raw or {}),
                             as_utc(at)))
    return tuple(out)


class OpenTimes(Protocol):
    """What ``seat_clocks`` reads of an open decision (an ``OpenDecision``, a row)."""

    @property
    def position(self) -> int: ...
    @property
    def opened_at(self) -> datetime: ...
    @property
    def deadline_at(self) -> datetime | None: ...


def seat_clocks(s: Session, game: Game, seats: Sequence[Seat],
                decisions: Sequence[OpenTimes]) -> dict[int, Clock]:
    """Each player's clock in a running game, by seat position: in a time bank game
    every seat's (its bank, or while a decision of theirs is open the running time
    until its deadline); with fixed hours, that of each seat with a decision open; none
    for a bot seated at creation, and none running for a bot standing in. A
    paused game's clocks stand where the pause found them. The quiet hours and zones
    are read (one query) only in a game whose policy stops clocks."""
    policy = game.policy
    if game.status != GameStatus.ACTIVE:
        return {}
    now = utcnow()
    at = game.paused_at or now
    ends: dict[int, datetime] = {}
    opened: dict[int, datetime] = {}
    for d in decisions:
        if d.deadline_at is not None:
            ends[d.position] = min(ends.get(d.position, d.deadline_at), d.deadline_at)
            opened[d.position] = min(opened.get(d.position, d.opened_at), d.opened_at)
    if not ends and not policy.banked:
        return {}
    stops = (clock_stops(s.connection(), list(seats), policy.pause_weekends)
             if policy.stops_clocks else [Stops(UTC)] * len(seats))
    out: dict[int, Clock] = {}
    for seat, seat_stops in zip(seats, stops, strict=True):
        if seat.robot:  # a bot seated at creation plays after a short pause: no clock
            continue
        end = None if seat.bot else ends.get(seat.position)  # a bot standing in: no clock runs
        if end is None:
            if policy.banked:
                out[seat.position] = Clock(seat.position, bank_of(game, seat), False, False)
            continue
        running = policy.running(seat_stops)
        runs: list[tuple[datetime, datetime]] = []
        rest = 0.0
        if game.paused_at:
            left = running_between(clock_start(seat, at), end, running)
        else:  # one walk over the clock's stops: the time left is what remains of it
            start = clock_start(seat, opened[seat.position])
            runs = running_spans(start, end, running, RUNS_SHOWN)
            if len(runs) == RUNS_SHOWN:  # more than the page is given
                rest = running_between(runs[-1][1], end, running)
            left = rest + sum((b - max(a, now)).total_seconds() for a, b in runs if b > now)
        out[seat.position] = Clock(
            seat.position, left, True,
            running=any(a <= now < b for a, b in runs),
            runs=tuple((int(a.timestamp()), int(b.timestamp())) for a, b in runs),
            rest=max(0.0, rest))
    return out
