"""Replies by email: a message the inbound receiver took (``pbem.mail.receive``) played
for the seat whose reply address it was sent to.

Every email to a player carries a fresh reply address (``Reply-To: play+<token>@`` the
inbound domain, a ``reply`` token stored hashed, naming the seat and, for a decision
email, the decision). ``receive_reply`` reads the message (``pbem.mail.inbound``) and
acts only when all of these hold: it is not from a machine (auto-replies, lists and
delivery reports are never answered, so no mail loop can start), the receiving server
did not find it forged (``Authentication-Results``), its reply address is live, and its
From is the seat's own address. Anything else is dropped without a word, but for a reply
from another player of the same game, who is told once that the address is not theirs:
the receiver never writes to anyone who is not a player.

The new text's lines are commands, each matched against the seat's open decision with
the engine's ``parse_action`` (``pbem.commands``: the reader's words and English ones,
printed names, unique prefixes, never completing a move); consecutive lines play
consecutive decisions of the seat, each in a transaction of its own, as a click would
(``playing.act``). The first line that is a command but cannot be played stops the
rest. A line whose first word names no kind of move anyone may make now (in the seat's
words or English), and everything after it (or after a line ``say:``), is table talk
(``talk``). The first line answers the decision of the email replied to:
once that decision has closed, the reply is refused as late. Then one answer goes back
in the thread, in the player's language: what was recorded and what happens next, or
why not, with the moves the refused line could mean or the legal ones nearest to it,
and the commands that would be accepted now (at most
``REPLY_ANSWERS_PER_HOUR`` answers per seat).

Each message is read once (``InboundMessage``, by its Message-ID). A message to an
email's return path is a bounce: ``bounces`` reads it, and nobody is answered.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from flask import current_app
from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from engine.core import (
    AmbiguousAction,
    EngineError,
    IncompleteAction,
)
from engine.registry import get_game
from pbem.commands import (
    listed_commands,
    looks_like_a_command,
    read_command,
    read_standing,
    refusal_candidates,
    standing_commands,
)
from pbem.db import get_row, read_scope, session_scope
from pbem.errors import InvalidInput, RateLimited, WrongState
from pbem.kinds import ENDED, ClosedBy, EmailTemplate, GameStatus, Inbound, MoveSource, TokenKind
from pbem.mail.inbound import Incoming, read_message, read_report
from pbem.models import Decision, Game, InboundMessage, Outbox, Seat, Token, utcnow
from pbem.services import talk
from pbem.services.bounces import record_bounce
from pbem.services.playing import act, store_standing
from pbem.services.plumbing import PAGE_LINK, load_state, lock_game, queue_email, seats_of
from pbem.tokens import hash_token, is_live

log = logging.getLogger("pbem.replies")
MAX_LINES = 10  # command lines read from one reply
MAX_TALK_LINES = 40  # lines of table talk read from one reply


@dataclass(frozen=True)
class Line:
    """What became of one line of a reply: ``status`` ``recorded`` (``action``: the
    move, JSON) or why not (``illegal``, ``ambiguous``, ``incomplete``: ``candidates``,
    the moves it could mean or else the legal moves nearest to it, as the player may
    type them; ``not_your_turn``, ``turn_over``, ``already_recorded``,
    ``game_over``, ``not_running``, ``paused``)."""

    line: str
    status: str
    action: dict[str, Any] | None = None
    candidates: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "status": self.status, "action": self.action,
                "candidates": list(self.candidates)}


@dataclass(frozen=True)
class Received:
    """What ``receive_reply`` did with a message."""

    outcome: Inbound
    lines: tuple[Line, ...] = ()
    ignored: tuple[str, ...] = ()  # lines after the commands, not read as commands
    answered: bool = False
    game_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def played(self) -> int:
        return sum(1 for x in self.lines if x.status == "recorded")


def receive_reply(raw: bytes, rcpts: tuple[str, ...] | list[str] = (),
                  envelope_from: str | None = None) -> Received:
    """Read and act on one received message (see the module's docstring). ``rcpts``:
    the envelope's recipients (none from a mailbox: the headers are read);
    ``envelope_from``: the SMTP MAIL FROM ("" for a delivery report)."""
    config = current_app.config
    incoming = read_message(raw, rcpts, envelope_from, config["INBOUND_DOMAIN"],
                            config.get("INBOUND_AUTHSERV_ID"), config["SECRET_KEY"])
    if incoming.bounce is not None:  # to an email's return path: a report, never answered
        report = read_report(raw)
        marked = report is not None and record_bounce(incoming.bounce, report)
        return Received(Inbound.BOUNCE, extra={"marked": marked})
    if incoming.token is None:
        return Received(Inbound.UNKNOWN)  # not ours: nothing to record or answer
    found = _reply_seat(incoming.token)
    record = _record(incoming, found)
    if record is None:
        return Received(Inbound.DUPLICATE)
    if incoming.automatic:
        return _finish(record, Received(Inbound.AUTO))
    if incoming.forged:
        return _finish(record, Received(Inbound.UNAUTHENTICATED))
    if found is None:
        return _finish(record, Received(Inbound.UNKNOWN))
    token, seat = found
    if incoming.sender != seat.email.lower():
        return _finish(record, _wrong_sender(record, incoming, token, seat))
    return _finish(record, _play_reply(record, incoming, token, seat))


def _reply_seat(raw: str) -> tuple[Token, Seat] | None:
    """The live reply token behind ``raw`` and its seat, or None."""
    with read_scope() as s:
        token = s.get(Token, hash_token(raw))
        if not is_live(token, TokenKind.REPLY) or token is None or token.seat_id is None:
            return None
        return token, get_row(s, Seat, token.seat_id)


def _record(incoming: Incoming, found: tuple[Token, Seat] | None) -> int | None:
    """Note the message as read (None: it was read before)."""
    try:
        with session_scope() as s:
            row = InboundMessage(key=incoming.key, game_id=found[0].game_id if found else None,
                                 seat_id=found[1].id if found else None)
            s.add(row)
            s.flush()
            return row.id
    except IntegrityError:
        return None


def _finish(record_id: int, received: Received) -> Received:
    with session_scope() as s:
        row = get_row(s, InboundMessage, record_id)
        row.outcome = received.outcome
        row.answered = received.answered
        row.lines, row.played = len(received.lines), received.played
    log.info("reply %s: %s, %s line(s), %s played", record_id, received.outcome,
             len(received.lines), received.played)
    return received


# --------------------------------------------------------------------------- playing the lines


def command_lines(text: str, most: int = MAX_LINES) -> list[str]:
    """The non-empty lines of a reply's new text, at most ``most``."""
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()][:most]


def split_talk(lines: list[str]) -> tuple[list[str], list[str]]:
    """The lines before a line ``say:`` (commands, as far as they are) and the text
    from it on (table talk)."""
    for i, line in enumerate(lines):
        if line.lower().startswith("say:"):
            rest = line[4:].strip()
            return lines[:i], ([rest] if rest else []) + lines[i + 1:]
    return lines, []


def _play_reply(record: int, incoming: Incoming, token: Token, seat: Seat) -> Received:
    lines, talk = split_talk(command_lines(incoming.text, MAX_LINES + MAX_TALK_LINES))
    lines = lines[:MAX_LINES]
    results: list[Line] = []
    ignored: list[str] = []
    for i, line in enumerate(lines):
        result = _play_line(token.game_id, seat.id, line,
                            token.decision_id if i == 0 else None, last=i == len(lines) - 1)
        if result is None:  # no command: this line and the rest are table talk
            talk = lines[i:] + talk
            break
        results.append(result)
        if result.status not in ("recorded", "standing"):
            ignored = lines[i + 1:]
            break
    said = _talk(token.game_id, seat.id, talk) if talk else None
    played = any(r.status in ("recorded", "standing") for r in results)
    outcome = (Inbound.PLAYED if played else Inbound.REFUSED if results
               else Inbound.TALK if said else Inbound.EMPTY)
    # table talk alone, posted, needs no answer: the player's next email shows it
    quiet = not results and said is not None and said["status"] == "posted"
    answered = not quiet and _answer(record, token.game_id, seat.id, incoming.message_id,
                                     results, ignored, said)
    return Received(outcome, tuple(results), tuple(ignored), answered, token.game_id,
                    {"talk": said} if said else {})


def _talk(game_id: str, seat_id: int | None, lines: list[str]) -> dict[str, str]:
    """Post the free text of a reply to the table (cut to TALK_MAX_CHARS): what was
    posted, or why not."""
    limit = int(current_app.config["TALK_MAX_CHARS"])
    text = talk.clean(" ".join(lines))
    if len(text) > limit:
        text = text[:limit - 1].rstrip() + "…"
    try:
        with session_scope() as s:
            game = lock_game(s, game_id)
            return {"status": "posted", "text": talk.post(s, game, get_row(s, Seat, seat_id),
                                                          text)}
    except RateLimited:
        return {"status": "rate", "text": text}
    except WrongState:
        return {"status": "closed", "text": text}
    except InvalidInput:  # nothing left once cleaned
        return {"status": "empty", "text": text}


def _play_line(game_id: str, seat_id: int | None, line: str, decision_id: int | None,
               last: bool) -> Line | None:
    """Play one command line for the seat, in a transaction of its own (None: the line
    is no command: its first word begins no move anyone may make now). A line with more
    lines after it holds the email of the seat's next decision as a follow-up's (the
    next line may play it; else the answer lists its commands); the last line's goes
    at once."""
    with session_scope() as s:
        game = lock_game(s, game_id)
        seat = get_row(s, Seat, seat_id)
        if game.status in ENDED:
            return Line(line, "game_over")
        if game.status != GameStatus.ACTIVE:
            return Line(line, "not_running")
        mod = get_game(game.engine)
        state = load_state(mod, game)
        standing = _standing_line(s, game, seat, mod, state, line)
        if standing is not None:
            return standing
        if not looks_like_a_command(mod, state, line, seat.language):
            return None
        if game.paused_at is not None:
            return Line(line, "paused")
        decision = s.get(Decision, decision_id) if decision_id is not None else None
        if decision is not None and decision.closed_at is not None:
            late = "already_recorded" if decision.closed_by == ClosedBy.PLAYER else "turn_over"
            return Line(line, late)
        if decision is None or decision.seat_id != seat.id:
            decision = s.exec(select(Decision).where(
                Decision.seat_id == seat.id, col(Decision.closed_at).is_(None))
                .order_by(col(Decision.id))).first()
        if decision is None:
            return Line(line, "not_your_turn")
        try:
            action = read_command(mod, state, decision.position, line, seat.language)
        except EngineError as exc:
            return _refusal(mod, state, decision.position, seat.language, line, exc)
        act(s, game, seat, decision, action, MoveSource.PLAYER, state, by_email=last)
        return Line(line, "recorded", action.to_json())


def _standing_line(s: Session, game: Game, seat: Seat, mod: Any, state: Any,
                   line: str) -> Line | None:
    """A line that sets a standing choice (``standing tools all``, in the player's words:
    ``commands.read_standing``), set at once whether or not a decision is open: status
    ``standing`` (``action``: the key and value), or ``standing_invalid`` with the lines
    that would be accepted. None for a line that is no such line."""
    try:
        chosen = read_standing(mod, state, seat.position, line, seat.language)
    except EngineError:
        return Line(line, "standing_invalid", candidates=tuple(
            standing_commands(mod, state, seat.position, seat.language)))
    if chosen is None:
        return None
    if game.paused_at is not None:
        return Line(line, "paused")
    key, value = chosen
    store_standing(s, game, seat, {key: value})
    return Line(line, "standing", {"key": key, "value": value})


def _refusal(mod: Any, state: Any, position: int, lang: str, line: str,
             exc: EngineError) -> Line:
    """Why a line is no legal move, with the moves it could have meant (an ambiguous or
    incomplete command), or else the legal moves nearest to it, as the player may type
    them."""
    candidates = refusal_candidates(mod, state, position, line, exc, lang)
    if isinstance(exc, IncompleteAction):
        return Line(line, "incomplete", candidates=candidates)
    if isinstance(exc, AmbiguousAction):
        return Line(line, "ambiguous", candidates=candidates)
    return Line(line, "illegal", candidates=candidates)


# --------------------------------------------------------------------------- answers


def _answers_left(s: Session, seat_id: int | None) -> bool:
    """Whether the seat may get another answer this hour (REPLY_ANSWERS_PER_HOUR)."""
    limit = int(current_app.config["REPLY_ANSWERS_PER_HOUR"])
    count = s.exec(select(func.count()).select_from(Outbox).where(
        Outbox.seat_id == seat_id, Outbox.template == EmailTemplate.REPLY,
        Outbox.created_at >= utcnow() - timedelta(hours=1))).one()
    return count < limit


def _answer(record: int, game_id: str, seat_id: int | None, in_reply_to: str | None,
            results: list[Line], ignored: list[str], said: dict[str, str] | None) -> bool:
    """Queue the answer to a reply (False: the seat had its answers of the hour)."""
    with session_scope() as s:
        game = lock_game(s, game_id)
        seat = get_row(s, Seat, seat_id)
        if not _answers_left(s, seat.id):
            return False
        context = {"in_reply_to": in_reply_to, "results": [r.to_json() for r in results],
                   "ignored": ignored[:5], "talk": said, **_next(s, game, seat)}
        queue_email(s, game, seat, EmailTemplate.REPLY, context, links=PAGE_LINK,
                    key=f"reply:{record}")
        return True


def _next(s: Session, game: Game, seat: Seat) -> dict[str, Any]:
    """What happens next, for the answer: the seat's open decision (``kind``) and the
    commands it accepts, or who the game waits for; ``finished`` once it is over."""
    if game.status != GameStatus.ACTIVE or game.state is None:
        return {"finished": game.status in ENDED, "kind": None, "commands": [],
                "waiting": []}
    mod = get_game(game.engine)
    state = load_state(mod, game)
    names = [x.name for x in seats_of(s, game.id)]
    pending = mod.pending(state)
    mine = [d for d in pending if d.seat == seat.position]
    listing = listed_commands(mod, state, seat.position, seat.language) if mine else None
    return {"finished": False, "kind": mine[0].kind if mine else None,
            "commands": list(listing.lines) if listing else [],
            "commands_more": listing.more if listing else 0,
            "commands_example": listing.example if listing else None,
            "waiting": [[names[d.seat], d.kind] for d in pending if d.seat != seat.position]}


def _wrong_sender(record: int, incoming: Incoming, token: Token, seat: Seat) -> Received:
    """A reply to this seat's address from another address: told once, and only when
    it is the address of another player of the same game."""
    with session_scope() as s:
        game = lock_game(s, token.game_id)
        other = next((x for x in seats_of(s, game.id)
                      if x.email.lower() == incoming.sender and x.id != seat.id), None)
        if other is None or not _answers_left(s, other.id):
            return Received(Inbound.WRONG_SENDER)
        queue_email(s, game, other, EmailTemplate.REPLY,
                    {"in_reply_to": incoming.message_id, "results": [], "ignored": [],
                     "wrong_seat": True, "finished": False, "kind": None, "commands": [],
                     "waiting": []},
                    links=PAGE_LINK, key=f"reply:{record}")
    return Received(Inbound.WRONG_SENDER, answered=True, game_id=token.game_id)
