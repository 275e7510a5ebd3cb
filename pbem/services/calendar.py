"""A player's deadlines in their calendar (iCalendar, RFC 5545, written with the
``icalendar`` library): a private feed of every open decision of an email address across
all of its games, which calendar apps subscribe to and refresh; and one seat's open
deadline as a file to add once (the "add to calendar" link of a decision email and the
game page).

The feed belongs to the address, not to a seat: it is made, replaced (a new secret; the
old address stops working) and stopped from any of the address's game pages, and stored
only as the hash of its secret (``Address.calendar_hash``). Each decision is one event
whose UID never changes (``pbem-decision-<id>@<host>``), so an app updates it when the
deadline moves and drops it once it is decided, instead of adding duplicates. The file
of one deadline links to the game page it was asked from.

A feed's address reads deadlines and nothing more (the calendar page says so; calendar
apps and shared calendars pass such addresses around). So an event of the feed links
to a page that names the game and its deadline, and whose one button emails the game's
page link to the seat's own address (``mail_game_link``: at most
MY_GAMES_LIMIT_PER_ADDRESS such emails per address in a day); it never gives the
visitor a link that acts for the seat.

Reading the feed changes nothing.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any, cast
from urllib.parse import urlsplit

from flask import current_app, render_template
from flask_babel import force_locale, gettext, ngettext
from icalendar import Alarm, Calendar, Event, vDuration
from sqlalchemy import func
from sqlmodel import Session, col, select

from pbem.db import read_scope, session_scope
from pbem.errors import InvalidInput, NotFound, RateLimited
from pbem.forms import DB_INT_MAX, parse_int
from pbem.kinds import EmailTemplate, GameStatus, Invite, TokenKind
from pbem.models import Address, Decision, Game, Outbox, Seat, utcnow
from pbem.services.plumbing import PAGE_LINK, live_seat_page, queue_email
from pbem.tokens import hash_token, new_token, same_secret, well_formed

EVENT_MINUTES = 15  # an event at a deadline lasts this long (a reminder, not a meeting)
ALARM_BEFORE = timedelta(hours=1)  # the event's own alarm, for apps that keep it
REFRESH = timedelta(minutes=30)  # how often an app should fetch the feed again
CALENDAR_CHOICES = ("start", "stop")


# --------------------------------------------------------------------------- the address's feed


def calendar_settings(raw: str, feed: Any = None) -> dict[str, Any]:
    """What a seat's calendar page shows (changes nothing): the game, the seat, and since
    when the seat's address has a feed (None: it has none). ``feed``: the secret of the
    feed just made (``set_calendar``), given back by the page after it; kept (``feed``)
    only if it is the address's feed now, else None."""
    with read_scope() as s:
        _, game, seat = live_seat_page(s, raw, TokenKind.PAGE)
        row = s.get(Address, seat.email.lower())
        stored = row.calendar_hash if row is not None else None
        since = row.calendar_since if row is not None and stored else None
        mine = stored is not None and well_formed(feed) and same_secret(stored,
                                                                        hash_token(feed))
        return {"game": game, "seat": seat, "since": since, "feed": feed if mine else None}


def set_calendar(raw: str, how: str) -> str | None:
    """From a seat's page link: ``start`` a feed for the seat's address (or replace the
    one it has: its old address stops working), returning the new feed's secret (shown
    once, never stored); or ``stop`` it (None)."""
    if how not in CALENDAR_CHOICES:
        raise InvalidInput(gettext("choose what to do with your calendar feed"))
    with session_scope() as s:
        _, _, seat = live_seat_page(s, raw, TokenKind.PAGE)
        address = seat.email.lower()
        row = s.get(Address, address) or Address(address=address)
        feed = new_token() if how == "start" else None
        row.calendar_hash = hash_token(feed) if feed is not None else None
        row.calendar_since = utcnow() if feed is not None else None
        s.add(row)
        return feed


def calendar_feed(raw: str) -> bytes:
    """The feed behind secret ``raw``: an event for each open decision of its address's
    seats in games under way."""
    with read_scope() as s:
        address = _feed_address(s, raw)
        rows = s.exec(select(Decision, Game, Seat)
                      .join(Game, col(Game.id) == Decision.game_id)
                      .join(Seat, col(Seat.id) == Decision.seat_id)
                      .where(func.lower(Seat.email) == address,
                             col(Decision.closed_at).is_(None),
                             Game.status == GameStatus.ACTIVE,
                             Seat.invite == Invite.ACCEPTED,
                             col(Seat.left_at).is_(None), col(Seat.bot).is_(None))
                      .order_by(col(Decision.deadline_at), col(Decision.id))).all()
        base = current_app.config["BASE_URL"]
        return cast(bytes, _calendar([(decision, game, seat, f"{base}/cal/{raw}/open/{seat.id}")
                                      for decision, game, seat in rows]).to_ical())


def calendar_game(raw: str, seat_id: Any) -> dict[str, Any]:
    """The game of one of the feed's events (changes nothing): ``game``, ``seat``, the
    seat's open decisions (``turns``: kind and deadline, as the feed shows them) and
    when its link was last emailed from the calendar in the last 24 hours (``mailed``,
    or None)."""
    with read_scope() as s:
        game, seat = _feed_seat(s, raw, seat_id)
        turns = [] if game.status != GameStatus.ACTIVE else [
            {"kind": d.kind, "deadline": d.deadline_at.isoformat()}
            for d in s.exec(select(Decision).where(Decision.seat_id == seat.id,
                                                   col(Decision.closed_at).is_(None))
                            .order_by(col(Decision.deadline_at), col(Decision.id)))
            if d.deadline_at is not None]
        mailed = s.exec(select(func.max(Outbox.created_at)).where(
            Outbox.seat_id == seat.id, Outbox.template == EmailTemplate.GAME_LINK,
            col(Outbox.created_at) > utcnow() - timedelta(days=1))).one()
        return {"game": game, "seat": seat, "turns": turns, "mailed": mailed}


def mail_game_link(raw: str, seat_id: Any) -> None:
    """Email the game page link of a seat of the feed's address to that seat's own
    address (the link is made when the email is sent). RateLimited (``data``: ``num``,
    the emails of the last 24 hours) past MY_GAMES_LIMIT_PER_ADDRESS of them."""
    with session_scope() as s:
        game, seat = _feed_seat(s, raw, seat_id)
        rcpt = seat.email.lower()
        sent = s.exec(select(func.count()).select_from(Outbox).where(
            Outbox.rcpt == rcpt, Outbox.template == EmailTemplate.GAME_LINK,
            col(Outbox.created_at) > utcnow() - timedelta(days=1))).one()
        most = int(current_app.config["MY_GAMES_LIMIT_PER_ADDRESS"])
        if sent >= most:
            raise RateLimited(ngettext(
                "the link to this game was emailed to you %(num)s time in the last 24 "
                "hours; look for it in your inbox",
                "the link to this game was emailed to you %(num)s times in the last 24 "
                "hours; look for it in your inbox", sent), num=sent)
        queue_email(s, game, seat, EmailTemplate.GAME_LINK, {}, links=PAGE_LINK,
                    key=f"game_link:{seat.id}:{secrets.token_hex(8)}")


def _feed_address(s: Session, raw: str) -> str:
    row = s.exec(select(Address).where(Address.calendar_hash == hash_token(raw))).first() \
        if well_formed(raw) else None
    if row is None:
        raise NotFound(gettext("this calendar address is unknown or no longer valid"))
    return row.address


def _feed_seat(s: Session, raw: str, seat_id: Any) -> tuple[Game, Seat]:
    address = _feed_address(s, raw)
    wanted = parse_int(seat_id, 1, DB_INT_MAX, gettext("this link names no game"))
    seat = s.get(Seat, wanted)
    if seat is None or seat.email.lower() != address or seat.left_at is not None \
            or seat.invite != Invite.ACCEPTED:
        raise NotFound(gettext("this game is not one of yours (any more)"))
    game = s.get(Game, seat.game_id)
    assert game is not None  # a seat's game
    return game, seat


# --------------------------------------------------------------------------- one deadline


def deadline_file(raw: str) -> bytes:
    """The open decision(s) of the seat behind a game-page link, as a calendar file to
    add once; its events are the feed's (same UIDs), linking to that game page."""
    with read_scope() as s:
        _, game, seat = live_seat_page(s, raw, TokenKind.PAGE, TokenKind.ACTION)
        decisions = s.exec(select(Decision).where(Decision.seat_id == seat.id,
                                                  col(Decision.closed_at).is_(None))
                           .order_by(col(Decision.id))).all()
        if game.status != GameStatus.ACTIVE or not decisions:
            raise NotFound(gettext("you have no open decision in this game now"))
        link = f"{current_app.config['BASE_URL']}/g/{raw}"
        return cast(bytes, _calendar([(d, game, seat, link) for d in decisions]).to_ical())


# --------------------------------------------------------------------------- writing it


def _calendar(events: list[tuple[Decision, Game, Seat, str]]) -> Calendar:
    cal = Calendar()
    cal.add("prodid", "-//pbem//deadlines//EN")
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("method", "PUBLISH")
    cal.add("name", "pbem")  # RFC 7986, and the name most apps read
    cal.add("x-wr-calname", "pbem")
    cal.add("refresh-interval", REFRESH, parameters={"VALUE": "DURATION"})
    cal.add("x-published-ttl", vDuration(REFRESH))
    host = urlsplit(current_app.config["BASE_URL"]).hostname or "pbem"
    now = utcnow()
    for decision, game, seat, link in events:
        if decision.deadline_at is not None:
            cal.add_component(_event(decision, game, seat, link, host, now))
    return cal


def _event(decision: Decision, game: Game, seat: Seat, link: str, host: str,
           now: datetime) -> Event:
    deadline = decision.deadline_at
    assert deadline is not None
    with force_locale(seat.language):  # the words in the player's language
        summary, description = render_template(
            "calendar/event.txt", game=game, kind=decision.kind, link=link,
            deadline=deadline.isoformat(), timezone=seat.timezone).split("\n", 1)
    event = Event()
    event.add("uid", f"pbem-decision-{decision.id}@{host}")
    event.add("dtstamp", now)
    event.add("dtstart", deadline)
    event.add("dtend", deadline + timedelta(minutes=EVENT_MINUTES))
    event.add("summary", summary)
    event.add("description", description.strip())
    event.add("url", link)
    event.add("transp", "TRANSPARENT")  # a deadline does not make anyone busy
    alarm = Alarm()
    alarm.add("action", "DISPLAY")
    alarm.add("description", summary)
    alarm.add("trigger", -ALARM_BEFORE)
    event.add_component(alarm)
    return event
