"""A Stone Age turn email a phone can read (issue 31): in Chromium at 390 px, the placement
email of a late round, four players and ten people at home, ends its choices (the
bottom of ``#choices``) within 1,800 px of its top, in English and in German; and no part
of it sticks out sideways. The position is written into a real game with the engine's
builders; the email is the host's "remind now", delivered to the dev mailbox by the
clock's mail loop and shown as a mail program shows its HTML part."""

from __future__ import annotations

import email
import email.policy
import json

import pytest
from playwright.sync_api import Page
from sqlmodel import select

from engine import stoneage
from pbem import services
from pbem.db import session_scope
from pbem.models import Decision, Game
from tests.browser import screens
from tests.browser.mailbox import delivered
from tests.engine.stoneage_builders import board, build

MOST_PX = 1800  # the goal: about two screens of a phone
NAMES = {"en": ["Ann", "Bob", "Cy", "Dee"], "de": ["Anna", "Bernd", "Carla", "Dieter"]}


def late_round(names: list[str], placer: int) -> stoneage.State:
    """Round 12 with four players: the three before ``placer`` have placed once (Forest,
    Hut, the card costing 2); ``placer`` has all of its ten people at home, some
    resources but not enough for the dearer cards and most buildings."""
    start = (placer + 1) % 4
    boards = [board(people=8, food=6, wood=3, brick=2, agriculture=4, tools=(3, 2),
                    score=70 + 5 * i) for i in range(4)]
    boards[placer] = board(people=10, food=3, wood=2, brick=1, stone=1, agriculture=5,
                           tools=(3, 3, 2), score=81)
    spots = [("forest", start, 3), ("hut", (start + 1) % 4, 2), ("card2", (start + 2) % 4, 1)]
    return build(*boards, start=start, turn=placer, round=12, spots=spots,
                 stacks=[2, 3, 1, 2], players=names)


@pytest.mark.parametrize("lang", ["en", "de"])
def test_a_late_round_placement_email_ends_its_choices_within_1800_px_at_390(
        live_server, page: Page, lang):
    app = live_server.app
    players = [services.PlayerIn(n, f"{n.lower()}@example.test", lang, "Europe/Berlin")
               for n in NAMES[lang]]
    with app.app_context():
        created = services.create_game("stoneage", players, seed=5, confirm_by_email=False,
                                       start=True)
    delivered(app)
    with app.app_context(), session_scope() as s:
        (decision,) = s.exec(select(Decision).where(Decision.game_id == created.game_id,
                                                    Decision.closed_at.is_(None))).all()
        placer, decision_id = decision.position, decision.id
        s.get(Game, created.game_id).state = json.dumps(
            stoneage.to_json(late_round(NAMES[lang], placer)))
    before = set(live_server.mailbox.glob("*.eml"))
    with app.app_context():
        services.remind_now(created.admin_token, decision_id)
    delivered(app)
    (new,) = set(live_server.mailbox.glob("*.eml")) - before
    msg = email.message_from_bytes(new.read_bytes(), policy=email.policy.default)
    assert msg["To"].addresses[0].addr_spec == players[placer].email

    page.set_viewport_size({"width": 390, "height": 900})
    page.set_content(msg.get_body(("html",)).get_content(), wait_until="load")
    rows = page.locator("#place-rows > li")
    assert rows.count() >= 14  # five resource places, the village, cards, buildings
    assert page.locator("#place-rows li[data-place=hunt] a").count() == 10
    bottom = page.evaluate("() => document.getElementById('choices')"
                           ".getBoundingClientRect().bottom + window.scrollY")
    width = page.evaluate("() => document.documentElement.scrollWidth")
    print(f"\n{lang}: the choices end at {bottom:.0f} px of "
          f"{page.evaluate('() => document.documentElement.scrollHeight')} px")
    if screens.screenshots_wanted():  # make screens: a look at it, at both widths
        screens.SCREENS.mkdir(exist_ok=True)
        for w in screens.WIDTHS:
            page.set_viewport_size({"width": w, "height": 900})
            page.screenshot(path=str(screens.SCREENS / f"stoneage-mail-late-{lang}-{w}.png"),
                            full_page=True)
    assert bottom <= MOST_PX, f"the choices end at {bottom:.0f} px at 390 px wide"
    assert width <= 390, f"the email is {width} px wide on a 390 px phone"
