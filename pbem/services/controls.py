"""Host and player controls of a running game: pause, resume, extend, hand a seat over,
bots and coming back, notifications, unsubscribing and leaving, language, abandon, vacation."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any, cast

from flask import current_app
from flask_babel import gettext, ngettext
from sqlalchemy import bindparam, func, or_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col, select

from engine.registry import get_game
from pbem.db import get_row, is_postgres, read_scope, saved_id, session_scope
from pbem.errors import AlreadyRecorded, InvalidInput, RateLimited, WrongState
from pbem.forms import DB_INT_MAX, parse_int
from pbem.i18n import format_deadline, short_time
from pbem.kinds import (
    ENDED,
    ClosedBy,
    EmailTemplate,
    GameStatus,
    Invite,
    SeatBot,
    SuppressionScope,
    TokenKind,
)
from pbem.mail import game_name, suppressed
from pbem.models import (
    Decision,
    EventLog,
    Game,
    Outbox,
    Seat,
    Suppression,
    Token,
    as_utc,
    table_of,
    utcnow,
)
from pbem.services.addresses import address_settings
from pbem.services.deadlines import queue_reminder
from pbem.services.games import (
    PlayerIn,
    check_may_invite,
    start_if_ready,
    tell_host_declined,
    validate_newcomer,
)
from pbem.services.playing import end_abandoned, queue_decision, to_bot, to_person
from pbem.services.plumbing import (
    LANGUAGES,
    PAGE_LINK,
    admin_game,
    is_link_of,
    live_seat_page,
    live_token,
    load_state,
    lock_game,
    log_notice,
    next_reminder,
    notice_all,
    queue_email,
    recent_emails,
    seats_of,
    stops_of,
)
from pbem.tokens import hash_token, lookup, mint, revoke_seat, well_formed

# --------------------------------------------------------------------------- pausing and extending


def pause_game(admin_raw: str) -> None:
    with session_scope() as s:
        game = admin_game(s, admin_raw)
        _require_active(game)
        if game.paused_at is not None:
            raise WrongState(gettext("the game is already paused"))
        game.paused_at = utcnow()
        notice_all(s, game, "game_paused", None, {})


def resume_game(admin_raw: str) -> None:
    """Resume; every open deadline (and reminder) moves by the time spent paused."""
    with session_scope() as s:
        game = admin_game(s, admin_raw)
        if game.paused_at is None:
            raise WrongState(gettext("the game is not paused"))
        shift = utcnow() - game.paused_at
        game.paused_at = None
        _shift_open(s, game, shift)
        hours = round(shift.total_seconds() / 3600, 2)
        notice_all(s, game, "game_resumed", None, {"hours": hours})


def extend_deadline(admin_raw: str, hours: Any) -> None:
    with session_scope() as s:
        game = admin_game(s, admin_raw)
        _require_active(game)
        try:
            extra = float(hours)
        except (TypeError, ValueError):
            raise InvalidInput(gettext("give the extension in hours")) from None
        if not 0 < extra <= 24 * 30:
            raise InvalidInput(gettext("an extension is more than 0 hours and at most 30 days"))
        if not _shift_open(s, game, timedelta(hours=extra), people=True):
            raise WrongState(gettext("no decision is open right now"))
        notice_all(s, game, "deadline_extended", None, {"hours": extra})


def remind_now(admin_raw: str, decision_id: Any) -> tuple[str, datetime]:
    """The host's "remind now": the usual reminder email of one open decision, queued at
    once, at most once per decision (a second press, or a double click, sends nothing).
    Returns the name of the player reminded and when."""
    wanted = parse_int(decision_id, 1, DB_INT_MAX, gettext("choose whom to remind"))
    with session_scope() as s:
        game = admin_game(s, admin_raw)  # locked: two presses at once are served in turn
        decision = s.get(Decision, wanted)
        if decision is None or decision.game_id != game.id:
            raise InvalidInput(gettext("this game has no such decision; reload the host page"))
        seat = get_row(s, Seat, decision.seat_id)
        host_tz = seats_of(s, game.id)[0].timezone
        if decision.closed_at is not None or game.status != GameStatus.ACTIVE:
            raise WrongState(gettext("%(name)s has decided meanwhile (or the turn ended): "
                                     "there is nothing to remind of", name=seat.name))
        if decision.host_reminded_at is not None:
            raise AlreadyRecorded(gettext(
                "%(name)s was already reminded of this decision at %(time)s; nothing more "
                "was sent", name=seat.name, time=short_time(decision.host_reminded_at,
                                                             host_tz)))
        if game.paused_at is not None:
            raise WrongState(gettext("the game is paused; resume it before reminding anyone"))
        now = utcnow()
        if decision.deadline_at is not None and decision.deadline_at <= now:
            raise WrongState(gettext("the deadline has passed: the server plays for %(name)s "
                                     "in a moment", name=seat.name))
        if seat.bot:
            raise WrongState(gettext("a bot plays for %(name)s; there is nobody to remind",
                                     name=seat.name))
        decision.host_reminded_at = now
        queue_reminder(s, game, decision, seat, now, key=f"reminder:{decision.id}:host")
        return seat.name, now


def host_reminded(admin_raw: str, decision_id: Any) -> str | None:
    """The page after the host's "remind now" (Post/Redirect/Get): the name of the
    player reminded of decision ``decision_id`` of the host link's game, if the host
    did remind them of it (``Decision.host_reminded_at``); else None (changes nothing)."""
    try:
        wanted = parse_int(decision_id, 1, DB_INT_MAX, "")
    except InvalidInput:
        return None
    with read_scope() as s:
        game = admin_game(s, admin_raw, lock=False)
        decision = s.get(Decision, wanted)
        if decision is None or decision.game_id != game.id \
                or decision.host_reminded_at is None:
            return None
        return get_row(s, Seat, decision.seat_id).name


def _shift_open(s: Session, game: Game, shift: timedelta, seat_id: int | None = None,
                people: bool = False) -> int:
    """Move the deadlines (and reminders) of the game's open decisions (of one seat's:
    ``seat_id``) by ``shift``; ``people``: only those a person decides (a bot's short
    pause is not a deadline to extend or take a vacation from). Returns how many."""
    now = utcnow()
    rows = s.exec(select(Decision).where(Decision.game_id == game.id,
                                         col(Decision.closed_at).is_(None))).all()
    rows = [d for d in rows if seat_id is None or d.seat_id == seat_id]
    seats = {x.id: x for x in seats_of(s, game.id)}
    if people:
        rows = [d for d in rows if seats[d.seat_id].bot is None]
    for d in rows:
        if d.deadline_at is not None:
            d.deadline_at += shift
            d.next_reminder_at = (None if seats[d.seat_id].bot else next_reminder(
                game, d.deadline_at, now, stops_of(s, game, seats[d.seat_id])))
    return len(rows)


# --------------------------------------------------------------------------- handing a seat over


def hand_over(admin_raw: str, position: Any, player: PlayerIn) -> str:
    """The host gives a seat to another person. A new address first gets one invitation
    to take the seat over, and nothing else until that person accepts
    (``answer_handover``); until then the seat stays as it is. A newer hand-over of the
    same seat replaces one not yet accepted (to correct a mistyped address). The same
    address with another name, language or time zone is updated at once. Returns
    ``"invited"`` or ``"updated"``."""
    with session_scope() as s:
        game = admin_game(s, admin_raw)
        _require_active(game)
        seat = _seat_at(s, game, position)
        new = validate_newcomer(s, game, seat, player)
        if new.email.lower() == seat.email.lower():
            seat.name, seat.language, seat.timezone = new.name, new.language, new.timezone
            return "updated"
        check_may_invite(s, new.email)
        if recent_emails(s, Outbox.game_id == game.id,
                         frozenset({EmailTemplate.HANDOVER_INVITE}), timedelta(days=1)) \
                >= int(current_app.config["HANDOVER_LIMIT_PER_GAME"]):
            raise RateLimited(gettext("this game has sent as many hand-over invitations as one day "
                              "allows; try again tomorrow"))
        _revoke_handover(s, seat)
        seat.pending_handover = {"name": new.name, "email": new.email,
                                 "language": new.language, "timezone": new.timezone,
                                 "at": utcnow().isoformat()}
        answer = {"kind": TokenKind.HANDOVER}
        queue_email(s, game, seat, EmailTemplate.HANDOVER_INVITE,
               {"host": seats_of(s, game.id)[0].name, "old": seat.name, "new": new.name},
               links={"accept": {**answer, "action": {"answer": "accept",
                                                      "email": new.email}},
                      "decline": {**answer, "action": {"answer": "decline",
                                                       "email": new.email}}},
               key=f"handover_invite:{seat.id}:{secrets.token_hex(4)}",
               to=(new.name, new.email, new.language))
        return "invited"


def _revoke_handover(s: Session, seat: Seat) -> None:
    seat.pending_handover = None
    for token in s.exec(select(Token).where(Token.seat_id == seat.id,
                                            Token.kind == TokenKind.HANDOVER,
                                            col(Token.revoked_at).is_(None))):
        token.revoked_at = utcnow()


def withdraw_handover(admin_raw: str, position: Any) -> None:
    """The host takes back a hand-over that was not accepted yet."""
    with session_scope() as s:
        game = admin_game(s, admin_raw)
        seat = _seat_at(s, game, position)
        if seat.pending_handover is None:
            raise WrongState(gettext("no hand-over of that seat is waiting"))
        _revoke_handover(s, seat)


def describe_handover(raw: str) -> dict[str, Any]:
    """What a hand-over invitation offers, for its page (changes nothing)."""
    with read_scope() as s:
        token = live_token(s, raw, TokenKind.HANDOVER)
        game = get_row(s, Game, token.game_id)
        seat = get_row(s, Seat, token.seat_id)
        return {"game": game, "seat": seat, "seats": seats_of(s, game.id),
                "answer": (token.action or {}).get("answer", "accept"),
                "state": _handover_state(game, seat, token)}


def handover_answered(raw: str, page: Any = None) -> dict[str, Any] | None:
    """The page after answering a hand-over (Post/Redirect/Get; the link is spent by
    then, so it is read even though revoked): as ``describe_handover``, with ``done``:
    "accepted" when the seat is this link's person's and ``page`` is a live game-page
    link of that seat (the one the acceptance made: kept as ``page``), "declined" for
    a link that declines whose offer is no longer open; None for anything else, and
    the link's page says what it says without an answer (changes nothing)."""
    if not well_formed(raw):
        return None
    with read_scope() as s:
        token = s.get(Token, hash_token(raw))
        if token is None or token.kind != TokenKind.HANDOVER or token.seat_id is None:
            return None
        game = get_row(s, Game, token.game_id)
        seat = get_row(s, Seat, token.seat_id)
        state = _handover_state(game, seat, token)
        answer = (token.action or {}).get("answer", "accept")
        info = {"game": game, "seat": seat, "seats": seats_of(s, game.id),
                "answer": answer, "state": state, "page": None}
        if state == "accepted" and page is not None \
                and is_link_of(s, page, TokenKind.PAGE, game.id, seat.id):
            return {**info, "done": "accepted", "page": page}
        if answer == "decline" and token.revoked_at is not None and state != "open":
            return {**info, "done": "declined"}
        return None


def _handover_state(game: Game, seat: Seat, token: Token) -> str:
    email = str((token.action or {}).get("email", "")).lower()
    if seat.email.lower() == email:
        return "accepted"
    if game.status != GameStatus.ACTIVE:
        return "ended"
    if (seat.pending_handover or {}).get("email", "").lower() != email:
        return "withdrawn"
    return "open"


def answer_handover(raw: str, accept: bool) -> tuple[str, str | None]:
    """The invited person takes the seat over (or declines; the host is told). Returns
    "accepted" with a fresh link to the seat's game page (raw token), or "declined"."""
    with session_scope() as s:
        token = live_token(s, raw, TokenKind.HANDOVER)
        game = lock_game(s, token.game_id)
        seat = get_row(s, Seat, token.seat_id)
        state = _handover_state(game, seat, token)
        if state == "accepted":
            raise AlreadyRecorded(gettext("you already took over this seat"), game_id=game.id)
        pending = seat.pending_handover
        if state != "open" or pending is None:
            raise WrongState(gettext("this offer is no longer open: the host withdrew it or the "
                             "game has ended"), game_id=game.id)
        _revoke_handover(s, seat)
        if not accept:
            tell_host_declined(s, game, seat, handover=pending)
            return "declined", None
        new = validate_newcomer(s, game, seat, PlayerIn(
            pending["name"], pending["email"], pending["language"], pending["timezone"]))
        _give_seat(s, game, seat, new)
        return "accepted", mint(s, TokenKind.PAGE, game.id, seat.id)


def _give_seat(s: Session, game: Game, seat: Seat, new: PlayerIn) -> None:
    """The seat now belongs to ``new``: the old links die at once; the new player is
    welcomed with the state (and gets the seat's open decision, if any)."""
    old_name = seat.name
    revoke_seat(s, saved_id(seat))
    seat.name, seat.email, seat.language, seat.timezone = (
        new.name, new.email, new.language, new.timezone)
    was_bot = seat.bot is not None  # a bot seated at creation, or standing in
    seat.timeouts_in_row, seat.bot, seat.left_at, seat.mute_notices = 0, None, None, False
    seat.seen_event_seq = 0
    seat.robot = False  # a bot's seat given to a person
    log_notice(s, game, "seat_handed_over", seat.position, {"old": old_name,
                                                            "new": new.name})
    queue_email(s, game, seat, EmailTemplate.WELCOME, {"old": old_name}, links=PAGE_LINK,
                key=f"welcome:{seat.id}:{secrets.token_hex(4)}")
    if was_bot:  # the bot's short pause becomes a person's time to decide
        to_person(s, game, seat, mail=False)
    mod = get_game(game.engine)
    state = load_state(mod, game)
    for d in s.exec(select(Decision).where(Decision.seat_id == seat.id,
                                           col(Decision.closed_at).is_(None))):
        queue_decision(s, game, mod, state, seat, d,
                        key=f"handover:{d.id}:{seat.id}:{secrets.token_hex(4)}")
    for other in seats_of(s, game.id):
        if other.id != seat.id:
            queue_email(s, game, other, EmailTemplate.NOTICE, {"headline": "seat_handed_over"},
                        links=PAGE_LINK)


# --------------------------------------------------------------------------- bots


def set_bot(admin_raw: str, position: Any, bot: str | None) -> None:
    """The host puts a seat on a bot (``heuristic`` or ``default``) or takes it off."""
    try:
        chosen = None if bot is None else SeatBot(bot)
        if chosen not in (None, SeatBot.HEURISTIC, SeatBot.DEFAULT):
            raise ValueError(bot)
    except ValueError:
        raise InvalidInput(gettext("the bot is 'heuristic' or 'default'")) from None
    with session_scope() as s:
        game = admin_game(s, admin_raw)
        _require_active(game)
        seat = _seat_at(s, game, position)
        if seat.robot:
            raise WrongState(gettext("a bot has held this seat from the start; to give it "
                                     "to a person, hand it over"))
        _switch_bot(s, game, seat, chosen, by="host")


def is_on_bot(raw: str) -> bool:
    """Whether the seat behind a page or one-click link is being played by a bot (in a
    running game: once it has ended, nobody comes back to it)."""
    with read_scope() as s:
        token = lookup(s, raw, TokenKind.PAGE, TokenKind.ACTION)
        return (token is not None and bool(get_row(s, Seat, token.seat_id).bot)
                and get_row(s, Game, token.game_id).status == GameStatus.ACTIVE)


def came_back(raw: str) -> bool:
    """The page after a player came back through a one-click link (Post/Redirect/Get):
    whether the seat behind ``raw`` is its player's again because the player came back
    (the last change of who plays it, in the log, is the player's return; changes
    nothing)."""
    with read_scope() as s:
        token = lookup(s, raw, TokenKind.PAGE, TokenKind.ACTION)
        seat = get_row(s, Seat, token.seat_id) if token is not None else None
        if token is None or seat is None or seat.bot is not None:
            return False
        last = s.exec(select(EventLog).where(
            EventLog.game_id == token.game_id, EventLog.actor == seat.position,
            col(EventLog.kind).in_(("seat_on_bot", "seat_returned")))
            .order_by(col(EventLog.seq).desc()).limit(1)).first()
        return last is not None and last.kind == "seat_returned" \
            and (last.data or {}).get("by") == "player"


def come_back(page_raw: str) -> str:
    """An absent player takes the seat back from the bot (the POST behind 'I'm back')."""
    with session_scope() as s:
        token = live_token(s, page_raw, TokenKind.PAGE, TokenKind.ACTION)
        game = lock_game(s, token.game_id)
        _require_active(game)
        seat = get_row(s, Seat, token.seat_id)
        if seat.bot is None:
            raise WrongState(gettext("no bot is playing for you; you are already in charge"))
        seat.left_at = None
        _switch_bot(s, game, seat, None, by="player")
        return game.id


def _switch_bot(s: Session, game: Game, seat: Seat, bot: SeatBot | None, by: str) -> None:
    """Put the seat on ``bot`` or (None) give it back to its player (``by``: who did);
    its open decisions follow: a bot's are the clock's to play after its short pause, a
    person's get a person's deadline and their email (held a while for a player who
    came back on the page, which shows them)."""
    if seat.bot == bot:
        raise WrongState(gettext("that seat is already played that way"))
    was_bot, seat.bot = seat.bot, bot
    seat.timeouts_in_row = 0
    notice_all(s, game, "seat_on_bot" if bot else "seat_returned", seat.position,
                {"bot": bot, "by": by})
    if bot is None:
        delay = (timedelta(minutes=current_app.config["FOLLOW_UP_MINUTES"])
                 if by == "player" else None)
        to_person(s, game, seat, delay=delay)
    elif was_bot is None:
        to_bot(s, game, seat)


# -------------------------------------------------- notifications, unsubscribing, leaving, language


NOTIFY_CHOICES = ("one-click", "mute", "unmute", "leave", "suppress", "lists")


def describe_unsubscribe(raw: str) -> dict[str, Any]:
    """What the unsubscribe link of an email offers (changes nothing): a player gets
    their notification settings, the reader of a list of their games "no more lists",
    anyone "never email me again". ``playing``: the games the address still has a seat
    in (the page says that stopping everything stops their turn emails too, and offers
    to let a bot play each seat)."""
    with read_scope() as s:
        token = live_token(s, raw, TokenKind.UNSUBSCRIBE)
        address = str((token.action or {}).get("address", ""))
        game = s.get(Game, token.game_id)
        seat = s.get(Seat, token.seat_id) if token.seat_id else None
        return {"address": address, "game": game, "seat": seat,
                "player": _is_player(game, seat, address),
                "ended": _played_in_ended_game(game, seat, address),
                "suppressed": suppressed(s, address.lower()),
                "list": _of_list(token),
                "lists_stopped": suppressed(s, address.lower(), EmailTemplate.MY_GAMES),
                "playing": _playing(s, address.lower()),
                "settings": address_settings(s, address.lower())}


def unsubscribe(raw: str, how: str, seat_id: Any = None) -> str:
    """Carry out an unsubscribe link; each kind of email stops only that kind.
    ``one-click`` (RFC 8058, what a mail program's button sends) stops a player's
    notices but not their turns, the lists of one's games for the reader of such a list
    (``lists``), and every email to anyone else; ``mute``, ``unmute`` and ``leave`` are
    a player's settings (``leave`` with ``seat_id``: any seat the address holds, offered
    once it asked for no email); ``suppress`` is "never email me again". Returns what
    was done."""
    if how not in NOTIFY_CHOICES:
        raise InvalidInput(gettext("choose what to stop"))
    with session_scope() as s:
        token = live_token(s, raw, TokenKind.UNSUBSCRIBE)
        address = str((token.action or {}).get("address", "")).lower()
        if how == "leave" and seat_id is not None:
            return _leave_seat_of(s, address, seat_id)
        game = lock_game(s, token.game_id)
        seat = s.get(Seat, token.seat_id) if token.seat_id else None
        if seat is not None and _is_player(game, seat, address) \
                and how not in ("suppress", "lists"):
            return _notification_choice(s, game, seat, "mute" if how == "one-click" else how)
        if how in ("one-click", "lists") and _of_list(token):
            _stop(s, address, SuppressionScope.MY_GAMES)
            return "lists"
        if how == "one-click" and _played_in_ended_game(game, seat, address):
            return "ended"  # it sends nothing more; their other games are not touched
        if how not in ("one-click", "suppress"):
            raise WrongState(gettext("this address is not playing in this game"))
        _suppress(s, game, seat, address)
        return "suppressed"


def _of_list(token: Token) -> bool:
    """Whether an unsubscribe link came with a list of one's games (a link minted before
    links named their email: the only emails without a seat are such lists)."""
    action = token.action or {}
    return action.get("of", EmailTemplate.MY_GAMES if token.seat_id is None else None) \
        == EmailTemplate.MY_GAMES


def _playing(s: Session, address: str) -> list[dict[str, Any]]:
    """The seats ``address`` holds in games running or about to start, oldest first."""
    found = []
    for seat in s.exec(select(Seat).where(func.lower(Seat.email) == address)
                       .order_by(col(Seat.id))):
        game = get_row(s, Game, seat.game_id)
        if _is_player(game, seat, address):
            found.append({"seat_id": seat.id, "title": game_name(game, seats_of(s, game.id)),
                          "status": game.status})
    return found


def _leave_seat_of(s: Session, address: str, seat_id: Any) -> str:
    """Leave one seat that ``address`` holds (a bot plays it; its host is told)."""
    seat = s.get(Seat, parse_int(seat_id, 1, DB_INT_MAX, gettext("choose a game")))
    if seat is not None:
        game = lock_game(s, seat.game_id)
        s.refresh(seat)  # read again under the game's lock
        if _is_player(game, seat, address):
            _leave(s, game, seat)
            return "left"
    raise WrongState(gettext("this address has no seat in that game (any more)"))


def set_notifications(page_raw: str, how: str) -> str:
    """A player's notification settings from their game page."""
    if how not in ("mute", "unmute", "leave"):
        raise InvalidInput(gettext("choose a setting"))
    with session_scope() as s:
        token = live_token(s, page_raw, TokenKind.PAGE)
        game = lock_game(s, token.game_id)
        seat = get_row(s, Seat, token.seat_id)
        if not _is_player(game, seat, seat.email.lower()):
            raise WrongState(gettext("the game is not running"))
        return _notification_choice(s, game, seat, how)


def set_language(page_raw: str, lang: str) -> str:
    """A player changes their language: pages at once, emails from the next one on."""
    if lang not in LANGUAGES:
        raise InvalidInput(gettext("choose one of the languages offered"))
    with session_scope() as s:
        token = live_token(s, page_raw, TokenKind.PAGE)
        lock_game(s, token.game_id)
        get_row(s, Seat, token.seat_id).language = lang
        return lang


def _is_player(game: Game | None, seat: Seat | None, address: str) -> bool:
    """A person playing (or about to play) this game, as opposed to someone who was only
    invited, or whose game has ended."""
    return (game is not None and seat is not None
            and game.status in (GameStatus.INVITING, GameStatus.ACTIVE)
            and seat.invite == Invite.ACCEPTED and seat.left_at is None
            and seat.email.lower() == address.lower())


def _played_in_ended_game(game: Game | None, seat: Seat | None, address: str) -> bool:
    return (game is not None and seat is not None and game.status in ENDED
            and seat.invite == Invite.ACCEPTED and seat.email.lower() == address.lower())


def _notification_choice(s: Session, game: Game, seat: Seat, how: str) -> str:
    if how == "leave":
        _leave(s, game, seat)
        return "left"
    seat.mute_notices = how == "mute"
    return "muted" if seat.mute_notices else "unmuted"


def _leave(s: Session, game: Game, seat: Seat) -> None:
    """The player leaves: a bot plays the seat, nothing more is sent to them, and the
    host is told (and can hand the seat to someone else)."""
    if game.status != GameStatus.ACTIVE:
        seat.invite, seat.left_at = Invite.DECLINED, utcnow()
        tell_host_declined(s, game, seat)
        return
    seat.left_at = utcnow()
    log_notice(s, game, "seat_left", seat.position, {"bot": game.policy.absent_bot})
    host = seats_of(s, game.id)[0]
    if host.id != seat.id:
        queue_email(s, game, host, EmailTemplate.NOTICE, {"headline": "seat_left"},
                    links={"admin": {"kind": TokenKind.ADMIN}, **PAGE_LINK})
    if seat.bot is None:
        seat.bot = game.policy.absent_bot
        to_bot(s, game, seat)


def _stop(s: Session, address: str, scope: SuppressionScope) -> None:
    """Record that ``address`` wants no email of ``scope`` (``all`` wins over any)."""
    dialect = postgresql if is_postgres() else sqlite
    insert = dialect.insert(Suppression).values(address=address, scope=scope,
                                                created_at=utcnow())
    if scope == SuppressionScope.ALL:
        s.execute(insert.on_conflict_do_update(index_elements=["address"],
                                               set_={"scope": SuppressionScope.ALL}))
    else:
        s.execute(insert.on_conflict_do_nothing(index_elements=["address"]))


def _suppress(s: Session, game: Game, seat: Seat | None, address: str) -> None:
    """Never email ``address`` again; an open invitation of theirs in this game counts as
    declined, and a hand-over offered to them is withdrawn (the host is told)."""
    _stop(s, address, SuppressionScope.ALL)
    if seat is None:
        return
    if seat.email.lower() == address and seat.invite == Invite.INVITED:
        seat.invite = Invite.DECLINED
        tell_host_declined(s, game, seat)
        start_if_ready(s, game, seats_of(s, game.id))
    pending = seat.pending_handover or {}
    if str(pending.get("email", "")).lower() == address:
        _revoke_handover(s, seat)
        tell_host_declined(s, game, seat, handover=pending)


# -------------------------------------------------------------------------- ending, vacation, seats


def abandon_game(admin_raw: str) -> None:
    """The host ends the game for everyone, without a winner."""
    with session_scope() as s:
        game = admin_game(s, admin_raw)
        if game.status in ENDED:
            raise WrongState(gettext("the game has already ended"))
        mod = get_game(game.engine)
        state = load_state(mod, game) if game.state else None
        end_abandoned(s, game, mod, state, "game_abandoned_by_host", {}, by=ClosedBy.HOST)


_SEEN = table_of(Seat)
_NOTE_PRESENCE = (update(_SEEN).where(_SEEN.c.id == bindparam("seat_id"),
                                      or_(_SEEN.c.page_seen_at.is_(None),
                                          _SEEN.c.page_seen_at < bindparam("stale")))
                  .values(page_seen_at=bindparam("now")))


def note_presence(page_raw: str) -> None:
    """The seat's game page is open and in view (its script says so every
    LIVE_HERE_SECONDS): a decision opened for the seat meanwhile waits to be emailed
    (``playing.is_present``). Written at most every half of that time; no page changes."""
    now = utcnow()
    every = timedelta(seconds=current_app.config["LIVE_HERE_SECONDS"])
    with session_scope() as s:
        _, _, seat = live_seat_page(s, page_raw, TokenKind.PAGE)
        s.connection().execute(_NOTE_PRESENCE, {"seat_id": seat.id, "now": now,
                                                "stale": now - every / 2})


VACATION = "vacation_taken"  # the log's notice of a vacation (the table is told)


def take_vacation(page_raw: str, days: Any) -> int:
    """Pause my deadlines for whole days: 1 to what is left of the game's allowance
    (``GamePolicy.vacation_left``), at most VACATIONS_PER_DAY times in 24 hours (each
    vacation is told to the whole table). Returns the whole days left. Refused with
    InvalidInput (the days) or RateLimited (too often), whose ``data`` hold what
    ``vacation_refusal`` needs to say why."""
    with session_scope() as s:
        token = live_token(s, page_raw, TokenKind.PAGE)
        game = lock_game(s, token.game_id)
        _require_active(game)
        seat = get_row(s, Seat, token.seat_id)
        left = game.policy.vacation_left(seat.vacation_used_hours)
        data: dict[str, Any] = {"reason": "vacation/days", "left": left}
        if left < 1:
            raise InvalidInput(vacation_refusal(data), **data)
        try:
            wanted = parse_int(days, 1, left, "")
        except InvalidInput:
            raise InvalidInput(vacation_refusal(data), **data) from None
        now = utcnow()
        most = max(1, int(current_app.config["VACATIONS_PER_DAY"]))
        again = _next_vacation(s, game, seat, now, most)
        if again is not None:
            data = {"reason": "vacation/often", "again": again.isoformat(),
                    "zone": seat.timezone, "most": most}
            raise RateLimited(vacation_refusal(data), **data)
        shift = timedelta(days=wanted)
        until = max(now, seat.vacation_until or now) + shift
        seat.vacation_until = until
        seat.vacation_used_hours += wanted * 24
        _shift_open(s, game, shift, seat_id=seat.id, people=True)
        notice_all(s, game, VACATION, seat.position,
                   {"days": float(wanted), "until": until.isoformat()})
        return left - wanted


def _next_vacation(s: Session, game: Game, seat: Seat, now: datetime,
                   most: int) -> datetime | None:
    """None if the seat may take a vacation now; else from when it may (it took ``most``
    in the last 24 hours)."""
    day = timedelta(days=1)
    taken = sorted(as_utc(t) for t in s.exec(select(EventLog.created_at).where(
        EventLog.game_id == game.id, EventLog.kind == VACATION,
        EventLog.actor == seat.position, col(EventLog.created_at) > now - day)))
    if len(taken) < most:
        return None
    return taken[len(taken) - most] + day


def vacation_refusal(data: dict[str, Any]) -> str:
    """Why a vacation was refused, in the language spoken now, from the refusal's
    ``data`` (``take_vacation``): the page says it again in the player's language."""
    if data["reason"] == "vacation/often":
        when = format_deadline(data["again"], data["zone"])["local"]
        return cast(str, ngettext("you have taken vacation %(num)s time in the last 24 hours; "
                                  "you can take more from %(time)s",
                                  "you have taken vacation %(num)s times in the last 24 hours; "
                                  "you can take more from %(time)s", data["most"], time=when))
    left = int(data["left"])
    if left < 1:
        return cast(str, gettext("you have no vacation left in this game"))
    return cast(str, ngettext("you can take 1 whole day of vacation in this game",
                              "you can take 1 to %(num)s whole days of vacation in this game",
                              left))


def _require_active(game: Game) -> None:
    if game.status != GameStatus.ACTIVE:
        raise WrongState(gettext("the game is not running"))


def _seat_at(s: Session, game: Game, position: Any) -> Seat:
    pos = parse_int(position, 0, DB_INT_MAX, gettext("choose a seat"))
    seats = seats_of(s, game.id)
    if not 0 <= pos < len(seats):
        raise InvalidInput(gettext("there is no such seat"))
    return seats[pos]
