"""The host's controls on the admin page (pause, resume, extend, hand a seat over, bots,
abandon) and a player's vacation from the game page, under a frozen clock: what they do
to deadlines, the game log, and who is emailed. Every test runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from pbem.models import Decision, Game, Outbox, Token
from pbem.tokens import form_signature, hash_token
from tests.server.helpers import (
    PLAYERS,
    SECRET,
    Inbox,
    Table,
    forms,
    load,
    only_form,
    open_decisions,
    path_of,
    snapshot,
    text_of,
    token_of,
    token_row,
)
from tests.server.timekit import (
    ANN,
    BOB,
    CY,
    PASS,
    T0,
    admin_form,
    admin_post,
    at,
    aware,
    events,
    idle,
    moves,
    new_game,
    page_form,
    page_of,
    rows,
    seat,
    subject,
    sweep_at,
)

DEE = ("Dee", "dee@example.com", "en", "America/Los_Angeles")


def waiting_line(name: str, local: str, utc: str, what: str = "bid for the conch") -> str:
    return f"Waiting for:\n  - {name}: {what}, deadline {local} / {utc}"


def new_mails(inbox: Inbox, since: int):
    return inbox.all()[since:]


# --------------------------------------------------------------------------- the form sig


CONTROLS = {"pause": {}, "extend": {"hours": "24"}, "abandon": {},
            "bot": {"position": "2", "bot": "default"},
            "handover": {"position": "2", "name": DEE[0], "email": DEE[1]}}


@pytest.mark.parametrize("control", [*CONTROLS, "resume"])
def test_every_control_needs_the_host_pages_signature(app, client, game, control):
    fields = CONTROLS.get(control, {})
    before = snapshot(app)
    page_raw = token_of(page_of(Inbox(app), CY.email))
    for sig in (None, "0" * 64, form_signature(SECRET, page_raw)):
        data = dict(fields, **({"sig": sig} if sig else {}))
        resp = client.post(f"/admin/{game.admin_token}/{control}", data=data)
        assert resp.status_code == 400, control
        assert "did not come from this site" in resp.get_data(as_text=True)
    assert snapshot(app) == before


def test_an_unknown_control_or_admin_link_does_nothing(app, client, game):
    before = snapshot(app)
    sig = form_signature(SECRET, game.admin_token)
    assert client.post(f"/admin/{game.admin_token}/delete", data={"sig": sig}).status_code \
        == 404
    page_raw = token_of(page_of(Inbox(app), CY.email))  # a player's link is not the host's
    resp = client.post(f"/admin/{page_raw}/pause",
                       data={"sig": form_signature(SECRET, page_raw)})
    assert resp.status_code == 404
    assert snapshot(app) == before


def test_the_host_page_offers_the_controls_of_a_running_game(client, game):
    html = client.get(f"/admin/{game.admin_token}").get_data(as_text=True)
    actions = {f.action.rsplit("/", 1)[1] for f in forms(html)}
    assert actions == {"remind", "pause", "extend", "bot", "handover", "abandon", "webhooks"}
    for f in forms(html):
        assert f.hidden["sig"] == form_signature(SECRET, game.admin_token)


# --------------------------------------------------------------------------- pause / resume


def test_pause_stops_the_clock_and_resume_shifts_deadlines_by_the_paused_time(
        app, client, frozen, game, inbox):
    table = Table(app, client, inbox, game.game_id, game.admin_token)
    cy_bid = table.open()
    choice = path_of(next(iter(table.one_click(cy_bid))))
    inbox.clear()
    at(frozen, 10)
    resp = admin_post(client, game.admin_token, "pause")
    assert resp.status_code == 200 and "Done: the game is paused." in resp.get_data(as_text=True)
    assert load(app, Game, game.game_id).paused_at == T0 + timedelta(hours=10)
    assert admin_form(client, game.admin_token, "pause") is None
    assert admin_form(client, game.admin_token, "extend") is None
    paused = "The host paused the game. Deadlines stop until it resumes."
    assert sorted((m.to_addr, subject(m)) for m in inbox.all()) == sorted(
        (p.email, paused) for p in PLAYERS)
    assert all("Waiting for" not in m.text for m in inbox.all())  # no deadline runs now
    page = page_of(inbox, CY.email)
    assert "The host has paused the game." in text_of(client.get(page).get_data(as_text=True),
                                                      "paused")
    # Nothing is due while paused, not even after the old deadline.
    for hours in (24, 46, 48, 59):
        result = sweep_at(app, frozen, hours)
        assert (result["reminders"], result["timeouts"]) == (0, 0), hours
    # Players cannot act while paused.
    resp = client.post(choice, data=forms(client.get(choice).get_data(as_text=True))[0].data())
    assert resp.status_code == 409
    assert "paused" in resp.get_data(as_text=True)
    assert moves(app, game.game_id) == []
    inbox.clear()
    at(frozen, 60)
    assert admin_post(client, game.admin_token, "resume").status_code == 200
    row = load(app, Decision, cy_bid.id)
    assert row.deadline_at == T0 + timedelta(hours=98)  # 48 + 50 hours paused
    assert row.next_reminder_at == T0 + timedelta(hours=74)  # half time, shifted too
    assert load(app, Game, game.game_id).paused_at is None
    (resumed,) = events(app, game.game_id, "game_resumed")
    assert resumed.data == {"hours": 50.0}
    text = "The host resumed the game; open deadlines moved by 50 hours."
    assert sorted(m.to_addr for m in inbox.all()) == sorted(p.email for p in PLAYERS)
    for m in inbox.all():
        assert subject(m) == f"{text}"
    (to_ann,) = inbox.to(ANN.email)
    assert waiting_line("Cy", "Friday 18 January 2030, 12:00 (Europe/Berlin)",
                        "2030-01-18 11:00 UTC") in to_ann.text
    (to_cy,) = inbox.to(CY.email)
    assert waiting_line("Cy", "Friday 18 January 2030, 20:00 (Asia/Tokyo)",
                        "2030-01-18 11:00 UTC") in to_cy.text
    inbox.clear()
    for hours, reminders in [(73.9, 0), (74, 1), (95.9, 0), (96, 1)]:
        assert sweep_at(app, frozen, hours)["reminders"] == reminders
    assert [m.to_addr for m in inbox.all()] == [CY.email, CY.email]
    assert "Decide by Friday 18 January 2030, 20:00 (Asia/Tokyo) / 2030-01-18 11:00 UTC" \
        in inbox.all()[0].text
    assert sweep_at(app, frozen, 97.9)["timeouts"] == 0
    assert sweep_at(app, frozen, 98)["timeouts"] == 1


def test_pause_twice_or_resume_a_running_game_is_refused(app, client, game):
    assert client.post(f"/admin/{game.admin_token}/resume",
                       data={"sig": form_signature(SECRET, game.admin_token)}).status_code \
        == 409
    assert admin_post(client, game.admin_token, "pause").status_code == 200
    before = snapshot(app)
    resp = client.post(f"/admin/{game.admin_token}/pause",
                       data={"sig": form_signature(SECRET, game.admin_token)})
    assert resp.status_code == 409
    assert "already paused" in resp.get_data(as_text=True)
    assert snapshot(app) == before


# --------------------------------------------------------------------------- extend


def test_extend_moves_the_current_deadline_and_its_reminders(app, client, frozen, game,
                                                            inbox):
    (cy_bid,) = open_decisions(app, game.game_id)
    inbox.clear()
    at(frozen, 1)
    assert admin_post(client, game.admin_token, "extend", hours="24").status_code == 200
    row = load(app, Decision, cy_bid.id)
    assert (row.deadline_at, row.next_reminder_at) == (T0 + timedelta(hours=72),
                                                       T0 + timedelta(hours=48))
    (ev,) = events(app, game.game_id, "deadline_extended")
    assert (ev.actor, ev.data) == (None, {"hours": 24.0})
    text = "The host extended the current deadline by 24 hours."
    assert sorted((m.to_addr, subject(m)) for m in inbox.all()) == sorted(
        (p.email, f"{text}") for p in PLAYERS)
    (to_bob,) = inbox.to(BOB.email)
    assert waiting_line("Cy", "Thursday 17 January 2030, 04:00 (America/New_York)",
                        "2030-01-17 09:00 UTC") in to_bob.text
    assert ("<b>Thursday 17 January 2030, 04:00 (America/New_York)</b> / "
            "2030-01-17 09:00 UTC") in to_bob.html
    assert idle(sweep_at(app, frozen, 47.9))
    assert sweep_at(app, frozen, 48)["reminders"] == 1  # the old deadline: no timeout
    assert sweep_at(app, frozen, 71.9)["timeouts"] == 0
    assert sweep_at(app, frozen, 72)["timeouts"] == 1


@pytest.mark.parametrize("hours", ["0", "-3", "abc", "", "721"])
def test_extend_by_a_bad_amount_is_refused(app, client, game, hours):
    before = snapshot(app)
    assert admin_post(client, game.admin_token, "extend", hours=hours).status_code == 400
    assert snapshot(app) == before


# --------------------------------------------------------------------------- hand over


def accept_hand_over(client, inbox, addr: str, answer: str = "accept"):
    """The invited person opens the accept (or decline) link and presses its button."""
    (invite,) = inbox.to(addr, "handover_invite")[-1:]
    url = path_of(next(u for u in invite.text_links() if "/handover/" in u and (
        (answer == "accept") == (u == invite.text_links()[0]))))
    return client.post(url, data=only_form(client.get(url).get_data(as_text=True)).data())


def test_hand_over_asks_first_then_kills_the_old_links_and_welcomes_the_new_player(
        app, client, game, inbox):
    table = Table(app, client, inbox, game.game_id, game.admin_token)
    cy_bid = table.open()
    old_page = page_of(inbox, CY.email)
    old_choices = [path_of(u) for u in table.one_click(cy_bid)]
    assert client.get(old_page).status_code == 200
    before = len(inbox.all())
    name, addr, lang, tz = DEE
    resp = admin_post(client, game.admin_token, "handover", position="2", name=name,
                      email=addr, lang=lang, tz=tz)
    assert resp.status_code == 200
    assert "Invitation sent" in text_of(resp.get_data(as_text=True), "notice")
    # Dee is asked first, and only asked; nothing changes until Dee accepts.
    mails = new_mails(inbox, before)
    assert [(m.to_addr, m.template) for m in mails] == [(addr, "handover_invite")]
    assert subject(mails[0]) == "Ann asks you to take over the seat of Cy in Cavemen"
    assert "take over the seat of Cy" in mails[0].text
    assert client.get(old_page).status_code == 200
    assert seat(app, game.game_id, 2).email == CY.email
    resp = accept_hand_over(client, inbox, addr)
    assert resp.status_code == 200
    assert "The seat is yours" in text_of(resp.get_data(as_text=True), "done")
    # The old links are dead at once, for reading and for acting.
    for url in [old_page, *old_choices]:
        assert client.get(url).status_code == 404, url
        assert client.post(url, data={"sig": form_signature(SECRET, token_of(url))}
                           ).status_code == 404
    old = {hash_token(token_of(u)) for u in [old_page, *old_choices]}
    revoked = {t.hash: t.revoked_at for t in rows(app, Token, Token.seat_id == cy_bid.seat_id)}
    assert {h: revoked[h] for h in old} == dict.fromkeys(old, T0)
    handed = seat(app, game.game_id, 2)
    assert (handed.name, handed.email, handed.timezone, handed.bot,
            handed.timeouts_in_row, handed.pending_handover) == ("Dee", addr, tz, None, 0,
                                                                 None)
    (ev,) = events(app, game.game_id, "seat_handed_over")
    assert (ev.actor, ev.data) == (2, {"old": "Cy", "new": "Dee"})
    mails = new_mails(inbox, before + 1)
    assert sorted((m.to_addr, m.template) for m in mails) == [
        (ANN.email, "notice"), (BOB.email, "notice"), (addr, "handover"), (addr, "welcome")]
    assert not [m for m in mails if m.to_addr == CY.email]
    (welcome,) = inbox.to(addr, "welcome")
    assert subject(welcome) == "Welcome: you take over the seat of Cy."
    assert "You now play the seat of Cy" in welcome.text
    assert "Your tribe: Snake" in welcome.text and "The conch: you." in welcome.text
    assert waiting_line("Dee", "Wednesday 16 January 2030, 01:00 (America/Los_Angeles)",
                        "2030-01-16 09:00 UTC") in welcome.text
    (turn,) = inbox.to(addr, "handover")
    assert subject(turn) == "Your turn: bid for the conch, by Wed 01:00"  # in Dee's zone
    assert ("Decide by Wednesday 16 January 2030, 01:00 (America/Los_Angeles) / "
            "2030-01-16 09:00 UTC") in turn.text
    for m in inbox.to(ANN.email)[-1:] + inbox.to(BOB.email)[-1:]:
        assert subject(m) == "The host handed the seat of Cy to Dee."
    # The new player's links work: open the page, then bid through a one-click link.
    assert client.get(path_of(welcome.link("/g/"))).status_code == 200
    bid2 = next(u for u in turn.action_links()
                if token_row(app, token_of(u)).action == {"kind": "bid", "amount": 2})
    form = forms(client.get(path_of(bid2)).get_data(as_text=True))[0]
    assert client.post(path_of(bid2), data=form.data()).status_code == 200
    (move,) = moves(app, game.game_id)
    assert (move.position, move.action, move.source) == (2, {"kind": "bid", "amount": 2},
                                                         "player")


def test_mail_for_the_old_player_still_in_the_outbox_is_not_sent_after_a_hand_over(
        app, client, frozen, game, inbox):
    """A reminder that failed to go out before the hand-over must not reach the old
    address later with fresh, working links for the seat."""
    inbox.clear()
    inbox.backend.fail = OSError("mail server down")
    assert sweep_at(app, frozen, 24)["failed"] == 1  # Cy's reminder waits for a retry
    name, addr, lang, tz = DEE
    assert admin_post(client, game.admin_token, "handover", position="2", name=name,
                      email=addr, lang=lang, tz=tz).status_code == 200
    inbox.backend.fail = None  # Dee accepts before the reminder's retry is due
    assert accept_hand_over(client, inbox, addr).status_code == 200
    sweep_at(app, frozen, 25)
    assert inbox.to(CY.email) == []
    (stale,) = rows(app, Outbox, Outbox.to_addr == CY.email, Outbox.status == "skipped")
    assert stale.template == "decision" and "someone else" in stale.last_error
    assert sorted(m.template for m in inbox.to(addr)) == ["handover", "handover_invite",
                                                          "welcome"]


def test_hand_over_to_someone_already_playing_is_refused(app, client, game):
    before = snapshot(app)
    resp = admin_post(client, game.admin_token, "handover", position="2", name="Bobby",
                      email=BOB.email, lang="en", tz="UTC")
    assert resp.status_code == 400
    assert "appears twice" in resp.get_data(as_text=True)
    assert snapshot(app) == before


# --------------------------------------------------------------------------- bots


def test_the_host_puts_a_seat_on_a_bot_and_takes_it_off(app, client, game, inbox):
    table = Table(app, client, inbox, game.game_id, game.admin_token)
    cy_bid = table.open()
    before = len(inbox.all())
    assert admin_post(client, game.admin_token, "bot", position="2",
                      bot="default").status_code == 200
    assert moves(app, game.game_id) == []  # not in the host's request: the clock plays it
    (waiting,) = open_decisions(app, game.game_id)  # after the bot's short pause
    assert waiting.id == cy_bid.id and waiting.next_reminder_at is None
    assert T0 < aware(waiting.deadline_at) <= T0 + timedelta(seconds=6)
    table.clock_plays(waiting)
    (move,) = moves(app, game.game_id)
    assert (move.decision_id, move.action, move.source) == (cy_bid.id, {"kind": "pass"}, "bot")
    assert seat(app, game.game_id, 2).bot == "default"
    (on,) = events(app, game.game_id, "seat_on_bot")
    assert (on.actor, on.data) == (2, {"bot": "default", "by": "host"})
    mails = new_mails(inbox, before)
    assert sorted((m.to_addr, m.template) for m in mails) == [
        (ANN.email, "decision"), (ANN.email, "notice"), (BOB.email, "notice"),
        (CY.email, "notice")]
    for m in mails:
        if m.template == "notice":
            assert "The host put Cy on a bot." in m.text
    (to_cy,) = [m for m in mails if m.to_addr == CY.email]
    assert subject(to_cy) == "The host put Cy on a bot."
    assert page_form(client, path_of(to_cy.link("/g/")), "back") is not None
    # The same again is refused; then the host takes the seat off the bot.
    snap = snapshot(app)
    assert admin_post(client, game.admin_token, "bot", position="2",
                      bot="default").status_code == 409
    assert snapshot(app) == snap
    before = len(inbox.all())
    assert admin_post(client, game.admin_token, "bot", position="2", bot="").status_code == 200
    assert seat(app, game.game_id, 2).bot is None
    (off,) = events(app, game.game_id, "seat_returned")
    assert (off.actor, off.data) == (2, {"bot": None, "by": "host"})
    assert sorted(m.to_addr for m in new_mails(inbox, before)) == sorted(
        p.email for p in PLAYERS)
    decision = table.play_until(lambda d, state: d.position == 2)
    assert inbox.for_decision(decision.id).to_addr == CY.email
    assert [m.source for m in moves(app, game.game_id)].count("bot") == 1


def test_a_seat_put_on_the_heuristic_bot_plays_when_its_turn_comes(app, client, game, inbox):
    table = Table(app, client, inbox, game.game_id, game.admin_token)
    assert admin_post(client, game.admin_token, "bot", position="0",
                      bot="heuristic").status_code == 200
    assert moves(app, game.game_id) == []  # Ann has no open decision yet
    table.play_on_page(table.open(), PASS)  # Cy passes; Ann's bid is her bot's
    assert [m.source for m in moves(app, game.game_id)] == ["player"]  # not in Cy's request
    (bid,) = open_decisions(app, game.game_id)
    assert bid.position == 0 and bid.next_reminder_at is None
    assert T0 < aware(bid.deadline_at) <= T0 + timedelta(seconds=6)  # the bot's pause
    table.clock_plays(bid)
    played = moves(app, game.game_id)
    assert [(m.position, m.source) for m in played] == [(2, "player"), (0, "bot")]
    assert inbox.to(ANN.email, "decision") == []
    (d,) = open_decisions(app, game.game_id)
    assert d.position == 1


@pytest.mark.parametrize(("fields", "status"), [
    ({"position": "7", "bot": "default"}, 400), ({"position": "x", "bot": "default"}, 400),
    ({"position": "1", "bot": "random"}, 400), ({"position": "1", "bot": ""}, 409),
])
def test_bad_bot_requests_are_refused(app, client, game, fields, status):
    before = snapshot(app)
    assert admin_post(client, game.admin_token, "bot", **fields).status_code == status
    assert snapshot(app) == before


# --------------------------------------------------------------------------- abandon


def test_abandon_ends_the_game_for_everyone(app, client, frozen, game, inbox):
    table = Table(app, client, inbox, game.game_id, game.admin_token)
    cy_bid = table.open()
    choice = path_of(next(iter(table.one_click(cy_bid))))
    inbox.clear()
    at(frozen, 5)
    assert admin_post(client, game.admin_token, "abandon").status_code == 400  # not ticked
    assert load(app, Game, game.game_id).status == "active"
    assert admin_post(client, game.admin_token, "abandon", sure="yes").status_code == 200
    row = load(app, Game, game.game_id)
    assert (row.status, row.ended_at) == ("abandoned", T0 + timedelta(hours=5))
    closed = load(app, Decision, cy_bid.id)
    assert (closed.closed_at, closed.closed_by) == (T0 + timedelta(hours=5), "host")
    assert [e.kind for e in events(app, game.game_id)][-2:] == ["game_abandoned",
                                                               "game_abandoned_by_host"]
    text = "The host has abandoned the game. Nobody wins."
    assert sorted((m.to_addr, subject(m)) for m in inbox.all()) == sorted(
        (p.email, f"{text}") for p in PLAYERS)
    assert all("Waiting for" not in m.text for m in inbox.all())
    assert client.get(choice).status_code == 409  # the turn is over
    assert admin_form(client, game.admin_token, "pause") is None  # no controls any more
    assert text_of(client.get(f"/admin/{game.admin_token}").get_data(as_text=True),
                   "result") == text  # the host page says why the game is over
    for hours in (24, 48, 500):
        assert idle(sweep_at(app, frozen, hours))
    assert moves(app, game.game_id) == []
    resp = client.post(f"/admin/{game.admin_token}/abandon",
                       data={"sig": form_signature(SECRET, game.admin_token), "sure": "yes"})
    assert resp.status_code == 409


# --------------------------------------------------------------------------- vacation


def test_vacation_moves_my_deadline_and_tells_the_others(app, client, frozen, game, inbox):
    (cy_bid,) = open_decisions(app, game.game_id)
    page = page_of(inbox, CY.email)
    inbox.clear()
    at(frozen, 1)
    form = page_form(client, page, "vacation")
    assert form.action == f"{page}/vacation" and form.inputs["days"] == "1"
    assert client.post(form.action, data={"days": "2"}).status_code == 400  # no sig
    resp = client.post(form.action, data=form.data(days="2"))
    assert resp.status_code == 200
    assert "Your deadlines moved. Vacation left: 5 days." in text_of(
        resp.get_data(as_text=True), "notice")
    row = load(app, Decision, cy_bid.id)
    assert (row.deadline_at, row.next_reminder_at) == (T0 + timedelta(hours=96),
                                                       T0 + timedelta(hours=72))
    cy = seat(app, game.game_id, 2)
    assert (cy.vacation_used_hours, cy.vacation_until) == (48.0, T0 + timedelta(hours=49))
    (ev,) = events(app, game.game_id, "vacation_taken")
    assert (ev.actor, ev.data) == (2, {"days": 2.0, "until": "2030-01-16T10:00:00+00:00"})
    told = ("Cy is on vacation for 2 days; their deadlines move accordingly "
            "(until Wednesday 16 January 2030, 10:00 (UTC) at least).")
    assert sorted(m.to_addr for m in inbox.all()) == sorted(p.email for p in PLAYERS)
    for m in inbox.all():
        assert told in m.text
        assert subject(m) == "Cy is on vacation for 2 days; deadlines move accordingly"
    (to_ann,) = inbox.to(ANN.email)
    assert waiting_line("Cy", "Friday 18 January 2030, 10:00 (Europe/Berlin)",
                        "2030-01-18 09:00 UTC") in to_ann.text
    (to_bob,) = inbox.to(BOB.email)
    assert waiting_line("Cy", "Friday 18 January 2030, 04:00 (America/New_York)",
                        "2030-01-18 09:00 UTC") in to_bob.text
    assert "5 days left in this game" in text_of(client.get(page).get_data(as_text=True),
                                                   "vacation")
    # The clock follows the new deadline.
    assert sweep_at(app, frozen, 48)["timeouts"] == 0
    assert sweep_at(app, frozen, 71.9)["reminders"] == 0
    assert sweep_at(app, frozen, 72)["reminders"] == 1
    assert sweep_at(app, frozen, 95.9)["timeouts"] == 0
    assert sweep_at(app, frozen, 96)["timeouts"] == 1


def test_vacation_is_limited_to_the_days_the_host_allowed(app, client, frozen, inbox):
    game = new_game(app, vacation_days=3)
    page = page_of(inbox, CY.email)
    form = page_form(client, page, "vacation")
    before = snapshot(app)
    resp = client.post(form.action, data=form.data(days="3.5"))
    assert resp.status_code == 400
    assert text_of(resp.get_data(as_text=True), "e-days") == (
        "You can take 1 to 3 whole days of vacation in this game.")
    for days in ("0", "-1", "soon"):
        assert client.post(form.action, data=form.data(days=days)).status_code == 400
    assert snapshot(app) == before
    assert client.post(form.action, data=form.data(days="2")).status_code == 200
    resp = client.post(form.action, data=form.data(days="1.5"))
    assert resp.status_code == 400
    assert text_of(resp.get_data(as_text=True), "e-days") == (
        "You can take 1 whole day of vacation in this game.")
    assert client.post(form.action, data=form.data(days="1")).status_code == 200
    (d,) = open_decisions(app, game.game_id)
    assert d.deadline_at == T0 + timedelta(hours=48 + 72)
    assert page_form(client, page, "vacation") is None  # nothing left to take
    assert client.post(form.action, data=form.data(days="0.5")).status_code == 400


def test_no_vacation_when_the_host_allows_none(app, client, frozen, inbox):
    new_game(app, vacation_days=0)
    page = page_of(inbox, CY.email)
    assert page_form(client, page, "vacation") is None
    resp = client.post(f"{page}/vacation",
                       data={"sig": form_signature(SECRET, token_of(page)), "days": "1"})
    assert resp.status_code == 400


BAD_DAYS = ("1e-9", "0.000000001", "0.5", "1.5", "2,5", "0", "-1", "-0", "1e9", "8",
            "99999999999999999999", "nan", "NaN", "inf", "-inf", "", " ", "soon", "1 day",
            "1\r\n2", "\u0662", "0x1", "1_0")


def test_a_vacation_is_whole_days_and_anything_else_is_refused_at_the_field(
        app, client, frozen, game, inbox):
    """Issue 32, point 13: 1e-9 days were accepted, again and again. A vacation is 1 to
    the whole days left of the allowance (7 here); a fraction, 0, a negative, a huge
    number, NaN or no number at all is refused at the field, and nothing changes."""
    page = page_of(inbox, CY.email)
    form = page_form(client, page, "vacation")
    assert (form.inputs["days"], form.attrs.get("id")) == ("1", "vacation")
    before = snapshot(app)
    for days in BAD_DAYS:
        resp = client.post(form.action, data=form.data(days=days))
        assert resp.status_code == 400, (days, resp.status_code)
        html = resp.get_data(as_text=True)
        assert text_of(html, "e-days") == (
            "You can take 1 to 7 whole days of vacation in this game."), days
        (again,) = [f for f in forms(html) if f.attrs.get("id") == "vacation"]
        assert 'aria-invalid="true"' in html and 'aria-describedby="e-days"' in html
        assert again.inputs["days"] == " ".join(days.split())[:20]  # as typed, to correct
    assert snapshot(app) == before
    assert client.post(form.action, data=form.data(days=" 7 ")).status_code == 200
    assert seat(app, game.game_id, 2).vacation_used_hours == 7 * 24


def test_a_fractional_allowance_gives_its_whole_days(app, client, frozen, inbox):
    new_game(app, vacation_days=2.5)
    page = page_of(inbox, CY.email)
    form = page_form(client, page, "vacation")
    assert "2 days left in this game" in text_of(client.get(page).get_data(as_text=True),
                                                 "vacation")
    resp = client.post(form.action, data=form.data(days="3"))
    assert text_of(resp.get_data(as_text=True), "e-days") == (
        "You can take 1 to 2 whole days of vacation in this game.")
    assert client.post(form.action, data=form.data(days="2")).status_code == 200
    assert page_form(client, page, "vacation") is None  # half a day is no vacation


def test_vacations_are_rate_limited_like_talk(app, client, frozen, inbox):
    """30 requests, as tried from outside: the first VACATIONS_PER_DAY (2) are taken and
    told to the table; the rest are refused at the field, log nothing and mail nobody.
    A day later the player may take vacation again."""
    game = new_game(app, vacation_days=60)
    page = page_of(inbox, CY.email)
    inbox.clear()
    form = page_form(client, page, "vacation")
    answers = [client.post(form.action, data=form.data(days="1")).status_code
               for _ in range(30)]
    assert answers == [200, 200] + [429] * 28
    resp = client.post(form.action, data=form.data(days="1"))
    assert text_of(resp.get_data(as_text=True), "e-days") == (
        "You have taken vacation 2 times in the last 24 hours; you can take more from "
        "Tuesday 15 January 2030, 18:00 (Asia/Tokyo).")
    assert len(events(app, game.game_id, "vacation_taken")) == 2
    assert len(inbox.all()) == 2 * len(PLAYERS)
    assert seat(app, game.game_id, 2).vacation_used_hours == 48
    at(frozen, 24)
    assert client.post(form.action, data=form.data(days="1")).status_code == 200
    assert len(events(app, game.game_id, "vacation_taken")) == 3


def test_a_german_players_vacation_refusals_speak_german(app, client, frozen, inbox):
    """Said in the player's language whatever the browser asks for."""
    game = new_game(app, players=[*PLAYERS[:2], replace(PLAYERS[2], language="de")])
    page = page_of(inbox, CY.email)
    form = page_form(client, page, "vacation")
    english = {"Accept-Language": "en"}
    resp = client.post(form.action, data=form.data(days="0,5"), headers=english)
    assert text_of(resp.get_data(as_text=True), "e-days") == (
        "Du kannst in diesem Spiel 1 bis 7 ganze Tage Urlaub nehmen.")
    for _ in range(2):
        assert client.post(form.action, data=form.data(days="1")).status_code == 200
    resp = client.post(form.action, data=form.data(days="1"), headers=english)
    assert resp.status_code == 429
    assert text_of(resp.get_data(as_text=True), "e-days") == (
        "Du hast in den letzten 24 Stunden schon 2-mal Urlaub genommen; weiteren kannst "
        "du ab Dienstag, 15. Januar 2030, 18:00 (Asia/Tokyo) nehmen.")
    assert seat(app, game.game_id, 2).vacation_used_hours == 48


def test_a_decision_opened_during_my_vacation_counts_from_its_end(app, client, frozen, game,
                                                                 inbox):
    page = page_of(inbox, ANN.email)  # Ann has no decision open yet
    form = page_form(client, page, "vacation")
    assert client.post(form.action, data=form.data(days="3")).status_code == 200
    assert sweep_at(app, frozen, 48)["timeouts"] == 1  # Cy's bid: Ann decides next
    (ann_bid,) = open_decisions(app, game.game_id)
    assert ann_bid.position == 0
    assert ann_bid.deadline_at == T0 + timedelta(hours=72 + 48)
    (mail_to_ann,) = inbox.to(ANN.email, "decision")
    assert ("Decide by Saturday 19 January 2030, 10:00 (Europe/Berlin) / "
            "2030-01-19 09:00 UTC") in mail_to_ann.text


# --------------------------------------------------------------------------- the game log


def test_every_control_is_in_the_game_log(app, client, frozen, game, inbox):
    page = page_of(inbox, BOB.email)
    at(frozen, 1)
    admin_post(client, game.admin_token, "pause")
    at(frozen, 3)
    admin_post(client, game.admin_token, "resume")
    admin_post(client, game.admin_token, "extend", hours="12")
    form = page_form(client, page, "vacation")
    client.post(form.action, data=form.data(days="1"))
    admin_post(client, game.admin_token, "bot", position="0", bot="heuristic")
    admin_post(client, game.admin_token, "bot", position="0", bot="")
    admin_post(client, game.admin_token, "handover", position="2", name="Dee",
               email="dee@example.com", lang="en", tz="UTC")
    accept_hand_over(client, inbox, "dee@example.com")
    admin_post(client, game.admin_token, "abandon", sure="yes")
    log = text_of(client.get(page).get_data(as_text=True), "log")
    expected = [
        "The host paused the game. Deadlines stop until it resumes.",
        "The host resumed the game; open deadlines moved by 2 hours.",
        "The host extended the current deadline by 12 hours.",
        "Bob is on vacation for 1 day; their deadlines move accordingly (until "
        "Tuesday 15 January 2030, 12:00 (UTC) at least).",
        "The host put Ann on a bot.",
        "Ann is back and plays again.",
        "The host handed the seat of Cy to Dee.",
        "The game has ended without a winner.",
        "The host has abandoned the game. Nobody wins.",
    ]
    positions = [log.find(line) for line in expected]
    assert -1 not in positions, log
    assert positions == sorted(positions)  # oldest first, as the emails tell it
    kinds = [e.kind for e in events(app, game.game_id)
             if e.kind.startswith(("game_", "deadline", "vacation", "seat_"))]
    assert kinds == ["game_started", "game_paused", "game_resumed", "deadline_extended",
                     "vacation_taken", "seat_on_bot", "seat_returned", "seat_handed_over",
                     "game_abandoned", "game_abandoned_by_host"]
    # Each control was emailed to every player it concerns (all of them here).
    headlines = {}
    for o in rows(app, Outbox, Outbox.template == "notice"):
        headlines.setdefault(o.context["headline"], set()).add(o.to_addr)
    everyone = {p.email for p in PLAYERS}
    handed = {ANN.email, BOB.email}
    assert headlines == {"game_paused": everyone, "game_resumed": everyone,
                         "deadline_extended": everyone, "vacation_taken": everyone,
                         "seat_on_bot": everyone, "seat_returned": everyone,
                         "seat_handed_over": handed,
                         "game_abandoned_by_host": handed | {"dee@example.com"}}


def test_a_host_who_hands_over_their_own_seat_keeps_the_host_page(app, client, game, inbox):
    name, addr, lang, tz = DEE
    resp = admin_post(client, game.admin_token, "handover", position="0", name=name,
                      email=addr, lang=lang, tz=tz)
    assert resp.status_code == 200
    assert accept_hand_over(client, inbox, addr).status_code == 200
    assert seat(app, game.game_id, 0).email == addr
    host_page = client.get(f"/admin/{game.admin_token}")
    assert host_page.status_code == 200 and "Dee" in host_page.get_data(as_text=True)
    assert admin_post(client, game.admin_token, "pause").status_code == 200
