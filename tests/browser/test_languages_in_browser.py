"""Issue 8's acceptance, in a real browser: a game created on the home page with one
English and one German player, played to its end through the dev mailbox. The German
player (whose browser asks for German) gets only German, the English player only English:
every email and every page each of them sees speaks their language, and no sentence of
one player's emails and pages turns up in the other's.

Each player uses a browser of their own (a context with their locale). The moves are the
heuristic bot's, read from the database as the server test of a whole game does; every
move is made by opening the email in the dev mailbox, following its link and pressing the
button, or on the game page's form.
"""

from __future__ import annotations

import email
import email.policy
import json
import random
import re

from playwright.sync_api import expect
from sqlmodel import select

from engine.cavemen.bots import heuristic_bot
from engine.core import Action
from engine.registry import get_game
from pbem import services
from pbem.db import session_scope
from pbem.models import Decision, Game, Token
from pbem.tokens import hash_token
from tests.browser.mailbox import Mailbox, delivered
from tests.server.test_german import ONLY_IN, fragments, visible, without_commands, words

ANN = ("Ann", "ann@example.test", "en")
BERND = ("Bernd", "bernd@example.test", "de")
TITLE = "Feierabend"
SEED = 161  # a short game between heuristic bots: about 60 decisions
MAX_MOVES = 300
TOKEN_RE = re.compile(r"http://\S+?/(a|g|invite|host/confirm)/([A-Za-z0-9_-]{43})")


class Player:
    """One person: their browser (in their language) and what they have read."""

    def __init__(self, browser, base: str, who: tuple[str, str, str]) -> None:
        self.name, self.addr, self.lang = who
        locale = "de-DE" if self.lang == "de" else "en-GB"
        self.context = browser.new_context(locale=locale, viewport={"width": 390,
                                                                     "height": 900})
        self.context.set_default_timeout(10_000)
        self.page = self.context.new_page()
        self.box = Mailbox(self.page, base)
        self.seen: set[str] = set()  # the emails already handled
        self.parsed: dict[str, email.message.EmailMessage | None] = {}  # None: not theirs
        self.texts: list[str] = []  # every email and page this player saw, as read

    def read_page(self) -> str:
        html = self.page.content()
        assert f'<html lang="{self.lang}">' in html, (self.name, self.page.url)
        text = visible(html)
        self.texts.append(text)
        return text

    def close(self) -> None:
        self.context.close()


def mails_to(player: Player, mailbox_dir) -> list[tuple[str, email.message.EmailMessage]]:
    """The player's emails as their mail program gets them (file name, message)."""
    for path in sorted(mailbox_dir.glob("*.eml")):
        if path.name not in player.parsed:
            msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
            player.parsed[path.name] = msg if player.addr in str(msg["To"]) else None
    return [(name, msg) for name, msg in sorted(player.parsed.items()) if msg is not None]


def read_mail(player: Player, name: str, msg) -> str:
    """Open the email in the dev mailbox as a person does; check its language."""
    assert msg["Content-Language"] == player.lang, (player.name, msg["Content-Language"])
    html = msg.get_body(("html",)).get_content()
    assert f'<html lang="{player.lang}">' in html
    text = player.box.open(next(m for m in player.box.list() if m.name == name))
    # the reply commands are the game's notation, the same in both languages
    shown = re.sub(r'<p id="reply-commands".*?</p>', "", html, flags=re.S)
    player.texts.append(text + "\n" + visible(shown))
    return text


def new_mails(player: Player, app, mailbox_dir) -> list:
    """The player's emails not handled yet, once the clock's mail loop has sent every
    email that is due."""
    delivered(app)
    return [(n, m) for n, m in mails_to(player, mailbox_dir) if n not in player.seen]


def press(player: Player, url: str, button: str = "button[type=submit]") -> str:
    player.page.goto(url)
    player.read_page()
    player.page.locator(f"main {button}").first.click()
    player.page.wait_for_load_state("domcontentloaded")
    return player.read_page()


def test_each_player_gets_only_their_own_language(live_server, browser, monkeypatch):
    monkeypatch.setattr(services.games, "new_seed", lambda seed: SEED if seed is None else seed)
    base, app, mailbox_dir = live_server.url, live_server.app, live_server.mailbox
    ann, bernd = Player(browser, base, ANN), Player(browser, base, BERND)
    try:
        # Ann (English browser) creates the game for herself and Bernd (German).
        page = ann.page
        page.goto(base + "/")
        assert ann.read_page()
        page.fill("input[name=title]", TITLE)
        for i, (name, addr, lang) in enumerate([ANN, BERND]):
            page.fill(f"input[name=name{i}]", name)
            page.fill(f"input[name=email{i}]", addr)
            page.select_option(f"select[name=lang{i}]", lang)
        page.get_by_role("button", name="Create the game").click()
        expect(page.locator("h1")).to_have_text("Check your email")
        ann.read_page()

        # Bernd's browser shows the home page in German, by its Accept-Language.
        bernd.page.goto(base + "/")
        expect(bernd.page.locator("h1")).to_have_text("Eine Partie per E-Mail starten")
        bernd.read_page()

        # Ann confirms; Bernd accepts his (German) invitation.
        (name, msg), = new_mails(ann, app, mailbox_dir)
        ann.seen.add(name)
        text = read_mail(ann, name, msg)
        press(ann, _link(text, "host/confirm"))
        (name, msg), = new_mails(bernd, app, mailbox_dir)
        bernd.seen.add(name)
        text = read_mail(bernd, name, msg)
        press(bernd, _link(text, "invite"))
        expect(bernd.page.locator("#done h1")).to_be_visible()

        # The game: each answers his or her own emails until both have the result.
        rng = random.Random(SEED)
        results: dict[str, str] = {}
        moves = 0
        while len(results) < 2:
            assert moves < MAX_MOVES, "the game does not end"
            acted = False
            for player in (ann, bernd):
                for name, msg in new_mails(player, app, mailbox_dir):
                    player.seen.add(name)
                    text = read_mail(player, name, msg)
                    if "/a/" not in text and "decision" not in str(msg["Message-ID"]):
                        if ".result." in str(msg["Message-ID"]):
                            results[player.name] = text
                        continue
                    if _decision_of(msg) is None:
                        continue
                    _play(player, app, text, msg, rng)
                    moves += 1
                    acted = True
            # every email due is in the mailbox: no move means nobody was asked for one
            assert acted or len(results) == 2, "the game stopped without a result"
        with app.app_context(), session_scope() as s:
            (game,) = s.exec(select(Game)).all()
            assert game.status == "finished"

        # Nothing one of them read is in the other's language: no sentence of one turns
        # up in the other's, and no little word of the other language appears at all.
        english = set().union(*(fragments(without_commands(t)) for t in ann.texts))
        german = set().union(*(fragments(without_commands(t)) for t in bernd.texts))
        assert english and german
        assert english & german == set()
        for player, other in ((ann, "de"), (bernd, "en")):
            for text in player.texts:
                stray = words(text) & ONLY_IN[other]
                assert not stray, (player.name, sorted(stray), text[:400])
        print(f"\nbrowser game in two languages: {moves} moves, "
              f"{len(ann.texts)} things read by Ann, {len(bernd.texts)} by Bernd")
    finally:
        ann.close()
        bernd.close()


def _link(text: str, kind: str, nth: int = 0) -> str:
    links = [m.group(0) for m in TOKEN_RE.finditer(text) if m.group(1) == kind]
    assert links, (kind, text[:500])
    return links[nth]


def _decision_of(msg) -> int | None:
    m = re.match(r"<pbem\.(?:decision|handover|reminder)\.(\d+)\.", str(msg["Message-ID"]))
    return int(m.group(1)) if m else None


def _play(player: Player, app, text: str, msg, rng: random.Random) -> None:
    """Make the heuristic bot's move for this email's decision, through its links."""
    decision_id = _decision_of(msg)
    with app.app_context(), session_scope() as s:
        decision = s.get(Decision, decision_id)
        if decision.closed_at is not None:
            return
        game = s.get(Game, decision.game_id)
        mod = get_game(game.engine)
        state = mod.from_json(json.loads(game.state))
        choice = heuristic_bot(state, decision.position, rng)
        links = {}
        for m in TOKEN_RE.finditer(text):
            if m.group(1) == "a":
                token = s.get(Token, hash_token(m.group(2)))
                links[m.group(0)] = Action.from_json(token.action)
    for url, action in links.items():
        if action == choice:
            answer = press(player, url, "#confirm")
            assert player.page.locator("#recorded").count() == 1, answer[:300]
            return
    # No one-click link (a discard): the full form on the game page.
    player.page.goto(_link(text, "g"))
    player.read_page()
    form = player.page.locator("form#decision")
    expect(form).to_be_visible()
    for card in choice.get("cards") or ():
        form.locator(f'input[name="discard.cards"][value="{card}"]').check()
    form.locator("button[type=submit]").click()
    player.page.wait_for_load_state("domcontentloaded")
    player.read_page()
    assert player.page.locator("#recorded").count() == 1
