"""The emails built from the seat's view (issue 34, point 1) are the emails they were:
every email of a game (decision, reminder, game_started, notice, result, the answer to
a reply, and a digest) for positions of both games is rendered by ``compose.render`` and
by ``rows_render`` below, a copy of ``render`` as it read the rows itself before the
view, and both its text and its HTML part are the same, byte for byte, once the random
parts (the links' tokens) are set aside (the safety net of the move; to be deleted with
it once nothing renders from the rows)."""

from __future__ import annotations

import email
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask import current_app
from flask_babel import force_locale
from freezegun import freeze_time
from sqlalchemy import bindparam
from sqlalchemy import select as core_select
from sqlmodel import Session, col, select

from engine.registry import get_game
from pbem import localize, mail, services
from pbem.commands import listed_commands
from pbem.db import get_engine, session_scope
from pbem.i18n import clock_text, format_deadline, language, short_time, time_left
from pbem.kinds import EmailTemplate, GameStatus, OutboxStatus, TokenKind
from pbem.mail import compose
from pbem.mail.backends import Outgoing
from pbem.mail.compose import (
    EVENTS_SINCE,
    EXTRA_CONTEXT,
    NEWS_TEMPLATES,
    build_message,
    clock_seconds_left,
    due_summary,
    mint_links,
    reply_to,
    standing,
    table_talk,
    unpayable,
)
from pbem.mail.headers import thread_of
from pbem.models import Decision, Game, Outbox, Seat, id_column, table_of, utcnow
from pbem.services.replies import _answer
from tests.engine.stoneage_builders import board, build
from tests.server.conftest import start_game
from tests.server.helpers import PLAYERS, Inbox, open_decisions
from tests.server.test_address_settings import save, unsubscribe_link
from tests.server.test_digest import first_player_passes
from tests.server.test_exact_moves import Position
from tests.server.test_page_from_view import POLICIES, policy_game
from tests.server.timekit import ANN, at, new_game, tick

# --------------------------------------------------------------------------- the copy

_SEATS = (select(*table_of(Seat).c).where(Seat.game_id == bindparam("game_id"))
          .order_by(col(Seat.position)))
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


def rows_open_deadlines(s: Session, game: Game, seats: Any, tz: str) -> list[dict[str, Any]]:
    """``compose.open_deadlines`` as it was before the seat's view (issue 34)."""
    rows = s.connection().execute(_OPEN_DECISIONS, {"game_id": game.id}).all()
    return [{"name": seats[d.position].name, "kind": d.kind, "decision_id": d.id,
             "host_reminded_at": d.host_reminded_at, "bot": bool(seats[d.position].bot),
             **format_deadline(d.deadline_at.isoformat(), tz)}
            for d in rows if d.deadline_at is not None]


def rows_render(s: Session, row: Outbox, game: Game | None, seat: Seat | None,
                to_player: bool) -> tuple[Outgoing, int | None, list[int]]:
    """``compose.render`` as it was before the seat's view (issue 34)."""
    specs = row.context["links"]
    linked = {name: spec for name, spec in specs.items() if not unpayable(spec)}
    lasting = ([{"kind": TokenKind.MY_GAMES, "seat_id": None,
                 "action": {"address": row.rcpt, "lasting": True}}]
               if row.game_id is not None and to_player else [])
    *urls, unsubscribe = mint_links(
        s, [*linked.values(), *lasting, {"kind": TokenKind.UNSUBSCRIBE,
                                         "action": {"address": row.rcpt, "of": row.template}}],
        row)
    my_games = urls.pop() if lasting else None
    links = dict(zip(linked, urls, strict=True))
    ctx: dict[str, Any] = {"ctx": row.context, "links": links, "game": game, "seat": seat,
                           "base_url": current_app.config["BASE_URL"],
                           "unsubscribe": unsubscribe, "my_games": my_games, "seats": [],
                           "reply_to": reply_to(s, row, game, seat, to_player)}
    seen = None
    conn = s.connection()
    now = datetime.now(UTC)
    if game is not None:
        ctx["seats"] = conn.execute(_SEATS, {"game_id": game.id}).all()
    ctx["names"] = [x.name for x in ctx["seats"]]
    ctx["choices"] = [dict(spec, name=name, url=links.get(name))
                      for name, spec in specs.items() if spec.get("kind") == TokenKind.ACTION]
    if game is not None and game.state:
        mod = get_game(game.engine)
        state = mod.from_json(json.loads(game.state))
        position = seat.position if seat else None
        tr = localize.translation_for(mod, state, language())
        ctx["view"] = localize.view(mod, mod.view(state, position), tr)
        ctx["card"] = localize.lookup(mod, state, tr)
        since = seat.seen_event_seq if seat else 0
        events = conn.execute(EVENTS_SINCE, {"game_id": game.id, "since": since}).all()
        ctx["events"] = [e for e in events
                         if e.visible_to is None or position in (e.visible_to or [])]
        ctx["said"], ctx["said_earlier"] = table_talk(ctx["events"])
        if row.template in NEWS_TEMPLATES:
            seen = game.event_seq
        if row.template == EmailTemplate.RESULT:
            ctx["standing"] = standing(mod, state, position, ctx["names"])
        if row.template == EmailTemplate.DECISION and position is not None:
            listing = listed_commands(mod, state, position, language())
            ctx["commands"], ctx["commands_more"] = list(listing.lines), listing.more
            ctx["commands_example"] = listing.example
    tz = seat.timezone if seat is not None and to_player else "UTC"
    if game is not None and game.status == GameStatus.ACTIVE and game.paused_at is None:
        ctx["deadlines"] = rows_open_deadlines(s, game, ctx["seats"], tz)
    if "deadline" in row.context:
        decision_id = row.context.get("decision_id")
        at = (conn.execute(_DEADLINE, {"id": decision_id}).scalar()
              if decision_id is not None else None)
        when = at.isoformat() if at is not None else row.context["deadline"]
        ctx["deadline"] = dict(format_deadline(when, tz), short=short_time(when, tz, now),
                               left=time_left(when, now))
        if (at is not None and seat is not None and to_player and "deadlines" in ctx
                and game is not None and game.policy.banked):
            ctx["clock_left"] = clock_text(clock_seconds_left(conn, game, seat, at, utcnow()))
            if ctx["deadline"]["left"]:
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
    if row.context.get("in_reply_to"):
        thread.append(row.context["in_reply_to"])
    return build_message(row, game, ctx, thread), seen, merged


# --------------------------------------------------------------------------- comparing

# a link's token (a page's, a one-click choice's, the unsubscribe link's...): random
TOKEN = re.compile(r"(/(?:a|g|admin|invite|host/confirm|handover|u|my)/)[A-Za-z0-9_-]{8,}")


def parts(message: bytes) -> tuple[str, str]:
    """The text and the HTML part of a message, their tokens set aside."""
    msg = email.message_from_bytes(message)
    text, html = (TOKEN.sub(r"\1TOKEN", p.get_payload(decode=True).decode("utf-8"))
                  for p in msg.walk() if p.get_content_maintype() == "text")
    return text, html


def rendered(app, row_id: int, how) -> tuple[tuple[str, str], int | None, list[int]]:
    """Row ``row_id`` rendered by ``how`` as the mail loop renders it (in the reader's
    language), in a transaction rolled back after it (its tokens vanish)."""
    with Session(get_engine(app), expire_on_commit=False) as s:
        try:
            row, game, seat, to_player = mail.load_row(s, row_id)
            with force_locale(seat.language if seat is not None and to_player
                              else row.language):
                message, seen, merged = how(s, row, game, seat, to_player)
        finally:
            s.rollback()
    return parts(message.data), seen, merged


def assert_same_emails(app, game_id: str | None = None,
                       template: str | None = None) -> dict[str, int]:
    """Every email of the game (or of kind ``template``), pending or sent, is the email
    it was; how many of each kind there were."""
    with app.app_context(), freeze_time(datetime.now(UTC)):
        with session_scope() as s:
            query = select(Outbox.id, Outbox.template).order_by(col(Outbox.id))
            if game_id is not None:
                query = query.where(Outbox.game_id == game_id)
            if template is not None:
                query = query.where(Outbox.template == template)
            rows = s.exec(query).all()
        kinds: dict[str, int] = {}
        for row_id, kind in rows:
            before = rendered(app, row_id, rows_render)
            now = rendered(app, row_id, compose.render)
            assert now[0][0] == before[0][0], (kind, row_id, "text")
            assert now[0][1] == before[0][1], (kind, row_id, "html")
            assert now[1:] == before[1:], (kind, row_id)
            kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds
    return kinds


# --------------------------------------------------------------------------- the games


def test_the_emails_of_a_cavemen_game_are_the_emails_they_were(app, table):
    seen: dict[str, int] = {}
    for _ in range(6):  # each move's emails while they wait, then sent
        seen.update(assert_same_emails(app, table.game_id))
        table.step()
    with app.app_context():
        decision = table.open()
        assert services.send_reminder(decision.id, decision.deadline_at.replace(
            tzinfo=UTC) - timedelta(hours=1))
    seen.update(assert_same_emails(app, table.game_id))
    with app.app_context():
        services.abandon_game(table.admin)
    seen.update(assert_same_emails(app, table.game_id))
    assert {"decision", "game_started", "notice"} <= set(seen), seen


def test_the_emails_of_a_finished_cavemen_game_are_the_emails_they_were(app, table):
    for _ in range(400):
        if table.state().phase == "over":
            break
        table.step()
    assert {"decision", "result"} <= set(assert_same_emails(app, table.game_id))


def test_the_emails_of_a_paused_game_are_the_emails_they_were(app, table):
    table.step()
    with app.app_context():
        services.pause_game(table.admin)
    assert "notice" in assert_same_emails(app, table.game_id)


def test_the_emails_to_a_seat_a_bot_plays_are_the_emails_they_were(app, table):
    decision = table.open()
    with app.app_context():
        services.set_bot(table.admin, decision.position, "heuristic")
    table.step()
    assert_same_emails(app, table.game_id)


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_the_clocks_in_emails_are_those_they_had(app, client, inbox, policy):
    table = policy_game(app, client, inbox, POLICIES[policy])
    for _ in range(3):
        assert_same_emails(app, table.game_id)
        table.step()
    assert "decision" in assert_same_emails(app, table.game_id)


def test_the_answer_to_a_reply_is_the_email_it_was(app, table):
    table.step()
    decision = table.open()
    seat = table.seats[decision.position]
    with app.app_context():
        assert _answer(1, table.game_id, seat.id, "<reply@pbem.test>", [], ["hello"], None)
    assert "reply" in assert_same_emails(app, table.game_id)


def test_a_digest_is_the_email_it_was(app, client, frozen):
    created = new_game(app)
    save(client, unsubscribe_link(app, created.game_id, ANN.email), delivery="digest",
         digest_hour="8", timezone="Europe/Berlin")
    first_player_passes(app, client, created)
    at(frozen, 22.05)  # Tuesday 08:03 in Berlin
    tick(app)
    Inbox(app).deliver()
    assert assert_same_emails(app, template="digest") == {"digest": 1}


STONE_AGE = {
    "placing": build(board(), board(cards=("G01", "G13")), phase="place", turn=0),
    "using": build(board(tools=(1,)), board(), phase="use", turn=0,
                   spots=[("hunt", 0, 1), ("quarry", 0, 2), ("hunt", 1, 1)]),
    "using in many orders": build(board(tools=(1,)), board(), phase="use", turn=0,
                                  spots=[("hunt", 0, 1), ("forest", 0, 1), ("clay", 0, 1),
                                         ("river", 0, 1), ("building1", 0, 1),
                                         ("hunt", 1, 1)]),
}


@pytest.mark.parametrize("position", sorted(STONE_AGE))
def test_the_emails_of_a_stone_age_position_are_the_emails_they_were(app, client, inbox,
                                                                      position):
    created = start_game(app, players=PLAYERS[:2], game="stoneage")
    Position(app, client, inbox, created.game_id).put(STONE_AGE[position])
    (decision,) = open_decisions(app, created.game_id)
    with app.app_context():  # a decision email to the seat the position asks
        assert services.send_reminder(decision.id, decision.deadline_at.replace(
            tzinfo=UTC) - timedelta(hours=1))
    assert {"decision", "game_started"} <= set(assert_same_emails(app, created.game_id))
