"""What an address chose for all of its games (``pbem.models.Address``), applied when one
of its emails falls due, whatever queued it:

- news (a game started, someone timed out or took over a seat) told in the next turn
  email instead (the email is skipped; the turn email tells everything since the last
  one), or never (the result of a game neither);
- a daily digest instead of an email per turn: a turn email is skipped, the digest lists
  it (reminders still go, so that a deadline is never missed);
- quiet hours: an email due in them waits until they end, but for what the person has
  just asked for (a list of their games, the confirmation of a game they made), and for
  a turn or a reminder whose deadline comes before they end (sent now, not uselessly
  late; reminders are planned to come before the quiet hours begin, see
  ``services.plumbing.next_reminder``).

The hours are whole hours in the address's zone (else the zone of the seat the email is
about). A quiet period runs from ``quiet_from`` to ``quiet_to``, over midnight when the
end is the smaller; it ends at the first ``quiet_to`` o'clock after now, in local time,
which a change to or from summer time moves with the clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection
from sqlmodel import Session

from pbem.clocks import Stops
from pbem.i18n import mark
from pbem.kinds import Delivery, EmailTemplate, News
from pbem.models import Address, Decision, Notice, Outbox, Seat, table_of

NEWS_TEMPLATES = frozenset({EmailTemplate.NOTICE, EmailTemplate.GAME_STARTED})
# What the person asked for just now: never held by their quiet hours.
ASKED_NOW = frozenset({EmailTemplate.MY_GAMES, EmailTemplate.HOST_CONFIRM,
                       EmailTemplate.REPLY, EmailTemplate.GAME_LINK})

_ADDRESS = table_of(Address)
_SETTINGS = select(_ADDRESS.c.timezone, _ADDRESS.c.delivery, _ADDRESS.c.quiet_from,
                   _ADDRESS.c.quiet_to, _ADDRESS.c.news).where(
    _ADDRESS.c.address == bindparam("rcpt"))
_DEADLINE = select(table_of(Decision).c.deadline_at).where(
    table_of(Decision).c.id == bindparam("id"))

TOLD_IN_TURN = mark("the address chose to hear the news in its next turn email")
NO_NEWS = mark("the address chose to get no news of its games")
IN_DIGEST = mark("the address chose a daily digest, which lists this turn")
QUIET = mark("waiting for the end of the address's quiet hours")


def address_rule(s: Session, row: Outbox | Notice, seat: Seat | None,
                 now: datetime) -> tuple[str, Any] | None:
    """What the address's settings make of its email ``row`` due ``now``: None (send it
    now), ``("skip", reason)`` or ``("later", when)``."""
    found = s.connection().execute(_SETTINGS, {"rcpt": row.rcpt}).first()
    if found is None:
        return None
    zone_name, delivery, quiet_from, quiet_to, news = found
    template = row.template
    if template in NEWS_TEMPLATES and news == News.TURN:
        return "skip", TOLD_IN_TURN
    if news == News.NEVER and (template in NEWS_TEMPLATES or template == EmailTemplate.RESULT):
        return "skip", NO_NEWS
    reminder = bool(row.context.get("reminder"))
    if template == EmailTemplate.DECISION and not reminder and delivery == Delivery.DIGEST:
        return "skip", IN_DIGEST
    if template in ASKED_NOW:
        return None
    until = quiet_until(quiet_from, quiet_to, zone(zone_name, seat), now)
    if until is None:
        return None
    deadline = _deadline(s, row)
    if deadline is not None and deadline <= until:
        return None  # a turn or its reminder: held, it would come too late to act on
    return "later", until


def zone(name: str | None, seat: Seat | None) -> tzinfo:
    """The zone of an address's hours: its own, else the seat's, else UTC."""
    for candidate in (name, seat.timezone if seat is not None else None):
        if candidate:
            try:
                return ZoneInfo(candidate)
            except (ValueError, KeyError):  # edited by hand: the next one
                continue
    return ZoneInfo("UTC")


_QUIET = select(_ADDRESS.c.address, _ADDRESS.c.quiet_from, _ADDRESS.c.quiet_to,
                _ADDRESS.c.timezone).where(
    _ADDRESS.c.address.in_(bindparam("rcpts", expanding=True)))
# The same for one address (a move's new decision): an expanding IN is rendered anew at
# every execution, which costs as much again as the query.
_QUIET_ONE = select(_ADDRESS.c.address, _ADDRESS.c.quiet_from, _ADDRESS.c.quiet_to,
                    _ADDRESS.c.timezone).where(_ADDRESS.c.address == bindparam("rcpt"))


def clock_stops(conn: Connection, seats: list[Any], weekends: bool) -> list[Stops]:
    """When each of ``seats``' clocks may stand still (in one query): the quiet hours of
    its address (None: none) in the address's zone, else the seat's (``zone``), and the
    weekends if ``weekends``. Whether the quiet hours stop a clock is the game's policy's
    to say (``GamePolicy.running``); reminders keep out of them either way."""
    rcpts = sorted({seat.email.lower() for seat in seats})
    found = (conn.execute(_QUIET_ONE, {"rcpt": rcpts[0]}) if len(rcpts) == 1
             else conn.execute(_QUIET, {"rcpts": rcpts}) if rcpts else ())
    rows = {row.address: row for row in found}
    out = []
    for seat in seats:
        row = rows.get(seat.email.lower())
        quiet = ((row.quiet_from, row.quiet_to) if row is not None
                 and row.quiet_from is not None and row.quiet_to is not None else None)
        out.append(Stops(zone(row.timezone if row is not None else None, seat), quiet,
                         weekends))
    return out


def quiet_until(start: int | None, end: int | None, tz: tzinfo,
                now: datetime) -> datetime | None:
    """The end of the quiet period ``now`` falls in (None: it falls in none)."""
    if start is None or end is None or start == end:
        return None
    local = now.astimezone(tz)
    hour = local.hour
    inside = start <= hour < end if start < end else (hour >= start or hour < end)
    if not inside:
        return None
    day = local.date()
    for offset in (0, 1):
        candidate = datetime(day.year, day.month, day.day, end, tzinfo=tz) + timedelta(
            days=offset)
        if candidate > local:
            return candidate.astimezone(now.tzinfo)
    raise AssertionError("a quiet period ends within a day")


def _deadline(s: Session, row: Outbox | Notice) -> datetime | None:
    decision_id = row.context.get("decision_id")
    if decision_id is None:
        return None
    at = s.connection().execute(_DEADLINE, {"id": decision_id}).scalar()
    if at is not None and at.tzinfo is None:
        at = at.replace(tzinfo=ZoneInfo("UTC"))
    return at
