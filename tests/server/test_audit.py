"""Holes an outside security audit found (issue 17, point 9), one regression test each
(the "My games" ones are in test_my_games.py, the unsubscribe ones in test_abuse.py)."""

from __future__ import annotations

import pytest

from tests.server.helpers import BASE_URL

# --------------------------------------------------------------------------- open redirect


@pytest.mark.parametrize("back", [
    "/\t/evil.example", "/\n/evil.example", "/\r/evil.example", "\t//evil.example",
    "//evil.example", "/\\evil.example", "https://evil.example/", "http:/evil.example",
    "javascript:alert(1)", "/ok\r\nSet-Cookie: x=1", "/\x00/evil.example", " /x",
    "/\x7f/evil.example", "evil.example", ""])
def test_the_language_switch_sends_back_only_to_a_local_path(client, back):
    resp = client.post("/language", data={"lang": "de", "next": back})
    assert resp.status_code == 303
    assert resp.headers["Location"] == "/"


@pytest.mark.parametrize("back", ["/", "/my", "/rules/cavemen", "/rules/stoneage?x=1#figures",
                                  "/watch/0123abcd"])
def test_the_language_switch_sends_back_to_the_page_it_came_from(client, back):
    resp = client.post("/language", data={"lang": "de", "next": back})
    assert (resp.status_code, resp.headers["Location"]) == (303, back)
    assert resp.headers["Set-Cookie"].startswith("lang=de;")


# --------------------------------------------------------------------------- HSTS


def test_an_https_site_tells_browsers_to_use_https_only(make_app):
    resp = make_app(BASE_URL="https://games.example.org").test_client().get("/")
    assert resp.headers["Strict-Transport-Security"] == "max-age=31536000"


def test_a_plain_http_site_sends_no_hsts(client):
    assert BASE_URL.startswith("http:")
    assert "Strict-Transport-Security" not in client.get("/").headers
