"""The page as clear as the email (issue 17, point 2) in Chromium: radio buttons and
checkboxes are a fingertip (44 px) tall on a phone, like the emails' buttons; a player who
switches the language lands on a page already in the new one; the home form shows a row
for each seat of the chosen game, with no script."""

from __future__ import annotations

from playwright.sync_api import expect
from sqlmodel import select

from pbem import services
from pbem.db import session_scope
from pbem.models import Decision, Seat
from pbem.tokens import mint
from tests.browser.screens import overflow

PHONE = {"width": 390, "height": 800}
DESKTOP = {"width": 1280, "height": 800}
FINGERTIP = 44  # px, the height of the emails' buttons (pbem/ui.py, "btn")
PLAYERS = [services.PlayerIn("Ann", "ann@example.com", "en", "Europe/Berlin"),
           services.PlayerIn("Bob", "bob@example.com", "en", "UTC"),
           services.PlayerIn("Cy", "cy@example.com", "en", "UTC")]


def started(app, game: str) -> tuple[services.Created, dict[int, str]]:
    """A started game and a game-page link (raw token) for each seat."""
    with app.app_context():
        created = services.create_game(game, PLAYERS, seed=7, confirm_by_email=False,
                                       start=True)
        with session_scope() as s:
            seats = s.exec(select(Seat).where(Seat.game_id == created.game_id)).all()
            pages = {seat.position: mint(s, "page", created.game_id, seat.id)
                     for seat in seats}
    return created, pages


def deciding(app, game_id: str) -> int:
    """The seat whose decision is open (its game page shows the decision form)."""
    with app.app_context(), session_scope() as s:
        return s.exec(select(Decision).where(Decision.game_id == game_id,
                                             Decision.closed_at.is_(None))).first().position


TOUCH_JS = """() => [...document.querySelectorAll('input[type=radio], input[type=checkbox]')]
  .map(el => { const r = el.getBoundingClientRect();
    return {name: el.name + '=' + el.value, height: r.height, width: r.width,
            shown: r.width > 0 && r.height > 0}; })"""


def small_targets(page) -> tuple[int, list[str]]:
    """How many radio buttons and checkboxes the page shows, and those under 44 px."""
    found = [t for t in page.evaluate(TOUCH_JS) if t["shown"]]
    return len(found), [f"{t['name']}: {t['height']:.0f} px" for t in found
                        if t["height"] < FINGERTIP]


def test_radio_buttons_and_checkboxes_are_a_fingertip_tall_on_a_phone(browser, live_server):
    app, url = live_server.app, live_server.url
    app.config["CREATE_LIMIT_PER_HOUR"] = 100
    cavemen, cavemen_pages = started(app, "cavemen")
    stoneage, stoneage_pages = started(app, "stoneage")
    pages = {
        "home": "/",
        "cavemen decision": f"/g/{cavemen_pages[deciding(app, cavemen.game_id)]}",
        "stone age decision": f"/g/{stoneage_pages[deciding(app, stoneage.game_id)]}",
        "host page": f"/admin/{cavemen.admin_token}",
    }
    ctx = browser.new_context(viewport=PHONE, locale="en-GB")
    try:
        page = ctx.new_page()
        counted = 0
        for name, path in pages.items():
            page.goto(url + path)
            shown, small = small_targets(page)
            assert shown, f"{name}: no radio button or checkbox to check"
            assert small == [], f"{name}: under {FINGERTIP} px at 390 px wide: {small}"
            assert overflow(page) is None, name
            counted += shown
        assert counted >= 6
    finally:
        ctx.close()


def test_switching_the_language_lands_on_a_page_in_the_new_language(browser, live_server):
    created, pages = started(live_server.app, "cavemen")
    ctx = browser.new_context(viewport=PHONE, locale="en-GB")  # an English browser
    try:
        page = ctx.new_page()
        page.goto(f"{live_server.url}/g/{pages[1]}")
        expect(page.locator("html")).to_have_attribute("lang", "en")
        page.locator("#language select[name=lang]").select_option("de")
        page.locator("#language button[type=submit]").click()
        expect(page.locator("html")).to_have_attribute("lang", "de")
        expect(page.locator("#notice")).to_have_text(
            "Deine Sprache ist gespeichert; auch deine nächsten E-Mails kommen in dieser "
            "Sprache.")
        expect(page.get_by_role("heading", name="Spielverlauf")).to_be_visible()
        expect(page.get_by_text("Game log")).to_have_count(0)
        expect(page.locator("#tribe-1")).to_contain_text("Dein Stamm")
        rules = page.locator("#rules-link")
        expect(rules).to_have_attribute("href", "/rules/cavemen?lang=de")
    finally:
        ctx.close()


def test_the_language_switch_lies_over_nothing_on_a_phone(browser, live_server):
    """The header's language buttons (pages of no seat: home, My games, confirmations)
    wrap below the title on a phone, above the page's first box, not over it."""
    ctx = browser.new_context(viewport=PHONE, locale="en-GB")
    try:
        page = ctx.new_page()
        page.goto(f"{live_server.url}/my")
        switch = page.locator("#language-switch").bounding_box()
        first = page.locator("main > *").first.bounding_box()
        assert switch is not None and first is not None
        assert switch["y"] + switch["height"] <= first["y"], (switch, first)
    finally:
        ctx.close()


def test_the_home_form_shows_a_row_for_each_seat_of_the_chosen_game(browser, live_server):
    ctx = browser.new_context(viewport=DESKTOP, locale="en-GB", java_script_enabled=False)
    try:
        page = ctx.new_page()
        page.goto(live_server.url + "/")
        fifth = page.locator("fieldset.player.seat-5")
        expect(page.locator("#game-cavemen")).to_be_checked()
        expect(fifth).to_be_visible()  # Cavemen seats five
        page.locator("label[for=game-stoneage]").click()
        expect(fifth).to_be_hidden()  # Stone Age seats four
        expect(page.locator("fieldset.player.seat-4")).to_be_visible()
        page.locator("label[for=game-cavemen]").click()
        expect(fifth).to_be_visible()
    finally:
        ctx.close()


PRIMARY = "rgb(27, 94, 140)"  # button.primary's background (pbem.css)
BUTTONS_JS = """(sel) => [...document.querySelectorAll(sel)].map(
  b => [b.textContent.trim(), getComputedStyle(b).backgroundColor])"""


def test_the_primary_button_of_each_form_looks_primary(browser, live_server):
    """Issue 32, point 11: the button that does what a form is for stands out (the
    decision's Confirm, saving the standing choices, sending to the table); the others
    (leaving the game, clearing a plan) do not."""
    app, url = live_server.app, live_server.url
    app.config["CREATE_LIMIT_PER_HOUR"] = 100
    stoneage, pages = started(app, "stoneage")
    ctx = browser.new_context(viewport=DESKTOP, locale="en-GB")
    try:
        page = ctx.new_page()
        page.goto(url + f"/g/{pages[deciding(app, stoneage.game_id)]}")
        for form in ("#decision", "#standing", "#talk"):
            buttons = page.evaluate(BUTTONS_JS, f"{form} button[type=submit]")
            assert buttons and buttons[0][1] == PRIMARY, (form, buttons)
        leave = page.evaluate(BUTTONS_JS, "#notifications button[value=leave]")
        assert leave and leave[0][1] != PRIMARY
    finally:
        ctx.close()
