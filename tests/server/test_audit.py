"""Holes an outside security audit found (issue 17, point 9), one regression test each
(the "My games" ones are in test_my_games.py, the unsubscribe ones in test_abuse.py)."""

from __future__ import annotations

import pytest

from pbem.db import session_scope
from pbem.models import Game
from pbem.tokens import form_signature, mint
from tests.server.helpers import (
    BASE_URL,
    PLAYERS,
    SECRET,
    load,
    new_game_data,
    new_game_form,
    path_of,
    snapshot,
    text_of,
    token_of,
)

ANN, BOB, CY = PLAYERS

# --------------------------------------------------------------------------- open redirect


@pytest.mark.parametrize("back", [
    "/\t/evil.example", "/\n/evil.example", "/\r/evil.example", "\t//evil.example",
    "//evil.example", "/\\evil.example", "https://evil.example/", "http:/evil.example",
    "javascript:alert(1)", "/ok\r\nSet-Cookie: x=1", "/\x00/evil.example", " /x",
    "/\x7f/evil.example", "evil.example", ""])
def test_the_language_switch_sends_back_only_to_a_local_path(client, back):
    resp = client.post("/language", data={"lang": "de", "next": back},
                       follow_redirects=False)
    assert resp.status_code == 303
    assert resp.headers["Location"] == "/"


@pytest.mark.parametrize("back", ["/", "/my", "/rules/cavemen", "/rules/stoneage?x=1#figures",
                                  "/watch/0123abcd"])
def test_the_language_switch_sends_back_to_the_page_it_came_from(client, back):
    resp = client.post("/language", data={"lang": "de", "next": back},
                       follow_redirects=False)
    assert (resp.status_code, resp.headers["Location"]) == (303, back)
    assert resp.headers["Set-Cookie"].startswith("lang=de;")


# --------------------------------------------------------------------------- HSTS


def test_an_https_site_tells_browsers_to_use_https_only(make_app):
    resp = make_app(BASE_URL="https://games.example.org").test_client().get("/")
    assert resp.headers["Strict-Transport-Security"] == "max-age=31536000"


def test_a_plain_http_site_sends_no_hsts(client):
    assert BASE_URL.startswith("http:")
    assert "Strict-Transport-Security" not in client.get("/").headers


# --------------------------------------------------------------------------- numbers


HUGE = ["99999999999999999999", str(2**31), str(2**63), "-1", "-99999999999999999999",
        "1e999", "-inf", "nan", "x", "", " ", "1_0", "0x10", "١٢", "1.5"]  # none is valid


def number_fields(table) -> list[tuple[str, dict[str, str], str]]:
    """Every form field that holds a whole number: (path, the rest of its form, field)."""
    decision = table.open()
    page = path_of(table.mail(decision).link("/g/"))
    admin = f"/admin/{table.admin}"
    host, page_sig = form_signature(SECRET, table.admin), form_signature(SECRET, token_of(page))
    newcomer = {"name": "Dee", "email": "dee@example.com", "lang": "en", "tz": "UTC"}
    with table.app.app_context(), session_scope() as s:
        my = mint(s, "my_games", table.game_id, None, action={"address": CY.email})
    return [
        (f"{admin}/remind", {"sig": host}, "decision"),
        (f"{admin}/replace", {"sig": host, **newcomer}, "position"),
        (f"{admin}/handover", {"sig": host, **newcomer}, "position"),
        (f"{admin}/withdraw", {"sig": host}, "position"),
        (f"{admin}/bot", {"sig": host, "bot": "heuristic"}, "position"),
        (page, {"sig": page_sig, "choice": "pass"}, "decision_id"),
        (page, {"sig": page_sig, "decision_id": str(decision.id), "kind": "pass"}, "pass.count.x"),
        (f"/my/{my}/open", {"sig": form_signature(SECRET, my)}, "seat"),
    ]


def test_a_huge_negative_or_garbled_number_in_any_form_is_refused_cleanly(app, client, table):
    """Never a 500, on SQLite or PostgreSQL (whose integers end at 2**31 - 1), and
    nothing written (a count left blank is no count: that form would be a move)."""
    fields = number_fields(table)
    before = snapshot(app)
    for path, rest, field in fields:
        for value in HUGE if field != "pass.count.x" else [v for v in HUGE if v.strip()]:
            resp = client.post(path, data={**rest, field: value})
            assert resp.status_code == 400, (path, field, value, resp.status_code)
            assert "Traceback" not in resp.get_data(as_text=True)
    assert snapshot(app) == before


@pytest.mark.parametrize("field", ["absent_after", "vacation_days", "hours"])
def test_a_huge_or_garbled_number_in_the_new_game_form_is_shown_at_its_field(
        app, client, field):
    data = new_game_data(new_game_form(client))
    before = snapshot(app)
    for value in ["99999999999999999999", str(2**31), "-1", "1e999", "nan", "x", "0x10"]:
        resp = client.post("/new", data={**data, field: value})
        assert resp.status_code == 400, (field, value)
        assert text_of(resp.get_data(as_text=True), f"e-{field}"), (field, value)
    assert snapshot(app) == before


def test_the_host_cannot_remind_of_a_decision_beyond_the_database_integers(app, client, table):
    """The audit's case: ``decision=99999999999999999999`` (or 2**31 on PostgreSQL) gave a
    500; now the host page says what to do."""
    for value in ("99999999999999999999", str(2**31)):
        resp = client.post(f"/admin/{table.admin}/remind",
                           data={"sig": form_signature(SECRET, table.admin), "decision": value})
        assert resp.status_code == 400
        assert text_of(resp.get_data(as_text=True), "error") == "Choose whom to remind."


@pytest.mark.parametrize("number", [str(2**31), "99999999999999999999", "-1", "x"])
def test_a_log_round_beyond_any_game_is_not_found(client, table, number):
    decision = table.open()
    page = path_of(table.mail(decision).link("/g/"))
    key = load(table.app, Game, table.game_id).spectator_key
    for path in (f"{page}/log/{number}", f"/watch/{key}/log/{number}"):
        assert client.get(path).status_code == 404
