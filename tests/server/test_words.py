"""Issue 32, point 11: words. Every count said with a noun goes through ngettext (checked
over the whole catalog); the feeding forecast says "fehlt dir 1" and "fehlen dir 2";
"already recorded" is good news, shown as a notice, not an error; two tools of the same
value are told apart on the tools form."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from flask import render_template_string

from pbem.web.common import speak
from tests.engine.stoneage_builders import board, last_use, rolling
from tests.server.conftest import start_game
from tests.server.helpers import PLAYERS, only_form, path_of, text_of
from tests.server.test_exact_moves import Position

CATALOG = (Path(__file__).parents[2] / "pbem" / "translations" / "de" / "LC_MESSAGES"
           / "messages.po")
COUNTED = re.compile(r"(?<!to )%\((num|n|count|days|hours|minutes)\)s (days|hours|minutes|players|"
                     r"characters|places|cards|people|resources|points|rounds|tools|emails|"
                     r"games|decisions|messages|seats|weeks)\b")


def test_every_count_said_with_a_noun_is_a_plural_entry_of_the_catalog():
    """(The top of a range, "1 to %(n)s resources", is always plural.)"""
    with CATALOG.open("rb") as f:
        catalog = read_po(f, locale="de")
    singular = [m.id for m in catalog if m.id and isinstance(m.id, str)]
    assert len(singular) > 500
    counted = [msg for msg in singular if COUNTED.search(msg)]
    assert counted == []


@pytest.mark.parametrize(("short", "said"), [(1, "also fehlt dir 1 Nahrung"),
                                             (2, "also fehlen dir 2 Nahrung")])
def test_the_feeding_forecast_agrees_with_its_count_in_german(app, short, said):
    forecast = {"need": 5, "born": 0, "food": 4 - short, "harvest": 1, "grown": 0,
                "short": short, "catch": 0, "resources": 0}
    with app.test_request_context():
        speak("de")
        text = render_template_string(
            '{% import "games/stoneage/narration.jinja" as n with context %}'
            '{{ n.feeding(f, card) }}', f=forecast,
            card=lambda key: {"id": key, "name": {"food": "Nahrung"}.get(key, key)})
    assert said in text


def test_a_second_post_of_a_decision_already_taken_says_so_as_a_notice(app, client, table):
    decision = table.open()
    url = path_of(next(iter(table.one_click(decision))))
    form = only_form(client.get(url).get_data(as_text=True))
    assert client.post(url, data=form.data()).status_code == 200
    again = client.post(url, data=form.data()).get_data(as_text=True)
    assert 'class="box notice" id="closed"' in again and "Already recorded" in again


def test_two_tools_of_the_same_value_are_told_apart_on_the_tools_form(app, client, inbox):
    created = start_game(app, players=PLAYERS[:2], game="stoneage")
    game = Position(app, client, inbox, created.game_id)
    seat = game.put(last_use(board(), board(tools=(1, 1)), place="forest",
                             rng=rolling((2,))))
    game.post(seat, {"choice": "order forest"})  # the roll of 2: a tool of 1 raises it
    html = client.get(game.pages[seat]).get_data(as_text=True)
    tools = text_of(html, "decision")
    assert "first tool of 1" in tools and "second tool of 1" in tools
