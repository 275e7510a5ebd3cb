"""Email: rendering the .txt/.html twins, the Outbox delivery loop, and the backends.

Web requests only queue email (Outbox rows written in the move's transaction); the
clock process delivers them (``deliver_due``), woken as soon as a row is queued.

Delivery is at-least-once and never loses mail silently: a row is claimed with a lease,
its links are minted as tokens and the message rendered in one transaction, then it is
sent, then marked sent. A failure records the error and schedules a retry with backoff;
after ``MAIL_MAX_ATTEMPTS`` failures (3 for a message that cannot even be rendered), or
at once when the mail server refuses the message for good (a 5xx reply), the row becomes
``undeliverable`` and the host page says why. A crashed sender's lease runs out and
another pass picks the row up. The Message-ID is fixed per row.

Every email of a game to one address carries the same Subject (the game's name), starts
with one line that says what is asked (mail clients show it as the preview), and
threads on the first email that address received from the game.
"""

from __future__ import annotations

import binascii
import contextlib
import json
import logging
import os
import re
import smtplib
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.mime.multipart import MIMEMultipart
from email.mime.nonmultipart import MIMENonMultipart
from email.parser import BytesHeaderParser
from email.policy import Compat32, compat32
from email.utils import format_datetime, parseaddr
from pathlib import Path
from typing import Any

from flask import Flask, current_app, render_template
from flask_babel import force_locale, gettext
from sqlalchemy import bindparam, func, union_all, update
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import select

from engine.registry import get_game
from pbem import headers, localize
from pbem.db import session_scope
from pbem.i18n import format_deadline, language, mark
from pbem.models import Decision, EventLog, Game, Outbox, Seat, Suppression, utcnow
from pbem.tokens import mint_many

log = logging.getLogger("pbem.mail")
LEASE = timedelta(minutes=2)
MAX_BACKOFF = timedelta(hours=1)
RENDER_ATTEMPTS = 3  # a message that cannot be rendered is given up after this many tries
LINK_PATHS = {"action": "/a/", "page": "/g/", "admin": "/admin/", "invite": "/invite/",
              "host_confirm": "/host/confirm/", "handover": "/handover/",
              "unsubscribe": "/u/", "my_games": "/my/"}
# Turn emails are never held back by the caps; the player asked for them by playing.
TURN_TEMPLATES = frozenset({"decision", "result"})
# Emails to people who have not (yet) joined a game.
INVITE_TEMPLATES = frozenset({"host_confirm", "invitation", "handover_invite"})
# What a player who chose "only my turns" no longer gets.
MUTABLE_TEMPLATES = frozenset({"notice", "game_started"})
_SHORT_PRINTABLE = re.compile(r"[\x20-\x7e]*\Z")
# Emails whose recipient and content are settled only when they are sent: template ->
# a function (session, row) that fills the row in, or says why nothing goes out (the row
# is then skipped). The services register them: the list of one's games is asked for by
# address, and looked up here, off the request (``pbem.services.my_games``).
PREPARE_AT_SENDING: dict[str, Callable[[Any, Outbox], str | None]] = {}


class _Wire(Compat32):
    """``compat32`` with CRLF line ends; a header that is printable ASCII, fits on one
    line and has no run of blanks (most of them) is written as it is, which is what the
    ``Header`` class would write, without building one (a good part of a message's cost)."""

    def fold_binary(self, name: str, value: Any) -> bytes:
        if (isinstance(value, str) and _SHORT_PRINTABLE.match(value)
                and not value.endswith(" ") and "  " not in value
                and len(name) + 2 + len(value) <= self.max_line_length):
            return f"{name}: {value}{self.linesep}".encode("ascii")
        return super().fold_binary(name, value)


WIRE = _Wire(linesep="\r\n", max_line_length=78)


# --------------------------------------------------------------------------- backends


class MailError(Exception):
    """A message could not be handed to the mail server. ``permanent``: the server
    refused this message for good; ``server``: the server itself is unreachable or hung,
    so the rest of this pass would fail the same way."""

    def __init__(self, message: str, permanent: bool = False, server: bool = False) -> None:
        super().__init__(message)
        self.permanent, self.server = permanent, server


@dataclass(frozen=True)
class Outgoing:
    """One message as it goes on the wire: envelope and bytes."""

    sender: str
    recipient: str
    data: bytes


class MemoryBackend:
    """Keeps messages in a list (unit tests)."""

    def __init__(self) -> None:
        self.sent: list[Outgoing] = []
        self.fail: Exception | None = None

    def send(self, out: Outgoing) -> None:
        """Keep ``out``; or fail as told: a MailError as it is, any other exception as a
        mail server that is down."""
        if isinstance(self.fail, MailError):
            raise self.fail
        if self.fail is not None:
            raise MailError(str(self.fail), server=True)
        self.sent.append(out)

    def close(self) -> None:
        pass


class DevMailbox:
    """Writes each message as an .eml file; the dev mailbox page reads them back."""

    def __init__(self, directory: str) -> None:
        self.dir = Path(directory)

    def send(self, out: Outgoing) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        name = f"{stamp}-{os.getpid()}-{threading.get_ident() % 10000}.eml"
        tmp = self.dir / (name + ".tmp")
        tmp.write_bytes(out.data)
        tmp.replace(self.dir / name)

    def messages(self) -> list[Path]:
        if not self.dir.is_dir():
            return []
        return sorted(self.dir.glob("*.eml"), reverse=True)

    def close(self) -> None:
        pass


@dataclass
class SMTPBackend:
    """SMTP with one connection per thread, reused for a whole delivery pass."""

    host: str
    port: int
    user: str | None = None
    password: str | None = None
    starttls: bool = False
    timeout: float = 10.0
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def _connection(self) -> smtplib.SMTP:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
            try:
                if self.starttls:
                    conn.starttls(context=ssl.create_default_context())
                if self.user:
                    conn.login(self.user, self.password or "")
            except BaseException:
                conn.close()
                raise
            self._local.conn = conn
        return conn

    def send(self, out: Outgoing) -> None:
        try:
            self._connection().sendmail(out.sender, [out.recipient], out.data)
        except smtplib.SMTPRecipientsRefused as exc:
            self.close()
            code, reply = next(iter(exc.recipients.values()), (450, b""))
            raise MailError(f"recipient refused: {code} {_reply(reply)}",
                            permanent=code >= 500) from exc
        except smtplib.SMTPSenderRefused as exc:  # our configuration: every message fails
            self.close()
            raise MailError(f"sender refused: {exc.smtp_code} {_reply(exc.smtp_error)}",
                            server=True) from exc
        except smtplib.SMTPResponseException as exc:
            self.close()
            raise MailError(f"refused: {exc.smtp_code} {_reply(exc.smtp_error)}",
                            permanent=exc.smtp_code >= 500) from exc
        except (OSError, smtplib.SMTPException) as exc:  # down, hung, disconnected
            self.close()
            raise MailError(f"{type(exc).__name__}: {exc}", server=True) from exc

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            try:
                conn.quit()
            except (OSError, smtplib.SMTPException):
                conn.close()


def _reply(text: bytes | str) -> str:
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)


class ConfigError(RuntimeError):
    """The server cannot start with this configuration; the message says what to set."""


def configure(app: Flask) -> None:
    """Pick the mail backend, failing closed: with no mail configuration the server
    refuses to start instead of showing every secret link in a public dev mailbox."""
    kind = app.config.get("MAIL_BACKEND")
    if not kind:
        if not app.config.get("SMTP_HOST"):
            raise ConfigError(
                "no mail server is configured. Set PBEM_SMTP_HOST (with PBEM_MAIL_FROM) to "
                "send real email, or PBEM_MAIL_BACKEND=dev to keep every email in the dev "
                "mailbox at /dev/mail (for trying pbem on your own machine only: it shows "
                "everyone's secret links).")
        kind = "smtp"
    if kind not in ("smtp", "dev", "memory"):
        raise ConfigError(f"PBEM_MAIL_BACKEND must be smtp, dev or memory, not {kind!r}")
    if kind == "smtp" and not app.config.get("MAIL_FROM"):
        raise ConfigError("PBEM_MAIL_FROM must be set to send email by SMTP, e.g. "
                          "'Friday games <games@example.org>'")
    app.config["MAIL_BACKEND"] = kind
    app.config["MAIL_FROM"] = app.config.get("MAIL_FROM") or "pbem <pbem@pbem.localhost>"
    name, addr = parseaddr(app.config["MAIL_FROM"])
    try:
        addr = headers.parse_address(addr)
    except headers.BadAddress as exc:
        raise ConfigError(f"PBEM_MAIL_FROM {app.config['MAIL_FROM']!r}: {exc}") from None
    if headers.bad_characters(name):
        raise ConfigError("PBEM_MAIL_FROM has control characters in its name")
    app.config["MAIL_FROM_PAIR"] = (name, addr)
    domain = (app.config.get("MAIL_DOMAIN") or addr.split("@", 1)[1]).lower()
    try:
        domain = headers.parse_address(f"x@{domain}").split("@", 1)[1]  # IDN: xn-- form
    except headers.BadAddress:
        raise ConfigError(f"PBEM_MAIL_DOMAIN {domain!r} must be a domain name "
                          "(it ends every Message-ID), not an address or IP") from None
    app.config["MAIL_DOMAIN"] = domain


class Unconfigured:
    """The mail backend of an app loaded without a usable mail configuration by the
    ``flask`` command, for a command that sends nothing (``--help``, ``migrate``): it
    holds the configuration's error, which says what to set, for ``require``."""

    def __init__(self, error: ConfigError) -> None:
        self.error = error

    def send(self, out: Any) -> None:
        raise self.error

    def close(self) -> None:
        pass


def init_app(app: Flask, required: bool = True) -> None:
    """Configure the mail backend; with ``required=False`` a configuration error waits
    (an ``Unconfigured`` backend) for the first use that sends mail."""
    try:
        configure(app)
    except ConfigError as exc:
        if required:
            raise
        app.extensions["pbem.mail"] = Unconfigured(exc)
        return
    kind = app.config["MAIL_BACKEND"]
    if kind == "memory":
        backend: Any = MemoryBackend()
    elif kind == "smtp":
        backend = SMTPBackend(app.config["SMTP_HOST"], int(app.config["SMTP_PORT"]),
                              app.config.get("SMTP_USER"), app.config.get("SMTP_PASSWORD"),
                              bool(app.config.get("SMTP_STARTTLS")),
                              float(app.config.get("SMTP_TIMEOUT", 10)))
    else:
        backend = DevMailbox(app.config["MAILBOX_DIR"])
    app.extensions["pbem.mail"] = backend


def backend(app: Flask | None = None) -> Any:
    return (app or current_app).extensions["pbem.mail"]


def require(app: Flask | None = None) -> None:
    """Raise the ``ConfigError`` that says what to set if mail cannot be sent."""
    found = backend(app)
    if isinstance(found, Unconfigured):
        raise found.error


# --------------------------------------------------------------------------- delivery


def deliver_due(limit: int = 100, ids: list[int] | None = None) -> dict[str, int]:
    """Send what is due (or just ``ids``); returns counts of sent, failed and skipped.

    A mail server that is down or hung ends the pass at its first failure (the other
    rows would only wait for the same timeout); a broken row never blocks the others."""
    require()  # before touching a row: no attempt is spent on a missing configuration
    counts = {"sent": 0, "failed": 0, "skipped": 0}
    now = utcnow()
    with session_scope() as s:
        query = select(Outbox.id).where(Outbox.status.in_(("pending", "sending")),
                                        Outbox.next_attempt_at <= now)
        if ids is not None:
            query = query.where(Outbox.id.in_(ids))
        due = list(s.exec(query.order_by(Outbox.id).limit(limit)))
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
    if not _claim(row_id):
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
    out, seat_id, seen, merged = rendered
    try:
        backend().send(out)
    except MailError as exc:
        _record_failure(row_id, str(exc), permanent=exc.permanent)
        return "down" if exc.server else "failed"
    try:
        _mark_sent(row_id, seat_id, seen, merged)
    except SQLAlchemyError:  # sent, but not recorded: the lease runs out and it is resent
        log.exception("outbox row %s was sent but could not be marked sent", row_id)
    return "sent"


def _mark_sent(row_id: int, seat_id: int | None, seen: int | None, merged: list[int]) -> None:
    with session_scope() as s:
        row = s.get(Outbox, row_id)
        row.status, row.sent_at, row.last_error = "sent", utcnow(), None
        seat = s.get(Seat, seat_id) if seat_id else None
        if seat is not None and seen is not None and seen > seat.seen_event_seq:
            seat.seen_event_seq = seen
        if merged:
            s.execute(update(Outbox).where(Outbox.id.in_(merged), Outbox.status == "held")
                      .values(status="merged"))


def _claim(row_id: int) -> bool:
    """Claim a due row with a lease, in a committed transaction of its own, so that the
    attempt counts even if rendering or the process dies. A row whose attempts are used
    up (a sender kept dying while holding it) is given up instead."""
    now = utcnow()
    limit = int(current_app.config["MAIL_MAX_ATTEMPTS"])
    due = (Outbox.id == row_id, Outbox.status.in_(("pending", "sending")),
           Outbox.next_attempt_at <= now)
    with session_scope() as s:
        claimed = s.execute(update(Outbox).where(*due, Outbox.attempts < limit)
                            .values(status="sending", next_attempt_at=now + LEASE,
                                    attempts=Outbox.attempts + 1))
        if claimed.rowcount == 1:
            return True
        s.execute(update(Outbox).where(*due, Outbox.attempts >= limit).values(
            status="undeliverable",
            last_error=f"gave up after {limit} attempts (the last ones never finished)"))
        return False


def _render_claimed(row_id: int) -> tuple[Outgoing, int | None, int | None,
                                          list[int]] | None:
    """Mint the claimed row's links and render it (None: it must not be sent now)."""
    with session_scope() as s:
        row, game, seat, to_player = load_row(s, row_id)
        prepare = PREPARE_AT_SENDING.get(row.template)
        stale = _why_not_send(s, row, game, seat, to_player) or (
            prepare(s, row) if prepare else None)
        if stale:
            row.status, row.last_error = "skipped", stale
            return None
        out, seen, merged = render_row(s, row, game, seat, to_player)
        # what the seat has been told moves on only when the email went to its player
        return out, row.seat_id if to_player else None, seen, merged


# The reads of rendering, each built once: SQLAlchemy memoises a statement's cache key on
# the statement object, so a prebuilt one is neither built nor keyed again for every email.
_ROW = (select(Outbox, Game, Seat).outerjoin(Game, Game.id == Outbox.game_id)
        .outerjoin(Seat, Seat.id == Outbox.seat_id).where(Outbox.id == bindparam("id")))
_SEATS = select(Seat).where(Seat.game_id == bindparam("game_id")).order_by(Seat.position)
_SUPPRESSED = select(Suppression.scope).where(Suppression.address == bindparam("rcpt"))
_EVENTS_SINCE = (select(EventLog).where(EventLog.game_id == bindparam("game_id"),
                                        EventLog.seq > bindparam("since"))
                 .order_by(EventLog.seq))
_OPEN_DECISIONS = (select(Decision).where(Decision.game_id == bindparam("game_id"),
                                          Decision.closed_at.is_(None))
                   .order_by(Decision.deadline_at, Decision.position))
_HELD = select(Outbox.id).where(Outbox.seat_id == bindparam("seat_id"),
                                Outbox.rcpt == bindparam("rcpt"), Outbox.status == "held")
_SENT_BEFORE = (Outbox.game_id == bindparam("game_id"), Outbox.rcpt == bindparam("rcpt"),
                Outbox.status == "sent", Outbox.id != bindparam("id"))
_THREAD = (select(Outbox.message_id).where(Outbox.id.in_(union_all(
    select(func.min(Outbox.id)).where(*_SENT_BEFORE),
    select(func.max(Outbox.id)).where(*_SENT_BEFORE)))).order_by(Outbox.id))


def load_row(s, row_id: int) -> tuple[Outbox, Game | None, Seat | None, bool]:
    """An outbox row with its game and seat (one query), and whether it goes to the
    seat's own player (not, say, to someone offered the seat)."""
    row, game, seat = s.exec(_ROW, params={"id": row_id}).one()
    return row, game, seat, seat is not None and seat.email.lower() == row.rcpt


def render_row(s, row: Outbox, game: Game | None, seat: Seat | None,
               to_player: bool) -> tuple[Outgoing, int | None, list[int]]:
    """Mint the row's links and render it, in the player's language as it is now (they
    may have changed it since queueing). Writes only the tokens: a caller that rolls back
    renders without a trace (bench/render_mail.py)."""
    with force_locale(seat.language if to_player else row.language):
        return _render(s, row, game, seat, to_player)


def _why_not_send(s, row: Outbox, game: Game | None, seat: Seat | None,
                  to_player: bool) -> str | None:
    """Why this email must not go out now (checked at sending, not only at queueing)."""
    if suppressed(s, row.rcpt, row.template):
        return mark("the address asked not to get email from this server")
    decision_id = row.context.get("decision_id")
    if row.template == "decision" and decision_id is not None:
        decision = s.get(Decision, decision_id)
        if decision is None or decision.closed_at is not None:
            return mark("the decision closed before this email could be sent")
    if seat is None:
        return None
    if row.template == "handover_invite":
        pending = seat.pending_handover or {}
        if str(pending.get("email", "")).lower() != row.rcpt or game.status != "active":
            return mark("the host withdrew or changed this hand-over, or the game ended")
        return None
    if not to_player:
        # handed over (or re-invited): fresh links for the seat must not reach the old address
        return mark("the seat went to someone else before this email could be sent")
    if game is not None and not may_mail(game, seat, row.template):
        return mark("this person has not joined the game")
    if seat.left_at is not None:
        return mark("the player left the game")
    if seat.mute_notices and row.template in MUTABLE_TEMPLATES:
        return mark("the player asked for turn emails only")
    return None


def suppressed(s, rcpt: str, template: str | None = None) -> bool:
    """Whether address ``rcpt`` (lower case) asked for no email of ``template`` (a
    suppression's scope is a template, or ``all``); without ``template``, whether it
    asked for none at all ("never email me again")."""
    scope = s.execute(_SUPPRESSED, {"rcpt": rcpt}).scalar()
    return scope == "all" or (scope is not None and scope == template)


def may_mail(game: Game, seat: Seat, template: str) -> bool:
    """Before a person has accepted, only their invitation (or the host's confirmation
    link) may reach them. Checked when queueing and again when sending."""
    if game.status == "awaiting_host":
        return template == "host_confirm" and seat.is_host
    if seat.invite != "accepted":
        return template == "invitation" and seat.invite == "invited"
    return True


def _record_failure(row_id: int, error: str, permanent: bool = False,
                    limit: int | None = None) -> None:
    limit = limit or int(current_app.config["MAIL_MAX_ATTEMPTS"])
    with session_scope() as s:
        row = s.get(Outbox, row_id)
        row.last_error = error[:2000]
        if permanent or row.attempts >= limit:
            row.status = "undeliverable"
            log.warning("outbox row %s is undeliverable after %s attempts: %s", row_id,
                        row.attempts, error)
            return
        delay = min(MAX_BACKOFF, timedelta(seconds=30 * 2 ** min(row.attempts - 1, 10)))
        row.status = "pending"
        row.next_attempt_at = utcnow() + delay


# --------------------------------------------------------------------------- rendering


def _render(s, row: Outbox, game: Game | None, seat: Seat | None,
            to_player: bool) -> tuple[Outgoing, int | None, list[int]]:
    """Render ``row`` (inside ``force_locale`` of its language)."""
    specs = row.context["links"]
    *urls, unsubscribe = _mint_links(
        s, [*specs.values(), {"kind": "unsubscribe",
                              "action": {"address": row.rcpt, "of": row.template}}], row)
    links = dict(zip(specs, urls, strict=True))
    ctx: dict[str, Any] = {"ctx": row.context, "links": links, "game": game, "seat": seat,
                           "base_url": current_app.config["BASE_URL"],
                           "unsubscribe": unsubscribe, "seats": []}
    seen = None
    if game is not None:  # the players, also before the game starts (confirm, invitation)
        ctx["seats"] = list(s.exec(_SEATS, params={"game_id": game.id}))
    if game is not None and game.state:
        mod = get_game(game.engine)
        state = mod.from_json(json.loads(game.state))
        position = seat.position if seat else None
        tr = localize.translation_for(mod, state, language())
        ctx["view"] = localize.view(mod, mod.view(state, position), tr)
        ctx["card"] = localize.lookup(mod, state, tr)
        since = seat.seen_event_seq if seat else 0
        events = s.exec(_EVENTS_SINCE, params={"game_id": game.id, "since": since}).all()
        ctx["events"] = [e for e in events
                         if e.visible_to is None or position in (e.visible_to or [])]
        seen = game.event_seq
    tz = seat.timezone if to_player else "UTC"
    if game is not None and game.status == "active" and game.paused_at is None:
        ctx["deadlines"] = open_deadlines(s, game, ctx["seats"], tz)
    if "deadline" in row.context:  # as it is now (extended, paused...), not when queued
        decision_id = row.context.get("decision_id")
        decision = s.get(Decision, decision_id) if decision_id is not None else None
        when = row.context["deadline"]
        if decision is not None and decision.deadline_at is not None:
            when = decision.deadline_at.isoformat()
        ctx["deadline"] = format_deadline(when, tz)
    merged: list[int] = []
    if row.template == "decision" and row.seat_id is not None:
        merged = list(s.exec(_HELD, params={"seat_id": row.seat_id, "rcpt": row.rcpt}))
    ctx["held"] = len(merged)
    return build_message(row, game, ctx, thread_of(s, row)), seen, merged


def thread_of(s, row: Outbox) -> list[str]:
    """Message-IDs this email answers: the first and the latest email this address got
    from the game (both really received, so every mail program can join the thread)."""
    if row.game_id is None:
        return []
    return list(s.exec(_THREAD, params={"game_id": row.game_id, "rcpt": row.rcpt,
                                        "id": row.id}))


def open_deadlines(s, game: Game, seats: list[Seat], tz: str) -> list[dict[str, str]]:
    """Who the game waits for and until when, in zone ``tz`` and UTC, read at sending."""
    rows = s.exec(_OPEN_DECISIONS, params={"game_id": game.id}).all()
    return [{"name": seats[d.position].name, "kind": d.kind, "decision_id": d.id,
             "host_reminded_at": d.host_reminded_at,
             **format_deadline(d.deadline_at.isoformat(), tz)}
            for d in rows if d.deadline_at is not None]


def _mint_links(s, specs: list[dict], row: Outbox) -> list[str]:
    """Mint a token for each link spec of ``row`` (in one statement); their URLs."""
    # An email about no one game (the list of one's games) has no game; a token names one:
    # one of the recipient's, stored with the email.
    # A host link names the address it went to: who presses its buttons (play again).
    game_id = row.game_id or row.context.get("token_game")
    raws = mint_many(s, [{"kind": spec["kind"], "game_id": game_id, "seat_id": row.seat_id,
                          "decision_id": spec.get("decision_id"),
                          "action": spec.get("action") or (
                              {"address": row.rcpt} if spec["kind"] == "admin" else None)}
                         for spec in specs])
    base = current_app.config["BASE_URL"].rstrip("/")
    return [base + LINK_PATHS[spec["kind"]] + raw for spec, raw in zip(specs, raws, strict=True)]


def game_name(game: Game | None, seats: list[Seat]) -> str:
    """What every email of a game is called: its title (set at creation, see
    ``default_title``; computed the same way for a game made before titles were)."""
    if game is None:
        return "pbem"
    return game.title or default_title(get_game(game.engine), [x.name for x in seats])


def default_title(game: Any, names: list[str]) -> str:
    """The name of a game without a title: the game and its players, fixed at creation
    so that every email of the game keeps one subject (mail programs thread on it)."""
    title = f"{game.TITLE}: {', '.join(names)}"
    return title if len(title) <= 100 else title[:99].rsplit(" ", 1)[0] + "…"


def build_message(row: Outbox, game: Game | None, ctx: dict[str, Any],
                  thread: list[str] | None = None) -> Outgoing:
    """Render the .txt and .html twins of ``row.template`` (in the language of the
    ``force_locale`` around the call) and put them in a message whose every header is safe
    (see ``pbem.headers``)."""
    lang = language()
    text = render_template(f"emails/{row.template}.txt", **ctx).lstrip("\n")
    headline = text.split("\n", 1)[0].strip()
    html = render_template(f"emails/{row.template}.html", headline=headline,
                           ctx_language=lang, inline_css=True, **ctx)
    # an email about no one game is called by its first line ("Your games")
    subject = game_name(game, ctx.get("seats") or []) if game is not None else headline
    list_name = gettext("pbem games")
    name, sender = current_app.config["MAIL_FROM_PAIR"]
    domain = current_app.config["MAIL_DOMAIN"]
    msg = MIMEMultipart("alternative")
    msg["Subject"] = headers.unstructured(subject)
    msg["From"] = headers.mailbox(name, sender)
    msg["To"] = headers.mailbox(row.to_name, row.to_addr)
    msg["Date"] = format_datetime(utcnow())
    msg["Message-ID"] = row.message_id
    if thread:
        msg["In-Reply-To"] = thread[-1]
        msg["References"] = " ".join(thread)
    list_id = f"{game.id}.games.{domain}" if game is not None else f"mail.{domain}"
    msg["List-Id"] = f"{headers.phrase(subject if game else list_name)} <{list_id}>"
    msg["List-Unsubscribe"] = f"<{ctx['unsubscribe']}>"
    msg["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    msg["Auto-Submitted"] = "auto-generated"
    msg["X-Auto-Response-Suppress"] = "All"
    msg["Content-Language"] = lang
    msg.attach(_text_part(text, "plain"))
    msg.attach(_text_part(html, "html"))
    data = msg.as_bytes(policy=WIRE)
    _check_header_block(data, {k.lower() for k in msg})
    return Outgoing(sender, row.to_addr, data)


def _text_part(body: str, subtype: str) -> MIMENonMultipart:
    """A UTF-8 text part, quoted-printable (readable in any mail program's source view):
    what ``MIMEText`` with a QP charset writes, encoded by ``binascii`` (C) instead of
    ``email.quoprimime`` (a Python loop over every character, most of a message's cost)."""
    part = MIMENonMultipart("text", subtype, charset="utf-8")
    part["Content-Transfer-Encoding"] = "quoted-printable"
    part.set_payload(binascii.b2a_qp(body.encode("utf-8"), istext=True).decode("ascii"))
    return part


def _check_header_block(data: bytes, expected: set[str]) -> None:
    """Refuse to send a message whose written-out headers are not exactly the ones set
    (a last line of defence against header injection through a value). Only the header
    block (up to the first empty line) is parsed: that is all a mail program reads as
    the message's headers."""
    head = data.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"
    found = [k.lower() for k in BytesHeaderParser(policy=compat32).parsebytes(head)]
    if sorted(found) != sorted(expected):
        raise ValueError(f"unexpected mail headers {sorted(set(found) ^ expected)}")
