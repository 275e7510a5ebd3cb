"""The game page in Chromium (issue 31, point 4): at 1280 px the board stands beside the
decision form, two columns; at 390 px it follows the form, one column, and nothing sticks
out sideways. Both games, a seat with a decision open."""

from __future__ import annotations

import pytest

from tests.browser.screens import overflow
from tests.browser.test_clear_pages_in_browser import deciding, started


@pytest.mark.parametrize("game", ["stoneage", "cavemen"])
def test_the_board_stands_beside_the_decision_at_1280_and_below_it_at_390(
        browser, live_server, game):
    created, pages = started(live_server.app, game)
    path = f"{live_server.url}/g/{pages[deciding(live_server.app, created.game_id)]}"
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-GB")
    try:
        page = ctx.new_page()
        page.goto(path)
        form, board = (page.locator(sel).bounding_box() for sel in ("form#decision", "#board"))
        assert form and board
        assert board["x"] >= form["x"] + form["width"], (form, board)  # beside it
        assert board["y"] < form["y"] + form["height"]  # side by side, not below
        assert board["width"] >= 500  # a column of its own, wide enough for the picture
        assert overflow(page) is None
        page.set_viewport_size({"width": 390, "height": 900})
        form, board = (page.locator(sel).bounding_box() for sel in ("form#decision", "#board"))
        assert form and board
        assert board["y"] >= form["y"] + form["height"]  # below it
        assert abs(board["x"] - form["x"]) < 20  # one column
        assert overflow(page) is None
    finally:
        ctx.close()
