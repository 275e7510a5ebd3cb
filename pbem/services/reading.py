"""Reading a game for pages and emails: a seat's game page, the spectators' page, the
host's admin page, printed card data for narration; and what names the version of a game
page for its ETag without reading the page (``page_stamp``). Changes nothing."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from flask import current_app
from flask_babel import gettext, ngettext
from sqlalchemy import Text, bindparam, cast, func, or_
from sqlalchemy import select as sa_select  # six columns: beyond sqlmodel's typed overloads
from sqlmodel import Session, col, select

from engine.core import Action, Effect, format_action
from engine.registry import get_game
from pbem import localize
from pbem.db import read_connection, read_scope
from pbem.errors import NotFound, WrongState
from pbem.i18n import language
from pbem.kinds import GameStatus, Invite, MoveSource, OutboxStatus, SeatBot, TokenKind
from pbem.mail import open_deadlines, suppressed
from pbem.models import (
    Decision,
    EventLog,
    Game,
    Move,
    Outbox,
    Seat,
    Token,
    as_utc,
    table_of,
    utcnow,
)
from pbem.services import allowance
from pbem.services.plumbing import (
    admin_game,
    host_address,
    live_seat_page,
    live_token,
    load_state,
    seats_of,
)
from pbem.services.push import seat_devices
from pbem.services.viewing import KeptActions, build_seat_view
from pbem.services.webhooks import talk_mirrored
from pbem.tokens import hash_token, well_formed

PAGE_KINDS = (TokenKind.PAGE, TokenKind.ACTION)  # the links that open a seat's game page


# --------------------------------------------------------------------------- take-backs

@dataclass(frozen=True)
class Undoable:
    """A seat's last move, which it may take back now (``services.takeback``), and the
    bots' moves after it (newest first)."""

    move: Move
    bots: list[Move]


def undoable(s: Session, game: Game, seat: Seat) -> Undoable:
    """The seat's last move if it may take it back now; WrongState says why not."""
    if not game.policy.take_backs:
        raise WrongState(gettext("the host does not allow taking back moves in this game"))
    if game.status != GameStatus.ACTIVE:
        raise WrongState(gettext("the game is over"))
    if game.paused_at is not None:
        raise WrongState(gettext("the game is paused"))
    # the last move not a bot's (indexed, one row), then the bots' moves after it
    move = s.exec(select(Move).where(Move.game_id == game.id, Move.source != MoveSource.BOT)
                  .order_by(col(Move.id).desc()).limit(1)).first()
    if move is None:
        raise WrongState(gettext("you have no move to take back"))
    bots = list(s.exec(select(Move).where(Move.game_id == game.id, col(Move.id) > move.id)
                       .order_by(col(Move.id).desc())))
    if move.source != MoveSource.PLAYER or move.position != seat.position:
        raise WrongState(gettext("someone else has acted since your last move: it stands"))
    if any(m.revealed is not False for m in [move, *bots]) or move.version is None \
            or move.event_seq is None or game.undo_state is None:
        raise WrongState(gettext("your last move rolled dice or showed a hidden card: "
                                 "it stands"))
    most = int(current_app.config["TAKEBACKS_PER_TURN"])
    if most <= 0:
        raise WrongState(gettext("this server does not allow taking back moves"))
    used = take_backs_this_turn(s, game, seat, move)
    if used >= most:
        raise WrongState(ngettext(
            "you have taken back %(num)s move this turn, as many as one turn allows: "
            "this one stands",
            "you have taken back %(num)s moves this turn, as many as one turn allows: "
            "this one stands", used))
    return Undoable(move, bots)


_LAST_OTHER_MOVE = (select(Move.event_seq)
                    .where(Move.game_id == bindparam("game_id"),
                           col(Move.id) < bindparam("before"),
                           or_(col(Move.position) != bindparam("position"),
                               col(Move.source) != MoveSource.PLAYER))
                    .order_by(col(Move.id).desc()).limit(1))
_TAKEN_BACK = (select(func.count()).select_from(EventLog)
               .where(EventLog.game_id == bindparam("game_id"),
                      col(EventLog.seq) > bindparam("after"),
                      EventLog.kind == "took_back",
                      EventLog.actor == bindparam("position")))


def take_backs_this_turn(s: Session, game: Game, seat: Seat, move: Move) -> int:
    """How many moves the seat took back in its turn of ``move`` (its last move): since
    the last move before it that was not its own (another seat's, a bot's, a timeout),
    which no take-back can undo; the moves taken back are gone, their notices stay."""
    conn = s.connection()
    last = conn.execute(_LAST_OTHER_MOVE, {"game_id": game.id, "before": move.id,
                                           "position": seat.position}).first()
    after = last.event_seq if last is not None and last.event_seq is not None else -1
    return int(conn.execute(_TAKEN_BACK, {"game_id": game.id, "after": after,
                                          "position": seat.position}).scalar_one())


def take_back_offer(s: Session, game: Game, seat: Seat | None) -> dict[str, Any] | None:
    """For a seat's page: the move it may take back now (``action``), or None."""
    if seat is None or not game.policy.take_backs or game.status != GameStatus.ACTIVE:
        return None
    try:
        return {"action": undoable(s, game, seat).move.action}
    except WrongState:
        return None


def game_for_page(raw: str, with_log: bool = True) -> dict[str, Any]:
    """Everything a seat's game page shows, from that seat's view. A one-click (action)
    link opens the page read-only: only a game-page link offers the decision form."""
    with read_scope() as s:
        token, game, seat = live_seat_page(s, raw, *PAGE_KINDS)
        data = _page_data(s, game, seat, with_log)
        data["readonly"] = token.kind != TokenKind.PAGE
        data["take_back"] = (None if data["readonly"]
                             else take_back_offer(s, game, seat))
        data["devices"] = [] if data["readonly"] else seat_devices(s, seat)
        data["mirrored"] = talk_mirrored(s, game.id)
        data["stamp"] = PageStamp.of(f"{token.kind}:{token.seat_id}", game)
        return data


def seat_last_event(raw: str) -> tuple[str, dict[str, Any]] | None:
    """The kind and data of the latest entry of the game's log if the seat behind
    ``raw`` (a page or one-click link) made it, else None (changes nothing): what the
    game page after a form checks before it says the form did it (Post/Redirect/Get:
    a link naming a code for what did not happen says nothing)."""
    with read_scope() as s:
        _token, game, seat = live_seat_page(s, raw, *PAGE_KINDS)
        last = s.exec(select(EventLog).where(EventLog.game_id == game.id)
                      .order_by(col(EventLog.seq).desc()).limit(1)).first()
        if last is None or last.actor != seat.position:
            return None
        return last.kind, dict(last.data or {})


@dataclass(frozen=True)
class Receipt:
    """The page after a seat's move (``receipt_for_page``), read back from the database:
    the move (``action``, as its Move row holds it), the game as it is now (``finished``,
    ``winners``, whom it waits for: ``waiting``, seat and decision kind), the players'
    ``names`` by seat, the printed words of the reader's language (``card``), and
    ``data``: the seat's page without its log (its open decision, the take-back)."""

    action: dict[str, Any]
    names: tuple[str, ...]
    waiting: tuple[tuple[int, str], ...]
    winners: tuple[int, ...]
    finished: bool
    engine: str
    language: str
    card: localize.CardLookup
    data: dict[str, Any]


def receipt_for_page(raw: str, decision_id: int) -> Receipt | None:
    """What the page after a move through a seat's link shows (the POST of a decision
    answers with a redirect here: Post/Redirect/Get): the move that closed
    ``decision_id``, read from its Move row, if it is the seat's own move and stands;
    None for any other decision (another seat's, a bot's, a timeout, a move taken back
    since) or a link that is not a game page's (a one-click link opens it read-only)."""
    with read_scope() as s:
        token, game, seat = live_seat_page(s, raw, *PAGE_KINDS)
        move = s.exec(select(Move).where(Move.decision_id == decision_id,
                                         Move.game_id == game.id)).first()
        decision = s.get(Decision, decision_id) if move is not None else None
        if token.kind != TokenKind.PAGE or move is None or decision is None \
                or move.source != MoveSource.PLAYER or decision.seat_id != seat.id:
            return None
        data = _page_data(s, game, seat, with_log=False)
        data["readonly"] = False
        data["take_back"] = take_back_offer(s, game, seat)
        data["stamp"] = PageStamp.of(f"{token.kind}:{token.seat_id}", game)
        view = data["view"] or {}
        result = view.get("result") if isinstance(view, dict) else None
        return Receipt(dict(move.action), tuple(x.name for x in data["seats"]),
                       tuple((d.position, d.kind) for d in data["open"]),
                       tuple((result or {}).get("winners") or ()),
                       game.status == GameStatus.FINISHED, game.engine, seat.language,
                       data["card"], data)


def game_for_spectator(key: str) -> dict[str, Any]:
    with read_scope() as s:
        game = _spectated(s, key)
        data = _page_data(s, game, None)
        data["stamp"] = PageStamp.of(SPECTATOR, game)
        return data


SPECTATOR_KEY = re.compile(r"[0-9a-f]{1,32}")


def _spectated(s: Session, key: Any) -> Game:
    """The game behind a spectator address, or a friendly NotFound."""
    key = str(key)
    game = None
    if SPECTATOR_KEY.fullmatch(key):
        game = s.exec(select(Game).where(Game.spectator_key == key)).first()
    if game is None:
        raise NotFound(gettext("no game at this address"))
    return game


# ---------------------------------------------------------------- the version of a page


SPECTATOR = "spectator"  # the reader of the spectators' page


@dataclass(frozen=True)
class PageStamp:
    """What a game page shows, named without reading it: who reads (``reader``: the kind
    and seat of the link, or ``SPECTATOR``) and the game's counters that move with every
    change a page shows (``Game.page_version``; the state's ``version`` and the log's
    ``event_seq`` too, which move with every move). Equal stamps, equal pages (for the
    same code, language and time: see ``pbem.web.fresh``)."""

    game_id: str
    reader: str
    version: int
    event_seq: int
    page_version: int

    @classmethod
    def of(cls, reader: str, game: Game) -> PageStamp:
        return cls(game.id, reader, game.version, game.event_seq, game.page_version)

    def text(self) -> str:
        return (f"{self.game_id}|{self.reader}|{self.version}|{self.event_seq}|"
                f"{self.page_version}")


_TOKEN, _GAME = table_of(Token), table_of(Game)
_COUNTERS = (_GAME.c.id, _GAME.c.version, _GAME.c.event_seq, _GAME.c.page_version)
# One indexed read each (the token by its hash, the game by its key): built once, so
# SQLAlchemy neither builds nor keys them again.
_PAGE_STAMP = (sa_select(_TOKEN.c.kind, _TOKEN.c.seat_id, *_COUNTERS)
               .join_from(_TOKEN, _GAME, _GAME.c.id == _TOKEN.c.game_id)
               .where(_TOKEN.c.hash == bindparam("hash"), _TOKEN.c.revoked_at.is_(None)))
_SPECTATOR_STAMP = sa_select(*_COUNTERS).where(_GAME.c.spectator_key == bindparam("key"))


def page_stamp(raw: str) -> PageStamp | None:
    """The stamp ``game_for_page`` would give the page of link ``raw`` now, or None for a
    link that opens no page (garbled, unknown, revoked, of another kind, as
    ``tokens.is_live`` has it: the page itself says why). One query, in a read-only
    transaction (``read_connection``: no session); no state, no log, no lock."""
    if not well_formed(raw):
        return None
    with read_connection() as conn:
        row = conn.execute(_PAGE_STAMP, {"hash": hash_token(raw)}).first()
    if row is None or row.kind not in PAGE_KINDS:
        return None
    return PageStamp(row.id, f"{row.kind}:{row.seat_id}", row.version, row.event_seq,
                     row.page_version)


def spectator_stamp(key: str) -> PageStamp | None:
    """``page_stamp`` of the spectators' page at ``key``."""
    if not isinstance(key, str) or not SPECTATOR_KEY.fullmatch(key):
        return None
    with read_connection() as conn:
        row = conn.execute(_SPECTATOR_STAMP, {"key": key}).first()
    if row is None:
        return None
    return PageStamp(row.id, SPECTATOR, row.version, row.event_seq, row.page_version)


def _page_data(s: Session, game: Game, seat: Seat | None,
               with_log: bool = True) -> dict[str, Any]:
    """What ``pages/game.html`` (and the host's and the receipt's pages) render: the
    seat's view (``services.seat_view``) in the shapes the templates read, with the
    game's and the seats' rows, the card lookup, the log by rounds."""
    seats = seats_of(s, game.id)
    position = seat.position if seat else None
    mod = get_game(game.engine)
    state = load_state(mod, game) if game.state else None
    tr_language = seat.language if seat else language()
    # the effects of the choices are asked as the form shows them (a few of hundreds)
    kept = KeptActions()
    seen = build_seat_view(s, game, seat, seats, mod, state, tr_language, None,
                           effects=False, keep=kept)
    mine = seen.mine
    legal, choices = kept.legal, kept.email

    def effect(action: Action) -> Effect:
        """What a legal action costs and brings, for the words of the form's choices."""
        return mod.choice_effect(state, position, action) if position is not None else {}

    log = _log(s, game, mod, seat) if with_log else []
    clocks = {c.position: c for c in seen.clocks}
    tr = localize.translation_for(mod, state, tr_language)
    return {
        "game": game, "seat": seat, "seats": seats, "card": localize.lookup(mod, state, tr),
        "view": seen.board.view if seen.board is not None else None,
        "open": list(seen.open), "decision": mine.decision if mine is not None else None,
        "legal": legal, "log": log, "readonly": False,
        "clocks": clocks, "my_clock": clocks.get(position) if position is not None else None,
        "choices": choices, "log_zone": str(_zone(seat)), "effect": effect,
        # the page follows the game (static/live.js) while what players do may change it
        "live": game.status in (GameStatus.ACTIVE, GameStatus.INVITING),
        "variants": lambda action: variants_of(mod, state, position, action),
        # what the seat's standing plan may name now (a game with plans; else None)
        "plan_form": seen.forms.plan,
        # the seat's standing choices (a game that offers them; else None)
        "standing_form": seen.forms.standing,
    }


def variants_of(mod: Any, state: Any, position: int | None,
                action: Action) -> list[dict[str, Any]]:
    """What a one-click link for ``action`` lets its confirmation page choose instead (the
    game's optional ``choice_variants``; [] without one): each as ``action`` (JSON),
    ``effect`` (``choice_effect``) and ``text`` (the action in the game's notation, which
    the page's form sends back)."""
    vary = getattr(mod, "choice_variants", None)
    if vary is None or state is None or position is None:
        return []
    return [{"action": v.to_json(), "effect": mod.choice_effect(state, position, v),
             "text": format_action(v)} for v in vary(state, position, action)]


def card_lookup(game: Game, lang: str, state: Any = None) -> localize.CardLookup:
    """A function from card id to printed card data in ``lang``, for narration
    (``state``: the game's, if the caller has read it already)."""
    mod = get_game(game.engine)
    if state is None and game.state:
        state = load_state(mod, game)
    return localize.lookup(mod, state, localize.translation_for(mod, state, lang))


def admin_data(raw: str) -> dict[str, Any]:
    """The host page: the game from the host's seat, whom it waits for (``waiting``, as
    the emails list it, in the host's time zone), every email of the game newest first
    (``outbox``), the names "play again" would invite (``again``), and the latest entry
    of its log (``last_event``: what the page after a control checks before it says the
    control was done), and in a game with strong bots the CPU they used today of the
    day's allowance (``bot_cpu``, ``allowance.BotCpu``)."""
    with read_scope() as s:
        game = admin_game(s, raw, lock=False)
        seats = seats_of(s, game.id)
        data = _page_data(s, game, seats[0], with_log=False)
        data["waiting"] = (open_deadlines(s, game, seats, seats[0].timezone)
                           if game.status == GameStatus.ACTIVE else [])
        answered = set(s.exec(select(Decision.id).where(
            Decision.game_id == game.id, col(Decision.closed_at).is_not(None))).all())
        data["outbox"] = [o for o in s.exec(select(Outbox).where(Outbox.game_id == game.id)
                                            .order_by(col(Outbox.id).desc())).all()
                          if not _waits_for_nothing(o, answered)]
        data["again"] = [seat.name for seat, joined
                         in play_again_players(s, game, host_address(s, raw)) if not joined]
        data["end_notice"] = end_notice(s, game)
        host = next((seat.email for seat in seats if seat.is_host), "")
        data["bot_cpu"] = (allowance.bot_cpu(s.connection(), game.id, host, utcnow())
                           if any(seat.bot == SeatBot.STRONG for seat in seats) else None)
        data["last_event"] = s.exec(select(EventLog).where(EventLog.game_id == game.id)
                                    .order_by(col(EventLog.seq).desc()).limit(1)).first()
        return data


def _waits_for_nothing(row: Outbox, answered: set[int | None]) -> bool:
    """An email held back (a follow-up that waits for the page, or one over a sending
    cap) for a decision already answered: it will never be sent, and the host page does
    not list it."""
    waiting = row.status == OutboxStatus.HELD or (
        row.status == OutboxStatus.PENDING and bool(row.context.get("follow_up")))
    return waiting and row.context.get("decision_id") in answered


ABANDON_NOTICES = ("game_abandoned_by_host", "game_abandoned_idle")


def end_notice(s: Session, game: Game) -> EventLog | None:
    """Why an abandoned game ended: the server's notice in its log (the host abandoned
    it, or nobody played any more); None for a game that did not end that way."""
    if game.status != GameStatus.ABANDONED:
        return None
    return s.exec(select(EventLog).where(EventLog.game_id == game.id,
                                         col(EventLog.kind).in_(ABANDON_NOTICES))
                  .order_by(col(EventLog.seq).desc())).first()


def host_language(raw: str) -> str:
    """The language of the host behind an admin link (the host page speaks it)."""
    with read_scope() as s:
        token = live_token(s, raw, TokenKind.ADMIN)
        return seats_of(s, token.game_id)[0].language


def play_again_players(s: Session, game: Game, asker: str) -> list[tuple[Seat, bool]]:
    """Who plays again if the host at address ``asker`` presses "play again with the
    same players", and whether each has joined by that: the asker's own seat (joined)
    and every other seat still in the game at its end (invited; not those who declined,
    left, or asked for no email), the first seat too."""
    return [(seat, seat.email.lower() == asker) for seat in seats_of(s, game.id)
            if seat.email.lower() == asker or (
                seat.invite != Invite.DECLINED and seat.left_at is None
                and not suppressed(s, seat.email.lower()))]


# --------------------------------------------------------------------------- the game log


OPEN_ROUNDS = 2  # the game page shows the current round and the one before it; older
# rounds are folded and loaded when opened (``log_round_for_page``)


@dataclass
class LogRound:
    """One part of a game's log: what happened before the first round (``number`` 0) or
    the ``number``-th round the game began (``label``: the round number its event
    gives). ``entries`` are (event, its time in the reader's zone, whether it is the
    first entry of its day), oldest first, as the emails tell them; None while the
    round is folded. Times are
    written by the template (in the page's language, which is settled only then)."""

    number: int
    label: Any
    first_seq: int
    end_seq: int | None  # the first event of the next part (None: up to now)
    started: datetime | None  # when it began
    entries: list[tuple[LogEvent, datetime, bool]] | None = None


# The beginnings of rounds (data and visibility as stored text: parsed only as needed).
_ROUND_MARKS = (sa_select(col(EventLog.seq), cast(col(EventLog.data), Text),
                          col(EventLog.created_at), cast(col(EventLog.visible_to), Text))
                .where(col(EventLog.game_id) == bindparam("game_id"),
                       col(EventLog.kind) == bindparam("kind"))
                .order_by(col(EventLog.seq)))


class LogEvent:
    """An event of the log as a page shows it: a plain row (an ORM object costs several
    times more, and a page shows up to a few hundred), whose ``data`` is parsed from its
    stored text (``raw``) only if it is narrated (``NarratedLog`` keeps most entries'
    words, by that text)."""

    __slots__ = ("seq", "kind", "actor", "raw", "visible_to", "created_at", "_data")

    def __init__(self, seq: int, kind: str, actor: int | None, raw: str,
                 visible_to: str | None, created_at: datetime) -> None:
        self.seq, self.kind, self.actor, self.raw = seq, kind, actor, raw
        self.visible_to: list[int] | None = _json_or_none(visible_to)
        self.created_at = created_at
        self._data: Any = None

    @property
    def data(self) -> Any:
        if self._data is None:
            self._data = json.loads(self.raw)
        return self._data


_EVENTS_FROM = (sa_select(col(EventLog.seq), col(EventLog.kind), col(EventLog.actor),
                          cast(col(EventLog.data), Text),
                          cast(col(EventLog.visible_to), Text), col(EventLog.created_at))
                .where(col(EventLog.game_id) == bindparam("game_id"),
                       col(EventLog.seq) >= bindparam("first"),
                       col(EventLog.seq) < bindparam("end"))
                .order_by(col(EventLog.seq)))


def _log(s: Session, game: Game, mod: Any, seat: Seat | None) -> list[LogRound]:
    """The game page's log: every part in the order it happened (the order in which the
    emails tell it, so the newest is at the end); the last ``OPEN_ROUNDS`` with their
    entries, the others folded."""
    if not game.event_seq:  # not started: nothing has happened yet
        return []
    rounds = _rounds(s, game, mod)
    shown = rounds[-OPEN_ROUNDS:]
    if shown:
        events = _events(s, game, shown[0].first_seq, None)
        for part in shown:
            part.entries = _entries(events, part, seat)
    return rounds


def _rounds(s: Session, game: Game, mod: Any) -> list[LogRound]:
    """The parts of the log, oldest first: the events before the first round, then one
    part per event of the game's ``ROUND_EVENT`` (a game without one: a single part)."""
    kind = getattr(mod, "ROUND_EVENT", None)
    marks = [(seq, data, at) for seq, data, at, seen in s.connection().execute(
        _ROUND_MARKS, {"game_id": game.id, "kind": kind})
        if _json_or_none(seen) is None] if kind else []
    parts = [LogRound(0, None, 1, None, as_utc(game.started_at or game.created_at))]
    for n, (seq, data, at) in enumerate(marks, 1):
        parts[-1].end_seq = seq
        data = json.loads(data)
        label = data.get("round", n) if isinstance(data, dict) else n
        parts.append(LogRound(n, label, seq, None, as_utc(at)))
    if len(parts) > 1 and parts[1].first_seq <= 1:  # nothing came before the first round
        parts.pop(0)
    return parts


def _events(s: Session, game: Game, first: int, end: int | None) -> list[LogEvent]:
    return [LogEvent(*row) for row in s.connection().execute(
        _EVENTS_FROM, {"game_id": game.id, "first": first,
                       "end": end if end is not None else 2**31 - 1})]


def _json_or_none(text: str | None) -> Any:
    """A JSON value stored as text (a JSON null, or none stored: None)."""
    return None if text is None or text == "null" else json.loads(text)


def _entries(events: list[LogEvent], part: LogRound,
             seat: Seat | None) -> list[tuple[LogEvent, datetime, bool]]:
    """The events of ``part`` the reader may see, oldest first, each with its time in the
    reader's zone and whether it is the first of its day (which shows the day too)."""
    position = seat.position if seat else None
    zone, day, out = _zone(seat), None, []
    for e in events:
        if e.seq < part.first_seq or (part.end_seq is not None and e.seq >= part.end_seq):
            continue
        if e.visible_to is not None and position not in e.visible_to:
            continue
        local = as_utc(e.created_at).astimezone(zone)
        out.append((e, local, local.date() != day))
        day = local.date()
    return out


def _zone(seat: Seat | None) -> tzinfo:
    """The reader's time zone: the seat's, UTC for spectators."""
    try:
        return ZoneInfo(seat.timezone) if seat is not None else UTC
    except (ValueError, KeyError):  # not a zone name (the database was edited by hand)
        return UTC


def log_round_for_page(raw: str, number: Any) -> dict[str, Any]:
    """One part of the log (``number`` as ``LogRound.number``) from a seat's view: the
    link of the seat's game page (or of a one-click email, as that page takes).
    ``round`` is None when the log has no such part."""
    with read_scope() as s:
        _, game, seat = live_seat_page(s, raw, TokenKind.PAGE, TokenKind.ACTION)
        return _round_data(s, game, seat, number)


def log_round_for_spectator(key: str, number: Any) -> dict[str, Any]:
    with read_scope() as s:
        return _round_data(s, _spectated(s, key), None, number)


def _round_data(s: Session, game: Game, seat: Seat | None, number: Any) -> dict[str, Any]:
    mod = get_game(game.engine)
    rounds = _rounds(s, game, mod)
    part = next((r for r in rounds if str(r.number) == str(number)), None)
    if part is None:  # the caller says so, in the reader's language
        return {"game": game, "seat": seat, "round": None}
    part.entries = _entries(_events(s, game, part.first_seq, part.end_seq), part, seat)
    state = load_state(mod, game) if game.state else None
    tr = localize.translation_for(mod, state, seat.language if seat else language())
    return {"game": game, "seat": seat, "seats": seats_of(s, game.id), "round": part,
            "card": localize.lookup(mod, state, tr), "log_zone": str(_zone(seat))}
