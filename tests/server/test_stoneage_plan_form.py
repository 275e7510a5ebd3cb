"""Stone Age's standing plan on the game page (issue 20, 1c): set with a placement in its
decision form or on its own in the plan box, played on the seat's next placement turns
without a decision or an email, dropped with the reason in the next decision email,
cleared from the page; a forged or garbled form is refused and nothing is written."""

from __future__ import annotations

import dataclasses

import pytest

from engine.stoneage.rules import plan_of
from pbem.tokens import form_signature
from tests.engine.stoneage_builders import board, build
from tests.server.conftest import start_game
from tests.server.helpers import PLAYERS, SECRET, Inbox, forms, game_state, snapshot, text_of
from tests.server.test_exact_moves import Position

ANN, BOB = PLAYERS[0], PLAYERS[1]


@pytest.fixture
def game(app, client, inbox):
    created = start_game(app, players=PLAYERS[:2], game="stoneage")
    return Position(app, client, inbox, created.game_id)


def sig(game: Position, seat: int) -> str:
    return form_signature(SECRET, game.pages[seat].rsplit("/", 1)[1])


def plan_rows(*steps: tuple[str, str]) -> dict[str, list[str]]:
    return {"plan.at": [at for at, _ in steps], "plan.count": [c for _, c in steps]}


def post_plan(game: Position, seat: int, fields: dict) -> tuple[int, str]:
    resp = game.client.post(game.pages[seat] + "/plan", data={"sig": sig(game, seat),
                                                              **fields})
    return resp.status_code, resp.get_data(as_text=True)


def log_text(game: Position, seat: int) -> str:
    return game.client.get(game.pages[seat]).get_data(as_text=True)


def decision_emails(inbox: Inbox, addr: str) -> list:
    return [m for m in inbox.to(addr) if m.template == "decision"]


def test_a_plan_set_with_a_placement_plays_the_next_turns_without_an_email(app, game,
                                                                            inbox):
    ann = game.put(build(board(), board(), start=0, turn=0))
    html = game.client.get(game.pages[ann]).get_data(as_text=True)
    (form,) = [f for f in forms(html) if f.attrs.get("id") == "decision"]
    assert html.count('<select name="plan.at">') == 6  # in the decision form only
    assert "Your next placements (optional): a standing plan" in html
    inbox.clear()
    status, html = game.post(ann, {"kind": "place", "place.word": ["clay", "1"],
                                   **plan_rows(("forest", "2"), ("hut", ""),
                                               ("hunt", "rest"))})
    assert status == 200, text_of(html, "error")
    status, html = game.post(1 - ann, {"kind": "place", "place.word": ["quarry", "1"]})
    assert status == 200, text_of(html, "error")
    status, html = game.post(1 - ann, {"kind": "place", "place.word": ["river", "1"]})
    assert status == 200, text_of(html, "error")
    # Ann's two placement turns were played by her plan: no decision, no email
    assert game.recorded() == [{"kind": "place", "at": "clay", "count": 1},
                               {"kind": "place", "at": "quarry", "count": 1},
                               {"kind": "place", "at": "river", "count": 1}]
    assert decision_emails(inbox, ANN.email) == []
    page = log_text(game, ann)
    assert "You set a plan for your placements: Forest: 2 people, then Hut: 2 people, " \
           "then Hunting grounds: all the rest." in page
    assert "You place 2 people on Forest (your plan)." in page
    assert "You place 2 people on Hut (your plan)." in page
    assert "Ann places 2 people on Forest (by plan)." in log_text(game, 1 - ann)
    assert "set a plan" not in log_text(game, 1 - ann)  # the plan is Ann's to see


def test_a_place_not_open_drops_the_plan_and_the_next_email_says_why(app, game, inbox):
    bob = game.put(build(board(), board(), start=1, turn=1))
    ann = 1 - bob
    status, html = post_plan(game, ann, {"how": "set", **plan_rows(("forest", "2"))})
    assert status == 200, text_of(html, "error")
    assert text_of(html, "notice").startswith("Your plan is set")
    assert text_of(html, "plan-now") == "Your plan: Forest: 2 people."
    inbox.clear()
    status, html = game.post(bob, {"kind": "place", "place.word": ["forest", "1"]})
    assert status == 200, text_of(html, "error")
    (mail,) = decision_emails(inbox, ANN.email)
    dropped = ("Your plan is dropped: Forest is not open to you. Place your people "
               "yourself; you may set a new plan.")
    assert mail.text.split("\n")[1] == dropped
    assert text_of(mail.html, "plan-dropped") == dropped
    assert plan_of(game_state(app, game.game_id)[1], ann) is None


def test_a_plan_is_cleared_from_the_game_page(app, game):
    ann = game.put(build(board(), board(), start=1, turn=1))
    ann = 1 - ann
    post_plan(game, ann, {"how": "set", **plan_rows(("hunt", "rest"))})
    status, html = post_plan(game, ann, {"how": "clear"})
    assert status == 200
    assert text_of(html, "notice") == "Your plan is cleared: you place your people yourself."
    assert text_of(html, "plan-now") == ("You have no plan: you are asked at each of your "
                                         "turns.")
    assert plan_of(game_state(app, game.game_id)[1], ann) is None
    status, html = post_plan(game, ann, {"how": "clear"})
    assert (status, text_of(html, "notice")) == (200, "You have no plan to clear.")


@pytest.mark.parametrize(("fields", "refusal"), [
    (plan_rows(("meadow", "2")), "Choose the places of your plan from the lists."),
    (plan_rows(("forest", "8")), "In your plan, Forest takes 1 to 7 people, or all the "
                                 "rest: choose how many."),
    (plan_rows(("forest", "")), "In your plan, Forest takes 1 to 7 people, or all the "
                                "rest: choose how many."),
    (plan_rows(("hut", "1")), "In your plan, Hut takes exactly 2 people."),
    (plan_rows(("hunt", "2"), ("hunt", "3")), "Your plan names Hunting grounds twice: "
                                              "name each place once."),
    (plan_rows(("forest, hut", "2")), "That plan cannot be set now: reload the page and "
                                      "choose again."),
    (plan_rows(*[("hunt", "1")] * 13), "That is more than any move can name: choose again."),
    (plan_rows(*[(p, "1") for p in ("hunt", "forest", "clay", "quarry", "river", "field",
                                    "toolmaker")]), "A plan lists at most 6 places."),
    (plan_rows(("", "2")), "Choose at least one place for your plan, or clear it."),
])
def test_a_garbled_plan_is_refused_with_the_reason_and_nothing_written(app, game, fields,
                                                                        refusal):
    bob = game.put(build(board(), board(), start=1, turn=1))
    before = snapshot(app)
    status, html = post_plan(game, 1 - bob, {"how": "set", **fields})
    assert (status, text_of(html, "error")) == (400, refusal)
    assert snapshot(app) == before


def test_a_forged_plan_form_is_refused_and_nothing_written(app, game):
    bob = game.put(build(board(), board(), start=1, turn=1))
    before = snapshot(app)
    page = game.pages[1 - bob]
    resp = game.client.post(page + "/plan", data={"sig": "0" * 64, "how": "set",
                                                  **plan_rows(("hunt", "rest"))})
    assert resp.status_code in (400, 403)
    resp = game.client.post("/g/not-a-token/plan", data={"sig": "0" * 64, "how": "clear"})
    assert resp.status_code in (400, 403, 404)
    assert snapshot(app) == before


def test_a_bad_plan_with_a_placement_refuses_the_placement_too(app, game):
    ann = game.put(build(board(), board(), start=0, turn=0))
    before = snapshot(app)
    status, html = game.post(ann, {"kind": "place", "place.word": ["clay", "1"],
                                   **plan_rows(("hut", "3"))})
    assert (status, text_of(html, "error")) == (400, "In your plan, Hut takes exactly 2 "
                                                     "people.")
    assert snapshot(app) == before
    assert '<option value="hut" selected>' in html  # the rows as entered


def test_the_plan_form_reads_in_german(make_app):
    app = make_app(FOLLOW_UP_MINUTES=0)
    inbox = Inbox(app)
    players = [dataclasses.replace(PLAYERS[0], language="de"), PLAYERS[1]]
    created = start_game(app, players=players, game="stoneage")
    game = Position(app, app.test_client(), inbox, created.game_id)
    bob = game.put(build(board(), board(), start=1, turn=1))
    status, html = post_plan(game, 1 - bob, {"how": "set", **plan_rows(("forest", "2"))})
    assert status == 200
    assert text_of(html, "plan-now") == "Dein Plan: Wald: 2 Personen."


def test_a_game_without_plans_refuses_a_plan_form_and_shows_none(app, client, inbox):
    created = start_game(app)  # Cavemen: no Plans hook
    page = Position(app, client, inbox, created.game_id).pages[0]
    html = client.get(page).get_data(as_text=True)
    assert 'id="plan"' not in html and 'name="plan.at"' not in html
    before = snapshot(app)
    resp = client.post(page + "/plan", data={
        "sig": form_signature(SECRET, page.rsplit("/", 1)[1]), "how": "set",
        **plan_rows(("hunt", "rest"))})
    assert resp.status_code == 400
    assert snapshot(app) == before
