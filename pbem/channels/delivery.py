"""Delivering the notices of the channels beside email (``pbem.models.Notice``), as the
mail loop delivers the outbox (``pbem.mail.delivery``): a row is claimed with a lease in
a committed transaction of its own, checked and prepared in a read that holds up no one,
sent outside any transaction, then marked sent. A failure is retried with the same
backoff as an email's; after ``STOP_AFTER`` failed deliveries in a row to one target (a
webhook, a push subscription) the target is stopped, its notices are given up, and the
page that set it says so with the last error. A target that is gone for good (a push
subscription the push service no longer knows) is stopped at once.

The common checks, made for every channel before the channel's own: the decision a turn
notice asks for has closed (skip); the seat's player left, or chose turn emails only for
news; the address's settings (``pbem.mail.addresses.address_rule``: news in the next
turn, a digest, quiet hours) for a notice with an address.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta
from typing import Any

from flask import Flask, current_app
from sqlalchemy import bindparam, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from pbem import wake
from pbem.channels import Channel, ChannelError, Later, Send, Skip, channels
from pbem.db import background_writes, get_engine, read_scope, session_scope
from pbem.i18n import mark
from pbem.kinds import EmailTemplate, OutboxStatus
from pbem.mail.addresses import QUIET, address_rule
from pbem.mail.recipients import MUTABLE_TEMPLATES
from pbem.models import Decision, Game, Notice, NoticeTarget, Seat, table_of, utcnow

log = logging.getLogger("pbem.channels")
MAX_BACKOFF = timedelta(hours=1)
STOP_AFTER = 8  # failed deliveries in a row to one target before it is stopped
_NOTICE = table_of(Notice)
_DUE = (OutboxStatus.PENDING, OutboxStatus.SENDING)
_DUE_ROW = (_NOTICE.c.id == bindparam("row_id"), _NOTICE.c.status.in_(_DUE),
            _NOTICE.c.next_attempt_at <= bindparam("now"))
_CLAIM = (update(_NOTICE).where(*_DUE_ROW, _NOTICE.c.attempts < bindparam("limit"))
          .values(status=OutboxStatus.SENDING, next_attempt_at=bindparam("until"),
                  attempts=_NOTICE.c.attempts + 1))
_GIVE_UP = (update(_NOTICE).where(*_DUE_ROW, _NOTICE.c.attempts >= bindparam("limit"))
            .values(status=OutboxStatus.UNDELIVERABLE, failed_at=bindparam("now"),
                    last_error=bindparam("error")))
_CLOSED = select(table_of(Decision).c.closed_at).where(
    table_of(Decision).c.id == bindparam("id"))

DECISION_CLOSED = mark("the decision closed before this notice could be sent")
PLAYER_LEFT = mark("the player left the game")
TURNS_ONLY = mark("the player asked for turn emails only")
TARGET_STOPPED = mark("this channel was stopped after failing too often")


def deliver_due(limit: int = 100) -> dict[str, int]:
    """Send the notices that are due; returns counts of sent, failed and skipped."""
    counts = {"sent": 0, "failed": 0, "skipped": 0}
    known = channels()
    if not known:
        return counts
    with session_scope() as s:
        due = list(s.exec(select(_NOTICE.c.id).where(
            _NOTICE.c.status.in_(_DUE), _NOTICE.c.next_attempt_at <= utcnow())
            .order_by(_NOTICE.c.id).limit(limit)).scalars())  # type: ignore[call-overload]
    for row_id in due:
        try:
            counts[_deliver_one(row_id, known)] += 1
        except SQLAlchemyError:  # the database, not the notice: it is due again later
            log.exception("notice %s: database error", row_id)
            counts["failed"] += 1
    return counts


def _deliver_one(row_id: int, known: dict[str, Channel]) -> str:
    if not _claim(row_id):
        return "skipped"
    with read_scope() as s:
        row = s.get(Notice, row_id)
        assert row is not None
        channel = known.get(row.channel)
        game = s.get(Game, row.game_id) if row.game_id else None
        seat = s.get(Seat, row.seat_id) if row.seat_id else None
        outcome: Skip | Later | Send | ChannelError
        try:
            outcome = (Skip(mark("no such channel")) if channel is None
                       else _common_checks(s, row, channel, seat)
                       or channel.prepare(s, row, game, seat))
        except Exception as exc:  # noqa: BLE001 - a bug or a bad row: a few tries
            log.exception("preparing notice %s failed", row_id)
            outcome = ChannelError(f"could not be prepared: {type(exc).__name__}: {exc}")
        s.expunge(row)
    if isinstance(outcome, Skip):
        _finish(row_id, status=OutboxStatus.SKIPPED, last_error=outcome.reason)
        return "skipped"
    if isinstance(outcome, Later):
        _finish(row_id, status=OutboxStatus.PENDING, next_attempt_at=outcome.until,
                last_error=QUIET, attempts=max(row.attempts - 1, 0))  # not an attempt
        return "skipped"
    if isinstance(outcome, Send):
        assert channel is not None
        try:
            channel.send(row, outcome.payload)
        except ChannelError as exc:
            outcome = exc
        except Exception as exc:  # noqa: BLE001 - a channel's bug must not stop the loop
            log.exception("sending notice %s failed", row_id)
            outcome = ChannelError(f"{type(exc).__name__}: {exc}")
    if isinstance(outcome, ChannelError):
        _record_failure(row, channel, outcome)
        return "failed"
    now = utcnow()
    _finish(row_id, status=OutboxStatus.SENT, sent_at=now, last_error=None)
    _target_ok(row, channel)
    return "sent"


def _common_checks(s: Session, row: Notice, channel: Channel,
                   seat: Seat | None) -> Skip | Later | None:
    target = _target(s, row, channel)
    if target is not None and target.stopped_at is not None:
        return Skip(TARGET_STOPPED)
    decision_id = row.context.get("decision_id")
    if row.template == EmailTemplate.DECISION and decision_id is not None:
        closed = s.connection().execute(_CLOSED, {"id": decision_id}).first()
        if closed is None or closed.closed_at is not None:
            return Skip(DECISION_CLOSED)
    if seat is not None and row.rcpt:
        if seat.left_at is not None:
            return Skip(PLAYER_LEFT)
        if seat.mute_notices and row.template in MUTABLE_TEMPLATES:
            return Skip(TURNS_ONLY)
    if row.rcpt:
        rule = address_rule(s, row, seat, utcnow())
        if rule is not None:
            return Skip(rule[1]) if rule[0] == "skip" else Later(rule[1])
    return None


def target_model(channel: Channel | None) -> type[NoticeTarget] | None:
    """The table of a channel's targets (a channel names it as ``target_model``)."""
    return getattr(channel, "target_model", None)


def _target(s: Session, row: Notice, channel: Channel | None) -> NoticeTarget | None:
    model = target_model(channel)
    return s.get(model, row.target_id) if model is not None else None


def _claim(row_id: int) -> bool:
    now = utcnow()
    limit = int(current_app.config["MAIL_MAX_ATTEMPTS"])
    lease = timedelta(seconds=float(current_app.config["MAIL_LEASE_SECONDS"]))
    with session_scope() as s:
        conn = s.connection()
        if conn.execute(_CLAIM, {"row_id": row_id, "now": now, "limit": limit,
                                 "until": now + lease}).rowcount == 1:
            return True
        conn.execute(_GIVE_UP, {"row_id": row_id, "now": now, "limit": limit, "error": (
            f"gave up after {limit} attempts (the last ones never finished)")})
        return False


def _finish(row_id: int, **values: Any) -> None:
    with session_scope() as s:
        s.connection().execute(update(_NOTICE).where(_NOTICE.c.id == row_id).values(**values))


def _record_failure(row: Notice, channel: Channel | None, exc: ChannelError) -> None:
    """The notice is retried with backoff (or given up); its target counts a failure in a
    row and is stopped after ``STOP_AFTER`` of them (or at once when it is gone)."""
    now = utcnow()
    error = str(exc)[:2000]
    limit = int(current_app.config["MAIL_MAX_ATTEMPTS"])
    with session_scope() as s:
        model = target_model(channel)
        target = s.get(model, row.target_id) if model is not None else None
        stop = False
        if target is not None:
            target.failures += 1
            target.last_error, target.failed_at = error, now
            stop = exc.gone or target.failures >= STOP_AFTER
            if stop and target.stopped_at is None:
                target.stopped_at = now
                log.warning("%s %s stopped after %s failures: %s", row.channel,
                            row.target_id, target.failures, error)
        values: dict[str, Any] = {"last_error": error, "failed_at": now}
        if stop or exc.permanent or row.attempts >= limit:
            values["status"] = OutboxStatus.UNDELIVERABLE
        else:
            values["status"] = OutboxStatus.PENDING
            values["next_attempt_at"] = now + min(
                MAX_BACKOFF, timedelta(seconds=30 * 2 ** min(row.attempts - 1, 10)))
        s.connection().execute(update(_NOTICE).where(_NOTICE.c.id == row.id).values(**values))
        if stop:
            # the target's other notices waiting for it are given up with it
            s.connection().execute(
                update(_NOTICE).where(_NOTICE.c.channel == row.channel,
                                      _NOTICE.c.target_id == row.target_id,
                                      _NOTICE.c.status.in_(_DUE), _NOTICE.c.id != row.id)
                .values(status=OutboxStatus.SKIPPED, last_error=TARGET_STOPPED))
            if channel is not None:
                channel.stopped(s, row.target_id, error)


def _target_ok(row: Notice, channel: Channel | None) -> None:
    model = target_model(channel)
    if model is None:
        return
    with session_scope() as s:
        target = s.get(model, row.target_id)
        if target is not None and (target.failures or target.delivered_at is None
                                   or utcnow() - target.delivered_at > timedelta(minutes=1)):
            target.failures, target.delivered_at = 0, utcnow()


def notice_loop(app: Flask, stop: threading.Event, poll: float = 1.0, batch: int = 100,
                waiting: threading.Event | None = None) -> None:
    """Deliver notices until ``stop`` is set, polling every ``poll`` seconds (a thread
    of its own beside the mail loop: a slow chat server never holds up an email), woken
    sooner by work: on SQLite a process that queued a notice rings the loop after its
    commit (``pbem.wake``); on PostgreSQL the loop listens on the outbox's NOTIFY channel
    (a notice is queued with its email, whose transaction notifies; a notice without an
    email, such as the talk mirrored to a chat, waits for the poll)."""
    from pbem.services.plumbing import OUTBOX_CHANNEL

    wakeup = wake.Waiter(get_engine(app).url, wake.NOTICES, OUTBOX_CHANNEL)
    try:
        wakeup.start()
        with app.app_context(), background_writes():
            while not stop.is_set():
                try:
                    counts = deliver_due(limit=batch)
                except Exception:  # noqa: BLE001 - e.g. the database is away for a moment
                    log.exception("notice loop: delivery pass failed")
                    counts = {}
                if any(counts.values()):
                    log.info("notices: %s", counts)
                if sum(counts.values()) < batch:
                    if waiting is not None:
                        waiting.set()
                    wakeup.wait(stop, poll)
    finally:
        wakeup.close()


def start_notice_thread(app: Flask, waiting: threading.Event | None = None
                        ) -> tuple[threading.Thread, threading.Event]:
    stop = threading.Event()
    thread = threading.Thread(target=notice_loop, args=(app, stop),
                              kwargs={"waiting": waiting}, name="pbem-notices", daemon=True)
    thread.start()
    return thread, stop
