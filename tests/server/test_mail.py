"""Emails: text and HTML twins with the same information, deadlines in local time and UTC,
one thread per game, user text escaped in HTML and harmless in headers."""

from __future__ import annotations

from datetime import timedelta
from email.utils import parseaddr

import pytest
from freezegun import freeze_time
from sqlmodel import select

from pbem import mail, services
from pbem.db import session_scope
from pbem.errors import InvalidInput
from pbem.models import Game, Outbox, Suppression
from tests.server.conftest import start_game
from tests.server.helpers import (
    BASE_URL,
    PLAYERS,
    Inbox,
    Table,
    create_on_web,
    forms,
    load,
    new_game_data,
    new_game_form,
    only_form,
    outbox,
    path_of,
    text_of,
)


def play(table: Table, moves: int) -> None:
    for _ in range(moves):
        table.step()


def web_flow_mails(app, client) -> Inbox:
    """host_confirm, invitations and a decline: the emails of a game not yet started."""
    host_mail = create_on_web(client, app)
    url = path_of(host_mail.link("/host/confirm/"))
    client.post(url, data=only_form(client.get(url).get_data(as_text=True)).data())
    inbox = Inbox(app)
    decline = path_of(inbox.to(PLAYERS[1].email, "invitation")[0].text_links()[1])
    client.post(decline, data=only_form(client.get(decline).get_data(as_text=True)).data())
    return inbox


# --------------------------------------------------------------------------- two parts


def assert_twins(m) -> None:
    assert m.msg.get_content_type() == "multipart/alternative"
    assert [p.get_content_type() for p in m.msg.iter_parts()] == ["text/plain", "text/html"]
    text_links, html_links = m.text_links(), m.html_links()
    assert text_links, m.subject
    assert all(u.startswith(BASE_URL + "/") for u in text_links)
    assert sorted(set(text_links)) == sorted(set(html_links)), m.subject
    rules = BASE_URL + "/rules/"  # every game email links to the rules page
    if m.template not in ("host_confirm", "declined"):
        assert any(u.startswith(rules) for u in text_links), m.subject


def test_game_emails_have_text_and_html_parts_with_the_same_links(table):
    play(table, 8)  # bids, actions, a casualty choice, the discard
    mails = table.inbox.all()
    assert {m.template for m in mails} >= {"decision", "game_started"}
    assert len(mails) >= 10
    for m in mails:
        assert_twins(m)


def test_invitation_emails_have_text_and_html_parts_with_the_same_links(app, client):
    inbox = web_flow_mails(app, client)
    assert sorted(m.template for m in inbox.all()) == [
        "declined", "host_confirm", "invitation", "invitation"]
    for m in inbox.all():
        assert_twins(m)


def test_decision_email_parts_tell_the_same_story(table):
    m = table.mail(table.open())
    html_text = text_of(f'<section id="all">{m.html}</section>', "all")
    for line in ("Your turn: bid for the conch", "Pass", "Bid 4 Teeth",
                 "The game begins. The stone-marker draw gives"):
        assert line in m.text and line in html_text, line


# --------------------------------------------------------------------------- deadlines

LOCAL_DEADLINES = {  # 48 hours after 2030-01-15 10:00 UTC, in each player's zone
    "ann@example.com": "Thursday 17 January 2030, 11:00 (Europe/Berlin)",
    "bob@example.com": "Thursday 17 January 2030, 05:00 (America/New_York)",
    "cy@example.com": "Thursday 17 January 2030, 19:00 (Asia/Tokyo)",
}


def test_deadline_is_given_in_local_time_and_utc_in_both_parts(app, client, inbox):
    with freeze_time("2030-01-15 10:00:00"):
        created = start_game(app, hours=48)
        table = Table(app, client, inbox, created.game_id, created.admin_token)
        play(table, 2)  # the three bids: one email to each player
        decisions = inbox.of("decision")
    assert sorted(m.to_addr for m in decisions) == sorted(LOCAL_DEADLINES)
    for m in decisions:
        html_text = text_of(f'<section id="all">{m.html}</section>', "all")
        for part in (m.text, html_text):
            assert f"Decide by {LOCAL_DEADLINES[m.to_addr]} / 2030-01-17 10:00 UTC." in part


# --------------------------------------------------------------------------- threads


def assert_one_conversation_per_address(mails) -> None:
    """Each address's emails of a game: one subject, each answering the one before, all
    pointing back to the first (a message that address really received)."""
    for addr in {m.to_addr for m in mails}:
        mine = [m for m in mails if m.to_addr == addr]
        assert mine[0].msg["In-Reply-To"] is None and mine[0].msg["References"] is None
        for before, m in zip(mine, mine[1:], strict=False):
            assert m.msg["In-Reply-To"] == before.message_id
            assert m.msg["References"].split() in (
                [mine[0].message_id, before.message_id], [before.message_id])
            assert m.msg["References"].split()[0] == mine[0].message_id


def test_mails_of_a_game_share_one_conversation_and_have_unique_message_ids(app, table):
    play(table, 6)
    mails = table.inbox.all()
    assert len(mails) >= 8
    ids = [m.message_id for m in mails]
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("<") and i.endswith("@pbem.test>") for i in ids)
    assert {m.subject for m in mails} == {"Cavemen: Ann, Bob, Cy"}
    assert {m.msg["List-Id"] for m in mails} == {
        f"Cavemen: Ann, Bob, Cy <{table.game_id}.games.pbem.test>"}
    assert_one_conversation_per_address(mails)


def test_web_flow_mails_share_one_conversation_per_address(app, client):
    inbox = web_flow_mails(app, client)
    mails = inbox.all()
    assert {m.subject for m in mails} == {"Cavemen: Ann, Bob, Cy"}
    assert [m.template for m in mails if m.to_addr == PLAYERS[0].email] == [
        "host_confirm", "declined"]
    assert_one_conversation_per_address(mails)


def test_two_games_have_two_conversations(app, table):
    other = start_game(app, title="Friday game")
    mails = table.inbox.all()
    by_game = {m.msg["List-Id"].rsplit("<", 1)[1].split(".")[0]: m.subject for m in mails}
    assert by_game == {table.game_id: "Cavemen: Ann, Bob, Cy",
                       other.game_id: "Friday game"}


# --------------------------------------------------------------------------- user text

ODD = services.PlayerIn('Bob & "Co"', "bob@example.com", "en", "UTC")
SCRIPT_TITLE = "<script>alert('x')</script> & co"


@pytest.fixture
def odd_table(app, client, inbox) -> Table:
    created = start_game(app, players=[PLAYERS[0], ODD, PLAYERS[2]], title=SCRIPT_TITLE)
    return Table(app, client, inbox, created.game_id, created.admin_token)


def test_names_and_titles_are_escaped_in_html_mail_and_raw_in_text(odd_table):
    mails = odd_table.inbox.all()
    assert len(mails) == 3
    for m in mails:
        assert 'Bob &amp; &#34;Co&#34;' in m.html or "Bob &amp; &quot;Co&quot;" in m.html
        assert 'Bob & "Co"' not in m.html
        assert "<script>" not in m.html
        assert 'Bob & "Co"' in m.text


def test_odd_names_are_encoded_in_the_to_header(odd_table):
    (bob,) = odd_table.inbox.to("bob@example.com")
    raw = bob.msg.as_string()
    header = next(line for line in raw.splitlines() if line.startswith("To:"))
    assert header == "To: =?utf-8?b?Qm9iICYgIkNvIg==?= <bob@example.com>"
    assert parseaddr(str(bob.msg["To"])) == ('Bob & "Co"', "bob@example.com")


def test_the_title_stays_one_subject_line(odd_table):
    for m in odd_table.inbox.all():
        assert SCRIPT_TITLE in m.subject
        assert "\n" not in m.subject


def test_names_and_titles_are_escaped_in_pages(app, client, odd_table):
    pages = [path_of(odd_table.mail(odd_table.open()).link("/g/")),
             path_of(odd_table.mail(odd_table.open()).action_links()[0]),
             f"/admin/{odd_table.admin}",
             f"/watch/{load(app, Game, odd_table.game_id).spectator_key}"]
    for url in pages:
        html = client.get(url).get_data(as_text=True)
        assert "<script>" not in html, url
        assert 'Bob & "Co"' not in html, url
        if "/a/" not in url:
            assert "&lt;script&gt;" in html, url
            assert "Bob &amp; &#34;Co&#34;" in html, url


def test_a_name_with_markup_is_refused_and_shown_back_escaped(app, client, inbox):
    data = new_game_data(new_game_form(client))
    data["name1"] = "<script>alert(1)</script>"
    resp = client.post("/new", data=data)
    assert resp.status_code == 400
    html = resp.get_data(as_text=True)
    assert text_of(html, "error") == "Player 2: a name of 1 to 60 characters, without < or >."
    assert "<script>alert(1)</script>" not in html
    form = [f for f in forms(html) if f.attrs.get("id") == "new-game"][0]
    assert form.inputs["name1"] == "<script>alert(1)</script>"  # escaped, read back intact
    assert inbox.all() == []


HEADER_TRICKS = ["Eve\r\nBcc: evil@example.com", "Eve\nBcc: evil@example.com",
                 "Eve\rBcc: evil@example.com", "Eve\x00"]


@pytest.mark.parametrize("name", HEADER_TRICKS, ids=["crlf", "lf", "cr", "nul"])
def test_line_breaks_in_names_are_refused_with_a_clear_message(app, client, inbox, name):
    data = new_game_data(new_game_form(client))
    data["name2"] = name
    resp = client.post("/new", data=data)
    assert resp.status_code == 400
    assert text_of(resp.get_data(as_text=True), "error") == (
        "Player 3: names may not contain line breaks, control characters or invisible "
        "formatting characters (such as text-direction overrides).")
    assert inbox.all() == []


def test_line_breaks_in_addresses_are_refused(app):
    players = [PLAYERS[0], services.PlayerIn("Eve", "eve@example.com\r\nBcc: x@example.com")]
    with app.app_context(), pytest.raises(InvalidInput, match="not an email address"):
        services.create_game("cavemen", players, confirm_by_email=False)


def test_line_breaks_in_a_reinvited_name_are_refused(app, client):
    inbox = web_flow_mails(app, client)
    admin = path_of(inbox.of("declined")[0].link("/admin/"))
    form = [f for f in forms(client.get(admin).get_data(as_text=True))
            if f.attrs.get("id") == "replace"][0]
    resp = client.post(form.action, data=form.data(
        position="1", name="Dan\r\nBcc: evil@example.com", email="dan@example.com"))
    assert resp.status_code == 400
    assert "line breaks" in text_of(resp.get_data(as_text=True), "error")
    assert inbox.to("dan@example.com") == []


# --------------------------------------------------------------------------- the outbox




def make_due(app) -> None:
    """Let the retry backoff pass (the rows' next attempt is now)."""
    with app.app_context(), session_scope() as s:
        for row in s.exec(select(Outbox).where(Outbox.status == "pending")):
            row.next_attempt_at = row.next_attempt_at - timedelta(hours=2)


def test_a_failed_send_is_kept_and_retried_once_due(app, inbox):
    inbox.backend.fail = ConnectionRefusedError("mail server down")
    with app.app_context():
        services.create_game("cavemen", PLAYERS, seed=7, confirm_by_email=False, start=True)
        # A server that is down ends each pass at its first failure.
        for _ in range(3):
            assert mail.deliver_due() == {"sent": 0, "failed": 1, "skipped": 0}
        assert mail.deliver_due() == {"sent": 0, "failed": 0, "skipped": 0}  # backing off
    rows = outbox(app)
    assert [(r.status, r.attempts) for r in rows] == [("pending", 1)] * 3
    assert all(r.last_error == "mail server down" for r in rows)
    inbox.backend.fail = None
    make_due(app)
    with app.app_context():
        assert mail.deliver_due() == {"sent": 3, "failed": 0, "skipped": 0}
        make_due(app)
        assert mail.deliver_due() == {"sent": 0, "failed": 0, "skipped": 0}
    assert [(r.status, r.attempts, r.last_error) for r in outbox(app)] == [
        ("sent", 2, None)] * 3
    assert sorted(m.to_addr for m in inbox.all()) == sorted(p.email for p in PLAYERS)


def held_first_decision(app, inbox):
    """The one open decision of a game started while the mail server was down (its
    emails wait in the outbox); the server is then still down."""
    from tests.server.helpers import open_decisions

    inbox.backend.fail = ConnectionRefusedError("mail server down")
    with app.app_context():
        created = services.create_game("cavemen", PLAYERS, seed=7, confirm_by_email=False,
                                       start=True)
        mail.deliver_due()
    (decision,) = open_decisions(app, created.game_id)
    return decision


def test_a_decision_email_for_a_closed_decision_is_not_sent(app, inbox):
    decision = held_first_decision(app, inbox)
    with app.app_context():
        services.time_out(decision.id, decision.deadline_at + timedelta(seconds=1))
    inbox.backend.fail = None
    make_due(app)
    with app.app_context():
        mail.deliver_due()
    row = next(r for r in outbox(app) if r.context.get("decision_id") == decision.id)
    assert (row.status, row.last_error) == (
        "skipped", "the decision closed before this email could be sent")
    assert all(m.decision_id != decision.id for m in inbox.all())


@pytest.mark.parametrize(("scope", "sent"), [("all", False), ("my_games", True)])
def test_a_decision_email_to_an_address_that_asked_for_none_is_not_sent(app, inbox, scope,
                                                                        sent):
    """The suppression is asked with the decision's state in one statement: "all" stops
    a decision's email (before its decision is asked about), "my_games" does not."""
    decision = held_first_decision(app, inbox)
    row = next(r for r in outbox(app) if r.context.get("decision_id") == decision.id)
    with app.app_context(), session_scope() as s:
        s.add(Suppression(address=row.rcpt, scope=scope))
    inbox.backend.fail = None
    make_due(app)
    with app.app_context():
        mail.deliver_due()
    row = next(r for r in outbox(app) if r.context.get("decision_id") == decision.id)
    if sent:
        assert row.status == "sent"
    else:
        assert (row.status, row.last_error) == (
            "skipped", "the address asked not to get email from this server")
