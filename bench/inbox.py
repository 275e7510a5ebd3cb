"""Inbox: how many emails a player gets, playing whole games only from their emails.

(Issue 20, point 6: the "before" figures are at the end of this text.)

Plays whole games of Stone Age (2 and 4 players) and Cavemen (4 players) on a temporary
SQLite database (``pbem.migrate.upgrade``, memory mail backend, the sending caps lifted as
in ``bench/confirm_latency.py``: a game played in seconds with the same addresses would
hit caps that a real game spread over days never does). Every seat is a scripted person
who acts only from the emails they receive, through the Flask test client as a browser
would:

* the game is made as on the web (``create_game(..., confirm_by_email=True)``); the host
  confirms it from the host_confirm email, every other player accepts from their
  invitation email (GET the page, POST its form);
* the bench delivers the outbox (``mail.deliver_due()``, as the clock's mail loop does)
  and reads the delivered emails in order. For an email that asks for a decision still
  open, the player makes the game's heuristic bot's choice (``BOTS["heuristic"]``, one
  ``random.Random(seed)`` per game) through a link of THAT email: the one-click link
  ``/a/<token>`` bound to exactly that action (GET the confirmation page, POST its
  ``sig``); else a one-click link whose confirmation page offers the choice as a variant
  (Stone Age: fewer people on a place; POST ``sig`` and ``choice`` as the page's radio
  sends it); else the email's game page link ``/g/<token>``: GET the page and POST its
  decision form as a person would fill it in. Which action a one-click link stands for
  is read from its token row (as bench/confirm_latency.py does; a person reads the
  link's label), and the variants from the confirmation page itself.

Two player behaviours (``--modes``):

* ``emails``: each decision only from its own email; after answering, the player closes
  the page and waits for the next email. The decision email of a player who has just
  answered (the "follow-up", shown at once on the answer page) is held
  ``FOLLOW_UP_MINUTES`` and goes out only if the decision is still open then: this mode
  runs with ``FOLLOW_UP_MINUTES = 0`` instead of waiting (the same emails, no clock).
* ``page``: after answering, the player goes on with every follow-up decision the answer
  page offers (its form, filled in as above), and waits for an email only when the page
  offers none. Default ``FOLLOW_UP_MINUTES`` (10): the held emails of decisions answered
  on the page are never sent (counted as "held, never sent"). No clock is needed: the
  bench plays in real time, a game in seconds, far from every deadline.
* ``live``: the players sit at their game pages (friends playing at the same time): a
  player opens the page from their first email that links to it, and keeps it open; it
  says so to the server (``POST /g/<token>/here``, as static/live.js does every
  ``LIVE_HERE_SECONDS``), and each decision that then comes to them is answered on that
  page (its form), as the live page shows it. Their decision emails are held
  ``FOLLOW_UP_MINUTES`` (10) and so never sent. A decision of a player whose page is not
  open yet is answered from its email, as in ``emails``.
* ``plan`` (issue 20, 1c): as ``emails``, but a player asked to place (Stone Age) opens
  the email's game page and makes the placement there with a standing plan in the
  decision form's plan rows (``bot_plan``): the placement itself first (passed this
  round, where the seat stands already; the first step of the rounds after), then where
  the heuristic bot would put the rest of the seat's people on the table as it stands,
  then the rest on the Hunting grounds unless the list names them. The engine plays the
  plan on the seat's placement turns (no decision, no email) until it cannot be
  followed; a player also clears a plan that has stood ``--plan-rounds`` rounds (default
  PLAN_ROUNDS, 2), on the game page of the email they are answering, and sets a new one
  when next asked to place. Cavemen has no plans: there ``plan`` is ``emails``. A game
  whose players read more than MAX_EMAILS_READ emails is left unfinished (see below).

No clock runs and time is not simulated (no freezegun): players act at once, so no
deadline passes (checked: every move is a player's; no timeouts, no bots) and no
reminder is due; reminders (and the time they cost a real player) are not measured.

Counted: every email each address receives, by kind (the Outbox row of its Message-ID:
its template; ``decision`` split into ``decision``, ``decision (follow-up)``, the held
email of a player who had just answered, and ``reminder``); decisions (moves), by
kind; turns (a run of one player's own consecutive moves in the game's order of moves;
simultaneous decisions such as Stone Age's feeding are made in the order their emails
arrived); and how each decision was made. Addresses are new for each game, so an
address's emails are one player's emails in one game.

    .venv/bin/python bench/inbox.py                 # every mode, all three configurations
    .venv/bin/python bench/inbox.py --modes page --configs stoneage:4 --games 5
    .venv/bin/python bench/inbox.py --quick         # the smoke test's run

Before: main at a79c566 (issue 20 not started), on a shared 2-CPU machine (other work
running: the times vary, the counts do not). The summary lines (decisions, turns: per
game; emails/player: per player per game, mean (min-max) over every player of every game;
e/decision, e/turn: all emails per decision, per turn; de/turn: decision emails, i.e.
decision, follow-up and reminder, per turn; e/p/round: emails per player per round):

    .venv/bin/python bench/inbox.py      # default: 2 games each, seeds 1, 2; 86-163 s
    configuration mode   games decisions  turns   emails/player e/decision e/turn de/turn e/p/round
    Stone Age 2p  emails     2     171.0  111.0   88.0 (78-103)       1.03   1.59    1.54      5.87
    Stone Age 4p  emails     2     213.5  149.5    56.1 (48-65)       1.05   1.50    1.43      5.61
    Cavemen 4p    emails     2     164.0  148.5    43.8 (30-64)       1.07   1.18    1.10      2.57
    Stone Age 2p  page       2     171.0  111.0    58.0 (56-60)       0.68   1.05    1.00      3.87
    Stone Age 4p  page       2     213.5  149.5    40.1 (36-46)       0.75   1.07    1.00      4.01
    Cavemen 4p    page       2     164.0  148.5    39.9 (28-53)       0.97   1.07    1.00      2.35

    .venv/bin/python bench/inbox.py --games 10      # seeds 1 to 10; 754 s
    Stone Age 2p  emails    10     167.5  102.6   86.2 (62-145)       1.03   1.68    1.63      6.07
    Stone Age 4p  emails    10     271.2  185.2    70.5 (48-95)       1.04   1.52    1.46      5.78
    Cavemen 4p    emails    10     143.5  130.2    38.6 (24-71)       1.08   1.19    1.10      2.56
    Stone Age 2p  page      10     167.5  102.6    53.8 (42-66)       0.64   1.05    1.00      3.79
    Stone Age 4p  page      10     271.2  185.1    49.0 (36-64)       0.72   1.06    1.00      4.02
    Cavemen 4p    page      10     143.5  130.2    35.3 (22-57)       0.98   1.08    1.00      2.34

What the emails are (10 games): from the emails alone, one decision email per decision;
the follow-ups (a decision right after one's own) are 38% of them in Stone Age 2p, 31% in
4p, 9% in Cavemen. Going on on the page, exactly one decision email per turn (the
follow-ups are held and never sent). Besides: one host_confirm or invitation, one
game_started (not to the first to decide) and one result per player and game; no notice
(nobody times out) and no reminder (none is due). Decisions by kind (10 games): Stone Age
2p place 57%, use (which placed person next) 25%, build 7%, tools 4%, card 4%, feed 2%,
pick 1%; 4p place 53%, use 23%, tools 12%, build 7%, pick 2%, card 2%, feed 2%; Cavemen
act 50%, bid 33%, discard 10%, casualty 6%, starve 1%. Made through (10 games, emails
mode): Stone Age 88% one-click links, 12% one-click variants (fewer people on a place),
one build in 4p games on the game page (its payment not among the 4 the email offers);
Cavemen 95% one-click, 5% on the game page (7 discards a game with more than 10 ways,
0.4 actions a game: recruiting in place of another caveman).

After (a4780b9: Stone Age asks the order of its places once; live pages; load below 1),
the default run:

    configuration mode   games decisions  turns   emails/player e/decision e/turn de/turn e/p/round
    Stone Age 2p  emails     2     142.0  107.5    73.5 (64-96)       1.04   1.37    1.32      4.74
    Stone Age 4p  emails     2     232.0  171.5    60.8 (52-67)       1.05   1.42    1.35      5.28
    Cavemen 4p    emails     2     164.0  148.5    43.8 (30-64)       1.07   1.18    1.10      2.57
    Stone Age 2p  page       2     142.0  107.5    56.2 (51-61)       0.79   1.05    1.00      3.63
    Stone Age 4p  page       2     232.0  171.5    45.6 (40-49)       0.79   1.06    1.00      3.97
    Cavemen 4p    page       2     164.0  148.5    39.9 (28-53)       0.97   1.07    1.00      2.35
    Stone Age 2p  live       2     142.0  107.5       3.0 (3-3)       0.04   0.06    0.01      0.19
    Stone Age 4p  live       2     232.0  171.5       3.0 (3-3)       0.05   0.07    0.01      0.26
    Cavemen 4p    live       2     164.0  148.5       3.0 (3-3)       0.07   0.08    0.01      0.18

The Stone Age games differ from the before (the bots play the order decision), so seeds
1 and 2 play other games; compare per turn, or over many games
(bench/stoneage_decisions.py).

Standing plans (issue 20, 1c and the goal of point 6: "at most half today's emails per
player"), at 936a13d on branch plans, load 13-16 on the shared machine (times vary, counts
do not), seeds 1 to 5:

    .venv/bin/python bench/inbox.py --modes emails,plan --configs stoneage:2,stoneage:4 --games 5
    configuration mode   games decisions  turns  rounds  emails/player  e/p/round
    Stone Age 2p  emails     5     120.4   90.0    13.6   62.7 (43-96)       4.61
    Stone Age 4p  emails     5     234.0  179.4    12.0   61.2 (40-83)       5.10
    Stone Age 2p  plan       5      73.6   20.6    18.0   39.3 (14-79)       2.18
    Stone Age 4p  plan       5     189.0   93.2    20.4   50.0 (13-85)       2.45

Emails per player per game with plans: 0.63 of the emails mode's with 2 players, 0.82
with 4: the goal (0.5) is not met per game. Per round it is (0.47, 0.48): the plans
place 103 (2p) and 198 (4p) people a game with no decision and no email, and drop 6.6
and 5.0 times a game; the placement decisions left (14 and 29 a game) are the first
placement after a plan is cleared or dropped. The games are longer (18 and 20 rounds
against 14 and 12): these players replay a stale plan (its first steps from an earlier
round, then hunters), build less, and so end later; a real player would change a plan
that no longer fits. The decision count per game goes down (74 and 189 against 120 and
234). Players who keep a plan until it drops, with no end on the Hunting grounds
(``--plan-rounds 0``), or who clear it one round later (``--plan-rounds 1``), met a game
that never ends in seeds 1 to 5 (round 754, 933 and counting): a plan of hunters only,
for a player with nothing else to decide, asks them nothing, so they never see a reason
to change it, while the others never end the game; each move stays bounded (a round
gone by with nobody asked drops every plan). 2 games of the same, seeds 1 and 2, before
that default (no end on the Hunting grounds, plans kept until dropped): 2p 53.2 (4-108)
against 73.5, 4p 54.2 (17-90) against 60.8.
"""

from __future__ import annotations

import argparse
import email
import email.policy
import json
import random
import re
import statistics
import sys
import tempfile
import textwrap
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import parseaddr
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from sqlmodel import select

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.core import Action, format_action  # noqa: E402
from engine.registry import get_game  # noqa: E402
from pbem import create_app, mail, services  # noqa: E402
from pbem.db import get_engine, session_scope  # noqa: E402
from pbem.migrate import upgrade  # noqa: E402
from pbem.models import Decision, EventLog, Game, Move, Outbox, Seat  # noqa: E402
from pbem.tokens import lookup  # noqa: E402

BASE_URL = "http://bench.invalid"
PLAN_ROUNDS = 2  # plan mode: a player clears a plan that has stood this many rounds
MAX_EMAILS_READ = 5_000  # a game whose players read more never ends (see the plan mode)
LINK_RE = re.compile(re.escape(BASE_URL) + r"(/[^\s<>\"']+)")
NO_CAPS = {"CREATE_LIMIT_PER_HOUR": 100_000, "NOTICE_LIMIT_PER_ADDRESS": 100_000,
           "NOTICE_LIMIT_PER_GAME": 100_000, "INVITE_LIMIT_PER_ADDRESS": 100_000,
           # a move's email to the next player goes at once (no clock runs here to
           # see the take-back's grace, TAKEBACK_GRACE_SECONDS, pass)
           "TAKEBACK_GRACE_SECONDS": 0}
CONFIGS = (("stoneage", 2), ("stoneage", 4), ("cavemen", 4))
MODES = ("emails", "page", "live", "plan")
TITLES = {"stoneage": "Stone Age", "cavemen": "Cavemen"}
# how a decision was made: the link or form used
HOW = ("one-click link", "one-click variant", "game page form", "answer page (follow-up)",
       "live page", "game page form with a plan")
# the kinds of email, in the order printed (others are added after them)
KINDS = ("decision", "decision (follow-up)", "reminder", "notice", "game_started",
         "result", "host_confirm", "invitation")


# --------------------------------------------------------------------------- reading HTML


@dataclass
class Form:
    """A form as a browser sees it: where it posts, its hidden values and its choices."""

    action: str | None
    attrs: dict[str, str]
    hidden: dict[str, str] = field(default_factory=dict)
    radios: dict[str, list[str]] = field(default_factory=dict)


class FormParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[Form] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append(Form(a.get("action"), a))
        elif tag == "input" and self.forms:
            form, kind, name = self.forms[-1], a.get("type", "text"), a.get("name", "")
            if kind == "hidden":
                form.hidden[name] = a.get("value", "")
            elif kind == "radio":
                form.radios.setdefault(name, []).append(a.get("value", ""))


def forms_of(html: str) -> list[Form]:
    parser = FormParser()
    parser.feed(html)
    return parser.forms


def decision_form(html: str) -> Form | None:
    """The decision form of a game page or an answer page (``id="decision"``), if any."""
    return next((f for f in forms_of(html) if f.attrs.get("id") == "decision"), None)


def form_data(action: Action, kind: str, form: Form) -> dict[str, Any]:
    """What a person filling in the decision form for ``action`` sends (as
    tests/server/helpers.page_form_data): a radio naming the whole action where the form
    has one, else the verb and its fields."""
    fields: dict[str, Any] = dict(form.hidden)
    if kind == "discard":
        return {**fields, "kind": "discard", "discard.cards": list(action.get("cards"))}
    if action.kind == "bid":
        return {**fields, "choice": "bid", "bid.amount": str(action.get("amount"))}
    if format_action(action) in form.radios.get("choice", []):
        return {**fields, "choice": format_action(action)}
    if action.kind == "place":  # Stone Age: a place and a number of people
        return {**fields, "kind": "place",
                "place.word": [action.get("at"), str(action.get("count"))]}
    if action.kind == "tools":
        return {**fields, "choice": "tools", "tools.word": list(action.get("use", ()))}
    if action.kind in ("take", "build", "feed"):
        pay = list(action.get("pay"))
        return {**fields, "choice": action.kind,
                **{f"{action.kind}.count.{r}": str(pay.count(r)) for r in set(pay)}}
    return {**fields, "choice": format_action(action)}


# --------------------------------------------------------------------------- emails


@dataclass
class Received:
    """One delivered email as its recipient reads it, with the kind of its Outbox row."""

    to: str
    kind: str
    decision_id: int | None
    links: list[str]  # the paths of its text part's links, in order
    msg: EmailMessage | None = None  # the message itself
    context: dict[str, Any] = field(default_factory=dict)  # its Outbox row's context

    def first(self, prefix: str) -> str | None:
        return next((p for p in self.links if p.startswith(prefix)), None)


def kind_of(row: Outbox) -> str:
    if row.template == "decision":
        if row.context.get("reminder"):
            return "reminder"
        if row.context.get("follow_up"):
            return "decision (follow-up)"
    return str(row.template)


# --------------------------------------------------------------------------- playing


@dataclass
class GameCount:
    """What one game counted."""

    emails: dict[str, Counter]  # address -> kind -> emails
    decisions: int
    turns: int
    rounds: int  # the game's rounds (its ROUND_EVENT events)
    kinds: Counter  # decision kind -> moves
    how: Counter  # HOW -> decisions
    not_players: int  # moves not made by a player (timeouts, bots): must be 0
    held: int  # decision emails held and never sent (answered on the page)
    finished: bool
    plan_placements: int = 0  # placements the engine played by a standing plan
    plans_dropped: int = 0  # plans dropped because they could not be followed


class Bench:
    def __init__(self, app, mode: str, plan_rounds: int = 0) -> None:
        self.app, self.mode, self.plan_rounds = app, mode, plan_rounds
        self.plan_since: dict[tuple[str, int], int] = {}  # (game, seat) -> round set
        self.client = app.test_client()
        self.box = mail.backend(app)

    # -- the mailbox

    def deliver(self) -> list[Received]:
        """Run the mail loop's delivery pass; the emails it sent, parsed, in order."""
        mail.deliver_due(limit=10_000)
        sent, self.box.sent[:] = list(self.box.sent), []
        msgs = [email.message_from_bytes(out.data, policy=email.policy.default)
                for out in sent]
        ids = [str(m["Message-ID"]) for m in msgs]
        with session_scope() as s:
            rows = {r.message_id: r for r in s.exec(
                select(Outbox).where(Outbox.message_id.in_(ids)))}
        out = []
        for msg, mid in zip(msgs, ids, strict=True):
            row = rows[mid]
            body = msg.get_body(("plain",))
            text = body.get_content() if body is not None else ""
            out.append(Received(parseaddr(str(msg["To"]))[1].lower(), kind_of(row),
                                row.context.get("decision_id"), LINK_RE.findall(text), msg,
                                row.context))
        return out

    # -- links and forms

    def click(self, path: str):
        """GET a link's page and POST its form (its ``sig``): accept an invitation,
        confirm a game."""
        page = self.client.get(path)
        form = next((f for f in forms_of(page.get_data(as_text=True))
                     if "sig" in f.hidden), None)
        if page.status_code != 200 or form is None:
            raise RuntimeError(f"GET {path[:12]}...: {page.status_code}, no form")
        resp = self.client.post(path, data={"sig": form.hidden["sig"]}, follow_redirects=True)
        if resp.status_code != 200:
            raise RuntimeError(f"POST {path[:12]}...: {resp.status_code}: "
                               f"{resp.get_data(as_text=True)[:300]}")
        return resp

    def post_form(self, form: Form, decision: Decision, action: Action):
        resp = self.client.post(form.action, data=form_data(action, decision.kind, form),
                                follow_redirects=True)
        if resp.status_code != 200:
            raise RuntimeError(f"decision form ({decision.kind}, {action}): "
                               f"{resp.status_code}: {resp.get_data(as_text=True)[:500]}")
        return resp

    # -- the players

    def bot_action(self, decision: Decision, rng: random.Random) -> tuple[Any, Any, Action]:
        """The heuristic bot's choice for ``decision`` (the game as committed now)."""
        with session_scope() as s:
            game = s.get(Game, decision.game_id)
            mod = get_game(game.engine)
            state = mod.from_json(json.loads(game.state))
        return mod, state, mod.BOTS["heuristic"](state, decision.position, rng)

    def open_decision(self, decision_id: int | None) -> Decision | None:
        if decision_id is None:
            return None
        with session_scope() as s:
            d = s.get(Decision, decision_id)
            return d if d is not None and d.closed_at is None else None

    def answer(self, mail_: Received, decision: Decision, rng: random.Random,
               how: Counter) -> None:
        """Make the bot's choice for ``decision`` through a link of its email (in ``plan``
        mode, a placement with a standing plan on the game page: ``answer_with_plan``)."""
        mod, state, action = self.bot_action(decision, rng)
        self.revise_plan(mail_, decision, state)
        if self.mode == "plan" and decision.kind == "place" and hasattr(mod, "set_plan"):
            return self.answer_with_plan(mail_, decision, state, action, how)
        wanted = action.to_json()
        links = [p for p in mail_.links if p.startswith("/a/")]
        bound: list[tuple[str, Action]] = []
        with session_scope() as s:
            for path in links:
                token = lookup(s, path[3:], "action")
                if token is not None and token.action is not None:
                    bound.append((path, Action.from_json(token.action)))
        vary = getattr(mod, "choice_variants", None)
        for path, link_action in bound:
            if link_action.to_json() == wanted:
                how["one-click link"] += 1
            elif vary is not None and action in vary(state, decision.position, link_action):
                how["one-click variant"] += 1
            else:
                continue
            # its confirmation page: a form with the sig, and radios if it has variants
            page = self.client.get(path)
            form = next((f for f in forms_of(page.get_data(as_text=True))
                         if "sig" in f.hidden), None)
            if page.status_code != 200 or form is None:
                raise RuntimeError(f"GET /a/<token>: {page.status_code}, no form")
            data = {"sig": form.hidden["sig"]}
            if "choice" in form.radios:
                if format_action(action) not in form.radios["choice"]:
                    raise RuntimeError(f"the confirmation page does not offer {action}")
                data["choice"] = format_action(action)
            resp = self.client.post(path, data=data, follow_redirects=True)
            if resp.status_code != 200:
                raise RuntimeError(f"POST /a/<token> ({action}): {resp.status_code}: "
                                   f"{resp.get_data(as_text=True)[:300]}")
            return self.after(resp, rng, how)
        self.answer_on_page(mail_, decision, action, rng, how)

    def answer_on_page(self, mail_: Received, decision: Decision, action: Action,
                       rng: random.Random, how: Counter) -> None:
        """Make ``action`` for ``decision`` on the game page the email links to (its
        decision form, filled in as a person would)."""
        page_link = mail_.first("/g/")
        if page_link is None:
            raise RuntimeError(f"a {decision.kind} email without a game page link")
        page = self.client.get(page_link)
        form = decision_form(page.get_data(as_text=True))
        if form is None or form.hidden.get("decision_id") != str(decision.id):
            raise RuntimeError(f"the game page does not show decision {decision.id}")
        how["game page form"] += 1
        how[f"page:{decision.kind}"] += 1
        self.after(self.post_form(form, decision, action), rng, how)

    def revise_plan(self, mail_: Received, decision: Decision, state: Any) -> None:
        """``plan`` mode: a player whose plan has stood for ``--plan-rounds`` rounds clears
        it on the game page of the email they are answering (their next placement is then
        asked, and they set a new plan with it)."""
        key = (decision.game_id, decision.position)
        since = self.plan_since.get(key)
        if not self.plan_rounds or since is None or state.round - since < self.plan_rounds:
            return
        del self.plan_since[key]
        page_link = mail_.first("/g/")
        box = next((f for f in forms_of(self.client.get(page_link).get_data(as_text=True))
                    if f.attrs.get("id") == "plan"), None)
        if box is None:  # the plan was dropped meanwhile: nothing to clear
            return
        resp = self.client.post(box.action, data={"sig": box.hidden["sig"], "how": "clear"},
                                follow_redirects=True)
        if resp.status_code != 200:
            raise RuntimeError(f"clearing a plan: {resp.status_code}")

    def answer_with_plan(self, mail_: Received, decision: Decision, state: Any,
                         action: Action, how: Counter) -> None:
        """``plan`` mode: the placement ``action`` on the game page of the email, with a
        standing plan for the next placements in the decision form's plan rows
        (``bot_plan``)."""
        page_link = mail_.first("/g/")
        if page_link is None:
            raise RuntimeError("a place email without a game page link")
        html = self.client.get(page_link).get_data(as_text=True)
        form = decision_form(html)
        if form is None or form.hidden.get("decision_id") != str(decision.id):
            raise RuntimeError(f"the game page does not show decision {decision.id}")
        if 'name="plan.at"' not in html:
            raise RuntimeError("the placement form has no plan rows")
        steps = bot_plan(state, decision.position, action, decision.id,
                         fallback=self.plan_rounds > 0)
        self.plan_since[(decision.game_id, decision.position)] = state.round
        data = form_data(action, decision.kind, form)
        data["plan.at"] = [at for at, _ in steps]
        data["plan.count"] = [count for _, count in steps]
        resp = self.client.post(form.action, data=data, follow_redirects=True)
        if resp.status_code != 200:
            raise RuntimeError(f"placement with plan {steps}: {resp.status_code}: "
                               f"{resp.get_data(as_text=True)[:500]}")
        how["game page form with a plan"] += 1

    def after(self, resp, rng: random.Random, how: Counter) -> None:
        """The answer page: in ``page`` mode, go on with each follow-up decision it shows."""
        while self.mode == "page":
            form = decision_form(resp.get_data(as_text=True))
            if form is None:
                return
            decision = self.open_decision(int(form.hidden["decision_id"]))
            if decision is None:
                raise RuntimeError("the answer page shows a closed decision")
            how["answer page (follow-up)"] += 1
            resp = self.post_form(form, decision, self.bot_action(decision, rng)[2])

    def here(self, page: str) -> None:
        """The player's open game page tells the server it is there (static/live.js)."""
        html = self.client.get(page).get_data(as_text=True)
        sig = re.search(r'data-sig="([0-9a-f]+)"', html)
        if sig is None:  # a game over follows nothing (no live script)
            return
        resp = self.client.post(page + "/here", data={"sig": sig.group(1)})
        if resp.status_code != 204:
            raise RuntimeError(f"POST /g/<token>/here: {resp.status_code}")

    def live_move(self, game_id: str, pages: dict[str, str], rng: random.Random,
                  how: Counter) -> bool:
        """In ``live`` mode: answer an open decision on its player's open page (True), if
        a player whose page is open has one."""
        with session_scope() as s:
            rows = s.exec(select(Decision, Seat.email).join(Seat, Seat.id == Decision.seat_id)
                          .where(Decision.game_id == game_id,
                                 Decision.closed_at.is_(None))
                          .order_by(Decision.id)).all()
        for decision, address in rows:
            page = pages.get(address.lower())
            if page is None:
                continue
            form = decision_form(self.client.get(page).get_data(as_text=True))
            if form is None or form.hidden.get("decision_id") != str(decision.id):
                raise RuntimeError(f"the live page does not show decision {decision.id}")
            how["live page"] += 1
            self.post_form(form, decision, self.bot_action(decision, rng)[2])
            for open_page in pages.values():  # the pages are still open
                self.here(open_page)
            return True
        return False

    def play(self, engine_name: str, n: int, seed: int) -> GameCount:
        """One game, from its creation on the web to its end, played from the emails."""
        tag = f"{engine_name}{n}.{self.mode}.{seed}"
        players = [services.PlayerIn(f"Player {i}", f"p{i}.{tag}@bench.invalid")
                   for i in range(n)]
        created = services.create_game(engine_name, players, seed=seed,
                                       confirm_by_email=True)
        rng = random.Random(seed)
        emails: dict[str, Counter] = {p.email: Counter() for p in players}
        how: Counter = Counter()
        inbox: deque[Received] = deque()
        pages: dict[str, str] = {}  # live mode: address -> its open game page
        answered = 0
        while True:
            for got in self.deliver():
                emails[got.to][got.kind] += 1
                inbox.append(got)
                page = got.first("/g/")
                if self.mode == "live" and page and got.to not in pages \
                        and got.kind not in ("host_confirm", "invitation"):
                    pages[got.to] = page
                    self.here(page)
            if self.mode == "live" and not any(
                    g.kind in ("host_confirm", "invitation") for g in inbox) \
                    and self.live_move(created.game_id, pages, rng, how):
                inbox = deque(g for g in inbox if g.decision_id is None)
                continue
            if not inbox:
                break
            answered += 1
            if answered > MAX_EMAILS_READ:  # left unfinished: reported as such
                break
            got = inbox.popleft()
            if got.kind == "host_confirm":
                self.click(got.first("/host/confirm/"))
            elif got.kind == "invitation":
                self.click(got.first("/invite/"))  # the first: accept
            elif (decision := self.open_decision(got.decision_id)) is not None:
                self.answer(got, decision, rng, how)
            elif got.decision_id is not None:
                how["stale"] += 1  # asks for a decision closed before it was read
        return self.count(created.game_id, emails, how)

    def count(self, game_id: str, emails: dict[str, Counter], how: Counter) -> GameCount:
        with session_scope() as s:
            game = s.get(Game, game_id)
            moves = s.exec(select(Move.position, Move.source, Decision.kind)
                           .join(Decision, Decision.id == Move.decision_id)
                           .where(Move.game_id == game_id).order_by(Move.id)).all()
            kind = getattr(get_game(game.engine), "ROUND_EVENT", None)
            rounds = len(s.exec(select(EventLog.id).where(EventLog.game_id == game_id,
                                                          EventLog.kind == kind)).all())
            held = sum(1 for r in s.exec(select(Outbox).where(Outbox.game_id == game_id))
                       if r.template == "decision" and r.status != "sent")
            planned = s.exec(select(EventLog.kind, EventLog.data).where(
                EventLog.game_id == game_id,
                EventLog.kind.in_(("people_placed", "plan_dropped")))).all()
        turns = sum(1 for i, m in enumerate(moves) if i == 0 or moves[i - 1][0] != m[0])
        return GameCount(emails, len(moves), turns, rounds, Counter(k for _, _, k in moves), how,
                         sum(1 for _, source, _ in moves if source != "player"), held,
                         game.status == "finished",
                         sum(1 for k, d in planned if k == "people_placed" and d.get("plan")),
                         sum(1 for k, _ in planned if k == "plan_dropped"))


def bot_plan(state: Any, seat: int, action: Action, key: int,
             fallback: bool = False) -> list[tuple[str, str]]:
    """The standing plan a ``plan`` player sets with their placement ``action`` (Stone
    Age), a whole round of placements: ``action`` itself (passed over this round, where
    the seat stands already, and the first step of the next rounds), then where the
    heuristic bot would put the rest of the seat's people this round if the table stayed
    as it is after ``action`` (each step the bot's choice on that table, the seat's turn
    again at once, the others not placing), PLAN_STEPS steps at most; with ``fallback``,
    the last step "the rest on the Hunting grounds" unless the list names them. The player
    chooses it: the engine plays only what it names, and drops it when it cannot be
    followed."""
    from engine.stoneage import rules

    bot, rng = get_game("stoneage").BOTS["heuristic"], random.Random(key)
    steps = [(action.get("at"), str(action.get("count")))]
    table, _ = rules.apply(state, seat, action)
    while (table.phase == "place" and table.round == state.round
           and rules.at_home(table, seat) > 0 and len(steps) < rules.PLAN_STEPS):
        table = table._replace(turn=seat)
        if not rules.legal_actions(table, seat):
            break
        step = bot(table, seat, rng)
        steps.append((step.get("at"), str(step.get("count"))))
        table, _ = rules.apply(table, seat, step)
    if fallback and all(at != "hunt" for at, _ in steps):
        steps = [*steps[:rules.PLAN_STEPS - 1], ("hunt", "rest")]
    return steps


# --------------------------------------------------------------------------- report


def kinds_in(games: list[GameCount]) -> list[str]:
    seen = {k for g in games for c in g.emails.values() for k in c}
    return [*KINDS, *sorted(seen - set(KINDS))]


def report(title: str, mode: str, seeds: list[int], games: list[GameCount],
           seconds: float) -> dict[str, Any]:
    """Print the table of one configuration and mode; return its summary line."""
    per_player = [sum(c.values()) for g in games for c in g.emails.values()]
    emails = sum(per_player)
    decisions = sum(g.decisions for g in games)
    turns = sum(g.turns for g in games)
    rounds = sum(g.rounds for g in games)
    n_games = len(games)
    players = len(games[0].emails)
    finished = sum(g.finished for g in games)
    turn_emails = sum(c["decision"] + c["decision (follow-up)"] + c["reminder"]
                      for g in games for c in g.emails.values())
    print(f"\n{title}, {players} players, mode {mode}: {n_games} games (seeds "
          f"{', '.join(map(str, seeds))}), {finished} finished, {seconds:.0f} s")
    print(f"  {'decisions per game':<34}{decisions / n_games:9.1f}"
          f"   (min {min(g.decisions for g in games)}, max {max(g.decisions for g in games)})")
    print(f"  {'turns per game':<34}{turns / n_games:9.1f}"
          f"   ({decisions / turns:.2f} decisions per turn)")
    print(f"  {'rounds per game':<34}{rounds / n_games:9.1f}")
    print(f"  {'emails per player per game':<34}{statistics.mean(per_player):9.1f}"
          f"   (min {min(per_player)}, max {max(per_player)})")
    print(f"  {'emails per player per round':<34}{emails / players / rounds:9.2f}")
    print(f"  {'emails per decision':<34}{emails / decisions:9.2f}")
    print(f"  {'emails per turn':<34}{emails / turns:9.2f}")
    print(f"  {'decision emails per turn':<34}{turn_emails / turns:9.2f}"
          "   (decision + follow-up + reminder)")
    print("  emails by kind          per player per game   per decision   share")
    for kind in kinds_in(games):
        k = sum(c[kind] for g in games for c in g.emails.values())
        print(f"    {kind:<24}{k / (n_games * players):14.2f}{k / decisions:15.3f}"
              f"{k / emails:8.1%}")
    held = sum(g.held for g in games)
    print(f"    {'(held, never sent)':<24}{held / (n_games * players):14.2f}"
          f"{held / decisions:15.3f}")
    how = Counter()
    for g in games:
        how.update(g.how)
    print("  decisions made through  " + ", ".join(
        f"{h} {how[h] / decisions:.1%} ({how[h] / n_games:.1f}/game)" for h in HOW if how[h]))
    paged = sorted((k.removeprefix("page:"), c) for k, c in how.items() if k.startswith("page:"))
    if paged:  # the email had no link for the bot's choice
        print("    game page form for      " + ", ".join(
            f"{k} {c / n_games:.1f}/game" for k, c in paged))
    kinds = Counter()
    for g in games:
        kinds.update(g.kinds)
    print("  decision kinds          " + ", ".join(
        f"{k} {c / decisions:.1%} ({c / n_games:.1f}/game)" for k, c in kinds.most_common()))
    if any(g.plan_placements or g.plans_dropped for g in games):
        print(f"  placements played by a plan      "
              f"{sum(g.plan_placements for g in games) / n_games:9.1f}   per game (no "
              f"decision, no email); plans dropped "
              f"{sum(g.plans_dropped for g in games) / n_games:.1f} per game")
    stale = sum(g.how["stale"] for g in games)
    if stale:
        print(f"  emails asking for a decision already closed when read: {stale}")
    bad = sum(g.not_players for g in games)
    if bad:
        print(f"  !! {bad} moves were not made by the players (timeouts or bots)")
    return {"config": f"{title} {players}p", "mode": mode, "games": n_games,
            "finished": finished, "decisions": decisions / n_games,
            "turns": turns / n_games, "mean": statistics.mean(per_player),
            "min": min(per_player), "max": max(per_player),
            "per_decision": emails / decisions, "per_turn": emails / turns,
            "turn_per_turn": turn_emails / turns,
            "per_round": emails / players / rounds, "not_players": bad}


SUMMARY_LEGEND = ("decisions, turns: per game; emails/player: per player per game, mean "
                  "(min-max); e/decision, e/turn: all emails per decision, per turn; "
                  "de/turn: decision emails (decision, follow-up, reminder) per turn; "
                  "e/p/round: emails per player per round")


def summary(lines: list[dict[str, Any]]) -> None:
    print(f"{'configuration':<14}{'mode':<7}{'games':>5}{'decisions':>10}{'turns':>7}"
          f"{'emails/player':>16}{'e/decision':>11}{'e/turn':>7}{'de/turn':>8}"
          f"{'e/p/round':>10}")
    for x in lines:
        spread = f"{x['mean']:.1f} ({x['min']}-{x['max']})"
        print(f"{x['config']:<14}{x['mode']:<7}{x['games']:>5}{x['decisions']:>10.1f}"
              f"{x['turns']:>7.1f}{spread:>16}{x['per_decision']:>11.2f}"
              f"{x['per_turn']:>7.2f}{x['turn_per_turn']:>8.2f}{x['per_round']:>10.2f}")


def parse_configs(text: str) -> list[tuple[str, int]]:
    out = []
    for part in text.split(","):
        name, _, n = part.strip().partition(":")
        out.append((name, int(n)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=2,
                        help="games per configuration and mode (default 2)")
    parser.add_argument("--seed", type=int, default=1, help="the first game's seed")
    parser.add_argument("--configs", default=",".join(f"{g}:{n}" for g, n in CONFIGS),
                        help="comma-separated game:players (default: %(default)s)")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="comma-separated: emails, page, live, plan (default: all four)")
    parser.add_argument("--plan-rounds", type=int, default=PLAN_ROUNDS, metavar="R",
                        help="plan mode: each plan ends with the rest on the Hunting "
                             "grounds (unless it names them), and a player clears a plan "
                             "that has stood R rounds; 0: plans without that end, which "
                             "stand until dropped (default: %(default)s)")
    parser.add_argument("--quick", action="store_true",
                        help="the smoke test's run: one game of Stone Age 2 players and "
                             "of Cavemen 4 players (unless --configs), both modes")
    args = parser.parse_args()
    if args.quick:
        args.games = 1
        if "--configs" not in sys.argv:
            args.configs = "stoneage:2,cavemen:4"
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - set(MODES):
        parser.error("--modes takes emails, page, live and/or plan")
    configs = parse_configs(args.configs)
    seeds = list(range(args.seed, args.seed + args.games))
    print(f"inbox: {args.games} game(s) per configuration and mode, seeds "
          f"{', '.join(map(str, seeds))}; every seat a person acting only from their "
          "emails (the heuristic bot's choice, through the email's links); SQLite, "
          "memory mail backend, caps lifted, no clock")
    lines = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pbem-bench-inbox-") as tmp:
        for mode in modes:
            url = f"sqlite:///{Path(tmp) / f'{mode}.sqlite3'}"
            upgrade(url)
            config = {"DATABASE_URL": url, "MAIL_BACKEND": "memory",
                      "MAIL_FROM": "pbem bench <pbem@bench.invalid>",
                      "SECRET_KEY": "bench-secret", "BASE_URL": BASE_URL,
                      "MAILBOX_DIR": str(Path(tmp) / "mail"), **NO_CAPS}
            if mode in ("emails", "plan"):
                config["FOLLOW_UP_MINUTES"] = 0  # the held email goes out at once
            app = create_app(config)
            app.instance_path = tmp
            with app.app_context():
                bench = Bench(app, mode, args.plan_rounds)
                for engine_name, n in configs:
                    t0 = time.perf_counter()
                    games = [bench.play(engine_name, n, seed) for seed in seeds]
                    lines.append(report(TITLES.get(engine_name, engine_name), mode, seeds,
                                        games, time.perf_counter() - t0))
                get_engine(app).dispose()
    print("\nsummary")
    print(textwrap.fill(SUMMARY_LEGEND, 92, initial_indent="  ", subsequent_indent="  "))
    summary(lines)
    print(f"\nwall time {time.perf_counter() - start:.0f} s")
    if any(x["finished"] != x["games"] or x["not_players"] for x in lines):
        print("!! a game did not finish, or someone timed out")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
