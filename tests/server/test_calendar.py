"""A player's deadlines in their calendar (issue 20, point 5): the private feed of every
open decision of an address across its games, parsed back with ``icalendar``; its UIDs
stable while a deadline moves; made, replaced and stopped from a game page; the page an
event opens; one deadline as a file. Both databases."""

from __future__ import annotations

import re

from icalendar import Calendar
from sqlalchemy import func
from sqlmodel import select

from pbem.db import session_scope
from pbem.models import Address, Decision, Outbox, Seat, Token
from pbem.tokens import form_signature
from tests.server.conftest import start_game
from tests.server.helpers import PLAYERS, SECRET, Table, path_of, snapshot, text_of
from tests.server.test_page_etag import ANN, BOB, CY, token

FEED = re.compile(r'value="http://[^/"]+(/cal/[A-Za-z0-9_-]{43}\.ics)"')


def calendar(client, raw: str, how: str):
    return client.post(f"/g/{raw}/calendar", data={"sig": form_signature(SECRET, raw),
                                                   "how": how})


def new_feed(client, raw: str) -> str:
    """Make (or replace) the feed from a seat's page link; its path."""
    resp = calendar(client, raw, "start")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    (path,) = FEED.findall(resp.get_data(as_text=True))
    return path


def events(client, path: str) -> dict[str, dict]:
    resp = client.get(path)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert resp.mimetype == "text/calendar"
    cal = Calendar.from_ical(resp.get_data())
    return {str(e["uid"]): {"start": e.decoded("dtstart"), "summary": str(e["summary"]),
                            "url": str(e["url"]), "description": str(e["description"])}
            for e in cal.walk("VEVENT")}


def open_decisions(app, email: str) -> list[Decision]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Decision).join(Seat, Seat.id == Decision.seat_id)
                           .where(func.lower(Seat.email) == email,
                                  Decision.closed_at.is_(None))).all())


def count(app, model) -> int:
    with app.app_context(), session_scope() as s:
        return len(s.exec(select(model)).all())


def uid(decision: Decision) -> str:
    return f"pbem-decision-{decision.id}@pbem.test"


def test_the_feed_lists_every_open_decision_of_the_address_in_all_its_games(table: Table):
    other = start_game(table.app, seed=11, title="Second table")  # Cy plays here too
    cy = token(table.app, table.game_id, CY)
    assert count(table.app, Address) == 0
    assert table.client.get(f"/g/{cy}/calendar").status_code == 200
    assert count(table.app, Address) == 0  # looking changes nothing
    path = new_feed(table.client, cy)
    mine = open_decisions(table.app, PLAYERS[CY].email)
    assert {d.game_id for d in mine} == {table.game_id, other.game_id}
    found = events(table.client, path)
    assert set(found) == {uid(d) for d in mine}  # Cy's decisions, nobody else's
    for d in mine:
        event = found[uid(d)]
        assert event["start"] == d.deadline_at.replace(microsecond=0)
        assert "your turn, bid for the conch" in event["summary"]
        assert event["url"].endswith(f"/open/{d.seat_id}") and event["url"] in \
            event["description"]
    assert "Second table" in found[uid(next(d for d in mine if d.game_id == other.game_id))][
        "summary"]


def test_an_event_keeps_its_uid_as_its_deadline_moves_and_goes_once_decided(table: Table):
    cy = token(table.app, table.game_id, CY)
    path = new_feed(table.client, cy)
    (first,) = open_decisions(table.app, PLAYERS[CY].email)
    before = events(table.client, path)[uid(first)]["start"]
    resp = table.client.post(f"/admin/{table.admin}/extend", data={
        "sig": form_signature(SECRET, table.admin), "hours": "24"})
    assert resp.status_code == 200, resp.get_data(as_text=True)
    moved = events(table.client, path)
    assert list(moved) == [uid(first)]  # the same event, updated
    assert (moved[uid(first)]["start"] - before).total_seconds() == 24 * 3600
    table.step()  # Cy bids: the event is gone
    assert uid(first) not in events(table.client, path)


def test_a_new_address_replaces_the_old_and_stopping_ends_it(table: Table):
    ann = token(table.app, table.game_id, ANN)
    old = new_feed(table.client, ann)
    new = new_feed(table.client, ann)
    assert old != new
    gone = table.client.get(old)
    assert gone.status_code == 404 and "no longer valid" in gone.get_data(as_text=True)
    assert table.client.get(new).status_code == 200
    # the same address from another game's page: the same feed
    other = start_game(table.app, seed=12)
    page = table.client.get(f"/g/{token(table.app, other.game_id, ANN)}/calendar")
    assert "has a calendar feed, made" in page.get_data(as_text=True)
    resp = calendar(table.client, ann, "stop")
    assert "its address no longer works" in resp.get_data(as_text=True)
    assert table.client.get(new).status_code == 404
    assert "Make my calendar feed" in table.client.get(
        f"/g/{ann}/calendar").get_data(as_text=True)


def feed_raw(path: str) -> str:
    return path.split("/")[2].removesuffix(".ics")


def test_a_feed_reads_deadlines_and_gives_no_seat(table: Table):
    """Issue 32, point 13: the feed's secret gave a seat (its event's page minted a game
    page link, which could talk, act and replace the feed). Now the page an event opens
    names the game and its deadline and offers to email the game's link to the seat's
    own address; whoever holds the feed gets no link, no token, nothing to act with."""
    cy = token(table.app, table.game_id, CY)
    path = new_feed(table.client, cy)
    (event,) = events(table.client, path).values()
    url = event["url"].split("pbem.test", 1)[1]
    table.inbox.clear()
    tokens = count(table.app, Token)
    page = table.client.get(url)
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and "/g/" not in html
    assert count(table.app, Token) == tokens  # a GET mints nothing
    resp = table.client.post(url, data={"sig": form_signature(SECRET, feed_raw(path))},
                             follow_redirects=False)
    assert resp.status_code == 303
    assert resp.headers["Location"] == url  # (it was a new /g/ link)
    assert "/g/" not in resp.get_data(as_text=True)
    assert "Email me the link to this game" in text_of(html, "open")
    assert "Deadline:" in text_of(html, "open")
    after = table.client.get(resp.headers["Location"]).get_data(as_text=True)
    assert "/g/" not in after
    assert re.fullmatch(r"We emailed you the link to this game \(\w{3} \d\d:\d\d\): look in "
                        r"your inbox\.", text_of(after, "sent"))
    assert text_of(html, "sent") is None  # (not before)
    assert count(table.app, Token) == tokens  # nothing for whoever holds the feed
    (mail,) = table.inbox.all()  # the link goes to the seat's own address only
    assert mail.to_addr == PLAYERS[CY].email and mail.template == "game_link"
    assert mail.headline == "The link to your game, as asked for from your calendar"
    game_page = table.client.get(path_of(mail.link("/g/"))).get_data(as_text=True)
    assert 'id="decision"' in game_page  # Cy's own page, her decision form on it
    assert table.client.get(path).status_code == 200  # the feed still works


def test_asking_for_a_games_link_from_the_calendar_is_capped(make_app):
    app = make_app(MY_GAMES_LIMIT_PER_ADDRESS=2)
    created = start_game(app)
    client = app.test_client()
    path = new_feed(client, token(app, created.game_id, CY))
    (event,) = events(client, path).values()
    url = event["url"].split("pbem.test", 1)[1]
    sig = {"sig": form_signature(SECRET, feed_raw(path))}
    answers = [client.post(url, data=sig, follow_redirects=False).status_code
               for _ in range(5)]
    assert answers == [303, 303, 429, 429, 429]
    refused = client.post(url, data=sig).get_data(as_text=True)
    assert text_of(refused, "error") == (
        "The link to this game was emailed to you 2 times in the last 24 hours; "
        "look for it in your inbox.")
    with app.app_context(), session_scope() as s:
        assert len(s.exec(select(Outbox).where(Outbox.template == "game_link")).all()) == 2


def test_an_events_page_changes_nothing_without_its_form(table: Table):
    cy = token(table.app, table.game_id, CY)
    path = new_feed(table.client, cy)
    (event,) = events(table.client, path).values()
    url = event["url"].split("pbem.test", 1)[1]
    with table.app.app_context(), session_scope() as s:
        ann_seat = s.exec(select(Seat.id).where(Seat.game_id == table.game_id,
                                                Seat.position == ANN)).one()
    before = snapshot(table.app)
    # someone else's seat, a garbled one, a forged or missing form, a GET with ?sent=1:
    # clear refusals (or a page), nothing made, nothing queued
    for bad in (url.rsplit("/", 1)[0] + f"/{ann_seat}", url.rsplit("/", 1)[0] + "/999999"):
        assert table.client.get(bad).status_code == 404
        assert table.client.post(bad, data={"sig": form_signature(SECRET, feed_raw(path))}
                                 ).status_code == 404
    for data in ({"sig": "0" * 64}, {}, {"sig": "ab\r\nBcc: x@example.com"}):
        assert table.client.post(url, data=data).status_code == 400
    assert table.client.get(url + "?sent=1%0d%0aX: y").status_code == 200
    assert table.client.head(url).status_code == 200
    assert snapshot(table.app) == before
    # a replaced feed: its old events' pages are gone
    new_feed(table.client, cy)
    assert table.client.get(url).status_code == 404
    assert table.client.post(url, data={"sig": form_signature(SECRET, feed_raw(path))}
                             ).status_code == 404


def test_one_deadline_as_a_file_is_the_feeds_event_linking_to_its_page(table: Table):
    cy, bob = token(table.app, table.game_id, CY), token(table.app, table.game_id, BOB)
    resp = table.client.get(f"/g/{cy}/deadline.ics")
    assert resp.status_code == 200 and "attachment" in resp.headers["Content-Disposition"]
    (event,) = [e for e in Calendar.from_ical(resp.get_data()).walk("VEVENT")]
    (decision,) = open_decisions(table.app, PLAYERS[CY].email)
    assert str(event["uid"]) == uid(decision) and str(event["url"]).endswith(f"/g/{cy}")
    assert f'href="/g/{cy}/deadline.ics"' in table.client.get(f"/g/{cy}").get_data(
        as_text=True)
    nothing = table.client.get(f"/g/{bob}/deadline.ics")  # Bob has no decision now
    assert nothing.status_code == 404
    assert "no open decision" in nothing.get_data(as_text=True)


def test_a_german_players_calendar_speaks_german(table: Table):
    with table.app.app_context(), session_scope() as s:
        seat = s.exec(select(Seat).where(Seat.game_id == table.game_id,
                                         Seat.position == CY)).one()
        seat.language = "de"
    cy = token(table.app, table.game_id, CY)
    page = table.client.get(f"/g/{cy}/calendar").get_data(as_text=True)
    assert "Deine Fristen in deinem Kalender" in page
    path = new_feed(table.client, cy)
    (event,) = events(table.client, path).values()
    assert "du bist dran" in event["summary"] and "Frist:" in event["description"]
    # the page the event opens, and the email with the game's link
    url = event["url"].split("pbem.test", 1)[1]
    english = {"Accept-Language": "en"}
    assert "Schick mir den Link zu diesem Spiel" in text_of(
        table.client.get(url, headers=english).get_data(as_text=True), "open")
    table.inbox.clear()
    resp = table.client.post(url, data={"sig": form_signature(SECRET, feed_raw(path))},
                             headers=english, follow_redirects=False)
    done = table.client.get(resp.headers["Location"], headers=english)
    assert text_of(done.get_data(as_text=True), "sent").startswith(
        "Wir haben dir den Link zu diesem Spiel gemailt (")
    (mail,) = table.inbox.all()
    assert mail.headline == "Der Link zu deinem Spiel, wie aus deinem Kalender angefordert"
    assert "Deine Spielseite (gib sie nicht weiter):" in mail.text


def test_bad_links_and_forms_get_clear_answers(table: Table):
    ann = token(table.app, table.game_id, ANN)
    for path in ("/cal/garbled.ics", f"/cal/{'x' * 43}.ics", "/cal/%0d%0a.ics",
                 "/g/garbled/calendar", "/g/garbled/deadline.ics",
                 f"/cal/{'x' * 43}/open/1", f"/cal/{'x' * 43}/open/99999999999"):
        resp = table.client.get(path)
        assert resp.status_code == 404, (path, resp.status_code)
    assert calendar(table.client, ann, "explode").status_code == 400
    forged = table.client.post(f"/g/{ann}/calendar", data={"sig": "0" * 64, "how": "start"})
    assert forged.status_code == 400
    assert count(table.app, Address) == 0
    # a one-click (action) link opens a read-only page: it cannot make a feed
    action = token(table.app, table.game_id, ANN, "action")
    assert calendar(table.client, action, "start").status_code == 404


def test_a_decision_email_links_its_deadline_as_a_file(table: Table):
    (decision,) = open_decisions(table.app, PLAYERS[CY].email)
    mail = table.mail(decision)
    page = mail.link("/g/")
    (link,) = [u for u in mail.text_links() if u.endswith("/deadline.ics")]
    assert link == page + "/deadline.ics"
    assert f'href="{link}"' in mail.html
    resp = table.client.get(link.split("pbem.test", 1)[1])
    assert resp.status_code == 200
    (event,) = Calendar.from_ical(resp.get_data()).walk("VEVENT")
    assert str(event["uid"]) == uid(decision)
