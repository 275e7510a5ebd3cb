"""Chat webhooks (issue 34, points 3 and 4): the host pastes a webhook URL on the host
page; the table's chat hears whose turn it is, the game's news, the start, the result
and (when chosen) the table talk, with the spectators' link and never a seat's secret;
URLs that could reach the server's own network are refused when saved and when sent;
failures back off, then stop the webhook, and the host page says so. Every request goes
to a real HTTPS receiver on 127.0.0.1 (``tests/webhook_receiver.py``), let through by
the tests' own allowance (``WEBHOOK_ALLOW_HOSTS``). Both databases."""

from __future__ import annotations

import json
import re
import time
from datetime import timedelta

import pytest
from sqlmodel import select

from pbem import services
from pbem.channels import ChannelError, delivery
from pbem.channels import webhook as channel
from pbem.db import session_scope
from pbem.kinds import EmailTemplate, OutboxStatus
from pbem.models import Address, Game, Notice, Webhook, utcnow
from pbem.services import plumbing
from pbem.tokens import form_signature
from tests.server.conftest import start_game
from tests.server.helpers import (
    PLAYERS,
    SECRET,
    TOKEN_IN_URL_RE,
    Table,
    load,
    open_decisions,
    seats_of,
    text_of,
)
from tests.server.test_page_etag import spectator_path, token
from tests.webhook_receiver import Receiver, make_certificate


@pytest.fixture(scope="session")
def certificate(tmp_path_factory):
    return make_certificate(tmp_path_factory.mktemp("receiver"))


@pytest.fixture
def receiver(certificate):
    found = Receiver(*certificate).start()
    yield found
    found.stop()


@pytest.fixture
def allowed(app, receiver, certificate):
    """The app lets the tests' receiver through (and trusts its certificate)."""
    app.config.update(WEBHOOK_ALLOW_HOSTS=[f"localhost:{receiver.port}"],
                      WEBHOOK_CA_FILE=str(certificate[0]))
    return receiver


def post(client, path: str, raw: str, **data: str):
    """A signed POST of a form of the page at ``raw``, its own answer (no redirect
    followed)."""
    return client.post(path, follow_redirects=False,
                       data={"sig": form_signature(SECRET, raw), **data})


def host_post(client, admin: str, **data: str):
    """A POST of the host page's webhook forms, its own answer (a 303, or the page with
    a refusal)."""
    return client.post(f"/admin/{admin}/webhooks", follow_redirects=False,
                       data={"sig": form_signature(SECRET, admin), **data})


def add(client, admin: str, url: str, kind: str = "json", talk: bool = False):
    fields = {"op": "add", "url": url, "kind": kind}
    if talk:
        fields["mirror_talk"] = "yes"
    return host_post(client, admin, **fields)


def error_of(resp) -> str:
    """The refusal the host page shows (as a sentence: lower case here)."""
    return (text_of(resp.get_data(as_text=True), "error") or "").lower()


def hooks(app, game_id: str) -> list[Webhook]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Webhook).where(Webhook.game_id == game_id)
                           .order_by(Webhook.id)))


def deliver(app) -> dict[str, int]:
    with app.app_context():
        return delivery.deliver_due()


def texts(receiver: Receiver) -> list[str]:
    return [r.json["text"] for r in receiver.got]


def seat_tokens(inbox, table: Table) -> set[str]:
    """Every secret the game's emails carry: the links' tokens, the reply addresses'."""
    found = {table.admin}
    for mail in inbox.all():
        found.update(TOKEN_IN_URL_RE.findall(mail.text + mail.html))
        found.update(re.findall(r"[+.]r\.([A-Za-z0-9_-]{20,})@", str(mail.msg["Reply-To"])))
    return found


# --------------------------------------------------------------------------- what the table hears


def test_the_table_hears_turns_news_talk_and_the_result_with_no_seats_secret(
        app, client, table, inbox, allowed):
    resp = add(client, table.admin, allowed.url(), kind="json", talk=True)
    assert resp.status_code == 303
    page = client.get(resp.headers["Location"]).get_data(as_text=True)
    assert "Saved: the chat hears of this game from now on." in text_of(page, "notice")
    for _ in range(3):  # three turns played on the game page, each told as it opens
        table.step()
        assert deliver(app)["failed"] == 0
    ann = token(app, table.game_id, 0)
    said = post(client, f"/g/{ann}/say", ann, text="Hello @everyone <b>table</b>")
    assert said.status_code == 303
    admin = table.admin
    for control, fields in (("pause", {}), ("resume", {}), ("abandon", {"sure": "yes"})):
        assert post(client, f"/admin/{admin}/{control}", admin, **fields).status_code == 303
    counts = deliver(app)
    assert counts["failed"] == 0, counts
    said_texts = texts(allowed)
    turns = [t for t in said_texts if "'s turn: " in t]
    assert len(turns) >= 3 and all(", by " in t for t in turns)
    assert "Ann: Hello @everyone <b>table</b>" in said_texts
    assert "The host paused the game. Deadlines stop until it resumes." in said_texts
    assert "The host has abandoned the game. Nobody wins." in said_texts
    spectators = "http://pbem.test" + spectator_path(app, table.game_id)
    assert all(r.json["url"] == spectators for r in allowed.got)
    assert {r.json["kind"] for r in allowed.got} == {"turn", "talk", "notice"}
    secrets = seat_tokens(inbox, table)
    assert len(secrets) > 10
    for r in allowed.got:
        body = r.body.decode()
        assert not [s for s in secrets if s in body], body
        assert "/g/" not in body and "/a/" not in body and "/admin/" not in body
    # one message per piece of news, not one per seat: the pause is told once
    assert said_texts.count("The host paused the game. Deadlines stop until it resumes.") == 1


def test_the_game_started_is_told_once_however_many_seats_are_emailed(app, allowed):
    """News the services tell each seat by an email of its own (the game started, a
    seat handed over) is one message to the table, not one per seat."""
    created = start_game(app)
    with app.app_context(), session_scope() as s:
        s.add(Webhook(game_id=created.game_id, kind="json", url=allowed.url()))
    with app.app_context(), session_scope() as s:
        game = s.get(Game, created.game_id)
        game.version += 1  # (the game's own start emails were sent at its version 1)
        for seat in plumbing.seats_of(s, game.id):
            plumbing.queue_email(s, game, seat, EmailTemplate.GAME_STARTED, {},
                                 links=plumbing.PAGE_LINK)
    deliver(app)
    assert texts(allowed) == ["The game has started: Ann, Bob, Cy."]


def test_the_result_is_told_with_the_winner(app, allowed):
    created = start_game(app)
    with app.app_context(), session_scope() as s:
        s.add(Webhook(game_id=created.game_id, kind="json", url=allowed.url()))
    with app.app_context(), session_scope() as s:  # as the last move queues it
        game = s.get(Game, created.game_id)
        plumbing.queue_emails(s, game, plumbing.seats_of(s, game.id), EmailTemplate.RESULT,
                              {"result": {"winners": [1], "reason": "fire"}},
                              links=plumbing.PAGE_LINK)
    deliver(app)
    assert [(r.json["kind"], r.json["text"]) for r in allowed.got] == [
        ("result", "Bob invented Fire and wins the game.")]


def test_a_hosts_control_is_told_to_the_table(app, client, table, allowed):
    assert add(client, table.admin, allowed.url()).status_code == 303
    resp = post(client, f"/admin/{table.admin}/extend", table.admin, hours="5")
    assert resp.status_code == 303
    deliver(app)
    assert texts(allowed) == ["The host extended the current deadline by 5 hours."]


def test_talk_is_told_only_where_the_host_chose_to_mirror_it(app, client, table, allowed):
    assert add(client, table.admin, allowed.url("/quiet")).status_code == 303
    with app.app_context(), session_scope() as s:  # every seat gets each message at once
        for seat in plumbing.seats_of(s, table.game_id):
            seat.talk_now = True
    ann = token(app, table.game_id, 0)
    assert post(client, f"/g/{ann}/say", ann, text="psst").status_code == 303
    deliver(app)
    assert not [t for t in texts(allowed) if "psst" in t]


def test_the_talk_box_says_when_the_talk_goes_to_a_chat_and_the_page_moves_on(
        app, client, table, allowed):
    """A player writing to the table is told that the host's chat gets the messages too,
    only while a webhook mirrors them (not one that only tells turns, nor a stopped
    one); each change gives the page a new ETag, so no browser keeps the old box."""
    ann = token(app, table.game_id, 0)

    def page():
        resp = client.get(f"/g/{ann}")
        assert resp.status_code == 200
        return "talk-mirrored" in resp.get_data(as_text=True), resp.headers["ETag"]

    said, etag = page()
    assert not said
    assert add(client, table.admin, allowed.url("/turns")).status_code == 303
    assert page() == (False, etag)  # turns only: the talk stays at the table
    assert add(client, table.admin, allowed.url("/talk"), talk=True).status_code == 303
    said, mirrored = page()
    assert said and mirrored != etag
    assert "chat" in (text_of(client.get(f"/g/{ann}").get_data(as_text=True),
                              "talk-mirrored") or "")
    hook = next(h for h in hooks(app, table.game_id) if h.mirror_talk)
    with app.app_context(), session_scope() as s:  # it failed too often: stopped
        channel.CHANNEL.stopped(s, hook.id, "404")
        s.get(Webhook, hook.id).stopped_at = utcnow()
    said, stopped = page()
    assert not said and stopped != mirrored
    assert host_post(client, table.admin, op="restart",
                     webhook=str(hook.id)).status_code == 303
    assert page()[0]
    assert host_post(client, table.admin, op="remove",
                     webhook=str(hook.id)).status_code == 303
    assert not page()[0]


def test_a_players_quiet_hours_do_not_hold_the_tables_chat(app, client, table, allowed):
    """A table is nobody's address: a player's quiet hours hold that player's email
    (and push), never the chat's message of their turn."""
    assert add(client, table.admin, allowed.url()).status_code == 303
    hour = utcnow().hour
    with app.app_context(), session_scope() as s:
        for seat in seats_of(app, table.game_id):
            s.add(Address(address=seat.email.lower(), timezone="UTC",
                          quiet_from=hour, quiet_to=(hour + 2) % 24))
    table.step()
    deliver(app)
    (decision,) = open_decisions(app, table.game_id)[:1]
    name = seats_of(app, table.game_id)[decision.position].name
    assert [t for t in texts(allowed) if t.startswith(f"{name}'s turn: ")]


# --------------------------------------------------------------------------- failures


def test_failures_back_off_then_stop_the_webhook_and_the_host_page_says_so(
        frozen, app, client, table, allowed):
    assert add(client, table.admin, allowed.url()).status_code == 303
    allowed.status = 503
    table.step()
    assert deliver(app)["failed"] == 1
    (hook,) = hooks(app, table.game_id)
    assert hook.failures == 1 and hook.stopped_at is None
    assert deliver(app)["failed"] == 0  # not due again before its backoff
    for _ in range(delivery.STOP_AFTER):
        frozen.tick(timedelta(hours=2))
        deliver(app)
    (hook,) = hooks(app, table.game_id)
    assert hook.stopped_at is not None and hook.failures == delivery.STOP_AFTER
    page = client.get(f"/admin/{table.admin}").get_data(as_text=True)
    said = text_of(page, "webhook-list")
    assert (f"stopped after {delivery.STOP_AFTER} failures: the chat answered with the "
            "error 503") in said
    tried = len(allowed.got)
    table.step()  # a stopped webhook hears nothing more
    frozen.tick(timedelta(seconds=1))
    deliver(app)
    assert len(allowed.got) == tried
    allowed.status = 200
    resp = host_post(client, table.admin, op="restart", webhook=str(hook.id))
    assert resp.status_code == 303
    assert "Done: the webhook is started again." in client.get(
        resp.headers["Location"]).get_data(as_text=True)
    table.step()
    frozen.tick(timedelta(seconds=1))
    deliver(app)
    assert len(allowed.got) > tried
    page = client.get(f"/admin/{table.admin}").get_data(as_text=True)
    assert "working; last delivered" in text_of(page, "webhook-list")


def test_a_redirect_is_not_followed_and_stops_the_webhook(app, client, table, allowed):
    assert add(client, table.admin, allowed.url("/moved")).status_code == 303
    allowed.status, allowed.location = 301, allowed.url("/elsewhere")
    table.step()
    deliver(app)
    assert [r.path for r in allowed.got] == ["/moved"]  # never to /elsewhere
    (hook,) = hooks(app, table.game_id)
    assert hook.stopped_at is not None and hook.last_error == "redirect: 301"


def test_a_slow_receiver_fails_within_the_timeout(app, allowed):
    app.config["WEBHOOK_TIMEOUT"] = 1.0
    allowed.delay = 3.0
    started = time.monotonic()
    with pytest.raises(ChannelError, match="timeout"):
        channel.post(allowed.url(), b"{}", app.config)
    assert time.monotonic() - started < 2.0


def test_the_receiver_is_reached_only_through_the_tests_allowance(app, client, table,
                                                                  receiver, certificate):
    app.config["WEBHOOK_CA_FILE"] = str(certificate[0])
    resp = add(client, table.admin, receiver.url())
    assert resp.status_code == 400
    assert "only the standard https port (443) can be used" in error_of(resp)
    app.config["WEBHOOK_PORTS"] = [receiver.port]  # the port alone is not enough
    resp = add(client, table.admin, receiver.url())
    assert "the host is on a private, local or reserved network" in error_of(resp)
    with pytest.raises(ChannelError, match="refused"):
        channel.post(receiver.url(), b"{}", app.config)
    assert not receiver.got and not hooks(app, table.game_id)


# --------------------------------------------------------------------------- the URL checks


REFUSED = {
    "https://10.1.2.3/hook": "private, local or reserved",
    "https://169.254.169.254/latest/meta-data": "private, local or reserved",
    "https://[::1]/hook": "private, local or reserved",
    "https://[::ffff:10.0.0.1]/hook": "private, local or reserved",
    "https://[64:ff9b::a9fe:a9fe]/hook": "private, local or reserved",
    "https://100.64.0.1/hook": "private, local or reserved",
    "https://0.0.0.0/hook": "private, local or reserved",
    "https://224.0.0.1/hook": "private, local or reserved",
    "https://localhost/hook": "private, local or reserved",
    "http://chat.example.com/hook": "only https:// addresses",
    "javascript:alert(1)": "only https:// addresses",
    "https://user:pw@chat.example.com/hook": "user name or password",
    "https://chat.example.com:8443/hook": "port (443)",
    "https://chat.example.com/a\r\nX-Evil: 1": "spaces, line breaks",
    "https://chat.example.com/" + "a" * 10_000: "too long",
    "https://[::1/hook": "not a web address",
    "https:///hook": "names no host",
}


@pytest.mark.parametrize("url", list(REFUSED))
def test_a_url_that_could_reach_inside_or_is_not_https_is_refused_when_saved(
        app, client, table, url):
    before = len(hooks(app, table.game_id))
    resp = add(client, table.admin, url)
    assert resp.status_code == 400
    assert REFUSED[url] in error_of(resp)
    assert len(hooks(app, table.game_id)) == before


@pytest.mark.parametrize("url", ["https://10.1.2.3/hook", "https://169.254.169.254/x",
                                 "https://[::1]/hook", "https://localhost/hook",
                                 "http://chat.example.com/hook"])
def test_a_url_that_could_reach_inside_is_refused_again_when_sent(app, url):
    """A webhook saved before the rules changed (or whose name now points inside) is
    checked again before each post: refused, and stopped at once."""
    with app.app_context(), pytest.raises(ChannelError) as refused:
        channel.post(url, b"{}", app.config)
    assert str(refused.value).startswith("refused: ") and refused.value.gone


def test_a_refusal_is_said_in_the_hosts_language(app, client):
    ann, *others = PLAYERS
    german = services.PlayerIn(ann.name, ann.email, "de", ann.timezone)
    created = start_game(app, players=[german, *others])
    resp = add(client, created.admin_token, "http://chat.example.com/hook")
    assert resp.status_code == 400
    assert "nur https://-adressen" in error_of(resp)


def test_a_forged_id_of_another_games_webhook_is_refused(app, client, table, allowed):
    other = start_game(app)
    assert add(client, other.admin_token, allowed.url()).status_code == 303
    (theirs,) = hooks(app, other.game_id)
    for op in ("remove", "restart", "test"):
        resp = host_post(client, table.admin, op=op, webhook=str(theirs.id))
        assert resp.status_code == 404
        assert "this game has no such webhook" in error_of(resp)
    for bad in ("", "x", "-1", "99999999999999999999", "1\r\n"):
        assert host_post(client, table.admin, op="remove", webhook=bad).status_code == 404
    assert host_post(client, table.admin, op="nothing").status_code == 400
    assert host_post(client, table.admin, op="add", url="https://x.example",
                     kind="telegram").status_code == 400
    assert hooks(app, other.game_id) == [theirs]
    unsigned = client.post(f"/admin/{table.admin}/webhooks", follow_redirects=False,
                           data={"op": "add", "url": allowed.url()})
    assert unsigned.status_code == 400 and not hooks(app, table.game_id)


def test_at_most_three_webhooks_a_game_and_a_few_test_messages_an_hour(
        app, client, table, allowed):
    for n in range(3):
        assert add(client, table.admin, allowed.url(f"/{n}")).status_code == 303
    resp = add(client, table.admin, allowed.url("/4"))
    assert resp.status_code == 400
    assert "a game has at most 3 webhooks" in error_of(resp)
    first = hooks(app, table.game_id)[0]
    for _ in range(app.config["WEBHOOK_TESTS_PER_HOUR"]):
        assert host_post(client, table.admin, op="test",
                         webhook=str(first.id)).status_code == 303
    resp = host_post(client, table.admin, op="test", webhook=str(first.id))
    assert resp.status_code == 429
    deliver(app)
    assert texts(allowed) == ["A test message from pbem: this chat will hear whose turn it "
                              "is in this game."] * app.config["WEBHOOK_TESTS_PER_HOUR"]
    assert host_post(client, table.admin, op="remove",
                     webhook=str(first.id)).status_code == 303
    assert first.id not in [h.id for h in hooks(app, table.game_id)]


def test_the_host_page_lists_the_webhooks_without_their_secret(app, client, table, allowed):
    url = allowed.url("/api/webhooks/123/s3cr3t-t0ken")
    assert add(client, table.admin, url, kind="auto", talk=True).status_code == 303
    page = client.get(f"/admin/{table.admin}").get_data(as_text=True)
    listed = text_of(page, "webhook-list")
    assert "nothing sent yet" in listed and "with the table talk" in listed
    assert "s3cr3t-t0ken" not in page


# --------------------------------------------------------------------------- payloads


def message(**extra) -> channel.Message:
    return channel.Message(**{"text": "Ann's turn: bid for the conch, by Sun 18:00",
                              "game": "Cavemen: Ann, Bob *Cy*", "kind": "turn",
                              "url": "https://pbem.example/watch/abc", **extra})


def test_each_kind_of_chat_gets_its_own_payload_and_nobody_is_pinged():
    discord = channel.payload("discord", message(text="@everyone <@123> *bold*"))
    assert discord["allowed_mentions"] == {"parse": []}
    assert "\\@everyone \\<\\@123\\> \\*bold\\*" in discord["content"]
    assert "<https://pbem.example/watch/abc>" in discord["content"]
    slack = channel.payload("slack", message(text="<!channel> & co"))
    assert "&lt;!channel&gt; &amp; co" in slack["text"]
    matrix = channel.payload("matrix", message(text="<b>x</b>"))
    assert "&lt;b&gt;x&lt;/b&gt;" in matrix["html"] and "<b>x</b>" in matrix["text"]
    plain = channel.payload("json", message(deadline="2030-01-06T17:00:00+00:00"))
    assert plain == {"text": "Ann's turn: bid for the conch, by Sun 18:00",
                     "game": "Cavemen: Ann, Bob *Cy*", "kind": "turn",
                     "deadline": "2030-01-06T17:00:00+00:00",
                     "url": "https://pbem.example/watch/abc"}
    json.dumps(plain)


@pytest.mark.parametrize(("url", "kind"), [
    ("https://discord.com/api/webhooks/1/abc", "discord"),
    ("https://discordapp.com/api/webhooks/1/abc", "discord"),
    ("https://discord.com/channels/1", "json"),
    ("https://hooks.slack.com/services/T0/B0/x", "slack"),
    ("https://matrix.example.org/hookshot/webhook/abc", "json"),
])
def test_the_kind_of_chat_is_guessed_from_the_host(url, kind):
    assert channel.guess_kind(url) == kind


def test_a_decision_closed_before_its_message_went_is_not_told(app, client, table, allowed):
    assert add(client, table.admin, allowed.url()).status_code == 303
    table.step()
    table.step()  # the first turn is over before the loop ran
    deliver(app)
    with app.app_context(), session_scope() as s:
        skipped = s.exec(select(Notice).where(Notice.status == OutboxStatus.SKIPPED)).all()
    assert skipped and all(n.last_error == delivery.DECISION_CLOSED for n in skipped)
    assert load(app, Webhook, hooks(app, table.game_id)[0].id).failures == 0
