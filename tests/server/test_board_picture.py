"""A board you can see (issue 31, point 4): the game page and the HTML email draw the
board as HTML and CSS, the same picture in both (classes on the page, inline styles in
the email): Stone Age's places with each player's people as a token of their colour and
mark, with the words a screen reader says; the cards and buildings with who stands there;
each player's tableau in their colour. Cavemen: the race to Fire, a track a tribe. The
players' marks tell every player apart, colour aside."""

from __future__ import annotations

import json
import re

import pytest

from engine import stoneage
from pbem import mail, services
from pbem.db import session_scope
from pbem.models import Game
from pbem.ui import marks, runs
from tests.engine.stoneage_builders import board, build
from tests.server.conftest import start_game
from tests.server.helpers import PLAYERS, open_decisions, path_of, text_of
from tests.server.test_stoneage_placement import start

# --------------------------------------------------------------------------- marks


@pytest.mark.parametrize(("names", "expected"), [
    (["Ann", "Bob", "Cy"], ["A", "B", "C"]),
    (["Anna", "Andreas", "Bernd"], ["Ann", "And", "B"]),
    (["Ann", "Ann"], ["1", "2"]),  # nothing tells them apart but their seats
    (["  ", "Bob"], ["?", "B"]),
    (['Bo&b "x"', "Bob"], ["1", "2"]),  # letters and digits only: no "Bo&"
    (["&Zoe", "Al"], ["Z", "A"]),
])
def test_each_player_gets_a_mark_that_tells_them_from_the_others(names, expected):
    assert marks(names) == expected


def test_runs_groups_consecutive_items_by_a_key_in_their_order():
    items = [{"a": {"at": "hunt"}, "n": 1}, {"a": {"at": "hunt"}, "n": 2},
             {"a": {"at": "hut"}, "n": 2}, {"a": {"at": "hunt"}, "n": 3}]
    assert [(k, [i["n"] for i in group]) for k, group in runs(items, "a.at")] == [
        ("hunt", [1, 2]), ("hut", [2]), ("hunt", [3])]


# --------------------------------------------------------------------------- Stone Age



def placed(app, created: services.Created) -> None:
    """Ann 3 on the Forest, Bob 2 in the Hut and 1 on the card costing 2; Cy to place
    (the position written into the game; the host's "remind now" mails Cy)."""
    names = [p.name for p in PLAYERS]
    state = build(board(), board(), board(), start=0, turn=2, round=3, players=names,
                  spots=[("forest", 0, 3), ("hut", 1, 2), ("card2", 1, 1)])
    # Cy's decision is the open one (Cy places first in this seed's first round)
    (decision,) = open_decisions(app, created.game_id)
    assert decision.position == 2
    with app.app_context(), session_scope() as s:
        s.get(Game, created.game_id).state = json.dumps(stoneage.to_json(state))
    with app.app_context():
        services.remind_now(created.admin_token, decision.id)
        mail.deliver_due()


def tokens(html: str) -> list[tuple[str, str]]:
    """The people tokens of a board picture, in order: the words a screen reader says,
    and the token's text (the player's mark and the count)."""
    return [(m.group(1), " ".join(m.group(2).split())) for m in re.finditer(
        r'role="img" aria-label="([^"]+)"[^>]*>([^<]+)</span>', html)]


@pytest.mark.parametrize("lang", ["en", "de"])
def test_the_board_shows_everyones_people_as_tokens_with_words_in_email_and_page(
        app, inbox, lang):
    created = start(app, lang)
    placed(app, created)
    email = [m for m in inbox.to(PLAYERS[2].email) if m.template == "reminder"][-1]
    page = app.test_client().get(path_of(email.link("/g/"))).get_data(as_text=True)
    words = {"en": [("Ann: 3 people on Forest", "A 3"), ("Bob: 2 people on Hut", "B 2"),
                    ("Bob: 1 person on the civilization card costing 2", "B 1")],
             "de": [("Ann: 3 Personen: Wald", "A 3"), ("Bob: 2 Personen: Hütte", "B 2"),
                    ("Bob: 1 Person: die Zivilisationskarte für 2", "B 1")]}[lang]
    for html in (email.html, page):
        assert tokens(html) == words
    # in the email, inline styles: the seat's colour; on the page, its class
    assert re.search(r'aria-label="Ann: [^"]+" style="[^"]*background:#b3261e', email.html)
    assert re.search(r'aria-label="Ann: [^"]+" class="tok pc-0"', page)
    # the tiles: every place of the board, in the board's order
    tiles = re.findall(r'<div[^>]*data-place="(\w+)"', page)
    assert tiles == ["hunt", "forest", "clay", "quarry", "river", "toolmaker", "hut", "field"]
    taken = {"en": "3 of 7 spaces taken", "de": "3 von 7 Plätzen besetzt"}[lang]
    tiles = page.split('id="board-places"', 1)[1].split('id="cards"', 1)[0]
    assert taken in " ".join(re.sub(r"<[^>]+>", " ", tiles).split())


def test_the_legend_and_the_tableaus_name_each_player_with_their_colour_and_mark(app, inbox):
    created = start(app)
    placed(app, created)
    email = [m for m in inbox.to(PLAYERS[2].email) if m.template == "reminder"][-1]
    legend = text_of(email.html, "legend")
    assert legend == "A Ann (start player) B Bob C you"
    for seat, colour in enumerate(("#b3261e", "#1f5a94", "#2e6b2e")):
        panel = re.search(rf'<div style="([^"]*)" id="player-{seat}">', email.html)
        assert panel and f"border-left:6px solid {colour}" in panel.group(1)


# --------------------------------------------------------------------------- Cavemen


def test_cavemen_draws_the_race_to_fire_as_a_track_a_tribe(app, client, inbox):
    start_game(app)
    email = inbox.all()[0]
    race = re.search(r'<ul id="race".*?</ul>', email.html, re.S).group(0)
    rows = re.findall(r'<li[^>]*data-seat="(\d)"', race)
    assert rows == ["0", "1", "2"]
    # each track: as many steps as Fire needs, the tribe's Inventing filled in its colour
    for seat, row in enumerate(re.split(r'<li[^>]*data-seat="\d"', race)[1:]):
        steps = re.findall(r'<span style="(display:inline-block;width:16px[^"]*)"', row)
        inventing = int(re.search(r"Inventing (\d+) of (\d+)", row).group(1))
        fire = int(re.search(r"Inventing (\d+) of (\d+)", row).group(2))
        assert len(steps) == fire
        filled = [s for s in steps if "background:#ffffff" not in s]
        assert len(filled) == inventing >= 1
        assert all(("#b3261e", "#1f5a94", "#2e6b2e")[seat] in s for s in filled)
    page = client.get(path_of(email.link("/g/"))).get_data(as_text=True)
    assert 'id="race"' in page and 'class="cm-step pc-0"' in page
