"""Bounces: a delivery report that comes back to an email's return path (VERP,
``games+b.<outbox id>.<tag>@`` the sender's mailbox or ``bounce+<outbox id>-<tag>@`` the
inbound domain: ``pbem.mail.compose.return_path``).

A report that says delivery failed for good (Action failed, Status 5.x.x) marks that
email undeliverable with the mail server's reason, which the host page shows. After
``BOUNCE_LIMIT`` such bounces of one address within ``BOUNCE_DAYS``, the server stops
mailing it (a suppression, as a "never email me again") and tells the host of each
running game the address plays in, in the game log and by email, to hand the seat over.
Anything else sent to a return path (a delay notice, an auto-reply) changes nothing
and is never answered.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from flask import current_app
from sqlalchemy import func
from sqlmodel import Session, col, select

from engine.core import Event
from pbem.db import session_scope
from pbem.kinds import EmailTemplate, GameStatus, OutboxStatus, SuppressionScope
from pbem.mail.inbound import Report
from pbem.models import Game, Outbox, Seat, Suppression, utcnow
from pbem.services.plumbing import PAGE_LINK, lock_game, log_events, queue_email, seats_of

log = logging.getLogger("pbem.bounces")
BOUNCED = "bounced:"  # how the error of a bounced email begins (the host page's label)
ADDRESS_BOUNCING = "address_bouncing"  # the server event that tells the host


def record_bounce(row_id: int, report: Report) -> bool:
    """Note the report on outbox row ``row_id``; True when it marked the email
    undeliverable (a hard bounce of an email that was sent)."""
    if not report.hard:
        return False
    with session_scope() as s:
        row = s.get(Outbox, row_id)
        if row is None or row.status != OutboxStatus.SENT:
            return False
        row.status = OutboxStatus.UNDELIVERABLE
        row.last_error = f"{BOUNCED} {report.status} {report.diagnostic}".strip()[:2000]
        row.failed_at = utcnow()
        rcpt = row.rcpt
        s.flush()
        if _hard_bounces(s, rcpt) >= int(current_app.config["BOUNCE_LIMIT"]):
            _stop_mailing(s, rcpt)
    log.info("outbox row %s bounced: %s", row_id, report.status)
    return True


def _hard_bounces(s: Session, rcpt: str) -> int:
    since = utcnow() - timedelta(days=float(current_app.config["BOUNCE_DAYS"]))
    return s.exec(select(func.count()).select_from(Outbox).where(
        Outbox.rcpt == rcpt, Outbox.status == OutboxStatus.UNDELIVERABLE,
        col(Outbox.last_error).startswith(BOUNCED), Outbox.created_at >= since)).one()


def _stop_mailing(s: Session, rcpt: str) -> None:
    """No more mail to ``rcpt``; the host of each running game it plays in is told."""
    if s.get(Suppression, rcpt) is not None:
        return
    s.add(Suppression(address=rcpt, scope=SuppressionScope.ALL))
    games = s.exec(select(Game.id).join(Seat, col(Seat.game_id) == Game.id).where(
        func.lower(Seat.email) == rcpt, Game.status == GameStatus.ACTIVE).distinct()).all()
    for game_id in sorted(games):
        game = lock_game(s, game_id)
        seats = seats_of(s, game.id)
        seat = next(x for x in seats if x.email.lower() == rcpt)
        host = next((x for x in seats if x.is_host), None)
        if host is None:
            continue
        log_events(s, game, [Event(ADDRESS_BOUNCING, seat.position, {},
                                   (host.position,))])
        if host.email.lower() != rcpt:
            queue_email(s, game, host, EmailTemplate.NOTICE, {"headline": ADDRESS_BOUNCING},
                        links={**PAGE_LINK, "admin": {"kind": "admin"}},
                        key=f"notice:bouncing:{game.id}:{seat.id}")
