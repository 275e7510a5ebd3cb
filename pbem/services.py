"""The service layer: the only code that calls the engine and the only code that commits.

Every change to a game is one transaction: lock the game row, check the decision is still
open, ``engine.apply``, store the new state with its Move and Events, close and open
Decision rows, queue the emails in the Outbox. Commit. Mail is delivered after the commit
(``pbem.mail.deliver_due``); a crash leaves either the old or the new state.
"""

from __future__ import annotations

import json
import random
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from flask import current_app
from flask_babel import gettext
from sqlalchemy import func, insert, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import Session, select

from engine.core import Action, EngineError, Event, get_game
from engine.core import Game as EngineGame
from pbem import i18n, localize
from pbem.db import is_postgres, session_scope
from pbem.errors import (
    AlreadyRecorded,
    Conflict,
    IllegalMove,
    InvalidInput,
    NotFound,
    RateLimited,
    TurnOver,
    WrongState,
)
from pbem.headers import BadAddress, address_problem, bad_characters, parse_address
from pbem.i18n import language, mark, number
from pbem.mail import INVITE_TEMPLATES, TURN_TEMPLATES, default_title, may_mail
from pbem.models import (
    Decision,
    EventLog,
    Game,
    Move,
    Outbox,
    RateLimit,
    Seat,
    Suppression,
    Token,
    utcnow,
)
from pbem.tokens import lookup, mint, revoke_seat

GAMES_OFFERED = ("cavemen",)
OUTBOX_CHANNEL = "pbem_outbox"  # PostgreSQL NOTIFY channel: new mail to deliver
LANGUAGES = tuple(i18n.LANGUAGES)
ONE_CLICK_BIDS = 8  # bid links offered in a decision email above the high bid
# Bot moves played in one transaction after a move. A game of heuristic bots ends well
# within it; bots that only play the timeout defaults never end a game, so when every seat
# is on such a bot the rest waits for the deadlines instead of spinning in one sweep.
BOT_MOVES_PER_PLAY = 1000


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


# --------------------------------------------------------------------------- validation


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


# --------------------------------------------------------------------------- creating games


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


def _recent(s: Session, where: Any, templates: frozenset[str] | None,
            within: timedelta, exclude: frozenset[str] = frozenset()) -> int:
    """Emails matching ``where`` queued within ``within`` that went or will go out."""
    query = select(func.count()).select_from(Outbox).where(
        where, Outbox.created_at >= utcnow() - within,
        Outbox.status.in_(("pending", "sending", "sent")))
    if templates is not None:
        query = query.where(Outbox.template.in_(templates))
    if exclude:
        query = query.where(Outbox.template.not_in(exclude))
    return s.exec(query).one()


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


# --------------------------------------------------------------------------- playing


@dataclass(frozen=True)
class Outcome:
    game_id: str
    seat_position: int
    action: dict
    page_token: str  # a fresh game-page link for the response page
    again: bool  # the same seat must decide again at once
    finished: bool
    names: tuple[str, ...] = ()  # players by seat
    waiting: tuple[tuple[int, str], ...] = ()  # (seat, decision kind) now open
    winners: tuple[int, ...] = ()
    cards: dict | None = None  # printed data of the cards the action names
    language: str = "en"  # the player's

    def card(self, cid: str) -> dict[str, Any]:
        return (self.cards or {}).get(cid, {"id": cid, "name": cid})


def describe_token(raw: str) -> dict[str, Any]:
    """What a one-click link would do, for its confirmation page (changes nothing)."""
    with session_scope() as s:
        token = _token(s, raw, "action")
        game = s.get(Game, token.game_id)
        decision = s.get(Decision, token.decision_id)
        seat = s.get(Seat, token.seat_id)
        info = {"game": game, "seat": seat, "decision": decision, "action": token.action,
                "card": _card_lookup(game, seat.language)}
        if decision.closed_at is not None:
            info["closed"] = _closed_reason(s, decision, seat)
        return info


def act_by_token(raw: str) -> Outcome:
    """The POST behind a one-click link: play the action bound to the token."""
    with session_scope() as s:
        token = _token(s, raw, "action")
        game, seat, decision = _locked_decision(s, token.game_id, token.seat_id,
                                                token.decision_id)
        return _act(s, game, seat, decision, Action.from_json(token.action), "player")


def act_from_page(page_raw: str, decision_id: Any,
                  read_action: Callable[[dict[str, Any], list[Action]], Action]) -> Outcome:
    """The POST of the full decision form on a seat's game page, in one transaction:
    the decision is checked under the game's lock (a second submission says "already
    recorded"), then ``read_action(view, legal)`` turns the form into an action."""
    with session_scope() as s:
        token = _token(s, page_raw, "page")
        game, seat, decision = _locked_decision(s, token.game_id, token.seat_id,
                                                _decision_id(decision_id))
        mod = get_game(game.engine)
        state = mod.from_json(json.loads(game.state))
        legal = mod.legal_actions(state, decision.position)
        try:
            action = read_action(mod.view(state, decision.position), legal)
        except EngineError as exc:
            raise IllegalMove(exc.code, decision.kind) from None
        except ValueError:
            raise IllegalMove("action/missing", decision.kind) from None
        return _act(s, game, seat, decision, action, "player", state)


def _decision_id(value: Any) -> int:
    try:
        decision_id = int(value)
    except (TypeError, ValueError):
        raise InvalidInput(gettext("the form is missing its decision; reload the page")) from None
    if not 0 < decision_id < 2**31:  # a database integer
        raise NotFound(gettext("this decision does not belong to this link"))
    return decision_id


def _open_decision(s: Session, game_id: str, seat_id: int, decision_id: int) -> Decision:
    decision = s.get(Decision, decision_id)
    if decision is None or decision.game_id != game_id or decision.seat_id != seat_id:
        raise NotFound(gettext("this decision does not belong to this link"))
    if decision.closed_at is not None:
        reason = _closed_reason(s, decision, s.get(Seat, seat_id))
        if reason == "recorded":
            raise AlreadyRecorded(gettext("your choice for this turn is already recorded"),
                                  game_id=game_id, decision_id=decision_id)
        raise TurnOver(gettext("this turn is over"), game_id=game_id, reason=reason)
    return decision


def _locked_decision(s: Session, game_id: str, seat_id: int,
                     decision_id: int) -> tuple[Game, Seat, Decision]:
    """The game (locked for this transaction), the seat, and its decision if still open."""
    game = _lock_game(s, game_id)
    decision = _open_decision(s, game_id, seat_id, decision_id)
    return game, s.get(Seat, seat_id), decision


def _act(s: Session, game: Game, seat: Seat, decision: Decision, action: Action,
         source: str, state: Any = None) -> Outcome:
    """A player's move on their open decision of the locked game (``state``: the game's
    state, if the caller has read it already)."""
    game_id, seat_id = game.id, seat.id
    if game.paused_at is not None:
        raise WrongState(gettext("the host has paused the game; try again when it resumes"),
                         game_id=game_id)
    if source == "player":
        seat.timeouts_in_row = 0
    opened = _play(s, game, seat, decision, action, source, state)
    again = any(d.seat_id == seat_id for d in opened)
    mod, state = get_game(game.engine), s.info["pbem.state"]
    result = mod.result(state)
    card = localize.lookup(mod, state, localize.translation_for(mod, state, seat.language))
    named = [v for k, v in action.args if k in ("card", "replace")]
    named += [c for k, v in action.args if k == "cards" for c in v]
    return Outcome(game_id, seat.position, action.to_json(), mint(s, "page", game_id, seat_id),
                   again, game.status == "finished",
                   names=tuple(x.name for x in s.info["pbem.seats"]),
                   waiting=tuple((d.seat, d.kind) for d in mod.pending(state)),
                   winners=tuple(result.winners) if result else (),
                   cards={c: card(c) for c in named}, language=seat.language)


def _play(s: Session, game: Game, seat: Seat, decision: Decision, action: Action,
          source: str, state: Any = None) -> list[Decision]:
    """Apply one move to the locked game, then let bots play their seats; returns the
    decisions opened for people (their emails are queued). The new state and the seats
    are left in ``s.info`` for the caller's answer."""
    mod = get_game(game.engine)
    if state is None:
        state = mod.from_json(json.loads(game.state))
    try:
        state, events = mod.apply(state, seat.position, action)
    except EngineError as exc:
        raise IllegalMove(exc.code, decision.kind) from None
    _insert_move(s, game.id, decision.id, seat.position, action, source)
    decision.closed_at, decision.closed_by = utcnow(), source
    _commit_state(s, game, mod, state, events)
    seats = _seats(s, game.id)
    opened = _sync_decisions(s, game, mod, state, seats)
    for _ in range(BOT_MOVES_PER_PLAY):  # bots play their seats (see BOT_MOVES_PER_PLAY)
        bot_row = next((d for d in opened if seats[d.position].bot), None)
        if bot_row is None or game.status != "active":
            break
        bot_seat = seats[bot_row.position]
        choice = _bot_choice(game, mod, state, bot_seat)
        state, events = mod.apply(state, bot_seat.position, choice)
        _insert_move(s, game.id, bot_row.id, bot_seat.position, choice, "bot")
        bot_row.closed_at, bot_row.closed_by = utcnow(), "bot"
        _commit_state(s, game, mod, state, events)
        opened = [d for d in opened if d.closed_at is None]
        opened += _sync_decisions(s, game, mod, state, seats)
    s.info["pbem.state"], s.info["pbem.seats"] = state, seats
    return [d for d in opened if d.closed_at is None]


def _insert_move(s: Session, game_id: str, decision_id: int, position: int, action: Action,
                 source: str) -> None:
    s.execute(insert(Move).values(game_id=game_id, decision_id=decision_id, position=position,
                                  action=action.to_json(), source=source, created_at=utcnow()))


def _bot_choice(game: Game, mod: EngineGame, state: Any, seat: Seat) -> Action:
    """What a bot plays for an absent seat: the game's heuristic bot, or the default."""
    if seat.bot == "heuristic":
        from engine.cavemen.bots import BOTS  # bots are per game; only Cavemen has them

        rng = random.Random(f"{game.id}:{game.version}")
        return BOTS["heuristic"](state, seat.position, rng)
    return mod.default_action(state, seat.position)


def _closed_reason(s: Session, decision: Decision, seat: Seat) -> str:
    if decision.closed_by == "player":
        return "recorded"
    return decision.closed_by or "closed"


def _commit_state(s: Session, game: Game, mod: EngineGame, state: Any,
                  events: list[Event]) -> None:
    """Store the new state with an optimistic version check (the row is also locked)."""
    new_version = game.version + 1
    first_seq = game.event_seq
    done = s.execute(update(Game).where(Game.id == game.id, Game.version == game.version)
                     .values(version=new_version, state=_dump(mod.to_json(state)),
                             event_seq=first_seq + len(events)))
    if done.rowcount != 1:
        raise Conflict(gettext("the game changed at the same moment; please try again"))
    set_committed_value(game, "version", new_version)
    set_committed_value(game, "event_seq", first_seq + len(events))
    set_committed_value(game, "state", None)
    s.expire(game, ["state"])  # read back only if someone needs it
    result = mod.result(state)
    _insert_events(s, game.id, first_seq, events)
    if result is not None and game.status == "active":
        game.status = "finished" if result.reason != "abandoned" else "abandoned"
        game.ended_at = utcnow()
        for seat in _seats(s, game.id):
            _queue(s, game, seat, "result", {"result": result.to_json()},
                   links={"page": {"kind": "page"}})


def _sync_decisions(s: Session, game: Game, mod: EngineGame, state: Any,
                    seats: list[Seat]) -> list[Decision]:
    """Close Decision rows the engine no longer asks for; open rows (and emails) for new ones."""
    wanted = {(d.seat, d.kind) for d in mod.pending(state)}
    open_rows = s.exec(select(Decision).where(Decision.game_id == game.id,
                                              Decision.closed_at.is_(None))).all()
    have = set()
    for row in open_rows:
        if (row.position, row.kind) in wanted:
            have.add((row.position, row.kind))
        else:
            row.closed_at, row.closed_by = utcnow(), "superseded"
    opened = []
    now = utcnow()
    for position, kind in sorted(wanted - have):
        seat = seats[position]
        deadline = _deadline_for(game, seat, now)
        row = Decision(game_id=game.id, seat_id=seat.id, position=position,
                       seq=game.version, kind=kind, deadline_at=deadline,
                       next_reminder_at=_next_reminder(game, deadline, now))
        s.add(row)
        s.flush()
        opened.append(row)
        if not seat.bot:
            _queue_decision(s, game, mod, state, seat, row)
    return opened


def _deadline_for(game: Game, seat: Seat, now: datetime) -> datetime:
    """Now plus the time per decision, counted from the end of the seat's vacation."""
    start = max(now, seat.vacation_until) if seat.vacation_until else now
    return start + timedelta(hours=game.hours_per_decision)


def _next_reminder(game: Game, deadline: datetime, now: datetime) -> datetime | None:
    """The earliest reminder time still ahead (reminders are hours before the deadline)."""
    ahead = [deadline - timedelta(hours=h) for h in game.reminder_hours]
    ahead = [t for t in ahead if t > now]
    return min(ahead) if ahead else None


def default_reminders(hours: float) -> list[float]:
    """Half time and 2 hours before the deadline, where those fall inside the window."""
    return sorted({h for h in (hours / 2, 2.0) if 0 < h < hours}, reverse=True)


def _queue_decision(s: Session, game: Game, mod: EngineGame, state: Any, seat: Seat,
                    decision: Decision, reminder: bool = False, key: str | None = None) -> None:
    legal = mod.legal_actions(state, seat.position)
    links = {"page": {"kind": "page"}}
    for i, action in enumerate(one_click_actions(decision.kind, legal, state, mod)):
        links[f"choice{i}"] = {"kind": "action", "decision_id": decision.id,
                               "action": action.to_json()}
    _queue(s, game, seat, "decision", {
        "decision_id": decision.id, "kind": decision.kind,
        "deadline": decision.deadline_at.isoformat(),
        "more_choices": len(legal) > len(links) - 1,
        "default": mod.default_action(state, seat.position).to_json(),
        "reminder": reminder,
    }, links=links, key=key or (f"reminder:{decision.id}:{decision.reminders_sent}" if reminder
                                else f"decision:{decision.id}"))


def one_click_actions(kind: str, legal: list[Action], state: Any, mod: EngineGame):
    """The choices an email offers as one-click links; the rest need the full page."""
    if kind == "bid":
        passes = [a for a in legal if a.kind == "pass"]
        bids = [a for a in legal if a.kind == "bid"][:ONE_CLICK_BIDS]
        return passes + bids
    if kind == "act":
        return [a for a in legal if a.get("replace") is None]
    if kind in ("starve", "casualty"):
        return legal
    return []  # discard: choose cards on the page


# --------------------------------------------------------------------------- reading


def game_for_page(raw: str, with_log: bool = True) -> dict[str, Any]:
    """Everything a seat's game page shows, from that seat's view. A one-click (action)
    link opens the page read-only: only a game-page link offers the decision form."""
    with session_scope() as s:
        token = _token(s, raw, "page", "action")
        game = s.get(Game, token.game_id)
        seat = s.get(Seat, token.seat_id)
        data = _page_data(s, game, seat, with_log)
        data["readonly"] = token.kind != "page"
        return data


def game_for_spectator(key: str) -> dict[str, Any]:
    with session_scope() as s:
        key = str(key)
        game = None
        if re.fullmatch(r"[0-9a-f]{1,32}", key):
            game = s.exec(select(Game).where(Game.spectator_key == key)).first()
        if game is None:
            raise NotFound(gettext("no game at this address"))
        return _page_data(s, game, None)


def _page_data(s: Session, game: Game, seat: Seat | None,
               with_log: bool = True) -> dict[str, Any]:
    seats = _seats(s, game.id)
    position = seat.position if seat else None
    decisions = s.exec(select(Decision).where(Decision.game_id == game.id,
                                              Decision.closed_at.is_(None))).all()
    mine = next((d for d in decisions if seat and d.seat_id == seat.id), None)
    mod = get_game(game.engine)
    state = mod.from_json(json.loads(game.state)) if game.state else None
    legal = mod.legal_actions(state, seat.position) if mine is not None else []
    log = []
    if with_log:
        events = s.exec(select(EventLog).where(EventLog.game_id == game.id)
                        .order_by(EventLog.seq)).all()
        log = [e for e in events if e.visible_to is None or position in (e.visible_to or [])]
    tr = localize.translation_for(mod, state, seat.language if seat else language())
    return {
        "game": game, "seat": seat, "seats": seats, "card": localize.lookup(mod, state, tr),
        "view": localize.view(mod.view(state, position), tr) if state is not None else None,
        "open": decisions, "decision": mine, "legal": legal, "log": log, "readonly": False,
    }


def _card_lookup(game: Game, lang: str) -> localize.CardLookup:
    """A function from card id to printed card data in ``lang``, for narration."""
    mod = get_game(game.engine)
    state = mod.from_json(json.loads(game.state)) if game.state else None
    return localize.lookup(mod, state, localize.translation_for(mod, state, lang))


def admin_data(raw: str) -> dict[str, Any]:
    with session_scope() as s:
        game = _admin_game(s, raw)
        data = _page_data(s, game, _seats(s, game.id)[0])
        data["outbox"] = s.exec(select(Outbox).where(Outbox.game_id == game.id)
                                .order_by(Outbox.id)).all()
        return data


def _admin_game(s: Session, raw: str) -> Game:
    token = _token(s, raw, "admin")
    return _lock_game(s, token.game_id)


# --------------------------------------------------------------------------- time


def due_reminders(now: datetime, limit: int = 500) -> list[int]:
    """Open decisions of running games whose next reminder is due."""
    return _due(Decision.next_reminder_at, now, limit)


def due_timeouts(now: datetime, limit: int = 500) -> list[int]:
    """Open decisions of running games whose deadline has passed."""
    return _due(Decision.deadline_at, now, limit)


def _due(column: Any, now: datetime, limit: int) -> list[int]:
    """Ids of open decisions of running, unpaused games whose ``column`` time has come,
    earliest first (served by the indexes on (closed_at, deadline_at / next_reminder_at))."""
    with session_scope() as s:
        return list(s.exec(
            select(Decision.id).join(Game, Game.id == Decision.game_id)
            .where(Decision.closed_at.is_(None), column <= now,
                   Game.status == "active", Game.paused_at.is_(None))
            .order_by(column).limit(limit)))


def _running_decision(s: Session, decision_id: int) -> tuple[Decision, Game] | None:
    """The decision and its game (row locked, decision re-read under the lock), if the
    decision is still open in a running, unpaused game; the check that makes every sweep
    step idempotent."""
    decision = s.get(Decision, decision_id)
    if decision is None:
        return None
    game = _lock_game(s, decision.game_id)
    s.refresh(decision)
    if decision.closed_at is not None or game.status != "active" or game.paused_at is not None:
        return None
    return decision, game


def send_reminder(decision_id: int, now: datetime) -> bool:
    """Queue the reminder that is due for a decision; False if nothing was due (any more)."""
    with session_scope() as s:
        found = _running_decision(s, decision_id)
        if found is None:
            return False
        decision, game = found
        due = decision.next_reminder_at
        if due is None or due > now:
            return False
        if decision.deadline_at <= now:  # overdue: the timeout comes next, not a reminder
            decision.next_reminder_at = None
            return False
        seat = s.get(Seat, decision.seat_id)
        decision.reminders_sent += 1
        decision.reminded_at = now
        decision.next_reminder_at = _next_reminder(game, decision.deadline_at, now)
        if not seat.bot:
            mod = get_game(game.engine)
            state = mod.from_json(json.loads(game.state))
            _queue_decision(s, game, mod, state, seat, decision, reminder=True)
        return True


def time_out(decision_id: int, now: datetime) -> bool:
    """Play the default action of an expired decision, exactly once; tell everyone."""
    with session_scope() as s:
        found = _running_decision(s, decision_id)
        if found is None or found[0].deadline_at > now:
            return False
        decision, game = found
        seat = s.get(Seat, decision.seat_id)
        mod = get_game(game.engine)
        action = mod.default_action(mod.from_json(json.loads(game.state)), seat.position)
        seat.timeouts_in_row += 1
        to_bot = seat.bot is None and seat.timeouts_in_row >= game.absent_after
        if to_bot:
            seat.bot = game.absent_bot
        _log_notice(s, game, "decision_timed_out", seat.position,
                    {"kind": decision.kind, "action": action.to_json()})
        if to_bot:
            _log_notice(s, game, "seat_on_bot", seat.position,
                        {"bot": seat.bot, "timeouts": seat.timeouts_in_row, "by": "absence"})
        opened = _play(s, game, seat, decision, action, "timeout")
        seats = _seats(s, game.id)
        told = {d.seat_id for d in opened if not seats[d.position].bot}  # a turn email
        for other in seats:
            if other.id not in told and game.status == "active":
                _queue(s, game, other, "notice", {"headline": "decision_timed_out"},
                       links={"page": {"kind": "page"}})
        return True


def pause_game(admin_raw: str) -> None:
    with session_scope() as s:
        game = _admin_game(s, admin_raw)
        _require_active(game)
        if game.paused_at is not None:
            raise WrongState(gettext("the game is already paused"))
        game.paused_at = utcnow()
        _notice_all(s, game, "game_paused", None, {})


def resume_game(admin_raw: str) -> None:
    """Resume; every open deadline (and reminder) moves by the time spent paused."""
    with session_scope() as s:
        game = _admin_game(s, admin_raw)
        if game.paused_at is None:
            raise WrongState(gettext("the game is not paused"))
        shift = utcnow() - game.paused_at
        game.paused_at = None
        _shift_open(s, game, shift)
        hours = round(shift.total_seconds() / 3600, 2)
        _notice_all(s, game, "game_resumed", None, {"hours": hours})


def extend_deadline(admin_raw: str, hours: Any) -> None:
    with session_scope() as s:
        game = _admin_game(s, admin_raw)
        _require_active(game)
        try:
            extra = float(hours)
        except (TypeError, ValueError):
            raise InvalidInput(gettext("give the extension in hours")) from None
        if not 0 < extra <= 24 * 30:
            raise InvalidInput(gettext("an extension is more than 0 hours and at most 30 days"))
        if not _shift_open(s, game, timedelta(hours=extra)):
            raise WrongState(gettext("no decision is open right now"))
        _notice_all(s, game, "deadline_extended", None, {"hours": extra})


def _shift_open(s: Session, game: Game, shift: timedelta, seat_id: int | None = None) -> int:
    now = utcnow()
    rows = s.exec(select(Decision).where(Decision.game_id == game.id,
                                         Decision.closed_at.is_(None))).all()
    rows = [d for d in rows if seat_id is None or d.seat_id == seat_id]
    for d in rows:
        d.deadline_at = d.deadline_at + shift
        d.next_reminder_at = _next_reminder(game, d.deadline_at, now)
    return len(rows)


def hand_over(admin_raw: str, position: Any, player: PlayerIn) -> str:
    """The host gives a seat to another person. A new address first gets one invitation
    to take the seat over, and nothing else until that person accepts
    (``answer_handover``); until then the seat stays as it is. A newer hand-over of the
    same seat replaces one not yet accepted (to correct a mistyped address). The same
    address with another name, language or time zone is updated at once. Returns
    ``"invited"`` or ``"updated"``."""
    with session_scope() as s:
        game = _admin_game(s, admin_raw)
        _require_active(game)
        seat = _seat_at(s, game, position)
        new = _validate_newcomer(s, game, seat, player)
        if new.email.lower() == seat.email.lower():
            seat.name, seat.language, seat.timezone = new.name, new.language, new.timezone
            return "updated"
        _check_may_invite(s, new.email)
        if _recent(s, Outbox.game_id == game.id, frozenset({"handover_invite"}),
                   timedelta(days=1)) >= int(current_app.config["HANDOVER_LIMIT_PER_GAME"]):
            raise RateLimited(gettext("this game has sent as many hand-over invitations as one day "
                              "allows; try again tomorrow"))
        _revoke_handover(s, seat)
        seat.pending_handover = {"name": new.name, "email": new.email,
                                 "language": new.language, "timezone": new.timezone,
                                 "at": utcnow().isoformat()}
        answer = {"kind": "handover"}
        _queue(s, game, seat, "handover_invite",
               {"host": _seats(s, game.id)[0].name, "old": seat.name, "new": new.name},
               links={"accept": {**answer, "action": {"answer": "accept",
                                                      "email": new.email}},
                      "decline": {**answer, "action": {"answer": "decline",
                                                       "email": new.email}}},
               key=f"handover_invite:{seat.id}:{secrets.token_hex(4)}",
               to=(new.name, new.email, new.language))
        return "invited"


def _validate_newcomer(s: Session, game: Game, seat: Seat, player: PlayerIn) -> PlayerIn:
    others = [PlayerIn(x.name, x.email, x.language, x.timezone)
              for x in _seats(s, game.id) if x.id != seat.id]
    return validate_players([*others, player], get_game(game.engine))[-1]


def _revoke_handover(s: Session, seat: Seat) -> None:
    seat.pending_handover = None
    for token in s.exec(select(Token).where(Token.seat_id == seat.id, Token.kind == "handover",
                                            Token.revoked_at.is_(None))):
        token.revoked_at = utcnow()


def withdraw_handover(admin_raw: str, position: Any) -> None:
    """The host takes back a hand-over that was not accepted yet."""
    with session_scope() as s:
        game = _admin_game(s, admin_raw)
        seat = _seat_at(s, game, position)
        if seat.pending_handover is None:
            raise WrongState(gettext("no hand-over of that seat is waiting"))
        _revoke_handover(s, seat)


def describe_handover(raw: str) -> dict[str, Any]:
    """What a hand-over invitation offers, for its page (changes nothing)."""
    with session_scope() as s:
        token = _token(s, raw, "handover")
        game = s.get(Game, token.game_id)
        seat = s.get(Seat, token.seat_id)
        return {"game": game, "seat": seat, "seats": _seats(s, game.id),
                "answer": (token.action or {}).get("answer", "accept"),
                "state": _handover_state(game, seat, token)}


def _handover_state(game: Game, seat: Seat, token: Token) -> str:
    email = str((token.action or {}).get("email", "")).lower()
    if seat.email.lower() == email:
        return "accepted"
    if game.status != "active":
        return "ended"
    if (seat.pending_handover or {}).get("email", "").lower() != email:
        return "withdrawn"
    return "open"


def answer_handover(raw: str, accept: bool) -> str:
    """The invited person takes the seat over (or declines; the host is told)."""
    with session_scope() as s:
        token = _token(s, raw, "handover")
        game = _lock_game(s, token.game_id)
        seat = s.get(Seat, token.seat_id)
        state = _handover_state(game, seat, token)
        if state == "accepted":
            raise AlreadyRecorded(gettext("you already took over this seat"), game_id=game.id)
        if state != "open":
            raise WrongState(gettext("this offer is no longer open: the host withdrew it or the "
                             "game has ended"), game_id=game.id)
        pending = seat.pending_handover
        _revoke_handover(s, seat)
        if not accept:
            _tell_host_declined(s, game, seat, handover=pending)
            return "declined"
        new = _validate_newcomer(s, game, seat, PlayerIn(
            pending["name"], pending["email"], pending["language"], pending["timezone"]))
        _give_seat(s, game, seat, new)
        return "accepted"


def _give_seat(s: Session, game: Game, seat: Seat, new: PlayerIn) -> None:
    """The seat now belongs to ``new``: the old links die at once; the new player is
    welcomed with the state (and gets the seat's open decision, if any)."""
    old_name = seat.name
    revoke_seat(s, seat.id)
    seat.name, seat.email, seat.language, seat.timezone = (
        new.name, new.email, new.language, new.timezone)
    seat.timeouts_in_row, seat.bot, seat.left_at, seat.mute_notices = 0, None, None, False
    seat.seen_event_seq = 0
    _log_notice(s, game, "seat_handed_over", seat.position, {"old": old_name,
                                                            "new": new.name})
    _queue(s, game, seat, "welcome", {"old": old_name}, links={"page": {"kind": "page"}},
           key=f"welcome:{seat.id}:{secrets.token_hex(4)}")
    mod = get_game(game.engine)
    state = mod.from_json(json.loads(game.state))
    for d in s.exec(select(Decision).where(Decision.seat_id == seat.id,
                                           Decision.closed_at.is_(None))):
        _queue_decision(s, game, mod, state, seat, d,
                        key=f"handover:{d.id}:{seat.id}:{secrets.token_hex(4)}")
    for other in _seats(s, game.id):
        if other.id != seat.id:
            _queue(s, game, other, "notice", {"headline": "seat_handed_over"},
                   links={"page": {"kind": "page"}})


def set_bot(admin_raw: str, position: Any, bot: str | None) -> None:
    """The host puts a seat on a bot (``heuristic`` or ``default``) or takes it off."""
    if bot not in (None, "heuristic", "default"):
        raise InvalidInput(gettext("the bot is 'heuristic' or 'default'"))
    with session_scope() as s:
        game = _admin_game(s, admin_raw)
        _require_active(game)
        seat = _seat_at(s, game, position)
        _switch_bot(s, game, seat, bot, by="host")


def is_on_bot(raw: str) -> bool:
    """Whether the seat behind a page or one-click link is being played by a bot."""
    with session_scope() as s:
        token = lookup(s, raw, "page", "action")
        return token is not None and bool(s.get(Seat, token.seat_id).bot)


def come_back(page_raw: str) -> str:
    """An absent player takes the seat back from the bot (the POST behind 'I'm back')."""
    with session_scope() as s:
        token = _token(s, page_raw, "page", "action")
        game = _lock_game(s, token.game_id)
        seat = s.get(Seat, token.seat_id)
        if seat.bot is None:
            raise WrongState(gettext("no bot is playing for you; you are already in charge"))
        seat.left_at = None
        _switch_bot(s, game, seat, None, by="player")
        return game.id


def _switch_bot(s: Session, game: Game, seat: Seat, bot: str | None, by: str) -> None:
    if seat.bot == bot:
        raise WrongState(gettext("that seat is already played that way"))
    seat.bot = bot
    seat.timeouts_in_row = 0
    _notice_all(s, game, "seat_on_bot" if bot else "seat_returned", seat.position,
                {"bot": bot, "by": by})
    if bot:
        _play_open_for_bot(s, game, seat)


def _play_open_for_bot(s: Session, game: Game, seat: Seat) -> None:
    """A seat just put on a bot plays its open decision now (unless paused)."""
    open_rows = s.exec(select(Decision).where(Decision.seat_id == seat.id,
                                              Decision.closed_at.is_(None))).all()
    if open_rows and game.paused_at is None:
        mod = get_game(game.engine)
        state = mod.from_json(json.loads(game.state))
        _play(s, game, seat, open_rows[0], _bot_choice(game, mod, state, seat), "bot")


# --------------------------------------------------------------------------- unsubscribing

NOTIFY_CHOICES = ("one-click", "mute", "unmute", "leave", "suppress")


def describe_unsubscribe(raw: str) -> dict[str, Any]:
    """What the unsubscribe link of an email offers (changes nothing): a player gets
    their notification settings, anyone else "never email me again"."""
    with session_scope() as s:
        token = _token(s, raw, "unsubscribe")
        address = str((token.action or {}).get("address", ""))
        game = s.get(Game, token.game_id)
        seat = s.get(Seat, token.seat_id) if token.seat_id else None
        return {"address": address, "game": game, "seat": seat,
                "player": _is_player(game, seat, address),
                "ended": _played_in_ended_game(game, seat, address),
                "suppressed": s.get(Suppression, address) is not None}


def unsubscribe(raw: str, how: str) -> str:
    """Carry out an unsubscribe link. ``one-click`` (RFC 8058, what a mail program's
    button sends) stops the player's notices but not their turns, and stops every email
    to anyone else; ``mute``, ``unmute`` and ``leave`` are a player's settings;
    ``suppress`` is "never email me again". Returns what was done."""
    if how not in NOTIFY_CHOICES:
        raise InvalidInput(gettext("choose what to stop"))
    with session_scope() as s:
        token = _token(s, raw, "unsubscribe")
        address = str((token.action or {}).get("address", "")).lower()
        game = _lock_game(s, token.game_id)
        seat = s.get(Seat, token.seat_id) if token.seat_id else None
        if _is_player(game, seat, address) and how != "suppress":
            return _notification_choice(s, game, seat, "mute" if how == "one-click" else how)
        if how == "one-click" and _played_in_ended_game(game, seat, address):
            return "ended"  # it sends nothing more; their other games are not touched
        if how not in ("one-click", "suppress"):
            raise WrongState(gettext("this address is not playing in this game"))
        _suppress(s, game, seat, address)
        return "suppressed"


def set_notifications(page_raw: str, how: str) -> str:
    """A player's notification settings from their game page."""
    if how not in ("mute", "unmute", "leave"):
        raise InvalidInput(gettext("choose a setting"))
    with session_scope() as s:
        token = _token(s, page_raw, "page")
        game = _lock_game(s, token.game_id)
        seat = s.get(Seat, token.seat_id)
        if not _is_player(game, seat, seat.email.lower()):
            raise WrongState(gettext("the game is not running"))
        return _notification_choice(s, game, seat, how)


def set_language(page_raw: str, lang: str) -> str:
    """A player changes their language: pages at once, emails from the next one on."""
    if lang not in LANGUAGES:
        raise InvalidInput(gettext("choose one of the languages offered"))
    with session_scope() as s:
        token = _token(s, page_raw, "page")
        _lock_game(s, token.game_id)
        s.get(Seat, token.seat_id).language = lang
        return lang


def _is_player(game: Game | None, seat: Seat | None, address: str) -> bool:
    """A person playing (or about to play) this game, as opposed to someone who was only
    invited, or whose game has ended."""
    return (game is not None and seat is not None and game.status in ("inviting", "active")
            and seat.invite == "accepted" and seat.left_at is None
            and seat.email.lower() == address.lower())


def _played_in_ended_game(game: Game | None, seat: Seat | None, address: str) -> bool:
    return (game is not None and seat is not None and game.status in ("finished", "abandoned")
            and seat.invite == "accepted" and seat.email.lower() == address.lower())


def _notification_choice(s: Session, game: Game, seat: Seat, how: str) -> str:
    if how == "leave":
        _leave(s, game, seat)
        return "left"
    seat.mute_notices = how == "mute"
    return "muted" if seat.mute_notices else "unmuted"


def _leave(s: Session, game: Game, seat: Seat) -> None:
    """The player leaves: a bot plays the seat, nothing more is sent to them, and the
    host is told (and can hand the seat to someone else)."""
    if game.status != "active":
        seat.invite, seat.left_at = "declined", utcnow()
        _tell_host_declined(s, game, seat)
        return
    seat.left_at = utcnow()
    _log_notice(s, game, "seat_left", seat.position, {"bot": game.absent_bot})
    host = _seats(s, game.id)[0]
    if host.id != seat.id:
        _queue(s, game, host, "notice", {"headline": "seat_left"},
               links={"admin": {"kind": "admin"}, "page": {"kind": "page"}})
    if seat.bot is None:
        seat.bot = game.absent_bot
        _play_open_for_bot(s, game, seat)


def _suppress(s: Session, game: Game, seat: Seat | None, address: str) -> None:
    """Never email ``address`` again; an open invitation of theirs in this game counts as
    declined, and a hand-over offered to them is withdrawn (the host is told)."""
    dialect = postgresql if is_postgres() else sqlite
    s.execute(dialect.insert(Suppression).values(address=address, created_at=utcnow())
              .on_conflict_do_nothing(index_elements=["address"]))
    if seat is None:
        return
    if seat.email.lower() == address and seat.invite == "invited":
        seat.invite = "declined"
        _tell_host_declined(s, game, seat)
        _start_if_ready(s, game, _seats(s, game.id))
    pending = seat.pending_handover or {}
    if str(pending.get("email", "")).lower() == address:
        _revoke_handover(s, seat)
        _tell_host_declined(s, game, seat, handover=pending)


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


def abandon_game(admin_raw: str) -> None:
    with session_scope() as s:
        game = _admin_game(s, admin_raw)
        if game.status in ("finished", "abandoned"):
            raise WrongState(gettext("the game has already ended"))
        mod = get_game(game.engine)
        if game.state and hasattr(mod, "abandon"):
            state, events = mod.abandon(mod.from_json(json.loads(game.state)))
            game.state = _dump(mod.to_json(state))
            game.version += 1
            _log(s, game, events)
        for d in s.exec(select(Decision).where(Decision.game_id == game.id,
                                               Decision.closed_at.is_(None))):
            d.closed_at, d.closed_by = utcnow(), "host"
        game.status, game.ended_at = "abandoned", utcnow()
        _notice_all(s, game, "game_abandoned_by_host", None, {})


def take_vacation(page_raw: str, days: Any) -> float:
    """Pause my deadlines for some days (up to the game's allowance); returns days left."""
    with session_scope() as s:
        token = _token(s, page_raw, "page")
        game = _lock_game(s, token.game_id)
        _require_active(game)
        seat = s.get(Seat, token.seat_id)
        try:
            wanted = float(days)
        except (TypeError, ValueError):
            raise InvalidInput(gettext("give the vacation in days")) from None
        left = game.vacation_days - seat.vacation_used_hours / 24
        if not 0 < wanted <= left + 1e-9:
            raise InvalidInput(gettext("you can take between 0 and %(left)s more days of "
                                       "vacation in this game", left=number(left)))
        now = utcnow()
        shift = timedelta(days=wanted)
        seat.vacation_until = max(now, seat.vacation_until or now) + shift
        seat.vacation_used_hours += wanted * 24
        _shift_open(s, game, shift, seat_id=seat.id)
        _notice_all(s, game, "vacation_taken", seat.position,
                    {"days": wanted, "until": seat.vacation_until.isoformat()})
        return left - wanted


def _require_active(game: Game) -> None:
    if game.status != "active":
        raise WrongState(gettext("the game is not running"))


def _seat_at(s: Session, game: Game, position: Any) -> Seat:
    try:
        pos = int(position)
    except (TypeError, ValueError):
        raise InvalidInput(gettext("choose a seat")) from None
    seats = _seats(s, game.id)
    if not 0 <= pos < len(seats):
        raise InvalidInput(gettext("there is no such seat"))
    return seats[pos]


def _log_notice(s: Session, game: Game, kind: str, actor: int | None, data: dict) -> None:
    """A server event (timeout, pause, ...) in the game log, narrated like engine events."""
    _log(s, game, [Event(kind, actor, data)])


def _notice_all(s: Session, game: Game, kind: str, actor: int | None, data: dict) -> None:
    _log_notice(s, game, kind, actor, data)
    for seat in _seats(s, game.id):
        _queue(s, game, seat, "notice", {"headline": kind}, links={"page": {"kind": "page"}})


# --------------------------------------------------------------------------- plumbing




def _token(s: Session, raw: str, *kinds: str) -> Token:
    """The live token of one of ``kinds`` behind ``raw``, or a friendly NotFound."""
    token = lookup(s, raw, *kinds)
    if token is None:
        raise NotFound(gettext("this link is unknown or no longer valid"))
    return token


def _lock_game(s: Session, game_id: str) -> Game:
    """Load the game row locked for this transaction (FOR UPDATE on PostgreSQL; on SQLite
    the BEGIN IMMEDIATE of every transaction already serialises writers)."""
    query = select(Game).where(Game.id == game_id)
    if is_postgres():
        query = query.with_for_update()
    game = s.exec(query).first()
    if game is None:
        raise NotFound(gettext("no such game"))
    return game


def _seats(s: Session, game_id: str) -> list[Seat]:
    return list(s.exec(select(Seat).where(Seat.game_id == game_id).order_by(Seat.position)))


def _log(s: Session, game: Game, events: list[Event]) -> None:
    first = game.event_seq
    game.event_seq = first + len(events)
    _insert_events(s, game.id, first, events)


def _insert_events(s: Session, game_id: str, first_seq: int, events: list[Event]) -> None:
    """Append events to the log in one statement (Core: many small rows, no ORM cost)."""
    if not events:
        return
    now = utcnow()
    s.execute(insert(EventLog), [
        {"game_id": game_id, "seq": first_seq + i, "kind": ev.kind, "actor": ev.actor,
         "data": dict(ev.data), "created_at": now,
         "visible_to": None if ev.visible_to is None else list(ev.visible_to)}
        for i, ev in enumerate(events, 1)])


def _queue(s: Session, game: Game, seat: Seat, template: str, context: dict[str, Any],
           links: dict[str, dict] | None = None, key: str | None = None,
           to: tuple[str, str, str] | None = None) -> None:
    """Write one email to the outbox; links are minted as tokens only when it is sent.
    ``to`` (name, address, language) sends it somewhere other than the seat's player.
    An email over the sending caps is written as ``held`` instead (see ``_hold_reason``).
    """
    if to is None and not may_mail(game, seat, template):
        return  # someone who has not joined gets nothing but their invitation
    name, addr, language = to or (seat.name, seat.email, seat.language)
    key = key or f"{template}:{game.id}:{seat.id}:{game.version}:{game.event_seq}"
    held = _hold_reason(s, game.id, addr.lower(), template)
    now = utcnow()
    s.execute(insert(Outbox).values(
        game_id=game.id, seat_id=seat.id, to_addr=addr, rcpt=addr.lower(), to_name=name,
        language=language, template=template,
        context={**context, "links": links or {}, "event_seq": game.event_seq,
                 "version": game.version},
        idempotency_key=key, message_id=_message_id(key.replace(":", ".")),
        status="held" if held else "pending", last_error=held, attempts=0,
        next_attempt_at=now, created_at=now))
    if not held:
        _wake_deliverer(s)


def _hold_reason(s: Session, game_id: str, rcpt: str, template: str) -> str | None:
    """Why an email must wait instead of going out: nobody can use the server to flood
    an address (turn emails are never held; they come from the player's own game).
    A held notice is summarised in the recipient's next turn email."""
    config = current_app.config
    if template in TURN_TEMPLATES:
        return None
    if template in INVITE_TEMPLATES:
        if _recent(s, Outbox.rcpt == rcpt, INVITE_TEMPLATES, timedelta(days=1)) >= \
                int(config["INVITE_LIMIT_PER_ADDRESS"]):
            return mark("not sent: this address had as many invitations as one day allows")
        return None
    hour = timedelta(hours=1)
    if _recent(s, Outbox.rcpt == rcpt, None, hour, exclude=TURN_TEMPLATES) >= \
            int(config["NOTICE_LIMIT_PER_ADDRESS"]):
        return mark("held: this address had as many notices as one hour allows; "
                    "summarised in the next turn email")
    if _recent(s, Outbox.game_id == game_id, None, hour, exclude=TURN_TEMPLATES) >= \
            int(config["NOTICE_LIMIT_PER_GAME"]):
        return mark("held: this game sent as many notices as one hour allows; "
                    "summarised in the next turn email")
    return None


def _wake_deliverer(s: Session) -> None:
    """Wake the clock's mail loop when this transaction commits (PostgreSQL NOTIFY is
    transactional; on SQLite the loop polls every ``MAIL_POLL_INTERVAL`` seconds)."""
    if not s.info.get("pbem.woke") and is_postgres():
        s.execute(text(f"NOTIFY {OUTBOX_CHANNEL}"))
        s.info["pbem.woke"] = True


def _message_id(local: str) -> str:
    domain = current_app.config["MAIL_DOMAIN"]
    return f"<pbem.{local}.{secrets.token_hex(4)}@{domain}>"


def _dump(data: dict) -> str:
    return json.dumps(data, separators=(",", ":"), sort_keys=True)
