"""Table talk: free text in a reply by email (or after a line ``say:``) and the box on
the game page post a message to the table; it shows on the seats' pages and in each
player's next email, at once to a player who asks for it; escaped everywhere, length-
and rate-limited."""

from __future__ import annotations

import pytest
from sqlmodel import select

from pbem.db import session_scope
from pbem.models import EventLog, Move
from pbem.tokens import form_signature
from tests.server.helpers import PLAYERS, SECRET, path_of, snapshot
from tests.server.replying import Inbound
from tests.server.test_replies import answers, spoken

HOSTILE = '<b>bold</b> & <script>alert("x")</script>'


@pytest.fixture
def inbound(app):
    receiver = Inbound(app)
    yield receiver
    receiver.stop()


def talk(app, game_id: str) -> list[EventLog]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(EventLog).where(EventLog.game_id == game_id,
                                                  EventLog.kind == "table_talk")
                           .order_by(EventLog.seq)))


def moves(app, game_id: str) -> int:
    with app.app_context(), session_scope() as s:
        return len(list(s.exec(select(Move).where(Move.game_id == game_id))))


def page_of(table, position: int) -> str:
    mail = [m for m in table.inbox.to(PLAYERS[position].email) if m.under("/g/")][-1]
    return path_of(mail.link("/g/"))


def say_on_page(table, position: int, text: str, at_once: bool = False, page=None):
    page = page or page_of(table, position)
    data = {"sig": form_signature(SECRET, page.rsplit("/", 1)[1]), "text": text,
            "talk_setting": "1"}
    if at_once:
        data["at_once"] = "1"
    return table.client.post(page + "/say", data=data)


def test_free_text_in_a_reply_goes_to_the_table_and_plays_nothing(table, inbound):
    decision = table.open()
    m = table.mail(decision)
    inbound.reply(m, "Good luck everyone,\nthis will be fun!")
    assert moves(table.app, table.game_id) == 0
    (said,) = talk(table.app, table.game_id)
    assert said.actor == decision.position
    assert said.data["text"] == "Good luck everyone, this will be fun!"
    assert answers(table.inbox, m.to_addr) == []  # no answer: the next email shows it


def test_commands_then_text_and_say_lines(table, inbound):
    decision = table.open()
    m = table.mail(decision)
    line = spoken(table, decision)[0]
    inbound.reply(m, f"{line}\nsay: {line} was my only option, sorry")
    assert moves(table.app, table.game_id) == 1
    (said,) = talk(table.app, table.game_id)
    assert said.data["text"] == f"{line} was my only option, sorry"


def test_the_others_read_it_in_their_next_email_and_on_their_page(table, inbound):
    decision = table.open()
    name = PLAYERS[decision.position].name
    assert say_on_page(table, decision.position, "Hello table").status_code == 200
    table.step()  # the game goes on: the next emails tell what happened
    later = [x for x in table.inbox.all() if x.to_addr != PLAYERS[decision.position].email
             and f"{name}: Hello table" in x.text]
    assert later
    other = next(i for i in range(len(PLAYERS)) if i != decision.position)
    assert f"{name}: Hello table" in table.client.get(page_of(table, other)).get_data(
        as_text=True)


def test_talk_is_escaped_in_pages_and_emails(table):
    decision = table.open()
    say_on_page(table, decision.position, HOSTILE)
    other = next(i for i in range(len(PLAYERS)) if i != decision.position)
    html = table.client.get(page_of(table, other)).get_data(as_text=True)
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    table.step()
    mails = [x for x in table.inbox.all() if "alert(" in x.text]
    assert mails
    for x in mails:
        assert "<script>" not in x.html and "&lt;script&gt;" in x.html


def test_spectators_do_not_see_the_talk(table):
    from pbem.models import Game
    from tests.server.helpers import load

    say_on_page(table, table.open().position, "only for players")
    key = load(table.app, Game, table.game_id).spectator_key
    assert "only for players" not in table.client.get(f"/watch/{key}").get_data(as_text=True)


def test_a_player_who_asks_gets_each_message_at_once(table):
    decision = table.open()
    listener = next(i for i in range(len(PLAYERS)) if i != decision.position)
    say_on_page(table, listener, "", at_once=True)
    speaker = page_of(table, decision.position)
    table.inbox.clear()
    say_on_page(table, decision.position, "psst", page=speaker)
    got = table.inbox.all()
    assert [(x.to_addr, x.headline) for x in got] == [
        (PLAYERS[listener].email, f"{PLAYERS[decision.position].name}: psst")]


def test_talk_is_length_and_rate_limited(table, inbound):
    table.app.config.update(TALK_PER_HOUR=2, TALK_MAX_CHARS=50)
    decision = table.open()
    before = snapshot(table.app)
    assert say_on_page(table, decision.position, "x" * 51).status_code == 400
    assert snapshot(table.app) == before
    m = table.mail(decision)
    inbound.reply(m, "y" * 80)  # a reply is cut to the limit instead
    assert talk(table.app, table.game_id)[-1].data["text"] == "y" * 49 + "…"
    assert say_on_page(table, decision.position, "two").status_code == 200
    assert say_on_page(table, decision.position, "three").status_code == 429
    inbound.reply(m, "four")
    assert len(talk(table.app, table.game_id)) == 2
    assert "you have written a lot this hour" in answers(table.inbox, m.to_addr)[-1].text


def test_the_talk_box_needs_the_pages_signature(table):
    page = page_of(table, 0)
    before = snapshot(table.app)
    assert table.client.post(page + "/say", data={"sig": "x", "text": "hi"}).status_code == 400
    assert snapshot(table.app) == before


def test_a_sentence_that_begins_like_a_move_by_one_letter_is_talk(table, inbound):
    m = table.mail(table.open())
    inbound.reply(m, "I think I will pass this time")
    assert moves(table.app, table.game_id) == 0
    assert talk(table.app, table.game_id)[-1].data["text"] == "I think I will pass this time"


# --------------------------------------------------------------------------- talk in emails

WORDS = {"en": "message", "de": "Nachricht"}
HEADING = {"en": "Said at the table since your last email:",
           "de": "Am Tisch gesagt seit deiner letzten E-Mail:"}
NEWS = {"en": "Since your last email:", "de": "Seit deiner letzten E-Mail:"}
CHOOSE = {"en": "Choose with one click", "de": "Wähle mit einem Klick"}


def next_reader(table, speaker: int):
    """Play on (the open decision, and the speaker's after it) until another seat's
    decision is open; its email."""
    table.step()
    while table.open().position == speaker:
        table.step()
    return table.mail(table.open())


def said_in(text: str, name: str, messages: list[str]) -> list[int]:
    """Where each of ``messages`` by ``name`` is in ``text``, in order (ValueError: one
    is missing)."""
    return [text.index(f"{name}: {m}") for m in messages]


@pytest.mark.parametrize("lang", ["en", "de"])
@pytest.mark.parametrize("game", ["cavemen", "stoneage"])
def test_every_message_since_the_last_email_comes_first_and_whole(app, inbound, game, lang):
    """Twelve messages by reply, then a move: the next player's email shows all twelve,
    whole and in order, before the rest of the news (ten lines at most) and its
    choices."""
    from tests.server.test_replies import table_in

    table = table_in(app, game, lang)
    decision = table.open()
    name = PLAYERS[decision.position].name
    m = table.mail(decision)
    sent = [f"{WORDS[lang]} {i}: " + "blah " * 30 + "end" for i in range(1, 13)]
    for text in sent:
        inbound.reply(m, text)
    assert len(talk(app, table.game_id)) == 12
    told = next_reader(table, decision.position)
    at = said_in(told.text, name, sent)
    assert at == sorted(at)
    assert told.text.index(HEADING[lang]) < at[0]
    assert at[-1] < told.text.index(NEWS[lang]) and at[-1] < told.text.index(CHOOSE[lang])
    html = told.html
    at = said_in(html, name, sent)
    assert at == sorted(at) and at[-1] < html.index('id="choices"')


def test_a_flood_of_talk_shows_the_latest_messages_and_links_the_game_page(table):
    table.app.config["TALK_PER_HOUR"] = 30
    decision = table.open()
    name = PLAYERS[decision.position].name
    for i in range(1, 26):
        assert say_on_page(table, decision.position, f"flood {i}").status_code == 200
    told = next_reader(table, decision.position)
    at = said_in(told.text, name, [f"flood {i}\n" for i in range(6, 26)])
    assert at == sorted(at)
    assert f"{name}: flood 5\n" not in told.text
    page = told.under("/g/")[0]
    assert f"(5 earlier messages are on the game page) {page}" in told.text
    assert f'<a href="{page}"' in told.html and "(5 earlier messages are on the game page)" \
        in told.html


def test_an_answer_to_a_reply_does_not_swallow_the_talk(table, inbound):
    """Bob's reply is answered after Ann wrote to the table: the answer tells no news, so
    Bob's next email still shows Ann's message."""
    decision = table.open()
    name = PLAYERS[decision.position].name
    assert say_on_page(table, decision.position, "Hello from me").status_code == 200
    reader = next(i for i in range(len(PLAYERS)) if i != decision.position)
    email = PLAYERS[reader].email
    inbound.reply(table.inbox.to(email)[-1], "bid nonsense")  # answered: not played
    assert answers(table.inbox, email)  # (sent)
    told = news_mails(table, email)
    for _ in range(60):
        if len(news_mails(table, email)) > len(told):
            break
        table.step()
    assert f"{name}: Hello from me" in news_mails(table, email)[len(told)].text


def news_mails(table, email: str) -> list:
    """The emails to ``email`` that tell the news (turns, notices, the result)."""
    return [x for x in table.inbox.to(email) if x.template in ("decision", "notice", "result")]
