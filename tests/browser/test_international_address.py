"""An address with an international domain, typed into the forms in Chromium, reaches the
server as typed (issue 17, point 7): a browser's email field would rewrite it by IDNA 2003
before sending (``straße.de`` to ``strasse.de``, another domain), so the address fields
are text fields with the email keyboard, and the server writes the domain by IDNA 2008."""

from __future__ import annotations

from playwright.sync_api import expect
from sqlmodel import select

from pbem.db import session_scope
from pbem.models import Seat

PLAYERS = [("Anna", "anna@straße.de"), ("Bob", "bob@example.test")]


def test_an_international_domain_typed_on_the_home_page_keeps_its_sharp_s(live_server, page):
    page.goto(live_server.url + "/")
    for i, (name, addr) in enumerate(PLAYERS):
        page.fill(f"input[name=name{i}]", name)
        page.fill(f"input[name=email{i}]", addr)
    assert page.input_value("input[name=email0]") == "anna@straße.de"
    page.get_by_role("button", name="Create the game").click()
    expect(page.locator("h1")).to_have_text("Check your email")
    with live_server.app.app_context(), session_scope() as s:
        emails = [seat.email for seat in s.exec(select(Seat).order_by(Seat.position))]
    assert emails == ["anna@xn--strae-oqa.de", "bob@example.test"]


def test_a_domain_without_an_idna_2008_form_is_refused_with_the_reason(live_server, page):
    page.goto(live_server.url + "/")
    for i, (name, addr) in enumerate([PLAYERS[1], ("Vic", "vic@i❤.example")]):
        page.fill(f"input[name=name{i}]", name)
        page.fill(f"input[name=email{i}]", addr)
    page.get_by_role("button", name="Create the game").click()
    expect(page.locator("#e-email1")).to_contain_text(
        "the part after the @ cannot be written as an international domain name (IDNA 2008)")
    assert page.input_value("input[name=email1]") == "vic@i❤.example"
