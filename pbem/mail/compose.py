"""Composing an email: an outbox row rendered into a message.

The row's links are minted as tokens (``mint_links``), its template rendered as a .txt
and an .html twin in the reader's language, with the game as it is at sending: the
reader's view (``pbem.view``: the board, the events since the reader's last email, the
open deadlines), read once by ``services.viewing.build_seat_view``, and both put in one
message whose headers ``pbem.mail.headers`` writes. "Since the reader's last email" is
since the last email that told the reader the news (``NEWS_TEMPLATES``): its messages
to the table come first, whole (``table_talk``), then the other events, the latest ten.

Every email of a game to one address carries the same Subject (the game's name,
``game_name``) and starts with one line that says what is asked and by when (mail
clients show it as the preview): the text part's first line, which the HTML part
repeats as a hidden preheader and as its heading. An email about no one game (a digest,
the list of one's games) has a Subject of its kind, the same every time.
"""

from __future__ import annotations

import binascii
import json
import random
import re
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from email.message import Message
from email.policy import compat32
from typing import Any
from zoneinfo import ZoneInfo

from flask import Flask, before_render_template, current_app, template_rendered
from flask_babel import force_locale, gettext
from sqlalchemy import bindparam
from sqlalchemy import select as core_select
from sqlalchemy.engine import Connection
from sqlmodel import Session, col, select

from engine.registry import get_game
from pbem import localize
from pbem.clocks import Stops, running_between
from pbem.commands import Listing, listed_commands
from pbem.i18n import clock_text, format_deadline, language, mark, short_time, time_left
from pbem.kinds import EmailTemplate, GameStatus, OutboxStatus, TokenKind
from pbem.mail.addresses import clock_stops
from pbem.mail.backends import Outgoing
from pbem.mail.headers import WIRE, check_header_block, thread_of, write_headers
from pbem.mail.inbound import Addresses, new_reply_token
from pbem.models import (
    Decision,
    EventLog,
    Game,
    Outbox,
    RowLoader,
    Seat,
    id_column,
    table_of,
    utcnow,
)
from pbem.narrate import EmailNarration
from pbem.tokens import mint_many
from pbem.ui import memo_scope, ui_inline
from pbem.view import OpenDecision, SeatView

LINK_PATHS = {TokenKind.ACTION: "/a/", TokenKind.PAGE: "/g/", TokenKind.ADMIN: "/admin/",
              TokenKind.INVITE: "/invite/", TokenKind.HOST_CONFIRM: "/host/confirm/",
              TokenKind.HANDOVER: "/handover/", TokenKind.UNSUBSCRIBE: "/u/",
              TokenKind.MY_GAMES: "/my/"}

# The reads of rendering, each built once: SQLAlchemy memoises a statement's cache key on
# the statement object, so a prebuilt one is neither built nor keyed again for every email.
# All but the seats (``Seat`` objects, which the seat's view reads,
# ``pbem.services.viewing``) are run as Core statements on the session's connection and
# read as rows: the ORM's execution (and objects) cost several times the statement on
# SQLite. (The view reads the open decisions and the events.) The outbox row, its game
# and its seat: every column of the three in one Core query (``load_row``), in this order.
_ROW_LOADERS = (RowLoader(Outbox), RowLoader(Game), RowLoader(Seat))
_OUTBOX_T, _GAME_T, _SEAT_T = table_of(Outbox), table_of(Game), table_of(Seat)
_CORE_ROW = (core_select(*_OUTBOX_T.columns, *_GAME_T.columns, *_SEAT_T.columns)
             .select_from(_OUTBOX_T.outerjoin(_GAME_T, _GAME_T.c.id == _OUTBOX_T.c.game_id)
                          .outerjoin(_SEAT_T, _SEAT_T.c.id == _OUTBOX_T.c.seat_id))
             .where(_OUTBOX_T.c.id == bindparam("id")))
_SEATS = select(Seat).where(Seat.game_id == bindparam("game_id")).order_by(col(Seat.position))
EVENTS_SINCE = (select(EventLog.kind, EventLog.actor, EventLog.data, EventLog.visible_to)
                 .where(EventLog.game_id == bindparam("game_id"),
                        EventLog.seq > bindparam("since"))
                 .order_by(col(EventLog.seq)))  # the digest's; rows: objects cost more
_DECISION = table_of(Decision).c
_OPEN_DECISIONS = (core_select(_DECISION.id, _DECISION.position, _DECISION.kind,
                               _DECISION.deadline_at, _DECISION.host_reminded_at)
                   .where(_DECISION.game_id == bindparam("game_id"),
                          _DECISION.closed_at.is_(None))
                   .order_by(_DECISION.deadline_at, _DECISION.position))
_DEADLINE = select(Decision.deadline_at).where(Decision.id == bindparam("id"))
_HELD = select(id_column(Outbox.id)).where(Outbox.seat_id == bindparam("seat_id"),
                                Outbox.rcpt == bindparam("rcpt"),
                                Outbox.status == OutboxStatus.HELD)


# The emails of a game that tell what happened since the reader's last one
# (``_events``, ``_said``): sending one moves the seat's ``seen_event_seq`` to the
# game's latest event. Any other email of a game (the answer to a reply, a welcome)
# tells none of it, and the next one still does. (A digest moves it for each game it
# tells of: ``services.digest``.)
NEWS_TEMPLATES = frozenset({EmailTemplate.DECISION, EmailTemplate.NOTICE,
                            EmailTemplate.RESULT, EmailTemplate.GAME_STARTED})
# The emails that show those events (the news, the messages to the table): only they
# read them.
EVENT_TEMPLATES = NEWS_TEMPLATES | {EmailTemplate.GAME_LINK}
TALK_EVENT = "table_talk"  # a message to the table (``services.talk``)
SAID_MESSAGES = 20  # messages to the table an email shows, whole, at most...
SAID_CHARS = 4000  # ...and characters of them (one message at least)


# What an email about several games (a digest) adds to its template's names at rendering,
# in the reader's language (``force_locale`` is on): its services module registers it.
EXTRA_CONTEXT: dict[EmailTemplate, Callable[[Session, Outbox], dict[str, Any]]] = {}


def load_row(s: Session, row_id: int) -> tuple[Outbox, Game | None, Seat | None, bool]:
    """An outbox row with its game and seat (one query), and whether it goes to the
    seat's own player (not, say, to someone offered the seat).

    One Core query, its row made into the three objects as the ORM's query would load
    them (every column set, no history; one the session holds already is that one) and
    added to the session, persistent: a change to the outbox row is tracked (the mail loop
    writes it), and a seat read again (``_SEATS``) is the same object. The ORM's query
    and loading cost about three times as much."""
    found = s.connection().execute(_CORE_ROW, {"id": row_id}).one()
    objects: list[Any] = []
    at = 0
    for loader in _ROW_LOADERS:
        values = found[at:at + len(loader.keys)]
        at += len(loader.keys)
        # (no game or no seat: the outer join's NULLs)
        objects.append(None if values[loader.pk] is None else loader.in_session(s, values))
    row, game, seat = objects
    return row, game, seat, seat is not None and seat.email.lower() == row.rcpt


def render_row(s: Session, row: Outbox, game: Game | None, seat: Seat | None,
               to_player: bool) -> tuple[Outgoing, int | None, list[int]]:
    """Mint the row's links and render it, in the player's language as it is now (they
    may have changed it since queueing). Writes only the tokens: a caller that rolls back
    renders without a trace (bench/render_mail.py)."""
    with force_locale(seat.language if seat is not None and to_player else row.language):
        return render(s, row, game, seat, to_player)


def render(s: Session, row: Outbox, game: Game | None, seat: Seat | None,
           to_player: bool) -> tuple[Outgoing, int | None, list[int]]:
    """Render ``row`` in the language of the ``force_locale`` around the call
    (``render_row`` picks the reader's): the message, the last event it tells of and the
    held rows it sums up."""
    specs = row.context["links"]
    # a choice the reader cannot pay for now is shown without a link: no token for it
    linked = {name: spec for name, spec in specs.items() if not unpayable(spec)}
    lasting = ([{"kind": TokenKind.MY_GAMES, "seat_id": None,
                 "action": {"address": row.rcpt, "lasting": True}}]
               if row.game_id is not None and to_player else [])
    *urls, unsubscribe = mint_links(
        s, [*linked.values(), *lasting, {"kind": TokenKind.UNSUBSCRIBE,
                                         "action": {"address": row.rcpt, "of": row.template}}],
        row)
    my_games = urls.pop() if lasting else None  # every email's way back to one's games
    links = dict(zip(linked, urls, strict=True))
    ctx: dict[str, Any] = {"ctx": row.context, "links": links, "game": game, "seat": seat,
                           "base_url": current_app.config["BASE_URL"],
                           "unsubscribe": unsubscribe, "my_games": my_games, "seats": [],
                           "reply_to": reply_to(s, row, game, seat, to_player)}
    seen = None
    conn = s.connection()
    now = datetime.now(UTC)  # "2 hours left" and "by Thu 18:00" are as of sending
    view: SeatView | None = None
    if game is not None:  # the players, also before the game starts (confirm, invitation)
        ctx["seats"] = list(s.exec(_SEATS, params={"game_id": game.id}))
    ctx["names"] = [x.name for x in ctx["seats"]]  # by position
    # a decision's choices in order: each its spec (action, effect, variants), ``name``
    # and ``url`` (its one-click link; None for one the reader cannot pay for now)
    ctx["choices"] = [dict(spec, name=name, url=links.get(name))
                      for name, spec in specs.items() if spec.get("kind") == TokenKind.ACTION]
    if game is not None and game.state:
        # what the reader may see, read once (``pbem.view``): the board, the events since
        # their last email that told the news (only in the emails that show them), the
        # open decisions; no legal actions (a decision email's choices carry theirs from
        # queueing, with their effects) and no forms
        mod = get_game(game.engine)
        state = mod.from_json(json.loads(game.state))
        position = seat.position if seat else None
        from pbem.services.viewing import build_seat_view  # services import the mail

        since = ((seat.seen_event_seq if seat else 0) if row.template in EVENT_TEMPLATES
                 else None)  # None: no events read
        view = build_seat_view(s, game, seat, ctx["seats"], mod, state, language(), since,
                               effects=False, legal=False, forms=False)
        ctx["view"] = view.board.view if view.board is not None else None
        ctx["card"] = localize.lookup(mod, state, localize.translation_for(mod, state,
                                                                           language()))
        ctx["events"] = list(view.events)
        # the others than the messages to the table, as ``_events`` lists them (a filter
        # of Jinja's, asking for each event's kind through the template, cost more)
        ctx["news_events"] = [e for e in ctx["events"] if e.kind != TALK_EVENT]
        ctx["said"], ctx["said_earlier"] = table_talk(ctx["events"])
        if row.template in NEWS_TEMPLATES:  # it tells them: the next email starts after
            seen = game.event_seq
        if row.template == EmailTemplate.RESULT:
            ctx["standing"] = standing(mod, state, position, ctx["names"])
        if row.template == EmailTemplate.DECISION and position is not None:
            # for the seat's open decision, asked of the game: the view's legal actions are
            # JSON and notation, and reading them back as the game's actions costs several
            # times asking for them (bench/render_mail.py)
            listing = (listed_commands(mod, state, position, language())
                       if any(d.mine for d in view.open) else Listing())
            ctx["commands"], ctx["commands_more"] = list(listing.lines), listing.more
            ctx["commands_example"] = listing.example
    tz = seat.timezone if seat is not None and to_player else "UTC"
    if game is not None and game.status == GameStatus.ACTIVE and game.paused_at is None:
        ctx["deadlines"] = (deadlines_of(view, tz) if view is not None
                            else open_deadlines(s, game, ctx["seats"], tz))
    if "deadline" in row.context:  # as it is now (extended, paused...), not when queued
        decision_id = row.context.get("decision_id")
        shown = (next((d for d in view.open if d.id == decision_id), None)
                 if view is not None else None)
        at = (shown.deadline_at if shown is not None  # else closed: as it closed
              else conn.execute(_DEADLINE, {"id": decision_id}).scalar()
              if decision_id is not None else None)
        when = at.isoformat() if at is not None else row.context["deadline"]
        ctx["deadline"] = dict(format_deadline(when, tz), short=short_time(when, tz, now),
                               left=time_left(when, now))
        if (at is not None and seat is not None and to_player and "deadlines" in ctx
                and game is not None and game.policy.banked):
            ctx["clock_left"] = clock_text(clock_seconds_left(conn, game, seat, at, utcnow()))
            if ctx["deadline"]["left"]:  # one rounding: the subject's time is the clock's
                ctx["deadline"]["left"] = ctx["clock_left"]
    if row.template == EmailTemplate.DIGEST:
        ctx["due"] = due_summary(row.context.get("games") or [], now)
    merged: list[int] = []
    if row.template == EmailTemplate.DECISION and row.seat_id is not None:
        merged = list(conn.execute(_HELD, {"seat_id": row.seat_id, "rcpt": row.rcpt})
                      .scalars())
    ctx["held"] = len(merged)
    extra = EXTRA_CONTEXT.get(row.template)
    if extra is not None:
        ctx.update(extra(s, row))
    thread = thread_of(s, row)
    if row.context.get("in_reply_to"):  # an answer to a reply: in the reply's thread
        thread.append(row.context["in_reply_to"])
    return build_message(row, game, ctx, thread), seen, merged


def table_talk(events: Sequence[Any]) -> tuple[list[Any], int]:
    """The messages to the table among ``events`` (what the reader may see since their
    last email) that an email shows first, each whole: the latest SAID_MESSAGES of them,
    fewer where they would pass SAID_CHARS; and how many earlier ones it leaves to the
    game page. The list of other events (``_events``, the latest ten) never cuts one."""
    said = [e for e in events if e.kind == TALK_EVENT]
    shown: list[Any] = []
    chars = 0
    for e in reversed(said):
        size = len(str((e.data or {}).get("text", "")))
        if shown and (len(shown) == SAID_MESSAGES or chars + size > SAID_CHARS):
            break
        shown.append(e)
        chars += size
    return shown[::-1], len(said) - len(shown)


def unpayable(spec: dict[str, Any]) -> bool:
    """Whether a link spec is a one-click choice the reader cannot pay for now (its
    ``effect`` says ``affordable: false``, see ``engine.core``'s ``choice_effect``): the
    email shows it greyed, with the reason, and mints no token for it."""
    return (spec.get("kind") == TokenKind.ACTION
            and (spec.get("effect") or {}).get("affordable") is False)


def reply_to(s: Session, row: Outbox, game: Game | None, seat: Seat | None,
             to_player: bool) -> str | None:
    """The Reply-To of an email to a seat's own player about their game: a fresh reply
    address (``games+r.<token>@`` the sender's mailbox or ``play+<token>@`` the inbound
    domain: ``inbound.Addresses``) whose token names the seat, and the
    decision the email asks (answering it plays that decision: ``services.replies``).
    None for any other email, or with replies off (``REPLIES``)."""
    config = current_app.config
    if game is None or seat is None or not to_player or not config.get("REPLIES", True):
        return None
    decision_id = (row.context.get("decision_id")
                   if row.template == EmailTemplate.DECISION else None)
    (raw,) = mint_many(s, [{"kind": TokenKind.REPLY, "game_id": game.id, "seat_id": seat.id,
                            "decision_id": decision_id, "action": None}],
                       make=new_reply_token)
    return Addresses.of(config).reply(raw)


def clock_seconds_left(conn: Connection, game: Any, seat: Any, deadline: datetime,
                       now: datetime) -> float:
    """The running time on the seat's clock from ``now`` until ``deadline``: from the
    end of its vacation, standing still where the game's policy stops it (its quiet
    hours, the weekends: the address's settings are read only then)."""
    policy = game.policy
    stops = (policy.running(clock_stops(conn, [seat], policy.pause_weekends)[0])
             if policy.stops_clocks else Stops(UTC))
    start = max(now, seat.vacation_until) if seat.vacation_until else now
    return running_between(start, deadline, stops)


def deadlines_of(view: SeatView, tz: str) -> list[dict[str, Any]]:
    """Who the game waits for and until when, in zone ``tz`` and UTC, from the reader's
    view (read at sending): by deadline, then seat; ``bot``: a bot plays that seat
    (nobody to remind, and its deadline is the clock's, not a person's)."""
    return [{"name": view.seats[d.position].name, "kind": d.kind, "decision_id": d.id,
             "bot": view.seats[d.position].bot,
             **format_deadline(d.deadline_at.isoformat(), tz)}
            for d in sorted(view.open, key=_by_deadline) if d.deadline_at is not None]


def _by_deadline(d: OpenDecision) -> tuple[datetime, int]:
    return (d.deadline_at or datetime.max.replace(tzinfo=UTC), d.position)


def open_deadlines(s: Session, game: Game, seats: Sequence[Any],
                   tz: str) -> list[dict[str, Any]]:
    """Who the game waits for and until when, in zone ``tz`` and UTC, read at sending
    (``seats``: by position, objects or rows); ``bot``: a bot plays that seat (nobody to
    remind, and its deadline is the clock's, not a person's)."""
    rows = s.connection().execute(_OPEN_DECISIONS, {"game_id": game.id}).all()
    return [{"name": seats[d.position].name, "kind": d.kind, "decision_id": d.id,
             "host_reminded_at": d.host_reminded_at, "bot": bool(seats[d.position].bot),
             **format_deadline(d.deadline_at.isoformat(), tz)}
            for d in rows if d.deadline_at is not None]


def standing(mod: Any, state: Any, position: int | None,
               names: list[str]) -> dict[str, Any] | None:
    """Where the reader finished, for the first line of the result email: their
    ``place`` and the names of those who share it (``with``); None for a game that does
    not rank its players (``engine.core.Ranks``) or that ended without a winner."""
    ranks = getattr(mod, "places", None)
    found: list[int] = ranks(state) if ranks is not None and position is not None else []
    if position is None or position >= len(found):
        return None
    place = found[position]
    return {"place": place, "with": [names[i] for i, p in enumerate(found)
                                     if p == place and i != position]}


def due_summary(games: list[dict[str, Any]], now: datetime) -> dict[str, Any]:
    """For the first line of a digest: how many of its turns fall due before midnight in
    the reader's zone (``today``) and the first deadline, written short (``next``)."""
    today, first = 0, None
    for g in games:
        for turn in g["turns"]:
            if not turn.get("deadline"):
                continue
            at = datetime.fromisoformat(turn["deadline"])
            zone = ZoneInfo(g["tz"])
            today += at.astimezone(zone).date() == now.astimezone(zone).date()
            if first is None or at < first[0]:
                first = (at, g["tz"])
    return {"today": today, "next": short_time(first[0], first[1], now) if first else ""}


def mint_links(s: Session, specs: list[dict[str, Any]], row: Outbox) -> list[str]:
    """Mint a token for each link spec of ``row`` (in one statement); their URLs. A spec
    is a ``kind`` of token (``TokenKind``) with what the token names: ``decision_id``
    and ``action`` (an admin link's action is the address it went to)."""
    # An email about no one game (the list of one's games) has no game; a token names one:
    # one of the recipient's, stored with the email.
    # A host link names the address it went to: who presses its buttons (play again).
    game_id = row.game_id or row.context.get("token_game")
    # a spec may name its own game and seat (a digest links to several games)
    raws = mint_many(s, [{"kind": spec["kind"], "game_id": spec.get("game_id", game_id),
                          "seat_id": spec.get("seat_id", row.seat_id),
                          "decision_id": spec.get("decision_id"),
                          "action": spec.get("action") or (
                              {"address": row.rcpt} if spec["kind"] == TokenKind.ADMIN
                              else None)}
                         for spec in specs])
    base = current_app.config["BASE_URL"].rstrip("/")
    return [base + LINK_PATHS[spec["kind"]] + raw for spec, raw in zip(specs, raws, strict=True)]


def game_name(game: Game | None, seats: Sequence[Any]) -> str:
    """What every email of a game is called: its title (set at creation, see
    ``default_title``; computed the same way for a game made before titles were)."""
    if game is None:
        return "pbem"
    return game.title or default_title(get_game(game.engine), [x.name for x in seats])


def default_title(game: Any, names: list[str]) -> str:
    """The name of a game without a title: the game and its players, fixed at creation
    so that every email of the game keeps one subject (mail programs thread on it)."""
    title = f"{game.TITLE}: {', '.join(names)}"
    return title if len(title) <= 100 else title[:99].rsplit(" ", 1)[0] + "…"


# The Subject of each kind of email about no one game (translated when it is written).
SUBJECTS = {EmailTemplate.MY_GAMES: mark("Your games on pbem"),
            EmailTemplate.DIGEST: mark("Your daily digest")}


def build_message(row: Outbox, game: Game | None, ctx: dict[str, Any],
                  thread: list[str] | None = None) -> Outgoing:
    """Render the .txt and .html twins of ``row.template`` (in the language of the
    ``force_locale`` around the call) and put them in a message whose every header is safe
    (see ``pbem.mail.headers``)."""
    lang = language()
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    # each part's variables, with the context processors' as render_template adds them
    # (once: the narration's module is made with the same)
    text_vars = dict(ctx, memo_scope=memo_scope(False))
    html_vars = dict(ctx, ctx_language=lang, inline_css=True, ui=ui_inline,
                     memo_scope=memo_scope(True))
    app.update_template_context(text_vars)
    app.update_template_context(html_vars)
    parts: tuple[dict[str, Any], dict[str, Any]] = ({}, {})
    if game is not None:  # the game's narration, made once per part and said once (n)
        narration = EmailNarration(game, text_vars, html_vars)
        parts = ({"n": narration.part(False)}, {"n": narration.part(True)})
    text = _render(app, f"emails/{row.template}.txt", {**text_vars, **parts[0]}).lstrip("\n")
    headline = text.split("\n", 1)[0].strip()
    html = _render(app, f"emails/{row.template}.html",
                   {**html_vars, "headline": headline, **parts[1]})
    # an email about no one game is called by its kind, the same every time (one thread)
    subject = (game_name(game, ctx.get("seats") or []) if game is not None
               else gettext(SUBJECTS[row.template]) if row.template in SUBJECTS
               else headline)
    data, names = wire_message(
        lambda msg: write_headers(msg, row, game, subject, ctx["unsubscribe"], thread, lang,
                                  ctx.get("reply_to")),
        text, html)
    check_header_block(data, names)
    return Outgoing(return_path(row), row.to_addr, data)


def _render(app: Flask, name: str, variables: dict[str, Any]) -> str:
    """``render_template(name, **variables)`` for ``variables`` that have the context
    processors' already (``update_template_context``: not run twice a part)."""
    template = app.jinja_env.get_template(name)
    before_render_template.send(app, _async_wrapper=app.ensure_sync, template=template,
                                context=variables)
    rendered = template.render(variables)
    template_rendered.send(app, _async_wrapper=app.ensure_sync, template=template,
                           context=variables)
    return rendered


def return_path(row: Outbox) -> str:
    """The envelope sender of ``row``'s email: its own VERP address (``games+b.<id>.<tag>@``
    the sender's mailbox or ``bounce+<id>-<tag>@`` the inbound domain: a delivery report
    names the email, ``services.bounces``), or with ``BOUNCES`` off the From address."""
    config = current_app.config
    if not config.get("BOUNCES", True) or row.id is None:
        return str(config["MAIL_FROM_PAIR"][1])
    return Addresses.of(config).bounce(row.id, config["SECRET_KEY"])


# What ``MIMEMultipart("alternative")`` with two quoted-printable UTF-8 text parts writes
# with the ``WIRE`` policy, written here directly: the generator flattens each part into
# a buffer, then searches both for the boundary it picked, most of a message's MIME cost.
_PART_HEAD = {subtype: (f'Content-Type: text/{subtype}; charset="utf-8"\r\n'
                        "MIME-Version: 1.0\r\n"
                        "Content-Transfer-Encoding: quoted-printable\r\n\r\n").encode("ascii")
              for subtype in ("plain", "html")}
_LINE_END = re.compile(rb"\r\n|\r|\n")  # the generator's line ends (email.generator.NLCRE)


def wire_message(write: Callable[[Message[str, Any]], None], text: str,
                 html: str) -> tuple[bytes, set[str]]:
    """The bytes of a multipart/alternative message of ``text`` and ``html`` (as
    ``MIMEMultipart.as_bytes(policy=WIRE)`` writes it) whose other headers ``write`` sets
    (after Content-Type and MIME-Version, as on a ``MIMEMultipart``), and the set of its
    header names in lower case (for ``check_header_block``)."""
    parts = [_PART_HEAD["plain"] + _qp(text), _PART_HEAD["html"] + _qp(html)]
    # a quoted-printable body cannot hold "==" (an "=" is written "=3D"), but check anyway
    while True:
        boundary = "=" * 15 + f"{random.randrange(sys.maxsize):019d}" + "=="
        delimiter = b"--" + boundary.encode("ascii")
        if not any(delimiter in part for part in parts):
            break
    msg: Message[str, Any] = Message(policy=compat32)
    msg["Content-Type"] = f'multipart/alternative; boundary="{boundary}"'
    msg["MIME-Version"] = "1.0"
    write(msg)
    head = b"".join(WIRE.fold_binary(name, value) for name, value in msg.raw_items())
    data = b"".join((head, b"\r\n", delimiter, b"\r\n", parts[0], b"\r\n", delimiter,
                     b"\r\n", parts[1], b"\r\n", delimiter, b"--\r\n"))
    return data, {name.lower() for name, _ in msg.raw_items()}


def _qp(body: str) -> bytes:
    """A text part's body, quoted-printable (readable in any mail program's source view),
    by ``binascii`` (C) instead of ``email.quoprimime`` (a Python loop over every
    character), with CRLF line ends; no line end after the last line, as the generator.

    Line by line, each line's encoding kept (``_QP_LINES``): ``b2a_qp`` encodes a line
    and its line end the same wherever the line stands (it starts every line afresh), so
    the lines joined are the body's encoding, byte for byte. Most lines of an email
    (a card, a style, a sentence) are in many emails; the lines with a link's token are
    not. An HTML part is about 40 kB in 180 lines, and ``b2a_qp`` of all of it cost
    more than looking up the lines and encoding the new ones."""
    if "\r" in body:  # not from our templates; the generator's rule for any line end
        return _LINE_END.sub(b"\r\n", binascii.b2a_qp(body.encode("utf-8"), istext=True))
    lines = body.split("\n")
    last = lines.pop()
    kept = _QP_LINES
    out = []
    for line in lines:
        encoded = kept.get(line)
        if encoded is None:
            encoded = _qp_line(line + "\n")
            if len(kept) >= _QP_LINES_KEPT:
                kept.clear()
            kept[line] = encoded
        out.append(encoded)
    out.append(_qp_line(last))  # no line end: b2a_qp treats the very end on its own
    return b"".join(out)


def _qp_line(text: str) -> bytes:
    # the same, 25 times quicker than the regex
    return binascii.b2a_qp(text.encode("utf-8"), istext=True).replace(b"\n", b"\r\n")


# Lines of text parts and their encodings (``_qp``): immutable values, a dictionary read
# and written under the GIL, emptied when full.
_QP_LINES: dict[str, bytes] = {}
_QP_LINES_KEPT = 5_000
