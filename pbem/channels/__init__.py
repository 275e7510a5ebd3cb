"""Notices that are not emails: the channels beside email (a table's chat webhooks, a
player's browsers by Web Push, ...).

The services record each piece of news once, as they always have: an email queued for a
seat (``services.plumbing.queue_email``/``queue_emails``: who, what kind, which game,
what is asked, by when, in its context). In the same transaction, every registered
channel is asked which of its targets are to hear of it (``Channel.targets``), and a
``Notice`` row is written for each (``queue_notices``). The channels deliver their rows
from there, with leases, retries, backoff and the address's settings (quiet hours,
digest, news, turn emails only) as the mail loop delivers emails
(``pbem.channels.delivery``); the email itself is untouched.

A new channel is a module with one ``Channel`` object named ``CHANNEL`` and its name in
``REGISTERED`` below (and, if it has targets to set, its table and form).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import insert, select
from sqlmodel import Session

from pbem import wake
from pbem.kinds import EmailTemplate, OutboxStatus
from pbem.models import Game, Notice, Seat, page_version_moved, table_of, utcnow

# The channels beside email: the modules that hold them (one line each).
REGISTERED: tuple[str, ...] = (
    "pbem.channels.webhook",  # a table's chat webhooks (Discord, Slack, Matrix, JSON)
    "pbem.channels.push",  # browser notifications by Web Push
)


@dataclass(frozen=True, slots=True)
class Target:
    """One of a channel's targets that is to hear of a piece of news."""

    target_id: int  # the channel's own row (a webhook, a push subscription...)
    seat: Seat | None  # the seat the news is for (None: the whole table)
    rcpt: str = ""  # the address whose settings apply ("": none)
    language: str = "en"
    # hold this seat's email of the same news this long (a push to a browser may be
    # answered on the page first: the email of a decision closed by then is not sent)
    email_delay: timedelta | None = None


@dataclass(frozen=True, slots=True)
class Skip:
    """Nothing goes out for this notice, for this reason (stored on the row)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Later:
    """Not now: due again at ``until``."""

    until: datetime


@dataclass(frozen=True, slots=True)
class Send:
    """What to send (the channel's own payload, made while the row was read)."""

    payload: Any


class ChannelError(Exception):
    """A delivery failed. ``permanent``: retrying cannot help (the target is gone, or
    refuses for good); else it is retried with backoff, and after
    ``delivery.STOP_AFTER`` failures in a row the target itself is stopped."""

    def __init__(self, message: str, permanent: bool = False, gone: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent or gone
        self.gone = gone  # the target no longer exists (a push subscription expired)


class Channel(Protocol):
    name: str

    def targets(self, s: Session, game: Game, seats: Sequence[Seat],
                template: EmailTemplate, context: Mapping[str, Any]) -> list[Target]:
        """Which targets hear of the email of ``template`` queued to each of ``seats``
        (a few cheap reads: this runs in the move's transaction)."""
        ...

    def prepare(self, s: Session, notice: Notice, game: Game | None,
                seat: Seat | None) -> Skip | Later | Send:
        """In a read-only session: whether and what to send now (the common checks of
        ``delivery`` were made before)."""
        ...

    def send(self, notice: Notice, payload: Any) -> None:
        """Send it, outside any transaction, with a short timeout; raise
        ``ChannelError`` if it did not go."""
        ...

    def stopped(self, s: Session, target_id: int, error: str) -> None:
        """The target failed too often and is stopped (``NoticeTarget.stopped_at``
        is set by delivery); anything else the channel does then (e.g. nothing)."""
        ...


def channels() -> dict[str, Channel]:
    """The registered channels by name (imported on first use; modules are cached by
    Python, so this costs a dict lookup per name after the first call)."""
    found: dict[str, Channel] = {}
    for name in REGISTERED:
        module = importlib.import_module(name)
        channel: Channel = module.CHANNEL
        found[channel.name] = channel
    return found


_INSERT_NOTICE = insert(table_of(Notice))
_NOTICE_KEY = table_of(Notice).c.idempotency_key


def queue_notices(s: Session, game: Game, seats: Sequence[Seat], template: EmailTemplate,
                  context: Mapping[str, Any]) -> dict[int, timedelta]:
    """Write the notices of every channel for the email of ``template`` just queued to
    each of ``seats`` (in the caller's transaction). Returns how long to hold each
    seat's email (seat id -> delay) where a channel asked for it.

    A target of the whole table (``Target.seat`` None: a chat webhook) hears of a piece
    of news once, however many seats' emails tell it, one call or several
    (``queue_email`` for each seat): a notice whose key is already written is left out."""
    rows: list[dict[str, Any]] = []
    delays: dict[int, timedelta] = {}
    now = utcnow()
    for name, channel in channels().items():
        for target in channel.targets(s, game, seats, template, context):
            seat = target.seat
            seat_id = seat.id if seat is not None else None
            key = (f"{name}:{target.target_id}:{template}:{game.id}:{seat_id}:"
                   f"{game.version}:{game.event_seq}:{context.get('reminder') or ''}:"
                   f"{context.get('decision_id') or context.get('headline') or ''}")[:200]
            rows.append(dict(
                channel=name, target_id=target.target_id, game_id=game.id, seat_id=seat_id,
                rcpt=target.rcpt, language=target.language, template=template,
                context={**context, "event_seq": game.event_seq, "version": game.version},
                idempotency_key=key, status=OutboxStatus.PENDING, attempts=0,
                next_attempt_at=now, created_at=now))
            if target.email_delay is not None and seat_id is not None:
                delays[seat_id] = max(delays.get(seat_id, timedelta(0)), target.email_delay)
    rows = _once_for_the_table(s, rows)
    if rows:
        s.connection().execute(_INSERT_NOTICE, rows)
        s.info[wake.NOTICES_QUEUED] = True  # the notice loop is rung after the commit
    return delays


def _once_for_the_table(s: Session, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` less the repeats of a table's notice (seat None) already among them or
    already written (one indexed read, only when there is such a notice)."""
    table = [row["idempotency_key"] for row in rows if row["seat_id"] is None]
    if not table:
        return rows
    written = set(s.connection().execute(
        select(_NOTICE_KEY).where(_NOTICE_KEY.in_(table))).scalars())
    kept = []
    for row in rows:
        if row["seat_id"] is None:
            if row["idempotency_key"] in written:
                continue
            written.add(row["idempotency_key"])
        kept.append(row)
    return kept


def queue_table_notice(s: Session, game: Game, template: EmailTemplate,
                       context: Mapping[str, Any]) -> None:
    """News for the whole table that is no seat's email (a message to the table, which
    each seat reads on its page or in its next email): each channel is asked with no
    seats, and only a target of the whole table (a chat webhook) hears of it."""
    queue_notices(s, game, [], template, context)


def move_page(s: Session, game_id: str) -> None:
    """A channel's target that a game's pages show changed (a seat's devices, a table's
    chat that mirrors the talk): the game's pages move on (``Game.page_version``), so
    that no browser keeps a page that says otherwise."""
    games = table_of(Game)
    s.connection().execute(games.update().where(games.c.id == game_id)
                           .values(page_version=games.c.page_version + 1))
    page_version_moved(s, game_id)
