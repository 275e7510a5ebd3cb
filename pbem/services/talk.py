"""Table talk: a player's message to everyone at the table, from the box on their game
page or as the free text of a reply by email (``replies``).

A message is an event of the game's log (``table_talk``, the seat as actor, visible to
the seats only, not to spectators), so it shows on every seat's game page and in each
player's next email of the game ("Ann: ..."), before the other news and whole, however
much else happened (``mail.table_talk``); a player who chose ``Seat.talk_now`` gets each
message of the others at once, as a notice (whose sending caps apply); a table's chat
webhook whose host chose "mirror talk" gets each message too (``pbem.channels.webhook``).
Messages are plain text, one paragraph (line breaks and control characters dropped), at most
``TALK_MAX_CHARS`` long, at most ``TALK_PER_HOUR`` from one seat in an hour; templates
escape them like every other text a player typed.
"""

from __future__ import annotations

import unicodedata
from datetime import timedelta

from flask import current_app
from flask_babel import gettext, ngettext
from sqlalchemy import func
from sqlmodel import Session, select

from engine.core import Event
from pbem.channels import queue_table_notice
from pbem.db import get_row, session_scope
from pbem.errors import InvalidInput, RateLimited, WrongState
from pbem.kinds import EmailTemplate, GameStatus, TokenKind
from pbem.mail import TALK_EVENT
from pbem.models import EventLog, Game, Seat, utcnow
from pbem.services.plumbing import (
    PAGE_LINK,
    live_token,
    lock_game,
    log_events,
    queue_emails,
    seats_of,
)

TALK = TALK_EVENT  # the event of a message (each email shows them first: mail.table_talk)


def clean(text: str) -> str:
    """A message as it is kept: one paragraph, no control or invisible characters."""
    kept = "".join(" " if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c
                   for c in text if unicodedata.category(c) not in ("Cf", "Cs", "Co", "Cn")
                   or c in "\u200c\u200d")
    return " ".join(kept.split())


def post(s: Session, game: Game, seat: Seat, text: str) -> str:
    """Post ``text`` for ``seat`` in the locked ``game``: the message as kept, or a
    refusal (InvalidInput: empty or too long; RateLimited; WrongState: the game is not
    running or the seat left)."""
    message = clean(text)
    limit = int(current_app.config["TALK_MAX_CHARS"])
    if not message:
        raise InvalidInput(gettext("write something first"), reason="talk/empty")
    if len(message) > limit:
        raise InvalidInput(ngettext("a message has at most %(num)s character",
                                    "a message has at most %(num)s characters", limit),
                           reason="talk/long")
    if game.status != GameStatus.ACTIVE or seat.left_at is not None:
        raise WrongState(gettext("the game is not running"), game_id=game.id)
    recent = s.exec(select(func.count()).select_from(EventLog).where(
        EventLog.game_id == game.id, EventLog.kind == TALK, EventLog.actor == seat.position,
        EventLog.created_at >= utcnow() - timedelta(hours=1))).one()
    if recent >= int(current_app.config["TALK_PER_HOUR"]):
        raise RateLimited(gettext("you have written a lot this hour; try again later"))
    seats = seats_of(s, game.id)
    log_events(s, game, [Event(TALK, seat.position, {"text": message},
                               tuple(x.position for x in seats))])
    listeners = [x for x in seats if x.talk_now and x.id != seat.id and not x.bot]
    if listeners:
        queue_emails(s, game, listeners, EmailTemplate.NOTICE, {"headline": TALK},
                     links=PAGE_LINK)
    # the table's chat, where the host chose to mirror the talk there
    queue_table_notice(s, game, EmailTemplate.NOTICE, {"headline": TALK})
    return message


def say(page_raw: str, text: str, at_once: bool | None = None) -> str:
    """The talk box of a seat's game page: post ``text`` (if any) and set whether the
    seat gets the others' messages at once (``at_once``; None leaves it)."""
    with session_scope() as s:
        token = live_token(s, page_raw, TokenKind.PAGE)
        game = lock_game(s, token.game_id)
        seat = get_row(s, Seat, token.seat_id)
        if at_once is not None and seat.talk_now != at_once:
            seat.talk_now = at_once
        if not text.strip() and at_once is not None:
            return ""
        return post(s, game, seat, text)
