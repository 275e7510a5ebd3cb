"""Issue 32, point 8: a lasting way back. Every email of a game to a player carries a
"My games" link in its footer that does not expire; My games links each game's page and,
for the host, the host page; the links can be revoked, all at once, from the page."""

from __future__ import annotations

from datetime import timedelta

from freezegun import freeze_time

from pbem.models import utcnow
from tests.server.conftest import start_game
from tests.server.helpers import PLAYERS, forms, path_of, snapshot, text_of


def footer_link(mail) -> str:
    (link,) = mail.under("/my/")
    return path_of(link)


def test_every_email_of_a_game_has_a_my_games_link_that_lasts(app, client, inbox):
    start_game(app, players=PLAYERS[:3], game="stoneage")
    mails = inbox.all()
    assert mails and all(len(m.under("/my/")) == 1 for m in mails)
    assert all("All your games" in m.html for m in mails)
    link = footer_link(mails[0])
    with freeze_time(utcnow() + timedelta(days=60)):
        page = client.get(link)
    assert page.status_code == 200 and "Your games" in page.get_data(as_text=True)


def test_my_games_opens_the_host_page_for_the_host_only(app, client, inbox):
    created = start_game(app, players=PLAYERS[:3], game="stoneage")
    host_mail = inbox.to(PLAYERS[0].email)[0]
    html = client.get(footer_link(host_mail)).get_data(as_text=True)
    (form,) = [f for f in forms(html) if (f.action or "").endswith("/host")]
    resp = client.post(form.action, data=form.data(), follow_redirects=False)
    assert resp.status_code == 303 and resp.headers["Location"].startswith("/admin/")
    assert "How this game runs" in client.get(resp.headers["Location"]).get_data(as_text=True)
    other = client.get(footer_link(inbox.to(PLAYERS[1].email)[0])).get_data(as_text=True)
    assert not [f for f in forms(other) if (f.action or "").endswith("/host")]
    # a forged game id on another's list opens nothing
    (theirs,) = [f for f in forms(other) if (f.action or "").endswith("/open")]
    forged = client.post(theirs.action.replace("/open", "/host"),
                         data={**theirs.data(), "game": created.game_id})
    assert forged.status_code == 404


def test_the_links_to_my_games_can_be_stopped_all_at_once(app, client, inbox):
    start_game(app, players=PLAYERS[:3], game="stoneage")
    links = [footer_link(m) for m in inbox.to(PLAYERS[1].email)]
    html = client.get(links[0]).get_data(as_text=True)
    (stop,) = [f for f in forms(html) if f.attrs.get("id") == "stop-links"]
    done = client.post(stop.action, data=stop.data())
    assert "stopped working" in text_of(done.get_data(as_text=True), "my-links-stopped")
    before = snapshot(app)
    for link in links:
        assert client.get(link).status_code == 404
    assert snapshot(app) == before
    other = footer_link(inbox.to(PLAYERS[0].email)[0])
    assert client.get(other).status_code == 200  # another address's links still work


def test_a_get_of_the_stop_address_changes_nothing(app, client, inbox):
    start_game(app, players=PLAYERS[:3], game="stoneage")
    link = footer_link(inbox.to(PLAYERS[1].email)[0])
    before = snapshot(app)
    assert client.get(link + "/stop").status_code in (404, 405)
    assert snapshot(app) == before
    assert client.get(link).status_code == 200
