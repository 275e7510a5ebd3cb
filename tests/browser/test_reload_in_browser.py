"""A reload never acts twice (issue 32, point 9), in Chromium: a player confirms a move on
the game page, reloads the page that says it was recorded, takes the move back, and
reloads the page that says so. Each POST answers with a redirect (Post/Redirect/Get), so
the browser's address is a page's and a reload asks for that page (a GET) without
offering to send the form again: the moves, the log and the outbox stay as they were, and
the server sees GETs only."""

from __future__ import annotations

from playwright.sync_api import expect
from sqlmodel import func, select

from pbem.db import session_scope
from pbem.models import EventLog, Move, Outbox
from tests.browser.test_live_page_in_browser import deciding, started_game


def counts(app, game_id: str) -> tuple[int, int, int]:
    with app.app_context(), session_scope() as s:
        return tuple(s.exec(select(func.count()).select_from(model)
                            .where(model.game_id == game_id)).one()
                     for model in (Move, EventLog, Outbox))


def test_reloading_after_a_move_and_a_take_back_acts_no_more(live_server, page, console):
    app = live_server.app
    game_id, links = started_game(app)
    first = deciding(app, game_id)
    methods: list[tuple[str, str]] = []
    page.on("request", lambda r: methods.append((r.method, r.url)))
    page.on("dialog", lambda d: (_ for _ in ()).throw(AssertionError(d.message)))
    page.goto(f"{live_server.url}/g/{links[first]}")
    expect(page.locator("#decision")).to_be_visible()

    page.get_by_role("button", name="Confirm").click()
    expect(page.locator("#recorded")).to_contain_text("Recorded:")
    assert "?recorded=" in page.url  # the browser is on the page's address, not the POST's
    after_move = counts(app, game_id)
    assert after_move[0] == 1
    methods.clear()
    page.reload()
    expect(page.locator("#recorded")).to_contain_text("Recorded:")
    assert [m for m, url in methods if "/g/" in url and "/here" not in url] == ["GET"]
    assert counts(app, game_id) == after_move

    page.locator("#take-back").get_by_role("button").click()
    expect(page.locator("#notice")).to_contain_text("Taken back: decide again.")
    assert "?done=taken_back" in page.url
    after_take_back = counts(app, game_id)
    assert after_take_back[0] == 0  # the move is gone (its events too: "took_back" is logged)
    methods.clear()
    page.reload()
    expect(page.locator("#notice")).to_contain_text("Taken back: decide again.")
    expect(page.locator("#decision")).to_be_visible()
    assert [m for m, url in methods if "/g/" in url and "/here" not in url] == ["GET"]
    assert counts(app, game_id) == after_take_back
    assert console.errors == []
