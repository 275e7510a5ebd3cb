"""The home page and the dev mailbox in Chromium (issue 11): the time zone lists start at
the browser's own zone (also when Chromium names it by an old alias) but never overwrite
a zone the user chose; a refused form shows every problem at once and fits a phone; an
email's HTML frame in the dev mailbox is as tall as the email; the strong bots' thinking time
is asked only once a seat is a strong bot, and a refused one stays in sight."""

from __future__ import annotations

from playwright.sync_api import expect
from sqlmodel import select

from pbem import services
from pbem.db import session_scope
from pbem.models import Game
from tests.browser.mailbox import Mailbox
from tests.browser.screens import overflow

PHONE = {"width": 390, "height": 800}


def test_the_time_zone_lists_start_at_the_browsers_zone(browser, live_server, console):
    # Chromium names India's zone "Asia/Calcutta"; the list has it as Asia/Kolkata
    for zone, expected in (("Europe/Vienna", "Europe/Vienna"), ("Asia/Kolkata", "Asia/Kolkata")):
        ctx = browser.new_context(timezone_id=zone, viewport=PHONE)
        try:
            page = ctx.new_page()
            page.on("console", lambda m: m.type == "error" and console.errors.append(m.text))
            page.goto(live_server.url + "/")
            for i in range(5):
                expect(page.locator(f"select[name=tz{i}]")).to_have_value(expected)
            assert overflow(page) is None
        finally:
            ctx.close()
    assert console.errors == []


def test_a_refused_form_keeps_the_zones_chosen_and_shows_every_problem(browser, live_server):
    ctx = browser.new_context(timezone_id="America/New_York", viewport=PHONE, locale="en-GB")
    try:
        page = ctx.new_page()
        page.goto(live_server.url + "/")
        page.fill("input[name=name0]", "Ann")
        page.fill("input[name=email0]", "ann@example.com")
        page.select_option("select[name=tz0]", "UTC")  # chosen on purpose
        page.fill("input[name=email1]", "ann@example.com")  # no name, the same address
        page.fill("input[name=hours]", "soon")
        page.get_by_role("button", name="Create the game").click()
        expect(page.locator("#error-title")).to_have_text(
            "The game was not created: 3 things to fix.")
        expect(page.locator("ul#error li")).to_have_count(3)
        expect(page.locator("select[name=tz0]")).to_have_value("UTC")
        expect(page.locator("select[name=tz1]")).to_have_value("America/New_York")
        expect(page.locator("#f-email1")).to_have_attribute("aria-invalid", "true")
        assert overflow(page) is None
        page.locator('ul#error a[href="#f-hours"]').click()
        expect(page.locator("#f-hours")).to_be_in_viewport()
    finally:
        ctx.close()


def test_the_thinking_time_is_asked_once_a_seat_is_a_strong_bot(browser, live_server):
    ctx = browser.new_context(viewport=PHONE, locale="en-GB")
    try:
        page = ctx.new_page()
        page.goto(live_server.url + "/")
        field = page.locator("#f-bot_ms")
        expect(field).to_be_hidden()
        page.select_option("select[name=bot1]", "easy")
        expect(field).to_be_hidden()
        page.select_option("select[name=bot2]", "strong")
        expect(field).to_be_visible()
        expect(field).to_have_value("100")
        page.fill("input[name=name0]", "Ann")
        page.fill("input[name=email0]", "ann@example.com")
        field.fill("5001")
        page.get_by_role("button", name="Create the game").click()
        expect(page.locator("#e-bot_ms")).to_have_text(
            "A strong bot thinks 10 to 5000 milliseconds a decision.")
        page.select_option("select[name=bot2]", "easy")
        expect(field).to_be_visible()  # its problem stays in sight
        assert overflow(page) is None
        page.select_option("select[name=bot2]", "strong")
        field.fill("250")
        page.get_by_role("button", name="Create the game").click()
        expect(page.locator("h1")).to_have_text("Check your email")
    finally:
        ctx.close()
    with live_server.app.app_context(), session_scope() as s:
        assert [g.policy.bot_ms for g in s.exec(select(Game)).all()] == [250.0]


def test_an_emails_html_frame_in_the_dev_mailbox_is_as_tall_as_the_email(
        browser, live_server):
    with live_server.app.app_context():
        services.create_game("cavemen", [services.PlayerIn("Ann", "ann@example.com"),
                                         services.PlayerIn("Bob", "bob@example.com")],
                             seed=7, confirm_by_email=False, start=True)
    for viewport in (PHONE, {"width": 1280, "height": 800}):
        ctx = browser.new_context(viewport=viewport)
        try:
            page = ctx.new_page()
            box = Mailbox(page, live_server.url)
            mails = box.wait(lambda ms: len(ms) == 2, "for both players")
            box.open(mails[0])
            frame = page.locator("iframe.mail-html")
            page.wait_for_function(
                "() => { const f = document.querySelector('iframe.mail-html');"
                " return f.contentDocument && f.contentDocument.readyState === 'complete'"
                " && f.clientHeight >= f.contentDocument.documentElement.scrollHeight; }")
            inner = frame.evaluate("f => f.contentDocument.documentElement.scrollHeight")
            assert inner > 300  # a whole email, not a sliver
            assert overflow(page) is None
        finally:
            ctx.close()
