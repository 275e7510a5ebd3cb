"""The page as clear as the email (issue 17, point 2), the pages' half: a language switch
lands on a page already in the new language; no page that only says something is a dead
end; the home form has a row for each seat of the chosen game and no more; a deadline
in UTC is written once; the log tells events in the order the emails do; the host's
seat control chooses nothing until the host does; a turn email held back while its
player may answer on the page says so on the host page."""

from __future__ import annotations

import re

from pbem import services
from pbem.models import Seat
from pbem.tokens import form_signature
from tests.server.conftest import start_game
from tests.server.helpers import (
    PLAYERS,
    SECRET,
    Inbox,
    Table,
    create_on_web,
    load,
    new_game_data,
    new_game_form,
    only_form,
    path_of,
    snapshot,
    text_of,
)
from tests.server.test_follow_up import follow_up_table, play_until_a_follow_up
from tests.server.timekit import admin_form, admin_post, page_of

ANN, BOB, CY = PLAYERS
ENGLISH_BROWSER = {"Accept-Language": "en-GB,en;q=0.9"}


def lang_of(html: str) -> str:
    return re.search(r'<html lang="(\w+)"', html)[1]


def onward(html: str) -> list[tuple[str, str]]:
    """The links of a page's ``#onward`` list: (address, words)."""
    block = re.search(r'<ul class="plain onward" id="onward">(.*?)</ul>', html, re.S)
    assert block, "the page has no links onwards"
    return [(href, re.sub(r"<[^>]+>", "", text).strip())
            for href, text in re.findall(r'<a href="([^"]+)"[^>]*>(.*?)</a>', block[1])]


# --------------------------------------------------------------------------- language


def switch_language(table: Table, position: int, lang: str, headers=ENGLISH_BROWSER) -> str:
    page = page_of(table.inbox, table.seats[position].email)
    raw = page.rsplit("/", 1)[1]
    resp = table.client.post(f"{page}/language", headers=headers,
                             data={"sig": form_signature(SECRET, raw), "lang": lang})
    assert resp.status_code == 200
    return resp.get_data(as_text=True)


def test_the_page_after_a_language_switch_is_already_in_the_new_language(table):
    html = switch_language(table, 1, "de")  # Bob, whose browser speaks English
    assert lang_of(html) == "de"
    assert text_of(html, "notice") == ("Deine Sprache ist gespeichert; auch deine nächsten "
                                       "E-Mails kommen in dieser Sprache.")
    assert text_of(html, "waiting").startswith("Wir warten auf: Cy: um die Muschel bieten")
    assert "Spielverlauf" in html and "Game log" not in html
    assert "Your tribe" not in html and "Dein Stamm" in html
    assert load(table.app, Seat, table.seats[1].id).language == "de"
    back = switch_language(table, 1, "en", headers={"Accept-Language": "de-DE"})
    assert lang_of(back) == "en" and "Game log" in back and "Spielverlauf" not in back
    assert text_of(back, "notice") == "Your language is saved; your next emails use it too."


def test_a_notice_on_a_seats_page_speaks_the_seats_language_not_the_browsers(table):
    switch_language(table, 1, "de")
    page = page_of(table.inbox, BOB.email)
    raw = page.rsplit("/", 1)[1]
    resp = table.client.post(f"{page}/vacation", headers=ENGLISH_BROWSER,
                             data={"sig": form_signature(SECRET, raw), "days": "1"})
    html = resp.get_data(as_text=True)
    assert lang_of(html) == "de"
    assert text_of(html, "notice") == ("Deine Fristen wurden verschoben. Verbleibender "
                                       "Urlaub: 6 Tage.")


def test_glossary_links_on_a_seats_page_keep_its_language(table):
    switch_language(table, 1, "de")
    html = table.client.get(page_of(table.inbox, BOB.email), headers=ENGLISH_BROWSER
                            ).get_data(as_text=True)
    rules = re.findall(r'href="(/rules/[^"]*)"', html)
    assert len(rules) > 10  # the header's link and the boards' terms
    assert all("?lang=de" in href for href in rules), [h for h in rules if "lang=de" not in h]


# --------------------------------------------------------------------------- no dead ends


def test_the_game_confirmed_page_opens_the_host_page(app, client):
    host_mail = create_on_web(client, app)
    url = path_of(host_mail.link("/host/confirm/"))
    html = client.post(url, data=only_form(client.get(url).get_data(as_text=True)).data()
                       ).get_data(as_text=True)
    assert text_of(html, "confirmed").startswith("Game confirmed")
    (first, *rest) = onward(html)
    assert first[1] == "Open your host page" and first[0].startswith("/admin/")
    host = client.get(first[0]).get_data(as_text=True)
    assert text_of(host, "status") == "waiting for the players to accept"
    assert rest == [("/my", "Get a link to all your games"), ("/", "Start a game of your own")]
    again = client.get(url).get_data(as_text=True)  # the link again: already confirmed
    assert [href for href, _ in onward(again)] == ["/my", "/"]


def answer(client, url: str) -> str:
    return client.post(url, data=only_form(client.get(url).get_data(as_text=True)).data()
                       ).get_data(as_text=True)


def test_the_thank_you_page_of_an_accepted_invitation_opens_the_game_page(app, client):
    create_on_web(client, app)
    inbox = Inbox(app)
    url = path_of(inbox.to(ANN.email, "host_confirm")[0].link("/host/confirm/"))
    answer(client, url)
    accept = path_of(inbox.to(BOB.email, "invitation")[0].text_links()[0])
    html = answer(client, accept)
    assert "Thank you" in text_of(html, "done")
    (href, words), *_ = onward(html)
    assert words == "Open the game page" and href.startswith("/g/")
    game = client.get(href).get_data(as_text=True)
    assert "The game has not started yet" in game and "Bob: accepted" in game
    decline = path_of(inbox.to(CY.email, "invitation")[0].text_links()[1])
    assert [href for href, _ in onward(answer(client, decline))] == ["/my", "/"]


def test_the_thank_you_page_of_a_hand_over_opens_the_game_page(table):
    admin_post(table.client, table.admin, "handover", position="1", name="Dee",
               email="dee@example.com", lang="en", tz="UTC")
    offer = table.inbox.to("dee@example.com", "handover_invite")[0]
    html = answer(table.client, path_of(offer.text_links()[0]))
    assert "Thank you" in text_of(html, "done")
    (href, words), *_ = onward(html)
    assert words == "Open the game page"
    game = table.client.get(href).get_data(as_text=True)
    assert "Your tribe" in game and 'id="language"' in game  # Dee's own seat, her page


# --------------------------------------------------------------------------- the home form


def player_rows(html: str) -> list[str]:
    """The classes of the home form's player rows."""
    return re.findall(r'<fieldset class="(player [^"]*)">', html)


def test_the_home_form_has_a_row_for_each_seat_of_the_largest_game_and_marks_them(client):
    html = client.get("/").get_data(as_text=True)
    largest = max(g["max"] for g in services.offered_games())
    assert player_rows(html) == [f"player seat-{n}" for n in range(1, largest + 1)]
    for g in services.offered_games():  # each game's radio says how many seats it has
        assert re.search(rf'id="game-{g["name"]}" value="{g["name"]}" class="max-{g["max"]}"',
                         html)
    resp = client.get("/static/pbem.css")
    css = resp.get_data(as_text=True)
    resp.close()
    for g in services.offered_games():
        if g["max"] < largest:  # rows beyond the chosen game's seats are hidden
            rule = re.search(rf"#new-game:has\(\.max-{g['max']}:checked\) \.player:is\(([^)]*)\)",
                             css)
            assert rule and f".seat-{g['max'] + 1}" in rule[1], css


def test_a_row_beyond_the_chosen_games_seats_is_refused_at_that_row(app, client):
    row = 4  # the fifth row; Stone Age seats four
    players = [*PLAYERS, services.PlayerIn("Dee", "dee@example.com", "en", "UTC")]
    data = new_game_data(new_game_form(client), players, game="stoneage")
    data.update({f"name{row}": "Eve", f"email{row}": "eve@example.com"})
    before = snapshot(app)
    resp = client.post("/new", data=data)
    assert resp.status_code == 400
    html = resp.get_data(as_text=True)
    assert text_of(html, f"e-name{row}") == ("This game takes at most 4 players: leave "
                                             "player 5 empty, or choose a game for more "
                                             "players.")
    assert f'class="player seat-{row + 1}"' in html and 'aria-invalid="true"' in html
    assert snapshot(app) == before
    assert client.post("/new", data={**data, f"name{row}": "", f"email{row}": ""}
                       ).status_code == 200  # four players are fine


# --------------------------------------------------------------------------- deadlines


def test_a_deadline_in_utc_is_written_once_on_the_game_page(app, client, inbox):
    players = [ANN, BOB, services.PlayerIn("Cy", "cy@example.com", "en", "UTC")]
    start_game(app, players)
    cy = client.get(page_of(inbox, "cy@example.com")).get_data(as_text=True)
    waiting = text_of(cy, "waiting")
    assert waiting.count("UTC") == 1 and "(UTC)" in waiting and " / " not in waiting
    ann = text_of(client.get(page_of(inbox, ANN.email)).get_data(as_text=True), "waiting")
    assert re.search(r"\(Europe/Berlin\) / \d{4}-\d\d-\d\d \d\d:\d\d UTC$", ann), ann


# --------------------------------------------------------------------------- the log


def log_lines(html: str) -> list[str]:
    """The game log's entries as read, oldest first as shown, times left out."""
    block = re.search(r'<div id="log" class="log">(.*)</div>', html, re.S)[1]
    entries = re.findall(r"<li><time[^>]*>.*?</time> (.*?)</li>", block, re.S)
    return [" ".join(re.sub(r"<[^>]+>", "", e).split()) for e in entries]


def email_lines(mail) -> list[str]:
    """The events a turn email tells, in its order (its text part)."""
    text = mail.text.split("Since your last email:\n", 1)[1]
    return [line[4:] for line in text.split("\n") if line.startswith("  - ")]


def test_the_log_tells_events_in_the_order_of_the_emails(table):
    table.play_until(lambda d, state: state.round >= 2)
    for _ in range(4):
        table.step()
    for seat in table.seats:
        mail = [m for m in table.inbox.to(seat.email) if "Since your last email:" in m.text][-1]
        told = email_lines(mail)
        assert len(told) >= 3, mail.text
        page = table.client.get(path_of(mail.link("/g/"))).get_data(as_text=True)
        log = log_lines(page)
        starts = [i for i in range(len(log)) if log[i:i + len(told)] == told]
        assert starts, f"{seat.name}: the email's events\n{told}\nare not in this order " \
                       f"in the log\n{log}"


# --------------------------------------------------------------------------- the host page


def test_the_seat_control_chooses_no_bot_until_the_host_does(table):
    form = admin_form(table.client, table.admin, "bot")
    html = table.client.get(f"/admin/{table.admin}").get_data(as_text=True)
    select = re.search(r'<select name="bot" required>(.*?)</select>', html, re.S)
    assert select, "the 'played by' list is not required"
    first = re.match(r'<option value="" disabled selected>([^<]+)</option>', select[1])
    assert first and first[1] == "choose…"
    assert select[1].count(" selected") == 1
    before = snapshot(table.app)
    resp = table.client.post(form.action, data=form.data(position="1"))  # as pressed
    assert resp.status_code == 400
    assert "Choose who plays the seat: a bot or its player." in resp.get_data(as_text=True)
    assert snapshot(table.app) == before
    assert table.client.post(form.action, data=form.data(position="1", bot="default")
                             ).status_code == 200


def test_a_turn_email_held_for_the_page_says_so_on_the_host_page(make_app):
    table = follow_up_table(make_app)
    before, _form, _html = play_until_a_follow_up(table)
    html = table.client.get(f"/admin/{table.admin}").get_data(as_text=True)
    name = table.seats[before.position].name
    held = [li for li in re.findall(r'<li data-status="pending">(.*?)</li>', html, re.S)
            if name in li]
    assert held, "no email waits for the player who has a follow-up decision"
    text = " ".join(re.sub(r"<[^>]+>", " ", held[0]).split())
    assert "the player may answer on the game page first; if not, it is sent then" in text
    assert "waiting to be sent" not in text
    assert re.search(r"held until \w+ \d\d:\d\d", text), text
