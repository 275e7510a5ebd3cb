"""Shared helpers of the service modules: tokens, locking the game row, seats, deadline
and reminder times, the event log, the outbox (queueing an email, holding it over the sending
caps, waking the deliverer), constants. Imports no other service module."""

from __future__ import annotations

import functools
import json
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from flask import current_app
from flask_babel import gettext
from sqlalchemy import Select, bindparam, event, func, insert, literal, or_, text
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import defer
from sqlmodel import Session, col, select

from engine.core import Event
from engine.core import Game as EngineGame
from pbem import i18n, wake
from pbem.channels import queue_notices
from pbem.clocks import Stops, advance, quiet_span
from pbem.db import is_postgres
from pbem.errors import NotFound, WrongState
from pbem.i18n import mark
from pbem.kinds import EmailTemplate, OutboxStatus, TokenKind
from pbem.mail import INVITE_TEMPLATES, TURN_TEMPLATES, may_mail
from pbem.mail.addresses import clock_stops
from pbem.mail.headers import message_id
from pbem.models import (
    Decision,
    EventLog,
    Game,
    Outbox,
    RowLoader,
    Seat,
    Token,
    table_of,
    utcnow,
)
from pbem.tokens import hash_token, is_live, lookup, well_formed

OUTBOX_CHANNEL = "pbem_outbox"  # PostgreSQL NOTIFY channel: new mail to deliver
LANGUAGES = tuple(i18n.LANGUAGES)


# ------------------------------------------------------------------------ tokens, locking and seats


def live_token(s: Session, raw: str, *kinds: TokenKind) -> Token:
    """The live token of one of ``kinds`` behind ``raw``, or a friendly NotFound."""
    token = lookup(s, raw, *kinds)
    if token is None:
        raise NotFound(gettext("this link is unknown or no longer valid"))
    return token


def is_link_of(s: Session, raw: Any, kind: TokenKind, game_id: str,
               seat_id: int | None = None) -> bool:
    """Whether ``raw`` is a live link of ``kind`` to game ``game_id`` (and, if given, to
    seat ``seat_id``): how a page after a POST checks the link that POST made for it
    (Post/Redirect/Get: e.g. the game page of an invitation just accepted) before it
    shows it."""
    token = lookup(s, raw, kind) if isinstance(raw, str) else None
    return token is not None and token.game_id == game_id and (
        seat_id is None or token.seat_id == seat_id)


# A seat's link with what its page or a move needs, in one query (primary-key lookups
# one by one cost a round trip through the ORM each): the token, its game, its seat, and
# for a move a decision: the link's own (a one-click link) or the one a page's form names.
def _seat_link(decision: Any) -> Any:
    entities = (Token, Game, Seat) if decision is None else (Token, Game, Seat, Decision)
    query = (select(*entities).join(Game, col(Game.id) == Token.game_id)
             .join(Seat, col(Seat.id) == Token.seat_id))
    if decision is not None:
        query = query.outerjoin(Decision, col(Decision.id) == decision)
    return query.where(Token.hash == bindparam("hash"))


_SEAT_LINK = {TokenKind.ACTION: _seat_link(Token.decision_id),
              TokenKind.PAGE: _seat_link(bindparam("decision_id"))}
# The same, loaded afresh into objects the session may hold already (``again``).
_SEAT_LINK_AGAIN = {kind: query.execution_options(populate_existing=True)
                    for kind, query in _SEAT_LINK.items()}
_SEAT_PAGE = _seat_link(None)


def _found_link(row: Any, kinds: tuple[TokenKind, ...]) -> Any:
    if row is None or not is_live(row[0], *kinds):
        raise NotFound(gettext("this link is unknown or no longer valid"))
    return row


def live_seat_link(s: Session, raw: str, kind: TokenKind, decision_id: int | None = None,
                   again: bool = False) -> tuple[Token, Game, Seat, Decision | None]:
    """The live ``kind`` token (``action`` or ``page``) behind ``raw`` with its game, its
    seat and a decision (open or not; None if there is none): the link's own for an
    ``action`` token, else ``decision_id``. A friendly NotFound for a link that is not
    live. In a writing transaction, lock the game first (``lock_game_row``). ``again``:
    the session may hold these rows already, read before the lock (``read_then_write``):
    load them afresh."""
    row = s.exec((_SEAT_LINK_AGAIN if again else _SEAT_LINK)[kind], params={"hash": hash_token(raw),
                                           "decision_id": decision_id}).first() \
        if well_formed(raw) else None
    token, game, seat, decision = _found_link(row, (kind,))
    return token, game, seat, decision


# The same as one Core query (``read_seat_link``): every column of the token, its game, its
# seat and the decision (NULLs: none), in that order.
_LINK_MODELS = (Token, Game, Seat, Decision)
_LINK_LOADERS = tuple(RowLoader(m) for m in _LINK_MODELS)


def _core_link(decision: Any) -> Any:
    tables = [table_of(m) for m in _LINK_MODELS]
    token, game, seat, found = tables
    return (sa_select(*(c for t in tables for c in t.columns))
            .select_from(token.join(game, game.c.id == token.c.game_id)
                         .join(seat, seat.c.id == token.c.seat_id)
                         .outerjoin(found, found.c.id == decision))
            .where(token.c.hash == bindparam("hash")))


_CORE_LINK = {TokenKind.ACTION: _core_link(table_of(Token).c.decision_id),
              TokenKind.PAGE: _core_link(bindparam("decision_id"))}


def read_seat_link(conn: Connection, raw: str, kind: TokenKind,
                   decision_id: int | None = None
                   ) -> tuple[Token, Game, Seat, Decision | None]:
    """``live_seat_link`` for the read before a write lock (``LateLock.connection``): one
    Core query, its rows made into detached objects as a query would load them (every
    column loaded, no history), for ``link_unchanged`` to bring into the writing session
    as they are. The ORM's query and session cost about half again as much."""
    row = conn.execute(_CORE_LINK[kind], {"hash": hash_token(raw),
                                          "decision_id": decision_id}).first() \
        if well_formed(raw) else None
    objects: list[Any] = []
    if row is not None:
        at = 0
        for loader in _LINK_LOADERS:
            values = row[at:at + len(loader.keys)]
            at += len(loader.keys)
            # (no such decision: the outer join's NULLs)
            objects.append(None if values[loader.pk] is None else loader.detached(values))
    token, game, seat, decision = _found_link(objects or None, (kind,))
    return token, game, seat, decision


# What may have changed since a link was read before the write lock: its game's version
# and page_version, its token's revocation and its decision's closing (see
# ``link_unchanged``), with what the move then needs: every seat of the game and the
# game's open decisions (a row for each seat and each of its open decisions, in order):
# one statement instead of three. Core: nothing is loaded as an object.
_TOKEN_T, _GAME_T, _DECISION_T = table_of(Token), table_of(Game), table_of(Decision)
_SEAT_T = table_of(Seat)
_OPEN_T = _DECISION_T.alias("open_decision")
_SEAT_ROWS, _DECISION_ROWS = RowLoader(Seat), RowLoader(Decision)


def _link_now(decision: Any) -> Any:
    return (sa_select(_GAME_T.c.version, _GAME_T.c.page_version, _TOKEN_T.c.revoked_at,
                      _DECISION_T.c.closed_at, *_SEAT_T.columns, *_OPEN_T.columns)
            .select_from(_TOKEN_T.join(_GAME_T, _GAME_T.c.id == _TOKEN_T.c.game_id)
                         .outerjoin(_DECISION_T, _DECISION_T.c.id == decision)
                         .join(_SEAT_T, _SEAT_T.c.game_id == _GAME_T.c.id)
                         .outerjoin(_OPEN_T, (_OPEN_T.c.seat_id == _SEAT_T.c.id)
                                    & (_OPEN_T.c.game_id == _GAME_T.c.id)
                                    & _OPEN_T.c.closed_at.is_(None)))
            .where(_TOKEN_T.c.hash == bindparam("hash"))
            .order_by(_SEAT_T.c.position, _OPEN_T.c.id))


_LINK_NOW = {TokenKind.ACTION: _link_now(_TOKEN_T.c.decision_id),
             TokenKind.PAGE: _link_now(bindparam("decision_id"))}


def link_unchanged(s: Session, kind: TokenKind, token: Token, game: Game, seat: Seat,
                   decision: Decision) -> tuple[list[Seat], list[Decision]] | None:
    """Whether a seat's link as ``live_seat_link`` read it in an earlier transaction (a
    read before the write lock) is still what the database holds, read under the game's
    lock (``lock_game_row``) in one query: the game's ``version`` and ``page_version``
    (which every committed change to the game, its seats and its decisions moves: see
    ``pbem.models``), the token not revoked since, the decision (``decision``: the link's
    own or the one a page's form names) not closed since. If so, the four objects join
    ``s`` as they were read (persistent, no second load), and the same query's game's
    seats in order and its open decisions are returned, as ``seats_of`` and
    ``playing.open_decisions`` would give them (``seat`` and ``decision`` among them, as
    the session's identity map would give them; the others loaded afresh); else None,
    and the caller reads them again."""
    rows = s.connection().execute(_LINK_NOW[kind], {"hash": token.hash,
                                                    "decision_id": decision.id}).all()
    if not rows or tuple(rows[0][:4]) != (game.version, game.page_version,
                                          token.revoked_at, decision.closed_at):
        return None
    s.add_all((token, game, seat, decision))
    seats: list[Seat] = []
    opened: list[Decision] = []
    at = 4 + len(_SEAT_ROWS.keys)
    for row in rows:
        if not seats or seats[-1].id != row[4]:
            seats.append(_SEAT_ROWS.in_session(s, row[4:at]))
        if row[at] is not None:  # (an open decision of that seat)
            opened.append(_DECISION_ROWS.in_session(s, row[at:]))
    opened.sort(key=lambda d: d.id or 0)
    return seats, opened


# What a one-click link's confirmation page shows, in one Core query: no session, no
# objects (see ``confirm_link``).
_CONFIRM_LINK = (
    sa_select(_TOKEN_T.c.kind, _TOKEN_T.c.revoked_at, _TOKEN_T.c.action,
              _TOKEN_T.c.decision_id, _GAME_T.c.id.label("game_id"), _GAME_T.c.engine,
              _GAME_T.c.state, _SEAT_T.c.id.label("seat_id"), _SEAT_T.c.name,
              _SEAT_T.c.language, _SEAT_T.c.position,
              _DECISION_T.c.id.label("found_decision"), _DECISION_T.c.closed_at,
              _DECISION_T.c.closed_by)
    .select_from(_TOKEN_T.join(_GAME_T, _GAME_T.c.id == _TOKEN_T.c.game_id)
                 .join(_SEAT_T, _SEAT_T.c.id == _TOKEN_T.c.seat_id)
                 .outerjoin(_DECISION_T, _DECISION_T.c.id == _TOKEN_T.c.decision_id))
    .where(_TOKEN_T.c.hash == bindparam("hash")))


@dataclass(frozen=True, slots=True)
class ConfirmLink:
    """A live one-click link as its confirmation page needs it (``confirm_link``): the
    token's ``action``, and only the columns of its game, seat and decision that the page
    reads, under their rows' attribute names."""

    action: dict[str, Any] | None
    game: Any  # id, engine, state (as a Game row has them)
    seat: Any  # id, name, language, position (as a Seat row)
    decision: Any  # id, closed_at, closed_by (as a Decision row); None: no such row


def confirm_link(conn: Connection, raw: str) -> ConfirmLink:
    """The live ``action`` token behind ``raw`` for its confirmation page, in one Core
    query on ``conn`` (a ``read_connection``: a page that only reads loads no objects), or
    a friendly NotFound for a link that is not live (as ``live_seat_link``)."""
    row = conn.execute(_CONFIRM_LINK, {"hash": hash_token(raw)}).first() \
        if well_formed(raw) else None
    if row is None or row.revoked_at is not None or row.kind != TokenKind.ACTION:
        raise NotFound(gettext("this link is unknown or no longer valid"))
    decision = None if row.found_decision is None else SimpleNamespace(
        id=row.found_decision, closed_at=row.closed_at, closed_by=row.closed_by)
    return ConfirmLink(row.action,
                       SimpleNamespace(id=row.game_id, engine=row.engine, state=row.state),
                       SimpleNamespace(id=row.seat_id, name=row.name, language=row.language,
                                       position=row.position),
                       decision)


def live_seat_page(s: Session, raw: str,
                   *kinds: TokenKind) -> tuple[Token, Game, Seat]:
    """The live token of one of ``kinds`` behind ``raw`` with its game and its seat (one
    query), or a friendly NotFound."""
    row = s.exec(_SEAT_PAGE, params={"hash": hash_token(raw)}).first() \
        if well_formed(raw) else None
    token, game, seat = _found_link(row, kinds)
    return token, game, seat


_LOCK_GAME_ROW = select(Game.id).where(Game.id == bindparam("game_id")).with_for_update()


def lock_game_row(s: Session, game_id: str) -> None:
    """Lock the game row for this writing transaction before reading anything of the game
    in it: FOR UPDATE on PostgreSQL, whose later statements then see every move
    committed before the lock was granted; nothing on SQLite, where the transaction's
    BEGIN IMMEDIATE has taken the database's write lock already."""
    if is_postgres():
        s.execute(_LOCK_GAME_ROW, {"game_id": game_id})


# the state a take-back restores is read only by one (services.takeback)
_GAME = select(Game).where(Game.id == bindparam("game_id")).options(
    defer(Game.undo_state))  # type: ignore[arg-type]
_GAME_FOR_UPDATE = _GAME.with_for_update()


def lock_game(s: Session, game_id: str, lock: bool = True) -> Game:
    """Load the game row, locked for this transaction (FOR UPDATE on PostgreSQL; on SQLite
    the BEGIN IMMEDIATE of every writing transaction already serialises writers), or
    with ``lock=False`` only read (as a ``read_scope`` must)."""
    query = _GAME_FOR_UPDATE if lock and is_postgres() else _GAME
    game = s.exec(query, params={"game_id": game_id}).first()
    if game is None:
        raise NotFound(gettext("no such game"))
    return game


def admin_game(s: Session, raw: str, lock: bool = True) -> Game:
    token = live_token(s, raw, TokenKind.ADMIN)
    return lock_game(s, token.game_id, lock)


def host_address(s: Session, raw: str) -> str:
    """The address a host link was sent to (lower case; "" for a link from before links
    named it): the person who presses the buttons of that host page."""
    return str((live_token(s, raw, TokenKind.ADMIN).action or {}).get("address", "")).lower()


def load_state(mod: EngineGame, game: Game) -> Any:
    """The engine state of a game that has started (WrongState before that)."""
    if game.state is None:
        raise WrongState(gettext("the game is not running"), game_id=game.id)
    return mod.from_json(json.loads(game.state))


_SEATS = select(Seat).where(Seat.game_id == bindparam("game_id")).order_by(col(Seat.position))


def seats_of(s: Session, game_id: str) -> list[Seat]:
    return list(s.exec(_SEATS, params={"game_id": game_id}))


# ---------------------------------------------------------------------- deadline and reminder times


REMIND_BEFORE_QUIET = timedelta(hours=1)  # a reminder due in quiet hours goes this early


def stops_of(s: Session, game: Game, seat: Seat) -> Stops:
    """When the seat's clock stands still: its address's quiet hours and the weekends
    (in the address's zone, else the seat's), as far as the game's policy stops clocks
    for them; the quiet hours themselves in ``quiet`` either way, for the reminders."""
    return clock_stops(s.connection(), [seat], game.policy.pause_weekends)[0]


def clock_start(seat: Seat, now: datetime) -> datetime:
    """When the seat's clock starts again from ``now``: at the end of its vacation."""
    return max(now, seat.vacation_until) if seat.vacation_until else now


def deadline_for(game: Game, seat: Seat, now: datetime, stops: Stops | None = None,
                 seconds: float | None = None) -> datetime:
    """Now plus the time the seat has for a decision (the time per decision, or in a time
    bank game what its clock has left: ``bank_of``; or ``seconds`` when given), counted
    from the end of the seat's vacation, on a clock that stands still in the seat's quiet
    hours and at weekends where the game's policy says so (``stops``: ``stops_of`` the
    seat)."""
    start = clock_start(seat, now)
    if seconds is None:
        seconds = bank_of(game, seat) if game.policy.banked \
            else game.policy.hours_per_decision * 3600
    if stops is None:
        return start + timedelta(seconds=seconds)
    return advance(start, seconds, game.policy.running(stops))


def bank_of(game: Game, seat: Seat) -> float:
    """The seconds on the seat's clock in a time bank game as its last decision closed
    (the whole reserve before its first)."""
    if seat.bank_left is None:
        return game.policy.bank_days * 86400
    return max(0.0, seat.bank_left)


def next_reminder(game: Game, deadline: datetime, now: datetime,
                  stops: Stops | None = None) -> datetime | None:
    """The earliest reminder time still ahead (reminders are hours before the deadline).
    A reminder that would fall in the seat's quiet hours (``stops``) comes an hour before
    they begin instead, never swallowed by them."""
    ahead = []
    for hours in game.policy.reminder_hours:
        at = deadline - timedelta(hours=hours)
        span = quiet_span(stops, at) if stops is not None else None
        if span is not None:
            at = span[0] - REMIND_BEFORE_QUIET
        if at > now:
            ahead.append(at)
    return min(ahead) if ahead else None


# --------------------------------------------------------------------------- the event log


def log_events(s: Session, game: Game, events: list[Event]) -> None:
    first = game.event_seq
    game.event_seq = first + len(events)
    insert_events(s, game.id, first, events)


# Table (Core) inserts, built once: an ORM-enabled insert takes SQLAlchemy's "ORM bulk"
# path, several times the cost of the statement itself; these rows are never loaded as
# objects by the transaction that writes them (the game and seat rows they point to are
# already in the database).
_INSERT_EVENTS = insert(table_of(EventLog))
_INSERT_OUTBOX = insert(table_of(Outbox))


def insert_events(s: Session, game_id: str, first_seq: int, events: list[Event]) -> None:
    """Append events to the log in one statement (Core: many small rows, no ORM cost)."""
    if not events:
        return
    now = utcnow()
    s.connection().execute(_INSERT_EVENTS, [
        {"game_id": game_id, "seq": first_seq + i, "kind": ev.kind, "actor": ev.actor,
         "data": dict(ev.data), "created_at": now,
         "visible_to": None if ev.visible_to is None else list(ev.visible_to)}
        for i, ev in enumerate(events, 1)])


def log_notice(s: Session, game: Game, kind: str, actor: int | None,
               data: dict[str, Any]) -> None:
    """A server event (timeout, pause, ...) in the game log, narrated like engine events."""
    log_events(s, game, [Event(kind, actor, data)])


def notice_all(s: Session, game: Game, kind: str, actor: int | None,
               data: dict[str, Any]) -> None:
    log_notice(s, game, kind, actor, data)
    queue_emails(s, game, seats_of(s, game.id), EmailTemplate.NOTICE, {"headline": kind},
                 links=PAGE_LINK)


# --------------------------------------------------------------------------- the outbox


# The link of most emails: the seat's game page (a link spec: see ``queue_email``).
PAGE_LINK: dict[str, dict[str, Any]] = {"page": {"kind": TokenKind.PAGE}}


def queue_email(s: Session, game: Game, seat: Seat, template: EmailTemplate,
                context: dict[str, Any], links: dict[str, dict[str, Any]] | None = None,
                key: str | None = None, to: tuple[str, str, str] | None = None,
                delay: timedelta | None = None) -> None:
    """Write one email to the outbox; links are minted as tokens only when it is sent
    (``links``: name -> spec, a ``kind`` of token and what the token names: see
    ``pbem.mail.compose.mint_links``).
    ``to`` (name, address, language) sends it somewhere other than the seat's player;
    ``delay`` holds it back that long (it is checked again when it is due: a decision
    closed by then is not mailed). An email over the sending caps is written as ``held``
    instead (see ``_hold_reason``).
    """
    if to is None and not may_mail(game, seat, template):
        return  # someone who has not joined gets nothing but their invitation
    name, addr, language = to or (seat.name, seat.email, seat.language)
    if to is None:  # the same news to the seat's player by every other channel
        held_for = queue_notices(s, game, [seat], template, context).get(seat.id or 0)
        if held_for is not None:
            delay = max(delay or held_for, held_for)
    held = _hold_reason(s, game.id, addr.lower(), template)
    s.connection().execute(_INSERT_OUTBOX, [
        _outbox_row(game, seat, template, context, links, key, (name, addr, language), held,
                    delay, utcnow())])
    if not held and _due_soon(s, delay):
        wake_deliverer(s)


def queue_emails(s: Session, game: Game, seats: list[Seat], template: EmailTemplate,
                 context: dict[str, Any], links: dict[str, dict[str, Any]] | None = None
                 ) -> None:
    """``queue_email`` to each of ``seats`` (the same email, each to its player), in one
    statement after one query for the sending caps of all of them (a notice to every
    player costs two round trips, not two per player). Held exactly as one by one."""
    seats = [seat for seat in seats if may_mail(game, seat, template)]
    if not seats:
        return
    if template in INVITE_TEMPLATES:  # their own cap (per address and day): one by one
        for seat in seats:
            queue_email(s, game, seat, template, context, links)
        return
    delays = queue_notices(s, game, seats, template, context)
    helds = _hold_reasons(s, game.id, [seat.email.lower() for seat in seats], template)
    now = utcnow()
    s.connection().execute(_INSERT_OUTBOX, [
        _outbox_row(game, seat, template, context, links, None,
                    (seat.name, seat.email, seat.language), held, delays.get(seat.id or 0),
                    now)
        for seat, held in zip(seats, helds, strict=True)])
    if any(held is None and _due_soon(s, delays.get(seat.id or 0))
           for seat, held in zip(seats, helds, strict=True)):
        wake_deliverer(s)


# An email held back at least this long (the take-back's grace, a follow-up's wait) wakes
# no mail loop when it is queued: the loop's pass at the wake-up would find it not yet
# due (its poll sends it once it is; as before, a wake-up made no difference to that).
WAKE_FOR_DELAY_UNDER = timedelta(seconds=1)


def _due_soon(s: Session, delay: timedelta | None) -> bool:
    """Whether queueing an email held back ``delay`` wakes the mail loop at the commit: an
    email due at once (or within WAKE_FOR_DELAY_UNDER) does; a later one only when this
    transaction queued a notice too (on PostgreSQL the notice loop is woken by the
    outbox's NOTIFY). One wake-up less a move on PostgreSQL is one NOTIFY less, whose
    commit takes a lock that every notifying transaction of the database waits for."""
    return delay is None or delay < WAKE_FOR_DELAY_UNDER or bool(
        s.info.get(wake.NOTICES_QUEUED))


def _outbox_row(game: Game, seat: Seat, template: EmailTemplate, context: dict[str, Any],
                links: dict[str, dict[str, Any]] | None, key: str | None,
                to: tuple[str, str, str], held: str | None, delay: timedelta | None,
                now: datetime) -> dict[str, Any]:
    name, addr, language = to
    key = key or f"{template}:{game.id}:{seat.id}:{game.version}:{game.event_seq}"
    return dict(
        game_id=game.id, seat_id=seat.id, to_addr=addr, rcpt=addr.lower(), to_name=name,
        language=language, template=template,
        context={**context, "links": links or {}, "event_seq": game.event_seq,
                 "version": game.version},
        idempotency_key=key, message_id=message_id(key.replace(":", ".")),
        status=OutboxStatus.HELD if held else OutboxStatus.PENDING, last_error=held, attempts=0,
        next_attempt_at=now + delay if delay else now, created_at=now)


def _hold_reason(s: Session, game_id: str, rcpt: str, template: EmailTemplate) -> str | None:
    """Why an email must wait instead of going out: nobody can use the server to flood
    an address (turn emails are never held; they come from the player's own game).
    A held notice is summarised in the recipient's next turn email."""
    config = current_app.config
    if template in TURN_TEMPLATES:
        return None
    if template in INVITE_TEMPLATES:
        if recent_emails(s, Outbox.rcpt == rcpt, INVITE_TEMPLATES, timedelta(days=1)) >= \
                int(config["INVITE_LIMIT_PER_ADDRESS"]):
            return mark("not sent: this address had as many invitations as one day allows")
        return None
    return _hold_reasons(s, game_id, [rcpt], template)[0]


_HELD_FOR_ADDRESS = mark("held: this address had as many notices as one hour allows; "
                         "summarised in the next turn email")
_HELD_FOR_GAME = mark("held: this game sent as many notices as one hour allows; "
                      "summarised in the next turn email")


def _hold_reasons(s: Session, game_id: str, rcpts: list[str],
                  template: EmailTemplate) -> list[str | None]:
    """``_hold_reason`` of an email of ``template`` (neither a turn email nor an
    invitation) to each of ``rcpts`` of one game, queued in this order: one query counts
    the recent notices to these addresses and in the game, and each email not held
    counts for the ones after it, as if each were queued and checked in turn."""
    if template in TURN_TEMPLATES:
        return [None] * len(rcpts)
    config = current_app.config
    per_address, per_game = (int(config["NOTICE_LIMIT_PER_ADDRESS"]),
                             int(config["NOTICE_LIMIT_PER_GAME"]))
    to_address = dict.fromkeys(rcpts, 0)
    in_game = 0
    for rcpt, game, count in s.connection().execute(_recent_notices(len(to_address)), {
            "game_id": game_id, "since": utcnow() - timedelta(hours=1),
            **{f"rcpt{i}": r for i, r in enumerate(to_address)}}):
        if rcpt in to_address:
            to_address[rcpt] += count
        if game == game_id:
            in_game += count
    reasons: list[str | None] = []
    for rcpt in rcpts:
        if to_address[rcpt] >= per_address:
            reasons.append(_HELD_FOR_ADDRESS)
        elif in_game >= per_game:
            reasons.append(_HELD_FOR_GAME)
        else:  # this one goes out: it counts for the next ones
            reasons.append(None)
            to_address[rcpt] += 1
            in_game += 1
    return reasons


# Statements of every queued email, built once: SQLAlchemy memoises a statement's cache
# key on the statement object, so a prebuilt one is neither built nor keyed again (most
# of the cost of queueing an email when each was built anew).
# Emails that went or will go out.
_SENDS = (OutboxStatus.PENDING, OutboxStatus.SENDING, OutboxStatus.SENT)


@functools.cache
def _recent_notices(addresses: int) -> Select[str, str | None, int]:
    """The notices (not turn emails) queued since ``since`` to ``addresses`` addresses
    (``rcpt0``, ``rcpt1``...) or in a game, counted per address and game (the counts of
    ``_hold_reasons``), in one query. One statement object per number of addresses; the
    constant lists are bound one value each (an IN of a Python list would be expanded
    anew at every execution)."""
    rcpt, game_id = col(Outbox.rcpt), col(Outbox.game_id)
    return (sa_select(rcpt, game_id, func.count())
            .where(or_(*(rcpt == bindparam(f"rcpt{i}") for i in range(addresses)),
                       game_id == bindparam("game_id")),
                   col(Outbox.created_at) >= bindparam("since"),
                   col(Outbox.status).in_([literal(x) for x in _SENDS]),
                   col(Outbox.template).not_in([literal(x) for x in sorted(TURN_TEMPLATES)]))
            .group_by(rcpt, game_id))


def recent_emails(s: Session, where: Any, templates: frozenset[EmailTemplate] | None,
                  within: timedelta, exclude: frozenset[EmailTemplate] = frozenset(),
                  other_than: int | None = None) -> int:
    """Emails matching ``where`` queued within ``within`` that went or will go out (but
    for the row ``other_than``, the one being sent)."""
    query = select(func.count()).select_from(Outbox).where(
        where, Outbox.created_at >= utcnow() - within, Outbox.id != (other_than or 0),
        col(Outbox.status).in_(_SENDS))
    if templates is not None:
        query = query.where(col(Outbox.template).in_(templates))
    if exclude:
        query = query.where(col(Outbox.template).not_in(exclude))
    return s.exec(query).one()


# session.info: this transaction has woken the deliverer already (one NOTIFY is enough:
# PostgreSQL delivers a transaction's identical notifications once, at commit).
_WOKEN = "pbem.deliverer_woken"


# Set when a transaction that queued mail commits in this process: a mail loop running in
# the same process on a database without a wake folder (an in-memory SQLite) sends at
# once instead of at its next poll. (A loop with a wake folder is rung by its socket, in
# this process as in any other: ``pbem.wake``.)
MAIL_QUEUED = threading.Event()


def wake_deliverer(s: Session) -> None:
    """Wake the clock's mail loop when this transaction commits: PostgreSQL NOTIFY is
    transactional; on SQLite the mail loops listening on the database's wake folder are
    rung after the commit (``pbem.wake``), and ``MAIL_QUEUED`` is set."""
    if s.info.get(_WOKEN) or s.get_transaction() is None:
        return
    if is_postgres():
        s.execute(text(f"NOTIFY {OUTBOX_CHANNEL}"))
        s.info[_WOKEN] = "notified"
    else:
        s.info[_WOKEN] = "at commit"


def wake_bots(s: Session) -> None:
    """Wake the bot workers when this transaction commits (it opened a decision a bot
    plays): they read when the next bot's move is due and wait until then. PostgreSQL:
    a NOTIFY on ``wake.BOTS_CHANNEL``, once a transaction; SQLite: a ring after the
    commit (``pbem.wake``)."""
    if s.info.get(wake.BOTS_QUEUED) or s.get_transaction() is None:
        return
    if is_postgres():
        s.execute(text(f"NOTIFY {wake.BOTS_CHANNEL}"))
        s.info[wake.BOTS_QUEUED] = "notified"
    else:
        s.info[wake.BOTS_QUEUED] = "at commit"


@event.listens_for(Session, "after_commit")
def _mail_queued(session: Session) -> None:
    """Ring the loops whose work this transaction queued, now that it is committed (a
    session hook, instead of a listener added per transaction: adding one costs more
    than the hook's check at every commit)."""
    mail = session.info.get(_WOKEN) == "at commit"
    notices = session.info.get(wake.NOTICES_QUEUED)
    bots = session.info.get(wake.BOTS_QUEUED) == "at commit"
    if not (mail or notices or bots):
        return
    url = session.get_bind().engine.url
    if mail:
        MAIL_QUEUED.set()
        wake.ring(url, wake.MAIL)
    if notices:
        wake.ring(url, wake.NOTICES)
    if bots:
        wake.ring(url, wake.BOTS)


@event.listens_for(Session, "after_transaction_end")
def _forget_woken(session: Session, transaction: Any) -> None:
    """A new transaction wakes the deliverer again, and so does one after a savepoint
    (rolled back, it took its NOTIFY with it)."""
    if transaction.parent is None or transaction.nested:
        session.info.pop(_WOKEN, None)
        session.info.pop(wake.BOTS_QUEUED, None)
        if transaction.parent is None:
            session.info.pop(wake.NOTICES_QUEUED, None)


def dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"), sort_keys=True)
