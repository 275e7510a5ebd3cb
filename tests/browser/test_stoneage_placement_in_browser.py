"""A Stone Age placement in Chromium at phone width, as the player sees it: the turn
email's HTML part (in the dev mailbox) names the coming feeding and shows each place as a
row with a link for each number of people and the average yield of each; a card the
player cannot pay for is greyed with the reason and is no link; a count link opens a page
with that number chosen (another is one tick away), and the number confirmed is what is
recorded; the game page's placement list names the yields and the warnings too."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from pbem import services
from tests.browser.mailbox import Mailbox, follow, html_link

PLAYERS = [services.PlayerIn("Ann", "ann@example.test", "en", "UTC"),
           services.PlayerIn("Bob", "bob@example.test", "en", "UTC")]
SEED = 3
FOREST = "1 Wood per 3 pips"
ENOUGH = ("Feeding at the end of this round: 5 people eat 5 Food; you have 12 and "
          "agriculture adds 0: enough.")


def test_a_count_link_from_the_email_opens_its_number_ready_to_confirm(
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
    forest = email.locator("#place-rows li[data-place=forest]")
    expect(forest).to_contain_text(FOREST)
    expect(forest.locator("a")).to_have_text(["×1≈1", "×2≈2", "×3≈3", "×4≈4", "×5≈5"])
    card = email.locator("#place-rows li[data-place=card2]")
    expect(card).to_contain_text("You cannot pay for it now: it costs 2 resources, you have 0")
    expect(card.locator("a")).to_have_count(0)

    # the forest's ×3: three people chosen already; two chosen instead, two recorded
    follow(page, forest.locator("a").nth(2), "**/a/**")
    expect(page.locator("#action")).to_have_text(
        "Place 3 people on Forest: 3 dice, about 3 Wood (1 per 3 pips)")
    expect(page.locator("#variants legend")).to_have_text(
        "How many people do you place on Forest?")
    expect(page.locator("input[name=choice]")).to_have_count(5)
    expect(page.get_by_label("Place 3 people on Forest: 3 dice, about 3 Wood")).to_be_checked()
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
    hunt = page.locator("form#decision #row-hunt")
    expect(hunt).to_contain_text("Hunting grounds 1 Food per 2 pips")
    expect(hunt.locator("label.count-pick")).to_have_count(5)  # x1 ... x5, one click each
    expect(page.locator("form#decision #row-building1")).to_contain_text(
        "You cannot pay for it now with your resources.")
    # a count is one click: the radio of "x3" on the Clay pit (the Forest is taken)
    expect(page.locator("#row-forest")).to_have_count(0)
    page.locator("#row-clay").get_by_label("×3").check()
    expect(page.locator('input[name=choice][value="place clay 3"]')).to_be_checked()
    expect(page.locator("#feeding")).to_have_text(ENOUGH)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the game page is {width} px wide on a 390 px phone"
