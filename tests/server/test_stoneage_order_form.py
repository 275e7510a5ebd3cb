"""The order of Stone Age's use phase on the game page (issue 20, 1a): a few orders as
choices, the sensible one first; many as a place for each position, the sensible order
filled in; what the player enters is recorded exactly, or refused with the reason and
nothing written; the orders read in the player's language."""

from __future__ import annotations

import dataclasses
import re

import pytest

from engine.stoneage import rules
from tests.engine.stoneage_builders import board, build
from tests.server.conftest import start_game
from tests.server.helpers import PLAYERS, forms, snapshot, text_of
from tests.server.test_exact_moves import Position


@pytest.fixture
def game(app, client, inbox):
    created = start_game(app, players=PLAYERS[:2], game="stoneage")
    return Position(app, client, inbox, created.game_id)


def few_orders():
    """Seat 0 with a tool: the Quarry and the Hunting grounds, in either order."""
    return build(board(tools=(1,)), board(), phase="use", turn=0,
                 spots=[("hunt", 0, 1), ("quarry", 0, 2), ("hunt", 1, 1)])


def many_orders():
    """Seat 0 with a tool: four rolls (24 orders) and a building after them."""
    return build(board(tools=(1,)), board(), phase="use", turn=0,
                 spots=[("hunt", 0, 1), ("forest", 0, 1), ("clay", 0, 1), ("river", 0, 1),
                        ("building1", 0, 1), ("hunt", 1, 1)])


def decision_form(html: str):
    (form,) = [f for f in forms(html) if f.attrs.get("id") == "decision"]
    return form


def selected(html: str) -> list[str]:
    """The option chosen in each ``order.word`` select, in page order."""
    return re.findall(r'<option value="(\w+)" selected>', html)


def test_a_few_orders_are_offered_as_choices_the_sensible_one_first(app, game, client):
    seat = game.put(few_orders())
    html = client.get(game.pages[seat]).get_data(as_text=True)
    form = decision_form(html)
    assert form.radios["choice"] == ["order quarry hunt", "order hunt quarry"]
    assert "Use Quarry, then Hunting grounds" in html
    status, html = game.post(seat, {"choice": "order hunt quarry"})
    assert status == 200, text_of(html, "error")
    assert game.recorded()[-1] == {"kind": "order", "places": ["hunt", "quarry"]}


def test_many_orders_are_a_place_for_each_position_with_the_sensible_order_filled_in(
        app, game, client):
    state = many_orders()
    assert len(rules.legal_actions(state, 0)) == 24
    seat = game.put(state)
    html = client.get(game.pages[seat]).get_data(as_text=True)
    form = decision_form(html)
    assert form.hidden["kind"] == "order" and "choice" not in form.radios
    assert html.count('<select name="order.word">') == 5
    assert selected(html) == ["river", "clay", "forest", "hunt", "building1"]
    places = ["hunt", "forest", "river", "clay", "building1"]
    status, html = game.post(seat, {"kind": "order", "order.word": places})
    assert status == 200, text_of(html, "error")
    assert game.recorded()[-1] == {"kind": "order", "places": places}


@pytest.mark.parametrize(("places", "refusal"), [
    (["building1", "river", "clay", "forest", "hunt"],
     "That order can bring you nothing that this one cannot: River, then Clay pit, then "
     "Forest, then Hunting grounds, then building stack 1. Choose it, or another order "
     "offered."),
    (["river", "river", "forest", "hunt", "building1"],
     "You chose River twice: choose each of your places once."),
])
def test_an_order_not_offered_is_refused_with_the_reason_and_kept_on_the_form(
        app, game, places, refusal):
    seat = game.put(many_orders())
    before = snapshot(app)
    status, html = game.post(seat, {"kind": "order", "order.word": places})
    assert (status, text_of(html, "error")) == (400, refusal)
    assert snapshot(app) == before
    assert selected(html) == places  # the form as it was entered


def test_the_orders_read_in_german(make_app, inbox_for=None):
    from tests.server.helpers import Inbox

    app = make_app(FOLLOW_UP_MINUTES=0)
    inbox = Inbox(app)
    players = [dataclasses.replace(PLAYERS[0], language="de"), PLAYERS[1]]
    created = start_game(app, players=players, game="stoneage")
    client = app.test_client()
    game = Position(app, client, inbox, created.game_id)
    seat = game.put(few_orders())
    html = client.get(game.pages[seat]).get_data(as_text=True)
    assert "In welcher Reihenfolge nutzt du deine Orte?" in html
    assert "Steinbruch, dann Jagdgründe nutzen" in html
