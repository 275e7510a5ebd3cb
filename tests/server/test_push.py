"""Browser notifications by Web Push (issue 34, point 3): a browser subscribes on a seat's
game page, the server tells it of the seat's turns through its push service, encrypted
for that browser (RFC 8291) and signed with the server's VAPID key (RFC 8292), and holds
the seat's email meanwhile (answered on the page, it is not sent). A local HTTP server
stands for the push service (a browser's own cannot be reached offline); the test makes
its subscription as a browser does (a P-256 key pair and a 16-byte secret), registers
it through the page's own form fields, and decrypts what arrives with its private key.
The subscription route refuses junk with a clear message, and the server refuses to
send to anything but a public https address (a forged subscription must not make it
reach the host's own network). Both databases."""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Iterator
from datetime import timedelta
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import http_ece
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import Vapid02
from sqlmodel import select

from pbem import mail
from pbem.channels import delivery
from pbem.channels.push import endpoint_refusal, resolved_refusal
from pbem.db import session_scope
from pbem.kinds import OutboxStatus
from pbem.models import Address, Notice, Outbox, PushSubscription, Token, utcnow
from tests.server.helpers import (
    Table,
    load,
    path_of,
    seats_of,
    snapshot,
    text_of,
)

# ------------------------------------------------------------------ the push service


class PushService:
    """A push service on 127.0.0.1: keeps every request, answers ``status``."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.status = 201
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                service.received.append({"path": self.path, "headers": dict(self.headers),
                                         "body": self.rfile.read(length)})
                self.send_response(service.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def to(self, path: str) -> list[dict[str, Any]]:
        return [r for r in self.received if r["path"] == path]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def service() -> Iterator[PushService]:
    found = PushService()
    try:
        yield found
    finally:
        found.stop()


VAPID_KEY = base64.urlsafe_b64encode(ec.generate_private_key(ec.SECP256R1())
                                     .private_numbers().private_value.to_bytes(32, "big")
                                     ).rstrip(b"=").decode()


@pytest.fixture
def pushing(app):
    """Push on (the tests' base URL is not a secure context, so it is not by default),
    with a VAPID key of the tests' and the local push service's plain http allowed."""
    app.config.update(PUSH=True, VAPID_PRIVATE_KEY=VAPID_KEY, PUSH_ALLOW_HTTP_LOOPBACK=True,
                      PUSH_EMAIL_DELAY_MINUTES=10)
    app.extensions.pop("pbem.vapid", None)
    app.extensions.pop("pbem.vapid_public", None)
    return app


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Browser:
    """What a browser's push subscription holds: its push service's address for it, its
    P-256 key pair and its 16-byte authentication secret."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.auth = os.urandom(16)

    def fields(self, label: str = "Firefox (Android)") -> dict[str, str]:
        """As ``PushSubscription.toJSON()`` gives them to the page's script."""
        point = self.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        return {"endpoint": self.endpoint, "p256dh": b64(point), "auth": b64(self.auth),
                "label": label}

    def read(self, request: dict[str, Any]) -> dict[str, Any]:
        """Decrypt a push message as the browser does."""
        plain = http_ece.decrypt(request["body"], private_key=self.key,
                                 auth_secret=self.auth, version="aes128gcm")
        return json.loads(plain)


# ------------------------------------------------------------------ the page


class BoxParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.box: dict[str, str] | None = None

    def handle_starttag(self, tag, attrs):
        found = {k: v or "" for k, v in attrs}
        if found.get("id") == "push":
            self.box = found


def push_box(html: str) -> dict[str, str] | None:
    """The attributes of the page's "notify me" box (what its script reads)."""
    parser = BoxParser()
    parser.feed(html)
    return parser.box


def seat_page(table: Table, position: int) -> str:
    """The seat's game page, from the latest email of the seat that links it."""
    email = seats_of(table.app, table.game_id)[position].email
    mine = [m for m in table.inbox.all() if m.to_addr == email and m.under("/g/")]
    return path_of(mine[-1].link("/g/"))


def subscribe(table: Table, position: int, browser: Browser, **fields: str):
    """What the page's script does after the browser subscribed: POST the subscription
    where the page's box says, with the page's signature. Returns the answer."""
    page = table.client.get(seat_page(table, position))
    box = push_box(page.get_data(as_text=True))
    assert box is not None, "the page offers no notifications"
    return table.client.post(box["data-add"], data={
        "sig": box["data-sig"], **browser.fields(), **fields}, follow_redirects=False)


def subscribed(table: Table, position: int, service: PushService) -> Browser:
    browser = Browser(f"{service.url}/push/seat{position}")
    resp = subscribe(table, position, browser)
    assert resp.status_code == 303, resp.get_data(as_text=True)[:2000]
    return browser


def deliver(app) -> dict[str, int]:
    with app.app_context():
        return delivery.deliver_due()


def notices(app, **where: Any) -> list[Notice]:
    with app.app_context(), session_scope() as s:
        query = select(Notice).where(Notice.channel == "push")
        for name, value in where.items():
            query = query.where(getattr(Notice, name) == value)
        return list(s.exec(query.order_by(Notice.id)))


def decision_email(app, seat_id: int) -> Outbox:
    with app.app_context(), session_scope() as s:
        return s.exec(select(Outbox).where(Outbox.template == "decision",
                                           Outbox.seat_id == seat_id)
                      .order_by(Outbox.id.desc())).first()


def move(table: Table):
    decision = table.open()
    table.play_on_page(decision, table.bot_choice(decision))
    return decision


# ------------------------------------------------------------------ the story


def test_a_decision_reaches_the_browser_encrypted_for_it_with_no_link_or_token(
        pushing, table, service):
    browsers = {seat.position: subscribed(table, seat.position, service)
                for seat in table.seats}
    move(table)
    decision = table.open()
    seat = seats_of(table.app, table.game_id)[decision.position]
    assert deliver(table.app)["failed"] == 0
    (request,) = service.to(f"/push/seat{decision.position}")
    headers = {k.lower(): v for k, v in request["headers"].items()}
    assert headers["content-encoding"] == "aes128gcm"
    assert int(headers["ttl"]) > 0 and headers["urgency"] == "high"
    assert headers["authorization"].startswith("vapid t=")
    page_key = push_box(table.client.get(seat_page(table, decision.position))
                        .get_data(as_text=True))["data-key"]
    assert f"k={page_key}" in headers["authorization"]  # the key the page subscribed with
    assert Vapid02.verify(headers["authorization"])  # signed with it
    message = browsers[decision.position].read(request)
    assert message["game"] == table.game_id
    assert message["tag"] == f"pbem-{table.game_id}-{decision.position}"
    assert message["title"] == table.inbox.to(seat.email)[-1].subject
    assert message["body"].startswith("Your turn:")
    with table.app.app_context(), session_scope() as s:
        secrets = [t.hash for t in s.exec(select(Token))]
    plain = json.dumps(message)
    raw = seat_page(table, decision.position).rsplit("/", 1)[1]
    assert raw not in plain and "http" not in plain and "/g/" not in plain
    assert not any(secret in plain for secret in secrets)
    with pytest.raises(Exception):  # noqa: B017 - another browser's keys cannot read it
        browsers[(decision.position + 1) % 3].read(request)


def test_a_german_seat_is_notified_in_german(pushing, table, service):
    decision = table.open()
    seat = seats_of(table.app, table.game_id)[decision.position]
    page = table.page_link(decision)
    table.client.post(path_of(page) + "/language", data={
        "sig": push_box(table.client.get(path_of(page)).get_data(as_text=True))["data-sig"],
        "lang": "de"})
    browser = subscribed(table, decision.position, service)
    with table.app.app_context():  # the decision's reminder, as the clock sends it
        from pbem.services import send_reminder

        assert send_reminder(decision.id, decision.next_reminder_at)
    deliver(table.app)
    message = browser.read(service.to(f"/push/seat{seat.position}")[-1])
    assert message["body"].startswith("Erinnerung:"), message


def test_the_email_of_a_pushed_decision_waits_and_is_not_sent_if_answered_on_the_page(
        pushing, table, service):
    for seat in table.seats:
        subscribed(table, seat.position, service)
    move(table)
    decision = table.open()
    seat_id = seats_of(table.app, table.game_id)[decision.position].id
    email = decision_email(table.app, seat_id)
    assert email.next_attempt_at >= utcnow() + timedelta(minutes=9)
    deliver(table.app)
    assert service.to(f"/push/seat{decision.position}")
    move(table)  # answered on the page before the email was due
    with table.app.app_context(), session_scope() as s:
        s.get(Outbox, email.id).next_attempt_at = utcnow()
    with table.app.app_context():
        mail.deliver_due(ids=[email.id])
    row = load(table.app, Outbox, email.id)
    assert row.status == OutboxStatus.SKIPPED, row.last_error


def test_without_a_browser_the_email_does_not_wait(pushing, table, service):
    move(table)
    decision = table.open()
    seat_id = seats_of(table.app, table.game_id)[decision.position].id
    assert decision_email(table.app, seat_id).next_attempt_at <= utcnow()
    assert not notices(table.app)


def test_a_subscription_the_push_service_forgot_is_stopped_and_the_page_says_so(
        pushing, table, service):
    for seat in table.seats:
        subscribed(table, seat.position, service)
    service.status = 410
    move(table)
    decision = table.open()
    deliver(table.app)
    with table.app.app_context(), session_scope() as s:
        seat_id = seats_of(table.app, table.game_id)[decision.position].id
        (sub,) = s.exec(select(PushSubscription).where(PushSubscription.seat_id == seat_id))
        assert sub.stopped_at is not None and "410" in sub.last_error
    page = table.client.get(seat_page(table, decision.position)).get_data(as_text=True)
    assert "stopped" in text_of(page, "push-devices")
    service.received.clear()
    move(table)
    move(table)
    deliver(table.app)
    assert not service.to(f"/push/seat{decision.position}")  # told nothing more


def test_a_busy_push_service_is_asked_again_later(pushing, table, service):
    for seat in table.seats:
        subscribed(table, seat.position, service)
    service.status = 503
    move(table)
    assert deliver(table.app)["failed"] >= 1
    row = notices(table.app, template="decision")[-1]
    assert row.status == OutboxStatus.PENDING and row.next_attempt_at > utcnow()
    assert load(table.app, PushSubscription, row.target_id).stopped_at is None


def test_quiet_hours_hold_the_push(pushing, table, service):
    for seat in table.seats:
        subscribed(table, seat.position, service)
    move(table)
    decision = table.open()
    seat = seats_of(table.app, table.game_id)[decision.position]
    hour = utcnow().hour
    with table.app.app_context(), session_scope() as s:
        s.add(Address(address=seat.email.lower(), timezone="UTC", quiet_from=hour,
                      quiet_to=(hour + 2) % 24))
    deliver(table.app)
    assert not service.to(f"/push/seat{decision.position}")
    (row,) = notices(table.app, seat_id=seat.id, template="decision")
    assert row.status == OutboxStatus.PENDING and row.next_attempt_at > utcnow()


# ------------------------------------------------------------------ the page's routes


def test_the_page_lists_the_device_and_removes_it_with_its_button(pushing, table, service):
    subscribed(table, 0, service)
    page = table.client.get(seat_page(table, 0) + "?done=push_added").get_data(as_text=True)
    assert "this device is notified" in text_of(page, "notice")
    assert "Firefox (Android)" in text_of(page, "push-devices")
    with table.app.app_context(), session_scope() as s:
        (sub,) = s.exec(select(PushSubscription))
    resp = table.client.post(seat_page(table, 0) + "/push/remove", data={
        "sig": push_box(page)["data-sig"], "device": str(sub.id)})
    html = resp.get_data(as_text=True)
    assert "no longer notified" in text_of(html, "notice")
    assert 'id="push-devices"' not in html
    assert load(table.app, PushSubscription, sub.id) is None


def test_stop_notifying_this_device_removes_it_by_its_address(pushing, table, service):
    browser = subscribed(table, 0, service)
    subscribed(table, 1, service)  # the same game, another seat's browser
    page = table.client.get(seat_page(table, 0)).get_data(as_text=True)
    table.client.post(seat_page(table, 0) + "/push/remove", data={
        "sig": push_box(page)["data-sig"], "endpoint": browser.endpoint})
    with table.app.app_context(), session_scope() as s:
        assert [sub.seat_id for sub in s.exec(select(PushSubscription))] == [
            table.seats[1].id]


def test_the_same_browser_again_is_one_device(pushing, table, service):
    browser = Browser(f"{service.url}/push/again")
    for _ in range(2):
        assert subscribe(table, 0, browser).status_code == 303
    with table.app.app_context(), session_scope() as s:
        assert len(s.exec(select(PushSubscription)).all()) == 1


def test_the_page_offers_no_notifications_when_push_is_off(app, table):
    app.config["PUSH"] = False
    html = table.client.get(seat_page(table, 0)).get_data(as_text=True)
    assert push_box(html) is None and "push.js" not in html


@pytest.mark.parametrize(("change", "says"), [
    ({"endpoint": "http://push.example.com/x"}, "not https"),
    ({"endpoint": "https://10.0.0.7/x"}, "not a public address"),
    ({"endpoint": "https://[::1]/x"}, "not a public address"),
    ({"endpoint": "https://169.254.169.254/latest"}, "not a public address"),
    ({"endpoint": "https://localhost/x"}, "local network"),
    ({"endpoint": "https://printer.local/x"}, "local network"),
    ({"endpoint": "https://user:pw@push.example.com/x"}, "user name"),
    ({"endpoint": "https://push.example.com/" + "x" * 2000}, "too long"),
    ({"endpoint": ""}, "empty"),
    ({"p256dh": "not-a-key"}, "key is not valid"),
    ({"p256dh": b64(b"\x04" + b"\x01" * 64)}, "key is not valid"),  # not on the curve
    ({"auth": b64(b"short")}, "secret is not valid"),
    ({"auth": "!!!!"}, "secret is not valid"),
])
def test_a_subscription_that_is_junk_is_refused_with_what_is_wrong(pushing, table, service,
                                                                   change, says):
    before = snapshot(table.app)
    resp = subscribe(table, 0, Browser(f"{service.url}/push/x"), **change)
    assert resp.status_code == 400
    assert says in text_of(resp.get_data(as_text=True), "error")
    assert snapshot(table.app) == before


def test_a_subscription_with_a_wrong_signature_or_too_long_is_refused(pushing, table,
                                                                      service):
    page = seat_page(table, 0)
    fields = Browser(f"{service.url}/push/x").fields()
    assert table.client.post(page + "/push", data={"sig": "x", **fields},
                             follow_redirects=False).status_code == 400
    box = push_box(table.client.get(page).get_data(as_text=True))
    long = table.client.post(page + "/push", data={"sig": box["data-sig"], **fields,
                                                   "label": "x" * 20_000})
    assert long.status_code == 400 and "too long" in text_of(long.get_data(as_text=True),
                                                             "error")
    assert table.client.get(page + "/push").status_code == 405  # a GET changes nothing
    with table.app.app_context(), session_scope() as s:
        assert not s.exec(select(PushSubscription)).all()


def test_a_seat_has_at_most_so_many_devices(pushing, table, service):
    table.app.config["PUSH_DEVICES_PER_SEAT"] = 2
    for i in range(2):
        assert subscribe(table, 0, Browser(f"{service.url}/push/{i}")).status_code == 303
    resp = subscribe(table, 0, Browser(f"{service.url}/push/2"))
    assert resp.status_code == 429 and "remove one first" in resp.get_data(as_text=True)


def test_a_label_is_shown_as_text(pushing, table, service):
    subscribe(table, 0, Browser(f"{service.url}/push/x"), label="<b>me</b>\x00\n")
    html = table.client.get(seat_page(table, 0)).get_data(as_text=True)
    assert "<b>me</b>" not in html and "&lt;b&gt;me&lt;/b&gt;" in html


def test_the_service_worker_is_served_as_a_script_for_the_game_pages(client):
    resp = client.get("/sw.js")
    assert resp.status_code == 200
    assert resp.headers["Content-Type"].startswith("text/javascript")
    assert resp.headers["Cache-Control"] == "no-cache"
    body = resp.get_data(as_text=True)
    assert "showNotification" in body and "openWindow" in body


# ------------------------------------------------------------------ where it may send


@pytest.mark.parametrize("url", [
    "https://fcm.googleapis.com/fcm/send/abc:def",
    "https://updates.push.services.mozilla.com/wpush/v2/gAAAA",
    "https://web.push.apple.com/QGx",
    "https://8.8.8.8/x",
])
def test_a_public_https_endpoint_may_be_used(url):
    assert endpoint_refusal(url) is None


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8000/x", "https://127.0.0.1/x", "https://192.168.1.1/x",
    "https://[fe80::1]/x", "https://[::ffff:10.0.0.1]/x", "https://0.0.0.0/x",
    "https://intranet/x", "https://box.internal/x", "ftp://push.example.com/x",
    "https://push.example.com:99999/x", "https://push.example.com/ x", 42,
    # IPv6 addresses that carry an IPv4 one inside (NAT64, 6to4, IPv4-compatible)
    "https://[64:ff9b::a00:1]/x", "https://[64:ff9b::7f00:1]/x", "https://[2002:a00:1::]/x",
    "https://[::127.0.0.1]/x", "https://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/x",
])
def test_an_endpoint_of_no_public_https_address_is_refused(url):
    assert endpoint_refusal(url) is not None


def test_plain_http_to_this_machine_only_with_the_tests_flag():
    assert endpoint_refusal("http://127.0.0.1:8000/x", allow_http_loopback=True) is None
    assert endpoint_refusal("http://10.0.0.1:8000/x", allow_http_loopback=True) is not None
    assert endpoint_refusal("http://localhost:8000/x", allow_http_loopback=True) is not None


def test_a_name_that_resolves_to_this_machine_is_refused_when_sending():
    assert resolved_refusal("https://localhost.:443/x") is not None
    assert resolved_refusal("https://nothing.invalid/x") is not None


def test_a_push_to_a_refused_endpoint_is_never_sent(pushing, table, service):
    """A subscription stored before the check (or whose name now resolves elsewhere) is
    refused at sending too: nothing reaches the address."""
    browser = subscribed(table, 0, service)
    table.app.config["PUSH_ALLOW_HTTP_LOOPBACK"] = False
    move(table)
    with table.app.app_context(), session_scope() as s:
        for sub in s.exec(select(PushSubscription)):
            assert sub.endpoint == browser.endpoint
    deliver(table.app)
    assert not service.received
    assert any("refused push endpoint" in (r.last_error or "") for r in notices(table.app))


def test_the_vapid_key_is_made_once_and_kept(make_app, tmp_path):
    from pbem.channels import push

    first = make_app(PUSH=True)
    first.instance_path = str(tmp_path / "instance")
    key = push.public_key(first)
    again = make_app(PUSH=True)
    again.instance_path = str(tmp_path / "instance")
    assert push.public_key(again) == key
    assert (tmp_path / "instance" / push.KEY_FILE).stat().st_mode & 0o777 == 0o600
    assert len(base64.urlsafe_b64decode(key + "=")) == 65


def test_a_seat_handed_over_no_longer_notifies_the_old_players_devices(
        pushing, table, service):
    """The old player's links die with a hand-over; so must their browsers' subscriptions,
    else the former player's phone keeps hearing the new player's turns and deadlines
    (and cannot even remove it: the page that lists it is gone)."""
    from tests.server.test_host_controls import accept_hand_over
    from tests.server.timekit import admin_post

    decision = table.open()
    position = decision.position
    subscribed(table, position, service)
    resp = admin_post(table.client, table.admin, "handover", position=str(position),
                      name="Dee", email="dee@example.com", lang="en", tz="UTC")
    assert resp.status_code == 200, resp.get_data(as_text=True)[:500]
    assert accept_hand_over(table.client, table.inbox, "dee@example.com").status_code == 200
    deliver(table.app)  # the seat's open decision, told again to Dee
    assert service.to(f"/push/seat{position}") == []
    with table.app.app_context(), session_scope() as s:
        assert s.exec(select(PushSubscription)).all() == []


def test_a_name_that_resolves_inside_only_after_the_check_is_never_reached(
        pushing, table, service, monkeypatch):
    """DNS rebinding: the push service's name answers a public address to the check,
    then this machine's to the connection. The request must go to the address that was
    checked, never to a second lookup's. (DNS cannot be served offline: the resolver is
    the one double here; the connection and the listener inside are real.)"""
    import socket

    inside = socket.socket()
    inside.bind(("127.0.0.1", 0))
    inside.listen(8)
    inside.settimeout(0.1)
    port = inside.getsockname()[1]
    name = "push.rebind.example"
    real = socket.getaddrinfo
    asked: list[str] = []

    def rebinding(host, *args, **kwargs):
        if host != name:
            return real(host, *args, **kwargs)
        asked.append(host)
        address = "93.184.216.34" if len(asked) == 1 else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "",
                 (address, port))]

    browser = Browser(f"https://{name}:{port}/push/x")
    assert subscribe(table, 0, browser).status_code == 303
    table.app.config.update(PUSH_ALLOW_HTTP_LOOPBACK=False, PUSH_TIMEOUT=0.5)
    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    move(table)
    while table.open().position != 0:
        move(table)
    deliver(table.app)
    monkeypatch.undo()
    reached = []
    try:
        while True:
            reached.append(inside.accept()[0])
    except (TimeoutError, OSError):
        pass
    finally:
        for conn in reached:
            conn.close()
        inside.close()
    assert asked, "the push was not attempted"
    assert reached == [], "the push reached an address inside"


def test_a_push_goes_to_the_checked_address_with_the_names_tls_and_host(tmp_path):
    """The pinned connection still speaks to the push service by its name: the
    certificate is checked for the name (a wrong name is refused) and the Host header
    is the name's."""
    import requests

    from pbem.channels.push import _Session
    from tests.webhook_receiver import Receiver, make_certificate

    cert, key = make_certificate(tmp_path)
    receiver = Receiver(cert, key).start()
    try:
        with _Session("127.0.0.1") as session:
            session.verify = str(cert)
            resp = session.post(f"https://localhost:{receiver.port}/push/x", data=b"hi",
                                timeout=3)
            resp.close()  # (the session streams: the answer holds its connection)
            assert resp.status_code == 200
        assert receiver.got[-1].headers["Host"] == f"localhost:{receiver.port}"
        with _Session("127.0.0.1") as session, pytest.raises(requests.exceptions.SSLError):
            session.verify = str(cert)
            session.post(f"https://push.example.com:{receiver.port}/push/x", data=b"hi",
                         timeout=3)
    finally:
        receiver.stop()
