"""Two friends at the same time, in Chromium (issue 20, point 1b): each has the game page
open, one confirms a decision on theirs, and the next player's page shows their decision
by itself, with no reload by hand; a player who has begun filling in a form is not
interrupted but offered the new state. Set PBEM_LIVE_SCREENSHOT=/path.png to keep a
screenshot of that offer on a phone."""

from __future__ import annotations

import os
import time

from playwright.sync_api import expect
from sqlmodel import col, select

from pbem import services
from pbem.db import session_scope
from pbem.models import Decision, Seat
from pbem.tokens import mint

PLAYERS = [services.PlayerIn("Ann", "ann@example.test", "en", "Europe/Berlin"),
           services.PlayerIn("Bob", "bob@example.test", "de", "Europe/Berlin"),
           services.PlayerIn("Cy", "cy@example.test", "en", "UTC")]


def started_game(app) -> tuple[str, dict[int, str]]:
    """A started Cavemen game and a game-page link per seat position."""
    with app.app_context():
        created = services.create_game("cavemen", PLAYERS, seed=5, confirm_by_email=False,
                                       start=True)
        with session_scope() as s:
            seats = s.exec(select(Seat).where(Seat.game_id == created.game_id)).all()
            links = {seat.position: mint(s, "page", created.game_id, seat.id)
                     for seat in seats}
    return created.game_id, links


def seen_at(app, game_id: str) -> list:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Seat.page_seen_at).where(Seat.game_id == game_id)).all())


def deciding(app, game_id: str) -> int:
    with app.app_context(), session_scope() as s:
        (position,) = s.exec(select(Decision.position).where(
            Decision.game_id == game_id, col(Decision.closed_at).is_(None))).all()
        return position


def test_the_next_players_page_shows_their_turn_by_itself(live_server, browser, console):
    live_server.app.config["LIVE_POLL_SECONDS"] = 0.3
    game_id, links = started_game(live_server.app)
    first = deciding(live_server.app, game_id)
    pages = {}
    for position in links:
        ctx = browser.new_context(viewport={"width": 390, "height": 844})
        ctx.set_default_timeout(10_000)
        page = ctx.new_page()
        console.watch(page)
        page.goto(f"{live_server.url}/g/{links[position]}")
        page.evaluate("window.loadedOnce = true")  # gone if the page is loaded again
        pages[position] = page
    expect(pages[first].locator("#decision")).to_be_visible()
    # each open page has told the server it is there (the email of its next decision waits)
    for _ in range(50):
        if all(seen_at(live_server.app, game_id)):
            break
        time.sleep(0.1)
    assert all(seen_at(live_server.app, game_id))
    for position in (p for p in pages if p != first):
        expect(pages[position].locator("#decision")).to_have_count(0)
    # one of the others starts choosing a language (not saved): their page must not move
    busy = (first + 2) % len(PLAYERS)  # the bids go round clockwise: not next
    pages[busy].select_option("select[name=lang]", "de")

    pages[first].get_by_role("button", name="Confirm").click()
    expect(pages[first].locator("#recorded, .recorded, h1").first).to_be_visible()

    nxt = deciding(live_server.app, game_id)
    assert nxt not in (first, busy)
    expect(pages[nxt].locator("#decision")).to_be_visible()  # by itself
    assert pages[nxt].evaluate("window.loadedOnce") is None  # it was shown anew
    notice = pages[busy].locator("#live")
    expect(notice).to_be_visible()  # offered, not forced
    assert pages[busy].evaluate("window.loadedOnce") is True
    assert pages[busy].locator("select[name=lang]").input_value() == "de"
    if os.environ.get("PBEM_LIVE_SCREENSHOT"):  # a path: the offer as the reader sees it
        pages[busy].screenshot(path=os.environ["PBEM_LIVE_SCREENSHOT"])
    notice.get_by_role("button").click()
    expect(pages[busy].locator("#live")).to_be_hidden()
    assert pages[busy].evaluate("window.loadedOnce") is None
    for page in pages.values():
        page.context.close()
    assert console.errors == []
