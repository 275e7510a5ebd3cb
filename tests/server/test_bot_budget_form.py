"""A strong bot's thinking time (issue 22: "a CPU budget per decision that the game's
options set"): the home form asks for it once a seat is a strong bot, the value reaches
``GamePolicy.bot_ms`` as the other settings do, a bad value is refused at its field with
nothing created, the host page says it, and the command line's ``--bot-ms`` still sets it.
Both databases."""

from __future__ import annotations

import pytest
from sqlmodel import select

from pbem import services
from pbem.db import session_scope
from pbem.models import Game, Outbox
from tests.server.helpers import PLAYERS, forms, new_game_data, new_game_form

ANN = PLAYERS[0]


def strong_bot_form(client, **extra: str) -> dict[str, str]:
    """The home form as a host fills it in: Ann, a strong bot and an easy one."""
    data = new_game_data(new_game_form(client), [ANN])
    data.update({"game": "cavemen", "bot1": "strong", "name1": "", "email1": "",
                 "bot2": "easy", "name2": "", "email2": "", **extra})
    return data


def stored_policies(app) -> list:
    with app.app_context(), session_scope() as s:
        return [g.policy for g in s.exec(select(Game)).all()]


def outbox_rows(app) -> list:
    with app.app_context(), session_scope() as s:
        return s.exec(select(Outbox)).all()


def test_the_home_form_asks_for_the_thinking_time_with_the_default(app, client):
    form = new_game_form(client)
    assert form.inputs["bot_ms"] == "100"
    html = client.get("/").get_data(as_text=True)
    assert '<div class="field bot-budget"><label for="f-bot_ms">' in html
    assert 'aria-describedby="hint-bot_ms"' in html
    german = client.get("/", headers={"Accept-Language": "de"}).get_data(as_text=True)
    assert "Wie lange ein starker Bot nachdenkt, in Millisekunden pro Zug" in german


@pytest.mark.parametrize(("entered", "stored"), [
    ("250", 250.0), ("10", 10.0), ("5000", 5000.0), (" 1500 ", 1500.0), ("12,5", 12.5),
    ("", 100.0),  # empty: the default
])
def test_the_home_forms_thinking_time_reaches_the_games_policy(app, client, entered, stored):
    resp = client.post("/new", data=strong_bot_form(client, bot_ms=entered))
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert [p.bot_ms for p in stored_policies(app)] == [stored]


def test_a_form_without_the_field_takes_the_default(app, client):
    data = strong_bot_form(client)
    data.pop("bot_ms", None)
    resp = client.post("/new", data=data)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert [p.bot_ms for p in stored_policies(app)] == [100.0]


BAD = ["nan", "1e400", "0", "9", "5001", "abc", "-100", "-0", "inf", "1\r\n00",
       "100\r\nBcc: eve@example.com", "\n5\n"]


@pytest.mark.parametrize("entered", BAD)
def test_a_bad_thinking_time_is_refused_at_its_field_and_nothing_is_created(
        app, client, entered):
    resp = client.post("/new", data=strong_bot_form(client, bot_ms=entered))
    html = resp.get_data(as_text=True)
    assert resp.status_code == 400, html
    assert ('<p class="field-error" id="e-bot_ms">A strong bot thinks 10 to 5000 '
            'milliseconds a decision.</p>') in html
    assert '<a href="#f-bot_ms">' in html  # the summary at the top links to the field
    assert 'aria-describedby="hint-bot_ms e-bot_ms" aria-invalid="true"' in html
    assert "1 thing to fix" in html  # only this field
    assert stored_policies(app) == [] and outbox_rows(app) == []
    again = [f for f in forms(html) if f.attrs.get("id") == "new-game"][0]
    assert again.inputs["bot_ms"].replace("\r\n", "\n") == entered.replace("\r\n", "\n")


def test_a_bad_thinking_time_is_refused_in_german(app, client):
    resp = client.post("/new", data=strong_bot_form(client, bot_ms="5001"),
                       headers={"Accept-Language": "de"})
    assert resp.status_code == 400
    assert 'id="e-bot_ms"' in resp.get_data(as_text=True)
    assert "milliseconds" not in resp.get_data(as_text=True)


def bot(level: str) -> services.PlayerIn:
    return services.PlayerIn("", "", "en", "UTC", bot=level)


def host_page(app, client, host: services.PlayerIn, seats, **policy) -> str:
    with app.app_context():
        created = services.create_game("cavemen", [host, *seats], policy, seed=7,
                                       confirm_by_email=False, start=True)
    resp = client.get(f"/admin/{created.admin_token}")
    assert resp.status_code == 200
    return resp.get_data(as_text=True)


def test_the_host_page_says_how_long_the_strong_bots_think(app, client):
    html = host_page(app, client, ANN, [bot("strong"), bot("easy")], bot_ms="2500")
    assert '<li id="bot-budget">Strong bots think up to 2,500 milliseconds per move.</li>' \
        in html


def test_the_host_page_says_it_in_the_hosts_language(app, client):
    anna = services.PlayerIn("Anna", "anna@example.com", "de", "Europe/Berlin")
    html = host_page(app, client, anna, [bot("strong")], bot_ms="250")
    assert '<li id="bot-budget">Starke Bots denken bis zu 250 Millisekunden pro Zug nach.</li>' \
        in html


@pytest.mark.parametrize("seats", [["easy", "easy"], []])
def test_the_host_page_of_a_game_without_a_strong_bot_does_not_mention_it(
        app, client, seats):
    people = [] if seats else PLAYERS[1:]
    html = host_page(app, client, ANN, [*people, *map(bot, seats)], bot_ms="2500")
    assert 'id="bot-budget"' not in html and "milliseconds" not in html


def run_cli(app, *extra: str):
    return app.test_cli_runner().invoke(args=[
        "pbem", "new-game", "--game", "cavemen", "--start", "--player",
        "Ann <ann@example.com>", "--bot", "strong", "--bot", "easy", *extra])


def test_the_command_lines_bot_ms_sets_the_thinking_time(app):
    result = run_cli(app, "--bot-ms", "300")
    assert result.exit_code == 0, result.output
    assert [p.bot_ms for p in stored_policies(app)] == [300.0]


def test_the_command_line_without_bot_ms_takes_the_default(app):
    result = run_cli(app)
    assert result.exit_code == 0, result.output
    assert [p.bot_ms for p in stored_policies(app)] == [100.0]


@pytest.mark.parametrize("ms", ["5001", "9", "nan"])
def test_the_command_line_refuses_a_bad_bot_ms(app, ms):
    result = run_cli(app, "--bot-ms", ms)
    assert result.exit_code != 0
    assert "10 to 5000 milliseconds" in result.output
    assert stored_policies(app) == []
