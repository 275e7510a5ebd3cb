"""Issue 32, point 7: what the host chose is what everyone is told: an invitation to a
time-bank game says the time bank (not "48 hours per decision"), the host page says it,
the rules pages no longer promise a time per decision, and the host's confirmation
email names a bot's level instead of an empty address."""

from __future__ import annotations

import dataclasses

import pytest

from pbem import mail, services
from tests.server.helpers import PLAYERS, Inbox, only_form, path_of

BANK = {"time_control": "bank", "bank_days": 3, "increment_hours": 24, "cap_days": 4}
SAID = {"en": ("A time bank: each player's clock starts with 3 days", "Time per decision"),
        "de": ("Zeitkonto", "Zeit je Entscheidung")}


def make(app, policy, players, confirm=True, lang="en"):
    players = [dataclasses.replace(p, language=lang) if p.email else p for p in players]
    with app.app_context():
        created = services.create_game("stoneage", players, policy, seed=3,
                                       confirm_by_email=confirm, start=not confirm)
        mail.deliver_due()
    return created


def invited(app, inbox, policy, lang="en"):
    """The host confirms from their email; the second player's invitation, and the
    created game."""
    created = make(app, policy, PLAYERS[:2], lang=lang)
    client = app.test_client()
    confirm = path_of(inbox.to(PLAYERS[0].email, "host_confirm")[0].link("/host/confirm/"))
    form = only_form(client.get(confirm).get_data(as_text=True))
    client.post(form.action or confirm, data=form.data())
    with app.app_context():
        mail.deliver_due()
    (invitation,) = inbox.to(PLAYERS[1].email, "invitation")
    return invitation, created


@pytest.mark.parametrize("lang", ["en", "de"])
def test_an_invitation_to_a_time_bank_game_says_the_time_bank(make_app, lang):
    app = make_app()
    invitation, created = invited(app, Inbox(app), BANK, lang)
    said, not_said = SAID[lang]
    for part in (invitation.text, invitation.html):
        assert said in part and not_said not in part
    host = app.test_client().get(f"/admin/{created.admin_token}").get_data(as_text=True)
    assert said in host


def test_an_invitation_with_hours_per_decision_says_them(make_app):
    app = make_app()
    invitation, _ = invited(app, Inbox(app), {"hours_per_decision": 36})
    assert "Time per decision: 36 hours." in invitation.text


def test_the_confirmation_email_names_a_bots_level_not_an_empty_address(make_app):
    app = make_app()
    inbox = Inbox(app)
    bot = services.PlayerIn("", "", "en", "UTC", bot="strong")
    make(app, {}, [PLAYERS[0], PLAYERS[1], bot])
    (confirm,) = inbox.to(PLAYERS[0].email, "host_confirm")
    assert "()" not in confirm.text and "()" not in confirm.html
    assert "(A bot, strong)" in confirm.text


@pytest.mark.parametrize(("game", "lang", "words"), [
    ("stoneage", "en", "or a time bank"), ("cavemen", "en", "or a time bank"),
    ("stoneage", "de", "oder ein Zeitkonto"), ("cavemen", "de", "oder ein Zeitkonto")])
def test_the_rules_pages_say_the_host_chooses_the_pace(client, game, lang, words):
    html = client.get(f"/rules/{game}?lang={lang}").get_data(as_text=True)
    assert words in html
