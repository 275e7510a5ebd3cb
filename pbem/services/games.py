"""Creating and joining games: checking players, names and titles, ``create_game``, the
host's confirmation, invitations and their answers, re-inviting a declined seat, starting."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from flask import current_app
from flask_babel import gettext
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from engine.core import EngineError
from engine.core import Game as EngineGame
from engine.registry import get_game
from pbem.db import is_postgres, session_scope
from pbem.errors import AlreadyRecorded, InvalidInput, RateLimited, WrongState
from pbem.headers import BadAddress, address_problem, bad_characters, parse_address
from pbem.mail import INVITE_TEMPLATES, default_title
from pbem.models import Game, Outbox, RateLimit, Seat, Suppression, utcnow
from pbem.services._plumbing import (
    LANGUAGES,
    _admin_game,
    _dump,
    _lock_game,
    _log,
    _queue,
    _recent,
    _seats,
    _token,
)
from pbem.services.deadlines import default_reminders
from pbem.services.playing import _sync_decisions
from pbem.tokens import mint, revoke_seat

GAMES_OFFERED = ("cavemen", "stoneage")  # in the order the home page lists them


def offered_games() -> list[dict[str, Any]]:
    """The games a host may start, with their player counts (the home page, the CLI)."""
    return [{"name": name, "min": get_game(name).MIN_PLAYERS, "max": get_game(name).MAX_PLAYERS}
            for name in GAMES_OFFERED]


@dataclass(frozen=True)
class PlayerIn:
    name: str
    email: str
    language: str = "en"
    timezone: str = "UTC"


@dataclass(frozen=True)
class Created:
    game_id: str
    admin_token: str


def parse_player(text: str) -> PlayerIn:
    """``Name <email>`` with optional language and time zone after it:
    ``Ann <ann@example.com> de Europe/Berlin``."""
    m = re.match(r"^\s*(.+?)\s*<([^<>]+)>\s*(.*)$", text or "")
    if not m:
        raise InvalidInput(gettext("cannot read player %(text)s; write it as 'Name <email>'",
                                   text=repr(text)))
    extra = m.group(3).split()
    language = extra[0] if extra else "en"
    timezone = extra[1] if len(extra) > 1 else "UTC"
    return PlayerIn(m.group(1), m.group(2), language, timezone)


def validate_players(players: list[PlayerIn], game: EngineGame) -> list[PlayerIn]:
    if not game.MIN_PLAYERS <= len(players) <= game.MAX_PLAYERS:
        raise InvalidInput(gettext("a game needs %(low)s to %(high)s players, not %(n)s",
                                   low=game.MIN_PLAYERS, high=game.MAX_PLAYERS,
                                   n=len(players)))
    out, seen = [], set()
    for i, p in enumerate(players, 1):
        name = check_name(p.name, gettext("player %(i)s", i=i))
        try:
            email = parse_address(p.email)
        except BadAddress as exc:
            raise InvalidInput(gettext("player %(i)s: %(email)s is not an email address we "
                                       "can write to (%(why)s)", i=i,
                                       email=repr(str(p.email or "")[:80]),
                                       why=address_problem(exc))) from None
        if email.lower() in seen:
            raise InvalidInput(gettext("player %(i)s: %(email)s appears twice", i=i,
                                       email=email))
        seen.add(email.lower())
        if p.language not in LANGUAGES:
            raise InvalidInput(gettext("player %(i)s: language must be one of %(codes)s",
                                       i=i, codes=", ".join(LANGUAGES)))
        try:
            ZoneInfo(p.timezone)
        except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name too long
            raise InvalidInput(gettext("player %(i)s: unknown time zone %(tz)s", i=i,
                                       tz=repr(p.timezone[:64]))) from None
        out.append(PlayerIn(name, email, p.language, p.timezone))
    return out


def check_name(text: str | None, who: str) -> str:
    """A player's name: 1 to 60 characters on one line, kept as typed."""
    if bad_characters(text or ""):
        raise InvalidInput(gettext("%(who)s: names may not contain line breaks, control "
                                   "characters or invisible formatting characters (such as "
                                   "text-direction overrides)", who=who))
    name = (text or "").strip()  # as typed, but for blanks around it
    if not name or len(name) > 60 or any(c in name for c in "<>"):
        raise InvalidInput(gettext("%(who)s: a name of 1 to 60 characters, without < or >",
                                   who=who))
    return name


def check_title(text: str | None) -> str:
    """A game title: up to 100 characters on one line, kept as typed."""
    if bad_characters(text or ""):
        raise InvalidInput(gettext("the title may not contain line breaks, control characters or "
                           "invisible formatting characters"))
    title = (text or "").strip()  # as typed, but for blanks around it
    if len(title) > 100:
        raise InvalidInput(gettext("the title is longer than 100 characters"))
    return title


def _hours(value: Any) -> float:
    try:
        hours = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(gettext("hours per decision must be a number")) from None
    if not 0.0005 <= hours <= 24 * 30:
        raise InvalidInput(gettext("hours per decision must be between a few seconds and 30 days"))
    return hours


def create_game(engine_name: str, players: list[PlayerIn], hours_per_decision: Any = 48,
                seed: int | None = None, title: str = "", confirm_by_email: bool = True,
                start: bool = False, client: str | None = None,
                reminders: Any = None, absent_after: Any = 2, absent_bot: str = "heuristic",
                vacation_days: Any = 7) -> Created:
    """Create a game; the first player is the host.

    From the web (``confirm_by_email``) nothing reaches the players until the host confirms
    through a link sent to the host's own address. From the CLI the host is trusted:
    invitations go out at once, or with ``start`` the game starts without them.
    """
    try:
        game_mod = get_game(engine_name)
    except EngineError:
        raise InvalidInput(gettext("there is no game called %(name)s", name=repr(engine_name)))\
            from None
    players = validate_players(players, game_mod)
    hours = _hours(hours_per_decision)
    policy = _policy(hours, reminders, absent_after, absent_bot, vacation_days)
    title = check_title(title) or default_title(game_mod, [p.name for p in players])
    with session_scope() as s:
        if client is not None:
            _rate_limit(s, f"create:{client}", current_app.config["CREATE_LIMIT_PER_HOUR"])
        for p in players if confirm_by_email or not start else []:
            _check_may_invite(s, p.email)
        gid = secrets.token_hex(5)
        game = Game(id=gid, engine=engine_name, title=title, seed=_seed(seed), options={},
                    hours_per_decision=hours,
                    **policy,
                    spectator_key=secrets.token_hex(8),
                    status="awaiting_host" if confirm_by_email else "inviting")
        s.add(game)
        s.flush()
        seats = []
        for pos, p in enumerate(players):
            seat = Seat(game_id=gid, position=pos, name=p.name, email=p.email,
                        language=p.language, timezone=p.timezone, is_host=pos == 0,
                        invite="accepted" if pos == 0 or start else "invited")
            s.add(seat)
            seats.append(seat)
        s.flush()
        admin = mint(s, "admin", gid, seats[0].id)
        if confirm_by_email:
            _queue(s, game, seats[0], "host_confirm", {}, links={
                "confirm": {"kind": "host_confirm"}, "admin": {"kind": "admin"}})
        elif start:
            _start(s, game, seats)
        else:
            _send_invitations(s, game, seats)
    return Created(gid, admin)


def _policy(hours: float, reminders: Any, absent_after: Any, absent_bot: Any,
            vacation_days: Any) -> dict[str, Any]:
    """Validate the deadline policy; reminders are hours before the deadline (a list, or
    text like ``"24, 2"``); None means the default (half time and 2 hours before)."""
    if reminders is None:
        offsets = default_reminders(hours)
    else:
        if isinstance(reminders, str):
            reminders = [r for r in reminders.replace(";", ",").split(",") if r.strip()]
        try:
            offsets = sorted({float(r) for r in reminders}, reverse=True)
        except (TypeError, ValueError):
            raise InvalidInput(gettext("reminders must be hours before the deadline, like 24, 2"))\
                from None
        if any(not 0 < r < hours for r in offsets) or len(offsets) > 10:
            raise InvalidInput(gettext("each reminder must fall between the start of a turn "
                                       "and its deadline (at most 10)"))
    try:
        absent = int(absent_after)
        vacation = float(vacation_days)
    except (TypeError, ValueError):
        raise InvalidInput(gettext("absence limit and vacation days must be numbers")) from None
    if not 1 <= absent <= 100 or not 0 <= vacation <= 60:
        raise InvalidInput(gettext("a bot takes over after 1 to 100 timeouts; vacation is 0 "
                                   "to 60 days"))
    if absent_bot not in ("heuristic", "default"):
        raise InvalidInput(gettext("the stand-in for an absent player is 'heuristic' or 'default'"))
    return {"reminder_hours": offsets, "absent_after": absent, "absent_bot": absent_bot,
            "vacation_days": vacation}


def _seed(seed: int | None) -> int:
    return seed if seed is not None else secrets.randbelow(2**31)


def _rate_limit(s: Session, key: str, per_hour: int) -> None:
    """Count one more use of ``key`` in this hour, atomically (one INSERT .. ON CONFLICT
    DO UPDATE .. RETURNING), and refuse beyond ``per_hour``. The count is part of the
    caller's transaction: a refused or failed request does not use up the allowance."""
    window = utcnow().replace(minute=0, second=0, microsecond=0)
    dialect = postgresql if is_postgres() else sqlite
    stmt = dialect.insert(RateLimit).values(key=key[:120], window_start=window, count=1)
    stmt = stmt.on_conflict_do_update(index_elements=["key", "window_start"],
                                      set_={"count": RateLimit.count + 1})
    count = s.execute(stmt.returning(RateLimit.count)).scalar_one()
    if count > per_hour:
        raise RateLimited(gettext("too many games created from here in the last hour; try later"))


def _check_may_invite(s: Session, address: str) -> None:
    """Refuse to invite an address that asked for no email, or that got the most
    invitations a day allows (so nobody can use the server to mail a stranger)."""
    rcpt = address.lower()
    if s.get(Suppression, rcpt) is not None:
        raise InvalidInput(gettext("%(address)s cannot be invited: that address asked not "
                                   "to get email from this server", address=address))
    if _recent(s, Outbox.rcpt == rcpt, INVITE_TEMPLATES, timedelta(days=1)) >= \
            int(current_app.config["INVITE_LIMIT_PER_ADDRESS"]):
        raise RateLimited(gettext("%(address)s has had as many invitations as one day "
                                  "allows; try again tomorrow", address=address))


def describe_host_confirm(raw: str) -> dict[str, Any]:
    """What a host's confirmation link would confirm, for its page (changes nothing)."""
    with session_scope() as s:
        token = _token(s, raw, "host_confirm")
        game = s.get(Game, token.game_id)
        return {"game": game, "seats": _seats(s, game.id),
                "confirmed": game.status != "awaiting_host"}


def confirm_host(raw: str) -> tuple[str, bool]:
    """The host confirms a game made on the web: invitations go out. Returns the game id
    and whether this call confirmed it (False: it was confirmed before; the link keeps
    saying so instead of turning into an unknown link)."""
    with session_scope() as s:
        token = _token(s, raw, "host_confirm")
        game = _lock_game(s, token.game_id)
        if game.status == "abandoned":
            raise WrongState(gettext("the host ended this game before it started"))
        if game.status != "awaiting_host":
            return game.id, False
        game.status = "inviting"
        _send_invitations(s, game, _seats(s, game.id))
        return game.id, True


def _send_invitations(s: Session, game: Game, seats: list[Seat]) -> None:
    host = seats[0]
    for seat in seats:
        if seat.invite == "invited":
            _queue(s, game, seat, "invitation", {"host": host.name}, links={
                "accept": {"kind": "invite", "action": {"answer": "accept"}},
                "decline": {"kind": "invite", "action": {"answer": "decline"}}})
    _start_if_ready(s, game, seats)


def describe_invitation(raw: str) -> dict[str, Any]:
    """What an invitation link answers, for its confirmation page (changes nothing)."""
    with session_scope() as s:
        token = _token(s, raw, "invite")
        game = s.get(Game, token.game_id)
        seats = _seats(s, game.id)
        seat = next(x for x in seats if x.id == token.seat_id)
        return {"game": game, "seat": seat, "seats": seats,
                "answer": (token.action or {}).get("answer", "accept"),
                "answered": seat.invite if seat.invite != "invited" else None}


def answer_invitation(raw: str, accept: bool) -> tuple[str, str]:
    """Accept or decline; returns (game id, new invite status). Starts when all accepted."""
    with session_scope() as s:
        token = _token(s, raw, "invite")
        game = _lock_game(s, token.game_id)
        seat = s.get(Seat, token.seat_id)
        if seat.invite != "invited":
            raise AlreadyRecorded(gettext("you already answered this invitation"),
                                  game_id=game.id, answer=seat.invite)
        if game.status != "inviting":
            raise WrongState(gettext("this game no longer waits for players: the host ended it"))
        seat.invite = "accepted" if accept else "declined"
        if not accept:
            _tell_host_declined(s, game, seat)
        _start_if_ready(s, game, _seats(s, game.id))
        return game.id, seat.invite


def replace_player(admin_raw: str, position: int, player: PlayerIn) -> None:
    """The host invites someone else for a seat whose invitation was declined."""
    with session_scope() as s:
        game = _admin_game(s, admin_raw)
        if game.status != "inviting":
            raise WrongState(gettext("players can be replaced only while invitations are open"))
        seats = _seats(s, game.id)
        if not 0 <= position < len(seats) or seats[position].invite != "declined":
            raise InvalidInput(gettext("only a seat whose invitation was declined can be "
                                       "re-invited"))
        seat = seats[position]
        new = _validate_newcomer(s, game, seat, player)
        _check_may_invite(s, new.email)
        revoke_seat(s, seat.id)
        seat.name, seat.email, seat.invite = new.name, new.email, "invited"
        seat.left_at, seat.mute_notices = None, False
        seat.language, seat.timezone = new.language, new.timezone
        _queue(s, game, seat, "invitation", {"host": seats[0].name}, links={
            "accept": {"kind": "invite", "action": {"answer": "accept"}},
            "decline": {"kind": "invite", "action": {"answer": "decline"}}},
            key=f"invitation:{seat.id}:{secrets.token_hex(4)}")


def _start_if_ready(s: Session, game: Game, seats: list[Seat]) -> None:
    if game.status == "inviting" and all(x.invite == "accepted" for x in seats):
        _start(s, game, seats)


def _start(s: Session, game: Game, seats: list[Seat]) -> None:
    mod = get_game(game.engine)
    setup = getattr(mod, "setup_with_events", None)
    names = [x.name for x in seats]
    if setup:
        state, events = setup(names, game.seed, game.options)
    else:
        state, events = mod.setup(names, game.seed, game.options), []
    game.status = "active"
    game.started_at = utcnow()
    game.version = 1
    game.state = _dump(mod.to_json(state))
    _log(s, game, events)
    deciding = {d.seat_id for d in _sync_decisions(s, game, mod, state, seats)}
    for seat in seats:
        if seat.id not in deciding:
            _queue(s, game, seat, "game_started", {}, links={"page": {"kind": "page"}})


def _validate_newcomer(s: Session, game: Game, seat: Seat, player: PlayerIn) -> PlayerIn:
    others = [PlayerIn(x.name, x.email, x.language, x.timezone)
              for x in _seats(s, game.id) if x.id != seat.id]
    return validate_players([*others, player], get_game(game.engine))[-1]


def _tell_host_declined(s: Session, game: Game, seat: Seat,
                        handover: dict | None = None) -> None:
    """Tell the host that someone declined a seat (or a hand-over of one)."""
    host = _seats(s, game.id)[0]
    who = handover or {"name": seat.name, "email": seat.email}
    if host.id != seat.id or handover:
        _queue(s, game, host, "declined",
               {"who": who["name"], "email": who["email"], "handover": bool(handover)},
               links={"admin": {"kind": "admin"}},
               key=f"declined:{game.id}:{seat.id}:{secrets.token_hex(4)}")
