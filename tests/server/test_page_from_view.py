"""The game page built from the seat's view (issue 34, point 1) is the page it was: for
positions of both games, from every seat and a spectator's, the HTML of
``pages/game.html`` rendered from ``services.reading._page_data`` is the same as that
rendered from ``rows_page_data`` below, a copy of ``_page_data`` as it read the rows
itself before the view (the safety net of the move, as test_emails_from_view is the
emails'; to be deleted with them once the templates render from the view)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from flask import render_template
from freezegun import freeze_time
from sqlalchemy import bindparam
from sqlalchemy import select as sa_select
from sqlmodel import Session

from engine.core import Action, Effect
from engine.registry import get_game
from pbem import localize, mail, services
from pbem.db import read_scope
from pbem.i18n import language
from pbem.kinds import GameStatus
from pbem.models import Decision, Game, Seat, table_of
from pbem.services import reading
from pbem.services.plumbing import load_state, seats_of
from pbem.services.reading import _log, _zone, variants_of
from pbem.services.viewing import seat_clocks
from pbem.web.common import speak
from tests.engine.stoneage_builders import board, build
from tests.server.conftest import GAME_SEED, start_game
from tests.server.helpers import PLAYERS, Table
from tests.server.test_exact_moves import Position

# The game's open decisions, as plain rows (attributes as a Decision's).
_OPEN_DECISIONS = (sa_select(*table_of(Decision).columns)
                   .where(table_of(Decision).c.game_id == bindparam("game_id"),
                          table_of(Decision).c.closed_at.is_(None))
                   .order_by(table_of(Decision).c.id))


def rows_page_data(s: Session, game: Game, seat: Seat | None,
                   with_log: bool = True) -> dict[str, Any]:
    """``reading._page_data`` as it was before the seat's view (issue 34)."""
    seats = seats_of(s, game.id)
    position = seat.position if seat else None
    decisions = s.connection().execute(_OPEN_DECISIONS, {"game_id": game.id}).all()
    mine = next((d for d in decisions if seat and d.seat_id == seat.id and not seat.bot),
                None)
    mod = get_game(game.engine)
    state = load_state(mod, game) if game.state else None
    legal: list[Action] = []
    choices: list[Action] = []
    if mine is not None and position is not None:
        legal = mod.legal_actions(state, position)
        choices = mod.email_choices(state, position)

    def effect(action: Action) -> Effect:
        return mod.choice_effect(state, position, action) if position is not None else {}

    log = _log(s, game, mod, seat) if with_log else []
    clocks = seat_clocks(s, game, seats, decisions)
    tr = localize.translation_for(mod, state, seat.language if seat else language())
    return {
        "game": game, "seat": seat, "seats": seats, "card": localize.lookup(mod, state, tr),
        "view": localize.view(mod, mod.view(state, position), tr) if state is not None else None,
        "open": decisions, "decision": mine, "legal": legal, "log": log, "readonly": False,
        "clocks": clocks, "my_clock": clocks.get(position) if position is not None else None,
        "choices": choices, "log_zone": str(_zone(seat)), "effect": effect,
        "live": game.status in (GameStatus.ACTIVE, GameStatus.INVITING),
        "variants": lambda action: variants_of(mod, state, position, action),
        "plan_form": (mod.plan_form(state, position) if hasattr(mod, "plan_form")
                      and state is not None and position is not None
                      and game.status == GameStatus.ACTIVE else None),
        "standing_form": (mod.standing_form(state, position)
                          if hasattr(mod, "standing_form") and state is not None
                          and position is not None
                          and game.status == GameStatus.ACTIVE else None),
    }


def pages(app, game_id: str) -> Iterator[tuple[str, str, str]]:
    """For each seat and a spectator: who reads, the page from the rows, the page now."""
    with app.app_context(), read_scope() as s, freeze_time(datetime.now(UTC)):
        game = s.get(Game, game_id)
        for seat in [*seats_of(s, game_id), None]:
            raw = "r" * 43 if seat is not None else ""
            html = []
            for build_data in (rows_page_data, reading._page_data):
                with app.test_request_context(f"/g/{raw}"):
                    if seat is not None:
                        speak(seat.language)
                    data = build_data(s, game, seat)
                    data["take_back"], data["stamp"] = None, None
                    html.append(render_template("pages/game.html", data=data, raw=raw))
            yield (seat.name if seat else "spectator"), *html


def assert_same_pages(app, game_id: str) -> list[str]:
    """The pages are the pages they were; the pages."""
    seen = []
    for who, before, now in pages(app, game_id):
        assert now == before, who
        seen.append(now)
    assert len(seen) > 1
    return seen


@pytest.mark.parametrize("moves", [0, 1, 5])
def test_a_cavemen_page_is_the_page_it_was(table, moves):
    for _ in range(moves):
        table.step()
    assert_same_pages(table.app, table.game_id)


def test_an_abandoned_cavemen_page_is_the_page_it_was(app, table):
    table.step()
    with app.app_context():
        services.abandon_game(table.admin)
    assert_same_pages(app, table.game_id)


def policy_game(app, client, inbox, options: dict) -> Table:
    """A started Cavemen game of the tests' players with ``options`` for its policy."""
    with app.app_context():
        created = services.create_game("cavemen", list(PLAYERS), options, seed=GAME_SEED,
                                       title="", confirm_by_email=False, start=True)
        mail.deliver_due()
    return Table(app, client, inbox, created.game_id, created.admin_token,
                 bot_seed=GAME_SEED)


POLICIES = {
    "time bank": {"time_control": "bank", "bank_days": 3, "increment_hours": 24,
                  "cap_days": 4},
    "clocks stop at weekends": {"hours_per_decision": 48, "pause_weekends": True},
}


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_the_clocks_of_a_page_are_those_it_had(app, client, inbox, policy):
    table = policy_game(app, client, inbox, POLICIES[policy])
    assert_same_pages(app, table.game_id)
    for _ in range(3):
        table.step()
    shown = assert_same_pages(app, table.game_id)
    assert all('id="clocks"' in html for html in shown)


def test_a_paused_page_is_the_page_it_was(app, table):
    table.step()
    with app.app_context():
        services.pause_game(table.admin)
    assert_same_pages(app, table.game_id)


def test_the_page_of_a_seat_a_bot_plays_is_the_page_it_was(app, table):
    decision = table.open()
    with app.app_context():
        services.set_bot(table.admin, decision.position, "heuristic")
    assert_same_pages(app, table.game_id)


STONE_AGE = {
    "placing": build(board(), board(cards=("G01", "G13")), phase="place", turn=0),
    "using": build(board(tools=(1,)), board(), phase="use", turn=0,
                   spots=[("hunt", 0, 1), ("quarry", 0, 2), ("hunt", 1, 1)]),
}


@pytest.mark.parametrize("position", sorted(STONE_AGE))
def test_a_stone_age_page_is_the_page_it_was(app, client, inbox, position):
    created = start_game(app, players=PLAYERS[:2], game="stoneage")
    Position(app, client, inbox, created.game_id).put(STONE_AGE[position])
    assert_same_pages(app, created.game_id)
