"""Stone Age in a real browser: a 2-player game created on the home page is played to its
end through the dev mailbox, with the follow-up email held back as deployed.

Everything goes through Chromium: the home form (choosing Stone Age), the /dev/mail pages,
the links of the emails' HTML part, the confirmation pages and the game page's decision
form (radios, a number of people, ticked tools, resource counts). When the page of a move
carries the player's next decision, the player answers it there, as a person at the
screen would; its email is never sent. The moves are the heuristic bot's choices, read
from the database (the one thing done behind the browser's back, with the game's seed).
"""

from __future__ import annotations

import json
import random
import time

from playwright.sync_api import Page, expect
from sqlmodel import select

from engine.core import Action
from engine.registry import get_game
from pbem import services
from pbem.db import read_scope
from pbem.models import Decision, Game, Token
from pbem.tokens import hash_token
from tests.browser.mailbox import Mailbox, follow, html_link, is_result, text_link

PLAYERS = [("Ann", "ann@example.test"), ("Bob", "bob@example.test")]
SEED = 3
MAX_MOVES = 400


def test_a_stone_age_game_is_played_to_its_end_in_the_browser(live_server, page: Page,
                                                              monkeypatch):
    monkeypatch.setattr(services.games, "new_seed", lambda seed: SEED if seed is None else seed)
    app = live_server.app
    app.config["FOLLOW_UP_MINUTES"] = 10  # as deployed
    base = live_server.url
    box = Mailbox(page, base, app)
    started = time.monotonic()

    page.goto(base + "/")
    page.check("input[name=game][value=stoneage]")
    page.fill("input[name=title]", "Stones")
    for i, (name, addr) in enumerate(PLAYERS):
        page.fill(f"input[name=name{i}]", name)
        page.fill(f"input[name=email{i}]", addr)
    page.get_by_role("button", name="Create the game").click()
    expect(page.locator("h1")).to_have_text("Check your email")
    (host,) = box.wait(lambda ms: ms, "for the host")
    assert host.preview == "Confirm your new game of Stone Age to send the invitations"
    box.open(host)
    follow(page, text_link(page, "/host/confirm/"), "**/host/confirm/**")
    page.get_by_role("button", name="Send invitations").click()
    invitation = box.wait(lambda ms: len(ms) == 2, "of the invitation")[0]
    assert invitation.preview == "Ann invites you to play Stone Age: accept or decline"
    box.open(invitation)
    follow(page, html_link(page, "Accept the invitation"), "**/invite/**")
    page.get_by_role("button", name="Accept the invitation").click()
    expect(page.locator("#done h1")).to_have_text("Thank you")

    rng = random.Random(SEED)
    handled: set[str] = set()
    by_mail = on_page = 0
    while True:
        mails = box.wait(lambda ms: any(is_result(m) or (
            m.name not in handled and m.preview.startswith("Your turn")) for m in ms),
            "with a turn or the result")
        if any(is_result(m) for m in mails):
            result = box.wait(lambda ms: len([m for m in ms if is_result(m)]) == 2,
                              "of the result for both")
            result = [m for m in result if is_result(m)]
            break
        assert by_mail + on_page < MAX_MOVES, "the game does not end"
        mail = next(m for m in mails if m.name not in handled
                    and m.preview.startswith("Your turn"))
        handled.add(mail.name)
        box.open(mail)
        decision = open_decision(app, mail.to)
        if decision is None or decision.id != mail_decision(app, page):
            continue  # already answered on the page of an earlier move
        choice = bot_choice(app, decision, rng)
        link = choice_link(app, page, choice)
        if link is not None:
            follow(page, link, "**/a/**")
            numbers = page.locator("input[name=choice]")
            if numbers.count():  # a place's count link: its number is chosen already
                expect(page.locator(f'input[name=choice][value="{choice}"]')).to_be_checked()
            page.locator("#confirm").click()
        else:
            follow(page, html_link(page, "More choices, and the whole board"), "**/g/**")
            answer_form(page, choice)
        expect(page.locator("#recorded")).to_contain_text("Recorded:")
        by_mail += 1
        while page.locator("form#decision").count():  # the next decision, right here
            decision = open_decision(app, mail.to)
            answer_form(page, bot_choice(app, decision, rng))
            expect(page.locator("#recorded")).to_contain_text("Recorded:")
            on_page += 1

    assert sorted(m.to for m in result) == sorted(f"{n} <{a}>" for n, a in PLAYERS)
    assert result[0].preview.startswith("Game over: you "), result[0].preview
    text = box.open(result[0])
    assert "wins the game" in text or "share the win" in text
    ranking = text.split("The final board", 1)[0]  # the ranking first, broken down
    assert ranking.count("points during the game") == 2 and "  1. " in ranking
    assert on_page > 0 and by_mail > 0
    print(f"\nbrowser Stone Age: {by_mail} moves from emails, {on_page} on the page at once, "
          f"{time.monotonic() - started:.1f} s")


def open_decision(app, to: str) -> Decision | None:
    """The open decision of the player the email went to ("Ann <ann@example.test>")."""
    position = [f"{n} <{a}>" for n, a in PLAYERS].index(to)
    with app.app_context(), read_scope() as s:
        rows = [d for d in s.exec(select(Decision).where(Decision.closed_at.is_(None)))
                if d.position == position]
    assert len(rows) <= 1, rows
    return rows[0] if rows else None


def mail_decision(app, page: Page) -> int | None:
    """The decision the email on screen is about (from its first one-click link)."""
    link = page.frame_locator("iframe").locator("a[href*='/a/']").first
    if not link.count():
        return None
    raw = link.get_attribute("href").rsplit("/a/", 1)[1]
    with app.app_context(), read_scope() as s:
        token = s.get(Token, hash_token(raw))
        return token.decision_id


def bot_choice(app, decision: Decision, rng: random.Random) -> Action:
    with app.app_context(), read_scope() as s:
        game = s.get(Game, decision.game_id)
        mod = get_game(game.engine)
        state = mod.from_json(json.loads(game.state))
    return mod.BOTS["heuristic"](state, decision.position, rng)


def choice_link(app, page: Page, choice: Action):
    """The email's one-click link for ``choice``, if it has one (for a placement: the
    count link of its place and number), as a locator in the email's frame."""
    links = page.frame_locator("iframe").locator("a[href*='/a/']").evaluate_all(
        "els => els.map(a => a.getAttribute('href'))")  # one round trip
    with app.app_context(), read_scope() as s:
        for href in links:
            token = s.get(Token, hash_token(href.rsplit("/a/", 1)[1]))
            if Action.from_json(token.action) == choice:
                return page.frame_locator("iframe").locator(f'a[href="{href}"]')
    return None


def answer_form(page: Page, choice: Action) -> None:
    """Fill in the game page's decision form for ``choice`` as a person would."""
    form = page.locator("form#decision")
    expect(form).to_be_visible()
    radio = form.locator(f'input[name=choice][value="{choice}"]')
    if radio.count():
        radio.check()
    elif choice.kind == "place":
        form.locator(f'input[name="place.word"][value="{choice.get("at")}"]').check()
        form.locator('input[type=number][name="place.word"]').fill(str(choice.get("count")))
    elif choice.kind == "tools":
        form.locator('input[name=choice][value="tools"]').check()
        for tool in choice.get("use", ()):
            box = form.locator(f'input[name="tools.word"][value="{tool}"]:not(:checked)').first
            box.check()
    elif choice.kind == "order":  # an order of one's own: a place for each position
        form.locator('input[name=choice][value="order"]').check()
        for i, place in enumerate(choice.get("places")):
            form.locator('select[name="order.word"]').nth(i).select_option(place)
    elif choice.kind in ("take", "build", "feed"):
        form.locator(f'input[name=choice][value="{choice.kind}"]').check()
        pay = list(choice.get("pay"))
        for resource in ("wood", "brick", "stone", "gold"):
            form.locator(f'input[name="{choice.kind}.count.{resource}"]').fill(
                str(pay.count(resource)))
    else:
        raise AssertionError(f"no field on the form for {choice}")
    form.get_by_role("button", name="Confirm").click()
