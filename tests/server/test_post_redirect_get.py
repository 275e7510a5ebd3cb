"""A reload never acts twice (issue 32, point 9): every POST of the site that changes
something answers ``303 See Other`` to a page of this site (Post/Redirect/Get), and that
page says what happened; asking for it again (a reload) changes nothing and sends
nothing. What such a page says comes from a fixed list of codes or from the database,
never from words of the link: a link that names something that did not happen says
nothing untrue. Every POST route of the URL map is covered here, so a new one without a
redirect fails this file. Both databases."""

from __future__ import annotations

import dataclasses
import re

import pytest
from sqlmodel import select

from pbem import services
from pbem.db import session_scope
from pbem.models import Seat, Webhook, utcnow
from pbem.tokens import form_signature
from tests.engine.stoneage_builders import board, build
from tests.server.conftest import start_game
from tests.server.helpers import (
    PLAYERS,
    SECRET,
    Table,
    forms,
    load,
    local_location,
    new_game_data,
    new_game_form,
    only_form,
    page_form_data,
    path_of,
    snapshot,
    text_of,
)
from tests.server.test_address_settings import SETTINGS, unsubscribe_link
from tests.server.test_calendar import FEED, events, feed_raw
from tests.server.test_exact_moves import Position
from tests.server.test_page_etag import token

ANN, BOB, CY = PLAYERS
NEWCOMER = "vic@example.net"

# Every POST route, and the test below that makes it answer with a redirect; or why it
# answers no page (nothing a browser shows, so nothing to reload).
COVERED = {
    "/g/<raw>": "test_a_move_on_the_game_page",
    "/a/<raw>": "test_a_move_by_a_one_click_link",
    "/g/<raw>/takeback": "test_a_take_back",
    "/g/<raw>/back": "test_coming_back_from_a_bot",
    "/g/<raw>/vacation": "test_a_vacation",
    "/g/<raw>/say": "test_talk",
    "/g/<raw>/plan": "test_a_plan_and_standing_choices",
    "/g/<raw>/standing": "test_a_plan_and_standing_choices",
    "/g/<raw>/language": "test_a_seats_language",
    "/g/<raw>/notifications": "test_notifications_and_unsubscribing",
    "/g/<raw>/push": "test_browser_notifications",
    "/g/<raw>/push/remove": "test_browser_notifications",
    "/u/<raw>": "test_notifications_and_unsubscribing",
    "/g/<raw>/calendar": "test_the_calendar_feed",
    "/cal/<raw>/open/<int(max=2147483647):seat_id>": "test_the_calendar_feed",
    "/admin/<raw>/remind": "test_remind_now",
    "/admin/<raw>/<control>": "test_the_host_controls",
    "/admin/<raw>/again": "test_the_host_controls",
    "/admin/<raw>/webhooks": "test_the_chat_webhooks",
    "/new": "test_a_new_game_its_confirmation_and_invitations",
    "/host/confirm/<raw>": "test_a_new_game_its_confirmation_and_invitations",
    "/invite/<raw>": "test_a_new_game_its_confirmation_and_invitations",
    "/admin/<raw>/replace": "test_a_new_game_its_confirmation_and_invitations",
    "/handover/<raw>": "test_a_hand_over",
    "/my": "test_my_games",
    "/my/<raw>/open": "test_my_games",
    "/my/<raw>/host": "test_my_games",
    "/my/<raw>/stop": "test_my_games",
    "/language": "test_the_language_switch",
    "/dev/mail/<name>/reply": "test_the_dev_mailbox_reply (tests/server/test_replies.py)",
}
NO_PAGE = {
    "/g/<raw>/here": "the game page's script says the page is in view; 204, no page",
    "/api/v1/seat/act": "the JSON API: answers JSON, no page (tests/server/test_api.py)",
    "/api/v1/seat/talk": "the JSON API: answers JSON, no page (tests/server/test_api.py)",
}


def test_every_post_route_redirects_here_or_answers_no_page(app):
    posts = {rule.rule for rule in app.url_map.iter_rules() if "POST" in rule.methods}
    assert posts == set(COVERED) | set(NO_PAGE)
    assert not set(COVERED) & set(NO_PAGE)
    names = {name for name in globals() if name.startswith("test_")}
    assert {v for v in COVERED.values() if "(" not in v} <= names


def prg(client, app, path: str, data: dict, *says: str, element: str | None = None) -> str:
    """POST ``data`` to ``path`` as a browser would: it must answer 303 to a page of this
    site; that page (a GET) says each of ``says`` (in ``element``, if given) and changes
    nothing, and asking for it again (a reload) changes nothing either and says the same.
    Returns the page."""
    resp = client.post(path, data=data, follow_redirects=False)
    location = local_location(resp)
    pages = []
    for _ in range(2):  # the page, then its reload
        before = snapshot(app)
        page = client.get(location)
        assert page.status_code == 200, (location, page.get_data(as_text=True)[:3000])
        assert snapshot(app) == before, f"GET {location} changed the database"
        html = page.get_data(as_text=True)
        where = text_of(html, element) if element else html
        for text in says:
            assert text in (where or ""), (text, location, where if element else html[:3000])
        pages.append(html)
    return pages[0]


def sig(raw_or_path: str) -> str:
    return form_signature(SECRET, raw_or_path.rsplit("/", 1)[-1])


def seat_page(table: Table, position: int) -> str:
    return f"/g/{token(table.app, table.game_id, position)}"


def decision_form(table: Table, page: str) -> dict:
    decision = table.open()
    return {"sig": sig(page), "decision_id": str(decision.id),
            **page_form_data(table.bot_choice(decision), decision.kind)}


def count_moves(table: Table) -> int:
    return len(snapshot(table.app)["move"])


# --------------------------------------------------------------------------- playing


def test_a_move_on_the_game_page(table: Table, client):
    page = seat_page(table, table.open().position)
    prg(client, table.app, page, decision_form(table, page), "Recorded:",
        element="recorded")
    assert count_moves(table) == 1


def test_a_move_by_a_one_click_link(table: Table, client):
    decision = table.open()
    url = path_of(next(iter(table.one_click(decision))))
    form = only_form(client.get(url).get_data(as_text=True))
    prg(client, table.app, url, form.data(), "Recorded:", element="recorded")
    assert count_moves(table) == 1


def test_a_take_back(table: Table, client):
    decision = table.open()
    page = seat_page(table, decision.position)
    html = prg(client, table.app, page, decision_form(table, page), "Recorded:")
    (back,) = [f for f in forms(html) if (f.action or "").endswith("/takeback")]
    prg(client, table.app, back.action, back.data(), "Taken back: decide again.",
        element="notice")
    assert count_moves(table) == 0
    assert table.open().position == decision.position


def test_coming_back_from_a_bot(table: Table, client):
    page = seat_page(table, 1)
    with table.app.app_context():
        services.set_bot(table.admin, 1, "heuristic")
    prg(client, table.app, page + "/back", {"sig": sig(page)},
        "Welcome back: you play your seat again.", element="notice")
    assert load(table.app, Seat, table.seats[1].id).bot is None


def test_a_vacation(table: Table, client):
    page = seat_page(table, 1)
    prg(client, table.app, page + "/vacation", {"sig": sig(page), "days": "2"},
        "Your deadlines moved. Vacation left: 5 days.", element="notice")


def test_talk(table: Table, client):
    page = seat_page(table, 1)
    html = prg(client, table.app, page + "/say", {"sig": sig(page), "text": "Hello, table!"},
               "Your message is on the table.", element="notice")
    assert "Hello, table!" in html
    assert "Hello, table!" in str(snapshot(table.app))


def test_a_seats_language(table: Table, client):
    page = seat_page(table, 1)
    prg(client, table.app, page + "/language", {"sig": sig(page), "lang": "de"},
        "Deine Sprache ist gespeichert", element="notice")


def test_notifications_and_unsubscribing(table: Table, client):
    page = seat_page(table, 1)
    prg(client, table.app, page + "/notifications", {"sig": sig(page), "how": "mute"},
        "From now on you get an email only when it is your turn", element="notice")
    unsubscribe = f"/u/{unsubscribe_link(table.app, table.game_id, BOB.email)}"
    prg(client, table.app, unsubscribe, {"sig": sig(unsubscribe), "how": "unmute"},
        "You get every email of this game again.", element="done")
    prg(client, table.app, unsubscribe, {**SETTINGS, "how": "settings",
                                         "sig": sig(unsubscribe)},
        "Saved: your settings apply", element="done")


def test_browser_notifications(table: Table, client):
    from tests.server.test_push import VAPID_KEY, Browser

    table.app.config.update(PUSH=True, VAPID_PRIVATE_KEY=VAPID_KEY)
    page = seat_page(table, 1)
    browser = Browser("https://push.example.com/send/abc")
    prg(client, table.app, page + "/push", {"sig": sig(page), **browser.fields()},
        "this device is notified of your turns", element="notice")
    prg(client, table.app, page + "/push/remove",
        {"sig": sig(page), "endpoint": browser.endpoint},
        "that device is no longer notified", element="notice")


def test_a_plan_and_standing_choices(app, client, inbox):
    created = start_game(app, players=PLAYERS[:2], game="stoneage")
    game = Position(app, client, inbox, created.game_id)
    bob = game.put(build(board(), board(), start=1, turn=1))
    page = game.pages[1 - bob]
    prg(client, app, page + "/plan", {"sig": sig(page), "how": "set", "plan.at": ["forest"],
                                      "plan.count": ["2"]},
        "Your plan is set", element="notice")
    prg(client, app, page + "/plan", {"sig": sig(page), "how": "clear"},
        "Your plan is cleared", element="notice")
    prg(client, app, page + "/standing", {"sig": sig(page), "standing.tools": "all",
                                          "standing.feed": "pay", "standing.order": "off"},
        "Your standing choices are saved", element="notice")


def test_the_calendar_feed(table: Table, client):
    page = seat_page(table, 2)
    html = prg(client, table.app, page + "/calendar", {"sig": sig(page), "how": "start"})
    (feed,) = FEED.findall(html)
    event = next(iter(events(client, feed).values()))
    url = event["url"].split("pbem.test", 1)[1]
    prg(client, table.app, url, {"sig": form_signature(SECRET, feed_raw(feed))},
        "We emailed you the link to this game", element="sent")
    prg(client, table.app, page + "/calendar", {"sig": sig(page), "how": "stop"},
        "Your calendar feed is stopped", element="done")
    assert client.get(feed).status_code == 404


# --------------------------------------------------------------------------- the host


def admin_post(table: Table, control: str, **fields: str) -> tuple[str, dict]:
    return f"/admin/{table.admin}/{control}", {"sig": sig(table.admin), **fields}


def test_remind_now(table: Table, client):
    decision = table.open()
    name = PLAYERS[decision.position].name
    prg(client, table.app, *admin_post(table, "remind", decision=str(decision.id)),
        f"Done: a reminder is on its way to {name}.", element="notice")


def test_the_chat_webhooks(app, client, inbox):
    app.config["WEBHOOK_ALLOW_HOSTS"] = ["localhost:443"]  # looked up, never posted to
    created = start_game(app)
    path = f"/admin/{created.admin_token}/webhooks"
    sig = form_signature(SECRET, created.admin_token)
    prg(client, app, path, {"sig": sig, "op": "add", "url": "https://localhost/hook",
                            "kind": "auto"},
        "Saved: the chat hears of this game from now on.", element="notice")
    (hook,) = load_webhooks(app, created.game_id)
    prg(client, app, path, {"sig": sig, "op": "test", "webhook": str(hook.id)},
        "A test message is on its way to the chat.", element="notice")
    with app.app_context(), session_scope() as s:
        s.get(Webhook, hook.id).stopped_at = utcnow()
    prg(client, app, path, {"sig": sig, "op": "restart", "webhook": str(hook.id)},
        "Done: the webhook is started again.", element="notice")
    prg(client, app, path, {"sig": sig, "op": "remove", "webhook": str(hook.id)},
        "Done: the webhook is removed.", element="notice")
    assert not load_webhooks(app, created.game_id)


def load_webhooks(app, game_id: str) -> list[Webhook]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Webhook).where(Webhook.game_id == game_id)))


@pytest.mark.parametrize("german", [False, True], ids=["en", "de"])
def test_the_host_controls(app, client, inbox, german):
    host = dataclasses.replace(ANN, language="de") if german else ANN
    created = start_game(app, players=[host, BOB, CY])
    table = Table(app, client, inbox, created.game_id, created.admin_token)
    said = {  # control, fields, what the host page says after it
        "pause": ({}, "Done: the game is paused.", "Erledigt: Das Spiel ist pausiert."),
        "resume": ({}, "Done: the game goes on.", "Erledigt: Das Spiel geht weiter."),
        "extend": ({"hours": "24"}, "Done: the deadline is extended.",
                   "Erledigt: Die Frist ist verlängert."),
        "bot": ({"position": "2", "bot": "heuristic"}, "Done: the seat is played as you chose.",
                "Erledigt: Der Platz wird so gespielt, wie du es gewählt hast."),
        "handover": ({"position": "1", "name": "Vic", "email": NEWCOMER, "lang": "en",
                      "tz": "UTC"}, "Invitation sent: the seat changes hands",
                     "Einladung verschickt: Der Platz wechselt"),
        "withdraw": ({"position": "1"}, "Done: the offer is withdrawn.",
                     "Erledigt: Das Angebot ist zurückgezogen."),
        "abandon": ({"sure": "yes"}, "Done: the game is over for everyone.",
                    "Erledigt: Das Spiel ist für alle beendet."),
    }
    for control, (fields, english, deutsch) in said.items():
        prg(client, app, *admin_post(table, control, **fields),
            deutsch if german else english, element="notice")
    path, data = admin_post(table, "again")
    html = prg(client, app, path, data, "Ein neues Spiel mit denselben Leuten" if german
               else "A new game with the same players", element="notice")
    assert "/again" not in html  # the new game's page: it has not ended


# --------------------------------------------------------------------------- joining


def test_a_new_game_its_confirmation_and_invitations(app, client, inbox):
    prg(client, app, "/new", new_game_data(new_game_form(client)), "Check your email",
        f"We sent a confirmation link to {ANN.email}")
    confirm = path_of(inbox.to(ANN.email, "host_confirm")[-1].link("/host/confirm/"))
    html = prg(client, app, confirm, only_form(client.get(confirm).get_data(as_text=True))
               .data(), "Invitations are on their way", element="confirmed")
    (admin,) = re.findall(r'href="(/admin/[^"]+)"', html)
    assert client.get(admin).status_code == 200
    invitation = inbox.to(BOB.email, "invitation")[-1]
    accept = path_of(invitation.text_links()[0])
    html = prg(client, app, accept, only_form(client.get(accept).get_data(as_text=True))
               .data(), "Thank you", element="done")
    assert re.search(r'href="/g/[A-Za-z0-9_-]{43}"', html)
    decline = path_of(inbox.to(CY.email, "invitation")[-1].text_links()[1])
    prg(client, app, decline, only_form(client.get(decline).get_data(as_text=True)).data(),
        "Thank you", element="done")
    (form,) = [f for f in forms(client.get(admin).get_data(as_text=True))
               if f.attrs.get("id") == "replace"]
    prg(client, app, form.action, form.data(position="2", name="Dan", email="dan@example.com",
                                            lang="en", tz="UTC"),
        "Invitation sent.", element="notice")
    assert inbox.to("dan@example.com", "invitation")


def test_a_hand_over(table: Table, client):
    prg(client, table.app, *admin_post(table, "handover", position="1", name="Vic",
                                       email=NEWCOMER, lang="en", tz="UTC"))
    table.inbox.deliver()
    accept = path_of(table.inbox.to(NEWCOMER, "handover_invite")[-1].text_links()[0])
    html = prg(client, table.app, accept,
               only_form(client.get(accept).get_data(as_text=True)).data(),
               "The seat is yours.", element="done")
    assert re.search(r'href="/g/[A-Za-z0-9_-]{43}"', html)


# --------------------------------------------------------------------------- addresses


def test_my_games(app, client, inbox):
    start_game(app, title="Friday")
    html = client.get("/my").get_data(as_text=True)
    (ask,) = [f for f in forms(html) if f.attrs.get("id") == "my-games-form"]
    prg(client, app, "/my", ask.data(email=ANN.email), "Check your email",
        element="my-games-sent")
    (mail,) = inbox.to(ANN.email, "my_games")
    mine = path_of(mail.link("/my/"))
    html = client.get(mine).get_data(as_text=True)
    open_form = [f for f in forms(html) if (f.action or "").endswith("/open")][0]
    prg(client, app, open_form.action, open_form.data(), "Friday")
    host_form = [f for f in forms(html) if (f.action or "").endswith("/host")][0]
    prg(client, app, host_form.action, host_form.data(), "Friday", "How this game runs")
    (stop,) = [f for f in forms(html) if (f.action or "").endswith("/stop")]
    prg(client, app, stop.action, stop.data(), "Every link to your games has stopped working")


def test_the_language_switch(client, app):
    resp = client.post("/language", data={"lang": "de", "next": "/rules"},
                       follow_redirects=False)
    assert local_location(resp) == "/rules"
    assert 'lang="de"' in client.get("/rules").get_data(as_text=True)


# --------------------------------------------------------------------------- forged links


def test_a_link_naming_what_did_not_happen_says_nothing_untrue(table: Table, client):
    page = seat_page(table, 1)
    for code in ("taken_back", "back", "muted", "left", "vacation", "push_added", "nonsense"):
        html = client.get(f"{page}?done={code}").get_data(as_text=True)
        assert text_of(html, "notice") is None, code
    other = table.open()  # another seat's decision: not "Recorded"
    assert 'id="recorded"' not in client.get(f"{page}?recorded={other.id}").get_data(
        as_text=True)
    admin = f"/admin/{table.admin}"
    for code in ("pause", "resume", "extend", "bot", "abandon", "handover_sent", "replaced",
                 "again", "nonsense"):
        html = client.get(f"{admin}?done={code}").get_data(as_text=True)
        assert text_of(html, "notice") is None, code
    html = client.get(f"{admin}?reminded={other.id}").get_data(as_text=True)
    assert text_of(html, "notice") is None
    unsubscribe = f"/u/{unsubscribe_link(table.app, table.game_id, BOB.email)}"
    for code in ("suppressed", "lists", "ended", "muted", "nonsense"):
        html = client.get(f"{unsubscribe}?done={code}").get_data(as_text=True)
        assert text_of(html, "done") is None, code
    # a feed the address does not have is not shown (that it has none is true: the page
    # may say its feed is stopped)
    calendar = client.get(f"{page}/calendar?feed={'x' * 43}").get_data(as_text=True)
    assert not FEED.findall(calendar) and "x" * 43 not in calendar
    assert client.get("/new", follow_redirects=False).headers["Location"] == "/"
