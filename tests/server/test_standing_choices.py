"""Standing choices on the game page (issue 31, 2): each of the game's standing choices
with its values, none on at the start; saved at any time for the seat alone; where one
decides, no decision opens and no email asks it, and the seat's log says so; anything
the game does not offer is refused with a clear message and nothing written."""

from __future__ import annotations

import dataclasses

import pytest

from pbem.tokens import form_signature
from tests.engine.stoneage_builders import board, last_use, rolling
from tests.server.conftest import start_game
from tests.server.helpers import PLAYERS, SECRET, forms, open_decisions, snapshot, text_of
from tests.server.test_exact_moves import Position


@pytest.fixture
def game(app, client, inbox):
    created = start_game(app, players=PLAYERS[:2], game="stoneage")
    return Position(app, client, inbox, created.game_id)


def standing_form(html: str):
    (form,) = [f for f in forms(html) if f.attrs.get("id") == "standing"]
    return form


def save(game, seat: int, **choices: str) -> tuple[int, str]:
    page = game.pages[seat]
    data = {"sig": form_signature(SECRET, page.rsplit("/", 1)[1]),
            **{f"standing.{k}": v for k, v in choices.items()}}
    resp = game.client.post(page + "/standing", data=data)
    return resp.status_code, resp.get_data(as_text=True)


def checked(html: str) -> dict[str, str]:
    form = standing_form(html)
    return {name.removeprefix("standing."): value for name, value in form.checked.items()}


def test_the_game_page_offers_each_standing_choice_with_none_on(game, client):
    html = client.get(game.pages[0]).get_data(as_text=True)
    form = standing_form(html)
    assert form.radios == {"standing.tools": ["off", "tiles", "all"],
                           "standing.feed": ["off", "pay", "starve"],
                           "standing.order": ["off", "sensible"]}
    assert checked(html) == {"tools": "off", "feed": "off", "order": "off"}
    assert "Ask me each time" in text_of(html, "standing-tools")


def test_saved_standing_choices_show_checked_to_their_seat_only(game, client):
    status, html = save(game, 1, tools="all", feed="pay", order="off")
    assert status == 200, text_of(html, "error")
    assert "Your standing choices are saved" in text_of(html, "notice")
    assert checked(html) == {"tools": "all", "feed": "pay", "order": "off"}
    other = client.get(game.pages[0]).get_data(as_text=True)
    assert checked(other) == {"tools": "off", "feed": "off", "order": "off"}
    assert "You set a standing choice: Tools after a roll" in html
    assert "standing choice" not in text_of(other, "log")
    status, html = save(game, 1, tools="all", feed="pay", order="off")
    assert "as they were" in text_of(html, "notice")


def forest_roll():
    """Seat 1, the last to use, resolves the Forest (one person, a roll of 2) with tool
    tiles 2 and 1 at hand: the tools would raise the yield."""
    return last_use(board(), board(tools=(2, 1)), place="forest", rng=rolling((2,)))


@pytest.mark.parametrize("tools", ["off", "all"])
def test_a_roll_the_standing_choice_decides_asks_nothing(app, game, inbox, client, tools):
    seat = game.put(forest_roll())
    save(game, seat, tools=tools)
    inbox.clear()
    status, html = game.post(seat, {"choice": "order forest"})
    assert status == 200, text_of(html, "error")
    kinds = [d.kind for d in open_decisions(app, game.game_id)]
    page = client.get(game.pages[seat]).get_data(as_text=True)
    if tools == "off":
        assert kinds == ["tools"]
        return
    assert "tools" not in kinds
    log = text_of(page, "log")
    assert "You add tools worth 1. (your standing choice)" in log, log
    assert not [m for m in inbox.to(game.seats[seat].email)
                if "add tools" in m.subject]


@pytest.mark.parametrize("fields", [{"tools": "sometimes"}, {"nothing": "all"},
                                    {"tools": "all\r\nBcc: x@example.org"}, {}])
def test_a_standing_choice_not_offered_is_refused_and_nothing_is_written(app, game, fields):
    before = snapshot(app)
    status, html = save(game, 0, **fields)
    assert status == 400
    assert text_of(html, "error") == ("That standing choice is not offered: reload the "
                                      "page and choose again.")
    assert snapshot(app) == before


def test_a_standing_form_without_its_signature_changes_nothing(app, game):
    before = snapshot(app)
    resp = game.client.post(game.pages[0] + "/standing", data={"standing.tools": "all"})
    assert resp.status_code == 400
    assert snapshot(app) == before


def test_a_get_of_the_standing_address_changes_nothing(app, game):
    before = snapshot(app)
    resp = game.client.get(game.pages[0] + "/standing?standing.tools=all")
    assert resp.status_code in (404, 405)
    assert snapshot(app) == before


def test_the_standing_choices_read_in_german(make_app):
    from tests.server.helpers import Inbox

    app = make_app()
    inbox = Inbox(app)
    players = [dataclasses.replace(PLAYERS[0], language="de"), PLAYERS[1]]
    created = start_game(app, players=players, game="stoneage")
    client = app.test_client()
    game = Position(app, client, inbox, created.game_id)
    html = client.get(game.pages[0]).get_data(as_text=True)
    assert "Daueranweisungen" in html and "Werkzeuge nach einem Wurf" in html
    assert "Jedes Mal fragen" in text_of(html, "standing-feed")


# --------------------------------------------------------------------------- by reply


def standing_of(app, game_id: str, seat: int) -> dict[str, str]:
    from tests.server.helpers import game_state

    mod, state = game_state(app, game_id)
    return {c["key"]: c["value"] for c in mod.standing_form(state, seat)}


@pytest.fixture
def inbound_for(make_app):
    """A Stone Age game of two who read ``lang``, with a receiver; the decision email of
    the player asked first, and that seat."""
    from tests.server.helpers import Inbox
    from tests.server.replying import Inbound

    made = []

    def make(lang: str):
        app = make_app(FOLLOW_UP_MINUTES=0)
        inbox = Inbox(app)
        players = [dataclasses.replace(p, language=lang) for p in PLAYERS[:2]]
        created = start_game(app, players=players, game="stoneage")
        game = Position(app, app.test_client(), inbox, created.game_id)
        receiver = Inbound(app)
        made.append(receiver)
        (decision,) = open_decisions(app, game.game_id)
        mail = inbox.to(game.seats[decision.position].email, "decision")[-1]
        return app, game, inbox, receiver, mail, decision.position

    yield make
    for receiver in made:
        receiver.stop()


@pytest.mark.parametrize(("lang", "line", "said"), [
    ("en", "standing tools all", "Your standing choice is set: Tools after a roll – Add "
                                 "tools whenever they raise what I get"),
    ("de", "dauer werkzeug alle", "Deine Daueranweisung ist gesetzt: Werkzeuge nach einem "
                                  "Wurf – Werkzeuge immer einsetzen"),
    ("de", "standing tools all", "Deine Daueranweisung ist gesetzt"),
])
def test_a_reply_sets_a_standing_choice_and_is_answered(inbound_for, lang, line, said):
    app, game, inbox, inbound, mail, seat = inbound_for(lang)
    inbound.reply(mail, line)
    assert standing_of(app, game.game_id, seat)["tools"] == "all"
    (answer,) = inbox.to(mail.to_addr, "reply")
    assert said in answer.text
    assert [d.kind for d in open_decisions(app, game.game_id)] == ["place"]  # still open


def test_a_reply_with_a_standing_choice_not_offered_lists_those_that_are(inbound_for):
    app, game, inbox, inbound, mail, seat = inbound_for("en")
    before = standing_of(app, game.game_id, seat)
    inbound.reply(mail, "standing tools sometimes")
    assert standing_of(app, game.game_id, seat) == before
    (answer,) = inbox.to(mail.to_addr, "reply")
    assert "this is no standing choice the game offers; you can write:" in answer.text
    assert "    standing tools all\n" in answer.text and "    standing feed pay\n" in answer.text


def test_a_reply_with_a_standing_choice_then_a_move_does_both(inbound_for):
    app, game, inbox, inbound, mail, seat = inbound_for("en")
    inbound.reply(mail, "standing feed pay\nplace hunt 2")
    assert standing_of(app, game.game_id, seat)["feed"] == "pay"
    (answer,) = inbox.to(mail.to_addr, "reply")
    assert answer.text.startswith("Recorded: Place 2 people on Hunting grounds.")
    assert "Your standing choice is set: Feeding when Food is short" in answer.text


@pytest.mark.parametrize(("lang", "word"), [("en", "standing"), ("de", "dauer")])
def test_the_word_the_hint_names_answers_with_the_standing_commands(inbound_for, lang, word):
    app, game, inbox, inbound, mail, seat = inbound_for(lang)
    inbound.reply(mail, word)
    (answer,) = inbox.to(mail.to_addr, "reply")
    line = "standing tools all" if lang == "en" else "dauer werkzeug alle"
    assert f"    {line}\n" in answer.text
