"""The page as clear as the email (issue 17, point 2), the emails' half, read as they
arrive at a real SMTP server: every link keeps the player's language, a deadline in UTC
is written once, counted things agree with their number ("1 die", never "1 dice"),
Cavemen's card values are written in words (no "H/I/F"), and the German emails name each
score with one word."""

from __future__ import annotations

import re

import pytest
from flask import render_template_string
from flask_babel import force_locale

from pbem import mail, services
from tests.server.conftest import GAME_SEED
from tests.server.helpers import PLAYERS, HrefParser, Inbox, Mail, Table

ANN, BOB, CY = PLAYERS
GERMAN_BOB = services.PlayerIn("Bob", "bob@example.com", "de", "Europe/Berlin")
UTC_CY = services.PlayerIn("Cy", "cy@example.com", "en", "UTC")


class SmtpInbox(Inbox):
    """The emails as the SMTP server received them (the clock's delivery pass first)."""

    def __init__(self, app, smtp) -> None:
        super().__init__(app)
        self.smtp = smtp

    def all(self) -> list[Mail]:
        self.deliver()
        return list(self.smtp.mails)

    def raw(self) -> list[bytes]:  # pragma: no cover - not read here
        raise NotImplementedError

    def clear(self) -> None:
        self.deliver()
        self.smtp.mails.clear()


@pytest.fixture
def mailed(make_app, smtp):
    """A 3-player Cavemen game (Ann, Bob in German, Cy in UTC) mailing over SMTP."""
    smtp.start()
    app = make_app(MAIL_BACKEND="smtp", SMTP_HOST="127.0.0.1", SMTP_PORT=smtp.port,
                   SMTP_TIMEOUT=5)
    with app.app_context():
        created = services.create_game("cavemen", [ANN, GERMAN_BOB, UTC_CY],
                                       seed=GAME_SEED, confirm_by_email=False, start=True)
        assert mail.deliver_due()["sent"] == 3
    inbox = SmtpInbox(app, smtp)
    return Table(app, app.test_client(), inbox, created.game_id, created.admin_token,
                 bot_seed=GAME_SEED)


def turn_mail(table: Table, addr: str) -> Mail:
    """The latest turn email to ``addr``, playing on until there is one."""
    table.play_until(lambda d, state: table.seats[d.position].email == addr)
    return [m for m in table.inbox.to(addr) if m.template == "decision"][-1]


# --------------------------------------------------------------------------- links


def test_every_rules_link_of_a_german_email_keeps_german(mailed):
    german = turn_mail(mailed, BOB.email)
    html_rules = [h for h in HrefParser.hrefs(german.html) if "/rules/" in h]
    text_rules = [u for u in german.text_links() if "/rules/" in u]
    assert len(html_rules) > 10  # the footer's link and the glossary links of the board
    assert text_rules
    for href in html_rules + text_rules:
        assert re.search(r"/rules/cavemen\?lang=de(#|$)", href), href
    english = [m for m in mailed.inbox.to(ANN.email) if m.template == "game_started"][-1]
    assert all("?lang=en" in h for h in HrefParser.hrefs(english.html) if "/rules/" in h)


# --------------------------------------------------------------------------- deadlines


def test_a_deadline_in_utc_is_written_once_in_the_email(mailed):
    (cy,) = [m for m in mailed.inbox.to(CY.email) if m.template == "decision"]
    (line,) = [x for x in cy.text.split("\n") if x.startswith("Decide by ")]
    assert re.fullmatch(r"Decide by \w+ \d+ \w+ \d{4}, \d\d:\d\d \(UTC\)\.( .*)?", line), line
    when = re.search(r'<p id="when"[^>]*>(.*?)</p>', cy.html, re.S)[1]
    assert when.count("UTC") == 1
    ann = turn_mail(mailed, ANN.email)  # another zone: its time, then UTC
    assert re.search(r"\(Europe/Berlin\) / \d{4}-\d\d-\d\d \d\d:\d\d UTC\.", ann.text)


# --------------------------------------------------------------------------- words


def test_cavemen_text_emails_write_card_values_in_words(mailed):
    mailed.play_until(lambda d, state: state.round >= 2)
    texts = [m.text for m in mailed.inbox.all() if m.template == "decision"]
    assert texts
    for text in texts:
        assert "H/I/F" not in text and "J/E/S" not in text
        assert not re.search(r"\b\d+/\d+/\d+\b", text), text
    english = "\n".join(m.text for m in mailed.inbox.to(ANN.email))
    assert re.search(r"Hunting \d+, Inventing \d+, Foraging \d+", english)
    german = "\n".join(m.text for m in mailed.inbox.to(BOB.email))
    assert re.search(r"Jagd-Wert \d+, Erfindungs-Wert \d+, Sammel-Wert \d+", german)


SCORES = ("Jagd-Wert", "Erfindungs-Wert", "Sammel-Wert")  # Hunting, Inventing, Foraging
OTHER_WORDS = re.compile(r"\b(Jagen|Erfinden|Sammeln)\b")  # the same scores, said otherwise


def test_german_emails_name_each_score_with_one_word(mailed):
    mailed.play_until(lambda d, state: state.round >= 2)
    german = [m for m in mailed.inbox.to(BOB.email) if m.template == "decision"]
    assert len(german) >= 3
    for m in german:
        for text in (m.text, re.sub(r"<[^>]+>", " ", m.html)):
            assert not OTHER_WORDS.search(text), OTHER_WORDS.search(text)
            assert all(word in text for word in SCORES), text


# --------------------------------------------------------------------------- counts

CHOICE = ('{%- import game_part("stoneage", "narration.jinja") as n with context -%}'
          '{{ n.choice(a, card, fx) }}')


@pytest.mark.parametrize(("lang", "fx", "expected"), [
    ("en", {"dice": 1, "about": 0, "resource": "wood", "per": 3},
     "Place 1 person on Forest: 1 die, about 0 Wood (1 per 3 pips)"),
    ("en", {"dice": 2, "about": 2, "resource": "wood", "per": 3},
     "Place 1 person on Forest: 2 dice, about 2 Wood (1 per 3 pips)"),
    ("de", {"dice": 1, "about": 0, "resource": "wood", "per": 3},
     "Place 1 person on Forest: 1 Würfel, etwa 0 Holz (1 je 3 Augen)"),
])
def test_stone_age_counts_dice_in_the_singular_and_the_plural(app, lang, fx, expected):
    text = render_choice(app, lang, {"kind": "place", "at": "forest", "count": 1}, fx)
    if lang == "de":  # the move itself is German too
        assert text.endswith(expected.split(": ", 1)[1]), text
    else:
        assert text == expected


@pytest.mark.parametrize(("total", "expected"), [(1, "1 pip, 0 Wood"), (4, "4 pips, 1 Wood")])
def test_stone_age_counts_pips_in_the_singular_and_the_plural(app, total, expected):
    fx = {"total": total, "yield": total // 3, "resource": "wood"}
    text = render_choice(app, "en", {"kind": "no_tools"}, fx)
    assert text == f"Add no tools: {expected}"


def render_choice(app, lang: str, action: dict, fx: dict) -> str:
    from engine.registry import get_game
    from pbem import localize

    mod = get_game("stoneage")
    state = mod.setup(["a", "b"], 1)
    with app.test_request_context(), force_locale(lang):
        card = localize.lookup(mod, state, localize.translation_for(mod, state, lang))
        return render_template_string(CHOICE, a=action, card=card, fx=fx).strip()


def test_no_stone_age_template_writes_a_count_without_ngettext():
    """Every counted noun of the Stone Age (and Cavemen) narration and boards goes through
    ngettext: no gettext string puts a number placeholder right before a noun that has a
    singular (the upper end of a range, "1 to %(n)s resources", and the pips a resource
    is worth, "1 per %(per)s pips", are never 1)."""
    from pbem import TEMPLATES

    nouns = r"(dice|die|pips?|people|persons?|points?|resources?|cards?|buildings?|Teeth|Tooth)"
    counted = re.compile(rf"(?<!to )(?<!per )%\(\w+\)s {nouns}\b")
    for game in ("stoneage", "cavemen"):
        for path in (TEMPLATES / "games" / game).iterdir():
            if path.suffix not in (".jinja", ".html", ".txt") or path.stem.startswith("rules"):
                continue
            for m in re.finditer(r'(?<!n)_\("([^"]*)"', path.read_text(encoding="utf-8")):
                assert not counted.search(m[1]), (path.name, m[1])
