"""International addresses go where they point (issue 17, point 7): a domain typed in
Unicode is written in its IDNA 2008 (UTS 46) form, never Python's IDNA 2003 one, which
sends ``anna@straße.de`` to ``strasse.de``, another domain; an address that has no such
form is refused with the reason, wherever an address is typed in, in English and German."""

from __future__ import annotations

import pytest

from pbem import mail, services
from pbem.mail.headers import BadAddress, parse_address
from tests.server.helpers import (
    PLAYERS,
    create_on_web,
    forms,
    new_game_data,
    new_game_form,
    path_of,
    seats_of,
    snapshot,
    text_of,
)
from tests.server.test_cli import new_game as cli_new_game
from tests.server.test_host import answer, confirm
from tests.server.test_my_games import ask
from tests.server.timekit import admin_post

ANN, BOB, CY = PLAYERS
REASON_EN = "the part after the @ cannot be written as an international domain name (IDNA 2008)"
REASON_DE = "der Teil nach dem @ lässt sich nicht als internationaler Domainname schreiben " \
            "(IDNA 2008)"
NO_IDNA = "bob@i❤.example"  # a symbol: IDNA 2003 took it, IDNA 2008 does not


@pytest.mark.parametrize(("typed", "sent"), [
    ("anna@straße.de", "anna@xn--strae-oqa.de"),  # IDNA 2003: anna@strasse.de
    ("Anna@STRASSE.de", "Anna@strasse.de"),  # the other domain stays the other one
    ("a@faß.de", "a@xn--fa-hia.de"),
    ("a@σίσυφος.gr", "a@xn--kxa6ajbbmh.gr"),  # final sigma kept (IDNA 2003: σ)
    ("ann@Bücher.Example", "ann@xn--bcher-kva.example"),
    ("a@ＥＸＡＭＰＬＥ.com", "a@example.com"),  # UTS 46 maps full-width letters
    ("a@xn--strae-oqa.de", "a@xn--strae-oqa.de"),  # typed in its ASCII form already
])
def test_an_international_domain_is_written_in_its_idna_2008_form(typed, sent):
    assert parse_address(typed) == sent


@pytest.mark.parametrize(("typed", "code"), [
    (NO_IDNA, "idna"),
    ("a@٣١.example", "idna"),  # a label that starts with Arabic digits (bidi rule)
    ("a@a\u200db.example", "idna"),  # a joiner where no script needs one
    ("a@\u0301b.example", "idna"),  # a label that starts with a combining mark
    ("a@xn--zz.example", "idna"),  # looks like IDNA, is not
    ("a@xn--i-7iq.example", "idna"),  # i❤ by IDNA 2003, as Chromium's email fields send it
])
def test_a_domain_without_an_idna_2008_form_is_refused_with_the_reason(typed, code):
    with pytest.raises(BadAddress) as refused:
        parse_address(typed)
    assert refused.value.code == code


def test_a_player_at_an_international_domain_is_mailed_at_that_domain(app):
    anna = services.PlayerIn("Anna", "anna@straße.de", "de", "Europe/Berlin")
    with app.app_context():
        created = services.create_game("cavemen", [anna, BOB], seed=7,
                                       confirm_by_email=False, start=True)
        mail.deliver_due()
    assert seats_of(app, created.game_id)[0].email == "anna@xn--strae-oqa.de"
    recipients = {out.recipient for out in app.extensions["pbem.mail"].sent}
    assert recipients == {"anna@xn--strae-oqa.de", BOB.email}


@pytest.mark.parametrize(("lang", "reason"), [("en", REASON_EN), ("de", REASON_DE)])
def test_the_home_form_gives_the_reason_at_the_address(app, client, lang, reason):
    headers = {"Accept-Language": lang}
    form = new_game_form(client)
    before = snapshot(app)
    resp = client.post("/new", data={**new_game_data(form), "email1": NO_IDNA},
                       headers=headers)
    assert resp.status_code == 400
    assert reason in text_of(resp.get_data(as_text=True), "e-email1")
    assert snapshot(app) == before


def test_the_command_line_gives_the_reason(app):
    result = cli_new_game(app, "Ann <ann@example.com>", f"Bob <{NO_IDNA}>")
    assert result.exit_code == 1
    assert f"player 2: '{NO_IDNA}' is not an email address we can write to ({REASON_EN})" \
        in result.output


def test_the_my_games_form_gives_the_reason(app, client, inbox):
    resp = ask(client, NO_IDNA)
    assert resp.status_code == 400
    assert REASON_EN in text_of(resp.get_data(as_text=True), "e-my-email")


@pytest.mark.parametrize(("lang", "reason"), [("en", REASON_EN), ("de", REASON_DE)])
def test_the_hand_over_form_gives_the_reason_in_the_hosts_language(app, client, lang,
                                                                    reason):
    host = services.PlayerIn(ANN.name, ANN.email, lang, ANN.timezone)
    created = services_game(app, [host, BOB, CY])
    before = snapshot(app)
    resp = admin_post(client, created.admin_token, "handover", position="1", name="Bobby",
                      email=NO_IDNA, lang="en", tz="UTC")
    assert resp.status_code == 400
    text = text_of(resp.get_data(as_text=True), "error")
    assert f"{'Player' if lang == 'en' else 'Spieler'} 2: '{NO_IDNA}'" in text, text
    assert reason in text
    assert snapshot(app) == before


def test_the_re_invite_form_gives_the_reason(app, client, inbox):
    confirm(client, create_on_web(client, app))
    answer(client, inbox, BOB, "decline")
    admin = path_of(inbox.of("declined")[0].link("/admin/"))
    (form,) = [f for f in forms(client.get(admin).get_data(as_text=True))
               if f.attrs.get("id") == "replace"]
    before = snapshot(app)
    resp = client.post(form.action, data=form.data(position="1", name="Dan", email=NO_IDNA,
                                                   lang="en", tz="UTC"))
    assert resp.status_code == 400
    assert f"Player 2: '{NO_IDNA}' is not an email address we can write to ({REASON_EN})." \
        in text_of(resp.get_data(as_text=True), "error")
    assert snapshot(app) == before


def services_game(app, players) -> services.Created:
    with app.app_context():
        created = services.create_game("cavemen", players, seed=7, confirm_by_email=False,
                                       start=True)
        mail.deliver_due()
    return created
