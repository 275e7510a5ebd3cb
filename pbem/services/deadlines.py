"""Deadlines and the clock: the reminders and timeouts that are due, sending a reminder,
timing a decision out (its default action, then a bot after too many), default reminder
times."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, FromClause, and_, bindparam, update
from sqlalchemy.orm import aliased
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import Session, col, select

from engine.core import Event
from engine.registry import get_game
from pbem.db import get_row, read_scope, saved_id, session_scope
from pbem.errors import NotFound
from pbem.kinds import EmailTemplate, GameStatus, MoveSource, SeatBot
from pbem.models import Decision, Game, Seat, id_column, table_of
from pbem.services import allowance
from pbem.services.playing import (
    bot_choice,
    open_decisions,
    play_move,
    queue_decision,
    to_bot,
)
from pbem.services.plumbing import (
    PAGE_LINK,
    load_state,
    lock_game,
    next_reminder,
    queue_emails,
    seats_of,
    stops_of,
)

# The clock plays due decisions in batches: one transaction for up to BATCH_SIZE of them
# (they share its BEGIN, COMMIT and session), ended early once it has run BATCH_SECONDS
# (on SQLite it holds the write lock that long: a player's write waits for at most the
# batch under way, see ``pbem.db._sqlite_writer_gate``).
BATCH_SIZE = 10
BATCH_SECONDS = 0.010

log = logging.getLogger("pbem.clock")


class Due(NamedTuple):
    """A decision found due, and its game."""

    decision_id: int
    game_id: str


def due_reminders(now: datetime, limit: int = 500) -> list[Due]:
    """Open decisions of running games whose next reminder is due."""
    return _due(Decision.next_reminder_at, now, limit)


def due_timeouts(now: datetime, limit: int = 500) -> list[Due]:
    """Open decisions of people in running games whose deadline has passed."""
    return _due(Decision.deadline_at, now, limit, bots=False)


def due_bot_moves(now: datetime, limit: int = 500) -> list[Due]:
    """Open decisions of bots (seated at creation, or standing in for a player) whose
    pause is over (``playing.bot_due``)."""
    return _due(Decision.deadline_at, now, limit, bots=True)


def running_open(decision: FromClause, game: FromClause) -> ColumnElement[bool]:
    """Where a decision (of the table ``decision``) is open in a running, unpaused game
    (``game``): the one filter of every read of what is due."""
    return and_(decision.c.closed_at.is_(None), game.c.status == GameStatus.ACTIVE,
                game.c.paused_at.is_(None))


def bot_open(decision: FromClause, game: FromClause, seat: FromClause
             ) -> ColumnElement[bool]:
    """``running_open``, and a bot plays the decision's seat (``seat``, joined on the
    decision's seat): the filter of every read of the bots' work (the sweep's fallback,
    the workers' claims and sleeps, the health report)."""
    return and_(running_open(decision, game), seat.c.bot.is_not(None))


_DECISION_TABLE = table_of(Decision)
_GAME_TABLE = table_of(Game)
_SEAT_TABLE = table_of(Seat)


def _due(column: Any, now: datetime, limit: int, bots: bool | None = None) -> list[Due]:
    """Open decisions of running, unpaused games whose ``column`` time has come,
    earliest first (served by the indexes on (closed_at, deadline_at / next_reminder_at));
    a read that takes no lock: each decision is re-checked in its own transaction.
    ``bots``: only the decisions of seats a bot plays (True) or of people's (False)."""
    decision, game, seat = _DECISION_TABLE, _GAME_TABLE, _SEAT_TABLE
    query = (select(id_column(Decision.id), Decision.game_id)
             .join(game, game.c.id == decision.c.game_id)
             .where(column <= now))
    if bots is None:
        query = query.where(running_open(decision, game))
    else:
        query = query.join(seat, seat.c.id == decision.c.seat_id).where(
            bot_open(decision, game, seat) if bots
            else and_(running_open(decision, game), seat.c.bot.is_(None)))
    with read_scope() as s:
        return [Due(*row) for row in s.exec(query.order_by(column).limit(limit))]


_GAME_OF_DECISION = select(Decision.game_id).where(Decision.id == bindparam("id"))


def _running_decision(s: Session, decision_id: int, game_id: str | None = None
                      ) -> tuple[Decision, Game, list[Decision]] | None:
    """The decision, its game (row locked) and the game's open decisions (read under the
    lock), if the decision is still open in a running, unpaused game; the check that
    makes every sweep step idempotent. ``game_id``: the decision's game if known (a
    decision never moves to another game, so a read without the lock may tell it)."""
    if game_id is None:
        game_id = s.connection().execute(_GAME_OF_DECISION, {"id": decision_id}).scalar()
        if game_id is None:
            return None
    try:
        game = lock_game(s, game_id)
    except NotFound:  # deleted since it was found due
        return None
    if game.status != GameStatus.ACTIVE or game.paused_at is not None:
        return None
    open_rows = open_decisions(s, game_id)  # read under the lock (also on PostgreSQL)
    decision = next((d for d in open_rows if d.id == decision_id), None)
    if decision is None:  # closed meanwhile (or not this game's)
        return None
    return decision, game, open_rows


Step = Callable[[Session, int, datetime, str | None], bool]
StepResult = bool | Exception  # done (or nothing was due any more), or what failed


def remind_due(due: list[Due], now: datetime) -> list[tuple[Due, StepResult]]:
    """``send_reminder`` for each of ``due``, in batches (see ``in_batches``)."""
    return in_batches(_send_reminder, due, now)


def time_out_due(due: list[Due], now: datetime) -> list[tuple[Due, StepResult]]:
    """``time_out`` for each of ``due``, in batches (see ``in_batches``)."""
    return in_batches(_time_out, due, now)


def in_batches(step: Step, due: list[Due], now: datetime) -> list[tuple[Due, StepResult]]:
    """Run ``step`` for each due decision, batch after batch: each batch (the next
    BATCH_SIZE, for at most BATCH_SECONDS) in one transaction, in the order of their games'
    ids (so two clocks' batches lock games in the same order and cannot deadlock on
    PostgreSQL; a game's own decisions keep their order). Each step checks its decision
    again under the game's lock, as alone. If any step of a batch fails (or its commit),
    the whole transaction is rolled back and each decision of the batch is run again in a
    transaction of its own: a failure loses no other decision's work and leaves its own
    decision as it was (found due again at the next sweep)."""
    out: list[tuple[Due, StepResult]] = []
    todo = list(due)
    while todo:
        batch = sorted(todo[:BATCH_SIZE], key=lambda d: d.game_id)  # stable: same game in order
        done = _one_batch(step, batch, now)
        out += done
        todo = batch[len(done):] + todo[BATCH_SIZE:]
    return out


def _one_batch(step: Step, batch: list[Due], now: datetime) -> list[tuple[Due, StepResult]]:
    """A leading part of ``batch`` played in one transaction (all of it unless it ran out
    of BATCH_SECONDS), or after a failure each of the batch alone."""
    done: list[tuple[Due, StepResult]] = []
    try:
        with session_scope() as s:
            until = time.monotonic() + BATCH_SECONDS
            for item in batch:
                done.append((item, step(s, item.decision_id, now, item.game_id)))
                if time.monotonic() >= until:
                    break
        return done
    except Exception as exc:  # noqa: BLE001 - each again alone; the failure shows there
        if len(batch) == 1:
            return [(batch[0], exc)]
        log.warning("a batch of %d failed; each of its decisions again alone", len(batch))
        return [(item, _alone(step, item, now)) for item in batch]


def _alone(step: Step, item: Due, now: datetime) -> StepResult:
    try:
        with session_scope() as s:
            return step(s, item.decision_id, now, item.game_id)
    except Exception as exc:  # noqa: BLE001 - handed back: the clock logs it
        return exc


def play_bots_due(due: list[Due], now: datetime) -> list[tuple[Due, StepResult]]:
    """``play_bot`` for each of ``due``, one at a time (a bot may think for a while: it
    does so in a read, holding no lock, and only its move takes the game's lock)."""
    out: list[tuple[Due, StepResult]] = []
    for item in due:
        try:
            out.append((item, play_bot(item.decision_id, now, item.game_id)))
        except Exception as exc:  # noqa: BLE001 - handed back: the clock logs it
            out.append((item, exc))
    return out


_HOST_SEAT = aliased(Seat)
# play_bot's read: the decision, its seat, its game and the address of the game's host
_BOT_READ = (select(Decision, Seat, Game, _HOST_SEAT.email)
             .join(Seat, col(Seat.id) == Decision.seat_id)
             .join(Game, col(Game.id) == Decision.game_id)
             .outerjoin(_HOST_SEAT, (col(_HOST_SEAT.game_id) == Decision.game_id)
                        & col(_HOST_SEAT.is_host).is_(True))
             .where(Decision.id == bindparam("id")))


def play_bot(decision_id: int, now: datetime, game_id: str | None = None,
             cap_ms: float | None = None) -> bool:
    """Play the move of a bot (seated at creation, or standing in for a player) whose
    pause is over, exactly once: its choice worked out on the game as read (no lock held
    while it thinks), then recorded under the game's lock if the game has not moved
    meanwhile and the same bot still plays the seat (else it is found due again at the
    next sweep, and thinks again; or it is a person's decision again). The thread CPU
    time of the choice is charged to the game's and its host's day (``allowance``),
    recorded or not; a strong bot of a game or host over the day's allowance thinks at
    the default budget. ``cap_ms``: a strong bot thinks at most that long whatever the
    game's choice (the clock's fallback, which must keep time)."""
    with read_scope() as s:
        found = s.exec(_BOT_READ, params={"id": decision_id}).first()
        if found is None:
            return False
        decision, seat, game, host_email = found
        if (decision.closed_at is not None or seat.bot is None
                or decision.deadline_at is None or decision.deadline_at > now
                or game.status != GameStatus.ACTIVE or game.paused_at is not None):
            return False
        version, bot, host = game.version, seat.bot, allowance.host_address(host_email)
        mod = get_game(game.engine)
        state = load_state(mod, game)
        budget = (allowance.budget_ms(s.connection(), game.id, host, game.policy.bot_ms, now)
                  if bot == SeatBot.STRONG else None)
        if budget is not None and cap_ms is not None:
            budget = min(budget, cap_ms)
        started = time.thread_time()
        action = bot_choice(game, mod, state, seat, budget)
        spent = time.thread_time() - started
    try:
        with session_scope() as s:
            played = _record_bot_move(s, decision_id, game_id, version, bot, action, state,
                                      now)
            allowance.charge(s.connection(), game.id, host, spent, now)  # recorded or not
            return played
    except Exception:
        allowance.charge_alone(game.id, host, spent, now)  # the move's rolled back, not it
        raise


def _record_bot_move(s: Session, decision_id: int, game_id: str | None, version: int,
                     bot: SeatBot, action: Any, state: Any, now: datetime) -> bool:
    """``play_bot``'s write: the move, if the game has not moved since the bot's read
    and the same bot still plays the seat."""
    running = _running_decision(s, decision_id, game_id)
    if running is None or running[1].version != version:
        return False
    decision, game, open_rows = running
    seats = seats_of(s, game.id)
    seat = next(x for x in seats if x.id == decision.seat_id)
    if seat.bot != bot or decision.deadline_at is None or decision.deadline_at > now:
        return False  # handed back to a person (or to another bot) meanwhile
    play_move(s, game, seat, decision, action, MoveSource.BOT, state, seats, [], open_rows)
    return True


def send_reminder(decision_id: int, now: datetime, game_id: str | None = None) -> bool:
    """Queue the reminder that is due for a decision; False if nothing was due (any more).
    (``game_id``: the decision's game, if known.)"""
    with session_scope() as s:
        return _send_reminder(s, decision_id, now, game_id)


def _send_reminder(s: Session, decision_id: int, now: datetime,
                   game_id: str | None = None) -> bool:
    found = _running_decision(s, decision_id, game_id)
    if found is None:
        return False
    decision, game, _open = found
    due, deadline = decision.next_reminder_at, decision.deadline_at
    if due is None or due > now or deadline is None:
        return False
    if deadline <= now:  # overdue: the timeout comes next, not a reminder
        decision.next_reminder_at = None
        return False
    seat = get_row(s, Seat, decision.seat_id)
    decision.next_reminder_at = next_reminder(game, deadline, now, stops_of(s, game, seat))
    queue_reminder(s, game, decision, seat, now)
    return True


def queue_reminder(s: Session, game: Game, decision: Decision, seat: Seat, now: datetime,
                    key: str | None = None) -> None:
    """Count one more reminder of an open decision and queue its email (the decision
    email again, marked as a reminder; nothing for a seat a bot plays). The clock's
    reminders and the host's "remind now" both come here."""
    decision.reminders_sent += 1
    decision.reminded_at = now
    if not seat.bot:
        mod = get_game(game.engine)
        state = load_state(mod, game)
        queue_decision(s, game, mod, state, seat, decision, reminder=True, key=key)


_COUNT_TIMEOUT = (update(_SEAT_TABLE).where(_SEAT_TABLE.c.id == bindparam("seat_id"))
                  .values(timeouts_in_row=bindparam("timeouts"), bot=bindparam("bot")))


def _count_timeout(s: Session, seat: Seat, timeouts: int, bot: SeatBot | None) -> None:
    """One more timeout in a row for the seat, and its bot: a Core update (the ORM's flush
    costs several times more), the object brought in line by hand."""
    s.connection().execute(_COUNT_TIMEOUT, {"seat_id": saved_id(seat), "timeouts": timeouts,
                                            "bot": bot})
    set_committed_value(seat, "timeouts_in_row", timeouts)
    set_committed_value(seat, "bot", bot)


def time_out(decision_id: int, now: datetime, game_id: str | None = None) -> bool:
    """Play the default action of an expired decision, exactly once; tell everyone.
    (``game_id``: the decision's game, if known.)"""
    with session_scope() as s:
        return _time_out(s, decision_id, now, game_id)


def _time_out(s: Session, decision_id: int, now: datetime, game_id: str | None = None) -> bool:
    found = _running_decision(s, decision_id, game_id)
    if found is None or found[0].deadline_at is None or found[0].deadline_at > now:
        return False
    decision, game, open_rows = found
    seats = seats_of(s, game.id)
    seat = next(x for x in seats if x.id == decision.seat_id)
    mod = get_game(game.engine)
    state = load_state(mod, game)
    action = mod.default_action(state, seat.position)
    timeouts = seat.timeouts_in_row + 1
    goes_to_bot = seat.bot is None and timeouts >= game.policy.absent_after
    _count_timeout(s, seat, timeouts, game.policy.absent_bot if goes_to_bot else seat.bot)
    timed_out: dict[str, Any] = {"kind": decision.kind, "action": action.to_json()}
    if game.policy.banked:  # the seat's clock ran out: it restarts with the increment
        timed_out["clock_hours"] = min(game.policy.increment_hours,
                                       game.policy.cap_days * 24)
    notices = [Event("decision_timed_out", seat.position, timed_out)]
    if goes_to_bot:
        notices.append(Event("seat_on_bot", seat.position,
                             {"bot": seat.bot, "timeouts": seat.timeouts_in_row,
                              "by": "absence"}))
    played = play_move(s, game, seat, decision, action, MoveSource.TIMEOUT, state, seats,
                       notices, open_rows)
    if goes_to_bot:  # the seat's other open decisions are the bot's now (the clock settled)
        to_bot(s, game, seat, charge=False)
    if game.status == GameStatus.ACTIVE:
        told = {d.seat_id for d in played.opened
                if not played.seats[d.position].bot}  # a turn email
        queue_emails(s, game, [x for x in played.seats if x.id not in told],
                     EmailTemplate.NOTICE, {"headline": "decision_timed_out"},
                     links=PAGE_LINK)
    return True
