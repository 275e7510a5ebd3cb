"""Every page and every email of both games, built through the real services and links,
then checked in Chromium at 390 and 1280 px: no horizontal overflow, no axe-core violation
of impact serious or critical; full-page screenshots on request.

``SCENES`` is the list of what is looked at, in the order of a game's story: each entry
names a scene and says how to bring it onto the screen (open a link from an email, press
a button, show an email's HTML part). An entry without a name is a step of the story that
is not looked at. ``Story`` plays that list for one game in one language; ``check`` looks
at whatever is on the screen.
"""

from __future__ import annotations

import email
import email.policy
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from playwright.sync_api import Page
from sqlmodel import select

from pbem import mail, services
from pbem.db import session_scope
from pbem.models import Decision, Game, Outbox, Seat, Token, utcnow
from pbem.services import allowance
from pbem.tokens import hash_token
from tests.server.helpers import clock_plays_bots

HERE = Path(__file__).resolve().parent
AXE = HERE / "node_modules" / "axe-core" / "axe.min.js"
SCREENS = HERE / "screens"
TEMPLATES = HERE.parent.parent / "templates"
WIDTHS = (390, 1280)
HEIGHT = 900
AXE_WIDTH = 390  # axe runs once per scene, at the phone width
FAILING_IMPACTS = ("serious", "critical")
GAMES = ("cavemen", "stoneage")
LANGUAGES = ("en", "de")
LOCALES = {"en": "en-GB", "de": "de-DE"}
CAST = {"en": ["Ann", "Bob", "Cy", "Dee", "Eve"],
        "de": ["Anna", "Bernd", "Carla", "Dieter", "Erika"]}
TITLE = {"en": "Friday evening", "de": "Freitagabend"}
MAIL_WAIT = 10  # seconds an email queued may take to reach the dev mailbox
LINK_RE = re.compile(r"https?://[^\s<>\"')]+")


def screenshots_wanted() -> bool:
    return os.environ.get("PBEM_SCREENS") == "1"


# --------------------------------------------------------------------------- the checks

OVERFLOW_JS = """() => {
  const vw = window.innerWidth;
  const sw = document.documentElement.scrollWidth;
  if (sw <= vw + 1) return null;
  const name = el => {
    let s = el.tagName.toLowerCase();
    if (el.id) return s + '#' + el.id;
    const cls = [...el.classList].slice(0, 2);
    return s + (cls.length ? '.' + cls.join('.') : '');
  };
  const path = el => {
    const parts = [];
    for (let e = el; e && e !== document.body && parts.length < 4; e = e.parentElement) {
      parts.unshift(name(e));
      if (e.id) break;
    }
    return parts.join(' > ');
  };
  const clippedBy = el => {  // inside a scroll box or a clipping box that itself fits
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (o !== 'visible') return a.getBoundingClientRect().right <= vw + 1;
    }
    return false;
  };
  const over = new Map();
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    let right = r.right;
    const style = getComputedStyle(el);
    if (style.overflowX === 'visible' && el.scrollWidth > el.clientWidth + 1
        && el.clientWidth > 0) {
      right = Math.max(right, r.left + el.scrollWidth);  // text sticking out of its box
    }
    if (right > vw + 1 && !clippedBy(el)) over.set(el, right);
  }
  const culprits = [...over].filter(([el, right]) =>
    ![...el.children].some(c => over.has(c) && over.get(c) >= right - 1));
  culprits.sort((a, b) => b[1] - a[1]);
  return {width: vw, scrollWidth: sw, culprits: culprits.slice(0, 5).map(([el, right]) => ({
    selector: path(el), right: Math.round(right),
    text: (el.innerText || el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 60)}))};
}"""

AXE_JS = """async () => {
  const r = await axe.run(document, {resultTypes: ['violations'], iframes: false});
  return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(' '),
      summary: (n.failureSummary || '').split('\\n').slice(1, 2).join(' ').trim(),
      html: n.html.slice(0, 120)}))}));
}"""


def overflow(page: Page) -> str | None:
    """What sticks out of the viewport sideways, or None."""
    found = page.evaluate(OVERFLOW_JS)
    if found is None:
        return None
    culprits = "; ".join(f"{c['selector']} (right edge {c['right']}px) {c['text']!r}"
                         for c in found["culprits"]) or "no single element found"
    return (f"horizontal overflow at {found['width']}px: the page is "
            f"{found['scrollWidth']}px wide; widest: {culprits}")


def axe_violations(page: Page) -> list[str]:
    """axe-core's serious and critical violations on the page, one line each."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        return [f"axe-core is not loaded in the page (missing {AXE}?)"]
    out = []
    for v in page.evaluate(AXE_JS):
        if v["impact"] not in FAILING_IMPACTS:
            continue
        nodes = v["nodes"]
        where = "; ".join(f"{n['target']}" + (f" ({n['summary']})" if n["summary"] else "")
                          for n in nodes[:4])
        more = f" and {len(nodes) - 4} more" if len(nodes) > 4 else ""
        out.append(f"axe {v['id']} ({v['impact']}): {v['help']}: {len(nodes)} element(s): "
                   f"{where}{more}")
    return out


def settle(page: Page) -> None:
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => "
                  "requestAnimationFrame(r)))")


def check(page: Page, label: str, screens: Path | None = None) -> list[str]:
    """Check what is on the screen at every width; screenshots to ``screens`` if given."""
    problems = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        settle(page)
        if (found := overflow(page)) is not None:
            problems.append(found)
        if width == AXE_WIDTH:
            problems += axe_violations(page)
        if screens is not None:
            page.screenshot(path=str(screens / f"{label}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
    return problems


# --------------------------------------------------------------------------- the story


class Absent(Exception):
    """An optional page that does not exist (yet)."""


@dataclass
class Scene:
    name: str | None  # None: a step of the story, not looked at
    reach: Callable[[Story], Any]
    once: bool = False  # the same in every game: looked at in the first game only
    optional: bool = False  # may not exist (yet): noted, not a failure
    needs: str | None = None  # an optional scene this one follows from (skipped without)


@dataclass
class Story:
    """One game played in one language, by people whose browser speaks it."""

    page: Page
    app: Any
    base: str
    mailbox: Path
    game: str
    lang: str
    first: bool  # the first game told: game-independent scenes are looked at here
    people: list[tuple[str, str]] = field(default_factory=list)  # (name, address)
    game_id: str = ""
    admin_path: str = ""
    action_path: str = ""  # the one-click link that was used
    status: int | None = None  # HTTP status of what is on the screen
    mail_on_screen: str | None = None  # the template of the email on the screen
    _files: dict[str, str] = field(default_factory=dict)  # .eml name -> Message-ID

    def __post_init__(self) -> None:
        self.people = [(name, f"{name.lower()}.{self.game}.{self.lang}@example.test")
                       for name in CAST[self.lang]]

    def addr(self, i: int) -> str:
        return self.people[i][1]

    # ------------------------------------------------------------------ browsing

    def goto(self, path: str, optional: bool = False) -> None:
        resp = self.page.goto(self.base + path, wait_until="load")
        self.status = resp.status if resp else None
        if optional and self.status == 404:
            raise Absent(path)

    def press(self, form: str = "main form", fill: dict[str, str] | None = None) -> None:
        """Fill fields of ``form`` (``select`` fields by value) and press its button."""
        scope = self.page.locator(form).first
        for name, value in (fill or {}).items():
            field_ = scope.locator(f'[name="{name}"]').first
            if field_.evaluate("e => e.tagName") == "SELECT":
                field_.select_option(value)
            else:
                field_.fill(value)
        with self.page.expect_navigation(wait_until="load") as nav:
            scope.locator("button[type=submit]").first.click()
        resp = nav.value
        self.status = resp.status if resp else None

    def create_game(self, same_address_twice: bool = False) -> None:
        """The host fills in the home page form (all players in the story's language)."""
        self.goto("/")
        fields = {"title": TITLE[self.lang]}
        for i in range(3):
            name, addr = self.people[i]
            fields |= {f"name{i}": name, f"email{i}": addr, f"lang{i}": self.lang}
        if same_address_twice:
            fields["email1"] = self.addr(0)
        self.page.check(f'input[name=game][value="{self.game}"]')
        if self.game == "stoneage":  # one story with each time control: a time bank here
            self.page.check("#f-time_bank")
        self.press("#new-game", fields)
        if not same_address_twice:
            with self.app.app_context(), session_scope() as s:
                seat = s.exec(select(Seat).where(Seat.email == self.addr(0))).one()
                self.game_id = seat.game_id

    # ------------------------------------------------------------------ emails

    def mail(self, template: str, to: str, reminder: bool = False,
             in_game: bool = True) -> tuple[str, EmailMessage]:
        """The latest email of ``template`` to ``to`` in this game (``in_game=False``: of
        no game), as delivered to the dev mailbox (its file name and the message)."""
        game = Outbox.game_id == self.game_id if in_game else Outbox.game_id.is_(None)
        deadline = time.monotonic() + MAIL_WAIT
        while True:  # the clock's mail thread may be sending it right now
            with self.app.app_context():
                mail.deliver_due(limit=1000)
                with session_scope() as s:
                    rows = s.exec(select(Outbox).where(game, Outbox.template == template,
                                                       Outbox.rcpt == to.lower())
                                  .order_by(Outbox.id.desc())).all()
            rows = [r for r in rows if bool(r.context.get("reminder")) == reminder]
            ids = [r.message_id for r in rows if r.status == "sent"]
            if ids or time.monotonic() > deadline or not any(
                    r.status in ("pending", "sending") for r in rows):
                break
            time.sleep(0.05)
        assert ids, (f"no {template} email{' (reminder)' if reminder else ''} was sent to "
                     f"{to} (outbox: {[r.status for r in rows] or 'nothing'})")
        name = self._file_of(ids[0])
        raw = (self.mailbox / name).read_bytes()
        return name, email.message_from_bytes(raw, policy=email.policy.default)

    def _file_of(self, message_id: str) -> str:
        for path in sorted(self.mailbox.glob("*.eml")):
            if path.name not in self._files:
                msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
                self._files[path.name] = str(msg["Message-ID"])
        found = [n for n, mid in self._files.items() if mid == message_id]
        assert found, f"{message_id} is not in the dev mailbox"
        return found[0]

    def show_mail(self, template: str, to: str, reminder: bool = False,
                  in_game: bool = True) -> None:
        """The email's HTML part on the screen, as a mail program shows it."""
        msg = self.mail(template, to, reminder, in_game)[1]
        html = msg.get_body(("html",))
        assert html is not None, f"the {template} email has no HTML part"
        self.page.goto("about:blank")
        self.page.set_content(html.get_content(), wait_until="load")
        self.status, self.mail_on_screen = None, template

    def reply_by_email(self) -> None:
        """The decider answers their decision email with a move they cannot make (handed
        to the replies service as the inbound receiver would): the server's answer, with
        the commands, on the screen."""
        import json

        from engine.registry import get_game
        from pbem.mail.inbound import reply_message

        decision, addr = self.decider()
        with self.app.app_context(), session_scope() as s:
            game = s.get(Game, self.game_id)
            mod = get_game(game.engine)
            kind = mod.legal_actions(mod.from_json(json.loads(game.state)),
                                     decision.position)[0].kind
        text = f"{kind} <b>everything</b>"
        original = self.mail("decision", addr)[1]
        reply = reply_message(original, text)
        del reply["From"]
        reply["From"] = addr
        with self.app.app_context():
            services.receive_reply(bytes(reply), [str(original["Reply-To"].addresses[0]
                                                      .addr_spec)], addr)
        self.show_mail("reply", addr)

    def show_any_mail(self, template: str) -> None:
        """An email that goes to whoever is in a given position (``game_started`` goes to
        those who do not decide first: in some games that is nobody)."""
        for _, addr in self.people:
            try:
                self.mail(template, addr)
            except AssertionError:
                continue
            return self.show_mail(template, addr)
        raise Absent(f"no {template} email in this game")

    def links(self, template: str, to: str, part: str, in_game: bool = True) -> list[str]:
        """The links of an email's text part whose path starts with ``part``."""
        msg = self.mail(template, to, in_game=in_game)[1]
        text = msg.get_body(("plain",)).get_content()
        found = [u[len(self.base):] for u in LINK_RE.findall(text)
                 if u.startswith(self.base + part)]
        assert found, f"the {template} email to {to} has no {part} link"
        return list(dict.fromkeys(found))

    def follow(self, template: str, to: str, part: str, answer: str | None = None,
               in_game: bool = True) -> str:
        """Open the email's first ``part`` link (with ``answer``: the link that answers so,
        as its stored token says)."""
        paths = self.links(template, to, part, in_game)
        if answer is not None:
            paths = [p for p in paths if self._answer_of(p) == answer]
            assert paths, f"the {template} email to {to} has no {answer!r} link"
        self.goto(paths[0])
        return paths[0]

    def _answer_of(self, path: str) -> str | None:
        with self.app.app_context(), session_scope() as s:
            token = s.get(Token, hash_token(path.rsplit("/", 1)[1]))
            return (token.action or {}).get("answer") if token else None

    # ------------------------------------------------------------------ the game

    def open_decisions(self) -> list[Decision]:
        with self.app.app_context(), session_scope() as s:
            return list(s.exec(select(Decision).where(Decision.game_id == self.game_id,
                                                      Decision.closed_at.is_(None))
                               .order_by(Decision.id)))

    def decider(self) -> tuple[Decision, str]:
        """An open decision whose email has one-click links, and its player's address."""
        for decision in self.open_decisions():
            with self.app.app_context(), session_scope() as s:
                addr = s.get(Seat, decision.seat_id).email
            try:
                self.links("decision", addr, "/a/")
            except AssertionError:
                continue
            return decision, addr
        raise AssertionError("no open decision has an email with one-click links")

    def one_click(self) -> None:
        """Open the first one-click link of a decision email (its confirmation page)."""
        _, addr = self.decider()
        self.action_path = self.follow("decision", addr, "/a/")

    def confirm_move(self) -> None:
        """Press the confirmation page's button (choosing the first number first, when
        the page asks how many)."""
        numbers = self.page.locator("main form input[name=choice]")
        if numbers.count():
            numbers.first.check()
        self.press()

    def remind(self) -> None:
        """The clock's reminder for an open decision, sent at its reminder time."""
        decision, _ = self.decider()
        assert decision.next_reminder_at is not None, "the decision has no reminder"
        with self.app.app_context():
            assert services.send_reminder(decision.id, decision.next_reminder_at)

    def show_reminder(self) -> None:
        decision, addr = self.decider()
        self.show_mail("decision", addr, reminder=True)

    def player_page(self) -> None:
        """The game page of a player who has a decision open (the fullest page)."""
        _, addr = self.decider()
        self.follow("decision", addr, "/g/")

    def plan_page(self) -> None:
        """Stone Age: the game page of a player who waits (the plan box with its rows),
        a standing plan set there: the page again, saying so, with the plan as it
        stands. Another game has no plans."""
        if self.game != "stoneage":
            raise Absent("no standing plans in this game")
        deciding = {d.seat_id for d in self.open_decisions()}
        with self.app.app_context(), session_scope() as s:
            seats = s.exec(select(Seat).where(Seat.game_id == self.game_id)
                           .order_by(Seat.position)).all()
            addr = next(x.email for x in seats if x.id not in deciding and not x.bot)
        self.follow("game_started", addr, "/g/")
        self.page.click("#plan summary")
        self.press("#plan-change", {"plan.at": "forest", "plan.count": "2"})

    def spectator(self) -> None:
        with self.app.app_context(), session_scope() as s:
            key = s.get(Game, self.game_id).spectator_key
        self.goto(f"/watch/{key}")

    def admin(self) -> None:
        if not self.admin_path:
            self.admin_path = self.links("host_confirm", self.addr(0), "/admin/")[0]
        self.goto(self.admin_path)

    def choose_strong_bot(self) -> None:
        """The home form with a strong bot for the second seat: it asks how long such a
        bot thinks."""
        self.goto("/")
        self.page.select_option("select[name=bot1]", "strong")
        self.page.locator("#f-bot_ms").wait_for(state="visible")

    def bots_admin(self, over: bool = False) -> None:
        """The host page of another game: the host, a strong bot and an easy one (its
        options say how long the strong bot thinks, and what the bots' CPU used of the
        day's allowance). ``over``: its bots have used more than the game's allowance
        today (the strong bot thinks at the default budget)."""
        host = services.PlayerIn(self.people[0][0],
                                 f"bots{'.over' if over else ''}.{self.lang}@example.test",
                                 self.lang, "Europe/Berlin")
        bots = [services.PlayerIn("", "", self.lang, bot=level) for level in ("strong", "easy")]
        with self.app.app_context():
            created = services.create_game(self.game, [host, *bots], {"bot_ms": 2500},
                                           title=TITLE[self.lang], confirm_by_email=False,
                                           start=True)
            if over:
                with session_scope() as s:
                    allowance.charge(s.connection(), created.game_id, host.email, 642.7,
                                     utcnow())
        self.goto(f"/admin/{created.admin_token}")

    def control(self, control: str, **fill: str) -> None:
        """Use one of the host's controls on the host page."""
        self.admin()
        self.press(f'form[action$="/{control}"]', fill)

    def unsubscribe_page(self) -> None:
        msg = self.mail("decision", self.decider()[1])[1]
        url = "".join(str(msg["List-Unsubscribe"]).split()).strip("<>")
        assert url.startswith(self.base + "/u/"), f"List-Unsubscribe is {url!r}"
        self.goto(url[len(self.base):])

    def calendar_page(self) -> None:
        """The calendar page of a player who has a decision open."""
        _, addr = self.decider()
        self.calendar_addr = addr
        self.calendar_path = self.follow("decision", addr, "/g/") + "/calendar"
        self.goto(self.calendar_path)

    def calendar_event(self) -> None:
        """Where an event of the feed just made leads (the feed read as an app would)."""
        import urllib.request

        feed = self.page.locator("#feed-url").input_value()
        with urllib.request.urlopen(feed) as resp:  # noqa: S310 - this test's own server
            ics = resp.read().decode()
        found = re.search(r"^URL:(.*(?:\r?\n .*)*)", ics, re.M)
        assert found, ics[:500]
        url = re.sub(r"\r?\n ", "", found.group(1)).strip()
        self.goto(url[len(self.base):])

    def digest(self) -> None:
        """A daily digest: the decider's address chooses one on its settings page, and its
        hour comes (the clock's sweep, a day later)."""
        from pbem.models import Address

        _, addr = self.decider()
        self.unsubscribe_page()
        self.page.locator("#address-settings input[value=digest]").check()
        self.press("#address-settings")
        with self.app.app_context():
            with session_scope() as s:  # its hour has come: 00:00 today, none sent yet
                row = s.get(Address, addr.lower())
                row.digest_hour, row.digest_sent_at = 0, None
            assert services.queue_digests() >= 1
        self.show_mail("digest", addr, in_game=False)

    def mailbox_message(self) -> None:
        name, _ = self.mail("decision", self.decider()[1])
        self.goto(f"/dev/mail/{name}")

    def play_to_the_end(self) -> None:
        """The host puts every seat on the heuristic bot: the game runs to its end."""
        raw = self.admin_path.rsplit("/", 1)[1]
        with self.app.app_context():
            for position in range(3):
                with session_scope() as s:
                    if s.get(Game, self.game_id).status != "active":
                        break
                services.set_bot(raw, position, "heuristic")
        clock_plays_bots(self.app, self.game_id)  # the clock plays them, pause after pause
        with self.app.app_context(), session_scope() as s:
            status = s.get(Game, self.game_id).status
        assert status == "finished", f"the game did not end ({status})"

    def end_page(self) -> None:
        self.follow("result", self.addr(0), "/g/")

    def log_round(self) -> None:
        """An older round of the log as its own page (what a folded round links to)."""
        with self.app.app_context(), session_scope() as s:
            key = s.get(Game, self.game_id).spectator_key
        self.goto(f"/watch/{key}/log/1")


def _new_player(s: Story, i: int) -> dict[str, str]:
    name, addr = s.people[i]
    return {"name": name, "email": addr, "lang": s.lang}


# The story of one game, in order. Adding a page later: one line where it belongs.
SCENES: list[Scene] = [
    Scene("home", lambda s: s.goto("/"), once=True),
    Scene("home-bots", lambda s: s.choose_strong_bot(), once=True),
    Scene("admin-bots", lambda s: s.bots_admin(), once=True),
    Scene("admin-bots-over", lambda s: s.bots_admin(over=True), once=True),
    Scene("home-error", lambda s: s.create_game(same_address_twice=True), once=True),
    Scene("created", lambda s: s.create_game(), once=True),
    Scene("mail-host_confirm", lambda s: s.show_mail("host_confirm", s.addr(0)), once=True),
    Scene("host-confirm", lambda s: s.follow("host_confirm", s.addr(0), "/host/confirm/"),
          once=True),
    Scene("host-confirmed", lambda s: s.press(), once=True),
    Scene("mail-invitation", lambda s: s.show_mail("invitation", s.addr(1)), once=True),
    Scene("invitation", lambda s: s.follow("invitation", s.addr(1), "/invite/", "accept"),
          once=True),
    Scene("invitation-accepted", lambda s: s.press(), once=True),
    Scene("invitation-decline",
          lambda s: s.follow("invitation", s.addr(2), "/invite/", "decline"), once=True),
    Scene("invitation-declined", lambda s: s.press(), once=True),
    Scene("mail-declined", lambda s: s.show_mail("declined", s.addr(0)), once=True),
    Scene("admin-inviting", lambda s: s.admin(), once=True),
    Scene("admin-replaced",
          lambda s: s.press('form[action$="/replace"]', {"position": "2", **_new_player(s, 4)}),
          once=True),
    Scene(None, lambda s: s.follow("invitation", s.addr(4), "/invite/", "accept")),
    Scene(None, lambda s: s.press()),  # Eve accepts: the game starts
    Scene("mail-game_started", lambda s: s.show_any_mail("game_started"), optional=True),
    Scene("mail-decision", lambda s: s.show_mail("decision", s.decider()[1])),
    Scene("mail-reply", lambda s: s.reply_by_email()),
    Scene("game", lambda s: s.player_page()),
    Scene("watch", lambda s: s.spectator()),
    Scene("admin", lambda s: s.admin()),
    Scene("game-plan", lambda s: s.plan_page(), optional=True),
    Scene("my", lambda s: s.goto("/my", optional=True), optional=True, once=True),
    Scene("my-sent", lambda s: s.press("#my-games-form", {"email": s.addr(4)}),
          needs="my", once=True),
    Scene("mail-my_games", lambda s: s.show_mail("my_games", s.addr(4), in_game=False),
          needs="my", once=True),
    Scene("my-games", lambda s: s.follow("my_games", s.addr(4), "/my/", in_game=False),
          needs="my", once=True),
    Scene(None, lambda s: s.remind()),
    Scene("mail-decision_reminder", lambda s: s.show_reminder()),
    Scene("action", lambda s: s.one_click()),
    Scene("recorded", lambda s: s.confirm_move()),
    Scene("action-stale", lambda s: s.goto(s.action_path), once=True),
    Scene("admin-paused", lambda s: s.control("pause"), once=True),
    Scene("mail-notice", lambda s: s.show_mail("notice", s.addr(1))),
    Scene(None, lambda s: s.control("resume")),
    Scene("admin-handover", lambda s: s.control("handover", position="1",
                                                **_new_player(s, 3)), once=True),
    Scene("mail-handover_invite", lambda s: s.show_mail("handover_invite", s.addr(3)),
          once=True),
    Scene("handover",
          lambda s: s.follow("handover_invite", s.addr(3), "/handover/", "accept"), once=True),
    Scene("handover-accepted", lambda s: s.press(), once=True),
    Scene("mail-welcome", lambda s: s.show_mail("welcome", s.addr(3))),
    Scene("unsubscribe", lambda s: s.unsubscribe_page(), once=True),
    Scene("calendar", lambda s: s.calendar_page(), once=True),
    Scene("calendar-made", lambda s: s.press("#calendar"), once=True),
    Scene("calendar-event", lambda s: s.calendar_event(), once=True),
    Scene("calendar-mailed", lambda s: s.press("#open"), once=True),
    Scene("mail-game_link", lambda s: s.show_mail("game_link", s.calendar_addr), once=True),
    Scene("mail-digest", lambda s: s.digest(), once=True),
    Scene("error", lambda s: s.goto("/a/" + "x" * 43), once=True),
    Scene("mailbox", lambda s: s.goto("/dev/mail"), once=True),
    Scene("mailbox-message", lambda s: s.mailbox_message(), once=True),
    Scene("rules", lambda s: s.goto(f"/rules/{s.game}", optional=True), optional=True),
    Scene("rules-index", lambda s: s.goto("/rules", optional=True), optional=True, once=True),
    Scene(None, lambda s: s.play_to_the_end()),
    Scene("mail-result", lambda s: s.show_mail("result", s.addr(0))),
    Scene("game-end", lambda s: s.end_page()),
    Scene("watch-end", lambda s: s.spectator()),
    Scene("log-round", lambda s: s.log_round()),
    Scene("admin-end", lambda s: s.admin()),
]


def unchecked_templates(seen: set[str]) -> list[str]:
    """Page and email templates no checked scene showed (partials and the layout aside)."""
    every = {f"{kind}/{p.name}" for kind in ("pages", "emails")
             for p in (TEMPLATES / kind).glob("*.html")
             if not p.name.startswith("_") and p.name != "base.html"}
    return sorted(every - seen)


@dataclass
class Findings:
    problems: dict[str, list[str]] = field(default_factory=dict)  # label -> problems
    checked: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    seconds: dict[str, tuple[float, float]] = field(default_factory=dict)  # reach, check
    rendered: list[str] = field(default_factory=list)  # templates the server rendered
    seen: set[str] = field(default_factory=set)  # page and email templates checked

    def count(self) -> int:
        return sum(len(p) for p in self.problems.values()) + len(
            unchecked_templates(self.seen))

    def record(self, name: str) -> None:
        """Note a template the server rendered (Flask's ``template_rendered`` signal)."""
        self.rendered.append(name)

    def report(self) -> str:
        lines = [f"{self.count()} problem(s) in {len(self.problems)} of "
                 f"{len(self.checked)} scenes (scene = game-scene-language; "
                 f"widths {', '.join(map(str, WIDTHS))} px, axe at {AXE_WIDTH} px)"]
        for label, problems in self.problems.items():
            lines.append(f"\n{label}:")
            lines += [f"  - {p}" for p in problems]
        if missing := unchecked_templates(self.seen):
            lines.append(f"\nnever checked (add a scene to screens.SCENES): "
                         f"{', '.join(missing)}")
        if self.absent:
            lines.append("\nnot there (optional, not counted): " + "; ".join(self.absent))
        return "\n".join(lines)


def tell(story: Story, findings: Findings, screens: Path | None) -> None:
    """Play the story; look at each scene. A step that fails ends this story (the rest
    depends on it) and is reported as a problem of the scene it was reaching."""
    reached: set[str] = set()
    for scene in SCENES:
        label = f"{story.game}-{scene.name or 'step'}-{story.lang}"
        if scene.needs is not None and scene.needs not in reached:
            continue
        t0 = time.monotonic()
        findings.rendered.clear()
        try:
            story.status, story.mail_on_screen = None, None
            scene.reach(story)
        except Absent as exc:
            if scene.optional:
                findings.absent.append(f"{label} ({exc})")
                continue
            findings.problems.setdefault(label, []).append(f"not there: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 - reported, with what follows skipped
            first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            findings.problems.setdefault(label, []).append(
                f"could not reach it ({type(exc).__name__}: {first_line[:300]}); the rest "
                f"of this story was skipped")
            return
        reached.add(scene.name or "")
        if scene.name is None or (scene.once and not story.first):
            continue
        findings.checked.append(label)
        findings.seen.update(n for n in findings.rendered if n.startswith("pages/"))
        if story.mail_on_screen:
            findings.seen.add(f"emails/{story.mail_on_screen}.html")
        problems = []
        if story.status is not None and story.status >= 500:
            problems.append(f"HTTP {story.status} at {story.page.url}")
        t1 = time.monotonic()
        problems += check(story.page, label, screens)
        findings.seconds[label] = (t1 - t0, time.monotonic() - t1)
        if problems:
            findings.problems[label] = problems
