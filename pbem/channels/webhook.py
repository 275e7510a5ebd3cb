"""Chat webhooks: a game's table hears of its news in its own chat (Discord, Slack,
Matrix through a hookshot-style bridge, or any receiver of plain JSON), set by the host
on the host page (``pbem.services.webhooks``).

What the table hears: a decision opened ("Ann's turn: place people, by Sun 18:00"; not
its reminders), the game's news (a timeout, a pause...: each notice whose event every
spectator may read), the game started, the result, and, when the host chose it, the
table talk (``queue_table_notice`` from ``services.talk.post``); always with the game's
public page (the spectators' page), never a seat's own link. A table is nobody's
address: a player's quiet hours, digest or muting hold back only that player's email,
never the table's chat (``Target.rcpt`` is "").

Safe by construction: a URL is checked when it is saved and again before each send
(``check_url``, ``resolve``): https only, no user name or password, port 443 (or
``WEBHOOK_PORTS``), a host whose every address is public (no private, loopback,
link-local, multicast, reserved, unspecified or shared (CGNAT) address, nor one of those
inside an IPv6 address: IPv4-mapped, 6to4, Teredo, NAT64). The request goes to the
address that was checked (no second lookup that DNS could answer otherwise), with the
host's name for TLS (SNI, certificate) and the Host header, within ``WEBHOOK_TIMEOUT``
seconds for connecting, TLS, sending and the answer's status line together; a redirect
is not followed (it is a failure), and at most ``RESPONSE_LIMIT`` bytes of the answer
are read. The client is the standard library's ``socket`` and ``ssl``, a few lines of
HTTP/1.1 written here: pinning the checked address and a deadline for the whole
exchange are what ``http.client`` and ``urllib3`` make roundabout, and it adds no
dependency (``urllib3`` comes only with the tests' ``requests``).

For the tests only: ``WEBHOOK_ALLOW_HOSTS`` lets named ``host:port`` pairs through
despite the address and port rules (the tests' own receiver on 127.0.0.1), and
``WEBHOOK_CA_FILE`` names the certificates trusted instead of the system's.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import ssl
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import idna
from flask import current_app, render_template
from flask_babel import force_locale
from markupsafe import escape
from sqlalchemy import bindparam
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from pbem.channels import ChannelError, Later, Send, Skip, Target, move_page
from pbem.i18n import mark, short_time
from pbem.kinds import EmailTemplate
from pbem.mail.compose import TALK_EVENT, default_title
from pbem.models import Decision, EventLog, Game, Notice, Seat, Webhook, table_of, utcnow

log = logging.getLogger("pbem.channels.webhook")

KINDS = ("discord", "slack", "matrix", "json")
MAX_URL = 2000  # characters of a webhook's address (Discord's and Slack's are ~120)
RESPONSE_LIMIT = 4096  # bytes of a receiver's answer read at most
TEST = "webhook_test"  # the headline of the host's test message
# A notice's headline that is not the table's news: the host's own (an address bounces);
# a message to the table comes by ``queue_table_notice``, not by each listener's email.
PRIVATE = frozenset({"address_bouncing"})

# Why a URL is refused (shown on the host page, translated there; stored after
# "refused: " in a webhook's last error when a send finds it so).
NOT_HTTPS = mark("only https:// addresses can be used")
TOO_LONG = mark("the address is too long")
BAD_CHARACTERS = mark("the address holds spaces, line breaks or other characters that "
                      "are not allowed")
NOT_A_URL = mark("this is not a web address")
NO_HOST = mark("the address names no host")
USERINFO = mark("an address with a user name or password cannot be used")
BAD_PORT = mark("only the standard HTTPS port (443) can be used")
UNKNOWN_HOST = mark("the host could not be found; check the address, or try again later")
PRIVATE_HOST = mark("the host is on a private, local or reserved network, which this "
                    "server does not post to")
REFUSALS = (NOT_HTTPS, TOO_LONG, BAD_CHARACTERS, NOT_A_URL, NO_HOST, USERINFO, BAD_PORT,
            UNKNOWN_HOST, PRIVATE_HOST)


class Refused(Exception):
    """A webhook URL this server does not post to; ``message`` is one of ``REFUSALS``
    (in English: translate it where it is shown)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --------------------------------------------------------------------------- checks


@dataclass(frozen=True, slots=True)
class Checked:
    """A webhook URL that passed the checks of its form."""

    url: str  # as it is kept (the fragment dropped)
    host: str  # ASCII (IDNA) and lower case; an IPv6 address without brackets
    port: int
    target: str  # path and query, what the request line asks for
    allowed: bool  # a host:port of ``WEBHOOK_ALLOW_HOSTS`` (the tests' receiver)

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == 443 else f"{host}:{self.port}"


def check_url(url: str, config: Mapping[str, Any]) -> Checked:
    """The checks of a URL's form, before any lookup: https, no user name or password,
    an allowed port, printable ASCII only (a host's own letters go as IDNA)."""
    if len(url) > MAX_URL:
        raise Refused(TOO_LONG)
    url = url.strip()
    if not url.lower().startswith("https://"):
        raise Refused(NOT_HTTPS)
    if any(c <= " " or c == "\x7f" or c == "\\" for c in url):
        raise Refused(BAD_CHARACTERS)
    try:
        parts = urlsplit(url)
        port = parts.port or 443
        host = parts.hostname or ""
    except ValueError:
        raise Refused(NOT_A_URL) from None
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise Refused(USERINFO)
    host = _ascii_host(host)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if not path.isascii():
        raise Refused(BAD_CHARACTERS)
    allowed = f"{host}:{port}" in set(config.get("WEBHOOK_ALLOW_HOSTS") or ())
    if not allowed and port not in set(config.get("WEBHOOK_PORTS") or (443,)):
        raise Refused(BAD_PORT)
    kept = url.split("#", 1)[0]
    return Checked(kept, host, port, path, allowed)


def _ascii_host(host: str) -> str:
    host = host.rstrip(".").lower()
    if not host:
        raise Refused(NO_HOST)
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    try:
        return host if host.isascii() and "xn--" not in host else idna.encode(
            host, uts46=True).decode("ascii")
    except idna.IDNAError:
        raise Refused(NOT_A_URL) from None


_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def is_public(address: str) -> bool:
    """Whether ``address`` (an IP address) is one this server may post to: global, and
    none of private, loopback, link-local, multicast, reserved, unspecified, shared
    (CGNAT); an IPv6 address that carries an IPv4 one (mapped, 6to4, Teredo, NAT64)
    must be public on both counts."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if (not ip.is_global or ip.is_private or ip.is_loopback or ip.is_link_local
            or ip.is_multicast or ip.is_reserved or ip.is_unspecified):
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        inner = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
        if ip in _NAT64:
            inner.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        return all(v4 is None or is_public(str(v4)) for v4 in inner)
    return not ip.is_private and ip not in ipaddress.ip_network("100.64.0.0/10")


def resolve(checked: Checked) -> list[str]:
    """The host's addresses, each checked: all public (else ``Refused``), or the host is
    one of ``WEBHOOK_ALLOW_HOSTS``."""
    try:
        found = socket.getaddrinfo(checked.host, checked.port, type=socket.SOCK_STREAM,
                                   proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        raise Refused(UNKNOWN_HOST) from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
    if not addresses:
        raise Refused(UNKNOWN_HOST)
    if not checked.allowed and not all(is_public(a) for a in addresses):
        raise Refused(PRIVATE_HOST)
    return addresses


def check(url: str, config: Mapping[str, Any]) -> Checked:
    """Every check of a webhook URL, its host looked up (when it is saved)."""
    checked = check_url(url, config)
    resolve(checked)
    return checked


def guess_kind(url: str) -> str:
    """The kind of chat a webhook URL is for, from its host (``json`` when unknown)."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
    except ValueError:
        return "json"
    if host in ("discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com") \
            and parts.path.startswith("/api/webhooks/"):
        return "discord"
    if host == "hooks.slack.com":
        return "slack"
    return "json"


def shown_url(url: str) -> str:
    """A webhook's URL as the host page shows it: the host and the start of the path (a
    chat's URL holds its secret token)."""
    parts = urlsplit(url)
    path = parts.path
    return f"{parts.netloc}{path[:16]}…" if len(path) > 16 else f"{parts.netloc}{path}"


# --------------------------------------------------------------------------- posting


def post(url: str, body: bytes, config: Mapping[str, Any]) -> int:
    """POST ``body`` (JSON) to ``url``, checked again, at an address that was checked;
    the answer's status (2xx), else ``ChannelError``."""
    try:
        checked = check_url(url, config)
        addresses = resolve(checked)
    except Refused as exc:
        raise ChannelError(f"refused: {exc.message}",
                           gone=exc.message != UNKNOWN_HOST) from None
    deadline = time.monotonic() + float(config.get("WEBHOOK_TIMEOUT", 3.0))
    sock = _connect(addresses, checked.port, deadline)
    try:
        context = _tls_context(config)
        sock.settimeout(_left(deadline))
        try:
            tls = context.wrap_socket(sock, server_hostname=checked.host)
        except ssl.SSLError as exc:
            raise ChannelError(f"tls: {exc.reason or exc}") from None
        except TimeoutError:
            raise ChannelError("timeout") from None
        except OSError as exc:
            raise ChannelError(f"connect: {exc.strerror or exc}") from None
        with tls:
            status = _exchange(tls, checked, body, deadline)
    finally:
        sock.close()
    if 200 <= status < 300:
        return status
    if 300 <= status < 400:
        raise ChannelError(f"redirect: {status}", gone=True)
    if status in (401, 403, 404, 410):  # the webhook was deleted, or never was one
        raise ChannelError(f"status: {status}", gone=True)
    raise ChannelError(f"status: {status}", permanent=400 <= status < 500 and status != 429)


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise ChannelError("timeout")
    return left


def _connect(addresses: Sequence[str], port: int, deadline: float) -> socket.socket:
    error = "no address"
    for address in addresses:
        try:
            return socket.create_connection((address, port), timeout=_left(deadline))
        except TimeoutError:
            error = "timeout"
        except OSError as exc:
            error = f"connect: {exc.strerror or exc}"
    raise ChannelError(error)


def _tls_context(config: Mapping[str, Any]) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=config.get("WEBHOOK_CA_FILE") or None)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def _exchange(tls: ssl.SSLSocket, checked: Checked, body: bytes, deadline: float) -> int:
    """Send the request and read the answer's status line (and at most
    ``RESPONSE_LIMIT`` bytes), all before ``deadline``."""
    head = (f"POST {checked.target} HTTP/1.1\r\nHost: {checked.host_header}\r\n"
            "User-Agent: pbem-webhook\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nAccept: */*\r\nConnection: close\r\n\r\n")
    got = b""
    try:
        tls.settimeout(_left(deadline))
        tls.sendall(head.encode("ascii") + body)
        while b"\r\n" not in got and len(got) < RESPONSE_LIMIT:
            tls.settimeout(_left(deadline))
            chunk = tls.recv(RESPONSE_LIMIT - len(got))
            if not chunk:
                break
            got += chunk
    except TimeoutError:
        raise ChannelError("timeout") from None
    except ssl.SSLError as exc:
        raise ChannelError(f"tls: {exc.reason or exc}") from None
    except OSError as exc:
        raise ChannelError(f"connect: {exc.strerror or exc}") from None
    line = got.split(b"\r\n", 1)[0]
    parts = line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise ChannelError("answer: not HTTP")
    return int(parts[1])


# --------------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class Message:
    """What a chat is told: a sentence, the game's name, its public page; ``kind`` of
    news (turn, notice, started, result, talk, test) and a turn's deadline (ISO)."""

    text: str
    game: str
    url: str
    kind: str
    deadline: str | None = None
    html: str | None = None


def payload(hook_kind: str, m: Message) -> dict[str, Any]:
    """The JSON a chat of ``hook_kind`` takes for ``m``. Nobody is pinged by a name a
    player typed: Discord's mentions are off, Slack's control characters escaped."""
    if hook_kind == "discord":
        return {"content": f"**{_discord(m.game)}** · {_discord(m.text)}\n<{m.url}>"[:2000],
                "allowed_mentions": {"parse": []}}
    if hook_kind == "slack":
        return {"text": f"*{_slack(m.game)}* · {_slack(m.text)}\n{m.url}"}
    if hook_kind == "matrix":
        return {"text": f"{m.game} · {m.text}\n{m.url}",
                "html": f"<b>{escape(m.game)}</b> · {m.html or escape(m.text)}<br>"
                        f'<a href="{escape(m.url)}">{escape(m.url)}</a>'}
    return {"text": m.text, "game": m.game, "kind": m.kind, "deadline": m.deadline,
            "url": m.url}


def _discord(text: str) -> str:
    return "".join("\\" + c if c in "\\*_~`|>#[]()<@:" else c for c in text)


def _slack(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _when(hook_kind: str, deadline: Any, tz: str) -> str:
    """A deadline as a chat shows it: Discord and Slack write it in each reader's own
    zone; elsewhere it is the host's zone, named."""
    stamp = int(deadline.timestamp())
    local = short_time(deadline, tz)
    if hook_kind == "discord":
        return f"<t:{stamp}:f>"
    if hook_kind == "slack":
        return f"<!date^{stamp}^{{date_short_pretty}} {{time}}|{local} ({tz})>"
    return f"{local} ({tz})"


def compose(s: Session, notice: Notice, game: Game, hook: Webhook) -> Message | None:
    """The message of ``notice`` for ``hook``, in the host's language (None: nothing the
    table may hear of)."""
    seats = list(s.exec(select(Seat).where(Seat.game_id == game.id)
                        .order_by(col(Seat.position))))
    names = [x.name for x in seats]
    host = seats[0]
    base = current_app.config["BASE_URL"].rstrip("/")
    url = f"{base}/watch/{game.spectator_key}"
    title = game.title or default_title(_engine(game), names)
    ctx: dict[str, Any] = {"game": game, "names": names, "what": None}
    deadline = None
    headline = notice.context.get("headline")
    with force_locale(host.language):
        if notice.template == EmailTemplate.DECISION:
            decision = s.get(Decision, notice.context.get("decision_id"))
            if decision is None or decision.deadline_at is None:
                return None
            deadline = decision.deadline_at
            ctx.update(what="turn", who=names[decision.position], kind=decision.kind,
                       when=_when(hook.kind, deadline, host.timezone))
        elif notice.template == EmailTemplate.GAME_STARTED:
            ctx.update(what="started")
        elif notice.template == EmailTemplate.RESULT:
            ctx.update(what="result", winners=(notice.context.get("result") or {})
                       .get("winners") or [])
        elif headline == TEST:
            ctx.update(what="test")
        elif headline == TALK_EVENT:
            event = _event(s, game, TALK_EVENT, notice.context.get("event_seq"), exact=True)
            if event is None:
                return None
            ctx.update(what="talk", who=names[event.actor] if event.actor is not None
                       else "", text=str((event.data or {}).get("text", "")))
        elif notice.template == EmailTemplate.NOTICE and headline:
            event = _event(s, game, headline, notice.context.get("event_seq"))
            if event is None:
                return None
            ctx.update(what="notice", event=event, card=_card(game))
        else:
            return None
        text = " ".join(render_template("webhooks/message.txt", **ctx).split())
    if not text:
        return None
    return Message(text, title, url, str(ctx["what"]),
                   deadline.isoformat() if deadline is not None else None)


def _engine(game: Game) -> Any:
    from engine.registry import get_game

    return get_game(game.engine)


def _card(game: Game) -> Any:
    """The game's printed names in the language spoken (its narration names cards)."""
    if not game.state:
        return None
    from pbem import localize
    from pbem.i18n import language

    mod = _engine(game)
    state = mod.from_json(json.loads(game.state))
    return localize.lookup(mod, state, localize.translation_for(mod, state, language()))


def _event(s: Session, game: Game, kind: str, seq: Any, exact: bool = False) -> Any:
    """The latest event of ``kind`` up to ``seq`` (exactly at it) that every spectator
    may read (None: none)."""
    if not isinstance(seq, int):
        return None
    query = select(EventLog).where(EventLog.game_id == game.id, EventLog.kind == kind,
                                   EventLog.seq == seq if exact else EventLog.seq <= seq)
    for event in s.exec(query.order_by(col(EventLog.seq).desc()).limit(5)):
        if event.visible_to is None or kind == TALK_EVENT:  # talk: the host's choice
            return event
    return None


# --------------------------------------------------------------------------- the channel


@dataclass(frozen=True, slots=True)
class Outgoing:
    url: str
    body: bytes


# A game's live webhooks, asked in every move's transaction: built once (SQLAlchemy keys
# a statement object once; one built per call cost as much again as running it).
_HOOKS = table_of(Webhook)
_LIVE_HOOKS = (sa_select(_HOOKS.c.id, _HOOKS.c.mirror_talk)
               .where(_HOOKS.c.game_id == bindparam("game_id"), _HOOKS.c.stopped_at.is_(None)))


class WebhookChannel:
    """The chat webhooks of a game's table (``Webhook`` rows)."""

    name = "webhook"
    target_model = Webhook

    def targets(self, s: Session, game: Game, seats: Sequence[Seat],
                template: EmailTemplate, context: Mapping[str, Any]) -> list[Target]:
        headline = context.get("headline")
        if template == EmailTemplate.NOTICE:
            if not headline or headline in PRIVATE:
                return []
            if headline == TALK_EVENT and seats:  # a listener's own copy of the talk
                return []
        elif template == EmailTemplate.DECISION:
            if context.get("reminder"):
                return []
        elif template not in (EmailTemplate.GAME_STARTED, EmailTemplate.RESULT):
            return []
        hooks = s.connection().execute(_LIVE_HOOKS, {"game_id": game.id}).all()
        if headline == TALK_EVENT:
            hooks = [h for h in hooks if h.mirror_talk]
        if template == EmailTemplate.DECISION:  # one a seat: "Ann's turn", "Bob's turn"
            return [Target(h.id, seat) for h in hooks for seat in seats]
        return [Target(h.id, None) for h in hooks]

    def prepare(self, s: Session, notice: Notice, game: Game | None,
                seat: Seat | None) -> Skip | Later | Send:
        hook = s.get(Webhook, notice.target_id)
        if hook is None or game is None:
            return Skip(mark("the webhook was removed"))
        grace = float(current_app.config.get("TAKEBACK_GRACE_SECONDS", 0) or 0)
        if notice.context.get("grace") and grace:  # as the email: the move may be taken back
            until = notice.created_at + timedelta(seconds=grace)
            if utcnow() < until:
                return Later(until)
        message = compose(s, notice, game, hook)
        if message is None:
            return Skip(mark("nothing in it that the table may read"))
        body = json.dumps(payload(hook.kind, message), ensure_ascii=False).encode("utf-8")
        return Send(Outgoing(hook.url, body))

    def send(self, notice: Notice, payload: Any) -> None:
        post(payload.url, payload.body, current_app.config)

    def stopped(self, s: Session, target_id: int, error: str) -> None:
        log.warning("webhook %s stopped: %s", target_id, error)
        hook = s.get(Webhook, target_id)
        if hook is not None and hook.mirror_talk:  # the talk box no longer says so
            move_page(s, hook.game_id)


CHANNEL = WebhookChannel()
