"""A game made on the web: the host confirms by email, then invitations, accept/decline,
re-inviting from the host page, the rate limit and the CSRF check of the form."""

from __future__ import annotations

from sqlmodel import select

from pbem.db import session_scope
from pbem.models import Game
from pbem.services import PlayerIn
from pbem.tokens import form_signature
from tests.server.helpers import (
    PLAYERS,
    SECRET,
    Inbox,
    create_on_web,
    forms,
    new_game_data,
    new_game_form,
    only_form,
    outbox,
    path_of,
    seats_of,
    snapshot,
    text_of,
)

ANN, BOB, CY = PLAYERS


def games(app) -> list[Game]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Game)))




def confirm(client, mail) -> None:
    url = path_of(mail.link("/host/confirm/"))
    resp = client.post(url, data=only_form(client.get(url).get_data(as_text=True)).data())
    assert resp.status_code == 200
    assert "Invitations are on their way" in resp.get_data(as_text=True)


def answer(client, inbox, player, which: str):
    """Open the accept or decline link of ``player``'s invitation and press the button."""
    (invitation,) = inbox.to(player.email, "invitation")[-1:]
    url = path_of(invitation.text_links()[0 if which == "accept" else 1])
    assert url.startswith("/invite/")
    resp = client.post(url, data=only_form(client.get(url).get_data(as_text=True)).data())
    assert resp.status_code == 200
    return resp


def test_web_form_sends_exactly_one_email_to_the_host_only(app, client, inbox):
    mail = create_on_web(client, app)
    assert [(m.to_addr, m.template) for m in inbox.all()] == [(ANN.email, "host_confirm")]
    assert [(o.to_addr, o.template) for o in outbox(app)] == [(ANN.email, "host_confirm")]
    (game,) = games(app)
    assert game.status == "awaiting_host"
    for p in PLAYERS:  # the host sees whom the game would invite
        assert f"{p.name} ({p.email})" in mail.text
    assert "Nothing has been sent to them yet" in mail.text


def test_nothing_reaches_the_players_until_the_host_confirms(app, client, inbox):
    mail = create_on_web(client, app)
    url = path_of(mail.link("/host/confirm/"))
    before = snapshot(app)
    for method in ("GET", "HEAD"):
        page = client.open(url, method=method)
        assert page.status_code == 200
    assert "Send the invitations" in client.get(url).get_data(as_text=True)
    assert client.post(url, data={}).status_code == 400  # no sig: refused
    assert snapshot(app) == before
    assert len(inbox.all()) == 1


def test_host_confirmation_sends_the_invitations_to_the_others(app, client, inbox):
    confirm(client, create_on_web(client, app))
    invited = sorted(m.to_addr for m in inbox.of("invitation"))
    assert invited == [BOB.email, CY.email]
    assert inbox.to(ANN.email, "invitation") == []
    assert games(app)[0].status == "inviting"
    mail = inbox.to(BOB.email, "invitation")[0]
    assert "Ann invites you to a game of Cavemen" in mail.text
    assert [path_of(u)[:8] for u in mail.token_links()] == [
        "/invite/", "/invite/", path_of(mail.under("/my/")[0])[:8],
        "/u/" + mail.unsubscribe_token[:5]]


def test_confirmation_link_confirms_once_and_then_says_so(app, client, inbox):
    mail = create_on_web(client, app)
    confirm(client, mail)
    sent = len(inbox.all())
    url = path_of(mail.link("/host/confirm/"))
    before = snapshot(app)
    page = client.get(url)
    assert page.status_code == 409
    assert "the invitations are out" in text_of(page.get_data(as_text=True), "confirmed")
    resp = client.post(url, data={"sig": form_signature(SECRET, url.rsplit("/", 1)[1])})
    assert resp.status_code == 409
    assert "the invitations are out" in text_of(resp.get_data(as_text=True), "confirmed")
    assert len(inbox.all()) == sent
    assert snapshot(app) == before


def test_accept_link_shows_a_page_and_only_its_post_accepts(app, client, inbox):
    confirm(client, create_on_web(client, app))
    url = path_of(inbox.to(BOB.email, "invitation")[0].text_links()[0])
    before = snapshot(app)
    page = client.get(url)
    assert "Bob, do you want to play?" in page.get_data(as_text=True)
    assert client.head(url).status_code == 200
    assert client.post(url, data={}).status_code == 400
    assert snapshot(app) == before
    resp = answer(client, inbox, BOB, "accept")
    assert "You accepted" in resp.get_data(as_text=True)
    assert [s.invite for s in seats_of(app, games(app)[0].id)] == [
        "accepted", "accepted", "invited"]


def test_answering_an_invitation_twice_says_already_answered(app, client, inbox):
    confirm(client, create_on_web(client, app))
    answer(client, inbox, BOB, "accept")
    before = snapshot(app)
    for link in inbox.to(BOB.email, "invitation")[0].text_links()[:2]:  # accept, decline
        url = path_of(link)
        page = client.get(url)  # says so at once, with no button to press again
        assert page.status_code == 409
        assert text_of(page.get_data(as_text=True), "answered").startswith("Already accepted")
        assert forms(page.get_data(as_text=True)) == []
        resp = client.post(url, data={"sig": form_signature(SECRET, url.rsplit("/", 1)[1])})
        assert resp.status_code == 409
        assert "Already accepted" in text_of(resp.get_data(as_text=True), "answered")
    assert snapshot(app) == before


def test_the_game_starts_when_everyone_has_accepted(app, client, inbox):
    confirm(client, create_on_web(client, app))
    answer(client, inbox, BOB, "accept")
    assert games(app)[0].status == "inviting"
    assert inbox.of("decision") == []
    answer(client, inbox, CY, "accept")
    assert games(app)[0].status == "active"
    (decision,) = inbox.of("decision")
    started = sorted(m.to_addr for m in inbox.of("game_started"))
    assert sorted([decision.to_addr, *started]) == sorted(p.email for p in PLAYERS)


def test_a_decline_emails_the_host_with_the_host_page(app, client, inbox):
    confirm(client, create_on_web(client, app))
    resp = answer(client, inbox, BOB, "decline")
    assert "You declined" in resp.get_data(as_text=True)
    (mail,) = inbox.of("declined")
    assert mail.to_addr == ANN.email
    assert f"Bob ({BOB.email}) declined the invitation" in mail.text
    assert f"Bob ({BOB.email}) declined the invitation" in text_of(
        f'<section id="all">{mail.html}</section>', "all")
    assert mail.link("/admin/")
    assert [s.invite for s in seats_of(app, games(app)[0].id)][1] == "declined"


def test_the_host_reinvites_someone_else_from_the_host_page(app, client, inbox):
    confirm(client, create_on_web(client, app))
    old_links = [path_of(u) for u in inbox.to(BOB.email, "invitation")[0].text_links()
                 if "/invite/" in u]
    answer(client, inbox, BOB, "decline")
    admin = path_of(inbox.of("declined")[0].link("/admin/"))
    page = client.get(admin).get_data(as_text=True)
    (form,) = [f for f in forms(page) if f.attrs.get("id") == "replace"]
    assert form.selects["position"] == ["1"]  # only the declined seat is offered
    resp = client.post(form.action, data=form.data(position="1", name="Dan",
                                                   email="dan@example.com", lang="en",
                                                   tz="Europe/Paris"))
    assert resp.status_code == 200
    assert "Invitation sent." in resp.get_data(as_text=True)
    (invitation,) = inbox.to("dan@example.com", "invitation")
    assert "Ann invites you" in invitation.text
    for url in old_links:  # Bob's links died with his seat
        assert client.get(url).status_code == 404
    answer(client, inbox, PlayerIn("Dan", "dan@example.com"), "accept")
    answer(client, inbox, CY, "accept")
    assert games(app)[0].status == "active"
    assert [s.name for s in seats_of(app, games(app)[0].id)] == ["Ann", "Dan", "Cy"]


def test_reinviting_needs_the_host_page_signature(app, client, inbox):
    confirm(client, create_on_web(client, app))
    answer(client, inbox, BOB, "decline")
    admin = path_of(inbox.of("declined")[0].link("/admin/"))
    before = snapshot(app)
    resp = client.post(f"{admin}/replace", data={"position": "1", "name": "Eve",
                                                 "email": "eve@example.com"})
    assert resp.status_code == 400
    assert snapshot(app) == before


def test_only_a_declined_seat_can_be_reinvited(app, client, inbox):
    confirm(client, create_on_web(client, app))
    admin = path_of(inbox.of("host_confirm")[0].link("/admin/"))
    answer(client, inbox, BOB, "decline")
    form = [f for f in forms(client.get(admin).get_data(as_text=True))
            if f.attrs.get("id") == "replace"][0]
    before = snapshot(app)
    resp = client.post(form.action, data=form.data(position="2", name="Eve",
                                                   email="eve@example.com"))
    assert resp.status_code == 400
    assert "Only a seat whose invitation was declined can be re-invited." in text_of(
        resp.get_data(as_text=True), "error")
    assert snapshot(app) == before


def test_the_new_game_form_is_rate_limited(make_app):
    app = make_app(CREATE_LIMIT_PER_HOUR=2)
    client = app.test_client()
    create_on_web(client, app)
    create_on_web(client, app)
    before = snapshot(app)
    resp = client.post("/new", data=new_game_data(new_game_form(client)))
    assert resp.status_code == 429
    assert "too many games created from here" in text_of(resp.get_data(as_text=True),
                                                         "error").lower()
    assert snapshot(app) == before
    assert len(Inbox(app).of("host_confirm")) == 2


def test_a_new_game_post_without_the_csrf_token_is_refused(app, client, inbox):
    data = new_game_data(new_game_form(client))
    before = snapshot(app)
    for bad in ({k: v for k, v in data.items() if k != "csrf"}, {**data, "csrf": "forged"}):
        resp = client.post("/new", data=bad)
        assert resp.status_code == 400
        assert "the form expired" in resp.get_data(as_text=True).lower()
    other = app.test_client()  # a token from someone else's session does not do either
    resp = other.post("/new", data=data)
    assert resp.status_code == 400
    assert snapshot(app) == before
    assert inbox.all() == []


def test_an_invalid_form_is_shown_again_with_the_reason(app, client, inbox):
    data = new_game_data(new_game_form(client))
    data["email1"] = "not-an-address"
    resp = client.post("/new", data=data)
    assert resp.status_code == 400
    html = resp.get_data(as_text=True)
    assert "'not-an-address' is not an email address" in text_of(html, "error")
    form = [f for f in forms(html) if f.attrs.get("id") == "new-game"][0]
    assert form.inputs["name0"] == "Ann" and form.inputs["email1"] == "not-an-address"
    assert games(app) == [] and inbox.all() == []


# --------------------------------------------------------------------------- expiry


def test_a_game_its_host_never_confirms_is_deleted_after_three_days(app, client, frozen):
    """Whoever made it may have typed in other people's addresses and a title of their
    choosing; nobody agreed to anything, so the clock deletes it and all about it."""
    from pbem.models import Outbox, Seat, Token
    from tests.server.timekit import rows, sweep_at

    mail = create_on_web(client, app, title="Never confirmed")
    assert "the game is deleted in 3 days" in mail.text
    kept = create_on_web(client, app, players=[PlayerIn("Dee", "dee@example.com"), BOB],
                         title="Confirmed")
    confirm(client, kept)
    url = path_of(mail.link("/host/confirm/"))
    gone, stays = (g.id for g in sorted(games(app), key=lambda g: g.title != "Never confirmed"))
    assert sweep_at(app, frozen, 72 - 1 / 60)["expired"] == 0
    assert client.get(url).status_code == 200
    assert sweep_at(app, frozen, 72)["expired"] == 1
    assert [g.id for g in games(app)] == [stays]
    for model in (Seat, Token, Outbox):
        assert rows(app, model, model.game_id == gone) == []
    assert client.get(url).status_code == 404
    assert client.get(path_of(mail.link("/admin/"))).status_code == 404
    assert sweep_at(app, frozen, 24 * 30)["expired"] == 0  # a confirmed game stays
