"""Everything a German player sees is German (issue 8, item 2 and 4).

One game is played through every kind of email there is (confirmation, invitations, a
decline, turns, a reminder, every host control, a timeout, a hand-over, leaving, the
result). Each email is then rendered in English and in German, and so is every page:
any sentence of the German rendering that also stands in the English one was left
untranslated, and fails the test.
"""

from __future__ import annotations

import email
import email.policy
import html as html_lib
import re
from datetime import timedelta

import pytest
from flask_babel import force_locale
from sqlmodel import select

from pbem import mail, services
from pbem.db import session_scope
from pbem.models import Game, Outbox, Seat
from tests.server.helpers import (
    PLAYERS,
    Table,
    clock_plays_bots,
    create_on_web,
    only_form,
    path_of,
)

WORD_RE = re.compile(r"[A-Za-zÄÖÜäöüß]{2,}")
NOISE_RE = re.compile(r"https?://\S+|\S+@\S+|<[^>]+>|[\w/.-]*\d[\w/.-]*")
# Words that are the same in both languages, so a fragment made only of them proves
# nothing: names of people, products and things that are not translated.
SAME_IN_BOTH = {"pbem", "Cavemen", "Stone", "Age", "Bot", "Ann", "Bob", "Cy", "Dee", "UTC",
                "Europe", "Berlin", "America", "New", "York", "Asia", "Tokyo", "Tiger", "Wolf",
                "Megaloceros", "Styracosaurus", "Smilodon", "Mammut", "English",
                "Deutsch", "Message", "ID", "References", "Host", "Status", "Email",
                "Dev", "Game", "Friday", "Discord", "Slack", "Matrix"}
TITLE = "Feierabend"
# Little words that only one of the two languages has: one of the other language's in a
# text means a sentence (or half of one) was left untranslated.
ONLY_IN = {
    "en": {"the", "your", "you", "is", "are", "to", "and", "of", "for", "with", "has",
           "this", "game", "turn", "who", "be", "by", "not", "on", "from"},
    "de": {"der", "die", "das", "und", "du", "dein", "deine", "ist", "nicht", "mit",
           "für", "zu", "ein", "eine", "hat", "spiel", "von", "auf", "dem", "den"},
}


def words(text: str) -> set[str]:
    """The words of a text as a reader sees them: links, addresses and anything with a
    digit in it (ids such as a hex game id "4be2", which would read as "be") left out."""
    text = NOISE_RE.sub(" ", text)
    return {w.lower() for w in re.findall(r"[A-Za-zÄÖÜäöüß]+", text)}


def fragments(text: str) -> set[str]:
    """The text's sentences and lines, as runs of at least two words that are not
    names, numbers, addresses or links."""
    out = set()
    for part in re.split(r"[\n.!?:;()\[\]·–|/]+", NOISE_RE.sub(" ", text)):
        words = [w for w in WORD_RE.findall(part)]
        if len([w for w in words if w not in SAME_IN_BOTH]) >= 2:
            out.add(" ".join(words))
    return out


COMMANDS_RE = re.compile(r"^(?:Or answer this email with a command|Oder antworte auf diese "
                         r"E-Mail mit einem Befehl).*\n(?:  .*\n?)*", re.M)


def without_commands(text: str) -> str:
    """A text without the list of reply commands of a decision email: commands in the
    reader's words, whose names and numbers may be the same in both languages ("gold",
    "biete 3")."""
    return COMMANDS_RE.sub("", text)


def leftovers(german: str, english: str) -> set[str]:
    """Sentences left in English: the same in both renderings, or with a little English
    word in the German one."""
    stray = words(german) & ONLY_IN["en"]
    return (fragments(german) & fragments(english)) | {
        f"{word!r} in: {context(german, word)}" for word in stray}


def context(text: str, word: str) -> str:
    found = re.search(rf"(?i).{{0,40}}\b{word}\b.{{0,40}}", text, re.S)
    return " ".join(found.group(0).split()) if found else ""


def visible(html: str) -> str:
    html = re.sub(r"(?s)<(style|script)[^>]*>.*?</\1>", " ", html)
    html = re.sub(r'(?s)<form method="post" action="/language".*?</form>', " ", html)
    # time zones in a list are named by their cities, often the same in both languages
    html = re.sub(r'<option value="\w+/[^"]*"[^>]*>[^<]*</option>', " ", html)
    return html_lib.unescape(re.sub(r"<[^>]+>", "\n", html))


# --------------------------------------------------------------------------- a game


@pytest.fixture
def world(saved, app, client, inbox):
    """A game that went through every kind of email; returns (app, table, web client).
    Played once per worker and database, then copied."""
    return app, saved("german world", lambda: play_world(app, client, inbox)), client


def play_world(app, client, inbox) -> Table:
    """Play a game through every kind of email there is."""
    host_mail = create_on_web(client, app, title=TITLE)
    url = path_of(host_mail.link("/host/confirm/"))
    client.post(url, data=only_form(client.get(url).get_data(as_text=True)).data())
    decline = path_of(inbox.to(PLAYERS[1].email, "invitation")[0].text_links()[1])
    client.post(decline, data=only_form(client.get(decline).get_data(as_text=True)).data())
    with app.app_context():
        created = services.create_game("cavemen", PLAYERS, seed=7, confirm_by_email=False,
                                       start=True, title=TITLE)
    table = Table(app, client, inbox, created.game_id, created.admin_token, bot_seed=7)
    admin = created.admin_token
    with app.app_context():
        for _ in range(3):
            table.step()
        decision = table.open()
        services.send_reminder(decision.id, decision.next_reminder_at or
                               decision.deadline_at - timedelta(hours=1))
        services.pause_game(admin)
        services.resume_game(admin)
        services.extend_deadline(admin, 2)
        table.inbox.deliver()
        page = path_of(table.mail(table.open()).link("/g/"))
        services.take_vacation(page.rsplit("/", 1)[1], 1)
        services.set_bot(admin, 1, "heuristic")
        services.set_bot(admin, 1, None)
        decision = table.open()
        services.time_out(decision.id, decision.deadline_at + timedelta(seconds=1))
        services.hand_over(admin, 2, services.PlayerIn("Dee", "dee@example.com"))
    invite = inbox.to("dee@example.com", "handover_invite")[0]
    accept = path_of(invite.text_links()[0])
    client.post(accept, data=only_form(client.get(accept).get_data(as_text=True)).data())
    with app.app_context():
        for _ in range(6):
            table.step()
        services.set_bot(admin, 0, "heuristic")
        services.set_bot(admin, 1, "heuristic")
        services.set_bot(admin, 2, "heuristic")
    clock_plays_bots(app, table.game_id)  # the bots play it to the end
    inbox.deliver()
    with app.app_context(), session_scope() as s:
        failed = [r.last_error for r in s.exec(select(Outbox)) if r.attempts > 1
                  or r.status == "undeliverable"]
    assert failed == []  # every email rendered and went out at the first try
    return table


def render(app, row_id: int, lang: str) -> str:
    """An email of the outbox as its reader sees it: first line, text and HTML."""
    with app.app_context(), session_scope() as s:
        row = s.get(Outbox, row_id)
        game, seat = s.get(Game, row.game_id), s.get(Seat, row.seat_id)
        with force_locale(lang):
            out, _seen, _merged = mail.compose.render(s, row, game, seat,
                                                      seat.email.lower() == row.rcpt)
        s.rollback()
    msg = email.message_from_bytes(out.data, policy=email.policy.default)
    text = msg.get_body(("plain",)).get_content()
    return text + "\n" + visible(msg.get_body(("html",)).get_content())


def test_every_email_kind_is_german_for_a_german_reader(world):
    app, table, _client = world
    with app.app_context(), session_scope() as s:
        rows = list(s.exec(select(Outbox).where(Outbox.status == "sent")))
    kinds = {}
    for row in rows:
        kinds.setdefault((row.template, row.context.get("headline"),
                          row.context.get("reminder")), row.id)
    templates = {k[0] for k in kinds}
    assert templates >= {"host_confirm", "invitation", "declined", "game_started",
                         "decision", "notice", "handover_invite", "welcome", "result"}
    problems = {}
    for key, row_id in sorted(kinds.items(), key=str):
        german, english = render(app, row_id, "de"), render(app, row_id, "en")
        assert german != english, key
        left = leftovers(german, english)
        if left:
            problems[str(key)] = sorted(left)[:8]
    assert problems == {}


def page_urls(app, table, client) -> dict[str, str]:
    inbox = table.inbox
    mails = inbox.all()
    host = [m for m in mails if m.template == "host_confirm"][0]
    return {
        "home": "/",
        "not found": "/nowhere",
        "host confirm": path_of(host.link("/host/confirm/")),
        "host page": path_of(host.link("/admin/")),
        "game page": path_of(inbox.to(PLAYERS[0].email)[-1].link("/g/")),
        "unsubscribe": "/u/" + inbox.to(PLAYERS[1].email)[-1].unsubscribe_token,
        "invitation": path_of(inbox.to(PLAYERS[2].email, "invitation")[0].text_links()[0]),
        "hand-over": path_of(inbox.to("dee@example.com", "handover_invite")[0]
                             .text_links()[0]),
        "one-click": path_of(next(m for m in mails if m.action_links()).action_links()[0]),
    }


@pytest.mark.parametrize("name", ["home", "not found", "host confirm", "host page",
                                  "game page", "unsubscribe", "invitation", "hand-over",
                                  "one-click"])
def test_every_page_is_german_for_a_german_reader(world, name):
    app, table, client = world
    url = page_urls(app, table, client)[name]
    german, english = _page(app, client, url, "de"), _page(app, client, url, "en")
    assert german != english
    assert leftovers(german, english) == set()


def _page(app, client, url: str, lang: str) -> str:
    """The page as a reader in ``lang`` sees it: their seats speak ``lang``, and so does
    their browser."""
    with app.app_context(), session_scope() as s:
        for seat in s.exec(select(Seat)):
            seat.language = lang
    resp = client.get(url, headers={"Accept-Language": lang})
    html = resp.get_data(as_text=True)
    assert f'<html lang="{lang}">' in html, url
    return visible(html)



def test_the_checker_reads_words_not_ids() -> None:
    """A hex id ("4be2c9") is no English "be"; an English "be" in a sentence still is."""
    assert "be" not in words("Spiel 4be2c9, Partie a1be")
    assert words("it will be") & ONLY_IN["en"] == {"be"}
