"""A player's own list of games: asking for it by address, reading it, opening a game.

Anyone may ask for the list of an address, so the answer is always the same and the list
only ever goes to that address: an email with a link (a ``my_games`` token, bound to the
address, valid for ``LINK_DAYS``). The link's page lists the address's games; its only
action is a form per game that mints a fresh game-page link for that seat.

Asking does the same work for any address: it queues a request (an outbox row) without
looking the address up, so neither the answer nor its timing tells whether the address
plays here. The clock's mail loop looks it up when it sends (``prepare_list``) and sends
the list only to an address that has joined a game here (confirmed one it hosts, or
accepted a seat) and that wants it; else nothing. Asking is capped per address
(``MY_GAMES_LIMIT_PER_ADDRESS`` requests a day, answered or not, and the notices-per-hour
cap every email that is not a turn counts against), so the form cannot flood anyone.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from flask_babel import gettext, ngettext
from sqlalchemy import bindparam, func, insert
from sqlmodel import Session, col, select

from engine.registry import get_game
from pbem.db import get_row, read_scope, session_scope
from pbem.errors import FormInvalid, LinkExpired, NotFound
from pbem.forms import DB_INT_MAX, parse_int
from pbem.i18n import language
from pbem.kinds import ENDED, EmailTemplate, GameStatus, Invite, OutboxStatus, TokenKind
from pbem.mail import PREPARE_AT_SENDING, TURN_TEMPLATES, game_name
from pbem.mail.headers import BadAddress, address_problem, message_id, parse_address
from pbem.models import Decision, Game, Outbox, Seat, Token, utcnow
from pbem.services.plumbing import (
    live_token,
    load_state,
    recent_emails,
    seats_of,
    wake_deliverer,
)
from pbem.services.reading import end_notice
from pbem.tokens import hash_token, mint, well_formed

LINK_DAYS = 7  # a link to the list works this long
ENDED_DAYS = 30  # an ended game stays on the list this long
SECTIONS = ("active", "waiting", "ended")  # the order the list shows


def request_my_games(address: str) -> None:
    """Queue a request for the list of ``address``'s games (sent or not by the clock, see
    ``prepare_list``); over the daily cap of requests for the address, do nothing. Says
    nothing either way: only an address that cannot be one is refused (FormInvalid,
    field ``my-email``)."""
    rcpt = _address(address)
    with session_scope() as s:
        if s.execute(_REQUESTS, {"rcpt": rcpt, "since": utcnow() - timedelta(days=1)}) \
                .scalar_one() >= int(current_app.config["MY_GAMES_LIMIT_PER_ADDRESS"]):
            return
        key = f"my_games:{hash_token(rcpt)[:16]}:{secrets.token_hex(4)}"
        now = utcnow()
        s.execute(insert(Outbox).values(
            game_id=None, seat_id=None, to_addr=rcpt, rcpt=rcpt, to_name="",
            language=language(), template=EmailTemplate.MY_GAMES,
            context={"links": {"list": {"kind": TokenKind.MY_GAMES,
                                        "action": {"address": rcpt}}},
                     "request": True},
            idempotency_key=key, message_id=message_id(key.replace(":", ".")),
            status=OutboxStatus.PENDING, attempts=0, next_attempt_at=now, created_at=now))
        wake_deliverer(s)


# Requests for an address's list in a time, whatever became of them (sent or not): the
# same count for an address that plays here and one that does not.
_REQUESTS = select(func.count()).select_from(Outbox).where(
    Outbox.rcpt == bindparam("rcpt"), Outbox.template == EmailTemplate.MY_GAMES,
    Outbox.created_at >= bindparam("since"))


def prepare_list(s: Session, row: Outbox) -> str | None:
    """At sending (the clock's mail loop): turn a request into the email with the list,
    or say why nothing goes out (the row is then skipped). The list goes only to an
    address that has joined a game here, with games to list, under the notices cap."""
    if not row.context.get("request"):
        return None  # prepared at an earlier attempt
    games = _listing(s, row.rcpt) if _has_joined(s, row.rcpt) else []
    if not games:  # (the reasons are for the operator: no page shows these rows)
        return "not sent: this address has joined no game here"
    if recent_emails(s, Outbox.rcpt == row.rcpt, None, timedelta(hours=1), exclude=TURN_TEMPLATES,
               other_than=row.id) >= int(current_app.config["NOTICE_LIMIT_PER_ADDRESS"]):
        return "not sent: this address had as many notices as one hour allows"
    seat = get_row(s, Seat, max(g["seat_id"] for g in games))  # the newest: name, language
    row.to_addr, row.to_name, row.language = seat.email, seat.name, seat.language
    row.context = {"links": row.context["links"], "token_game": seat.game_id,
                   "games": games, "days": LINK_DAYS, "name": seat.name}
    return None


_JOINED = (select(Seat.id).join(Game, col(Game.id) == Seat.game_id)
           .where(func.lower(Seat.email) == bindparam("rcpt"), Seat.invite == Invite.ACCEPTED,
                  Game.status != GameStatus.AWAITING_HOST).limit(1))


def _has_joined(s: Session, rcpt: str) -> bool:
    """Whether ``rcpt`` ever agreed to anything here: hosts a game it confirmed (or made
    on the command line), or accepted a seat (by invitation or hand-over)."""
    return s.execute(_JOINED, {"rcpt": rcpt}).first() is not None


def _address(text: str) -> str:
    text = (text or "").strip()
    if not text:
        raise FormInvalid([("my-email", gettext("enter your email address"))])
    try:
        return parse_address(text).lower()
    except BadAddress as exc:
        raise FormInvalid([("my-email", gettext(
            "%(email)s is not an email address we can write to (%(why)s)",
            email=repr(text[:80]), why=address_problem(exc)))]) from None


def my_games(raw: str) -> dict[str, Any]:
    """The list behind a link (changes nothing): ``address``, ``games`` (see
    ``_listing``), ``expires`` (ISO time; None for a lasting link, the footer's of
    every email, which works until revoked: ``stop_my_links``)."""
    with read_scope() as s:
        token = _live_token(s, raw)
        address = str((token.action or {}).get("address", ""))
        return {"address": address, "games": _listing(s, address),
                "expires": None if _lasting(token) else
                (token.created_at + timedelta(days=LINK_DAYS)).isoformat()}


def open_my_host_page(raw: str, game_id: Any) -> str:
    """A fresh host-page link (raw token) for a game of the list behind ``raw`` that its
    address hosts; NotFound for any other."""
    if not isinstance(game_id, str) or not 0 < len(game_id) <= 16:
        raise NotFound(gettext("that game is not on your list (any more)"))
    with session_scope() as s:
        token = _live_token(s, raw)
        address = str((token.action or {}).get("address", ""))
        entry = next((g for g in _listing(s, address)
                      if g["game_id"] == game_id and g["host"]), None)
        if entry is None:
            raise NotFound(gettext("that game is not on your list (any more)"))
        return mint(s, TokenKind.ADMIN, game_id, None, None, {"address": address})


def stop_my_links(raw: str) -> int:
    """Revoke every link to the list of the address behind ``raw`` (the footers' of its
    emails and those asked for): how many. The next email brings a new one."""
    with session_scope() as s:
        token = _live_token(s, raw)
        address = str((token.action or {}).get("address", ""))
        rows = [t for t in s.exec(select(Token).where(
            Token.kind == TokenKind.MY_GAMES, col(Token.revoked_at).is_(None))).all()
            if (t.action or {}).get("address") == address]
        now = utcnow()
        for t in rows:
            t.revoked_at = now
        return len(rows)


def my_links_stopped(raw: str) -> bool:
    """The page after stopping the links to one's list (Post/Redirect/Get): whether
    ``raw`` is such a link and was stopped (changes nothing)."""
    if not well_formed(raw):
        return False
    with read_scope() as s:
        token = s.get(Token, hash_token(raw))
        return token is not None and token.kind == TokenKind.MY_GAMES \
            and token.revoked_at is not None


def _lasting(token: Token) -> bool:
    return bool((token.action or {}).get("lasting"))


def open_my_game(raw: str, seat_id: Any) -> str:
    """A fresh game-page link (raw token) for one seat of the list behind ``raw``."""
    wanted = parse_int(seat_id, 1, DB_INT_MAX, gettext("choose a game from the list"))
    with session_scope() as s:
        token = _live_token(s, raw)
        entry = next((g for g in _listing(s, str((token.action or {}).get("address", "")))
                      if g["seat_id"] == wanted and g["can_open"]), None)
        if entry is None:
            raise NotFound(gettext("that game is not on your list (any more)"))
        return mint(s, TokenKind.PAGE, entry["game_id"], wanted)


def _live_token(s: Session, raw: str) -> Token:
    token = live_token(s, raw, TokenKind.MY_GAMES)
    if not _lasting(token) and token.created_at + timedelta(days=LINK_DAYS) < utcnow():
        raise LinkExpired(ngettext(
            "this link to your games has expired (it works for %(num)s day); ask for a "
            "new one below", "this link to your games has expired (it works for %(num)s "
            "days); ask for a new one below", LINK_DAYS))
    return token


# --------------------------------------------------------------------------- the list


def _listing(s: Session, rcpt: str) -> list[dict[str, Any]]:
    """The games of address ``rcpt`` (JSON values, also stored with the email): running
    ones first (those where it is your turn first, then by the nearest deadline), then
    those waiting for players, then those that ended in the last ``ENDED_DAYS`` days.
    Only seats this address holds and has not left, declined or been dropped from."""
    now = utcnow()
    seats = s.exec(select(Seat).where(func.lower(Seat.email) == rcpt)).all()
    entries = []
    for seat in seats:
        game = get_row(s, Game, seat.game_id)
        if _listed(game, seat, now):
            entries.append(_entry(s, game, seat))
    entries.sort(key=lambda e: e["ended_at"] or e["created_at"], reverse=True)  # newest
    entries.sort(key=lambda e: (SECTIONS.index(e["section"]), not e["yours"],
                                _first_deadline(e)))
    return entries


def _first_deadline(entry: dict[str, Any]) -> str:
    return min((t["deadline"] for t in entry["turns"] if t["deadline"]), default="~")


def _listed(game: Game, seat: Seat, now: datetime) -> bool:
    """A game is listed once its host has confirmed it (before that, it may be the
    work of someone who typed in addresses and a title, and it expires)."""
    if seat.invite == Invite.DECLINED or seat.left_at is not None \
            or game.status == GameStatus.AWAITING_HOST:
        return False
    if seat.invite != Invite.ACCEPTED:
        return game.status == GameStatus.INVITING  # an open invitation
    if game.status in ENDED:
        return (game.ended_at or game.created_at) >= now - timedelta(days=ENDED_DAYS)
    return True


def _entry(s: Session, game: Game, seat: Seat) -> dict[str, Any]:
    seats = seats_of(s, game.id)
    section = ("active" if game.status == GameStatus.ACTIVE
               else "ended" if game.status in ENDED else "waiting")
    turns = []
    if game.status == GameStatus.ACTIVE:
        decisions = s.exec(select(Decision).where(Decision.game_id == game.id,
                                                  col(Decision.closed_at).is_(None))
                           .order_by(col(Decision.deadline_at), col(Decision.position))).all()
        turns = [{"name": seats[d.position].name, "yours": d.seat_id == seat.id,
                  "kind": d.kind,
                  "deadline": d.deadline_at.isoformat() if d.deadline_at else None}
                 for d in decisions]
    return {
        "game_id": game.id, "seat_id": seat.id, "title": game_name(game, seats),
        "engine": game.engine, "status": game.status, "section": section,
        "paused": game.paused_at is not None, "name": seat.name, "tz": seat.timezone,
        "host": seat.is_host, "invited": seat.invite == Invite.INVITED,
        "can_open": seat.invite == Invite.ACCEPTED,
        "turns": turns, "yours": any(t["yours"] for t in turns),
        "waiting_for": [x.name for x in seats if x.invite == Invite.INVITED and x.id != seat.id],
        "winners": _winners(game, seats),
        "ended_idle": getattr(end_notice(s, game), "kind", None) == "game_abandoned_idle",
        "created_at": game.created_at.isoformat(),
        "ended_at": game.ended_at.isoformat() if game.ended_at else None,
    }


def _winners(game: Game, seats: list[Seat]) -> list[str]:
    if game.status != GameStatus.FINISHED or not game.state:
        return []
    mod = get_game(game.engine)
    result = mod.result(load_state(mod, game))
    return [seats[w].name for w in result.winners] if result else []


PREPARE_AT_SENDING[EmailTemplate.MY_GAMES] = prepare_list
