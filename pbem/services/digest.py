"""The daily digest of an address that chose one (``Address.delivery``) instead of an
email per turn: once a day at its hour (in its zone), one email listing every game
waiting for it, each open decision with its deadline and its one-click choices (the
decision email's, ``email_choices``), what happened in the game since the seat's last
email (as a turn email tells it: so news "in the next turn email" comes in the digest),
and the link of its game page; nothing on a day when no game waits. Its turn emails are
skipped when due (``pbem.mail.addresses``); reminders still go, so that no deadline
passes unseen.

The clock's sweep queues a digest (``queue_digests``): a request row, at most one per
address and local day (its idempotency key names both), marked on the address
(``digest_sent_at``) in the same transaction; the mail loop fills it in when it sends
(``prepare_digest``: the games as they are then, the links minted then).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, insert
from sqlmodel import Session, col, select

from engine.registry import get_game
from pbem.db import read_scope, session_scope
from pbem.i18n import language
from pbem.kinds import Delivery, EmailTemplate, GameStatus, Invite, OutboxStatus, TokenKind
from pbem.mail import EXTRA_CONTEXT, PREPARE_AT_SENDING, game_name, table_talk
from pbem.mail.addresses import zone
from pbem.mail.compose import EVENTS_SINCE
from pbem.mail.headers import message_id
from pbem.models import Address, Decision, Game, Outbox, Seat, utcnow
from pbem.services.plumbing import load_state, seats_of, wake_deliverer
from pbem.services.reading import card_lookup, variants_of
from pbem.tokens import hash_token

NOTHING_WAITS = "not sent: no game waits for this address"


def due_digest_time(row: Address, now: datetime) -> datetime | None:
    """When the address's digest of today (its local day) falls due, if that time has
    come and its digest of today has not gone yet; else None."""
    tz = zone(row.timezone, None)
    local = now.astimezone(tz)
    due = datetime(local.year, local.month, local.day, row.digest_hour, tzinfo=tz)
    due_utc = due.astimezone(now.tzinfo)
    sent = row.digest_sent_at
    if sent is not None and sent.tzinfo is None:
        sent = sent.replace(tzinfo=now.tzinfo)
    if due_utc > now or (sent is not None and sent >= due_utc):
        return None
    return due_utc


def queue_digests(now: datetime | None = None) -> int:
    """Queue the digest of every address whose hour has come today; how many."""
    now = now or utcnow()
    with read_scope() as s:
        rows = s.exec(select(Address).where(Address.delivery == Delivery.DIGEST)).all()
        due = [row.address for row in rows if due_digest_time(row, now) is not None]
    return sum(_queue_digest(address, now) for address in due)


def _queue_digest(address: str, now: datetime) -> bool:
    with session_scope() as s:
        row = s.get(Address, address)
        if row is None or row.delivery != Delivery.DIGEST:
            return False
        due = due_digest_time(row, now)
        if due is None:  # another clock did it meanwhile
            return False
        row.digest_sent_at = now
        day = due.astimezone(zone(row.timezone, None)).date().isoformat()
        key = f"digest:{hash_token(address)[:16]}:{day}"
        if s.exec(select(Outbox.id).where(Outbox.idempotency_key == key)).first():
            return False
        s.execute(insert(Outbox).values(
            game_id=None, seat_id=None, to_addr=address, rcpt=address, to_name="",
            language="en", template=EmailTemplate.DIGEST,
            context={"links": {}, "request": True}, idempotency_key=key,
            message_id=message_id(key.replace(":", ".")), status=OutboxStatus.PENDING,
            attempts=0, next_attempt_at=now, created_at=now))
        wake_deliverer(s)
        return True


def prepare_digest(s: Session, row: Outbox) -> str | None:
    """At sending: the games waiting for the address as they are now, with a game-page
    link per seat; or why nothing goes out (the row is then skipped)."""
    if not row.context.get("request"):
        return None  # prepared at an earlier attempt
    found = s.exec(select(Decision, Seat, Game)
                   .join(Seat, col(Seat.id) == Decision.seat_id)
                   .join(Game, col(Game.id) == Decision.game_id)
                   .where(func.lower(Seat.email) == row.rcpt,
                          col(Decision.closed_at).is_(None),
                          Game.status == GameStatus.ACTIVE, Seat.invite == Invite.ACCEPTED,
                          col(Seat.left_at).is_(None), col(Seat.bot).is_(None))
                   .order_by(col(Decision.deadline_at), col(Decision.id))).all()
    if not found:
        return NOTHING_WAITS
    games: dict[str, dict[str, Any]] = {}
    links: dict[str, Any] = {}
    states: dict[str, tuple[Any, Any]] = {}
    seen: list[list[int]] = []  # what each seat is told by the digest: its games' events
    for decision, seat, game in found:
        entry = games.get(game.id)
        if entry is None:
            entry = games[game.id] = {
                "id": game.id, "title": game_name(game, seats_of(s, game.id)),
                "engine": game.engine, "tz": seat.timezone, "position": seat.position,
                "since": seat.seen_event_seq,
                "paused": game.paused_at is not None, "turns": [], "link": f"page{seat.id}"}
            links[f"page{seat.id}"] = {"kind": TokenKind.PAGE, "game_id": game.id,
                                       "seat_id": seat.id}
            mod = get_game(game.engine)
            states[game.id] = mod, load_state(mod, game)
            if seat.id is not None:
                seen.append([seat.id, game.event_seq])
        turn: dict[str, Any] = {"kind": decision.kind, "choices": [], "more": True,
                                "deadline": (decision.deadline_at.isoformat()
                                             if decision.deadline_at else None)}
        entry["turns"].append(turn)
        if entry["paused"] or len(entry["turns"]) > 1:
            continue  # one-click choices for a seat's first open decision of a game
        mod, state = states[game.id]
        legal = mod.legal_actions(state, seat.position)
        for i, action in enumerate(mod.email_choices(state, seat.position)):
            name = f"d{decision.id}c{i}"
            effect = mod.choice_effect(state, seat.position, action)
            if effect.get("affordable") is not False:  # else shown greyed, without a link
                links[name] = {"kind": TokenKind.ACTION, "game_id": game.id,
                               "seat_id": seat.id, "decision_id": decision.id,
                               "action": action.to_json()}
            turn["choices"].append({
                "link": name, "action": action.to_json(), "effect": effect,
                "variants": variants_of(mod, state, seat.position, action)})
        turn["more"] = len(legal) > len(turn["choices"])
    newest = max((seat for _, seat, _ in found), key=lambda x: x.id or 0)
    row.to_addr, row.to_name, row.language = newest.email, newest.name, newest.language
    row.context = {"links": links, "token_game": newest.game_id, "name": newest.name,
                   "games": list(games.values()), "seen_seats": seen}
    return None


def digest_context(s: Session, row: Outbox) -> dict[str, Any]:
    """At rendering, in the reader's language: each listed game's cards by id, for the
    words of its choices (``cards[game_id]``), and what happened in it since the seat's
    last email (``news[game_id]``: the events it may see, the messages to the table of
    them shown whole, ``compose.table_talk``, the players' names, the seat), as a turn
    email tells it (the digest moves what the seats were told: ``seen_seats``,
    ``pbem.mail.delivery``)."""
    cards: dict[str, Any] = {}
    news: dict[str, Any] = {}
    conn = s.connection()
    for entry in row.context.get("games", ()):
        game = s.get(Game, entry["id"])
        if game is None or not game.state:
            continue
        cards[game.id] = card_lookup(game, language())
        me = entry.get("position")
        events = conn.execute(EVENTS_SINCE, {"game_id": game.id,
                                             "since": entry.get("since", 0)}).all()
        seen = [e for e in events if e.visible_to is None or me in (e.visible_to or [])]
        said, earlier = table_talk(seen)
        news[game.id] = {"me": me, "names": [x.name for x in seats_of(s, game.id)],
                         "events": seen, "said": said, "said_earlier": earlier}
    return {"cards": cards, "news": news}


PREPARE_AT_SENDING[EmailTemplate.DIGEST] = prepare_digest
EXTRA_CONTEXT[EmailTemplate.DIGEST] = digest_context
