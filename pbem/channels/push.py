"""Browser notifications by Web Push ("notify me on this device" on a seat's game page).

A browser that subscribed on a seat's page (``static/push.js``, ``PushSubscription``) is
told of what the seat's emails tell: its decisions and their reminders, the game's news,
its start and its result. The notice carries the seat's address (``Target.rcpt``), so
the address's quiet hours, digest and "turn emails only" apply as to the email; and for
a decision (not a reminder) the seat's email waits ``PUSH_EMAIL_DELAY_MINUTES``: a player
who answers on the page meanwhile gets no email (delivery's decision-closed check).

What is sent is a small JSON object, encrypted for the browser (RFC 8291, aes128gcm) and
signed with the server's VAPID key (RFC 8292): a title, a body in the seat's language,
the game's id and a tag. Never a link or a token: the push service stores the message,
and the service worker (``/sw.js``) opens the page address it kept when the player
subscribed on that page.

The push service's address comes from the browser, so a forged subscription could point
the server anywhere: an endpoint must be https, and its host must not be (or resolve to)
a private, loopback, link-local or otherwise non-public address (``endpoint_refusal``,
again when sending, ``resolve_endpoint``, and the request goes to an address that was
checked, never to a second lookup's); redirects are not followed, answers are not
read past a few bytes, and a send gives up after ``PUSH_TIMEOUT`` seconds. Only with
``PUSH_ALLOW_HTTP_LOOPBACK`` (the tests' local push service) may it be plain
http://127.0.0.1. An address is public by the webhooks' rule (``webhook.is_public``:
an IPv6 address that carries an IPv4 one must be public on both counts).
"""

from __future__ import annotations

import base64
import ipaddress
import json
import logging
import os
import re
import socket
import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from flask import Flask, current_app, render_template
from flask_babel import force_locale
from py_vapid import Vapid02
from py_vapid.utils import b64urlencode
from pywebpush import WebPusher
from requests.adapters import HTTPAdapter
from sqlalchemy import bindparam
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from pbem.channels import ChannelError, Later, Send, Skip, Target, move_page
from pbem.channels.webhook import is_public  # the same rule: an IPv4 address inside too
from pbem.i18n import mark, short_time
from pbem.kinds import EmailTemplate
from pbem.models import (
    Game,
    Notice,
    PushSubscription,
    Seat,
    table_of,
    utcnow,
)

log = logging.getLogger("pbem.channels.push")

# What a seat's browsers hear of: the seat's turns (and reminders), the game's news, its
# start and its result.
TEMPLATES = frozenset({EmailTemplate.DECISION, EmailTemplate.NOTICE,
                       EmailTemplate.GAME_STARTED, EmailTemplate.RESULT})
MAX_ENDPOINT = 1024  # characters of a push service's address (real ones: 100 to 500)
MAX_BODY = 300  # characters of a notification's text
KEEP_READING = 2048  # bytes of a push service's answer read, at most (for the error)
NO_SUBSCRIPTION = mark("the device was removed")
KEY_FILE = "vapid_private_key"
TOPIC = re.compile(r"[A-Za-z0-9_-]{1,32}")  # RFC 8030's Topic: base64url, 32 at most
# Names that are never a push service (hosts of the local network).
LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa", ".intranet")


_SUBSCRIPTION = table_of(PushSubscription)
# Asked for every email queued while push is on (in the move's transaction): one indexed
# Core query, built once (the ORM's select costs several times more).
_LIVE_SUBSCRIPTIONS = (
    sa_select(_SUBSCRIPTION.c.id, _SUBSCRIPTION.c.seat_id)
    .where(_SUBSCRIPTION.c.seat_id.in_(bindparam("seats", expanding=True)),
           _SUBSCRIPTION.c.stopped_at.is_(None))
    .order_by(_SUBSCRIPTION.c.id))
# The same for one seat (an email to one player: most of them); an expanding IN is
# rendered anew at every execution, which costs as much again as the query.
_SEAT_SUBSCRIPTIONS = (
    sa_select(_SUBSCRIPTION.c.id, _SUBSCRIPTION.c.seat_id)
    .where(_SUBSCRIPTION.c.seat_id == bindparam("seat"), _SUBSCRIPTION.c.stopped_at.is_(None))
    .order_by(_SUBSCRIPTION.c.id))


class Push:
    """The Web Push channel (``CHANNEL``)."""

    name = "push"
    target_model = PushSubscription

    def targets(self, s: Session, game: Game, seats: Sequence[Seat],
                template: EmailTemplate, context: Mapping[str, Any]) -> list[Target]:
        if template not in TEMPLATES or not seats or not enabled(current_app):
            return []
        by_id = {seat.id: seat for seat in seats}
        found = (s.connection().execute(_SEAT_SUBSCRIPTIONS, {"seat": seats[0].id}).all()
                 if len(by_id) == 1 else
                 s.connection().execute(_LIVE_SUBSCRIPTIONS, {"seats": list(by_id)}).all())
        if not found:
            return []
        hold = email_delay(template, context)
        return [Target(row.id, by_id[row.seat_id], rcpt=by_id[row.seat_id].email.lower(),
                       language=by_id[row.seat_id].language, email_delay=hold)
                for row in found]

    def prepare(self, s: Session, notice: Notice, game: Game | None,
                seat: Seat | None) -> Skip | Later | Send:
        sub = s.get(PushSubscription, notice.target_id)
        if sub is None or game is None or seat is None:
            return Skip(NO_SUBSCRIPTION)
        held = _held_back(notice)
        if held is not None:
            return held
        seats = s.exec(select(Seat).where(Seat.game_id == game.id)
                       .order_by(col(Seat.position))).all()
        with force_locale(seat.language or notice.language):
            title, body = _words(notice, game, seat, list(seats))
        payload = {"title": title[:100], "body": body[:MAX_BODY], "game": game.id,
                   "tag": page_tag(game.id, seat.position), "kind": str(notice.template)}
        return Send({"subscription": {"endpoint": sub.endpoint,
                                      "keys": {"p256dh": sub.p256dh, "auth": sub.auth}},
                     "data": json.dumps(payload, ensure_ascii=False, separators=(",", ":")),
                     "urgent": notice.template == EmailTemplate.DECISION,
                     "topic": payload["tag"]})

    def send(self, notice: Notice, payload: Any) -> None:
        config = current_app.config
        endpoint = payload["subscription"]["endpoint"]
        allow_http = bool(config["PUSH_ALLOW_HTTP_LOOPBACK"])
        refused = endpoint_refusal(endpoint, allow_http)
        addresses: list[str] = []
        if not refused:
            refused, addresses = resolve_endpoint(endpoint, allow_http)
        if refused:
            raise ChannelError(f"refused push endpoint: {refused}", permanent=True)
        split = urlsplit(endpoint)
        headers = vapid(current_app).sign({"sub": vapid_subject(current_app),
                                           "aud": f"{split.scheme}://{split.netloc}",
                                           "exp": int(time.time()) + 12 * 3600})
        headers["Urgency"] = "high" if payload["urgent"] else "normal"
        if TOPIC.fullmatch(payload["topic"]):  # a newer one replaces it at the service
            headers["Topic"] = payload["topic"]
        try:
            with _Session(addresses[0] if addresses else None) as session:
                resp = WebPusher(payload["subscription"], requests_session=session).send(
                    payload["data"].encode(), headers, ttl=int(config["PUSH_TTL_SECONDS"]),
                    content_encoding="aes128gcm", timeout=float(config["PUSH_TIMEOUT"]))
                status, text = resp.status_code, _first_bytes(resp)
        except requests.RequestException as exc:
            raise ChannelError(f"the push service did not answer: {type(exc).__name__}") \
                from None
        if 200 <= status < 300:
            return
        said = f"the push service answered {status}: {text}".strip().rstrip(":")
        if status in (404, 410):
            raise ChannelError(said, gone=True)
        if status == 429 or status >= 500 or status == 408:
            raise ChannelError(said)  # retried with backoff
        raise ChannelError(said, permanent=True)  # refused (a 3xx is not followed)

    def stopped(self, s: Session, target_id: int, error: str) -> None:
        """The seat's page lists the device as stopped: its page moves on."""
        sub = s.get(PushSubscription, target_id)
        seat = s.get(Seat, sub.seat_id) if sub is not None else None
        if seat is not None:
            move_page(s, seat.game_id)


CHANNEL = Push()


# --------------------------------------------------------------------------- what is said


def page_tag(game_id: str, position: int) -> str:
    """The tag of a seat's notifications (a newer one replaces the older on the device),
    and the name under which its browser keeps the page to open (``static/push.js``)."""
    return f"pbem-{game_id}-{position}"


def email_delay(template: EmailTemplate, context: Mapping[str, Any]) -> timedelta | None:
    """How long the seat's email of a decision waits for a push to be answered first
    (a reminder's email does not wait)."""
    minutes = float(current_app.config["PUSH_EMAIL_DELAY_MINUTES"])
    if template != EmailTemplate.DECISION or context.get("reminder") or minutes <= 0:
        return None
    return timedelta(minutes=minutes)


def _held_back(notice: Notice) -> Later | None:
    """A decision held back while the move before it may be taken back (``grace``) or
    while the player has the page open (``follow_up``) is pushed when its email would
    have gone: taken back or answered by then, it is not sent at all."""
    created = notice.created_at
    if notice.template != EmailTemplate.DECISION or created is None:
        return None
    config = current_app.config
    if notice.context.get("grace"):
        wait = timedelta(seconds=float(config["TAKEBACK_GRACE_SECONDS"]))
    elif notice.context.get("follow_up"):
        wait = timedelta(minutes=float(config["FOLLOW_UP_MINUTES"]))
    else:
        return None
    if created.tzinfo is None:
        created = created.replace(tzinfo=utcnow().tzinfo)
    return Later(created + wait) if created + wait > utcnow() else None


def _words(notice: Notice, game: Game, seat: Seat, seats: list[Seat]) -> tuple[str, str]:
    """The notification's title (the game's name, as its emails' subject) and text, in
    the language of the ``force_locale`` around the call."""
    from pbem.mail.compose import game_name

    ctx = notice.context
    deadline = ctx.get("deadline")
    text = render_template(
        "push/notice.txt", game=game, seat=seat, template=str(notice.template), ctx=ctx,
        names=[x.name for x in seats],
        when=short_time(deadline, seat.timezone or "UTC") if deadline else "")
    return game_name(game, seats), " ".join(text.split())


# --------------------------------------------------------------------------- sending


class _Pinned(HTTPAdapter):
    """Connects to ``address`` (the one ``resolve_endpoint`` checked), whatever a second
    lookup of the name would answer (DNS rebinding); the name stays the one of TLS (SNI,
    the certificate's check) and of the Host header."""

    def __init__(self, address: str | None) -> None:
        super().__init__(max_retries=0)
        self.address = address

    def build_connection_pool_key_attributes(
            self, request: requests.PreparedRequest, verify: Any,
            cert: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(
            request, verify, cert)
        if self.address is not None:
            name = host_params["host"]
            host_params["host"] = self.address
            if host_params["scheme"] == "https":
                pool_kwargs["server_hostname"] = name
                pool_kwargs["assert_hostname"] = name
        return host_params, pool_kwargs


class _Session(requests.Session):
    """A push service is asked once, at its own address (``address``: the one checked,
    when its name was looked up): no redirect followed, no proxy, netrc or certificate
    settings from the environment, and its answer is not read past ``KEEP_READING``
    bytes."""

    def __init__(self, address: str | None = None) -> None:
        super().__init__()
        self.trust_env = False
        self.max_redirects = 0
        self.mount("https://", _Pinned(address))
        self.mount("http://", _Pinned(address))

    def request(self, method: str, url: Any,
                *args: Any, **kwargs: Any) -> requests.Response:
        kwargs["allow_redirects"] = False
        kwargs["stream"] = True
        kwargs["headers"] = {**(kwargs.get("headers") or {}), "Host": urlsplit(url).netloc}
        return super().request(method, url, *args, **kwargs)


def _first_bytes(resp: requests.Response) -> str:
    try:
        data = resp.raw.read(KEEP_READING, decode_content=True) or b""
    except Exception:  # noqa: BLE001 - only for the error's words
        data = b""
    finally:
        resp.close()
    return " ".join(data.decode("utf-8", "replace").split())[:300]


# --------------------------------------------------------------------------- endpoints


def endpoint_refusal(url: Any, allow_http_loopback: bool = False) -> str | None:
    """Why ``url`` cannot be a push service's address (None: it may be): not a string of
    at most ``MAX_ENDPOINT`` characters, not https (plain http only to 127.0.0.1 with
    ``allow_http_loopback``), with a user or password, a host that is an address of no
    public network, or a name of the local network. Checked without asking DNS (this
    runs in the web request); ``resolved_refusal`` asks it before each send."""
    if not isinstance(url, str) or not url or len(url) > MAX_ENDPOINT:
        return mark("empty, or too long")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        return mark("blanks or control characters")
    try:
        split = urlsplit(url)
        host = split.hostname
        split.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        return mark("not an address")
    if split.username is not None or split.password is not None or not host:
        return mark("no host, or a user name in it")
    if split.scheme == "http" and allow_http_loopback and host == "127.0.0.1":
        return None
    if split.scheme != "https":
        return mark("not https")
    literal = _ip(host)
    if literal is not None:
        return None if is_public(str(literal)) else mark("not a public address")
    if "." not in host or host == "localhost" or host.endswith(LOCAL_SUFFIXES):
        return mark("a name of the local network")
    return None


def resolved_refusal(url: str, allow_http_loopback: bool = False) -> str | None:
    """``endpoint_refusal``, and every address the host's name resolves to must be a
    public one (asked at sending, in the notices' thread)."""
    return resolve_endpoint(url, allow_http_loopback)[0]


def resolve_endpoint(url: str, allow_http_loopback: bool = False) -> tuple[str | None,
                                                                           list[str]]:
    """Why the host's addresses refuse ``url`` (None: every one is public), and those
    addresses (none for the tests' plain http://127.0.0.1): the request goes to one of
    them, never to a second lookup's answer."""
    split = urlsplit(url)
    host = split.hostname or ""
    if split.scheme == "http" and allow_http_loopback and host == "127.0.0.1":
        return None, []
    try:
        found = socket.getaddrinfo(host, split.port or 443, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return mark("the name does not resolve"), []
    kept = list(dict.fromkeys(str(info[4][0]).split("%", 1)[0] for info in found))
    addresses = {_ip(a) for a in kept}
    if not addresses or any(a is None or not is_public(str(a)) for a in addresses):
        return mark("the name resolves to an address that is not public"), []
    return None, kept


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


# --------------------------------------------------------------------------- keys


def enabled(app: Flask) -> bool:
    """Whether pages offer notifications: ``PUSH``, or when unset, whether the pages are
    a secure context to browsers (https, or this machine), which Web Push needs."""
    chosen = app.config.get("PUSH")
    if chosen is not None:
        return bool(chosen)
    split = urlsplit(str(app.config["BASE_URL"]))
    return split.scheme == "https" or split.hostname in ("127.0.0.1", "localhost", "::1")


def vapid(app: Flask) -> Vapid02:
    """The server's VAPID key: ``VAPID_PRIVATE_KEY`` (base64url, raw or DER), else the
    one made once and kept in the instance folder (kept in the app after the first
    call)."""
    found = app.extensions.get("pbem.vapid")
    if found is None:
        given = app.config.get("VAPID_PRIVATE_KEY")
        found = Vapid02.from_string(given) if given else _kept_key(Path(app.instance_path))
        app.extensions["pbem.vapid"] = found
    return found


def public_key(app: Flask) -> str:
    """The VAPID public key as pages hand it to ``pushManager.subscribe`` (base64url of
    the uncompressed point)."""
    found = app.extensions.get("pbem.vapid_public")
    if found is None:
        point = vapid(app).public_key.public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        found = app.extensions["pbem.vapid_public"] = b64urlencode(point)
    return str(found)


def vapid_subject(app: Flask) -> str:
    """Whom the push services may contact about this server: ``VAPID_SUBJECT``, else
    MAIL_FROM's address, else the base URL."""
    given = app.config.get("VAPID_SUBJECT")
    if given:
        return str(given)
    sender = str(app.config.get("MAIL_FROM") or "")
    address = sender.rsplit("<", 1)[-1].rstrip(">").strip()
    if "@" in address:
        return f"mailto:{address}"
    return str(app.config["BASE_URL"])


def _kept_key(folder: Path) -> Vapid02:
    """The key kept in ``folder`` (made there the first time: written to a file of its
    own, then linked into place, so two processes starting at once agree on one key)."""
    path = folder / KEY_FILE
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        raw = key.private_numbers().private_value.to_bytes(32, "big")
        text = base64.urlsafe_b64encode(raw).rstrip(b"=")
        temp = folder / f".{KEY_FILE}.{os.getpid()}.{os.urandom(4).hex()}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, text)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temp, path)
        except FileExistsError:
            pass  # another process made one first: that one counts
        finally:
            temp.unlink()
        log.info("made the server's VAPID key for Web Push: %s", path)
    return Vapid02.from_string(path.read_text().strip())


