"""A game that lives outside the server, played by email end to end.

Pebbles (``tests/toygame``: its rules module and two templates, nothing else) is
registered here, the way any new game is, and then offered on the home page, created
from its form, confirmed, joined and played to its end through the emails a real SMTP
server receives and the links in them, in English and German, one-click links and the game
page's form both. No file of ``pbem/`` names it: that is the proof that adding a game
touches only the game's own folders.
"""

from __future__ import annotations

import random
from pathlib import Path
from urllib.parse import urljoin

import pytest

import pbem
from engine.core import Action
from engine.registry import Listing, register, unregister
from pbem import services
from tests import toygame
from tests.engine.test_conformance import GameSpec, play_and_check
from tests.server.helpers import (
    forms,
    game_state,
    new_game_data,
    text_of,
    token_of,
    token_row,
)
from tests.server.test_e2e import check_addressee, games_in, live  # noqa: F401 (fixture)

TOY = Path(toygame.__file__).parent
PLAYERS = [
    services.PlayerIn("Ann", "ann@example.com", "en", "Europe/Berlin"),
    services.PlayerIn("Bob", "bob@example.com", "de", "Europe/Berlin"),
]


@pytest.fixture(autouse=True)
def pebbles():
    """Pebbles is registered for the test only."""
    listing = register(Listing("pebbles", "tests.toygame", {"en": "Pebbles", "de": "Kiesel"},
                               templates=TOY / "templates"))
    yield listing
    unregister("pebbles")


@pytest.mark.parametrize("players", [2, 3, 4])
def test_pebbles_conforms_to_the_contract(players):
    """The engine suite's generic checks, on the toy game: every step of bot games."""
    spec = GameSpec(game=toygame, bots=toygame.BOTS, check_state=lambda state: None,
                    illegal_actions=lambda state, seat: [Action.of("take", count=n)
                                                         for n in (0, 4, state.pile + 1)],
                    hidden_orders=lambda state: [], end_early=toygame.abandon)
    for seed in range(3):
        assert play_and_check(spec, players, seed, "random").finished
        assert play_and_check(spec, players, seed, "heuristic").finished


def test_the_server_names_no_toy_game():
    """Nothing in the server's package mentions the toy game: registering it is enough."""
    named = [str(p) for p in Path(pbem.__file__).parent.rglob("*")
             if p.suffix in (".py", ".html", ".txt", ".jinja", ".toml")
             and "pebble" in p.read_text(encoding="utf-8", errors="replace").lower()]
    assert named == []
    assert sorted(p.name for p in (TOY / "templates").iterdir()) == ["form.html",
                                                                     "narration.jinja"]


def test_pebbles_by_email_from_the_home_page_to_the_result(live):  # noqa: F811
    http = live.http
    ann, bob = PLAYERS

    # The home page offers it, with its player counts; its rules page is there.
    home = http.get(live.base + "/", timeout=30)
    assert "Pebbles" in home.text and 'id="game-pebbles"' in home.text
    rules = http.get(live.base + "/rules/pebbles", timeout=30)
    assert rules.status_code == 200 and "Whoever takes the last pebble wins." in rules.text
    rules_de = http.get(live.base + "/rules/pebbles?lang=de", timeout=30)
    assert rules_de.status_code == 200 and "Wer den letzten nimmt, gewinnt." in rules_de.text

    (form,) = [f for f in forms(home.text) if f.attrs.get("id") == "new-game"]
    created = http.post(urljoin(live.base, form.action), timeout=30,
                        data=new_game_data(form, PLAYERS, game="pebbles", title="Pebbles"))
    assert created.status_code == 200 and "Check your email" in created.text
    (host_mail,) = live.mails_until(1)
    live.confirm(live.link(host_mail, "/host/confirm/"))
    (invitation,) = live.mails_until(1)
    assert invitation.to_addr == bob.email and "Kiesel" in invitation.text
    live.confirm(live.links(invitation, "/invite/")[0])
    (game,) = games_in(live.app)
    assert (game.engine, game.status) == ("pebbles", "active")

    # Play: every decision email answered, by one-click link or by the page's form.
    rng, results, via, taken = random.Random(3), [], [], 0
    while len(results) < len(PLAYERS):
        assert len(via) < 40, "the game does not end"
        mail = live.new_mail()
        if mail.template == "result":
            results.append(mail)
            continue
        if mail.template != "decision":
            continue
        decision = check_addressee(live.app, game.id, mail)
        state = game_state(live.app, game.id)[1]
        board = (f"On the pile: {state.pile} pebble{'s' * (state.pile != 1)}."
                 if mail.to_addr == ann.email else f"Auf dem Haufen: {state.pile} Kiesel.")
        assert board in mail.text and board in mail.html
        choice = toygame.BOTS["heuristic"](state, decision.position, rng)
        via.append(_answer(live, mail, decision, choice, by_page=len(via) % 2 == 1))
        taken += choice.get("count")

    # The game ended with the last pebble; both heard who won, each in their language.
    (game,) = games_in(live.app)
    state = game_state(live.app, game.id)[1]
    assert game.status == "finished" and state.pile == 0 and taken == 10
    winner = PLAYERS[state.winner].name
    # first the outcome for the reader (a game without places names the winner), then
    # the game's own words
    said = {m.to_addr: m.text.split("\n")[:2] for m in results}
    assert said == {
        ann.email: ["Game over: you won" if winner == ann.name else f"Game over: {winner} won",
                    f"{winner} takes the last pebble and wins."],
        bob.email: ["Spiel vorbei: Du hast gewonnen" if winner == bob.name
                    else f"Spiel vorbei: {winner} hat gewonnen",
                    f"{winner} nimmt den letzten Kiesel und gewinnt."]}
    assert set(via) == {"one-click", "page"}


def _answer(player, mail, decision, choice: Action, by_page: bool) -> str:
    """Click the one-click link of ``choice``, or (``by_page``) tick it on the game page."""
    if not by_page:
        for url in player.links(mail, "/a/"):
            if Action.from_json(token_row(player.app, token_of(url)).action) == choice:
                resp = player.confirm(url)
                assert text_of(resp.text, "recorded").startswith(("Recorded:", "Gespeichert"))
                return "one-click"
        raise AssertionError(f"no link for {choice}")
    page = player.http.get(player.link(mail, "/g/"), timeout=30)
    assert page.status_code == 200 and 'id="pebbles"' in page.text  # the toy's own form
    (form,) = [f for f in forms(page.text) if f.attrs.get("id") == "decision"]
    resp = player.http.post(urljoin(player.base, form.action), timeout=30,
                          data=form.data(choice=str(choice)))
    assert resp.status_code == 200, resp.text
    return "page"
