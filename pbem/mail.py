"""Email: rendering the .txt/.html twins, the Outbox delivery loop, and the backends.

Delivery is at-least-once and never loses mail: a row is claimed with a lease, its links
are minted as tokens and the message rendered in one transaction, then it is sent, then
marked sent. A failure records the error and schedules a retry with backoff; a crashed
sender's lease runs out and another sweep picks the row up. The Message-ID is fixed per
row, so a rare resend after a crash is recognisably the same message.
"""

from __future__ import annotations

import json
import logging
import os
import smtplib
import ssl
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formatdate
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from flask import Flask, current_app, render_template
from flask_babel import force_locale
from sqlalchemy import update
from sqlmodel import select

from engine.core import get_game
from pbem.db import session_scope
from pbem.models import Decision, EventLog, Game, Outbox, Seat, utcnow
from pbem.tokens import mint

log = logging.getLogger("pbem.mail")
LEASE = timedelta(minutes=2)
MAX_BACKOFF = timedelta(hours=1)
LINK_PATHS = {"action": "/a/", "page": "/g/", "admin": "/admin/", "invite": "/invite/",
              "host_confirm": "/host/confirm/"}


# --------------------------------------------------------------------------- backends


class MailError(Exception):
    """A message could not be handed to the mail server."""


class MemoryBackend:
    """Keeps messages in a list (unit tests)."""

    def __init__(self) -> None:
        self.sent: list[EmailMessage] = []
        self.fail: Exception | None = None

    def send(self, msg: EmailMessage) -> None:
        if self.fail is not None:
            raise MailError(str(self.fail))
        self.sent.append(msg)


class DevMailbox:
    """Writes each message as an .eml file; the dev mailbox page reads them back."""

    def __init__(self, directory: str) -> None:
        self.dir = Path(directory)

    def send(self, msg: EmailMessage) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        name = f"{stamp}-{os.getpid()}-{threading.get_ident() % 10000}.eml"
        tmp = self.dir / (name + ".tmp")
        tmp.write_bytes(msg.as_bytes())
        tmp.replace(self.dir / name)

    def messages(self) -> list[Path]:
        if not self.dir.is_dir():
            return []
        return sorted(self.dir.glob("*.eml"), reverse=True)


@dataclass
class SMTPBackend:
    host: str
    port: int
    user: str | None = None
    password: str | None = None
    starttls: bool = False
    timeout: float = 10.0

    def send(self, msg: EmailMessage) -> None:
        try:
            with smtplib.SMTP(self.host, self.port, timeout=self.timeout) as smtp:
                if self.starttls:
                    smtp.starttls(context=ssl.create_default_context())
                if self.user:
                    smtp.login(self.user, self.password or "")
                smtp.send_message(msg)
        except (OSError, smtplib.SMTPException) as exc:
            raise MailError(f"{type(exc).__name__}: {exc}") from exc


def init_app(app: Flask) -> None:
    kind = app.config["MAIL_BACKEND"]
    if kind == "memory":
        backend: Any = MemoryBackend()
    elif kind == "smtp":
        backend = SMTPBackend(app.config["SMTP_HOST"], int(app.config["SMTP_PORT"]),
                              app.config.get("SMTP_USER"), app.config.get("SMTP_PASSWORD"),
                              bool(app.config.get("SMTP_STARTTLS")),
                              float(app.config.get("SMTP_TIMEOUT", 10)))
    elif kind == "dev":
        backend = DevMailbox(app.config["MAILBOX_DIR"])
    else:
        raise RuntimeError(f"PBEM_MAIL_BACKEND must be smtp, dev or memory, not {kind!r}")
    app.extensions["pbem.mail"] = backend


def backend(app: Flask | None = None) -> Any:
    return (app or current_app).extensions["pbem.mail"]


# --------------------------------------------------------------------------- delivery


def deliver_due(limit: int = 100, ids: list[int] | None = None) -> dict[str, int]:
    """Send what is due (or just ``ids``); returns counts of sent, failed and skipped."""
    counts = {"sent": 0, "failed": 0, "skipped": 0}
    now = utcnow()
    with session_scope() as s:
        query = select(Outbox.id).where(Outbox.status.in_(("pending", "sending")),
                                        Outbox.next_attempt_at <= now)
        if ids is not None:
            query = query.where(Outbox.id.in_(ids))
        due = list(s.exec(query.order_by(Outbox.id).limit(limit)))
    for row_id in due:
        try:
            counts[_deliver_one(row_id)] += 1
        except Exception as exc:  # noqa: BLE001 - one broken email must not block the rest
            log.exception("delivering outbox row %s failed", row_id)
            _record_failure(row_id, f"internal error: {type(exc).__name__}: {exc}")
            counts["failed"] += 1
    return counts


def _deliver_one(row_id: int) -> str:
    claimed = _claim_and_render(row_id)
    if claimed is None:
        return "skipped"
    msg, seat_id, seen = claimed
    try:
        backend().send(msg)
    except MailError as exc:
        _record_failure(row_id, str(exc))
        return "failed"
    with session_scope() as s:
        row = s.get(Outbox, row_id)
        row.status, row.sent_at, row.last_error = "sent", utcnow(), None
        seat = s.get(Seat, seat_id) if seat_id else None
        if seat is not None and seen is not None and seen > seat.seen_event_seq:
            seat.seen_event_seq = seen
    return "sent"


def _claim_and_render(row_id: int) -> tuple[EmailMessage, int | None, int | None] | None:
    now = utcnow()
    with session_scope() as s:
        claimed = s.execute(
            update(Outbox)
            .where(Outbox.id == row_id, Outbox.status.in_(("pending", "sending")),
                   Outbox.next_attempt_at <= now)
            .values(status="sending", next_attempt_at=now + LEASE,
                    attempts=Outbox.attempts + 1))
        if claimed.rowcount != 1:
            return None  # someone else has it, or it is done
        row = s.get(Outbox, row_id)
        stale = _is_stale(s, row)
        if stale:
            row.status, row.last_error = "skipped", stale
            return None
        msg, seen = _render(s, row)
        return msg, row.seat_id, seen


def _is_stale(s, row: Outbox) -> str | None:
    """A decision email whose decision closed before it could be sent is not sent."""
    decision_id = row.context.get("decision_id")
    if row.template == "decision" and decision_id is not None:
        decision = s.get(Decision, decision_id)
        if decision is None or decision.closed_at is not None:
            return "the decision closed before this email could be sent"
    seat = s.get(Seat, row.seat_id) if row.seat_id is not None else None
    if seat is not None and seat.email.lower() != row.to_addr.lower():
        # handed over (or re-invited): fresh links for the seat must not reach the old address
        return "the seat went to someone else before this email could be sent"
    return None


def _record_failure(row_id: int, error: str) -> None:
    with session_scope() as s:
        row = s.get(Outbox, row_id)
        delay = min(MAX_BACKOFF, timedelta(seconds=30 * 2 ** min(row.attempts - 1, 10)))
        row.status, row.last_error = "pending", error[:2000]
        row.next_attempt_at = utcnow() + delay


# --------------------------------------------------------------------------- rendering


def _render(s, row: Outbox) -> tuple[EmailMessage, int | None]:
    game = s.get(Game, row.game_id) if row.game_id else None
    seat = s.get(Seat, row.seat_id) if row.seat_id else None
    links = {name: _mint_link(s, spec, row) for name, spec in row.context["links"].items()}
    ctx: dict[str, Any] = {"ctx": row.context, "links": links, "game": game, "seat": seat,
                           "base_url": current_app.config["BASE_URL"]}
    seen = None
    if game is not None:  # the players, also before the game starts (confirm, invitation)
        ctx["seats"] = list(s.exec(select(Seat).where(Seat.game_id == game.id)
                                   .order_by(Seat.position)))
    if game is not None and game.state:
        mod = get_game(game.engine)
        state = mod.from_json(json.loads(game.state))
        position = seat.position if seat else None
        ctx["view"] = mod.view(state, position)
        ctx["card"] = lambda cid: mod.card_info(state, cid)
        since = seat.seen_event_seq if seat else 0
        events = s.exec(select(EventLog).where(EventLog.game_id == game.id,
                                               EventLog.seq > since)
                        .order_by(EventLog.seq)).all()
        ctx["events"] = [e for e in events
                         if e.visible_to is None or position in (e.visible_to or [])]
        seen = game.event_seq
    tz = seat.timezone if seat else "UTC"
    if game is not None and game.status == "active" and game.paused_at is None:
        ctx["deadlines"] = open_deadlines(s, game, ctx["seats"], tz)
    if "deadline" in row.context:  # as it is now (extended, paused...), not when queued
        decision_id = row.context.get("decision_id")
        decision = s.get(Decision, decision_id) if decision_id is not None else None
        when = row.context["deadline"]
        if decision is not None and decision.deadline_at is not None:
            when = decision.deadline_at.isoformat()
        ctx["deadline"] = format_deadline(when, tz)
    return build_message(row, game, ctx), seen


def open_deadlines(s, game: Game, seats: list[Seat], tz: str) -> list[dict[str, str]]:
    """Who the game waits for and until when, in zone ``tz`` and UTC, read at sending."""
    rows = s.exec(select(Decision).where(Decision.game_id == game.id,
                                         Decision.closed_at.is_(None))
                  .order_by(Decision.deadline_at, Decision.position)).all()
    return [{"name": seats[d.position].name, "kind": d.kind,
             **format_deadline(d.deadline_at.isoformat(), tz)}
            for d in rows if d.deadline_at is not None]


def _mint_link(s, spec: dict, row: Outbox) -> str:
    kind = spec["kind"]
    raw = mint(s, kind, row.game_id, row.seat_id, spec.get("decision_id"), spec.get("action"))
    return current_app.config["BASE_URL"].rstrip("/") + LINK_PATHS[kind] + raw


def format_deadline(iso: str, tz: str) -> dict[str, str]:
    """A deadline as absolute times: the recipient's zone and UTC (never 'in 2 days')."""
    when = datetime.fromisoformat(iso)
    local = when.astimezone(ZoneInfo(tz))
    return {"local": local.strftime("%A %d %B %Y, %H:%M") + f" ({tz})",
            "utc": when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "iso": when.isoformat()}


def build_message(row: Outbox, game: Game | None, ctx: dict[str, Any]) -> EmailMessage:
    """Render the .txt and .html twins of ``row.template`` in the recipient's language."""
    with force_locale(row.language):
        text = render_template(f"emails/{row.template}.txt", **ctx)
        html = render_template(f"emails/{row.template}.html", **ctx)
    subject, _, body = text.partition("\n")
    msg = EmailMessage()
    msg["Subject"] = " ".join(subject.removeprefix("Subject:").split())
    msg["From"] = current_app.config["MAIL_FROM"]
    msg["To"] = Address(display_name=row.to_name, addr_spec=row.to_addr)
    msg["Date"] = formatdate(localtime=False)
    msg["Message-ID"] = row.message_id
    if game is not None:
        msg["In-Reply-To"] = game.thread_id
        msg["References"] = game.thread_id
    msg["Auto-Submitted"] = "auto-generated"
    msg.set_content(body.lstrip("\n"))
    msg.add_alternative(html, subtype="html")
    return msg

