"""No input gives a 500, and no email is retried forever (issue 7, item 2)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import insert
from sqlmodel import select

from pbem import mail, services
from pbem.db import session_scope
from pbem.models import Outbox, Seat, utcnow
from pbem.tokens import form_signature
from tests.server.helpers import (
    PLAYERS,
    SECRET,
    create_on_web,
    forms,
    new_game_data,
    new_game_form,
    outbox,
    path_of,
    snapshot,
    text_of,
)

# --------------------------------------------------------------------------- sig and csrf

ODD_SECRETS = ["é", "ü€😀", "\ufffd", "A" * 43 + "é", "\x00é"]


def acting_routes(table) -> list[str]:
    """Every route that acts on a POST, with a live token of the right kind."""
    page = table.mail(table.open()).link("/g/")
    one_click = table.mail(table.open()).action_links()[0]
    unsubscribe = "/u/" + table.mail(table.open()).unsubscribe_token
    admin = f"/admin/{table.admin}"
    routes = [path_of(page), path_of(page) + "/vacation", path_of(page) + "/back",
              path_of(page) + "/takeback", path_of(page) + "/plan",
              path_of(page) + "/notifications", path_of(page) + "/say", path_of(one_click),
              unsubscribe]
    routes += [f"{admin}/{c}" for c in ("replace", "pause", "resume", "extend", "abandon",
                                        "bot", "handover", "withdraw")]
    return routes


@pytest.mark.parametrize("odd", ODD_SECRETS, ids=range(len(ODD_SECRETS)))
def test_a_non_ascii_sig_is_refused_on_every_acting_route(app, client, table, odd):
    before = snapshot(app)
    for url in acting_routes(table):
        resp = client.post(url, data={"sig": odd, "how": "mute"})
        assert resp.status_code == 400, (url, resp.status_code)
        assert "did not come from this site" in text_of(resp.get_data(as_text=True), "error")
    assert snapshot(app) == before


@pytest.mark.parametrize("odd", ODD_SECRETS, ids=range(len(ODD_SECRETS)))
def test_a_non_ascii_sig_is_refused_on_the_links_before_a_game(app, client, odd):
    host_mail = create_on_web(client, app)
    confirm = path_of(host_mail.link("/host/confirm/"))
    before = snapshot(app)
    assert client.post(confirm, data={"sig": odd}).status_code == 400
    assert snapshot(app) == before
    client.post(confirm, data={"sig": form_signature(SECRET, confirm.rsplit("/", 1)[1])})
    from tests.server.helpers import Inbox

    invitation = Inbox(app).to(PLAYERS[1].email, "invitation")[0]
    before = snapshot(app)
    for url in invitation.token_links():
        expected = 405 if "/my/" in url else 400  # the list of one's games takes no POST
        assert client.post(path_of(url), data={"sig": odd}).status_code == expected, url
    assert snapshot(app) == before


def test_undecodable_bytes_in_a_sig_are_refused(app, client, table):
    before = snapshot(app)
    for url in acting_routes(table):
        resp = client.post(url, data=b"sig=%FF%FE%80&how=mute",
                           content_type="application/x-www-form-urlencoded")
        assert resp.status_code == 400, url
    assert snapshot(app) == before


@pytest.mark.parametrize("odd", ODD_SECRETS, ids=range(len(ODD_SECRETS)))
def test_a_non_ascii_csrf_token_is_refused_on_the_new_game_form(app, client, odd):
    data = new_game_data(new_game_form(client), csrf=odd)
    before = snapshot(app)
    resp = client.post("/new", data=data)
    assert resp.status_code == 400
    assert "The form expired" in text_of(resp.get_data(as_text=True), "error")
    assert snapshot(app) == before


# --------------------------------------------------------------------------- hand-overs


def hand_over(client, table, name: str, addr: str):
    form = [f for f in forms(client.get(f"/admin/{table.admin}").get_data(as_text=True))
            if f.action == f"/admin/{table.admin}/handover"][0]
    return client.post(form.action, data=form.data(position="2", name=name, email=addr,
                                                   lang="en", tz="UTC"))


def accept(client, inbox, addr: str):
    from tests.server.helpers import only_form

    invite = inbox.to(addr, "handover_invite")[-1]
    url = path_of(invite.text_links()[0])
    return client.post(url, data=only_form(client.get(url).get_data(as_text=True)).data())


def test_handing_the_same_seat_over_twice_while_its_decision_is_open(app, client, table):
    """The host corrects a mistyped address at once; then the seat changes hands twice
    while the same decision stays open."""
    cy_bid = table.open()
    assert cy_bid.position == 2
    assert hand_over(client, table, "Dee", "dee@exmaple.com").status_code == 200  # typo
    table.inbox.deliver()  # the clock sends that invitation before the host notices
    assert hand_over(client, table, "Dee", "dee@example.com").status_code == 200
    seats = [s for s in _seats(app, table.game_id) if s.position == 2]
    assert seats[0].pending_handover["email"] == "dee@example.com"
    # The mistyped address got one invitation, whose links no longer work.
    (typo,) = table.inbox.to("dee@exmaple.com")
    resp = client.get(path_of(typo.text_links()[0]))
    assert resp.status_code in (404, 409)
    assert accept(client, table.inbox, "dee@example.com").status_code == 200
    assert hand_over(client, table, "Eve", "eve@example.com").status_code == 200
    assert accept(client, table.inbox, "eve@example.com").status_code == 200
    assert table.open().id == cy_bid.id  # still the same open decision
    assert [m.template for m in table.inbox.to("eve@example.com")] == [
        "handover_invite", "welcome", "handover"]
    assert len(table.inbox.to("dee@example.com", "handover")) == 1


def _seats(app, game_id: str) -> list[Seat]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Seat).where(Seat.game_id == game_id)))


# --------------------------------------------------------------------------- the outbox


def add_row(app, **values) -> int:
    """An outbox row as a (buggy or hostile) queueing step might have written it."""
    game_id = values.pop("game_id")
    with app.app_context(), session_scope() as s:
        seat = s.exec(select(Seat).where(Seat.game_id == game_id)).first()
        now = utcnow()
        row = {"game_id": game_id, "seat_id": values.pop("seat_id", seat.id), "to_addr": seat.email,
               "rcpt": seat.email.lower(), "to_name": seat.name, "language": "en",
               "template": "notice", "context": {"links": {}, "headline": "x"},
               "idempotency_key": f"test:{now.timestamp()}", "status": "pending",
               "attempts": 0, "next_attempt_at": now, "created_at": now,
               "message_id": f"<pbem.test.{now.timestamp()}@pbem.test>", **values}
        return s.execute(insert(Outbox).values(**row).returning(Outbox.id)).scalar_one()


def row_of(app, row_id: int) -> Outbox:
    with app.app_context(), session_scope() as s:
        return s.get(Outbox, row_id)


def let_backoff_pass(app) -> None:
    from datetime import timedelta

    with app.app_context(), session_scope() as s:
        for row in s.exec(select(Outbox).where(Outbox.status == "pending")):
            row.next_attempt_at = row.next_attempt_at - timedelta(days=2)


@pytest.mark.parametrize("broken", [{"template": "no_such_template"},
                                    {"to_addr": "a:b@x.org", "rcpt": "a:b@x.org",
                                     "seat_id": None},
                                    {"context": {"links": {"x": {"kind": "nope"}}}}],
                         ids=["template", "address", "link"])
def test_an_email_that_cannot_be_rendered_stops_after_a_few_tries(app, client, table,
                                                                   broken, caplog):
    row_id = add_row(app, game_id=table.game_id, **broken)
    for _ in range(mail.RENDER_ATTEMPTS + 2):
        with app.app_context():
            mail.deliver_due()
        let_backoff_pass(app)
    row = row_of(app, row_id)
    assert (row.status, row.attempts) == ("undeliverable", mail.RENDER_ATTEMPTS)
    assert row.last_error.startswith("could not be rendered")
    assert len([r for r in caplog.records if "rendering outbox row" in r.message]) == \
        mail.RENDER_ATTEMPTS  # one traceback per try, then silence
    page = client.get(f"/admin/{table.admin}").get_data(as_text=True)
    assert "could not be rendered" in text_of(page, "undeliverable")


def test_a_mail_server_that_keeps_failing_gives_up_after_the_configured_attempts(make_app):
    app = make_app(MAIL_MAX_ATTEMPTS=4)
    backend = app.extensions["pbem.mail"]
    backend.fail = ConnectionRefusedError("down")
    with app.app_context():
        services.create_game("cavemen", PLAYERS, seed=7, confirm_by_email=False, start=True)
    for _ in range(12):
        with app.app_context():
            mail.deliver_due()
        let_backoff_pass(app)
    with app.app_context(), session_scope() as s:
        rows = list(s.exec(select(Outbox)))
    assert [(r.status, r.attempts) for r in rows] == [("undeliverable", 4)] * 3


def test_a_recipient_refused_for_good_is_undeliverable_at_once(app):
    backend = app.extensions["pbem.mail"]
    backend.fail = mail.MailError("recipient refused: 550 no such user", permanent=True)
    with app.app_context():
        services.create_game("cavemen", PLAYERS, seed=7, confirm_by_email=False, start=True)
        counts = mail.deliver_due()
    assert counts == {"sent": 0, "failed": 3, "skipped": 0}  # each row fails on its own
    with app.app_context(), session_scope() as s:
        rows = list(s.exec(select(Outbox)))
    assert {(r.status, r.attempts, r.last_error) for r in rows} == {
        ("undeliverable", 1, "recipient refused: 550 no such user")}


# --------------------------------------------------------------------------- the forms


def test_a_sixth_player_on_the_web_form_is_refused_not_dropped(app, client, inbox):
    data = new_game_data(new_game_form(client))
    data.update({"name5": "Fay", "email5": "fay@example.com"})
    before = snapshot(app)
    resp = client.post("/new", data=data)
    assert resp.status_code == 400
    assert text_of(resp.get_data(as_text=True), "error") == (
        "A game has at most 5 players; this form has more: remove the extra ones.")
    assert snapshot(app) == before and inbox.all() == []


def test_an_illegal_discard_returns_to_the_game_page_in_the_players_words(app, client,
                                                                          table):
    decision = table.play_until(lambda d, state: d.kind == "discard")
    state = table.state()
    page = path_of(table.mail(decision).link("/g/"))
    sig = form_signature(SECRET, page.rsplit("/", 1)[1])
    before = snapshot(app)
    need = len(state.pool) - 3  # cards to tick; one more is too many
    resp = client.post(page, data={"sig": sig, "decision_id": str(decision.id),
                                   "kind": "discard", "discard.cards": list(state.pool)[:need + 1]})
    assert resp.status_code == 400
    html = resp.get_data(as_text=True)
    error = text_of(html, "error")
    assert error.startswith("Leave exactly 3 cards in the pool")
    for internal in [*state.pool, "seat", "discard b", "not legal"]:
        assert internal not in error, internal
    (form,) = [f for f in forms(html) if f.attrs.get("id") == "decision"]
    assert form.hidden["decision_id"] == str(decision.id)  # the form is still there
    assert "Home" not in text_of(html, "error")
    assert snapshot(app) == before


def test_a_sender_that_keeps_dying_while_sending_gives_the_email_up(make_app):
    """A process killed in the middle of sending leaves the row claimed; its lease runs
    out and another pass claims it. After the attempts allowed, it is given up."""
    app = make_app(MAIL_MAX_ATTEMPTS=5)
    with app.app_context():
        services.create_game("cavemen", PLAYERS[:2], seed=7, confirm_by_email=False,
                             start=True)
    for _ in range(8):
        with app.app_context():  # a claim whose sender then dies: the lease runs out
            for row in outbox(app):
                mail.delivery.claim(row.id)
        let_backoff_pass(app)
        with app.app_context(), session_scope() as s:
            for row in s.exec(select(Outbox).where(Outbox.status == "sending")):
                row.next_attempt_at = utcnow()
    rows = outbox(app)
    assert {(r.status, r.attempts) for r in rows} == {("undeliverable", 5)}
    assert "gave up after 5 attempts" in rows[0].last_error




@pytest.mark.parametrize("seconds", [None, 30])
def test_a_claimed_email_is_leased_for_the_configured_seconds(make_app, seconds):
    """A killed sender's email goes out again once its lease runs out: two minutes unless
    MAIL_LEASE_SECONDS says otherwise."""
    app = make_app() if seconds is None else make_app(MAIL_LEASE_SECONDS=seconds)
    with app.app_context():
        services.create_game("cavemen", PLAYERS[:2], seed=7, confirm_by_email=False,
                             start=True)
        row = outbox(app)[0]
        before = utcnow()
        assert mail.delivery.claim(row.id)
        after = utcnow()
    (claimed,) = [r for r in outbox(app) if r.id == row.id]
    lease = timedelta(seconds=seconds or 120)
    assert claimed.status == "sending"
    assert before + lease <= claimed.next_attempt_at <= after + lease
