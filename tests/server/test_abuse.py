"""Nobody can use the server to mail strangers (issue 7, item 4): hand-overs ask first,
notices and invitations are capped, every email can be unsubscribed from in one click,
the rate limit holds under a race, and the client address comes from trusted proxies."""

from __future__ import annotations

import re
import threading

import pytest
from sqlmodel import select

from pbem import services
from pbem.db import session_scope
from pbem.errors import InvalidInput, RateLimited
from pbem.models import Game, Outbox, Suppression
from tests.server.conftest import start_game
from tests.server.helpers import (
    PLAYERS,
    Inbox,
    Table,
    forms,
    load,
    new_game_data,
    new_game_form,
    only_form,
    outbox,
    path_of,
    seats_of,
    snapshot,
    text_of,
)

VICTIM = "victim@example.net"


def admin(client, table, control: str, **fields):
    html = client.get(f"/admin/{table.admin}").get_data(as_text=True)
    (form,) = [f for f in forms(html) if f.action == f"/admin/{table.admin}/{control}"]
    return client.post(form.action, data=form.data(**fields))




# --------------------------------------------------------------------------- hand-overs


def test_a_hand_over_sends_one_invitation_and_nothing_else_until_accepted(app, client,
                                                                          table):
    assert admin(client, table, "handover", position="2", name="Vic", email=VICTIM,
                 lang="en", tz="UTC").status_code == 200
    for _ in range(3):  # the host pauses and resumes: the players hear of it, not Vic
        admin(client, table, "pause")
        admin(client, table, "resume")
    table.step()  # and the game goes on
    assert [m.template for m in table.inbox.to(VICTIM)] == ["handover_invite"]
    invite = table.inbox.to(VICTIM)[0]
    assert "Nothing more is sent to this address unless you accept." in invite.text
    # Declining tells the host; Vic never hears from the game again.
    decline = path_of(invite.text_links()[1])
    page = client.get(decline).get_data(as_text=True)
    client.post(decline, data=only_form(page).data())
    admin(client, table, "pause")
    assert [m.template for m in table.inbox.to(VICTIM)] == ["handover_invite"]
    (told,) = table.inbox.to(PLAYERS[0].email, "declined")
    assert told.headline.startswith("Vic declined to take over the seat")


def test_hand_overs_to_new_addresses_are_capped_per_game(make_app):
    app = make_app(HANDOVER_LIMIT_PER_GAME=3)
    client, inbox = app.test_client(), Inbox(app)
    created = start_game(app)
    table = Table(app, client, inbox, created.game_id, created.admin_token)
    answers = [admin(client, table, "handover", position="2", name=f"P{i}",
                     email=f"p{i}@example.net", lang="en", tz="UTC") for i in range(20)]
    assert [r.status_code for r in answers] == [200] * 3 + [429] * 17
    assert "as many hand-over invitations as one day allows" in text_of(
        answers[-1].get_data(as_text=True), "error")
    # Each newer offer replaced the older one before the clock came round: only the last
    # of the three went out.
    assert [m.to_addr for m in inbox.of("handover_invite")] == ["p2@example.net"]


def test_invitations_to_one_address_are_capped_across_games(make_app):
    app = make_app(INVITE_LIMIT_PER_ADDRESS=2)
    players = [PLAYERS[0], services.PlayerIn("Vic", VICTIM)]
    with app.app_context():
        for _ in range(2):
            services.create_game("cavemen", players, confirm_by_email=False)
        with pytest.raises(RateLimited, match="as many invitations as one day allows"):
            services.create_game("cavemen", players, confirm_by_email=False)
    assert len(Inbox(app).to(VICTIM)) == 2


# --------------------------------------------------------------------------- notice caps


def test_pause_and_resume_cannot_flood_a_player(make_app):
    app = make_app(NOTICE_LIMIT_PER_ADDRESS=3, NOTICE_LIMIT_PER_GAME=1000)
    client, inbox = app.test_client(), Inbox(app)
    created = start_game(app)
    table = Table(app, client, inbox, created.game_id, created.admin_token)
    for _ in range(11):  # 22 notices each, without the cap; the clock sends promptly
        admin(client, table, "pause")
        inbox.deliver()
        admin(client, table, "resume")
        inbox.deliver()
    for p in PLAYERS:  # at most 3 emails that are not turns, game_started included
        sent = outbox(app, Outbox.rcpt == p.email, Outbox.status == "sent",
                      Outbox.template.not_in(("decision", "result")))
        assert len(sent) == 3, p.email
        held = outbox(app, Outbox.rcpt == p.email, Outbox.status == "held")
        assert len(held) == 22 - len([r for r in sent if r.template == "notice"])
        assert all("as many notices as one hour allows" in r.last_error for r in held)
    # The next turn email says what was held back; the narration has it all.
    table.step()
    nxt = PLAYERS[table.open().position]
    held = outbox(app, Outbox.rcpt == nxt.email, Outbox.status == "held")
    pauses = [r for r in held if r.context["headline"] == "game_paused"]
    turn = inbox.to(nxt.email, "decision")[-1]
    assert f"({len(held)} more emails of this game were held back" in turn.text
    # the latest ten lines of news, the rest on the game page
    assert len(pauses) >= 9
    assert 1 <= turn.text.count("The host paused the game.") <= 5
    assert re.search(r"\+\d+ more on the game page", turn.text)
    held = len(held)
    assert len(outbox(app, Outbox.rcpt == nxt.email, Outbox.status == "merged")) == held
    assert outbox(app, Outbox.rcpt == nxt.email, Outbox.status == "held") == []


def test_notices_of_one_game_are_capped(make_app):
    app = make_app(NOTICE_LIMIT_PER_ADDRESS=1000, NOTICE_LIMIT_PER_GAME=7)
    client, inbox = app.test_client(), Inbox(app)
    created = start_game(app)
    table = Table(app, client, inbox, created.game_id, created.admin_token)
    inbox.clear()
    for _ in range(5):
        admin(client, table, "pause")
        admin(client, table, "resume")
    inbox.deliver()
    sent = outbox(app, Outbox.status == "sent", Outbox.template.not_in(("decision",)))
    assert len(sent) == 7  # two game_started, then five notices
    assert len(outbox(app, Outbox.status == "held")) == 30 - 5


def test_turn_emails_are_never_held(make_app):
    app = make_app(NOTICE_LIMIT_PER_ADDRESS=1, NOTICE_LIMIT_PER_GAME=1)
    client, inbox = app.test_client(), Inbox(app)
    with app.app_context():
        created = services.create_game("cavemen", PLAYERS, seed=7, confirm_by_email=False,
                                       start=True)
    table = Table(app, client, inbox, created.game_id, created.admin_token)
    for _ in range(12):
        table.step()
    inbox.deliver()
    decisions = outbox(app, Outbox.template == "decision")
    assert len(decisions) >= 12
    assert {r.status for r in decisions} <= {"sent", "skipped"}


# --------------------------------------------------------------------------- unsubscribe


def one_click(client, mail):
    """What a mail program's unsubscribe button sends (RFC 8058): no form of ours."""
    return client.post(f"/u/{mail.unsubscribe_token}",
                       data={"List-Unsubscribe": "One-Click"})


def test_one_click_unsubscribe_by_someone_invited_means_never_again(app, client, inbox):
    players = [PLAYERS[0], services.PlayerIn("Vic", VICTIM), PLAYERS[2]]
    with app.app_context():
        created = services.create_game("cavemen", players, confirm_by_email=False)
    (invite,) = inbox.to(VICTIM)
    page = client.get(f"/u/{invite.unsubscribe_token}").get_data(as_text=True)
    assert "Never email me again" in page
    assert one_click(client, invite).status_code == 200
    with app.app_context(), session_scope() as s:
        assert s.get(Suppression, VICTIM) is not None
    assert [s.invite for s in seats_of(app, created.game_id)][1] == "declined"
    assert inbox.to(PLAYERS[0].email, "declined")  # the host is told
    with app.app_context(), pytest.raises(InvalidInput, match="asked not to get email"):
        services.create_game("cavemen", players, confirm_by_email=False)
    data = new_game_data(new_game_form(client), players)
    before = snapshot(app)
    resp = client.post("/new", data=data)
    assert resp.status_code == 400
    assert "asked not to get email" in text_of(resp.get_data(as_text=True), "error")
    assert snapshot(app) == before
    assert len(inbox.to(VICTIM)) == 1


def test_mail_already_queued_for_a_suppressed_address_is_not_sent(app, client, inbox):
    players = [PLAYERS[0], services.PlayerIn("Vic", VICTIM)]
    with app.app_context():
        services.create_game("cavemen", players, confirm_by_email=False)
        services.create_game("cavemen", players, confirm_by_email=False)
    first = inbox.to(VICTIM)[0]
    with app.app_context():  # a third invitation is queued before the click...
        services.create_game("cavemen", players, confirm_by_email=False)
    one_click(client, first)
    inbox.deliver()  # ...and the clock comes round after it
    assert len(inbox.to(VICTIM)) == 2
    (skipped,) = outbox(app, Outbox.rcpt == VICTIM, Outbox.status == "skipped")
    assert skipped.last_error == "the address asked not to get email from this server"


def test_one_click_unsubscribe_by_a_player_keeps_only_their_turns(app, client, table):
    cy = PLAYERS[2]
    mail = table.inbox.to(cy.email)[-1]
    page = client.get(f"/u/{mail.unsubscribe_token}").get_data(as_text=True)
    assert "Only my turns" in page and "Leave the game" in page
    resp = one_click(client, mail)
    assert "only when it is your turn" in text_of(resp.get_data(as_text=True), "done")
    before = len(table.inbox.to(cy.email))
    admin(client, table, "pause")
    admin(client, table, "resume")
    assert len(table.inbox.to(cy.email)) == before  # no notices
    assert len(table.inbox.to(PLAYERS[0].email, "notice")) == 2
    for _ in range(6):
        table.step()
    assert len(table.inbox.to(cy.email, "decision")) > 1  # turns still come
    with client.application.app_context(), session_scope() as s:
        assert s.get(Suppression, cy.email) is None


def test_a_player_leaves_the_game_from_the_settings_page(app, client, table):
    bob = PLAYERS[1]
    mail = table.inbox.to(bob.email)[-1]
    url = f"/u/{mail.unsubscribe_token}"
    form = [f for f in forms(client.get(url).get_data(as_text=True))
            if f.attrs.get("id") == "settings"][0]
    before = len(table.inbox.to(bob.email))
    resp = client.post(url, data=form.data(how="leave"))
    assert "You left the game" in text_of(resp.get_data(as_text=True), "done")
    seat = seats_of(app, table.game_id)[1]
    assert seat.bot == "heuristic" and seat.left_at is not None
    (told,) = table.inbox.to(PLAYERS[0].email, "notice")
    assert told.headline == ("Bob left the game; a bot plays their seat. The host can hand "
                             "it to someone else.")
    assert told.link("/admin/")
    for _ in range(8):
        table.step()
    assert len(table.inbox.to(bob.email)) == before


def test_notification_settings_on_the_game_page(app, client, table):
    page = path_of(table.mail(table.open()).link("/g/"))
    form = [f for f in forms(client.get(page).get_data(as_text=True))
            if f.attrs.get("id") == "notifications"][0]
    resp = client.post(form.action, data=form.data(how="mute"))
    assert "only when it is your turn" in text_of(resp.get_data(as_text=True), "notice")
    seat = seats_of(app, table.game_id)[table.open().position]
    assert seat.mute_notices
    resp = client.post(form.action, data=form.data(how="unmute"))
    assert not seats_of(app, table.game_id)[seat.position].mute_notices


def test_unsubscribe_links_refuse_garbage(app, client, table):
    mail = table.inbox.to(PLAYERS[0].email)[-1]
    url = f"/u/{mail.unsubscribe_token}"
    before = snapshot(app)
    for data in [{}, {"how": "leave"}, {"sig": "x", "how": "leave"},
                 {"List-Unsubscribe": "Two-Clicks"}]:
        assert client.post(url, data=data).status_code == 400, data
    assert client.post("/u/" + "A" * 43, data={"List-Unsubscribe": "One-Click"}
                       ).status_code == 404
    assert snapshot(app) == before


# --------------------------------------------------------------------------- rate limit


def test_the_rate_limit_holds_when_many_create_at_once(make_app):
    app = make_app(CREATE_LIMIT_PER_HOUR=10, INVITE_LIMIT_PER_ADDRESS=1000)
    statuses: list[int] = []
    lock = threading.Lock()

    def create(i: int) -> None:
        client = app.test_client()
        data = new_game_data(new_game_form(client), [
            services.PlayerIn("Ann", f"host{i}@example.com"), PLAYERS[1]])
        for _ in range(2):
            status = client.post("/new", data=data).status_code
            with lock:
                statuses.append(status)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(set(statuses)) == [200, 429], statuses
    assert statuses.count(200) == 10
    with app.app_context(), session_scope() as s:
        assert len(list(s.exec(select(Game)))) == 10


def test_the_client_address_comes_from_the_trusted_proxy_hops(make_app):
    for hops, limited in [(0, True), (1, False)]:
        app = make_app(CREATE_LIMIT_PER_HOUR=2, PROXY_HOPS=hops)
        statuses = []
        for i in range(4):  # four visitors behind one proxy
            client = app.test_client()
            data = new_game_data(new_game_form(client), [
                services.PlayerIn("Ann", f"h{hops}{i}@example.com"), PLAYERS[1]])
            resp = client.post("/new", data=data, headers={
                "X-Forwarded-For": f"203.0.113.{i}"}, environ_base={"REMOTE_ADDR": "10.0.0.1"})
            statuses.append(resp.status_code)
        assert statuses == ([200, 200, 429, 429] if limited else [200] * 4), hops


# --------------------------------------------------------------------------- found in review


def test_abandoning_a_game_before_it_starts_mails_nobody_who_has_not_joined(app, client,
                                                                            inbox):
    """A host cannot reach a stranger by making a game with their address and abandoning
    it, whether or not the host confirmed it first."""
    players = [PLAYERS[0], services.PlayerIn("Vic", VICTIM), PLAYERS[2]]
    for confirm in (False, True):
        with app.app_context():
            created = services.create_game("cavemen", players, title="BUY CHEAP PILLS")
        if confirm:
            url = path_of(inbox.to(PLAYERS[0].email, "host_confirm")[-1].link(
                "/host/confirm/"))
            client.post(url, data=only_form(client.get(url).get_data(as_text=True)).data())
        with app.app_context():
            services.abandon_game(created.admin_token)
    assert [m.template for m in inbox.to(VICTIM)] == ["invitation"]  # the confirmed one's
    assert [m.template for m in inbox.to(PLAYERS[0].email)] == [
        "host_confirm", "notice", "host_confirm", "notice"]
    skipped = outbox(app, Outbox.rcpt == VICTIM)
    assert [r.template for r in skipped] == ["invitation"]  # nothing else was even queued


def test_every_invitee_can_decline_and_unsubscribe(app, client, inbox):
    players = [PLAYERS[0], services.PlayerIn("Vic", VICTIM), PLAYERS[1], PLAYERS[2]]
    with app.app_context():
        services.create_game("cavemen", players, confirm_by_email=False)
    for p in players[1:3]:  # two declines in a row: two emails to the host
        invite = inbox.to(p.email, "invitation")[0]
        url = path_of(invite.text_links()[1])
        resp = client.post(url, data=only_form(client.get(url).get_data(as_text=True)).data())
        assert resp.status_code == 200, p
    invite = inbox.to(PLAYERS[2].email, "invitation")[0]
    assert one_click(client, invite).status_code == 200  # the third, by unsubscribing
    assert len(inbox.to(PLAYERS[0].email, "declined")) == 3
    with app.app_context(), session_scope() as s:
        assert s.get(Suppression, PLAYERS[2].email) is not None


def test_one_click_in_an_ended_games_email_leaves_other_games_alone(app, client, inbox):
    with app.app_context():
        first = services.create_game("cavemen", PLAYERS, seed=7, confirm_by_email=False,
                                     start=True)
        services.abandon_game(first.admin_token)
        second = services.create_game("cavemen", PLAYERS, seed=7, confirm_by_email=False,
                                      start=True)
    ended = [m for m in inbox.to(PLAYERS[0].email, "notice")][-1]
    resp = one_click(client, ended)
    assert "This game has ended" in text_of(resp.get_data(as_text=True), "done")
    with app.app_context(), session_scope() as s:
        assert s.get(Suppression, PLAYERS[0].email) is None
    table = Table(app, client, inbox, second.game_id, second.admin_token)
    for _ in range(4):
        table.step()
    assert inbox.to(PLAYERS[0].email, "decision")


def test_a_hand_over_invitation_does_not_move_what_the_seat_was_told(app, client, table):
    from pbem.models import Seat

    def seen() -> int:
        with app.app_context(), session_scope() as s:
            return s.exec(select(Seat).where(Seat.game_id == table.game_id,
                                             Seat.position == 1)).one().seen_event_seq

    table.inbox.deliver()
    table.step()  # events Bob has not been told of yet
    before = seen()
    assert before < load(app, Game, table.game_id).event_seq
    admin(client, table, "handover", position="1", name="Vic", email=VICTIM, lang="en",
          tz="UTC")
    table.inbox.deliver()
    assert table.inbox.to(VICTIM) and seen() == before


def test_messages_after_a_game_was_abandoned_say_so(app, client, inbox):
    with app.app_context():
        created = services.create_game("cavemen", PLAYERS)
    host_mail = inbox.to(PLAYERS[0].email, "host_confirm")[0]
    with app.app_context():
        services.abandon_game(created.admin_token)
    url = path_of(host_mail.link("/host/confirm/"))
    resp = client.get(url)
    assert resp.status_code == 409
    assert "ended this game before it started" in text_of(resp.get_data(as_text=True),
                                                          "confirmed")
    with app.app_context():
        second = services.create_game("cavemen", PLAYERS, confirm_by_email=False)
        services.abandon_game(second.admin_token)
    accept = path_of(inbox.to(PLAYERS[1].email, "invitation")[-1].text_links()[0])
    resp = client.get(accept)
    assert resp.status_code == 409
    assert "no longer waits for players" in text_of(resp.get_data(as_text=True), "answered")


# ------------------------------------------------- unsubscribing from a kind of email


def list_mail(client, inbox, address: str):
    from tests.server.test_my_games import ask

    ask(client, address)
    return inbox.to(address, "my_games")[-1]


def test_one_click_on_a_list_of_ones_games_stops_the_lists_only(app, client, table):
    """The audit's case: a one-click unsubscribe from a "My games" email stopped every
    email, the turn emails of a game the player still sat in too, and no bot took the
    seat. Now it stops the lists, and the turns go on."""
    bob = PLAYERS[1]
    mail = list_mail(client, table.inbox, bob.email)
    resp = one_click(client, mail)
    assert text_of(resp.get_data(as_text=True), "done") == (
        "This address will get no more lists of its games. The emails of your games go on "
        "as before.")
    assert load(app, Suppression, bob.email).scope == "my_games"
    before = len(table.inbox.to(bob.email, "decision"))
    for _ in range(6):
        table.step()
    assert len(table.inbox.to(bob.email, "decision")) > before  # turns still come
    list_mail(client, table.inbox, bob.email)
    assert [m.message_id for m in table.inbox.to(bob.email, "my_games")] == [
        mail.message_id]  # no more lists
    page = client.get(f"/u/{mail.unsubscribe_token}").get_data(as_text=True)
    assert "gets no lists of its games any more" in text_of(page, "settings")


def test_never_email_me_again_names_the_games_still_waiting_and_offers_a_bot(app, client,
                                                                            table):
    bob = PLAYERS[1]
    url = f"/u/{list_mail(client, table.inbox, bob.email).unsubscribe_token}"
    page = client.get(url).get_data(as_text=True)
    title = load(app, Game, table.game_id).title
    assert text_of(page, "still-playing") == (
        f"This address still has a seat in: {title}. Without email, nobody tells you when "
        "a decision is yours there; each game waits for you until the deadline.")
    form = [f for f in forms(page) if f.attrs.get("id") == "settings"][0]
    resp = client.post(url, data=form.data(how="suppress"))
    html = resp.get_data(as_text=True)
    assert text_of(html, "done") == "This address will get no more email from this server."
    assert "Let a bot play it: the host is told and can hand the seat to someone else." \
        in text_of(html, "seats")
    (seat_form,) = [f for f in forms(html) if f.hidden.get("how") == "leave"]
    bob_seat = seats_of(app, table.game_id)[1]
    assert seat_form.hidden["seat"] == str(bob_seat.id)
    resp = client.post(url, data=seat_form.data())
    assert "You left the game" in text_of(resp.get_data(as_text=True), "done")
    seat = seats_of(app, table.game_id)[1]
    assert seat.bot == "heuristic" and seat.left_at is not None
    assert [m.headline for m in table.inbox.to(PLAYERS[0].email, "notice")] == [
        "Bob left the game; a bot plays their seat. The host can hand it to someone else."]
    assert text_of(client.get(url).get_data(as_text=True), "seats") is None  # none left


def test_the_bot_offer_takes_only_seats_of_the_links_address(app, client, table):
    bob, cy = PLAYERS[1], PLAYERS[2]
    url = f"/u/{list_mail(client, table.inbox, bob.email).unsubscribe_token}"
    page = client.get(url).get_data(as_text=True)
    form = [f for f in forms(page) if f.attrs.get("id") == "settings"][0]
    client.post(url, data=form.data(how="suppress"))
    before = snapshot(app)
    cy_seat = seats_of(app, table.game_id)[2]
    for seat in (str(cy_seat.id), "0", str(2**31), "x"):
        resp = client.post(url, data=form.data(how="leave", seat=seat))
        assert resp.status_code in (400, 409), (seat, resp.status_code)
    assert snapshot(app) == before
    assert seats_of(app, table.game_id)[2].email == cy.email


def test_a_list_link_from_before_links_named_their_email_still_stops_only_lists(app, client,
                                                                                table):
    from pbem.tokens import mint

    bob = PLAYERS[1]
    with app.app_context(), session_scope() as s:
        raw = mint(s, "unsubscribe", table.game_id, None, action={"address": bob.email})
    resp = client.post(f"/u/{raw}", data={"List-Unsubscribe": "One-Click"})
    assert "no more lists" in text_of(resp.get_data(as_text=True), "done")
    assert load(app, Suppression, bob.email).scope == "my_games"
