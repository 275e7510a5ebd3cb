""""Notify me on this device" in Chromium (issue 34, point 3), up to the browser's
permission: the game page offers the button (the browser has Web Push); a click asks for
the permission; refused, the page says notifications are blocked; granted, the browser
subscribes with the server's key through the page's service worker, which fails here
(no push service can be reached offline), and the page says so and nothing is
registered. The seat's devices are listed with a button each that removes it. Both
languages, at 390 and 1280 px, with axe-core. Set PBEM_PUSH_SHOTS=/folder to keep
screenshots of the box (push34-<lang>-<width>.png)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from playwright.sync_api import expect
from sqlmodel import select

from pbem import services
from pbem.db import session_scope
from pbem.models import PushSubscription, Seat
from pbem.tokens import mint
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.browser.screens import AXE, axe_violations, overflow, settle

WORDS = {
    "en": {"name": ["Ann", "Bob", "Cy"], "on": "Notify me on this device",
           "blocked": "Notifications are blocked", "failed": "could not set up notifications",
           "offer": "Get a notification on this device", "remove": "Remove",
           "removed": "no longer notified"},
    "de": {"name": ["Anna", "Bernd", "Carla"], "on": "Auf diesem Gerät benachrichtigen",
           "blocked": "Benachrichtigungen sind für diese Seite in diesem Browser blockiert",
           "failed": "konnte keine Benachrichtigungen einrichten",
           "offer": "Lass dich auf diesem Gerät benachrichtigen", "remove": "Entfernen",
           "removed": "nicht mehr über dieses Spiel benachrichtigt"},
}


@pytest.fixture(autouse=True)
def _axe() -> None:
    if not AXE.is_file():
        reason = f"{AXE} is missing: run `make test`, or `npm ci --prefix tests/browser`"
        if os.environ.get("CI") == "true":
            pytest.fail(f"axe-core is required under CI=true: {reason}")
        pytest.skip(reason)


def seat_link(app, lang: str) -> tuple[str, int]:
    """A started Cavemen game whose players speak ``lang``: the game-page link of the
    first seat, and that seat's id."""
    players = [services.PlayerIn(name, f"{name.lower()}@example.test", lang, "Europe/Berlin")
               for name in WORDS[lang]["name"]]
    with app.app_context():
        created = services.create_game("cavemen", players, seed=5, confirm_by_email=False,
                                       start=True)
        with session_scope() as s:
            seat = s.exec(select(Seat).where(Seat.game_id == created.game_id,
                                             Seat.position == 0)).one()
            return mint(s, "page", created.game_id, seat.id), seat.id or 0


def devices(app, seat_id: int) -> list[PushSubscription]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(PushSubscription)
                           .where(PushSubscription.seat_id == seat_id)))


def new_page(browser, console, lang: str, **options):
    ctx = browser.new_context(viewport={"width": 390, "height": 844},
                              locale={"en": "en-GB", "de": "de-DE"}[lang], **options)
    ctx.set_default_timeout(10_000)
    ctx.add_init_script(path=str(AXE))
    page = ctx.new_page()
    console.watch(page)
    return ctx, page


def looks_right(page) -> list[str]:
    """What is wrong with the page at both widths (sideways overflow; axe at 390 px)."""
    problems = []
    for width in (390, 1280):
        page.set_viewport_size({"width": width, "height": 844})
        settle(page)
        if (found := overflow(page)) is not None:
            problems.append(found)
    page.set_viewport_size({"width": 390, "height": 844})
    settle(page)
    return problems + axe_violations(page)


@pytest.mark.parametrize("lang", ["en", "de"])
def test_refused_permission_says_notifications_are_blocked(live_server, browser, console,
                                                           lang):
    words = WORDS[lang]
    raw, seat_id = seat_link(live_server.app, lang)
    ctx, page = new_page(browser, console, lang)  # no permission granted: refused
    try:
        page.goto(f"{live_server.url}/g/{raw}")
        button = page.get_by_role("button", name=words["on"])
        expect(button).to_be_visible()
        expect(page.locator("#push-state")).to_contain_text(words["offer"])
        assert looks_right(page) == []
        button.click()
        expect(page.locator("#push-state")).to_contain_text(words["blocked"])
        expect(button).to_be_hidden()
        assert page.evaluate("Notification.permission") == "denied"
        assert devices(live_server.app, seat_id) == []
        page.reload()  # the page remembers: it offers nothing the browser refuses
        expect(page.locator("#push-state")).to_contain_text(words["blocked"])
        expect(page.get_by_role("button", name=words["on"])).to_be_hidden()
    finally:
        ctx.close()
    assert console.errors == []


# What Chromium itself logs when a context like Playwright's (incognito) subscribes.
CHROMIUM_REFUSES = "Chrome currently does not support the Push API in incognito mode"


@pytest.mark.parametrize("lang", ["en", "de"])
def test_granted_permission_subscribes_and_a_refusing_push_service_is_said_cleanly(
        live_server, browser, console, lang):
    """Granted, the page registers the server's service worker and subscribes; this
    browser context refuses at once (no push in a private window), and the page says
    the browser could not set it up, and offers to try again."""
    words = WORDS[lang]
    raw, seat_id = seat_link(live_server.app, lang)
    ctx, page = new_page(browser, console, lang, permissions=["notifications"])
    try:
        page.goto(f"{live_server.url}/g/{raw}")
        page.get_by_role("button", name=words["on"]).click()
        expect(page.locator("#push-state")).to_contain_text(words["failed"])
        expect(page.get_by_role("button", name=words["on"])).to_be_enabled()
        # the service worker it asked for is the server's, for the game pages
        scope = page.evaluate("navigator.serviceWorker.getRegistration('/g/')"
                              ".then(r => r && r.scope)")
        assert scope == f"{live_server.url}/g/"
        assert devices(live_server.app, seat_id) == []  # nothing was registered
        assert looks_right(page) == []
    finally:
        ctx.close()
    assert [e for e in console.errors if CHROMIUM_REFUSES not in e.text] == []


def test_a_push_service_that_never_answers_is_said_cleanly(live_server, browser, console,
                                                           tmp_path):
    """A browser profile of its own (not a private window) asks its push service, which
    cannot be reached offline and never answers: after 20 seconds (a fake clock here)
    the page says it could not set notifications up."""
    words = WORDS["en"]
    raw, seat_id = seat_link(live_server.app, "en")
    ctx = browser.browser_type.launch_persistent_context(
        str(tmp_path / "profile"), executable_path=CHROMIUM, args=CHROMIUM_ARGS,
        headless=True, permissions=["notifications"], viewport={"width": 390, "height": 844})
    try:
        ctx.set_default_timeout(10_000)
        page = ctx.pages[0] if ctx.pages else ctx.new_page()
        console.watch(page)
        page.clock.install()
        page.goto(f"{live_server.url}/g/{raw}")
        page.get_by_role("button", name=words["on"]).click()
        page.wait_for_function("navigator.serviceWorker.controller !== undefined && "
                               "document.getElementById('push-on').disabled")
        page.clock.run_for(21_000)
        expect(page.locator("#push-state")).to_contain_text(words["failed"])
        expect(page.get_by_role("button", name=words["on"])).to_be_enabled()
        assert devices(live_server.app, seat_id) == []
    finally:
        ctx.close()
    assert console.errors == []


def browser_fields(label: str) -> dict[str, str]:
    point = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return {"endpoint": f"https://push.example.com/send/{os.urandom(8).hex()}",
            "p256dh": base64.urlsafe_b64encode(point).rstrip(b"=").decode(),
            "auth": base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode(),
            "label": label}


@pytest.mark.parametrize("lang", ["en", "de"])
def test_the_seats_devices_are_listed_and_one_is_removed_with_its_button(
        live_server, browser, console, lang):
    words = WORDS[lang]
    raw, seat_id = seat_link(live_server.app, lang)
    with live_server.app.test_request_context():
        for label in ("Firefox (Android)", "Chrome (Windows)"):
            services.add_push_device(raw, browser_fields(label))
    ctx, page = new_page(browser, console, lang)
    try:
        page.goto(f"{live_server.url}/g/{raw}")
        box = page.locator("#push")
        expect(box).to_contain_text("Firefox (Android)")
        expect(box).to_contain_text("Chrome (Windows)")
        expect(page.get_by_role("button", name=words["on"])).to_be_visible()
        assert looks_right(page) == []
        shots = os.environ.get("PBEM_PUSH_SHOTS")
        if shots:
            for width in (390, 1280):
                page.set_viewport_size({"width": width, "height": 844})
                settle(page)
                box.screenshot(path=str(Path(shots) / f"push34-{lang}-{width}.png"))
            page.set_viewport_size({"width": 390, "height": 844})
        page.locator("#push-devices li", has_text="Firefox (Android)").get_by_role(
            "button", name=words["remove"]).click()
        expect(page.locator("#notice")).to_contain_text(words["removed"])
        expect(box).not_to_contain_text("Firefox (Android)")
        assert [d.label for d in devices(live_server.app, seat_id)] == ["Chrome (Windows)"]
    finally:
        ctx.close()
    assert console.errors == []
