"""Issue 32, point 6: the invitee's own language and time zone. The invitation's pages
speak the invitation's language (not the browser's), before and after answering; the
accept page asks the player to confirm their language and zone (the zone list picks the
browser's zone by script; without one, the invitation's), and stores what they confirm;
anything that is no language or zone of the lists is refused and nothing is written."""

from __future__ import annotations

import dataclasses

import pytest
from sqlmodel import select

from pbem import mail, services
from pbem.db import session_scope
from pbem.models import Seat
from tests.server.helpers import PLAYERS, Inbox, forms, path_of, snapshot, text_of

GERMAN_BROWSER = {"Accept-Language": "en-GB,en;q=0.9"}  # the browser speaks English


@pytest.fixture
def german_invitation(make_app):
    """Bob is invited in German (the host chose it), zone Europe/Vienna; his browser
    asks for English. The invitations go out at once (the CLI's way)."""
    app = make_app()
    inbox = Inbox(app)
    players = [PLAYERS[0], dataclasses.replace(PLAYERS[1], language="de",
                                               timezone="Europe/Vienna")]
    with app.app_context():
        created = services.create_game("stoneage", players, {}, seed=3,
                                       confirm_by_email=False)
        mail.deliver_due()
    (invitation,) = inbox.to(PLAYERS[1].email, "invitation")
    accept = path_of(invitation.under("/invite/")[0])
    return app, accept, created


def seat_of(app, game_id, email):
    with app.app_context(), session_scope() as s:
        return s.exec(select(Seat).where(Seat.game_id == game_id,
                                         Seat.email == email)).one()


def test_the_accept_page_speaks_the_invitations_language(german_invitation):
    app, accept, _ = german_invitation
    html = app.test_client().get(accept, headers=GERMAN_BROWSER).get_data(as_text=True)
    assert '<html lang="de">' in html
    assert "Deine Zeitzone, für deine Fristen" in html


def test_the_accept_page_asks_language_and_zone_prefilled_and_the_browser_may_correct(
        german_invitation):
    app, accept, _ = german_invitation
    resp = app.test_client().get(accept, headers=GERMAN_BROWSER)
    html = resp.get_data(as_text=True)
    (form,) = [f for f in forms(html) if "sig" in f.hidden]
    assert 'value="de" lang="de" selected' in html
    assert '<option value="Europe/Vienna" selected>' in html  # without a script
    assert "data-browser-zone" in html and "tz.js" in html  # with one: the browser's
    assert "script-src 'self'" in resp.headers["Content-Security-Policy"]


def test_accepting_stores_the_language_and_zone_the_player_confirms(german_invitation):
    app, accept, created = german_invitation
    client = app.test_client()
    html = client.get(accept).get_data(as_text=True)
    (form,) = [f for f in forms(html) if "sig" in f.hidden]
    done = client.post(accept, data={**form.hidden, "lang": "en", "tz": "America/Chicago"},
                       headers=GERMAN_BROWSER)
    assert done.status_code == 200 and "You accepted" in done.get_data(as_text=True)
    seat = seat_of(app, created.game_id, PLAYERS[1].email)
    assert (seat.language, seat.timezone) == ("en", "America/Chicago")


@pytest.mark.parametrize(("field", "value"), [
    ("tz", "Mars/Olympus"), ("tz", "Europe/Berlin\r\nBcc: x@example.org"), ("tz", "x" * 500),
    ("lang", "xx"), ("lang", "de\r\n")])
def test_a_zone_or_language_not_offered_is_refused_and_nothing_written(
        german_invitation, field, value):
    app, accept, _ = german_invitation
    client = app.test_client()
    html = client.get(accept).get_data(as_text=True)
    (form,) = [f for f in forms(html) if "sig" in f.hidden]
    before = snapshot(app)
    resp = client.post(accept, data={**form.hidden, "lang": "de", "tz": "Europe/Vienna",
                                     field: value})
    assert resp.status_code == 400
    assert text_of(resp.get_data(as_text=True), "error") in (
        "wähle eine Zeitzone aus der Liste", "wähle eine Sprache aus der Liste")
    assert snapshot(app) == before


def test_the_already_accepted_page_speaks_the_invitations_language(german_invitation):
    app, accept, _ = german_invitation
    client = app.test_client()
    html = client.get(accept).get_data(as_text=True)
    (form,) = [f for f in forms(html) if "sig" in f.hidden]
    client.post(accept, data={**form.hidden, "lang": "de", "tz": "Europe/Vienna"})
    again = client.get(accept, headers=GERMAN_BROWSER).get_data(as_text=True)
    assert '<html lang="de">' in again and "Bereits angenommen" in again
