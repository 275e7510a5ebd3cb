"""Delivering the outbox: the clock's loop (``deliver_due``) with leases, retries,
backoff and each row's status.

Web requests only queue email (Outbox rows written in the move's transaction); the
clock process delivers them (``deliver_due``), woken as soon as a row is queued.

Delivery is at-least-once and never loses mail silently: a row is claimed with a lease,
the message is rendered in a read that holds up no one, its links' tokens are stored in a
short transaction, then it is sent, then marked sent. A failure records the error and
schedules a retry with backoff; after ``MAIL_MAX_ATTEMPTS`` failures (3 for a message
that cannot even be rendered), or at once when the mail server refuses the message for
good (a 5xx reply), the row becomes ``undeliverable`` and the host page says why. A
crashed sender's lease runs out and another pass picks the row up. The Message-ID is
fixed per row.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any

from flask import current_app
from sqlalchemy import bindparam, inspect, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, col, select

from pbem.db import get_engine, get_row, read_scope, session_scope
from pbem.kinds import EmailTemplate, OutboxStatus
from pbem.mail.addresses import QUIET, address_rule
from pbem.mail.backends import MailError, Outgoing, backend, require
from pbem.mail.compose import load_row, render_row
from pbem.mail.recipients import why_not_send
from pbem.models import Outbox, Seat, id_column, table_of, utcnow
from pbem.tokens import DEFERRED_TOKENS, INSERT_TOKEN

log = logging.getLogger("pbem.mail")
MAX_BACKOFF = timedelta(hours=1)
RENDER_ATTEMPTS = 3  # a message that cannot be rendered is given up after this many tries
# Emails whose recipient and content are settled only when they are sent: template ->
# a function (session, row) that fills the row in, or says why nothing goes out (the row
# is then skipped). The services register them: the list of one's games is asked for by
# address, and looked up here, off the request (``pbem.services.my_games``).
PREPARE_AT_SENDING: dict[EmailTemplate, Callable[[Session, Outbox], str | None]] = {}
# Rows due to be (re)tried; a row ``sending`` whose lease ran out is due again.
_DUE = (OutboxStatus.PENDING, OutboxStatus.SENDING)


def deliver_due(limit: int = 100, ids: list[int] | None = None) -> dict[str, int]:
    """Send what is due (or just ``ids``); returns counts of sent, failed and skipped.

    A mail server that is down or hung ends the pass at its first failure (the other
    rows would only wait for the same timeout); a broken row never blocks the others."""
    require()  # before touching a row: no attempt is spent on a missing configuration
    counts = {"sent": 0, "failed": 0, "skipped": 0}
    now = utcnow()
    with session_scope() as s:
        query = select(id_column(Outbox.id)).where(col(Outbox.status).in_(_DUE),
                                                   Outbox.next_attempt_at <= now)
        if ids is not None:
            query = query.where(col(Outbox.id).in_(ids))
        due = list(s.exec(query.order_by(col(Outbox.id)).limit(limit)))
    try:
        for row_id in due:
            outcome = _deliver_guarded(row_id)
            counts["failed" if outcome == "down" else outcome] += 1
            if outcome == "down":
                break
    finally:
        backend().close()
    return counts


def _deliver_guarded(row_id: int) -> str:
    """Deliver one row; nothing that goes wrong with it stops the pass."""
    try:
        return _deliver_one(row_id)
    except SQLAlchemyError as exc:  # the database, not the email: an ordinary retry
        log.exception("outbox row %s: database error", row_id)
        with contextlib.suppress(SQLAlchemyError):
            _record_failure(row_id, f"database error: {type(exc).__name__}")
        return "failed"


def _deliver_one(row_id: int) -> str:
    if not claim(row_id):
        return "skipped"
    try:
        rendered = _render_claimed(row_id)
    except SQLAlchemyError:
        raise
    except Exception as exc:  # noqa: BLE001 - a bug or bad row: a few tries, then give up
        log.exception("rendering outbox row %s failed", row_id)
        _record_failure(row_id, f"could not be rendered: {type(exc).__name__}: {exc}",
                        limit=RENDER_ATTEMPTS)
        return "failed"
    if rendered is None:
        return "skipped"
    out, seat_id, seen, merged, told = rendered
    try:
        backend().send(out)
    except MailError as exc:
        _record_failure(row_id, str(exc), permanent=exc.permanent)
        return "down" if exc.server else "failed"
    try:
        _mark_sent(row_id, seat_id, seen, merged, told)
    except SQLAlchemyError:  # sent, but not recorded: the lease runs out and it is resent
        log.exception("outbox row %s was sent but could not be marked sent", row_id)
    return "sent"


# The mail loop's writes as Core statements, built once: each email is claimed, its links
# stored and it is marked sent, three short transactions whose ORM versions (an object
# loaded with its context, a unit of work) cost more than the statements themselves.
_OUTBOX = table_of(Outbox)
_SEAT = table_of(Seat)
_MARK_SENT = (update(_OUTBOX).where(_OUTBOX.c.id == bindparam("row_id"))
              .values(status=OutboxStatus.SENT, sent_at=bindparam("now"), last_error=None))
_SEEN = (update(_SEAT).where(_SEAT.c.id == bindparam("seat_id"),
                             _SEAT.c.seen_event_seq < bindparam("seen"))
         .values(seen_event_seq=bindparam("seen")))
_MERGED = (update(_OUTBOX).where(_OUTBOX.c.id.in_(bindparam("merged", expanding=True)),
                                 _OUTBOX.c.status == OutboxStatus.HELD)
           .values(status=OutboxStatus.MERGED))


def _writing() -> AbstractContextManager[Connection]:
    """A short writing transaction of the mail loop's own Core statements, on a connection
    without an ORM session around it (the engine's begin gives it the write lock and the
    writer gate as a session's would): its statements queue no mail and touch no object,
    so the session's bookkeeping for each of an email's three transactions was all cost."""
    return get_engine().begin()


def _mark_sent(row_id: int, seat_id: int | None, seen: int | None, merged: list[int],
               told: list[list[int]]) -> None:
    with _writing() as conn:
        conn.execute(_MARK_SENT, {"row_id": row_id, "now": utcnow()})
        if seat_id is not None and seen is not None:
            conn.execute(_SEEN, {"seat_id": seat_id, "seen": seen})
        if told:  # an email about several games (a digest): what it told each seat
            conn.execute(_SEEN, [{"seat_id": i, "seen": n} for i, n in told])
        if merged:
            conn.execute(_MERGED, {"merged": merged})


def claim(row_id: int) -> bool:
    """Claim a due row with a lease, in a committed transaction of its own, so that the
    attempt counts even if rendering or the process dies. A row whose attempts are used
    up (a sender kept dying while holding it) is given up instead."""
    now = utcnow()
    limit = int(current_app.config["MAIL_MAX_ATTEMPTS"])
    lease = timedelta(seconds=float(current_app.config["MAIL_LEASE_SECONDS"]))
    with _writing() as conn:  # Core, not the ORM's bulk update (see _MARK_SENT)
        claimed = conn.execute(_CLAIM, {"row_id": row_id, "now": now, "limit": limit,
                                        "until": now + lease})
        if claimed.rowcount == 1:
            return True
        conn.execute(_GIVE_UP, {"row_id": row_id, "now": now, "limit": limit, "error": (
            f"gave up after {limit} attempts (the last ones never finished)")})
        return False


_DUE_ROW = (_OUTBOX.c.id == bindparam("row_id"), _OUTBOX.c.status.in_(_DUE),
            _OUTBOX.c.next_attempt_at <= bindparam("now"))
_CLAIM = (update(_OUTBOX).where(*_DUE_ROW, _OUTBOX.c.attempts < bindparam("limit"))
          .values(status=OutboxStatus.SENDING, next_attempt_at=bindparam("until"),
                  attempts=_OUTBOX.c.attempts + 1))
_GIVE_UP = (update(_OUTBOX).where(*_DUE_ROW, _OUTBOX.c.attempts >= bindparam("limit"))
            .values(status=OutboxStatus.UNDELIVERABLE, last_error=bindparam("error"),
                    failed_at=bindparam("now")))


def _render_claimed(row_id: int) -> tuple[Outgoing, int | None, int | None,
                                          list[int], list[list[int]]] | None:
    """Mint the claimed row's links and render it (None: it must not be sent now).

    The rendering reads a snapshot that waits for nobody and holds up no one (it takes a
    few milliseconds); only then a short writing transaction stores the links' tokens and
    what rendering changed on the row (a list of games filled in at sending, or why it is
    skipped), before the email can go out."""
    tokens: list[dict[str, Any]] = []
    with read_scope() as s, s.no_autoflush:
        s.info[DEFERRED_TOKENS] = tokens
        row, game, seat, to_player = load_row(s, row_id)
        prepare = PREPARE_AT_SENDING.get(row.template)
        stale = why_not_send(s, row, game, seat, to_player) or (
            prepare(s, row) if prepare else None)
        rendered = None
        rule = None if stale else address_rule(s, row, seat, utcnow())
        if rule is not None and rule[0] == "skip":
            stale = rule[1]
        if stale:
            row.status, row.last_error = OutboxStatus.SKIPPED, stale
        elif rule is not None:  # the address's quiet hours: due again when they end
            row.status, row.next_attempt_at, row.last_error = (
                OutboxStatus.PENDING, rule[1], QUIET)
            row.attempts -= 1  # not an attempt to send
        else:
            out, seen, merged = render_row(s, row, game, seat, to_player)
            # what the seat has been told moves on only when the email went to its player
            rendered = (out, row.seat_id if to_player else None, seen, merged,
                        row.context.get("seen_seats") or [])
        changes = {attr.key: attr.value for attr in inspect(row).attrs
                   if attr.history.has_changes()}
    if tokens or changes:
        with _writing() as conn:
            if tokens:
                conn.execute(INSERT_TOKEN, tokens)
            if changes:
                conn.execute(update(_OUTBOX).where(_OUTBOX.c.id == row_id).values(**changes))
    return rendered


def _record_failure(row_id: int, error: str, permanent: bool = False,
                    limit: int | None = None) -> None:
    limit = limit or int(current_app.config["MAIL_MAX_ATTEMPTS"])
    with session_scope() as s:
        row = get_row(s, Outbox, row_id)
        row.last_error = error[:2000]
        row.failed_at = utcnow()
        if permanent or row.attempts >= limit:
            row.status = OutboxStatus.UNDELIVERABLE
            log.warning("outbox row %s is undeliverable after %s attempts: %s", row_id,
                        row.attempts, error)
            return
        delay = min(MAX_BACKOFF, timedelta(seconds=30 * 2 ** min(row.attempts - 1, 10)))
        row.status = OutboxStatus.PENDING
        row.next_attempt_at = utcnow() + delay
