"""Playing a decision: one-click links and the game-page form, the move applied under the
game's lock, bots playing their seats, the new state committed with its events, Decision rows
opened and closed, and the decision emails with their one-click choices."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from flask import current_app
from flask_babel import gettext
from sqlalchemy import bindparam, insert, update
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import Session, select

from engine.core import Action, EngineError, Event
from engine.core import Game as EngineGame
from engine.registry import get_game
from pbem import localize
from pbem.db import session_scope
from pbem.errors import (
    AlreadyRecorded,
    Conflict,
    IllegalMove,
    InvalidInput,
    NotFound,
    TurnOver,
    WrongState,
)
from pbem.models import Decision, Game, Move, Seat, utcnow
from pbem.services._plumbing import (
    _deadline_for,
    _dump,
    _insert_events,
    _lock_game,
    _next_reminder,
    _queue,
    _seats,
    _token,
)
from pbem.services.reading import _card_lookup
from pbem.tokens import mint

# Bot moves played in one transaction after a move. A game of heuristic bots ends well
# within it; bots that only play the timeout defaults never end a game, so when every seat
# is on such a bot the rest waits for the deadlines instead of spinning in one sweep.
BOT_MOVES_PER_PLAY = 1000


@dataclass(frozen=True)
class Outcome:
    game_id: str
    seat_position: int
    action: dict
    page_token: str  # a fresh game-page link for the response page
    again: bool  # the same seat must decide again at once
    finished: bool
    names: tuple[str, ...] = ()  # players by seat
    waiting: tuple[tuple[int, str], ...] = ()  # (seat, decision kind) now open
    winners: tuple[int, ...] = ()
    cards: dict | None = None  # printed data of the cards the action names
    language: str = "en"  # the player's
    engine: str = ""  # the game's engine name (which templates narrate it)

    def card(self, cid: str) -> dict[str, Any]:
        return (self.cards or {}).get(cid, {"id": cid, "name": cid})


def describe_token(raw: str) -> dict[str, Any]:
    """What a one-click link would do, for its confirmation page (changes nothing)."""
    with session_scope() as s:
        token = _token(s, raw, "action")
        game = s.get(Game, token.game_id)
        decision = s.get(Decision, token.decision_id)
        seat = s.get(Seat, token.seat_id)
        info = {"game": game, "seat": seat, "decision": decision, "action": token.action,
                "card": _card_lookup(game, seat.language)}
        if decision.closed_at is not None:
            info["closed"] = _closed_reason(s, decision, seat)
        return info


def act_by_token(raw: str) -> Outcome:
    """The POST behind a one-click link: play the action bound to the token."""
    with session_scope() as s:
        token = _token(s, raw, "action")
        game, seat, decision = _locked_decision(s, token.game_id, token.seat_id,
                                                token.decision_id)
        return _act(s, game, seat, decision, Action.from_json(token.action), "player")


def act_from_page(page_raw: str, decision_id: Any,
                  read_action: Callable[[dict[str, Any], list[Action]], Action]) -> Outcome:
    """The POST of the full decision form on a seat's game page, in one transaction:
    the decision is checked under the game's lock (a second submission says "already
    recorded"), then ``read_action(view, legal)`` turns the form into an action."""
    with session_scope() as s:
        token = _token(s, page_raw, "page")
        game, seat, decision = _locked_decision(s, token.game_id, token.seat_id,
                                                _decision_id(decision_id))
        mod = get_game(game.engine)
        state = mod.from_json(json.loads(game.state))
        legal = mod.legal_actions(state, decision.position)
        try:
            action = read_action(mod.view(state, decision.position), legal)
        except EngineError as exc:
            raise IllegalMove(exc.code, decision.kind) from None
        except ValueError:
            raise IllegalMove("action/missing", decision.kind) from None
        return _act(s, game, seat, decision, action, "player", state)


def _decision_id(value: Any) -> int:
    try:
        decision_id = int(value)
    except (TypeError, ValueError):
        raise InvalidInput(gettext("the form is missing its decision; reload the page")) from None
    if not 0 < decision_id < 2**31:  # a database integer
        raise NotFound(gettext("this decision does not belong to this link"))
    return decision_id


def _open_decision(s: Session, game_id: str, seat_id: int, decision_id: int) -> Decision:
    decision = s.get(Decision, decision_id)
    if decision is None or decision.game_id != game_id or decision.seat_id != seat_id:
        raise NotFound(gettext("this decision does not belong to this link"))
    if decision.closed_at is not None:
        reason = _closed_reason(s, decision, s.get(Seat, seat_id))
        if reason == "recorded":
            raise AlreadyRecorded(gettext("your choice for this turn is already recorded"),
                                  game_id=game_id, decision_id=decision_id)
        raise TurnOver(gettext("this turn is over"), game_id=game_id, reason=reason)
    return decision


def _locked_decision(s: Session, game_id: str, seat_id: int,
                     decision_id: int) -> tuple[Game, Seat, Decision]:
    """The game (locked for this transaction), the seat, and its decision if still open."""
    game = _lock_game(s, game_id)
    decision = _open_decision(s, game_id, seat_id, decision_id)
    return game, s.get(Seat, seat_id), decision


def _act(s: Session, game: Game, seat: Seat, decision: Decision, action: Action,
         source: str, state: Any = None) -> Outcome:
    """A player's move on their open decision of the locked game (``state``: the game's
    state, if the caller has read it already)."""
    game_id, seat_id = game.id, seat.id
    if game.paused_at is not None:
        raise WrongState(gettext("the host has paused the game; try again when it resumes"),
                         game_id=game_id)
    if source == "player":
        seat.timeouts_in_row = 0
    opened = _play(s, game, seat, decision, action, source, state)
    again = any(d.seat_id == seat_id for d in opened)
    mod, state = get_game(game.engine), s.info["pbem.state"]
    result = mod.result(state)
    card = localize.lookup(mod, state, localize.translation_for(mod, state, seat.language))
    # every word the action names (a card, a place, a resource...), printed for the page
    named = {w for _, v in action.args for w in (v if isinstance(v, tuple) else (v,))
             if isinstance(w, str)}
    return Outcome(game_id, seat.position, action.to_json(), mint(s, "page", game_id, seat_id),
                   again, game.status == "finished",
                   names=tuple(x.name for x in s.info["pbem.seats"]),
                   waiting=tuple((d.seat, d.kind) for d in mod.pending(state)),
                   winners=tuple(result.winners) if result else (),
                   cards={c: card(c) for c in named}, language=seat.language,
                   engine=game.engine)


def _play(s: Session, game: Game, seat: Seat, decision: Decision, action: Action,
          source: str, state: Any = None) -> list[Decision]:
    """Apply one move to the locked game, then let bots play their seats; returns the
    decisions opened for people (their emails are queued). The new state and the seats
    are left in ``s.info`` for the caller's answer."""
    mod = get_game(game.engine)
    if state is None:
        state = mod.from_json(json.loads(game.state))
    try:
        state, events = mod.apply(state, seat.position, action)
    except EngineError as exc:
        raise IllegalMove(exc.code, decision.kind) from None
    _insert_move(s, game.id, decision.id, seat.position, action, source)
    decision.closed_at, decision.closed_by = utcnow(), source
    _commit_state(s, game, mod, state, events)
    seats = _seats(s, game.id)
    # A player who decides again at once sees it on the page of this move (see FOLLOW_UP).
    follow_up = seat.id if source == "player" else None
    opened = _sync_decisions(s, game, mod, state, seats, follow_up)
    for _ in range(BOT_MOVES_PER_PLAY):  # bots play their seats (see BOT_MOVES_PER_PLAY)
        bot_row = next((d for d in opened if seats[d.position].bot), None)
        if bot_row is None or game.status != "active":
            break
        bot_seat = seats[bot_row.position]
        choice = _bot_choice(game, mod, state, bot_seat)
        state, events = mod.apply(state, bot_seat.position, choice)
        _insert_move(s, game.id, bot_row.id, bot_seat.position, choice, "bot")
        bot_row.closed_at, bot_row.closed_by = utcnow(), "bot"
        _commit_state(s, game, mod, state, events)
        opened = [d for d in opened if d.closed_at is None]
        opened += _sync_decisions(s, game, mod, state, seats, follow_up)
    s.info["pbem.state"], s.info["pbem.seats"] = state, seats
    return [d for d in opened if d.closed_at is None]


# Statements of every move, built once (SQLAlchemy memoises a statement's cache key on
# the statement object: a prebuilt one is neither built nor keyed again).
_INSERT_MOVE = insert(Move.__table__)  # Core: see _plumbing._INSERT_EVENTS
_GAME_TABLE = Game.__table__
_UPDATE_STATE = (update(_GAME_TABLE).where(_GAME_TABLE.c.id == bindparam("game_id"),
                                           _GAME_TABLE.c.version == bindparam("old_version"))
                 .values(version=bindparam("new_version"), state=bindparam("new_state"),
                         event_seq=bindparam("new_event_seq")))
_OPEN_DECISIONS = select(Decision).where(Decision.game_id == bindparam("game_id"),
                                         Decision.closed_at.is_(None))


def _insert_move(s: Session, game_id: str, decision_id: int, position: int, action: Action,
                 source: str) -> None:
    s.connection().execute(_INSERT_MOVE, [{"game_id": game_id, "decision_id": decision_id,
                              "position": position, "action": action.to_json(),
                              "source": source, "created_at": utcnow()}])


def _bot_choice(game: Game, mod: EngineGame, state: Any, seat: Seat) -> Action:
    """What a bot plays for an absent seat: the game's heuristic bot, or the default."""
    if seat.bot == "heuristic":
        rng = random.Random(f"{game.id}:{game.version}")
        return mod.BOTS["heuristic"](state, seat.position, rng)
    return mod.default_action(state, seat.position)


def _closed_reason(s: Session, decision: Decision, seat: Seat) -> str:
    if decision.closed_by == "player":
        return "recorded"
    return decision.closed_by or "closed"


def _commit_state(s: Session, game: Game, mod: EngineGame, state: Any,
                  events: list[Event]) -> None:
    """Store the new state with an optimistic version check (the row is also locked).
    A Core update (the ORM's costs several times more); the game object is brought in
    line by hand, which also cancels an ``event_seq`` still pending from ``_log``."""
    new_version = game.version + 1
    first_seq = game.event_seq
    done = s.connection().execute(_UPDATE_STATE, {
        "game_id": game.id, "old_version": game.version, "new_version": new_version,
        "new_state": _dump(mod.to_json(state)), "new_event_seq": first_seq + len(events)})
    if done.rowcount != 1:
        raise Conflict(gettext("the game changed at the same moment; please try again"))
    set_committed_value(game, "version", new_version)
    set_committed_value(game, "event_seq", first_seq + len(events))
    set_committed_value(game, "state", None)
    s.expire(game, ["state"])  # read back only if someone needs it
    result = mod.result(state)
    _insert_events(s, game.id, first_seq, events)
    if result is not None and game.status == "active":
        game.status = "finished" if result.reason != "abandoned" else "abandoned"
        game.ended_at = utcnow()
        for seat in _seats(s, game.id):
            _queue(s, game, seat, "result", {"result": result.to_json()},
                   links={"page": {"kind": "page"}})


def _sync_decisions(s: Session, game: Game, mod: EngineGame, state: Any,
                    seats: list[Seat], follow_up: int | None = None) -> list[Decision]:
    """Close Decision rows the engine no longer asks for; open rows (and emails) for new ones.
    The email of a decision for seat ``follow_up`` (who has just played, and whose answer
    page shows the new decision at once) waits FOLLOW_UP_MINUTES: it goes out only if the
    player leaves the decision open that long."""
    wanted = {(d.seat, d.kind) for d in mod.pending(state)}
    open_rows = s.exec(_OPEN_DECISIONS, params={"game_id": game.id}).all()
    have = set()
    for row in open_rows:
        if (row.position, row.kind) in wanted:
            have.add((row.position, row.kind))
        else:
            row.closed_at, row.closed_by = utcnow(), "superseded"
    opened = []
    now = utcnow()
    for position, kind in sorted(wanted - have):
        seat = seats[position]
        deadline = _deadline_for(game, seat, now)
        row = Decision(game_id=game.id, seat_id=seat.id, position=position,
                       seq=game.version, kind=kind, deadline_at=deadline,
                       next_reminder_at=_next_reminder(game, deadline, now))
        s.add(row)
        s.flush()
        opened.append(row)
        if not seat.bot:
            delay = None
            if seat.id == follow_up:
                delay = timedelta(minutes=current_app.config["FOLLOW_UP_MINUTES"])
            _queue_decision(s, game, mod, state, seat, row, delay=delay)
    return opened


def _queue_decision(s: Session, game: Game, mod: EngineGame, state: Any, seat: Seat,
                    decision: Decision, reminder: bool = False, key: str | None = None,
                    delay: timedelta | None = None) -> None:
    legal = mod.legal_actions(state, seat.position)
    links = {"page": {"kind": "page"}}
    for i, action in enumerate(mod.email_choices(state, seat.position)):
        links[f"choice{i}"] = {"kind": "action", "decision_id": decision.id,
                               "action": action.to_json(),
                               "effect": mod.choice_effect(state, seat.position, action)}
    _queue(s, game, seat, "decision", {
        "decision_id": decision.id, "kind": decision.kind,
        "deadline": decision.deadline_at.isoformat(),
        "more_choices": len(legal) > len(links) - 1,
        "default": mod.default_action(state, seat.position).to_json(),
        "reminder": reminder,
        "follow_up": delay is not None,  # held back: the player may answer on the page
    }, links=links, key=key or (f"reminder:{decision.id}:{decision.reminders_sent}" if reminder
                                else f"decision:{decision.id}"), delay=delay)
