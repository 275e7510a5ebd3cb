"""Creating and joining games: checking players, names and titles, ``create_game``, the
host's confirmation, invitations and their answers, re-inviting a declined seat, starting."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from flask_babel import gettext, ngettext
from sqlalchemy import delete
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col, select

from engine.core import EngineError
from engine.core import Game as EngineGame
from engine.registry import get_game, listing, listings
from pbem import zones
from pbem.db import get_row, is_postgres, read_scope, saved_id, session_scope
from pbem.errors import (
    AlreadyRecorded,
    InvalidInput,
    Problems,
    RateLimited,
    WrongState,
)
from pbem.kinds import BOT_LEVELS, ENDED, EmailTemplate, GameStatus, Invite, SeatBot, TokenKind
from pbem.mail import INVITE_TEMPLATES, default_title, suppressed
from pbem.mail.headers import BadAddress, address_problem, bad_characters, parse_address
from pbem.models import Game, Outbox, RateLimit, Seat, Token, utcnow
from pbem.policy import GamePolicy
from pbem.services.playing import sync_decisions
from pbem.services.plumbing import (
    LANGUAGES,
    PAGE_LINK,
    admin_game,
    dump_json,
    host_address,
    is_link_of,
    live_token,
    lock_game,
    log_events,
    queue_email,
    recent_emails,
    seats_of,
)
from pbem.services.reading import play_again_players
from pbem.tokens import mint, revoke_seat


def offered_games() -> list[dict[str, Any]]:
    """The games a host may start, in the registry's order, with their player counts and
    bot levels (the home page, the CLI)."""
    return [{"name": name, "min": entry.min_players, "max": entry.max_players,
             "bots": bot_levels(entry.game)} for name, entry in listings().items()]


def bot_levels(mod: EngineGame) -> list[str]:
    """The levels of bot a host may seat at a game of ``mod``, weakest first: ``easy``
    (the game's heuristic) always, ``strong`` where the game has a search bot."""
    return [str(level) for level in BOT_LEVELS
            if level == SeatBot.EASY or str(level) in mod.BOTS]


@dataclass(frozen=True)
class PlayerIn:
    """A player of a new game as the host entered them; ``bot``: a bot's level (a seat a
    bot holds from the start: no address, the name is the bot's)."""

    name: str
    email: str
    language: str = "en"
    timezone: str = "UTC"
    bot: str | None = None


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


def validate_players(players: Sequence[PlayerIn | None], game: EngineGame | None,
                     problems: Problems | None = None) -> list[PlayerIn]:
    """The players checked and cleaned (names as typed, addresses parsed). A ``None`` is an
    empty row of the home page's form: skipped, but it keeps its number, so that each
    problem is filed under its row's field (``email2``, ``tz2``: the third row). Every
    problem is collected: into ``problems`` if given, else raised at once (FormInvalid)."""
    own = problems is None
    problems = Problems() if problems is None else problems
    rows = [(i, p) for i, p in enumerate(players) if p is not None]
    if game is not None:
        _check_player_count(game, [i for i, _p in rows], problems)
    out: list[PlayerIn] = []
    seen: set[str] = set()
    for i, p in rows:
        if p.bot is not None:
            player = _check_bot(p, i, game, problems)
        else:
            player = _check_player(p, i, seen, problems)
        if player is not None:
            out.append(player)
    if own:
        problems.raise_any()
    return out


def _check_player_count(game: EngineGame, rows: list[int], problems: Problems) -> None:
    """The players of ``rows`` (their rows on the home page's form) are as many as
    ``game`` takes, each in a row the game has a seat for."""
    if not game.MIN_PLAYERS <= len(rows) <= game.MAX_PLAYERS:
        problems.add("players", gettext("a game needs %(low)s to %(high)s players, not %(n)s",
                                        low=game.MIN_PLAYERS, high=game.MAX_PLAYERS,
                                        n=len(rows)))
    for i in [i for i in rows if i >= game.MAX_PLAYERS]:
        # a row of the home form the chosen game has no seat for (the form hides it)
        problems.add(f"name{i}", ngettext(
            "this game takes at most %(num)s player: leave player %(i)s empty, or choose "
            "a game for more players",
            "this game takes at most %(num)s players: leave player %(i)s empty, or choose "
            "a game for more players", game.MAX_PLAYERS, i=i + 1))


def _check_player(p: PlayerIn, i: int, seen: set[str], problems: Problems) -> PlayerIn | None:
    """One player of row ``i`` (0-based), every field checked; None if any is wrong."""
    n = i + 1
    name = problems.check(f"name{i}", check_name, p.name, gettext("player %(i)s", i=n))
    email = problems.check(f"email{i}", _check_email, p.email, n)
    if email is not None and email.lower() in seen:
        problems.add(f"email{i}", gettext("player %(i)s: %(email)s appears twice", i=n,
                                          email=email))
        email = None
    if email is not None:
        seen.add(email.lower())
    language: str | None = p.language
    if language not in LANGUAGES:
        problems.add(f"lang{i}", gettext("player %(i)s: language must be one of %(codes)s",
                                         i=n, codes=", ".join(LANGUAGES)))
        language = None
    timezone: str | None = p.timezone
    if not zones.is_known(p.timezone):
        problems.add(f"tz{i}", gettext("player %(i)s: unknown time zone %(tz)s", i=n,
                                       tz=repr(str(timezone)[:64])))
        timezone = None
    if name is None or email is None or language is None or timezone is None:
        return None
    return PlayerIn(name, email, language, timezone)


def _check_bot(p: PlayerIn, i: int, game: EngineGame | None,
               problems: Problems) -> PlayerIn | None:
    """A bot's row: not the host's, a level the game offers, no address; its name as
    typed (or "Bot 2"), said to be a bot's wherever players read it."""
    n = i + 1
    level = str(p.bot)
    ok = True
    if i == 0:
        problems.add(f"bot{i}", gettext("player 1 is you, the host: a person, not a bot"))
        ok = False
    elif game is not None and level not in bot_levels(game):
        problems.add(f"bot{i}", gettext(
            "player %(i)s: this game offers bots at the levels %(levels)s", i=n,
            levels=", ".join(bot_levels(game))))
        ok = False
    if p.email.strip():
        problems.add(f"email{i}", gettext(
            "player %(i)s: a bot has no email address; leave it empty, or choose a person",
            i=n))
        ok = False
    typed = (p.name or "").strip()
    name = problems.check(f"name{i}", check_name, typed or gettext("Bot %(n)s", n=n),
                          gettext("player %(i)s", i=n))
    if name is None or not ok:
        return None
    if "bot" not in name.lower():
        name = gettext("%(name)s (bot)", name=name)[:60]
    return PlayerIn(name, "", p.language if p.language in LANGUAGES else "en", "UTC",
                    level)


def _check_email(text: str | None, n: int) -> str:
    if text is None or not text.strip():
        raise InvalidInput(gettext("player %(i)s: the email address is missing", i=n))
    try:
        return parse_address(text)
    except BadAddress as exc:
        raise InvalidInput(gettext("player %(i)s: %(email)s is not an email address we "
                                   "can write to (%(why)s)", i=n,
                                   email=repr(str(text or "")[:80]),
                                   why=address_problem(exc))) from None


def check_name(text: str | None, who: str) -> str:
    """A player's name: 1 to 60 characters on one line, kept as typed."""
    if bad_characters(text or ""):
        raise InvalidInput(gettext("%(who)s: names may not contain line breaks, control "
                                   "characters or invisible formatting characters (such as "
                                   "text-direction overrides)", who=who))
    name = (text or "").strip()  # as typed, but for blanks around it
    if not name:
        raise InvalidInput(gettext("%(who)s: the name is missing", who=who))
    if len(name) > 60 or any(c in name for c in "<>"):
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


def create_game(engine_name: str, players: Sequence[PlayerIn | None],
                policy: GamePolicy | Mapping[str, Any] | None = None, *,
                seed: int | None = None, title: str = "", confirm_by_email: bool = True,
                start: bool = False, client: str | None = None) -> Created:
    """Create a game; the first player is the host (a ``None`` in ``players`` is an empty
    row of the web form, see ``validate_players``). ``policy`` is a checked GamePolicy,
    or what the host entered (see ``GamePolicy.parse``); None is the default policy.
    Every problem with the settings is refused at once (FormInvalid, see
    ``check_new_game``).

    From the web (``confirm_by_email``) nothing reaches the players until the host confirms
    through a link sent to the host's own address. From the CLI the host is trusted:
    invitations go out at once, or with ``start`` the game starts without them.
    """
    new = check_new_game(engine_name, players, policy, title)
    with session_scope() as s:
        return _create(s, engine_name, new.players, new.policy, new.title, seed,
                       confirm_by_email, start, client, rows=new.rows)


@dataclass(frozen=True)
class NewGame:
    """The checked settings of a game to create (``rows``: each player's row on the form)."""

    players: list[PlayerIn]
    rows: list[int]
    policy: GamePolicy
    title: str


def check_new_game(engine_name: str, players: Sequence[PlayerIn | None],
                   policy: GamePolicy | Mapping[str, Any] | None = None,
                   title: str = "") -> NewGame:
    """Check every setting of a new game and refuse them all at once: FormInvalid lists
    each problem under the home page's name of its field (``game``, ``title``,
    ``players``, ``name0``/``email0``/``lang0``/``tz0`` per row, then the policy's:
    ``hours``, ``reminders``, ``absent_after``, ``absent_bot``, ``vacation_days``), in the
    form's order."""
    problems = Problems()
    game_mod = problems.check("game", _game_module, engine_name)
    own_title = problems.check("title", check_title, title)
    checked = validate_players(players, game_mod, problems)
    if not isinstance(policy, GamePolicy):
        policy = GamePolicy.parse_into(policy or {}, problems)
    problems.raise_any()
    assert policy is not None
    return NewGame(checked, [i for i, p in enumerate(players) if p is not None], policy,
                   own_title or default_title(game_mod, [p.name for p in checked]))


def _game_module(engine_name: str) -> EngineGame:
    try:
        return get_game(engine_name)
    except EngineError:
        raise InvalidInput(gettext("there is no game called %(name)s",
                                   name=repr(engine_name))) from None


def _create(s: Session, engine_name: str, players: list[PlayerIn], policy: GamePolicy,
            title: str, seed: int | None, confirm_by_email: bool,
            start: bool, client: str | None, rows: list[int] | None = None,
            host: str | None = None) -> Created:
    """Write a new game of checked players and policy in the caller's transaction
    (``rows``: each player's row on the web form, to file a refused address under).
    ``host`` is the address of whoever creates it, who gets the host link: by default the
    first player, who has joined by creating it; otherwise (playing again) only a player
    at that address has joined, and everyone else is invited."""
    if client is not None:
        _rate_limit(s, f"create:{client}", current_app.config["CREATE_LIMIT_PER_HOUR"])
    if confirm_by_email or not start:
        problems = Problems()
        for row, p in zip(rows or range(len(players)), players, strict=True):
            if p.bot is None:
                problems.check(f"email{row}", check_may_invite, s, p.email)
        problems.raise_any()
    gid = secrets.token_hex(5)
    game = Game(id=gid, engine=engine_name, title=title, seed=new_seed(seed),
                options=dict(listing(engine_name).options),
                policy=policy,
                spectator_key=secrets.token_hex(8),
                status=GameStatus.AWAITING_HOST if confirm_by_email else GameStatus.INVITING)
    s.add(game)
    s.flush()
    seats = []
    for pos, p in enumerate(players):
        joined = start or p.bot is not None or (
            pos == 0 if host is None else p.email.lower() == host)
        seat = Seat(game_id=gid, position=pos, name=p.name, email=p.email,
                    language=p.language, timezone=p.timezone, is_host=pos == 0,
                    invite=Invite.ACCEPTED if joined else Invite.INVITED,
                    bot=SeatBot(p.bot) if p.bot is not None else None,
                    robot=p.bot is not None)
        s.add(seat)
        seats.append(seat)
    s.flush()
    admin = mint(s, TokenKind.ADMIN, gid, seats[0].id,
                 action={"address": host if host is not None else seats[0].email.lower()})
    if confirm_by_email:
        queue_email(s, game, seats[0], EmailTemplate.HOST_CONFIRM, {"days": UNCONFIRMED_DAYS},
                    links={"confirm": {"kind": TokenKind.HOST_CONFIRM},
                           "admin": {"kind": TokenKind.ADMIN}})
    elif start:
        _start(s, game, seats)
    else:
        _send_invitations(s, game, seats)
    return Created(gid, admin)


# --------------------------------------------------------------------------- playing again


def play_again(admin_raw: str, client: str | None = None) -> tuple[Created, bool]:
    """A new game of the same engine, players and settings after this one ended. Whoever
    presses the button (the address the host link was sent to) hosts it and has joined;
    everyone else is invited and accepts anew, as for any game: also the holder of the
    first seat, who may have got it by a hand-over and never asked for another game. The
    new game is recorded on the old one in the same transaction, so a second press (or a
    double click) opens that game instead of making another. Returns the new game with
    a fresh host link, and whether this call made it."""
    with session_scope() as s:
        asker = host_address(s, admin_raw)
        old = admin_game(s, admin_raw)  # locked: two presses at once are served in turn
        if old.follow_up_game_id is not None:
            first = seats_of(s, old.follow_up_game_id)[0]
            return Created(old.follow_up_game_id,
                           mint(s, TokenKind.ADMIN, old.follow_up_game_id, first.id,
                                action={"address": asker})), False
        if old.status not in ENDED:
            raise WrongState(gettext("a game can be played again once it has ended"))
        mod = get_game(old.engine)
        seats = [seat for seat, _joined in play_again_players(s, old, asker)]
        if len(seats) < mod.MIN_PLAYERS:
            raise WrongState(gettext("too few of the players are still in (this game needs "
                                     "at least %(n)s); start a new game from the home page",
                                     n=mod.MIN_PLAYERS))
        players = validate_players([as_player(x) for x in seats], mod)
        created = _create(s, old.engine, players, old.policy,
                          next_title(old.title or default_title(mod, [p.name for p in players])),
                          None, confirm_by_email=False, start=False, client=client, host=asker)
        old.follow_up_game_id = created.game_id
        return created, True


def next_title(title: str) -> str:
    """The title of the next game of a series: "Friday (2)" after "Friday", then "(3)"."""
    m = re.fullmatch(r"(.*) \((\d{1,4})\)", title)
    base, n = (m.group(1), int(m.group(2)) + 1) if m else (title, 2)
    suffix = f" ({n})"
    if len(base) + len(suffix) > 100:
        base = base[:99 - len(suffix)].rstrip() + "…"
    return base + suffix


def new_seed(seed: int | None) -> int:
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


def check_may_invite(s: Session, address: str) -> None:
    """Refuse to invite an address that asked for no email, or that got the most
    invitations a day allows (so nobody can use the server to mail a stranger)."""
    rcpt = address.lower()
    if suppressed(s, rcpt):
        raise InvalidInput(gettext("%(address)s cannot be invited: that address asked not "
                                   "to get email from this server", address=address))
    if recent_emails(s, Outbox.rcpt == rcpt, INVITE_TEMPLATES, timedelta(days=1)) >= \
            int(current_app.config["INVITE_LIMIT_PER_ADDRESS"]):
        raise RateLimited(gettext("%(address)s has had as many invitations as one day "
                                  "allows; try again tomorrow", address=address))


# --------------------------------------------------------------------------- unconfirmed games


UNCONFIRMED_DAYS = 3  # a game made on the web and not confirmed by its host is deleted then


def expired_unconfirmed(now: datetime, limit: int = 500) -> list[str]:
    """Games made on the web whose host has not confirmed them in ``UNCONFIRMED_DAYS``
    (for the clock)."""
    with read_scope() as s:
        return list(s.exec(select(Game.id).where(
            Game.status == GameStatus.AWAITING_HOST,
            col(Game.created_at) <= now - timedelta(days=UNCONFIRMED_DAYS))
            .order_by(col(Game.created_at)).limit(limit)))


def expire_unconfirmed(game_id: str, now: datetime) -> bool:
    """Delete a game its host never confirmed, with everything about it (the addresses
    typed in by whoever made it, who may not be its host: nobody has agreed to anything,
    and only the host was ever emailed); False if it was confirmed meanwhile."""
    with session_scope() as s:
        game = lock_game(s, game_id)
        if game.status != GameStatus.AWAITING_HOST or \
                game.created_at > now - timedelta(days=UNCONFIRMED_DAYS):
            return False
        for model in (Token, Outbox, Seat):
            s.execute(delete(model).where(col(model.game_id) == game_id))
        s.delete(game)
        return True


def describe_host_confirm(raw: str, admin: Any = None) -> dict[str, Any]:
    """What a host's confirmation link would confirm, for its page (changes nothing).
    ``admin``: the host-page link the confirming POST made (``confirm_host``), given back
    by the page after it; ``host_page`` is that link if it is a live host link of this
    very game (else None: the page then only says the game is confirmed)."""
    with read_scope() as s:
        token = live_token(s, raw, TokenKind.HOST_CONFIRM)
        game = get_row(s, Game, token.game_id)
        confirmed = game.status != GameStatus.AWAITING_HOST
        return {"game": game, "seats": seats_of(s, game.id), "confirmed": confirmed,
                "host_page": admin if confirmed and admin is not None
                and is_link_of(s, admin, TokenKind.ADMIN, game.id) else None}


def created_game(game_id: Any) -> dict[str, Any] | None:
    """The page after the new-game form (Post/Redirect/Get): the host's name and address
    of a game made on the web and not confirmed yet (``game_id``: what the form's POST
    kept in the browser's signed session, never what a link says), or None."""
    if not isinstance(game_id, str) or not 0 < len(game_id) <= 16:
        return None
    with read_scope() as s:
        game = s.get(Game, game_id)
        if game is None or game.status != GameStatus.AWAITING_HOST:
            return None
        host = seats_of(s, game.id)[0]
        return {"name": host.name, "email": host.email}


def confirm_host(raw: str) -> tuple[str, bool, str | None]:
    """The host confirms a game made on the web: invitations go out. Returns the game id,
    whether this call confirmed it (False: it was confirmed before; the link keeps
    saying so instead of turning into an unknown link) and, when it did, a fresh link
    to the host page (raw token) for the page that says so."""
    with session_scope() as s:
        token = live_token(s, raw, TokenKind.HOST_CONFIRM)
        game = lock_game(s, token.game_id)
        if game.status == GameStatus.ABANDONED:
            raise WrongState(gettext("the host ended this game before it started"))
        if game.status != GameStatus.AWAITING_HOST:
            return game.id, False, None
        game.status = GameStatus.INVITING
        _send_invitations(s, game, seats_of(s, game.id))
        return game.id, True, mint(s, TokenKind.ADMIN, game.id, token.seat_id)


# The links of an invitation: accept or decline.
_INVITE_LINKS: dict[str, dict[str, Any]] = {
    "accept": {"kind": TokenKind.INVITE, "action": {"answer": "accept"}},
    "decline": {"kind": TokenKind.INVITE, "action": {"answer": "decline"}}}


def _send_invitations(s: Session, game: Game, seats: list[Seat]) -> None:
    host = seats[0]
    for seat in seats:
        if seat.invite == Invite.INVITED:
            queue_email(s, game, seat, EmailTemplate.INVITATION, {"host": host.name},
                        links=_INVITE_LINKS)
    start_if_ready(s, game, seats)


def describe_invitation(raw: str, page: Any = None) -> dict[str, Any]:
    """What an invitation link answers, for its confirmation page (changes nothing).
    ``page``: the game-page link an acceptance made (``answer_invitation``), given back
    by the page after it; kept (``page``) only if it is a live game-page link of this
    very seat, else None."""
    with read_scope() as s:
        token = live_token(s, raw, TokenKind.INVITE)
        game = get_row(s, Game, token.game_id)
        seats = seats_of(s, game.id)
        seat = next(x for x in seats if x.id == token.seat_id)
        return {"game": game, "seat": seat, "seats": seats,
                "answer": (token.action or {}).get("answer", "accept"),
                "answered": seat.invite if seat.invite != Invite.INVITED else None,
                "page": page if page is not None and seat.invite == Invite.ACCEPTED
                and is_link_of(s, page, TokenKind.PAGE, game.id, seat.id) else None}


def answer_invitation(raw: str, accept: bool, language: str | None = None,
                      timezone: str | None = None) -> tuple[str, Invite, str | None]:
    """Accept or decline; returns the game id, the new invite status and, for an
    acceptance, a fresh link to the player's game page (raw token). Starts when all
    accepted. An acceptance may confirm the player's ``language`` and ``timezone`` (None:
    as invited); InvalidInput (``reason`` ``invite/language`` or ``invite/timezone``)
    for one this server does not know, and nothing is written."""
    if accept and language is not None and language not in LANGUAGES:
        raise InvalidInput(gettext("choose a language from the list"), reason="invite/language")
    if accept and timezone is not None and not zones.is_known(timezone):
        raise InvalidInput(gettext("choose a time zone from the list"), reason="invite/timezone")
    with session_scope() as s:
        token = live_token(s, raw, TokenKind.INVITE)
        game = lock_game(s, token.game_id)
        seat = get_row(s, Seat, token.seat_id)
        if seat.invite != Invite.INVITED:
            raise AlreadyRecorded(gettext("you already answered this invitation"),
                                  game_id=game.id, answer=seat.invite)
        if game.status != GameStatus.INVITING:
            raise WrongState(gettext("this game no longer waits for players: the host ended it"))
        seat.invite = Invite.ACCEPTED if accept else Invite.DECLINED
        if accept and language is not None:
            seat.language = language
        if accept and timezone is not None:
            seat.timezone = timezone
        if not accept:
            tell_host_declined(s, game, seat)
        start_if_ready(s, game, seats_of(s, game.id))
        page = mint(s, TokenKind.PAGE, game.id, seat.id) if accept else None
        return game.id, seat.invite, page


def replace_player(admin_raw: str, position: int, player: PlayerIn) -> None:
    """The host invites someone else for a seat whose invitation was declined."""
    with session_scope() as s:
        game = admin_game(s, admin_raw)
        if game.status != GameStatus.INVITING:
            raise WrongState(gettext("players can be replaced only while invitations are open"))
        seats = seats_of(s, game.id)
        if not 0 <= position < len(seats) or seats[position].invite != Invite.DECLINED:
            raise InvalidInput(gettext("only a seat whose invitation was declined can be "
                                       "re-invited"))
        seat = seats[position]
        new = validate_newcomer(s, game, seat, player)
        check_may_invite(s, new.email)
        revoke_seat(s, saved_id(seat))
        seat.name, seat.email, seat.invite = new.name, new.email, Invite.INVITED
        seat.left_at, seat.mute_notices = None, False
        seat.language, seat.timezone = new.language, new.timezone
        queue_email(s, game, seat, EmailTemplate.INVITATION, {"host": seats[0].name},
                    links=_INVITE_LINKS, key=f"invitation:{seat.id}:{secrets.token_hex(4)}")


def start_if_ready(s: Session, game: Game, seats: list[Seat]) -> None:
    if game.status == GameStatus.INVITING and all(x.invite == Invite.ACCEPTED for x in seats):
        _start(s, game, seats)


def _start(s: Session, game: Game, seats: list[Seat]) -> None:
    mod = get_game(game.engine)
    setup = getattr(mod, "setup_with_events", None)
    names = [x.name for x in seats]
    if setup:
        state, events = setup(names, game.seed, game.options)
    else:
        state, events = mod.setup(names, game.seed, game.options), []
    game.status = GameStatus.ACTIVE
    game.started_at = utcnow()
    game.version = 1
    game.state = dump_json(mod.to_json(state))
    log_events(s, game, events)
    deciding = {d.seat_id for d in sync_decisions(s, game, mod, state, seats)}
    for seat in seats:
        if seat.id not in deciding:
            queue_email(s, game, seat, EmailTemplate.GAME_STARTED, {}, links=PAGE_LINK)


def as_player(seat: Seat) -> PlayerIn:
    """A seat as the player a host would enter for it (a bot's: its level)."""
    return PlayerIn(seat.name, seat.email, seat.language, seat.timezone,
                    str(seat.bot) if seat.robot and seat.bot else None)


def validate_newcomer(s: Session, game: Game, seat: Seat, player: PlayerIn) -> PlayerIn:
    """``player`` checked for ``seat`` against the other players; a problem names the
    seat's number, as the host page shows it ("player 2: ...")."""
    players = [player if x.id == seat.id else as_player(x) for x in seats_of(s, game.id)]
    return validate_players(players, get_game(game.engine))[seat.position]


def tell_host_declined(s: Session, game: Game, seat: Seat,
                       handover: dict[str, Any] | None = None) -> None:
    """Tell the host that someone declined a seat (or a hand-over of one)."""
    host = seats_of(s, game.id)[0]
    who = handover or {"name": seat.name, "email": seat.email}
    if host.id != seat.id or handover:
        queue_email(s, game, host, EmailTemplate.DECLINED,
                    {"who": who["name"], "email": who["email"], "handover": bool(handover)},
                    links={"admin": {"kind": TokenKind.ADMIN}},
                    key=f"declined:{game.id}:{seat.id}:{secrets.token_hex(4)}")
