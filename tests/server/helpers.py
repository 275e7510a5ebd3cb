"""Helpers for the server tests: reading emails and forms, DB snapshots, playing a game.

Nothing here is a fixture; conftest.py builds fixtures from these pieces.
"""

from __future__ import annotations

import email
import email.policy
import html as html_lib
import json
import random
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import parseaddr
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select as sa_select
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlmodel import select

from engine.core import Action, format_action
from engine.registry import get_game
from pbem import clock, mail, services
from pbem.db import get_engine, is_postgres, session_scope
from pbem.models import Decision, Game, Outbox, Seat, Token, metadata
from pbem.tokens import form_signature, hash_token

BASE_URL = "http://pbem.test"
MAIL_FROM = "pbem <games@pbem.test>"
SECRET = "test-secret-key"
LINK_RE = re.compile(r"https?://[^\s<>\"']+")
TOKEN_IN_URL_RE = re.compile(
    r"/(?:a|g|admin|invite|host/confirm|handover|u|my)/([A-Za-z0-9_-]{43})\b")

# --------------------------------------------------------------------------- emails


@dataclass
class Mail:
    """One email as the recipient's mail program reads it (parsed from its bytes)."""

    msg: EmailMessage

    @classmethod
    def parse(cls, raw: bytes) -> Mail:
        return cls(email.message_from_bytes(raw, policy=email.policy.default))

    @property
    def to_addr(self) -> str:
        return parseaddr(str(self.msg["To"]))[1]

    @property
    def subject(self) -> str:
        return str(self.msg["Subject"])

    @property
    def message_id(self) -> str:
        return str(self.msg["Message-ID"])

    @property
    def template(self) -> str:
        """The template name, read from the Message-ID (``<pbem.<template>.…@host>``)."""
        return self.message_id.strip("<>").split(".")[1]

    @property
    def decision_id(self) -> int | None:
        m = re.match(r"<pbem\.decision\.(\d+)\.", self.message_id)
        return int(m.group(1)) if m else None

    @property
    def text(self) -> str:
        return self.msg.get_body(("plain",)).get_content().replace("\r\n", "\n")

    @property
    def html(self) -> str:
        return self.msg.get_body(("html",)).get_content().replace("\r\n", "\n")

    @property
    def headline(self) -> str:
        """The first line of the text, which mail programs show as the preview."""
        return self.text.split("\n", 1)[0]

    def text_links(self) -> list[str]:
        return LINK_RE.findall(self.text)

    def token_links(self) -> list[str]:
        """The links of the text part that carry a token of their own (all but the rules
        page, and the game page's calendar file, which is that page's token again)."""
        return [u for u in self.text_links() if "/rules/" not in u
                and not u.endswith("/deadline.ics")]

    def html_links(self) -> list[str]:
        """The links of the HTML part but those into the rules' glossary (each term of
        an HTML board links to its entry; the text part names the rules page once)."""
        return [href for href in HrefParser.hrefs(self.html)
                if href.startswith("http") and not re.search(r"/rules/[^#]*#", href)]

    def under(self, prefix: str) -> list[str]:
        """The text part's links whose path starts with ``prefix``, on any server (a game
        page's calendar file, ``<page>/deadline.ics``, is not another page)."""
        return [u for u in self.text_links() if urlsplit(u).path.startswith(prefix)
                and not u.endswith("/deadline.ics")]

    def link(self, prefix: str) -> str:
        """The one link in the text part under ``BASE_URL + prefix``."""
        found = [u for u in self.under(prefix) if u.startswith(BASE_URL)]
        assert len(found) == 1, f"expected one {prefix} link, found {found}\n{self.text}"
        return found[0]

    @property
    def unsubscribe_token(self) -> str:
        """The token of the List-Unsubscribe link (also the footer's last link)."""
        return str(self.msg["List-Unsubscribe"]).strip("<>").rsplit("/", 1)[1]

    def action_links(self) -> list[str]:
        return [u for u in self.text_links() if "/a/" in u]


class Inbox:
    """The mails the app sent through its memory backend, re-parsed from their bytes.

    Web requests only queue mail and the clock delivers it; reading the inbox first runs
    the clock's delivery pass, as if the clock had woken up in between. Each message is
    parsed once: a whole game sends hundreds, and tests read them all after every move."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self._parsed: dict[int, tuple[Any, Mail]] = {}  # id -> (sent message, parsed)

    def _parse(self, sent) -> Mail:
        hit = self._parsed.get(id(sent))
        if hit is None or hit[0] is not sent:
            hit = self._parsed[id(sent)] = (sent, Mail.parse(sent.data))
        return hit[1]

    @property
    def backend(self):
        return self.app.extensions["pbem.mail"]

    def deliver(self) -> dict[str, int]:
        with self.app.app_context():
            return mail.deliver_due(limit=1000)

    def all(self) -> list[Mail]:
        self.deliver()
        return [self._parse(m) for m in self.backend.sent]

    def raw(self) -> list[bytes]:
        self.deliver()
        return [m.data for m in self.backend.sent]

    def to(self, addr: str, template: str | None = None) -> list[Mail]:
        return [m for m in self.all()
                if m.to_addr == addr and (template is None or m.template == template)]

    def of(self, template: str) -> list[Mail]:
        return [m for m in self.all() if m.template == template]

    def for_decision(self, decision_id: int) -> Mail:
        found = [m for m in self.all() if m.decision_id == decision_id]
        assert len(found) == 1, f"expected one email for decision {decision_id}: {found}"
        return found[0]

    def clear(self) -> None:
        """Read and throw away everything sent so far (queued mail included)."""
        self.deliver()
        self.backend.sent.clear()


def path_of(url: str) -> str:
    assert url.startswith(BASE_URL), url
    return url[len(BASE_URL):]


def token_of(url: str) -> str:
    m = TOKEN_IN_URL_RE.search(url)
    assert m, url
    return m.group(1)


# --------------------------------------------------------------------------- redirects


def local_location(resp) -> str:
    """The Location of a ``303 See Other``, checked to be a path of this site (no scheme,
    no host, no ``//``), as every POST that changed something answers (Post/Redirect/Get)."""
    assert resp.status_code == 303, (resp.status_code, resp.get_data(as_text=True)[:2000])
    location = resp.headers["Location"]
    parts = urlsplit(location)
    assert location.startswith("/") and not location.startswith("//") \
        and not parts.scheme and not parts.netloc and "\\" not in location, location
    return location


def see_other(client, resp):
    """The page a browser shows after a POST's answer: the POST must have answered 303
    with a Location on this site, and that page is asked for with a GET (what a reload
    asks for again)."""
    return client.get(local_location(resp))


class BrowserClient(FlaskClient):
    """The tests' client (``app.test_client()``): after a POST it goes where the answer
    sends it, as a browser does (Post/Redirect/Get), unless the test asks for the POST's
    own answer (``follow_redirects=False``); every redirect on the way must be a ``303``
    to a page of this site (``local_location``). ``resp.history`` keeps the POST's
    answer."""

    def open(self, *args: Any, **kwargs: Any) -> Any:
        posted = str(kwargs.get("method", "")).upper() == "POST"
        if posted:
            kwargs.setdefault("follow_redirects", True)
        resp = super().open(*args, **kwargs)
        for step in getattr(resp, "history", ()):
            local_location(step)
        return resp


# --------------------------------------------------------------------------- HTML


class HrefParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a" and dict(attrs).get("href"):
            self.found.append(dict(attrs)["href"])

    @classmethod
    def hrefs(cls, html: str) -> list[str]:
        p = cls()
        p.feed(html)
        return p.found


@dataclass
class Form:
    """A form as a browser sees it: where it posts, its hidden values and its choices."""

    action: str | None
    method: str
    attrs: dict[str, str]
    hidden: dict[str, str] = field(default_factory=dict)
    radios: dict[str, list[str]] = field(default_factory=dict)
    checkboxes: dict[str, list[str]] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)
    selects: dict[str, list[str]] = field(default_factory=dict)
    checked: dict[str, str] = field(default_factory=dict)  # radios checked in the page

    def data(self, **extra: Any) -> dict[str, Any]:
        """What pressing its button sends: hidden fields, checked radios, plus ``extra``."""
        return {**self.hidden, **self.checked, **extra}


class FormParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[Form] = []
        self._select: str | None = None

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append(Form(a.get("action"), a.get("method", "get").lower(), a))
        elif not self.forms:
            return
        form = self.forms[-1]
        if tag == "input":
            kind, name, value = a.get("type", "text"), a.get("name"), a.get("value", "")
            if kind == "hidden":
                form.hidden[name] = value
            elif kind == "radio":
                form.radios.setdefault(name, []).append(value)
                if "checked" in a:
                    form.checked[name] = value
            elif kind == "checkbox":
                form.checkboxes.setdefault(name, []).append(value)
            elif name:
                form.inputs[name] = value
        elif tag == "select":
            self._select = a.get("name")
            form.selects[self._select] = []
        elif tag == "option" and self._select:
            form.selects[self._select].append(a.get("value", ""))

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None


def forms(html: str, switch: bool = False) -> list[Form]:
    """The page's forms; the header's language switch only with ``switch``."""
    p = FormParser()
    p.feed(html)
    return [f for f in p.forms if switch or f.attrs.get("id") != "language-switch"]


def only_form(html: str) -> Form:
    """The page's one form (the header's language switch aside)."""
    found = forms(html)
    assert len(found) == 1, f"expected one form, found {len(found)}"
    return found[0]


def text_of(html: str, element_id: str) -> str | None:
    """The text of the element with ``id`` as a reader sees it: tags stripped, entities
    decoded, blanks collapsed."""
    m = re.search(rf'<(\w+)[^>]*\bid="{re.escape(element_id)}"[^>]*>(.*?)</\1>', html, re.S)
    if not m:
        return None
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", m.group(2))).split())


# --------------------------------------------------------------------------- database


def snapshot(app: Flask) -> dict[str, list[tuple]]:
    """Every row of every table, in primary-key order: equal snapshots, unchanged DB."""
    out = {}
    with get_engine(app).connect() as conn:
        for table in metadata.sorted_tables:
            query = sa_select(table).order_by(*table.primary_key.columns)
            out[table.name] = [tuple(row) for row in conn.execute(query)]
    return out


def all_stored_text(app: Flask) -> str:
    """Every value in the database as one string (to look for leaked secrets)."""
    return json.dumps(snapshot(app), default=str)


def open_decisions(app: Flask, game_id: str) -> list[Decision]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Decision).where(Decision.game_id == game_id,
                                                  Decision.closed_at.is_(None))
                           .order_by(Decision.id)))


def outbox(app: Flask, *where) -> list[Outbox]:
    """The outbox rows (matching ``where``), oldest first."""
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Outbox).where(*where).order_by(Outbox.id)))


def load(app: Flask, model, key):
    with app.app_context(), session_scope() as s:
        return s.get(model, key)


def game_state(app: Flask, game_id: str):
    game = load(app, Game, game_id)
    mod = get_game(game.engine)
    return mod, mod.from_json(json.loads(game.state))


def seats_of(app: Flask, game_id: str) -> list[Seat]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Seat).where(Seat.game_id == game_id)
                           .order_by(Seat.position)))


def token_row(app: Flask, raw: str) -> Token | None:
    """The stored row of a link token (found by its hash, the only thing stored)."""
    return load(app, Token, hash_token(raw))


# --------------------------------------------------------------------------- playing


PLAYERS = [
    services.PlayerIn("Ann", "ann@example.com", "en", "Europe/Berlin"),
    services.PlayerIn("Bob", "bob@example.com", "en", "America/New_York"),
    services.PlayerIn("Cy", "cy@example.com", "en", "Asia/Tokyo"),
]


def page_form_data(action: Action, decision_kind: str,
                   form: Form | None = None) -> dict[str, Any]:
    """The fields the full decision form on the game page sends for ``action``, as a
    person filling it in would set them (``form``: the form, where its shape matters)."""
    if decision_kind == "discard":
        return {"kind": "discard", "discard.cards": list(action.get("cards"))}
    if action.kind == "bid":
        return {"choice": "bid", "bid.amount": str(action.get("amount"))}
    if form is None or format_action(action) in form.radios.get("choice", []):
        return {"choice": format_action(action)}
    if action.kind == "place":  # Stone Age: a place and a number of people
        return {"kind": "place", "place.word": [action.get("at"), str(action.get("count"))]}
    if action.kind == "tools":
        return {"choice": "tools", "tools.word": list(action.get("use", ()))}
    if action.kind == "order":  # Stone Age, many orders: a place for each position
        return {"kind": "order", "order.word": list(action.get("places"))}
    if action.kind in ("take", "build", "feed"):
        pay = list(action.get("pay"))
        return {"choice": action.kind,
                **{f"{action.kind}.count.{r}": str(pay.count(r)) for r in set(pay)}}
    return {"choice": format_action(action)}


def clock_plays_bots(app: Flask, game_id: str, most: int = 5000) -> int:
    """The clock's sweeps, each at the due time of the game's earliest open decision
    that a bot plays (the end of its pause), while the game runs and has one; how many
    bot moves they played (a game every seat of which is on a bot: to its end)."""
    played = 0
    for _ in range(most):
        with app.app_context(), session_scope() as s:
            due = s.exec(select(Decision.deadline_at)
                         .join(Seat, Seat.id == Decision.seat_id)
                         .join(Game, Game.id == Decision.game_id)
                         .where(Decision.game_id == game_id, Decision.closed_at.is_(None),
                                Seat.bot.is_not(None), Game.status == "active",
                                Game.paused_at.is_(None))
                         .order_by(Decision.deadline_at)).first()
        if due is None:
            return played
        due = due if due.tzinfo else due.replace(tzinfo=UTC)
        result = clock.sweep(app, now=max(due, datetime.now(UTC)))
        assert result["errors"] == 0 and result["bots"] >= 1, result
        played += result["bots"]
    raise AssertionError(f"the bots still play after {most} sweeps")


class Table:
    """A started game driven through the Flask test client, as its players would."""

    def __init__(self, app: Flask, client, inbox: Inbox, game_id: str, admin: str,
                 bot_seed: int = 0) -> None:
        self.app, self.client, self.inbox = app, client, inbox
        self.game_id, self.admin = game_id, admin
        self.rng = random.Random(bot_seed)
        self.seats = seats_of(app, game_id)

    def open(self) -> Decision:
        (decision,) = open_decisions(self.app, self.game_id)[:1]
        return decision

    def state(self):
        return game_state(self.app, self.game_id)[1]

    def bot_choice(self, decision: Decision) -> Action:
        """The game's own heuristic bot's choice for the decision."""
        mod, state = game_state(self.app, self.game_id)
        return mod.BOTS["heuristic"](state, decision.position, self.rng)

    def mail(self, decision: Decision) -> Mail:
        return self.inbox.for_decision(decision.id)

    def one_click(self, decision: Decision) -> dict[str, Action]:
        """The decision email's one-click links and the action each is bound to."""
        out = {}
        for url in self.mail(decision).action_links():
            out[url] = Action.from_json(token_row(self.app, token_of(url)).action)
        return out

    def page_link(self, decision: Decision) -> str:
        """The game page link of the decision's email, or (a decision shown at once on
        the page of the player's previous move has no email) of their latest email."""
        mine = [m for m in self.inbox.all() if m.decision_id == decision.id]
        if not mine:
            email = self.seats[decision.position].email
            mine = [m for m in self.inbox.all() if m.to_addr == email
                    and any(u.startswith(BASE_URL + "/g/") for u in m.text_links())]
        return mine[-1].link("/g/")

    def play_on_page(self, decision: Decision, action: Action):
        """Submit ``action`` through the game page form (sig computed like the page does)."""
        page = path_of(self.page_link(decision))
        raw = page.rsplit("/", 1)[1]
        data = {"sig": form_signature(SECRET, raw), "decision_id": str(decision.id),
                **page_form_data(action, decision.kind)}
        resp = see_other(self.client, self.client.post(page, data=data,
                                                       follow_redirects=False))
        assert resp.status_code == 200, resp.get_data(as_text=True)
        return resp

    def step(self) -> Decision:
        """Play the open decision: a person's on the page (the heuristic's choice), a
        bot's by the clock at the end of its pause (``clock_plays``)."""
        decision = self.open()
        if seats_of(self.app, self.game_id)[decision.position].bot:
            self.clock_plays(decision)
        else:
            self.play_on_page(decision, self.bot_choice(decision))
        return decision

    def clock_plays(self, decision: Decision) -> dict[str, int]:
        """The clock's sweep at the due time of a bot's open decision (the end of its
        pause); it must play it."""
        due = decision.deadline_at
        due = due if due.tzinfo else due.replace(tzinfo=UTC)
        result = clock.sweep(self.app, now=max(due, datetime.now(UTC)))
        assert result["errors"] == 0 and result["bots"] >= 1, result
        played = load(self.app, Decision, decision.id)
        assert played.closed_by == "bot", (played.closed_by, result)
        return result

    def play_until(self, predicate, limit: int = 80) -> Decision:
        """Play bot moves until ``predicate(decision, state)`` holds for the open decision."""
        for _ in range(limit):
            decision = self.open()
            if predicate(decision, self.state()):
                return decision
            self.step()
        raise AssertionError(f"no decision matched within {limit} moves")


# --------------------------------------------------------------------------- the web form


def new_game_form(client) -> Form:
    """The new-game form of the home page (GET / also sets the session's CSRF token)."""
    found = [f for f in forms(client.get("/").get_data(as_text=True))
             if f.attrs.get("id") == "new-game"]
    assert len(found) == 1
    return found[0]


def new_game_data(form: Form, players=PLAYERS, **extra: str) -> dict[str, str]:
    data = form.data(hours="48", **extra)
    for i, p in enumerate(players):
        data.update({f"name{i}": p.name, f"email{i}": p.email, f"lang{i}": p.language,
                     f"tz{i}": p.timezone})
    return data


def create_on_web(client, app: Flask, players=PLAYERS, **extra: str) -> Mail:
    """Fill in and send the home page form as a host would; returns the host's email."""
    resp = see_other(client, client.post("/new", data=new_game_data(new_game_form(client),
                                                                    players, **extra),
                                         follow_redirects=False))
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert "Check your email" in resp.get_data(as_text=True)
    return Inbox(app).to(players[0].email, "host_confirm")[-1]


# --------------------------------------------------------------------------- servers


@contextmanager
def holding_game(app: Flask, game_id: str) -> Iterator[Connection]:
    """Another writer holding a game, as a request in the middle of a move would: on
    SQLite the database's write lock (a ``BEGIN IMMEDIATE``), on PostgreSQL the game's
    row (``FOR UPDATE``). Let go at the end, or earlier by ``rollback()`` of the
    connection it yields."""
    with app.app_context():
        conn = get_engine(app).connect()
    try:
        conn.begin()  # BEGIN IMMEDIATE on SQLite: the write lock, held
        if is_postgres(app):
            conn.execute(text("SELECT id FROM game WHERE id = :id FOR UPDATE"),
                         {"id": game_id})
        yield conn
    finally:
        conn.rollback()
        conn.close()


def poll_until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    """Wait for ``condition`` (a real signal: a file's lines, a count of emails) to hold,
    looking every 20 ms, at most ``seconds``; fail naming ``what`` was awaited."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"waited {seconds} s in vain for: {what}"
        time.sleep(0.02)


def wait_for(base: str, server: subprocess.Popen, errors: Path) -> None:
    """Wait until the server at ``base`` answers its health check (60 s at most; a server
    that exits fails with its error log)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            requests.get(base + "/healthz", timeout=2)
            return
        except requests.ConnectionError:
            assert time.monotonic() < deadline and server.poll() is None, errors.read_text()
            time.sleep(0.1)
