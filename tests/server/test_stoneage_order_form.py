"""The order of Stone Age's use phase on the game page (issue 31, 1): the place to use
next (each placement left), the suggested whole order, or an order of the player's own
(a place for each position, the suggestion filled in); any order is accepted; what the
player enters is recorded exactly, or refused with the reason and nothing written; the
choices read in the player's language."""

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


def test_each_place_to_use_next_and_the_suggested_order_are_choices(app, game, client):
    seat = game.put(few_orders())
    html = client.get(game.pages[seat]).get_data(as_text=True)
    form = decision_form(html)
    assert form.radios["choice"] == ["use quarry", "use hunt", "order quarry hunt", "order"]
    assert "All in the suggested order: Quarry, then Hunting grounds" in html
    assert "Use Quarry next: 2 dice, about 1 Stone (1 per 5 pips)" in html
    status, html = game.post(seat, {"choice": "use hunt"})
    assert status == 200, text_of(html, "error")
    assert game.recorded()[-1] == {"kind": "use", "at": "hunt"}


def test_an_order_of_the_players_own_is_a_place_for_each_position_the_suggestion_filled_in(
        app, game, client):
    state = many_orders()
    assert len(rules.legal_actions(state, 0)) == 1 + 5 + 119
    seat = game.put(state)
    html = client.get(game.pages[seat]).get_data(as_text=True)
    assert html.count('<select name="order.word">') == 5
    assert selected(html) == ["river", "clay", "forest", "hunt", "building1"]
    places = ["building1", "hunt", "forest", "river", "clay"]  # the old engine refused it
    status, html = game.post(seat, {"choice": "order", "order.word": places})
    assert status == 200, text_of(html, "error")
    assert game.recorded()[-1] == {"kind": "order", "places": places}


@pytest.mark.parametrize(("places", "refusal"), [
    (["river", "river", "forest", "hunt", "building1"],
     "You chose River twice: choose each of your places once."),
    (["river", "forest", "hunt", "building1", "toolmaker"],
     "Choose only places where you still have people: River, Clay pit, Forest, Hunting "
     "grounds, building stack 1."),
])
def test_an_order_that_is_no_order_of_the_places_is_refused_with_the_reason_and_kept(
        app, game, places, refusal):
    seat = game.put(many_orders())
    before = snapshot(app)
    status, html = game.post(seat, {"choice": "order", "order.word": places})
    assert (status, text_of(html, "error")) == (400, refusal)
    assert snapshot(app) == before
    # the form as it was entered (a forged place has no option to show)
    assert selected(html) == [p for p in places if p != "toolmaker"]


def test_the_choices_read_in_german(make_app, inbox_for=None):
    from tests.server.helpers import Inbox

    app = make_app(FOLLOW_UP_MINUTES=0)
    inbox = Inbox(app)
    players = [dataclasses.replace(PLAYERS[0], language="de"), PLAYERS[1]]
    created = start_game(app, players=players, game="stoneage")
    client = app.test_client()
    game = Position(app, client, inbox, created.game_id)
    seat = game.put(few_orders())
    html = client.get(game.pages[seat]).get_data(as_text=True)
    assert "Welchen Ort nutzt du als Nächstes?" in html
    assert "Alle in der vorgeschlagenen Reihenfolge: Steinbruch, dann Jagdgründe" in html


def test_a_whole_order_chosen_as_offered_is_read_as_it_is_whatever_the_selects_hold(
        app, game):
    """The selects of "an order of my own" are sent with every choice: a whole order
    chosen among the offered ones takes none of their words."""
    seat = game.put(many_orders())
    status, html = game.post(seat, {"choice": "order river clay forest hunt building1",
                                    "order.word": ["hunt", "forest", "river", "clay",
                                                   "building1"]})
    assert status == 200, text_of(html, "error")
    assert game.recorded()[-1] == {"kind": "order", "places": ["river", "clay", "forest",
                                                               "hunt", "building1"]}
