"""A Stone Age placement in Chromium at phone width, as the player sees it: the turn
email's HTML part (in the dev mailbox) names the coming feeding and each place's numbers
of people with their yields; a place's link opens a page that asks how many (the browser
will not send it without a number), and the number chosen is what is recorded; a card the
player cannot pay for warns on its page; the game page's placement list names the yields
and the warnings too."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from pbem import services
from tests.browser.mailbox import Mailbox, follow, html_link

PLAYERS = [services.PlayerIn("Ann", "ann@example.test", "en", "UTC"),
           services.PlayerIn("Bob", "bob@example.test", "en", "UTC")]
SEED = 3
FOREST = re.compile(r"^Place 1 to 5 people on Forest: about 1, 2, 3, 4 or 5 Wood")
ENOUGH = ("Feeding at the end of this round: 5 people eat 5 Food; you have 12 and "
          "agriculture adds 0: enough.")


def test_a_placement_from_the_email_chooses_its_number_on_the_confirmation_page(
        live_server, page: Page):
    with live_server.app.app_context():
        services.create_game("stoneage", PLAYERS, seed=SEED, confirm_by_email=False,
                             start=True)
    page.set_viewport_size({"width": 390, "height": 900})
    box = Mailbox(page, live_server.url)
    (turn,) = [m for m in box.wait(lambda ms: any(m.preview.startswith("Your turn")
                                                  for m in ms), "with a turn")
               if m.preview.startswith("Your turn")]
    box.open(turn)
    email = page.frame_locator("iframe")
    expect(email.locator("#hint")).to_have_text(ENOUGH)
    expect(email.locator("a", has_text=FOREST)).to_have_count(1)
    card = email.locator("a", has_text="civilization card costing 2")
    expect(card).to_contain_text("you cannot pay for it now: it costs 2 resources, you have 0")
    mail_url = page.url

    # the card's page warns before the confirmation
    follow(page, html_link(page, card.inner_text().strip()), "**/a/**")
    expect(page.locator("#caution")).to_be_visible()
    expect(page.locator("#caution")).to_contain_text("You cannot pay for it now")

    # the forest's page: no number, no move; two people chosen, two recorded
    page.goto(mail_url)
    follow(page, html_link(page, email.locator("a", has_text=FOREST).inner_text().strip()),
           "**/a/**")
    expect(page.locator("#variants legend")).to_have_text(
        "How many people do you place on Forest?")
    expect(page.locator("input[name=choice]")).to_have_count(5)
    page.locator("#confirm").click()  # nothing chosen: the browser asks for a number
    expect(page.locator("#recorded")).to_have_count(0)
    assert page.locator("input[name=choice]").first.evaluate("e => !e.validity.valid")
    page.get_by_label("Place 2 people on Forest: 2 dice, about 2 Wood").check()
    page.locator("#confirm").click()
    expect(page.locator("#recorded")).to_have_text("Recorded: Place 2 people on Forest")

    # the next player's game page lists each place with its yield and warnings
    box.wait(lambda ms: len([m for m in ms if m.preview.startswith("Your turn")]) == 2,
             "for the second player")
    (second,) = [m for m in box.list() if m.preview.startswith("Your turn")
                 and m.name != turn.name]
    box.open(second)
    follow(page, html_link(page, "More choices, and the whole board"), "**/g/**")
    where = page.locator("form#decision fieldset.choices")
    expect(where.locator("label", has_text="Place 1 to 5 people on Hunting grounds: about "
                                           "1, 3, 5, 7 or 8 Food")).to_be_visible()
    expect(where.locator("label", has_text="building stack 1")).to_contain_text(
        "you cannot pay for it now with your resources")
    expect(page.locator("#feeding")).to_have_text(ENOUGH)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the game page is {width} px wide on a 390 px phone"
