"""Playing a decision: one-click links and the game-page form, the move applied under the
game's lock, bots playing their seats, the new state committed with its events, Decision rows
opened and closed, and the decision emails with their one-click choices."""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from flask import current_app
from flask_babel import gettext
from sqlalchemy import bindparam, case, func, insert, null, update
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import Session, col, select

from engine.core import Action, Bot, EngineError, Event, Searches, parse_action
from engine.core import Game as EngineGame
from engine.registry import get_game
from pbem import localize
from pbem.clocks import Stops, advance, running_between
from pbem.db import get_row, one_read, read_then_write, saved_id, session_scope
from pbem.errors import (
    AlreadyRecorded,
    Conflict,
    IllegalMove,
    InvalidInput,
    NotFound,
    StaleVersion,
    TurnOver,
    WrongState,
)
from pbem.forms import DB_INT_MAX, parse_int
from pbem.kinds import ClosedBy, EmailTemplate, GameStatus, MoveSource, SeatBot, TokenKind
from pbem.models import (
    Decision,
    Game,
    Move,
    RowLoader,
    Seat,
    page_version_moved,
    table_of,
    utcnow,
)
from pbem.services.plumbing import (
    PAGE_LINK,
    bank_of,
    clock_start,
    confirm_link,
    deadline_for,
    dump_json,
    insert_events,
    link_unchanged,
    live_seat_link,
    live_token,
    load_state,
    lock_game,
    lock_game_row,
    log_events,
    next_reminder,
    notice_all,
    queue_email,
    queue_emails,
    read_seat_link,
    seats_of,
    stops_of,
    wake_bots,
)
from pbem.services.reading import card_lookup, variants_of
from pbem.tokens import hash_token, mint

# Bot moves in a row, with no person's move or timeout between them, that the clock plays
# after its short pause. A game of heuristic bots ends well within it; bots that only play
# the timeout defaults never end a game, so once every seat is on a bot and that many were
# played, each further bot's decision waits a person's time (``bot_due``) instead of the
# clock playing one every few seconds for good.
BOT_MOVES_IN_A_ROW = 1000


@dataclass(frozen=True)
class Outcome:
    game_id: str
    seat_position: int
    action: dict[str, Any]
    page_token: str  # a fresh game-page link for the response page
    again: bool  # the same seat must decide again at once
    finished: bool
    names: tuple[str, ...] = ()  # players by seat
    waiting: tuple[tuple[int, str], ...] = ()  # (seat, decision kind) now open
    winners: tuple[int, ...] = ()
    cards: dict[str, dict[str, Any]] | None = None  # printed data of the cards the action names
    language: str = "en"  # the player's
    engine: str = ""  # the game's engine name (which templates narrate it)
    decision_id: int = 0  # the decision the move closed (its page reads the move back)

    def card(self, cid: str) -> dict[str, Any]:
        return (self.cards or {}).get(cid, {"id": cid, "name": cid})


@dataclass(frozen=True)
class Played:
    """What a move left behind (``play_move``): the game's new state, its seats in order,
    and the decisions it opened (a bot's too: the clock plays those)."""

    state: Any
    seats: list[Seat]
    opened: list[Decision]


def describe_token(raw: str) -> dict[str, Any]:
    """What a one-click link would do, for its confirmation page (changes nothing): the
    ``action`` bound to it, while its decision is open what it costs and brings
    (``effect``) and the ``variants`` the page lets the player choose from instead (see
    ``reading.variants_of``); ``closed`` once the decision has closed."""
    with one_read() as conn:  # one Core query: a page that only reads
        link = confirm_link(conn, raw)
    game, seat, decision = link.game, link.seat, link.decision
    if decision is None:
        raise LookupError(f"the decision of action token {hash_token(raw)[:8]} is missing")
    mod = get_game(game.engine)
    state = load_state(mod, game) if game.state else None
    info: dict[str, Any] = {
        "game": game, "seat": seat, "decision": decision, "action": link.action,
        "card": card_lookup(game, seat.language, state), "effect": {}, "variants": []}
    if decision.closed_at is not None:
        info["closed"] = _closed_reason(decision)
    elif state is not None:
        action = Action.from_json(link.action or {})
        info["effect"] = mod.choice_effect(state, seat.position, action)
        info["variants"] = variants_of(mod, state, seat.position, action)
    return info


def act_by_token(raw: str, choice: str | None = None) -> Outcome:
    """The POST behind a one-click link: play the action bound to the token, or, when its
    confirmation page offers variants of it, the variant ``choice`` names (exactly, in
    the game's notation); anything else is refused and nothing is recorded.

    The write lock is taken late: the link, its game as last committed, the action and
    the move itself are worked out in a read that waits for nobody (a closed turn or a
    wrong choice is refused there); the writing transaction then checks again that the
    link is live and its decision open, and reuses that work only if the game has not
    moved since (its ``version``), else works it out again under the lock. When nothing
    of the link has changed at all (``link_unchanged``: one small query), the rows read
    before the lock are used as they are, not loaded again."""
    with read_then_write() as late:
        token, game, seat, decision = read_seat_link(late.connection(), raw,
                                                     TokenKind.ACTION)
        decision = _open_decision(decision, token.game_id, token.seat_id, token.decision_id)
        mod = get_game(game.engine)
        state = load_state(mod, game)
        action = _chosen(mod, state, seat.position, Action.from_json(token.action or {}),
                         choice)
        seen = game.version
        applied = _try_apply(mod, state, seat.position, action)
        s = late.write()
        lock_game_row(s, token.game_id)
        now = link_unchanged(s, TokenKind.ACTION, token, game, seat, decision)
        if now is not None:
            return act(s, game, seat, decision, action, MoveSource.PLAYER, state, applied,
                       seats=now[0], open_rows=now[1])
        token, game, seat, found = live_seat_link(s, raw, TokenKind.ACTION, again=True)
        decision = _open_decision(found, token.game_id, token.seat_id, token.decision_id)
        if game.version != seen:  # the game moved on meanwhile: decide on its latest state
            state = load_state(mod, game)
            action = _chosen(mod, state, seat.position,
                             Action.from_json(token.action or {}), choice)
            applied = None
        return act(s, game, seat, decision, action, MoveSource.PLAYER, state, applied)


def _try_apply(mod: EngineGame, state: Any, position: int,
               action: Action) -> tuple[Any, list[Event]] | None:
    """The move applied to a state read before the write lock (the engine is pure), or
    None if the engine refuses it there (then it is tried again, and refused with its
    reason, under the lock)."""
    try:
        return mod.apply(state, position, action)
    except EngineError:
        return None


def _chosen(mod: EngineGame, state: Any, position: int, action: Action,
            choice: str | None) -> Action:
    """The action a one-click confirmation names: the link's own, or, when its page
    offered variants, the one ``choice`` names exactly (then a choice is required)."""
    variants = variants_of(mod, state, position, action)
    if not variants:  # the link's own action; form fields cannot change it
        return action
    choice = (choice or "").strip()
    if not choice:
        raise InvalidInput(gettext("choose one of the options first"),
                           reason="choice/missing")
    for v in variants:
        if v["text"] == choice:
            return Action.from_json(v["action"])
    raise InvalidInput(gettext("this link does not offer that choice"), reason="choice/unknown")


def act_from_page(page_raw: str, decision_id: Any, command: str,
                  plan: str | None = None, version: int | None = None) -> Outcome:
    """The POST of the full decision form on a seat's game page: the decision is checked
    (a second submission says "already recorded"), then ``command`` (the form's words in
    the game's notation) must name one legal action in full: nothing is completed or
    guessed. A refusal carries the game's explanation of what was wrong (``explain``,
    optional in the contract). As for a one-click link (``act_by_token``), the words are
    read against the game as last committed before the write lock is taken, and again
    under it only if the game has moved since. ``plan`` (the game's plan notation; None
    or blank: the seat's plan is left as it is): a standing plan set with the move, in
    the same transaction, before it (``_planned``); a plan refused refuses the move.
    ``version`` (the JSON API's act): the game's version the move was chosen on; any
    other is StaleVersion, checked after the decision (a second submission of a move
    says "already recorded" first) and again under the lock."""
    try:
        wanted: int | None = _decision_id(decision_id)
    except InvalidInput:  # said only once the link is known to be live
        wanted = None
    with read_then_write() as late:
        token, game, seat, found = read_seat_link(late.connection(), page_raw, TokenKind.PAGE,
                                                  wanted)
        wanted = _decision_id(decision_id)
        decision = _open_decision(found, token.game_id, token.seat_id, wanted)
        _same_version(game, version)
        mod = get_game(game.engine)
        state, notes = _planned(mod, load_state(mod, game), decision.position, plan,
                                decision.kind)
        action = _parsed(mod, state, decision, command)
        seen = game.version
        applied = _try_apply(mod, state, decision.position, action)
        s = late.write()
        lock_game_row(s, token.game_id)
        now = link_unchanged(s, TokenKind.PAGE, token, game, seat, decision)
        if now is not None:
            return act(s, game, seat, decision, action, MoveSource.PLAYER, state, applied,
                       notes=notes, seats=now[0], open_rows=now[1])
        token, game, seat, found = live_seat_link(s, page_raw, TokenKind.PAGE, wanted,
                                                  again=True)
        decision = _open_decision(found, token.game_id, token.seat_id, wanted)
        _same_version(game, version)
        if game.version != seen:  # the game moved on meanwhile: read the words again
            state, notes = _planned(mod, load_state(mod, game), decision.position, plan,
                                    decision.kind)
            action = _parsed(mod, state, decision, command)
            applied = None
        return act(s, game, seat, decision, action, MoveSource.PLAYER, state, applied,
                   notes=notes)


def _same_version(game: Game, version: int | None) -> None:
    """StaleVersion unless ``version`` is None or the game's version."""
    if version is not None and game.version != version:
        raise StaleVersion("the game has moved on since; read it again",  # API only: English
                           game_id=game.id, version=game.version)


def _planned(mod: EngineGame, state: Any, position: int, plan: str | None,
             kind: str) -> tuple[Any, list[Event]]:
    """``state`` with the seat's standing plan set from ``plan`` (the game's optional
    ``set_plan``), and its events; as it is for None. A plan the game refuses (or a game
    without plans) is IllegalMove with the game's reason (``kind``: the form's)."""
    if plan is None:
        return state, []
    hook = getattr(mod, "set_plan", None)
    if hook is None:
        raise IllegalMove("plan/closed", kind)
    try:
        new, events = hook(state, position, plan)
    except EngineError as exc:
        raise IllegalMove(exc.code, kind, exc.data) from None
    return new, list(events)


def set_plan(page_raw: str, plan: str) -> bool:
    """The plan form of a seat's game page: set (or, for blank ``plan``, clear) the seat's
    standing plan, in one transaction like a move (the game's lock, the state's version
    checked and moved, the page's version moved, the game's events logged), at any
    time while the game runs; no decision opens or closes and nothing is played (the
    take-back of the move before ends, as after any other change). False when nothing
    changed (no plan to clear). IllegalMove (kind ``plan``) with the game's
    reason for a plan it refuses; WrongState for a game not running or paused."""
    with session_scope() as s:
        game, seat = _running_seat(s, page_raw)
        mod = get_game(game.engine)
        state, events = _planned(mod, load_state(mod, game), seat.position, plan, "plan")
        if not events:
            return False
        _commit_state(s, game, mod, state, events, seats_of(s, game.id), played=True)
        return True


MAX_STANDING = 12  # more standing choices than any game offers


def set_standing(page_raw: str, choices: Mapping[str, str]) -> bool:
    """The standing-choices form of a seat's game page (a game with the ``Standing``
    hook): set each ``key`` to its ``value`` (STANDING_OFF: none), all in one
    transaction like ``set_plan``, at any time while the game runs; nothing is played
    and no decision opens or closes (an open one stays open: the player makes it).
    False when nothing changed. IllegalMove (kind ``standing``) with the game's reason
    for a key or value it does not offer, or for a game without standing choices;
    WrongState for a game not running or paused."""
    if not choices or len(choices) > MAX_STANDING:
        raise IllegalMove("standing/none" if not choices else "form/too_long", "standing")
    with session_scope() as s:
        game, seat = _running_seat(s, page_raw)
        return store_standing(s, game, seat, choices)


def _running_seat(s: Session, page_raw: str) -> tuple[Game, Seat]:
    """The game (locked) and seat of a game page's link, for a setting of the seat
    (a plan, standing choices); WrongState for a game not running or paused."""
    token = live_token(s, page_raw, TokenKind.PAGE)
    game = lock_game(s, token.game_id)
    if game.status != GameStatus.ACTIVE:
        raise WrongState(gettext("the game is not running"), game_id=game.id)
    if game.paused_at is not None:
        raise WrongState(gettext("the host has paused the game; try again when it "
                                 "resumes"), game_id=game.id)
    return game, get_row(s, Seat, token.seat_id)


def store_standing(s: Session, game: Game, seat: Seat, choices: Mapping[str, str]) -> bool:
    """Set ``seat``'s standing choices in the locked running ``game`` (the page's form, a
    reply's line): the state and its events stored as for a plan; False when nothing
    changed. IllegalMove (kind ``standing``) for what the game does not offer."""
    mod = get_game(game.engine)
    hook = getattr(mod, "set_standing", None)
    if hook is None:
        raise IllegalMove("standing/closed", "standing")
    state, events = load_state(mod, game), []
    for key, value in choices.items():
        try:
            state, said = hook(state, seat.position, key, value)
        except EngineError as exc:
            raise IllegalMove(exc.code, "standing", exc.data) from None
        events += said
    if not events:
        return False
    _commit_state(s, game, mod, state, events, seats_of(s, game.id), played=True)
    return True


def _parsed(mod: EngineGame, state: Any, decision: Decision, command: str) -> Action:
    """The one legal action ``command`` names in full, or IllegalMove with the game's
    explanation."""
    if not command.strip():
        raise IllegalMove("action/missing", decision.kind)
    try:
        return parse_action(command, mod.legal_actions(state, decision.position), exact=True)
    except EngineError as exc:
        explain = getattr(mod, "explain", None)
        detail = explain(state, decision.position, command) if explain else {}
        raise IllegalMove(exc.code, decision.kind, detail) from None


def _decision_id(value: Any) -> int:
    return parse_int(value, 1, DB_INT_MAX,
                     gettext("the form is missing its decision; reload the page"))


def _open_decision(decision: Decision | None, game_id: str, seat_id: int | None,
                   decision_id: int | None) -> Decision:
    """``decision`` if it is the open decision ``decision_id`` of that seat of that game;
    else NotFound, or for a closed one AlreadyRecorded (the player's own move) or
    TurnOver."""
    if decision is None or decision.game_id != game_id or decision.seat_id != seat_id:
        raise NotFound(gettext("this decision does not belong to this link"))
    if decision.closed_at is not None:
        reason = _closed_reason(decision)
        if reason == "recorded":
            raise AlreadyRecorded(gettext("your choice for this turn is already recorded"),
                                  game_id=game_id, decision_id=decision_id)
        raise TurnOver(gettext("this turn is over"), game_id=game_id, reason=reason)
    return decision


def locked_decision(s: Session, game_id: str, seat_id: int | None,
                    decision_id: int | None) -> tuple[Game, Seat, Decision]:
    """The game (locked for this transaction), the seat, and its decision if still open
    (NotFound for a link that names no decision of that seat)."""
    game = lock_game(s, game_id)
    decision = s.get(Decision, decision_id) if decision_id is not None else None
    decision = _open_decision(decision, game_id, seat_id, decision_id)
    return game, get_row(s, Seat, decision.seat_id), decision


def act(s: Session, game: Game, seat: Seat, decision: Decision, action: Action,
        source: MoveSource, state: Any = None,
        applied: tuple[Any, list[Event]] | None = None,
        notes: list[Event] | None = None, seats: list[Seat] | None = None,
        open_rows: list[Decision] | None = None) -> Outcome:
    """A player's move on their open decision of the locked game (``state``: the game's
    state, if the caller has read it already; ``applied``: the engine's answer to the
    move on that very state, if the caller has it already; ``notes``: events of that
    state's making logged before the move's, a plan set with it; ``seats``: all of the
    game's, in order, and ``open_rows``: its open decisions, both read under the lock,
    ``seat`` and ``decision`` among them)."""
    game_id, seat_id = game.id, seat.id
    if game.paused_at is not None:
        raise WrongState(gettext("the host has paused the game; try again when it resumes"),
                         game_id=game_id)
    if source == MoveSource.PLAYER and seat.bot is not None:
        # the seat's open decisions are its bot's, played by the clock after its pause:
        # the player comes back first (as when the bot had played them at once)
        raise TurnOver(gettext("this turn is over"), game_id=game_id, reason=ClosedBy.BOT)
    if source == MoveSource.PLAYER and seat.timeouts_in_row:
        seat.timeouts_in_row = 0  # (set only if it changes: setting the ORM attribute at
        # all makes the seat dirty, and the next query flushes the session first)
    played = play_move(s, game, seat, decision, action, source, state, seats=seats,
                       notices=notes, open_rows=open_rows, applied=applied)
    again = any(d.seat_id == seat_id for d in played.opened)
    mod, state = get_game(game.engine), played.state
    result = mod.result(state)
    card = localize.lookup(mod, state, localize.translation_for(mod, state, seat.language))
    # every word the action names (a card, a place, a resource...), printed for the page
    named = {w for _, v in action.args for w in (v if isinstance(v, tuple) else (v,))
             if isinstance(w, str)}
    return Outcome(game_id, seat.position, action.to_json(),
                   mint(s, TokenKind.PAGE, game_id, seat_id),
                   again, game.status == GameStatus.FINISHED,
                   names=tuple(x.name for x in played.seats),
                   waiting=tuple((d.seat, d.kind) for d in mod.pending(state)),
                   winners=tuple(result.winners) if result else (),
                   cards={c: card(c) for c in named}, language=seat.language,
                   engine=game.engine, decision_id=saved_id(decision))


def play_move(s: Session, game: Game, seat: Seat, decision: Decision, action: Action,
              source: MoveSource, state: Any = None, seats: list[Seat] | None = None,
              notices: list[Event] | None = None, open_rows: list[Decision] | None = None,
              applied: tuple[Any, list[Event]] | None = None) -> Played:
    """Apply one move to the locked game; returns the new state, the seats and the
    decisions it opened (people's emails are queued). A decision opened for a bot
    (seated at creation, or standing in) is the clock's to play after a short pause
    (``deadlines.play_bot``), never inside the request that made it the bot's turn.
    ``state``, ``seats`` (all of the game's, in order) and ``open_rows`` (every open
    decision of the game, ``decision`` among them): as the caller has read them under
    the game's lock; ``notices``: server events logged just before the move's (one
    statement); ``applied``: the engine's answer to the move on ``state``, worked out
    before the lock on the same version of the game."""
    mod = get_game(game.engine)
    if state is None:
        state = load_state(mod, game)
    before = state
    if applied is not None:
        state, events = applied
    else:
        try:
            state, events = mod.apply(state, seat.position, action)
        except EngineError as exc:
            raise IllegalMove(exc.code, decision.kind) from None
    revealed = showed_hidden(mod, before, state)
    _insert_move(s, game, saved_id(decision), seat.position, action, source, revealed)
    _close(s, decision, ClosedBy(source))
    settle_clock(s, game, seat, decision, moved=True, by_bot=source == MoveSource.BOT)
    played = source == MoveSource.PLAYER or (source == MoveSource.BOT and not seat.robot
                                             and not _stands_in(game, seat))
    if seats is None:
        seats = seats_of(s, game.id)
    _commit_state(s, game, mod, state, events, seats, played, notices or [],
                  undo=UNDO_OF.get(source, "clear"))
    state = _end_if_idle(s, game, mod, state, seats)
    # A player who decides again at once sees it on the page of this move (see FOLLOW_UP).
    # (A reply by email holds it too, while the reply is read: ``replies``.)
    follow_up = seat.id if source == MoveSource.PLAYER else None
    opened = sync_decisions(s, game, mod, state, seats, follow_up, open_rows,
                            grace=take_back_grace(s, game, source, revealed))
    return Played(state, seats, opened)


_LAST_PERSON_MOVE = (select(Move.created_at, Move.source, Move.revealed)
                     .where(Move.game_id == bindparam("game_id"),
                            Move.source != MoveSource.BOT)
                     .order_by(col(Move.id).desc()).limit(1))


def take_back_grace(s: Session, game: Game, source: MoveSource,
                    revealed: bool) -> timedelta | None:
    """How long the emails of the decisions a move opens wait, because the move may still
    be taken back (``services.takeback``): a player's move that showed nothing hidden, in
    a game that allows take-backs, waits TAKEBACK_GRACE_SECONDS; a bot's move after it
    (taken back with it), what is left of that time. A take-back in that time withdraws
    the emails, so a move and its take-back send nobody anything. None: no wait."""
    seconds = float(current_app.config["TAKEBACK_GRACE_SECONDS"])
    if seconds <= 0 or revealed or not game.policy.take_backs \
            or source not in (MoveSource.PLAYER, MoveSource.BOT):
        return None
    grace = timedelta(seconds=seconds)
    if source == MoveSource.PLAYER:
        return grace
    last = s.connection().execute(_LAST_PERSON_MOVE, {"game_id": game.id}).first()
    if last is None or last.source != MoveSource.PLAYER or last.revealed is not False:
        return None
    made = last.created_at if last.created_at.tzinfo else last.created_at.replace(tzinfo=UTC)
    left = made + grace - utcnow()
    return left if left > timedelta(0) else None


# Statements of every move, built once (SQLAlchemy memoises a statement's cache key on
# the statement object: a prebuilt one is neither built nor keyed again).
_INSERT_MOVE = insert(table_of(Move))  # Core: see plumbing._INSERT_EVENTS
_GAME_TABLE = table_of(Game)
_UPDATE_STATE = (update(_GAME_TABLE).where(_GAME_TABLE.c.id == bindparam("game_id"),
                                           _GAME_TABLE.c.version == bindparam("old_version"))
                 .values(version=bindparam("new_version"), state=bindparam("new_state"),
                         undo_state=case(  # the state before a player's move (take-backs)
                             (bindparam("undo") == "take", _GAME_TABLE.c.state),
                             (bindparam("undo") == "keep", _GAME_TABLE.c.undo_state),
                             else_=null()),
                         event_seq=bindparam("new_event_seq"),
                         idle_rounds=bindparam("new_idle_rounds"),
                         page_version=_GAME_TABLE.c.page_version + 1))
_DECISION_TABLE = table_of(Decision)
_CLOSE = (update(_DECISION_TABLE).where(_DECISION_TABLE.c.id == bindparam("decision_id"))
          .values(closed_at=bindparam("at"), closed_by=bindparam("by")))
_OPEN_DECISIONS = select(Decision).where(Decision.game_id == bindparam("game_id"),
                                         col(Decision.closed_at).is_(None))


def _insert_move(s: Session, game: Game, decision_id: int, position: int, action: Action,
                 source: MoveSource, revealed: bool) -> None:
    s.connection().execute(_INSERT_MOVE, [{"game_id": game.id, "decision_id": decision_id,
                              "position": position, "action": action.to_json(),
                              "source": source, "created_at": utcnow(),
                              "version": game.version, "event_seq": game.event_seq,
                              "revealed": revealed}])


def showed_hidden(mod: EngineGame, before: Any, after: Any) -> bool:
    """Whether a move showed anything hidden (the game's ``revealed``; a game without it
    is taken as showing something: none of its moves can be taken back)."""
    revealed = getattr(mod, "revealed", None)
    return True if revealed is None else bool(revealed(before, after))


def open_decisions(s: Session, game_id: str) -> list[Decision]:
    """The open decisions of a game (read under its lock, they are the ones the
    transaction may close or play: see ``play_move``'s ``open_rows``)."""
    return list(s.exec(_OPEN_DECISIONS, params={"game_id": game_id}))


def _close(s: Session, decision: Decision, by: ClosedBy) -> None:
    """Close a decision row (played, or no longer asked for): a Core update (the ORM's
    flush costs several times more), the object brought in line by hand."""
    now = utcnow()
    s.connection().execute(_CLOSE, {"decision_id": saved_id(decision), "at": now, "by": by})
    set_committed_value(decision, "closed_at", now)
    set_committed_value(decision, "closed_by", by)


# ----------------------------------------------------------------------------- time banks


_SEAT_TABLE = table_of(Seat)
_SET_BANK = (update(_SEAT_TABLE).where(_SEAT_TABLE.c.id == bindparam("seat_id"))
             .values(bank_left=bindparam("bank_left")))
_SEAT_OPEN = select(Decision).where(Decision.seat_id == bindparam("seat_id"),
                                    col(Decision.closed_at).is_(None))


def settle_clock(s: Session, game: Game, seat: Seat, decision: Decision,
                 moved: bool, by_bot: bool = False) -> None:
    """In a time bank game, the seat's clock once ``decision`` has closed (now): it ran
    while the decision was open, so it holds what was left until the decision's deadline
    (on the running clock: from the end of a vacation, standing still where the policy
    stops it; a pause or the host's extension moved the deadline, so neither costs the
    player), plus the increment if the seat ``moved`` (its own move, a bot's, or the
    default played at the timeout; not a decision the game stopped asking), at most the
    cap. A clock that ran out (a timeout) holds the increment afterwards: the player's
    next decision has that long. A decision a bot standing in played (``by_bot``), or
    one of a seat on such a bot that closed, cost nothing: the clock stood still while
    the bot had the seat (``to_bot``), and a move adds the increment.

    A seat has one clock however many decisions it has open: each opens on the deadline
    of the others (``sync_decisions``), and when one closes the others' deadlines move
    to the clock's new end, so time when several are open is charged once. A Core
    update of the seat (the transaction is a move's: it moves the game's
    ``page_version`` itself)."""
    policy = game.policy
    if not policy.banked or seat.robot or decision.deadline_at is None:
        return  # (a bot seated at creation plays on its own short pause, no clock)
    increment = policy.increment_hours * 3600 if moved else 0.0
    if by_bot:
        _set_bank(s, seat, min(policy.cap_days * 86400, bank_of(game, seat) + increment))
        return
    if seat.bot and not moved:
        return  # a decision of a seat on a stand-in: its clock stands still
    now = utcnow()
    others = list(s.exec(_SEAT_OPEN, params={"seat_id": saved_id(seat)}))
    # the seat's address is read only if its clock may stop, or for others' reminders
    stops = stops_of(s, game, seat) if policy.stops_clocks or others else Stops(UTC)
    running = policy.running(stops)
    start = clock_start(seat, now)
    left = running_between(start, decision.deadline_at, running)
    bank = min(policy.cap_days * 86400, left + increment)
    _set_bank(s, seat, bank)
    if others and not seat.bot:
        end = advance(start, bank, running)
        for row in others:
            row.deadline_at = end
            row.next_reminder_at = next_reminder(game, end, now, stops)


def _set_bank(s: Session, seat: Seat, bank: float) -> None:
    s.connection().execute(_SET_BANK, {"seat_id": saved_id(seat), "bank_left": bank})
    set_committed_value(seat, "bank_left", bank)


def to_bot(s: Session, game: Game, seat: Seat, charge: bool = True) -> None:
    """The seat is now on a bot standing in (``seat.bot`` just set): its open decisions
    are the clock's to play after the bot's pause (``play_bot``), with no reminders; in
    a time bank game the player's clock stops at what it had left (``charge``: the time
    used so far is charged, as a move at this moment would be, without the increment;
    not after a timeout, which has settled the clock already)."""
    rows = list(s.exec(_SEAT_OPEN, params={"seat_id": saved_id(seat)}))
    if not rows:
        return
    now = utcnow()
    policy = game.policy
    deadlines = [d.deadline_at for d in rows if d.deadline_at is not None]
    if charge and policy.banked and not seat.robot and deadlines:
        stops = stops_of(s, game, seat) if policy.stops_clocks else Stops(UTC)
        left = running_between(clock_start(seat, now), min(deadlines), policy.running(stops))
        _set_bank(s, seat, min(policy.cap_days * 86400, left))
    due = bot_due(s, game, seats_of(s, game.id), now)
    for row in rows:
        row.deadline_at, row.next_reminder_at = due, None


def to_person(s: Session, game: Game, seat: Seat, mail: bool = True,
              delay: timedelta | None = None) -> list[Decision]:
    """The seat is a person's again (``seat.bot`` just cleared): its open decisions,
    which a bot was to play after its pause, get a person's deadline (the time per
    decision, or what the seat's clock has left) and reminders, and (``mail``) their
    decision email, held ``delay`` (a player who is on the page sees them there).
    Returns those decisions."""
    rows = list(s.exec(_SEAT_OPEN, params={"seat_id": saved_id(seat)}))
    if not rows:
        return rows
    now = utcnow()
    stops = stops_of(s, game, seat)
    deadline = deadline_for(game, seat, now, stops)
    mod = get_game(game.engine)
    state = load_state(mod, game) if mail else None
    for row in rows:
        row.deadline_at = deadline
        row.next_reminder_at = next_reminder(game, deadline, now, stops)
        if mail:  # (its first email, if it had one, was before a bot took the seat)
            queue_decision(s, game, mod, state, seat, row, delay=delay,
                           key=f"decision:{row.id}:back:{game.version}:{game.event_seq}")
    return rows


def bot_choice(game: Game, mod: EngineGame, state: Any, seat: Seat,
               budget_ms: float | None = None) -> Action:
    """What a bot plays for its seat: for an absent player the game's heuristic bot, or
    the default; for a bot seated at creation, the game's bot of its level (``easy``:
    the heuristic, where the game has no bot of that name). A strong bot thinks for
    ``budget_ms`` (the CPU allowance's, ``allowance.budget_ms``), else the game's
    ``bot_ms``."""
    if seat.bot == SeatBot.DEFAULT or seat.bot is None:
        return mod.default_action(state, seat.position)
    rng = random.Random(f"{game.id}:{game.version}")
    if seat.bot == SeatBot.STRONG and hasattr(mod, "make_strong"):
        return _strong_bot(game.engine, budget_ms or game.policy.bot_ms)(
            state, seat.position, rng)
    bot = mod.BOTS.get(str(seat.bot)) or mod.BOTS[SeatBot.HEURISTIC]
    return bot(state, seat.position, rng)


@functools.lru_cache(maxsize=32)
def _strong_bot(engine: str, budget_ms: float) -> Bot[Any]:
    """Game ``engine``'s search bot with ``budget_ms`` of CPU per decision (built once:
    it keeps nothing between decisions)."""
    # (bot_choice asks only a game that has make_strong)
    return cast(Searches, get_game(engine)).make_strong(budget_ms=budget_ms)


def _closed_reason(decision: Decision) -> str:
    """Why a decision is closed, for the page that says so: ``recorded`` (the player's
    own move), else what closed it (``ClosedBy``)."""
    if decision.closed_by == ClosedBy.PLAYER:
        return "recorded"
    return decision.closed_by or "closed"


# What a move does to the state a take-back restores (``Game.undo_state``): a player's
# move keeps the state before it, a bot's moves after it keep that, anything else ends it.
UNDO_OF = {MoveSource.PLAYER: "take", MoveSource.BOT: "keep"}


def _commit_state(s: Session, game: Game, mod: EngineGame, state: Any,
                  events: list[Event], seats: list[Seat], played: bool = False,
                  notices: list[Event] | None = None, undo: str = "clear") -> None:
    """Store the new state with an optimistic version check (the row is also locked),
    and count the rounds nobody played (``played``: see ``idle_after``); the move's
    events go to the log after ``notices`` (server events of the same step), in one
    statement.
    A Core update (the ORM's costs several times more); the game object is brought in
    line by hand, which also cancels an ``event_seq`` still pending from ``log_events``."""
    new_version = game.version + 1
    first_seq = game.event_seq
    logged = [*(notices or ()), *events]
    idle = idle_after(game.idle_rounds, mod, events, played)
    done = s.connection().execute(_UPDATE_STATE, {
        "game_id": game.id, "old_version": game.version, "new_version": new_version,
        "new_state": dump_json(mod.to_json(state)), "new_event_seq": first_seq + len(logged),
        "undo": undo,
        "new_idle_rounds": idle})
    if done.rowcount != 1:
        raise Conflict(gettext("the game changed at the same moment; please try again"))
    page_version_moved(s, game.id)
    set_committed_value(game, "version", new_version)
    set_committed_value(game, "event_seq", first_seq + len(logged))
    set_committed_value(game, "idle_rounds", idle)
    set_committed_value(game, "state", None)
    s.expire(game, ["state", "page_version", "undo_state"])  # read back only if needed
    result = mod.result(state)
    insert_events(s, game.id, first_seq, logged)
    if result is not None and game.status == GameStatus.ACTIVE:
        game.status = (GameStatus.FINISHED if result.reason != "abandoned"
                       else GameStatus.ABANDONED)
        game.ended_at = utcnow()
        queue_emails(s, game, seats, EmailTemplate.RESULT, {"result": result.to_json()},
                     links=PAGE_LINK)


# ------------------------------------------------------------------------- games nobody plays


def idle_after(idle: int, mod: EngineGame, events: list[Event], played: bool) -> int:
    """``Game.idle_rounds`` after a move: -1 once someone ``played`` (a person, or a bot
    the host chose: the round is not idle), one more at each start of a round (the game's
    ``ROUND_EVENT``). Timeouts and bots standing in for absent players (``_stands_in``)
    are nobody. A game without rounds counts the moves nobody made (0 after another)."""
    kind = getattr(mod, "ROUND_EVENT", None)
    if kind is None:
        return 0 if played else idle + 1
    idle = -1 if played else idle
    return idle + sum(1 for e in events if e.kind == kind)


def _stands_in(game: Game, seat: Seat) -> bool:
    """Whether the bot of ``seat`` stands in for a player who is away (who left, or
    missed ``absent_after`` deadlines in a row), not a bot the host chose (the host's
    choice starts the count of missed deadlines again at 0)."""
    return seat.left_at is not None or seat.timeouts_in_row >= game.policy.absent_after


def _idle_limit(mod: EngineGame, seats: int) -> tuple[str, int]:
    """When a game nobody plays ends: (``rounds``, IDLE_ROUNDS), or for a game without
    rounds (``moves``, IDLE_ROUNDS per seat)."""
    rounds = int(current_app.config["IDLE_ROUNDS"])
    if getattr(mod, "ROUND_EVENT", None) is None:
        return "moves", rounds * seats
    return "rounds", rounds


def _end_if_idle(s: Session, game: Game, mod: EngineGame, state: Any,
                 seats: list[Seat]) -> Any:
    """End the game as abandoned once nobody has played for ``_idle_limit`` (every
    decision timed out or played by a bot standing in): the host's abandon, told to
    everyone with the reason. Returns the state (the ended one if it ended)."""
    unit, limit = _idle_limit(mod, len(seats))
    if game.status != GameStatus.ACTIVE or game.idle_rounds < limit:
        return state
    return end_abandoned(s, game, mod, state, "game_abandoned_idle", {unit: limit},
                         by=ClosedBy.IDLE)


def end_abandoned(s: Session, game: Game, mod: EngineGame, state: Any, notice: str,
                 data: dict[str, Any], by: ClosedBy) -> Any:
    """End a running (or not yet started: ``state`` None) game without a winner: the
    engine's ``abandon``, every open decision closed (``by``), the game ``abandoned``,
    and ``notice`` logged and emailed to every player. Returns the ended state."""
    if state is not None and hasattr(mod, "abandon"):
        state, events = mod.abandon(state)
        game.state = dump_json(mod.to_json(state))
        game.version += 1
        log_events(s, game, events)
    for d in s.exec(_OPEN_DECISIONS, params={"game_id": game.id}):
        d.closed_at, d.closed_by = utcnow(), by
    game.status, game.ended_at = GameStatus.ABANDONED, utcnow()
    notice_all(s, game, notice, None, data)
    return state


def sync_decisions(s: Session, game: Game, mod: EngineGame, state: Any,
                    seats: list[Seat], follow_up: int | None = None,
                    known: list[Decision] | None = None,
                    time_left: dict[int, float] | None = None,
                    grace: timedelta | None = None) -> list[Decision]:
    """Close Decision rows the engine no longer asks for; open rows (and emails) for new ones.
    The email of a decision for seat ``follow_up`` (who has just played, and whose answer
    page shows the new decision at once), or for a seat whose game page is open
    (``is_present``: the page shows it by itself), waits FOLLOW_UP_MINUTES: it goes out
    only if the player leaves the decision open that long. ``known``: the game's decisions that were
    open when this transaction read them (a row closed since is skipped), instead of
    reading them again. ``time_left``: seconds on a seat's clock (by seat id) for its
    new decision, instead of the policy's (a take-back gives back what was left).
    ``grace``: every new decision's email waits at least this long (the move that opened
    it may be taken back: ``take_back_grace``)."""
    wanted = {(d.seat, d.kind) for d in mod.pending(state)}
    open_rows = ([row for row in known if row.closed_at is None] if known is not None
                 else s.exec(_OPEN_DECISIONS, params={"game_id": game.id}).all())
    have: set[tuple[int, str]] = set()
    kept = []
    for row in open_rows:
        if (row.position, row.kind) in wanted:
            have.add((row.position, row.kind))
            kept.append(row)
        else:
            _close(s, row, ClosedBy.SUPERSEDED)
            settle_clock(s, game, seats[row.position], row, moved=False)
    # a time bank: a seat's decisions share its one clock (``settle_clock``)
    clock_end = {row.seat_id: row.deadline_at for row in kept
                 if game.policy.banked and row.deadline_at is not None}
    opened = []
    now = utcnow()
    bot_at: datetime | None = None  # when the clock plays a bot's decision opened here
    for position, kind in sorted(wanted - have):
        seat = seats[position]
        if seat.bot:  # a bot's (seated at creation, or standing in): ``play_bot`` plays it
            bot_at = bot_at or bot_due(s, game, seats, now)
            row = _insert_decision(s, game_id=game.id, seat_id=saved_id(seat),
                                   position=position, seq=game.version, kind=kind,
                                   opened_at=now, deadline_at=bot_at)
            opened.append(row)
            continue
        stops = stops_of(s, game, seat)
        deadline = clock_end.get(saved_id(seat)) or deadline_for(
            game, seat, now, stops, (time_left or {}).get(saved_id(seat)))
        if game.policy.banked:
            clock_end[saved_id(seat)] = deadline
        row = _insert_decision(s, game_id=game.id, seat_id=saved_id(seat),
                               position=position, seq=game.version, kind=kind,
                               opened_at=now, deadline_at=deadline,
                               next_reminder_at=next_reminder(game, deadline, now, stops))
        opened.append(row)
        delay, why = None, None
        if seat.id == follow_up or is_present(seat, now):
            delay = timedelta(minutes=current_app.config["FOLLOW_UP_MINUTES"])
            why = "follow_up"
        if grace is not None and (delay is None or grace > delay):
            delay, why = grace, "grace"
        queue_decision(s, game, mod, state, seat, row, delay=delay, held_for=why)
    return opened


_MOVES_AFTER = (select(Move.id).where(Move.game_id == bindparam("game_id"),
                                      col(Move.id) > bindparam("after"))
                .limit(bindparam("limit")).subquery())
_BOT_RUN = select(func.count()).select_from(_MOVES_AFTER)
_LAST_NOT_BOT = (select(Move.id).where(Move.game_id == bindparam("game_id"),
                                       Move.source != MoveSource.BOT)
                 .order_by(col(Move.id).desc()).limit(1))


def bot_due(s: Session, game: Game, seats: list[Seat], now: datetime) -> datetime:
    """When the clock plays a bot's move (``deadlines.play_bot``): after a short pause
    that varies a little from move to move (BOT_PAUSE_SECONDS, half to one and a half of
    it), as a person at the table would. Once every seat is on a bot and BOT_MOVES_IN_A_ROW
    of them were played with no person's move or timeout between, after the game's time
    per decision instead (a game nobody can end goes on at a person's pace)."""
    if all(x.bot for x in seats):
        conn = s.connection()
        last = conn.execute(_LAST_NOT_BOT, {"game_id": game.id}).scalar() or 0
        run = conn.execute(_BOT_RUN, {"game_id": game.id, "after": last,
                                      "limit": BOT_MOVES_IN_A_ROW}).scalar_one()
        if run >= BOT_MOVES_IN_A_ROW:
            return now + timedelta(hours=game.policy.hours_per_decision)
    wake_bots(s)  # (a worker then waits until this pause is over)
    pause = float(current_app.config["BOT_PAUSE_SECONDS"])
    return now + timedelta(seconds=pause * (0.5 + random.Random(
        f"{game.id}:{game.version}:pause").random()))


def is_present(seat: Seat, now: datetime) -> bool:
    """Whether the seat's game page is open and in view: it said so (``page_seen_at``,
    every LIVE_HERE_SECONDS while it is) within twice that time."""
    seen = seat.page_seen_at
    if seen is None:
        return False
    if seen.tzinfo is None:  # SQLite gives stored times back without their zone
        seen = seen.replace(tzinfo=now.tzinfo)
    return now - seen < timedelta(seconds=2 * current_app.config["LIVE_HERE_SECONDS"])


_INSERT_DECISION = insert(_DECISION_TABLE).returning(_DECISION_TABLE.c.id)
# Every column of a new decision but its id, with the value it has unless given.
_DECISION_DEFAULTS: dict[str, Any] = {
    c.key: 0 if c.key == "reminders_sent" else None
    for c in _DECISION_TABLE.columns if c.key != "id"}
_DECISION_ROWS = RowLoader(Decision)


def _insert_decision(s: Session, **values: Any) -> Decision:
    """Write a new Decision row (``values``: its columns; the rest take their defaults)
    and return it as a persistent object of the session: a Core insert (the ORM's flush
    of a new object costs several times more), and the object made as a query would
    load it, every column set (SQLModel's constructor, which sets each attribute
    through the ORM's instrumentation, cost more than the insert)."""
    columns = {**_DECISION_DEFAULTS, **values}
    if columns["opened_at"] is None:
        columns["opened_at"] = utcnow()
    columns["id"] = s.connection().execute(_INSERT_DECISION, columns).scalar_one()
    row: Decision = _DECISION_ROWS.detached([columns[k] for k in _DECISION_ROWS.keys])
    s.add(row)
    return row


def queue_decision(s: Session, game: Game, mod: EngineGame, state: Any, seat: Seat,
                    decision: Decision, reminder: bool = False, key: str | None = None,
                    delay: timedelta | None = None, held_for: str | None = None) -> None:
    """Queue the email of ``decision`` (a reminder's with ``reminder``), held back
    ``delay`` if given: ``held_for`` says why (``follow_up``: the player may answer on
    the page first; ``grace``: the move before it may still be taken back)."""
    if decision.deadline_at is None:  # every decision the server opens has one
        raise ValueError(f"decision {decision.id} has no deadline")
    legal = mod.legal_actions(state, seat.position)
    links = dict(PAGE_LINK)
    for i, action in enumerate(mod.email_choices(state, seat.position)):
        links[f"choice{i}"] = {"kind": TokenKind.ACTION, "decision_id": decision.id,
                               "action": action.to_json(),
                               "effect": mod.choice_effect(state, seat.position, action),
                               "variants": variants_of(mod, state, seat.position, action)}
    queue_email(s, game, seat, EmailTemplate.DECISION, {
        "decision_id": decision.id, "kind": decision.kind,
        "deadline": decision.deadline_at.isoformat(),
        "more_choices": len(legal) > len(links) - 1,
        "default": mod.default_action(state, seat.position).to_json(),
        "reminder": reminder,
        "follow_up": delay is not None and held_for != "grace",  # may answer on the page
        "grace": held_for == "grace",  # held back: the move before it may be taken back
    }, links=links, key=key or (f"reminder:{decision.id}:{decision.reminders_sent}" if reminder
                                else f"decision:{decision.id}"), delay=delay)
