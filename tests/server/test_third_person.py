"""Issue 32, point 5: a line about another player is in the third person, in both
languages ("Bert: place people", "Bot 3: Personen einsetzen"), on the game page, the host
page and the receipt of a move; the reader's own decision still speaks to them."""

from __future__ import annotations

import dataclasses

import pytest

from tests.server.conftest import start_game
from tests.server.helpers import PLAYERS, Inbox, only_form, open_decisions, path_of, text_of

WORDS = {"en": ("place people", "place your people"),
         "de": ("Personen einsetzen", "deine Personen einsetzen")}


@pytest.fixture(params=["en", "de"])
def lang(request):
    return request.param


def started(make_app, lang):
    app = make_app()
    inbox = Inbox(app)
    players = [dataclasses.replace(p, language=lang) for p in PLAYERS[:3]]
    created = start_game(app, players=players, game="stoneage")
    (decision,) = open_decisions(app, created.game_id)
    return app, inbox, created, decision


def test_the_game_page_of_another_player_names_the_decision_in_the_third_person(
        make_app, lang):
    app, inbox, created, decision = started(make_app, lang)
    other = next(p for i, p in enumerate(PLAYERS[:3]) if i != decision.position)
    page = app.test_client().get(path_of(inbox.to(other.email)[0].link("/g/")))
    waiting = text_of(page.get_data(as_text=True), "waiting")
    third, second = WORDS[lang]
    assert f"{PLAYERS[decision.position].name}: {third}" in waiting
    assert second not in waiting


def test_the_game_page_of_the_player_waited_for_speaks_to_them(make_app, lang):
    app, inbox, created, decision = started(make_app, lang)
    mover = PLAYERS[decision.position]
    page = app.test_client().get(path_of(inbox.to(mover.email)[0].link("/g/")))
    waiting = text_of(page.get_data(as_text=True), "waiting")
    third, second = WORDS[lang]
    assert f"{'You' if lang == 'en' else 'Du'}: {second}" in waiting
    assert mover.name not in waiting


def test_the_host_page_names_each_waiting_decision_in_the_third_person(make_app, lang):
    app, inbox, created, decision = started(make_app, lang)
    html = app.test_client().get(f"/admin/{created.admin_token}").get_data(as_text=True)
    third, second = WORDS[lang]
    assert third in html and second not in html


def test_the_receipt_of_a_move_names_the_next_decision_in_the_third_person(make_app, lang):
    app, inbox, created, decision = started(make_app, lang)
    client = app.test_client()
    mover = PLAYERS[decision.position]
    mail = inbox.to(mover.email, "decision")[-1]
    link = mail.under("/a/")[0]
    page = client.get(path_of(link)).get_data(as_text=True)

    form = only_form(page)
    done = client.post(form.action or path_of(link), data=form.data()).get_data(as_text=True)
    third, second = WORDS[lang]
    assert third in done and second not in done
