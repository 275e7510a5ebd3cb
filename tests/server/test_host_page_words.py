"""Issue 32, point 10: the host page says every kind of email in words (never a raw
label such as "news: table_talk"), and does not list the emails held back for decisions
already answered (a follow-up held for the game page, answered there)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from flask import render_template_string

from pbem.kinds import EmailTemplate
from pbem.web.common import speak
from tests.engine.stoneage_builders import board, last_use, rolling
from tests.server.conftest import start_game
from tests.server.helpers import PLAYERS
from tests.server.test_exact_moves import Position

SERVICES = Path(__file__).parents[2] / "pbem" / "services"


def headlines() -> set[str]:
    """Every news headline the services queue (literal or a module constant)."""
    found: set[str] = set()
    for path in SERVICES.glob("*.py"):
        text = path.read_text()
        found |= set(re.findall(r'"headline": "(\w+)"', text))
        found |= set(re.findall(r'notice_all\(s, game, "(\w+)"', text))
        found |= {m for m in re.findall(r'"(\w+)" if bot else "(\w+)"', text) for m in m}
        for const in re.findall(r'"headline": ([A-Z_]+)', text):
            found |= {constant(const)}
    return found


def constant(name: str) -> str:
    """The string a module constant of the package names, through aliases (A = B)."""
    for path in SERVICES.parent.rglob("*.py"):
        text = path.read_text()
        if literal := re.search(rf'^{name} = "(\w+)"', text, re.M):
            return literal.group(1)
        if alias := re.search(rf'^{name} = ([A-Z_]+)\b', text, re.M):
            return constant(alias.group(1))
    raise AssertionError(f"no constant {name}")


def test_every_headline_is_found():
    assert {"table_talk", "address_bouncing", "took_back", "seat_left",
            "game_paused"} <= headlines()


@pytest.mark.parametrize("lang", ["en", "de"])
def test_every_news_email_is_named_in_words_on_the_host_page(app, lang):
    with app.test_request_context():
        speak(lang)
        for h in sorted(headlines()):
            said = render_template_string(
                '{% import "pages/_labels.html" as label with context %}'
                "{{ label.news_kind(h) }}", h=h)
            assert said.strip() and said != h and "_" not in said, (h, said)


@pytest.mark.parametrize("lang", ["en", "de"])
def test_every_kind_of_email_is_named_in_words_on_the_host_page(app, lang):
    with app.test_request_context():
        speak(lang)
        for kind in EmailTemplate:
            said = render_template_string(
                '{% import "pages/_labels.html" as label with context %}'
                "{{ label.email_kind(k) }}", k=kind.value)
            # a kind without words falls through as its code (which "invitation" is in
            # English, so the German page tells)
            assert said.strip() and "_" not in said, (kind, said)
            assert lang == "en" or said != kind.value, (kind, said)


def test_the_host_page_does_not_list_a_held_email_of_an_answered_decision(app, client, inbox):
    created = start_game(app, players=PLAYERS[:2], game="stoneage")
    game = Position(app, client, inbox, created.game_id)
    seat = game.put(last_use(board(), board(tools=(2, 1)), place="forest",
                             rng=rolling((2,))))
    game.post(seat, {"choice": "order forest"})  # the tools follow: their email is held
    assert held_tools_emails(client, created) == 1  # while the tools decision is open
    status, _ = game.post(seat, {"choice": "no_tools"})
    assert status == 200
    assert held_tools_emails(client, created) == 0


def held_tools_emails(client, created) -> int:
    host = client.get(f"/admin/{created.admin_token}").get_data(as_text=True)
    rows = re.findall(r"<li data-status=[^>]*>.*?</li>", host)
    return sum(1 for r in rows if "add tools" in r and "held until" in r)
