"""Taking back a move: a player undoes their last decision while no other person has
acted since and nothing it (or the bots' moves after it) did showed anything hidden (a
die, a card drawn or turned up: the game's ``revealed``, ``engine.core.Reveals``), if the
game's policy allows it (``GamePolicy.take_backs``).

A player's move keeps the state before it on the game (``Game.undo_state``, written by
the same statement that stores the new state: ``playing._commit_state``); a bot's move
after it keeps it; anything else (another player's move, a timeout) ends it. Each move
row says what the game's version and last event were before it and whether it showed
anything hidden. A take-back, under the game's lock: the state before the move comes
back (a new version), the move and the bots' moves after it are deleted with their
events, the decisions they opened are closed and the player's is opened again; the log
says "Ann took back ..."; emails about them not yet sent are withdrawn, and whoever was
sent one gets a short correction: seldom, since the emails of the decisions such a move
opens wait a short grace first (``playing.take_back_grace``, TAKEBACK_GRACE_SECONDS).
A seat takes back at most TAKEBACKS_PER_TURN moves in one turn (``reading.undoable``).
The player's clock gets back the time it had when the move was made (``_time_left``).
A take-back and the next person's click on the same game are serialised by its lock
and version: exactly one of them wins.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import bindparam, delete, update
from sqlmodel import Session, col, select

from engine.core import Event
from engine.registry import get_game
from pbem.clocks import running_between
from pbem.db import get_row, read_scope, saved_id, session_scope
from pbem.i18n import mark
from pbem.kinds import EmailTemplate, OutboxStatus, TokenKind
from pbem.models import Decision, EventLog, Game, Move, Outbox, Seat, as_utc, table_of
from pbem.services.playing import open_decisions, sync_decisions
from pbem.services.plumbing import (
    PAGE_LINK,
    live_token,
    lock_game,
    log_events,
    log_notice,
    queue_emails,
    seats_of,
    stops_of,
)
from pbem.services.reading import take_back_offer, undoable
from pbem.services.talk import TALK

WITHDRAWN = mark("withdrawn: the move it told of was taken back")

_MOVE = table_of(Move)
_EVENT = table_of(EventLog)
_SEAT = table_of(Seat)
_DELETE_MOVES = delete(_MOVE).where(_MOVE.c.game_id == bindparam("game_id"),
                                    _MOVE.c.id >= bindparam("first"))
_DELETE_EVENTS = delete(_EVENT).where(_EVENT.c.game_id == bindparam("game_id"),
                                      _EVENT.c.seq > bindparam("seq"))
_TOLD_BACK = (update(_SEAT).where(_SEAT.c.game_id == bindparam("of_game"),
                                  _SEAT.c.seen_event_seq > bindparam("seq"))
              .values(seen_event_seq=bindparam("seq")))


def take_back(page_raw: str) -> str:
    """Take back the last move of the seat behind game page link ``page_raw``; returns
    the game's id. WrongState says why not (another person acted, the move showed a die
    or a card, the host does not allow it, ...)."""
    with session_scope() as s:
        token = live_token(s, page_raw, TokenKind.PAGE)
        game = lock_game(s, token.game_id)
        seat = get_row(s, Seat, token.seat_id)
        found = undoable(s, game, seat)
        move = found.move
        mod = get_game(game.engine)
        assert game.undo_state is not None and move.version is not None
        assert move.event_seq is not None
        before = mod.from_json(json.loads(game.undo_state))
        conn = s.connection()
        # what the table said meanwhile stays, told again after the take-back
        talk = [Event(e.kind, e.actor, e.data, None if e.visible_to is None
                      else tuple(e.visible_to))
                for e in s.exec(select(EventLog).where(EventLog.game_id == game.id,
                                                       EventLog.seq > move.event_seq,
                                                       EventLog.kind == TALK)
                                .order_by(col(EventLog.seq)))]
        conn.execute(_DELETE_MOVES, {"game_id": game.id, "first": move.id})
        conn.execute(_DELETE_EVENTS, {"game_id": game.id, "seq": move.event_seq})
        conn.execute(_TOLD_BACK, {"of_game": game.id, "seq": move.event_seq})
        told = _withdraw_emails(s, game.id, move)
        game.state, game.undo_state = game.undo_state, None
        game.version += 1
        game.event_seq = move.event_seq
        seats = seats_of(s, game.id)
        log_notice(s, game, "took_back", seat.position,
                   {"action": move.action, "bots": len(found.bots)})
        log_events(s, game, talk)
        left = _time_left(s, game, seat, move)
        if left is not None and game.policy.banked:
            seat.bank_left = left
        sync_decisions(s, game, mod, before, seats, follow_up=seat.id,
                       known=open_decisions(s, game.id),
                       time_left=None if left is None else {saved_id(seat): left})
        corrected = [x for x in seats if x.id in told and x.id != seat.id]
        if corrected:
            queue_emails(s, game, corrected, EmailTemplate.NOTICE,
                         {"headline": "took_back"}, links=PAGE_LINK)
        return game.id


def _time_left(s: Session, game: Game, seat: Seat, move: Move) -> float | None:
    """The time the seat's clock had left when it made ``move``, which it gets back: the
    clock stood still while the move stood (another's was running), as on a chess clock.
    Neither a fresh time per decision nor a time bank's increment is won by taking a
    move back."""
    old = s.get(Decision, move.decision_id)
    if old is None or old.deadline_at is None:
        return None
    running = game.policy.running(stops_of(s, game, seat))
    return running_between(as_utc(move.created_at), as_utc(old.deadline_at), running)


def take_back_offer_for(page_raw: str) -> dict[str, Any] | None:
    """For the page that says a move was recorded: the move the seat behind
    ``page_raw`` may take back now, or None (a read)."""
    with read_scope() as s:
        token = live_token(s, page_raw, TokenKind.PAGE)
        return take_back_offer(s, get_row(s, Game, token.game_id),
                               get_row(s, Seat, token.seat_id))


def _withdraw_emails(s: Session, game_id: str, move: Move) -> set[int]:
    """Withdraw the game's emails queued since ``move`` and not sent yet; the seats that
    were sent one (they get a correction)."""
    told: set[int] = set()
    for row in s.exec(select(Outbox).where(Outbox.game_id == game_id,
                                           col(Outbox.created_at) >= move.created_at,
                                           col(Outbox.status).in_(_LIVE_OR_SENT))):
        if int(row.context.get("version", 0)) <= (move.version or 0):
            continue
        if row.status == OutboxStatus.SENT or row.status == OutboxStatus.SENDING:
            if row.seat_id is not None:
                told.add(row.seat_id)
        else:
            row.status, row.last_error = OutboxStatus.SKIPPED, WITHDRAWN
    return told


_LIVE_OR_SENT = (OutboxStatus.PENDING, OutboxStatus.HELD, OutboxStatus.SENDING,
                 OutboxStatus.SENT)
