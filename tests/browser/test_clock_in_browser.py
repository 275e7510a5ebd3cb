"""A player's clock on the game page runs by itself, in Chromium (issue 20, point 4): the
time left counts down as time passes with no request and no reload, in the page's
language, and a clock that stands still (the player's quiet hours) says so and starts
running when they end. Playwright's clock moves the page's time forward."""

from __future__ import annotations

from datetime import UTC, datetime

from playwright.sync_api import expect
from sqlmodel import col, select

from pbem import services
from pbem.db import session_scope
from pbem.models import Address, Decision, Seat
from pbem.tokens import mint

PLAYERS = [services.PlayerIn("Ann", "ann@example.test", "en", "Europe/Berlin"),
           services.PlayerIn("Bob", "bob@example.test", "de", "Europe/Berlin"),
           services.PlayerIn("Cy", "cy@example.test", "en", "UTC")]
BANK = {"time_control": "bank", "bank_days": 3, "increment_hours": 24, "cap_days": 7}


def deciders_page(app, **policy) -> tuple[str, str]:
    """A started time bank game: the deciding player's game-page link and address."""
    with app.app_context():
        created = services.create_game("cavemen", PLAYERS, {**BANK, **policy}, seed=5,
                                       confirm_by_email=False, start=True)
        with session_scope() as s:
            (decision,) = s.exec(select(Decision).where(
                Decision.game_id == created.game_id, col(Decision.closed_at).is_(None)))
            seat = s.get(Seat, decision.seat_id)
            return mint(s, "page", created.game_id, seat.id), seat.email


def test_the_readers_clock_counts_down_by_itself(live_server, context, console):
    link, _ = deciders_page(live_server.app)
    page = context.new_page()
    page.clock.install()
    page.goto(f"{live_server.url}/g/{link}")
    left = page.locator("#my-clock .clock-left")
    expect(left).to_have_text("2 days 23 hours")  # a few seconds ran since it opened
    expect(page.locator("#my-clock .clock-state")).to_have_text("(running)")
    page.clock.fast_forward("05:00:00")
    expect(left).to_have_text("2 days 18 hours")
    page.clock.fast_forward(int(66.5 * 3600 * 1000))
    expect(left).to_have_text("29 minutes")
    assert console.errors == []


def test_a_clock_standing_still_in_quiet_hours_starts_when_they_end(live_server, context,
                                                                      console):
    link, email = deciders_page(live_server.app, pause_quiet="on")
    hour = datetime.now(UTC).hour  # quiet now, for two hours from the whole hour
    with live_server.app.app_context(), session_scope() as s:
        s.add(Address(address=email, timezone="UTC", quiet_from=hour,
                      quiet_to=(hour + 2) % 24))
    page = context.new_page()
    page.clock.install()
    page.goto(f"{live_server.url}/g/{link}")
    state, left = page.locator("#my-clock .clock-state"), page.locator("#my-clock .clock-left")
    expect(state).to_have_text("(standing still now)")
    before = left.text_content()
    page.clock.fast_forward("01:00:00")  # still quiet: nothing ran
    expect(left).to_have_text(before or "")
    page.clock.fast_forward("02:30:00")  # past their end: it runs again
    expect(state).to_have_text("(running)")
    expect(left).not_to_have_text(before or "")
    assert console.errors == []
