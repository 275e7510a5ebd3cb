"""The host page: whom the game waits for and until when, "remind now" (once per
decision), the emails in words (folded after 20), and "play again with the same players"
at the end. Every test runs on SQLite and PostgreSQL, under a frozen clock at T0 (a
Monday, 09:00 UTC; the host Ann lives in Europe/Berlin, UTC+1)."""

from __future__ import annotations

import html as html_lib
import re
import threading
from datetime import timedelta

import pytest
from sqlmodel import select

from pbem import services
from pbem.db import session_scope
from pbem.mail import MailError
from pbem.models import Decision, Game, Outbox
from pbem.services.games import next_title
from pbem.tokens import form_signature
from tests.server.helpers import (
    PLAYERS,
    SECRET,
    Inbox,
    clock_plays_bots,
    forms,
    load,
    open_decisions,
    outbox,
    seats_of,
    snapshot,
    text_of,
    token_of,
    token_row,
)
from tests.server.timekit import (
    ANN,
    BOB,
    CY,
    T0,
    admin_form,
    admin_post,
    at,
    new_game,
    page_of,
    sweep_at,
)

DEADLINE_BERLIN = "Wednesday 16 January 2030, 10:00 (Europe/Berlin)"  # T0 + 48 h


def read(html: str, element_id: str) -> str:
    """An element's text as a reader sees it, no blank left before punctuation where a
    tag ended ("Cy: bid", not "Cy : bid")."""
    found = text_of(html, element_id)
    assert found is not None, element_id
    return re.sub(r" ([:,.;)])", r"\1", found)


def host_page(client, admin: str) -> str:
    resp = client.get(f"/admin/{admin}")
    assert resp.status_code == 200
    return resp.get_data(as_text=True)


def remind(client, admin: str, decision_id, sig: str | None = "page"):
    """Press "Remind now" for a decision (``sig``: the page's own, or as given)."""
    data = {"decision": str(decision_id)}
    if sig == "page":
        data["sig"] = form_signature(SECRET, admin)
    elif sig is not None:
        data["sig"] = sig
    return client.post(f"/admin/{admin}/remind", data=data)


def reminders(inbox: Inbox, addr: str) -> list:
    return [m for m in inbox.to(addr) if m.template == "reminder"]


def email_items(html: str, list_id: str = "outbox") -> list[tuple[str, str]]:
    """The (status, words) of each email in a list of the host page."""
    m = re.search(rf'<(ul|details) [^>]*id="{list_id}"[^>]*>(.*?)</\1>', html, re.S)
    assert m, list_id
    return [(status, " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", words)).split()))
            for status, words in re.findall(r'<li data-status="(\w+)">(.*?)</li>', m.group(2),
                                            re.S)]


def games(app) -> list[Game]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Game).order_by(Game.created_at)))


# --------------------------------------------------------------------------- waiting for


def test_the_host_page_says_whom_it_waits_for_what_and_until_when_in_the_hosts_zone(
        app, client, frozen, game):
    waiting = read(host_page(client, game.admin_token), "waiting")
    assert f"Cy: bid for the conch until {DEADLINE_BERLIN} · in 2 days" in waiting
    assert "Ann" not in waiting and "Bob" not in waiting
    at(frozen, 45)
    assert "in 3 hours" in read(host_page(client, game.admin_token), "waiting")
    at(frozen, 48.5)  # past the deadline, before the clock's sweep
    waiting = read(host_page(client, game.admin_token), "waiting")
    assert "overdue" in waiting and "Remind now" not in waiting


def test_a_paused_game_says_so_and_offers_no_reminder(app, client, game):
    admin_post(client, game.admin_token, "pause")
    html = host_page(client, game.admin_token)
    assert "The game is paused." in read(html, "waiting")
    assert f"Cy: bid for the conch until {DEADLINE_BERLIN}" in read(html, "waiting")
    assert admin_form(client, game.admin_token, "remind") is None
    (decision,) = open_decisions(app, game.game_id)
    before = snapshot(app)
    resp = remind(client, game.admin_token, decision.id)
    assert resp.status_code == 409
    assert read(resp.get_data(as_text=True), "error") == \
        "The game is paused; resume it before reminding anyone."
    assert snapshot(app) == before


def test_a_game_waiting_for_invitations_names_who_has_not_answered(app, client):
    with app.app_context():
        created = services.create_game("cavemen", PLAYERS, confirm_by_email=False)
    waiting = read(host_page(client, created.admin_token), "waiting")
    assert "Not answered yet: Bob, Cy" in waiting


# --------------------------------------------------------------------------- remind now


def test_remind_now_sends_the_usual_reminder_once_and_the_page_says_when(
        app, client, game, inbox):
    (decision,) = open_decisions(app, game.game_id)
    form = admin_form(client, game.admin_token, "remind")
    assert form.hidden == {"sig": form_signature(SECRET, game.admin_token),
                           "decision": str(decision.id)}
    inbox.clear()
    resp = client.post(form.action, data=form.data())
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    assert "Done: a reminder is on its way to Cy." in read(html, "notice")
    assert "Reminded at Mon 10:00" in read(html, "waiting")
    assert admin_form(client, game.admin_token, "remind") is None  # no second button
    (mail,) = inbox.all()
    assert (mail.to_addr, mail.template) == (CY.email, "reminder")
    assert mail.headline.startswith("Reminder:")
    assert "bid for the conch" in mail.text
    assert load(app, Decision, decision.id).host_reminded_at is not None


def test_a_second_press_says_already_reminded_and_sends_nothing(app, client, game, inbox):
    (decision,) = open_decisions(app, game.game_id)
    assert remind(client, game.admin_token, decision.id).status_code == 200
    inbox.deliver()
    before = snapshot(app)
    resp = remind(client, game.admin_token, decision.id)
    assert resp.status_code == 409
    error = read(resp.get_data(as_text=True), "error")
    assert "Cy was already reminded of this decision at Mon 10:00; nothing more was sent" \
        in error
    assert snapshot(app) == before
    assert len(reminders(inbox, CY.email)) == 1


def test_a_double_click_sends_one_reminder(app, client, game, inbox):
    """Two presses at the same moment, on two connections: the game row lock serves
    them in turn, and the second finds the decision reminded."""
    (decision,) = open_decisions(app, game.game_id)
    barrier = threading.Barrier(2)
    statuses = []

    def press():
        c = app.test_client()
        barrier.wait()
        statuses.append(remind(c, game.admin_token, decision.id).status_code)

    threads = [threading.Thread(target=press) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [200, 409]
    assert len(reminders(inbox, CY.email)) == 1
    assert len(outbox(app, Outbox.idempotency_key == f"reminder:{decision.id}:host")) == 1


def test_remind_now_needs_the_host_pages_signature(app, client, game):
    (decision,) = open_decisions(app, game.game_id)
    page_raw = token_of(page_of(Inbox(app), CY.email))
    before = snapshot(app)
    for sig in (None, "0" * 64, form_signature(SECRET, page_raw)):
        resp = remind(client, game.admin_token, decision.id, sig=sig)
        assert resp.status_code == 400
        assert "did not come from this site" in resp.get_data(as_text=True)
    assert snapshot(app) == before


def test_remind_now_for_a_closed_decision_says_it_is_over(app, client, game, inbox):
    (decision,) = open_decisions(app, game.game_id)
    with app.app_context():  # Cy bids before the host presses the button of an old page
        services.set_bot(game.admin_token, 2, "heuristic")
    clock_plays_bots(app, game.game_id)
    with app.app_context():
        services.set_bot(game.admin_token, 2, None)
    assert load(app, Decision, decision.id).closed_at is not None
    inbox.deliver()
    before = snapshot(app)
    resp = remind(client, game.admin_token, decision.id)
    assert resp.status_code == 409
    assert "Cy has decided meanwhile" in read(resp.get_data(as_text=True), "error")
    assert snapshot(app) == before


@pytest.mark.parametrize("value", ["", "x", "99999999", "-1"])
def test_remind_now_for_no_such_decision_says_so(app, client, game, value):
    before = snapshot(app)
    resp = remind(client, game.admin_token, value)
    assert resp.status_code == 400
    assert read(resp.get_data(as_text=True), "error")
    assert snapshot(app) == before


def test_remind_now_cannot_reach_a_decision_of_another_game(app, client, game):
    with app.app_context():
        other = services.create_game("cavemen", PLAYERS, seed=1, confirm_by_email=False,
                                     start=True)
    (theirs,) = open_decisions(app, other.game_id)
    before = snapshot(app)
    resp = remind(client, game.admin_token, theirs.id)
    assert resp.status_code == 400 and "no such decision" in resp.get_data(as_text=True)
    assert snapshot(app) == before


def test_the_clocks_reminders_still_come_after_a_host_reminder(app, client, frozen, game,
                                                                inbox):
    (decision,) = open_decisions(app, game.game_id)
    assert remind(client, game.admin_token, decision.id).status_code == 200
    result = sweep_at(app, frozen, 24)  # half time: the scheduled reminder
    assert result["reminders"] == 1
    assert len(reminders(inbox, CY.email)) == 2
    assert load(app, Decision, decision.id).reminders_sent == 2


# --------------------------------------------------------------------------- emails in words


def test_the_emails_are_listed_in_words_newest_first(app, client, game):
    items = email_items(host_page(client, game.admin_token))
    assert set(items[:2]) == {("sent", "Ann · game-started email · sent Mon 10:00"),
                              ("sent", "Bob · game-started email · sent Mon 10:00")}
    assert items[2] == ("sent", "Cy · your-turn email (bid for the conch) · sent Mon 10:00")
    admin_post(client, game.admin_token, "pause")
    items = email_items(host_page(client, game.admin_token))
    assert items[0] == ("pending", "Cy · news: game paused · waiting to be sent")
    assert '<table id="outbox"' not in host_page(client, game.admin_token)


def test_an_undeliverable_email_says_why_in_words(app, client, game, inbox):
    inbox.backend.fail = MailError("recipient refused: 550 no such user", permanent=True)
    admin_post(client, game.admin_token, "pause")
    inbox.deliver()
    html = host_page(client, game.admin_token)
    status, words = email_items(html)[0]
    assert status == "undeliverable"
    assert words == ("Cy · news: game paused · could not be delivered: the mail server "
                     "refused it (recipient refused: 550 no such user) — check the address")
    assert "check the address" in read(html, "undeliverable")


def test_more_than_20_emails_fold_the_older_ones(app, client, game):
    for _ in range(7):  # 3 notices each, after the 3 emails of the start
        admin_post(client, game.admin_token, "extend", hours="1")
    html = host_page(client, game.admin_token)
    shown, older = email_items(html), email_items(html, "older-emails")
    assert len(shown) == 20 and len(older) == 4
    assert "4 older emails" in read(html, "older-emails")
    assert older[-1] == ("sent", "Cy · your-turn email (bid for the conch) · sent Mon 10:00")
    assert all("deadline extended" in words for _status, words in shown)


# --------------------------------------------------------------------------- play again


def end_by_bots(app, admin: str, game_id: str, players: int = 3) -> None:
    with app.app_context():
        for position in range(players):
            services.set_bot(admin, position, "heuristic")
    clock_plays_bots(app, game_id)  # the bots play to the end


def play_again(client, admin: str, sig: str | None = "page"):
    data = {}
    if sig == "page":
        data["sig"] = form_signature(SECRET, admin)
    elif sig is not None:
        data["sig"] = sig
    return client.post(f"/admin/{admin}/again", data=data, follow_redirects=False)


def test_play_again_after_the_end_invites_the_same_players_to_a_new_game(
        app, client, game, inbox):
    with app.app_context():
        services.extend_deadline(game.admin_token, 5)
    end_by_bots(app, game.admin_token, game.game_id)
    old = load(app, Game, game.game_id)
    assert old.status == "finished"
    html = host_page(client, game.admin_token)
    assert "Invitations go to: Bob, Cy." in read(html, "ended")
    form = admin_form(client, game.admin_token, "again")
    inbox.clear()
    resp = client.post(form.action, data=form.data(), follow_redirects=False)
    assert resp.status_code == 303
    new_raw = token_of(resp.headers["Location"])
    new_id = token_row(app, new_raw).game_id
    assert load(app, Game, game.game_id).follow_up_game_id == new_id
    new = load(app, Game, new_id)
    assert (new.engine, new.status, new.title) == ("cavemen", "inviting", old.title + " (2)")
    assert new.policy == old.policy
    seats = seats_of(app, new_id)
    assert [(x.name, x.email, x.language, x.timezone) for x in seats] == \
        [(p.name, p.email, p.language, p.timezone) for p in PLAYERS]
    assert [(x.is_host, x.invite, x.bot) for x in seats] == \
        [(True, "accepted", None), (False, "invited", None), (False, "invited", None)]
    assert sorted((m.to_addr, m.template) for m in inbox.all()) == \
        [(BOB.email, "invitation"), (CY.email, "invitation")]
    page = client.get(resp.headers["Location"])
    assert page.status_code == 200
    assert "Not answered yet: Bob, Cy" in read(page.get_data(as_text=True), "waiting")


def test_a_second_press_of_play_again_opens_the_same_new_game(app, client, game, inbox):
    with app.app_context():
        services.abandon_game(game.admin_token)
    first = play_again(client, game.admin_token)
    inbox.deliver()
    before = len(games(app))
    again = play_again(client, game.admin_token)
    assert again.status_code == 303
    assert token_row(app, token_of(again.headers["Location"])).game_id == \
        token_row(app, token_of(first.headers["Location"])).game_id
    assert len(games(app)) == before
    assert len(inbox.of("invitation")) == 2
    html = host_page(client, game.admin_token)
    assert "You already started a new game with these players." in read(html, "ended")


def test_play_again_double_click_makes_one_game(app, client, game, inbox):
    with app.app_context():
        services.abandon_game(game.admin_token)
    barrier = threading.Barrier(2)
    places = []

    def press():
        c = app.test_client()
        barrier.wait()
        resp = play_again(c, game.admin_token)
        places.append((resp.status_code, token_row(app, token_of(resp.headers["Location"]))
                       .game_id))

    threads = [threading.Thread(target=press) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [status for status, _id in places] == [303, 303]
    assert places[0][1] == places[1][1]
    assert len(games(app)) == 2
    assert len(inbox.of("invitation")) == 2


def test_play_again_is_only_for_a_game_that_has_ended(app, client, game):
    assert admin_form(client, game.admin_token, "again") is None
    before = snapshot(app)
    resp = play_again(client, game.admin_token)
    assert resp.status_code == 409
    assert "once it has ended" in read(resp.get_data(as_text=True), "error")
    assert snapshot(app) == before


def test_play_again_needs_the_host_pages_signature(app, client, game):
    with app.app_context():
        services.abandon_game(game.admin_token)
    page_raw = token_of(page_of(Inbox(app), CY.email))
    before = snapshot(app)
    for sig in (None, "0" * 64, form_signature(SECRET, page_raw)):
        resp = play_again(client, game.admin_token, sig=sig)
        assert resp.status_code == 400
    assert snapshot(app) == before


def test_play_again_counts_against_the_hourly_creation_limit(make_app, frozen):
    app = make_app(CREATE_LIMIT_PER_HOUR=0)
    created = new_game(app)
    with app.app_context():
        services.abandon_game(created.admin_token)
    client = app.test_client()
    resp = play_again(client, created.admin_token)
    assert resp.status_code == 429
    assert "Too many games created from here" in read(resp.get_data(as_text=True), "error")
    assert len(games(app)) == 1
    assert load(app, Game, created.game_id).follow_up_game_id is None


def test_play_again_leaves_out_a_player_who_left(app, client, game, inbox):
    page = page_of(inbox, BOB.email)
    with app.app_context():
        services.set_notifications(token_of(page), "leave")
        services.abandon_game(game.admin_token)
    assert "Invitations go to: Cy." in read(host_page(client, game.admin_token), "ended")
    inbox.clear()
    resp = play_again(client, game.admin_token)
    new_id = token_row(app, token_of(resp.headers["Location"])).game_id
    assert [x.name for x in seats_of(app, new_id)] == ["Ann", "Cy"]
    assert [m.to_addr for m in inbox.of("invitation")] == [CY.email]


def test_play_again_of_a_two_player_game_missing_one_says_to_start_anew(app, client, frozen):
    created = new_game(app, players=[ANN, BOB])
    inbox = Inbox(app)
    with app.app_context():
        services.set_notifications(token_of(page_of(inbox, BOB.email)), "leave")
        services.abandon_game(created.admin_token)
    before = len(games(app))
    resp = play_again(client, created.admin_token)
    assert resp.status_code == 409
    assert "Too few of the players are still in" in read(resp.get_data(as_text=True), "error")
    assert len(games(app)) == before


def hand_first_seat_to_dee(app, client, game, inbox, leaving: str | None = None) -> None:
    """The host hands their own seat to Dee, who accepts; then the player at ``leaving``
    leaves the game, and the host ends it."""
    from tests.server.test_host_controls import DEE, accept_hand_over

    admin_post(client, game.admin_token, "handover", position="0", name=DEE[0], email=DEE[1],
               lang="en", tz="UTC")
    assert accept_hand_over(client, inbox, DEE[1]).status_code == 200
    with app.app_context():
        if leaving:
            services.set_notifications(token_of(page_of(inbox, leaving)), "leave")
        services.abandon_game(game.admin_token)


def test_play_again_invites_whoever_took_the_first_seat_over(app, client, game, inbox):
    """The audit's case: Dee got seat 1 by a hand-over; she never asked for another game,
    so she is invited to it like everyone else and gets nothing else until she accepts."""
    hand_first_seat_to_dee(app, client, game, inbox)
    assert "Invitations go to: Dee, Bob, Cy." in read(host_page(client, game.admin_token),
                                                      "ended")
    inbox.clear()
    resp = play_again(client, game.admin_token)
    new_id = token_row(app, token_of(resp.headers["Location"])).game_id
    assert [(x.name, x.invite) for x in seats_of(app, new_id)] == [
        ("Dee", "invited"), ("Bob", "invited"), ("Cy", "invited")]
    assert sorted((m.to_addr, m.template) for m in inbox.all()) == [
        (BOB.email, "invitation"), (CY.email, "invitation"), ("dee@example.com", "invitation")]
    assert client.get(resp.headers["Location"]).status_code == 200  # the asker hosts it


def test_play_again_leaves_out_a_first_seat_holder_who_left(app, client, game, inbox):
    hand_first_seat_to_dee(app, client, game, inbox, leaving="dee@example.com")
    inbox.clear()
    resp = play_again(client, game.admin_token)
    new_id = token_row(app, token_of(resp.headers["Location"])).game_id
    assert [(x.name, x.invite) for x in seats_of(app, new_id)] == [
        ("Bob", "invited"), ("Cy", "invited")]
    assert inbox.to("dee@example.com") == []


def test_play_again_pressed_by_the_first_seat_holder_counts_as_her_yes(app, client, game,
                                                                       inbox):
    """Dee, who took the first seat over, gets the host's emails with the host page; if
    she presses "play again" there, she has asked for the new game and joins it."""
    hand_first_seat_to_dee(app, client, game, inbox, leaving=BOB.email)
    (bob_left,) = [m for m in inbox.to("dee@example.com", "notice") if "/admin/" in m.text]
    dees_host_page = token_of(bob_left.link("/admin/"))
    assert "Invitations go to: Cy." in read(host_page(client, dees_host_page), "ended")
    inbox.clear()
    resp = play_again(client, dees_host_page)
    new_id = token_row(app, token_of(resp.headers["Location"])).game_id
    assert [(x.name, x.invite) for x in seats_of(app, new_id)] == [
        ("Dee", "accepted"), ("Cy", "invited")]
    assert [m.to_addr for m in inbox.all()] == [CY.email]


@pytest.mark.parametrize(("old", "new"), [
    ("Friday", "Friday (2)"), ("Friday (2)", "Friday (3)"),
    ("Cavemen: Ann, Bob", "Cavemen: Ann, Bob (2)"),
    ("x" * 100, "x" * 95 + "… (2)")])
def test_the_next_game_of_a_series_is_numbered(old, new):
    assert next_title(old) == new
    assert len(next_title(old)) <= 100


# --------------------------------------------------------------------------- German


def test_the_host_page_speaks_the_hosts_german(app, client, frozen, inbox):
    ann = services.PlayerIn(ANN.name, ANN.email, "de", ANN.timezone)
    created = new_game(app, players=[ann, BOB, CY])
    html = host_page(client, created.admin_token)
    waiting = read(html, "waiting")
    assert "Wir warten auf" in waiting
    assert "Cy: um die Muschel bieten bis Mittwoch, 16. Januar 2030, 10:00 (Europe/Berlin) " \
           "· in 2 Tagen" in waiting
    assert "Jetzt erinnern" in waiting
    (decision,) = open_decisions(app, created.game_id)
    assert "Erinnert am Mo. 10:00" in read(remind(client, created.admin_token, decision.id)
                                              .get_data(as_text=True), "waiting")
    again = remind(client, created.admin_token, decision.id).get_data(as_text=True)
    assert "schon am Mo. 10:00 erinnert" in read(again, "error")
    items = email_items(host_page(client, created.admin_token))
    assert items[0][1].startswith("Cy · Erinnerung (um die Muschel bieten) · ")
    with app.app_context():
        services.abandon_game(created.admin_token)
    ended = read(host_page(client, created.admin_token), "ended")
    assert "Das Spiel ist vorbei" in ended and "Einladungen gehen an: Bob, Cy." in ended
    form = [f for f in forms(host_page(client, created.admin_token))
            if f.attrs.get("id") == "again"][0]
    assert form.hidden["sig"] == form_signature(SECRET, created.admin_token)
    assert "Noch einmal mit denselben Leuten spielen" in host_page(client, created.admin_token)


def test_every_field_of_the_host_page_has_a_label(app, client, game):
    """A field inside a <label>, or a hidden one, or a button: nothing is left unnamed."""
    html = host_page(client, game.admin_token)
    body = re.sub(r"<label\b.*?</label>", "", html, flags=re.S)
    loose = [f for f in re.findall(r"<(?:input|select|textarea)\b[^>]*>", body)
             if 'type="hidden"' not in f]
    assert loose == []
    assert "<table" not in html


def test_the_reminder_button_is_gone_once_the_deadline_is_close_to_passing(app, client,
                                                                           frozen, game):
    at(frozen, 47.9)
    assert admin_form(client, game.admin_token, "remind") is not None
    at(frozen, 48)
    assert admin_form(client, game.admin_token, "remind") is None
    (decision,) = open_decisions(app, game.game_id)
    resp = remind(client, game.admin_token, decision.id)
    assert resp.status_code == 409
    assert read(resp.get_data(as_text=True), "error") == \
        "The deadline has passed: the server plays for Cy in a moment."
    assert decision.deadline_at == T0 + timedelta(hours=48)
