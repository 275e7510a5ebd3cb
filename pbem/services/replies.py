"""Replies by email: a message the inbound receiver took (``pbem.mail.receive``) played
for the seat whose reply address it was sent to.

Every email to a player carries a fresh reply address (``Reply-To: games+r.<token>@``
the sender's own mailbox, or ``play+<token>@`` the inbound domain: ``inbound.Addresses``;
a ``reply`` token stored hashed, naming the seat and, for a decision email, the
decision). ``receive_reply`` reads the message (``pbem.mail.inbound``) and
acts only when all of these hold: it is not from a machine (auto-replies, lists and
delivery reports are never answered, so no mail loop can start), the receiving server
did not find it forged (``Authentication-Results``), its reply address is live, and its
From is the seat's own address. Anything else is dropped without a word, but for a reply
from another player of the same game, who is told once that the address is not theirs:
the receiver never writes to anyone who is not a player.

The new text is read line by line. A line is a command when it reads as a move of the
game, whether or not the player may make it now (``commands.looks_like_a_command``: its
first word names a kind of move the game has, in the notation or the game's words in
the seat's language or English), or when it sets a standing choice. Each command is
matched against the seat's open decision with the engine's ``parse_action``
(``pbem.commands``: printed names, unique prefixes, never completing a move);
consecutive lines play consecutive decisions of the seat, each in a transaction of its
own, as a click would (``playing.act``). The first line answers the decision of the
email replied to: once that decision has closed, the reply is refused as late. A
command that cannot be played (the turn is over, it is not the seat's turn, the move
is not legal now) is refused, never posted, and the commands after it are not played.
The first line that is no command, and everything after it (or after a line ``say:``),
is table talk (``talk``). While a reply is read, each move holds the email of the
seat's next decision (its next line may play it); once it is read, the email of a
decision still open goes at once.

Then one answer goes back in the thread, in the player's language: what was recorded
and what happens next, or why not, with the moves the refused line could mean or the
legal ones nearest to it, and the commands that would be accepted now. Table talk
alone, posted, is not answered. A seat gets at most ``REPLY_ANSWERS_PER_HOUR`` answers
in an hour; the one after them also says until when its replies are played unanswered,
and the rest are (``Room``).

Each message is read once (``InboundMessage``, by its Message-ID). A message to an
email's return path is a bounce: ``bounces`` reads it, and nobody is answered.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
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
from pbem.kinds import (
    ENDED,
    ClosedBy,
    EmailTemplate,
    GameStatus,
    Inbound,
    MoveSource,
    OutboxStatus,
    TokenKind,
)
from pbem.mail.inbound import Addresses, Incoming, read_message, read_report
from pbem.models import Decision, Game, InboundMessage, Outbox, Seat, Token, utcnow
from pbem.services import talk
from pbem.services.bounces import record_bounce
from pbem.services.playing import act, store_standing
from pbem.services.plumbing import (
    PAGE_LINK,
    load_state,
    lock_game,
    queue_email,
    seats_of,
    wake_deliverer,
)
from pbem.tokens import hash_token, is_live

log = logging.getLogger("pbem.replies")
MAX_LINES = 10  # command lines read from one reply
MAX_TALK_LINES = 40  # lines of table talk read from one reply
PLAYED = ("recorded", "standing")  # what became of a line that was played


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
    incoming = read_message(raw, rcpts, envelope_from, Addresses.of(config),
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
    """Play the reply's commands, send the emails of the decisions they left open, post
    its table talk and answer it (see the module's docstring)."""
    began = utcnow()
    lines, said = split_talk(command_lines(incoming.text, MAX_LINES + MAX_TALK_LINES))
    results, ignored, talk = _play_lines(token, seat, lines)
    talk += said
    played = any(r.status in PLAYED for r in results)
    if played:
        _send_held_turns(seat.id, began)
    posted = _talk(token.game_id, seat.id, talk) if talk else None
    outcome = (Inbound.PLAYED if played else Inbound.REFUSED if results
               else Inbound.TALK if posted else Inbound.EMPTY)
    # table talk alone, posted, needs no answer: the player's next email shows it
    quiet = not results and posted is not None and posted["status"] == "posted"
    answered = not quiet and _answer(record, token.game_id, seat.id, incoming.message_id,
                                     results, ignored, posted)
    return Received(outcome, tuple(results), tuple(ignored), answered, token.game_id,
                    {"talk": posted} if posted else {})


def _play_lines(token: Token, seat: Seat,
                lines: list[str]) -> tuple[list[Line], list[str], list[str]]:
    """Play the command lines at the head of ``lines`` (at most MAX_LINES), the first
    one for the decision of the email replied to: what became of each; the command lines
    left unplayed after one that was refused (``ignored``); and the lines from the
    first one that is no command on (table talk)."""
    results: list[Line] = []
    ignored: list[str] = []
    for i, line in enumerate(lines):
        if ignored or (results and results[-1].status not in PLAYED) or len(results) == MAX_LINES:
            if not _is_command(token.game_id, seat.id, line):
                return results, ignored, lines[i:]
            ignored.append(line)  # a command after one refused: not played
            continue
        result = _play_line(token.game_id, seat.id, line,
                            token.decision_id if i == 0 else None)
        if result is None:
            return results, ignored, lines[i:]
        results.append(result)
    return results, ignored, []


def _send_held_turns(seat_id: int | None, since: datetime) -> None:
    """Mail now the seat's decisions its reply opened and left open: each move of a
    reply holds the email of the seat's next decision as a follow-up's (the reply's next
    line may play it), and once the reply is read, whatever is still open is the
    player's to answer by email (a page of the move shows nothing to a player who
    replied)."""
    now = utcnow()
    with session_scope() as s:
        held = s.exec(select(Outbox).where(
            Outbox.seat_id == seat_id, Outbox.template == EmailTemplate.DECISION,
            Outbox.status == OutboxStatus.PENDING, col(Outbox.created_at) >= since,
            col(Outbox.next_attempt_at) > now)).all()
        for row in held:
            row.next_attempt_at = now
            row.context = {**row.context, "follow_up": False}
        if held:
            wake_deliverer(s)


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


def _play_line(game_id: str, seat_id: int | None, line: str,
               decision_id: int | None) -> Line | None:
    """Play one command line for the seat, in a transaction of its own (None: the line
    is no command, see ``commands.looks_like_a_command``). The email of the seat's next
    decision waits as a follow-up's (``_send_held_turns``)."""
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
        act(s, game, seat, decision, action, MoveSource.PLAYER, state)
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


def _is_command(game_id: str, seat_id: int | None, line: str) -> bool:
    """Whether ``line`` reads as a command of the seat (a move of the game, legal now or
    not, or a standing choice), without playing it."""
    with read_scope() as s:
        game = get_row(s, Game, game_id)
        if game.state is None:
            return False
        seat = get_row(s, Seat, seat_id)
        mod = get_game(game.engine)
        state = load_state(mod, game)
    try:
        if read_standing(mod, state, seat.position, line, seat.language) is not None:
            return True
    except EngineError:
        return True
    return looks_like_a_command(mod, state, line, seat.language)


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


@dataclass(frozen=True)
class Room:
    """Whether a seat gets an answer to its reply now (REPLY_ANSWERS_PER_HOUR answers in
    an hour): ``answer``; ``until``: set on the one answer past the cap, which says that
    the seat gets no other answer until then."""

    answer: bool
    until: datetime | None = None


def _room(s: Session, seat_id: int | None) -> Room:
    """Whether the seat may get another answer (``Room``): under the cap, an answer;
    past it, one answer that says until when the replies are played unanswered, then
    none until the answers of the last hour are fewer than the cap again."""
    limit = int(current_app.config["REPLY_ANSWERS_PER_HOUR"])
    since = utcnow() - timedelta(hours=1)
    where = (Outbox.seat_id == seat_id, Outbox.template == EmailTemplate.REPLY,
             col(Outbox.created_at) >= since)
    if s.exec(select(func.count()).select_from(Outbox).where(*where)).one() < limit:
        return Room(True)
    rows = s.exec(select(Outbox.created_at, Outbox.context).where(*where)
                  .order_by(col(Outbox.created_at))).all()
    answers = [at for at, context in rows if not context.get("capped_until")]
    if len(answers) < limit:
        return Room(True)
    if any(context.get("capped_until") for _, context in rows):
        return Room(False)  # said once: silence until the hour's answers are fewer
    until = answers[-limit]
    if until.tzinfo is None:  # SQLite gives stored times back without their zone
        until = until.replace(tzinfo=since.tzinfo)
    return Room(True, until + timedelta(hours=1))


def _answer(record: int, game_id: str, seat_id: int | None, in_reply_to: str | None,
            results: list[Line], ignored: list[str], said: dict[str, str] | None) -> bool:
    """Queue the answer to a reply (False: the seat had its answers of the hour)."""
    with session_scope() as s:
        game = lock_game(s, game_id)
        seat = get_row(s, Seat, seat_id)
        room = _room(s, seat.id)
        if not room.answer:
            return False
        context = {"in_reply_to": in_reply_to, "results": [r.to_json() for r in results],
                   "ignored": ignored[:5], "max_lines": MAX_LINES, "talk": said,
                   **_next(s, game, seat)}
        if room.until is not None:
            context["capped_until"] = room.until.isoformat()
            context["cap"] = int(current_app.config["REPLY_ANSWERS_PER_HOUR"])
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
        if other is None or _room(s, other.id) != Room(True):  # under the cap only
            return Received(Inbound.WRONG_SENDER)
        queue_email(s, game, other, EmailTemplate.REPLY,
                    {"in_reply_to": incoming.message_id, "results": [], "ignored": [],
                     "wrong_seat": True, "finished": False, "kind": None, "commands": [],
                     "waiting": []},
                    links=PAGE_LINK, key=f"reply:{record}")
    return Received(Inbound.WRONG_SENDER, answered=True, game_id=token.game_id)
