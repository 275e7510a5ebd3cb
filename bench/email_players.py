"""Email players: whole games played by people who pick at random among what each email
offers, one-click links and reply commands alike (issue 31, point 6, "Measured").

Plays whole games of Stone Age (2 and 4 players) and, for comparison, Cavemen (4
players) on a temporary SQLite database, with the machinery of bench/inbox.py (the game
made as on the web and confirmed and accepted from its emails, the outbox delivered by
the memory backend, the sending caps lifted, every decision emailed at once). Every seat
is a person who acts ONLY from the emails they receive; half of them (the second and
fourth player) read German. For each email that asks its reader for a decision still
open, the player picks UNIFORMLY AT RANDOM among everything the email offers:

* each one-click link ``/a/<token>`` of its text part: GET the confirmation page; if it
  offers variants (a radio of numbers: how many people), pick one of them uniformly;
  POST its form as a browser would (its hidden fields and the radio);
* each reply command the text part lists (the lines after "Or answer this email with a
  command", or its German twin): a line that is a pattern is expanded as a person reading
  it would, uniformly in each group (``place (hunt | forest) (1 | 2)``: one place, one
  number; ``take 2 × (wood | brick)``: two picks of goods, each of the whole group, so
  ``wood wood`` is as likely as ``wood brick``; ``order 3 × (hunt | forest | card1)``,
  ``discard 2 × (Mastodon | Rabbit | Stalker)``: different ones, as a person names
  each place or card once: see ``expand``). The command goes as a reply email (a real RFC 5322
  reply to the email's Reply-To address, the email quoted under an "On ... wrote:" line,
  In-Reply-To and References: tests/server/replying.reply_to) handed to
  ``services.receive_reply``, the one service the SMTP/LMTP receiver and the IMAP poller
  hand a message to.

Whether a try played is read from what the server did: the decision closed with that
player's move (its Move row, source ``player``); the reason of a refused command is the
one its answer email gives (the answer's ``results``). After a refusal the player tries
again from the same email, uniformly among all it offers again (a link counts too; a
command refused as it stands, not a pattern, is not sent twice), ``MAX_TRIES`` tries in
all; then they open the email's game page and decide there (as bench/inbox.py does: the
heuristic bot's choice through the page's form). "First try" counts only each decision's
first try. Seeds are fixed: game ``seed`` plays with ``random.Random(seed)``, so a run
is reproducible. No clock runs: nobody times out, no reminder is due. A game that has
not ended after ``--max-rounds`` rounds is left unfinished and reported as such.

Printed per configuration, over ``--games`` games: decisions per player per round
(decisions opened for a person / players / rounds played), emails per player per round
(every email they got: decisions, answers to their replies, invitations, results),
the share of reply commands and of one-click links that played at the first try (and
how many first tries there were), decisions by kind, and the listed commands refused
most, with the reason the answer gave.

``--standing``: every player sets standing choices for tools and feeding on their game
page before the game's first decision (``set_standing_choices``; not there yet).

``--height``: the HTML part of a sample of the Stone Age decision emails the games sent
(up to ``--height-sample`` per decision kind and language, spread over the games'
rounds) is loaded in headless Chromium (Debian's, as the browser tests launch it) at
390 px wide: the page's full height, and the distance from its top to the bottom edge
of the element ``id="choices"`` (the end of the choices), per kind and overall.

    .venv/bin/python bench/email_players.py                  # 3 games of each configuration
    .venv/bin/python bench/email_players.py --games 10 --height
    .venv/bin/python bench/email_players.py --configs stoneage:4 --standing
    .venv/bin/python bench/email_players.py --quick          # one short game each (smoke)

Before (issue 31 not started): 2026-11-28, main at 47ce69a, on the shared 2-CPU machine
(other work running: the times vary; the counts do not, a run is reproducible to the
last figure). The default run, 3 games of each configuration, seeds 1 to 3 (205 s):

    .venv/bin/python bench/email_players.py --height
    configuration  games done rounds dec/p/r  e/p/r     cmd    (n)    link    (n)
    Stone Age 2p       3    3   27.3    7.14  10.04   96.1%    457  100.0%    714
    Stone Age 4p       3    3   18.0    6.98   9.70   95.3%    552  100.0%    956
    Cavemen 4p         3    3   41.7    2.21   3.47  100.0%    597  100.0%    506

10 games of each, seeds 1 to 10 (518 s):

    .venv/bin/python bench/email_players.py --games 10 --height
    configuration  games done rounds dec/p/r  e/p/r     cmd    (n)    link    (n)
    Stone Age 2p      10   10   25.2    7.32  10.28   96.6%   1433  100.0%   2256
    Stone Age 4p      10   10   18.3    6.92   9.65   96.1%   1880  100.0%   3183
    Cavemen 4p        10   10   34.6    2.15   3.38  100.0%   1592  100.0%   1390

    per game (10 games)        Stone Age 2p                Stone Age 4p
    decisions/player/round     mean 7.33, median 7.37      mean 6.92, median 6.96
    emails/player/round        mean 10.28, median 10.32    mean 9.65, median 9.64
      of which decisions       7.32                        6.92
      answers to replies       2.86                        2.58
    commands from a pattern    54.6 % of 108 first tries   45.9 % of 135
    commands, en / de players  96.2 % / 97.0 %             95.3 % / 97.0 %
    decisions by kind          place 53.9 %, tools 15.7,   place 55.7 %, tools 12.9,
                               card 12.2, order 9.5,       order 9.3, card 8.9, feed 5.1,
                               feed 4.0, build 2.7,        pick 5.0, build 3.1
                               pick 2.1
    refused commands           54: place illegal 44,       79: place illegal 69, order
                               order ambiguous 10          ambiguous 9, card illegal 1
    refused most               place toolmaker n (2-7) 9,  place hut n (1, 3-8) 11,
                               place field n (3-5) 7,      place building1 n (2-5) 8,
                               place building2 n 6         place card4 n (2, 4, 5) 7

    Stone Age decision emails at 390 px in Chromium (10 games): 84 emails (42 German);
    px, median / max
      kind           n      to the end of #choices           whole email
      build         12                483 /    709        2890 /   3415
      card          12                723 /   1059        2907 /   4083
      feed          12                513 /    560        2628 /   3467
      order         12                554 /    861        3244 /   4035
      pick          12                467 /    521        3156 /   3552
      place         12               1447 /   1725        3678 /   4100
      tools         12                444 /    553        2960 /   3252
      overall       84                533 /   1725        3042 /   4100
      worst, to the end of the choices: 1725 px, a place email of round 1 (seed 1, de)
      worst, whole email: 4100 px, a place email of round 13 (seed 2, en)

What they say: one-click links always play; a reply command from the email's own list
plays at the first try 96-97 % of the time in Stone Age (100 % in Cavemen), and every
refusal comes from a line that is a pattern: ``place (hunt | ... | building2) (1 | ...
| 9)`` filled in with a count the place does not take (Toolmaker, Field, buildings and
cards take 1 person, the Hut exactly 2: ``place hut 1`` too), and ``order n × (...)`` filled in
with an order the engine does not allow today (refused as "ambiguous": the same words
in another order are legal). Only about half of the commands filled in from a pattern
play (54.6 %, 45.9 %); a pattern is one offer among some 15 links and lines of a
placement email, so it weighs little in the share over all commands. Nobody needed the
game page (4 tries were always enough), no email offered nothing. These players choose
at random, so their games are longer (25 and 18 rounds) and their decisions per round
higher than bench/inbox.py's heuristic players': compare before and after within this
bench. Heights: the sample is 6 emails per kind and language (``--height-sample``);
the choices of a placement email end at 1,447 px (median) and 1,725 px (max).

After (issue 31: the free order, standing choices, exact command lists, count links,
the board picture): 2026-11-28, the same machine, 10 games of each, seeds 1 to 10:

    .venv/bin/python bench/email_players.py --games 10 --height          # 653 s
    configuration  games done rounds dec/p/r  e/p/r     cmd    (n)    link    (n)
    Stone Age 2p      10   10   29.2    6.56  10.01  100.0%   1961  100.0%   1872
    Stone Age 4p      10   10   20.7    6.41   9.82  100.0%   2716  100.0%   2592
    Cavemen 4p        10    8   39.9    2.18   3.32  100.0%   1724  100.0%   1748

    .venv/bin/python bench/email_players.py --games 10 --configs stoneage:2,stoneage:4 \
        --standing                                                       # 327 s
    Stone Age 2p      10   10   30.1    5.45   8.15  100.0%   1571  100.0%   1712
    Stone Age 4p      10   10   21.3    5.26   7.91  100.0%   2146  100.0%   2334

    decisions by kind, no standing choices   2p: place 49.5 %, order 16.0, tools 15.7,
      card 11.0, feed 3.4, build 2.5, pick 1.9; 4p: place 50.8 %, order 15.9, tools
      12.9, card 7.8, feed 4.8, pick 4.5, build 3.3
    with tools and feeding standing (--standing): 2p: place 61.8 %, order 20.1, card
      12.6, build 3.2, pick 2.3 (no tools, no feed decision)
    refused commands: none (every listed line is legal; a line offering several
      numbers, ``place forest 1 | 2 | 3``, is filled in with one of them)

    Stone Age decision emails at 390 px: 84 emails (42 German); px, median / max
      kind           n      to the end of #choices           whole email
      build         12                520 /    701        3416 /   3754
      card          12                662 /    754        3386 /   3741
      feed          12                706 /    726        3328 /   4280
      order         12                637 /    921        3419 /   4159
      pick          12                433 /    581        3228 /   3936
      place         12               1422 /   1738        4314 /   4849
      tools         12                603 /    732        3432 /   4036
      overall       84                616 /   1738        3464 /   4849

What changed: every reply command from an email's list plays at the first try (100 %,
was 96-97 %), in English and German; decisions per player per round fell from 7.3 to 6.6
(2p) and 6.9 to 6.4 (4p) without standing choices (the count links let a random player
place bigger groups; the free order asks more often: 16 % of decisions, was 9.5 %), and
to 5.5 and 5.3 with standing choices for tools and feeding. These players pick at
random among all that an email offers, "use X next" as often as a whole order, so they
are asked the order again and again; the heuristic players of
bench/stoneage_decisions.py (a whole order at once) make 4.31 a player a round with 4
players with standing choices for tools and feeding (5.17 without, 3.56 with the order's
too). The choices of a placement email end within 1,800 px (max 1,738); the whole email
is longer than before (the board picture). Two Cavemen games of random players passed
the 60-round cap (random Cavemen tribes rarely reach Fire; the picks differ from the
before run's, as the lists changed).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from email.utils import parseaddr
from pathlib import Path
from typing import Any

from sqlmodel import func, select

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.inbox import (  # noqa: E402
    BASE_URL,
    NO_CAPS,
    TITLES,
    Bench,
    Received,
    forms_of,
    parse_configs,
)
from engine.registry import get_game  # noqa: E402
from pbem import create_app, services  # noqa: E402
from pbem.commands import expand_line  # noqa: E402
from pbem.db import get_engine, session_scope  # noqa: E402
from pbem.i18n import TRANSLATIONS  # noqa: E402
from pbem.kinds import ClosedBy, MoveSource  # noqa: E402
from pbem.migrate import upgrade  # noqa: E402
from pbem.models import Decision, EventLog, Game, Move  # noqa: E402
from tests.server.helpers import Mail  # noqa: E402
from tests.server.replying import reply_to, wire  # noqa: E402

CONFIGS = (("stoneage", 2), ("stoneage", 4), ("cavemen", 4))
MAX_TRIES = 4  # tries from one email; then the game page
MAX_ROUNDS = 60  # a game still running after this many rounds is left unfinished
QUICK_ROUNDS = 2  # --quick: one game of each configuration, this many rounds
COMMANDS_HEAD = "Or answer this email with a command (one a line; several play your next " \
                "turns too):"
# words a person reads as amounts of goods (Stone Age's resources, in both languages)
GOODS = {"food", "wood", "brick", "stone", "gold", "nahrung", "holz", "lehm", "stein"}
DECISION_EMAILS = ("decision", "decision (follow-up)", "reminder")
# a group of a listed command: "(a | b | c)", or "2 × (a | b | c)" for two picks of it
GROUP_RE = re.compile(r"(?:(\d+) × )?\(([^()|]*(?:\|[^()|]*)+)\)")
NO_CAPS_REPLIES = {**NO_CAPS, "REPLY_ANSWERS_PER_HOUR": 100_000, "TALK_PER_HOUR": 100_000}
HEIGHT_VIEWPORT: Any = {"width": 390, "height": 844}
HEIGHT_JS = """() => {
  const end = document.getElementById("choices");
  return [document.documentElement.scrollHeight,
          end ? end.getBoundingClientRect().bottom + window.scrollY : null];
}"""


# --------------------------------------------------------------------------- reading emails


def command_heads() -> tuple[str, ...]:
    """The line that opens an email's list of reply commands, in English and German (up
    to its parenthesis: the words a reader recognises)."""
    from babel.support import Translations

    german = Translations.load(str(TRANSLATIONS), ["de"]).gettext(COMMANDS_HEAD)
    return tuple(head.split(" (")[0] for head in (COMMANDS_HEAD, german))


def listed_commands(text: str, heads: Sequence[str]) -> list[str]:
    """The reply commands an email's text part lists: the indented lines after the line
    that begins with one of ``heads``, up to the first line that is not."""
    lines = text.replace("\r\n", "\n").split("\n")
    for i, line in enumerate(lines):
        if line.startswith(tuple(heads)):
            out: list[str] = []
            for listed in lines[i + 1:]:
                if not listed.startswith("  ") or not listed.strip():
                    break
                out.append(listed.strip())
            return out
    return []


def is_pattern(line: str) -> bool:
    """A listed line that offers a choice to fill in: several numbers (``place forest 1 |
    2 | 3``, ``pbem.commands.expand_line``) or a group ``(a | b)``."""
    return len(expand_line(line)) > 1 or GROUP_RE.search(line) is not None


def expand(line: str, rng: random.Random) -> str:
    """A listed command as a person fills it in, uniformly: each group ``(a | b)`` one of
    its words; each ``n × (a | b)`` n of them: n different ones in a random order, as
    things named once each (cards to discard, places in an order), but for goods
    (``GOODS``: ``take 3 × (wood | brick)``), of which one pays several of a kind: then
    each pick from the whole group."""
    def pick(m: re.Match[str]) -> str:
        words = [w.strip() for w in m.group(2).split("|")]
        times = int(m.group(1) or 1)
        if 1 < times <= len(words) and not all(w.lower() in GOODS for w in words):
            return " ".join(rng.sample(words, times))
        return " ".join(rng.choice(words) for _ in range(times))
    if GROUP_RE.search(line) is None:
        return rng.choice(expand_line(line))  # one of the numbers a line offers
    return GROUP_RE.sub(pick, line)


def text_of(got: Received) -> str:
    body = got.msg.get_body(("plain",)) if got.msg is not None else None
    return body.get_content() if body is not None else ""


def html_of(got: Received) -> str:
    body = got.msg.get_body(("html",)) if got.msg is not None else None
    return body.get_content() if body is not None else ""


def language_of(got: Received) -> str:
    return str(got.msg["Content-Language"] or "en") if got.msg is not None else "en"


# --------------------------------------------------------------------------- what is counted


@dataclass
class Attempt:
    """One try at a decision from its email."""

    kind: str  # the decision's kind
    channel: str  # "command" or "link"
    played: bool
    first: bool = False  # the first try at that decision
    listed: str = ""  # the command as the email listed it (a pattern, maybe)
    sent: str = ""  # the line sent, or the variant chosen on a link's page
    reason: str = ""  # why it did not play
    lang: str = "en"


@dataclass
class Sample:
    """A Stone Age decision email kept for the height measurement."""

    kind: str
    round: int
    lang: str
    seed: int
    html: str


@dataclass
class Played:
    """What one game counted."""

    engine: str
    players: int
    seed: int
    emails: dict[str, Counter] = field(default_factory=dict)  # address -> kind -> emails
    attempts: list[Attempt] = field(default_factory=list)
    on_page: int = 0  # decisions made on the game page after MAX_TRIES refused tries
    stale: int = 0  # emails read when their decision had closed already
    no_offer: int = 0  # decision emails offering neither a link nor a command
    no_commands: int = 0  # decision emails listing no reply command
    samples: list[Sample] = field(default_factory=list)
    # read from the database once the game is over (or left)
    opened: Counter = field(default_factory=Counter)  # decision kind -> decisions opened
    closed_by: Counter = field(default_factory=Counter)  # ClosedBy -> decisions
    still_open: int = 0
    moves: Counter = field(default_factory=Counter)  # MoveSource -> moves
    rounds: int = 0
    finished: bool = False

    @property
    def decisions(self) -> int:
        return sum(self.opened.values())

    def all_emails(self, kinds: Sequence[str] | None = None) -> int:
        return sum(n for c in self.emails.values() for k, n in c.items()
                   if kinds is None or k in kinds)

    def per_player_round(self, count: float) -> float:
        return count / self.players / max(self.rounds, 1)


# --------------------------------------------------------------------------- the players


def set_standing_choices(players: EmailPlayers, page: str, lang: str,
                         rng: random.Random) -> None:
    """Set the player's standing choices for tools and feeding on their game page
    (``page``: the path ``/g/<token>`` of the seat's page, from one of their emails),
    as the player would before the game's first decision (``--standing``): the form
    ``id="standing"`` of the page, its radio for tools after a roll set to ``all`` ("Add
    tools whenever they raise what I get, the fewest pips wasted"), for feeding to
    ``pay`` ("Pay what Food does not cover with resources: Wood first, ..."); the order
    of the use phase is left as it is (asked). A game whose page offers no such form
    (Cavemen) is left alone; a Stone Age page without one, or one that does not show
    both as set after the POST, stops the bench (RuntimeError): the figures must never
    come from a player who thinks they set them and did not. ``lang`` and ``rng`` are
    not needed: the form names its values in the notation."""
    html = players.client.get(page).get_data(as_text=True)
    form = next((f for f in forms_of(html) if f.attrs.get("id") == "standing"), None)
    if form is None:
        if "stoneage" in html:
            raise RuntimeError(f"no standing-choices form on {page}")
        return
    wanted = {"standing.tools": "all", "standing.feed": "pay"}
    if any(value not in form.radios.get(name, ()) for name, value in wanted.items()):
        raise RuntimeError(f"the standing-choices form offers no {wanted}: {form.radios}")
    resp = players.client.post(form.action, data={**form.hidden, **wanted}, follow_redirects=True)
    shown = resp.get_data(as_text=True)
    for name, value in wanted.items():
        if f'name="{name}" value="{value}" checked' not in shown:
            raise RuntimeError(f"{name} is not shown as {value} after saving it")


class EmailPlayers(Bench):
    """Plays games whose every seat is a person answering their emails at random."""

    def __init__(self, app: Any, max_rounds: int = MAX_ROUNDS, standing: bool = False,
                 keep_html: bool = False) -> None:
        super().__init__(app, "emails")
        self.max_rounds, self.standing, self.keep_html = max_rounds, standing, keep_html
        self.heads = command_heads()
        self.rng = random.Random(0)
        self.game = Played("", 0, 0)
        self.game_id = ""
        self.queue: deque[Received] = deque()
        self.pages: dict[str, str] = {}  # address -> the game page of its seat

    # -- the mailbox

    def fetch(self) -> list[Received]:
        """Deliver what the outbox holds; count it, queue it to be read."""
        got = self.deliver()
        rounds = self.rounds() if self.keep_html else 0
        for g in got:
            self.game.emails.setdefault(g.to, Counter())[g.kind] += 1
            page = g.first("/g/")
            if page and g.kind not in ("host_confirm", "invitation"):
                self.pages.setdefault(g.to, page)
            if self.keep_html and self.game.engine == "stoneage" and g.decision_id \
                    and g.kind in DECISION_EMAILS:
                self.game.samples.append(Sample(self.kind_of(g.decision_id), rounds,
                                                language_of(g), self.game.seed, html_of(g)))
        self.queue.extend(got)
        return got

    def kind_of(self, decision_id: int) -> str:
        with session_scope() as s:
            return str(s.exec(select(Decision.kind).where(Decision.id == decision_id)).one())

    def rounds(self) -> int:
        """The rounds begun so far (the game's ROUND_EVENT events)."""
        kind = getattr(get_game(self.game.engine), "ROUND_EVENT", None)
        with session_scope() as s:
            return int(s.exec(select(func.count()).select_from(EventLog).where(
                EventLog.game_id == self.game_id, EventLog.kind == kind)).one())

    def played(self, decision_id: int | None) -> bool:
        """Whether the decision closed with its player's move."""
        with session_scope() as s:
            decision = s.get(Decision, decision_id)
            move = s.exec(select(Move).where(Move.decision_id == decision_id)).first()
        return (decision is not None and decision.closed_by == ClosedBy.PLAYER
                and move is not None and move.source == MoveSource.PLAYER)

    # -- one game

    def play_game(self, engine_name: str, n: int, seed: int) -> Played:
        """One game from its creation on the web to its end (or ``max_rounds``)."""
        people = self.start(engine_name, n, seed)
        first = True
        while (asked := self.next_decision()) is not None:
            if first and self.standing:
                for person in people:
                    set_standing_choices(self, self.pages[person.email], person.language,
                                         self.rng)
            first = False
            self.decide(*asked)
            self.fetch()
        return self.tally()

    def start(self, engine_name: str, n: int, seed: int) -> list[services.PlayerIn]:
        """Make a game as on the web (its first emails read in ``next_decision``); its
        players, the second and fourth reading German."""
        tag = f"{engine_name}{n}.{seed}"
        people = [services.PlayerIn(f"Player {i}", f"p{i}.{tag}@players.invalid",
                                    "de" if i % 2 else "en") for i in range(n)]
        created = services.create_game(engine_name, people, seed=seed, confirm_by_email=True)
        self.rng, self.game_id = random.Random(seed), created.game_id
        self.game = Played(engine_name, n, seed, {p.email: Counter() for p in people})
        self.queue.clear()
        self.pages = {}
        self.fetch()
        return people

    def next_decision(self) -> tuple[Received, Decision] | None:
        """Read the emails in the order they came (the host confirms, the others accept
        their invitations) up to the next that asks for a decision still open: it and
        the decision; None when no email asks any more, or the game has gone past
        ``max_rounds`` (left unfinished)."""
        while self.queue:
            got = self.queue.popleft()
            if got.kind in ("host_confirm", "invitation"):
                link = got.first("/host/confirm/" if got.kind == "host_confirm"
                                 else "/invite/")  # (the invitation's first: accept)
                if link is None:
                    raise RuntimeError(f"a {got.kind} email without its link")
                self.click(link)
                self.fetch()
            elif got.decision_id is None or got.kind not in DECISION_EMAILS:
                continue  # nothing asked: game_started, answers, results
            elif self.rounds() > self.max_rounds:
                return None
            elif (decision := self.open_decision(got.decision_id)) is None:
                self.game.stale += 1
            else:
                return got, decision
        return None

    def decide(self, got: Received, decision: Decision) -> None:
        """Try what the email offers, uniformly at random, until one plays; after
        MAX_TRIES refusals, decide on the game page."""
        offers = [("link", p) for p in got.links if p.startswith("/a/")]
        listed = listed_commands(text_of(got), self.heads)
        offers += [("command", c) for c in listed]
        self.game.no_offer += not offers
        self.game.no_commands += not listed
        lang = language_of(got)
        dropped: set[tuple[str, str]] = set()
        for i in range(MAX_TRIES):
            pool = [o for o in offers if o not in dropped]
            if not pool:
                break
            channel, what = self.rng.choice(pool)
            attempt = (self.try_link(decision, what) if channel == "link"
                       else self.try_command(got, decision, what, lang))
            attempt.first, attempt.lang = i == 0, lang
            self.game.attempts.append(attempt)
            if attempt.played:
                return
            if channel == "link" or not is_pattern(what):
                dropped.add((channel, what))
        self.game.on_page += 1
        action = self.bot_action(decision, self.rng)[2]
        self.answer_on_page(got, decision, action, self.rng, Counter())

    def try_link(self, decision: Decision, path: str) -> Attempt:
        """A one-click link: its confirmation page, a variant if it offers some, POST."""
        page = self.client.get(path)
        form = next((f for f in forms_of(page.get_data(as_text=True)) if "sig" in f.hidden),
                    None)
        if page.status_code != 200 or form is None:
            return Attempt(decision.kind, "link", False, reason=f"GET {page.status_code}")
        data = dict(form.hidden)
        variants = form.radios.get("choice", [])
        if variants:
            data["choice"] = self.rng.choice(variants)
        resp = self.client.post(path, data=data, follow_redirects=True)
        played = self.played(decision.id)
        return Attempt(decision.kind, "link", played, sent=data.get("choice", ""),
                       reason="" if played else f"POST {resp.status_code}")

    def try_command(self, got: Received, decision: Decision, listed: str,
                    lang: str) -> Attempt:
        """A listed command, filled in, sent as a reply to the email."""
        assert got.msg is not None
        sent = expand(listed, self.rng)
        reply = reply_to(Mail(got.msg), sent, lang=lang)
        to = parseaddr(str(reply["To"]))[1]
        services.receive_reply(wire(reply), [to], got.to)
        played = self.played(decision.id)
        answer = next((g for g in self.fetch() if g.kind == "reply" and g.to == got.to), None)
        if answer is None:
            raise RuntimeError(f"no answer to the reply {sent!r}")
        return Attempt(decision.kind, "command", played, listed=listed, sent=sent,
                       reason="" if played else refusal(answer.context))

    def tally(self) -> Played:
        """The game's decisions, moves and rounds, as the database holds them."""
        with session_scope() as s:
            game = s.get(Game, self.game_id)
            rows = s.exec(select(Decision.kind, Decision.closed_by)
                          .where(Decision.game_id == self.game_id)).all()
            moves = s.exec(select(Move.source).where(Move.game_id == self.game_id)).all()
            finished = game is not None and game.status == "finished"
        g = self.game
        g.opened = Counter(kind for kind, _ in rows)
        g.closed_by = Counter(str(by) for _, by in rows if by is not None)
        g.still_open = sum(1 for _, by in rows if by is None)
        g.moves = Counter(str(m) for m in moves)
        g.rounds, g.finished = self.rounds(), finished
        return g


def refusal(context: dict[str, Any]) -> str:
    """Why the answer to a reply says it did not play (its first line not recorded)."""
    refused = [r for r in context.get("results", []) if r.get("status") != "recorded"]
    if refused:
        return str(refused[0]["status"])
    talk = context.get("talk")
    return "read as table talk" if talk else "no command read"


def make_app(tmp: str) -> Any:
    url = f"sqlite:///{Path(tmp) / 'players.sqlite3'}"
    upgrade(url)
    app = create_app({"DATABASE_URL": url, "MAIL_BACKEND": "memory",
                      "MAIL_FROM": "pbem bench <pbem@players.invalid>",
                      "SECRET_KEY": "bench-secret", "BASE_URL": BASE_URL,
                      "MAILBOX_DIR": str(Path(tmp) / "mail"),
                      "FOLLOW_UP_MINUTES": 0,  # every decision emailed at once
                      "TAKEBACK_GRACE_SECONDS": 0,  # (not held for a take-back either)
                      **NO_CAPS_REPLIES})
    app.instance_path = tmp
    return app


def play_all(configs: Sequence[tuple[str, int]], seeds: Sequence[int],
             max_rounds: int = MAX_ROUNDS, standing: bool = False, keep_html: bool = False,
             done: Callable[[str, int, list[Played], float], None] | None = None,
             ) -> dict[tuple[str, int], list[Played]]:
    """Play ``seeds`` games of each configuration on a fresh temporary database;
    ``done`` is called after each configuration (its games, the seconds they took)."""
    out: dict[tuple[str, int], list[Played]] = {}
    with tempfile.TemporaryDirectory(prefix="pbem-bench-players-") as tmp:
        app = make_app(tmp)
        with app.app_context():
            players = EmailPlayers(app, max_rounds, standing, keep_html)
            for engine_name, n in configs:
                t0 = time.perf_counter()
                out[engine_name, n] = [players.play_game(engine_name, n, s) for s in seeds]
                if done is not None:
                    done(engine_name, n, out[engine_name, n], time.perf_counter() - t0)
            get_engine(app).dispose()
    return out


# --------------------------------------------------------------------------- report


def spread(values: Sequence[float], digits: int = 2) -> str:
    """Mean, median and range of per-game figures."""
    return (f"mean {statistics.mean(values):.{digits}f}, median "
            f"{statistics.median(values):.{digits}f} (min {min(values):.{digits}f}, "
            f"max {max(values):.{digits}f})")


def share(part: int, whole: int) -> str:
    return f"{part / whole:6.1%} of {whole:>5}" if whole else "     - of     0"


@dataclass
class Line:
    """The summary figures of one configuration."""

    config: str
    games: int
    finished: int
    rounds: float
    decisions: float  # per player per round, pooled over the games
    emails: float  # per player per round
    commands: tuple[int, int]  # first tries played, first tries
    links: tuple[int, int]


def first_tries(games: Sequence[Played], channel: str, kind: str | None = None
                ) -> tuple[int, int]:
    tries = [a for g in games for a in g.attempts
             if a.first and a.channel == channel and (kind is None or a.kind == kind)]
    return sum(a.played for a in tries), len(tries)


def report(engine_name: str, n: int, games: list[Played], seconds: float) -> Line:
    """Print the figures of one configuration; return its summary line."""
    title = f"{TITLES.get(engine_name, engine_name)} {n}p"
    finished = sum(g.finished for g in games)
    rounds = sum(g.rounds for g in games)
    decisions = sum(g.decisions for g in games)
    emails = sum(g.all_emails() for g in games)
    print(f"\n{title}: {len(games)} games (seeds {', '.join(str(g.seed) for g in games)}), "
          f"{finished} finished, {seconds:.0f} s")
    if finished < len(games):
        left = [f"seed {g.seed} at round {g.rounds}" for g in games if not g.finished]
        print(f"  !! left unfinished after the round cap: {', '.join(left)}")
    print(f"  {'rounds per game':<36}{spread([g.rounds for g in games], 1)}")
    print(f"  {'decisions per player per round':<36}"
          f"{spread([g.per_player_round(g.decisions) for g in games])}; pooled "
          f"{decisions / n / max(rounds, 1):.2f}")
    print(f"  {'emails per player per round':<36}"
          f"{spread([g.per_player_round(g.all_emails()) for g in games])}; pooled "
          f"{emails / n / max(rounds, 1):.2f}")
    for label, templates in (("  decision emails", DECISION_EMAILS),
                             ("  answers to replies", ("reply",))):
        part = sum(g.all_emails(templates) for g in games)
        print(f"  {label:<36}{part / n / max(rounds, 1):.2f} per player per round "
              f"({part / max(emails, 1):.0%} of the emails)")
    commands, links = first_tries(games, "command"), first_tries(games, "link")
    tried = [a for g in games for a in g.attempts]
    for label, channel, (ok, total) in (("reply commands", "command", commands),
                                        ("one-click links", "link", links)):
        every = [a for a in tried if a.channel == channel]
        print(f"  {'first try played, ' + label:<36}{share(ok, total)} first tries "
              f"(every try: {share(sum(a.played for a in every), len(every))})")
    firsts = [a for a in tried if a.first and a.channel == "command"]
    for label, mine in [
            ("  reply commands, players in en", [a for a in firsts if a.lang == "en"]),
            ("  reply commands, players in de", [a for a in firsts if a.lang == "de"]),
            ("  reply commands from a pattern", [a for a in firsts if is_pattern(a.listed)])]:
        print(f"  {label:<36}{share(sum(a.played for a in mine), len(mine))} first tries")
    print(f"  {'decided on the game page':<36}{sum(g.on_page for g in games)} (after "
          f"{MAX_TRIES} refused tries); emails offering nothing: "
          f"{sum(g.no_offer for g in games)}, listing no command: "
          f"{sum(g.no_commands for g in games)}; read after their decision closed: "
          f"{sum(g.stale for g in games)}")
    kinds: Counter = Counter()
    for g in games:
        kinds.update(g.opened)
    print(f"  {'decisions by kind':<36}" + ", ".join(
        f"{k} {c / decisions:.1%}" for k, c in kinds.most_common()))
    print("  first try by kind         commands played        links played")
    for kind, _ in kinds.most_common():
        print(f"    {kind:<22}{share(*first_tries(games, 'command', kind))}"
              f"    {share(*first_tries(games, 'link', kind))}")
    refused_most(tried)
    others = sum(c for g in games for s, c in g.moves.items() if s != MoveSource.PLAYER)
    if others:
        print(f"  !! {others} moves were not made by the players (timeouts or bots)")
    return Line(title, len(games), finished, rounds / len(games),
                decisions / n / max(rounds, 1), emails / n / max(rounds, 1), commands, links)


def refused_most(tried: Sequence[Attempt], most: int = 10) -> None:
    """The commands refused most often, by their shape (the command as sent, its
    numbers as ``n``: ``place toolmaker n``, with the numbers sent), with the reason
    the answer gave and the line the email listed (a pattern, or the command itself)."""
    refused = [a for a in tried if a.channel == "command" and not a.played]
    shapes: dict[tuple[str, str], list[Attempt]] = defaultdict(list)
    for a in refused:
        shapes[re.sub(r"\b\d+\b", "n", a.sent), a.reason].append(a)
    by_reason = Counter(f"{a.kind} {a.reason}" for a in refused)
    print(f"  refused commands: {len(refused)} ("
          + ", ".join(f"{r} {c}" for r, c in by_reason.most_common()) + ")")
    for (shape, reason), group in sorted(shapes.items(), key=lambda x: -len(x[1]))[:most]:
        numbers = sorted({int(n) for a in group for n in re.findall(r"\b\d+\b", a.sent)})
        sent = shape + (f" (n: {', '.join(map(str, numbers))})" if numbers else "")
        listed = group[0].listed
        source = "" if listed == group[0].sent else \
            f"   from: {listed[:60]}{'…' * (len(listed) > 60)}"
        print(f"    {len(group):>4}  {sent:<36} {reason}{source}")


LEGEND = ("dec/p/r: decisions opened per player per round, pooled over the games; "
          "e/p/r: emails per player per round (all of them); cmd, link: the share of "
          "first tries that played, reply commands and one-click links (first tries)")


def summary(lines: Sequence[Line]) -> None:
    print(f"{'configuration':<14}{'games':>6}{'done':>5}{'rounds':>7}{'dec/p/r':>8}"
          f"{'e/p/r':>7}{'cmd':>8}{'(n)':>7}{'link':>8}{'(n)':>7}")
    for x in lines:
        cmd = x.commands[0] / x.commands[1] if x.commands[1] else float("nan")
        link = x.links[0] / x.links[1] if x.links[1] else float("nan")
        print(f"{x.config:<14}{x.games:>6}{x.finished:>5}{x.rounds:>7.1f}{x.decisions:>8.2f}"
              f"{x.emails:>7.2f}{cmd:>8.1%}{x.commands[1]:>7}{link:>8.1%}{x.links[1]:>7}")


# --------------------------------------------------------------------------- email height


@dataclass
class Height:
    sample: Sample
    full: float  # the page's whole height, px
    choices_end: float | None  # from the top to the bottom edge of #choices, px


def pick_samples(samples: Sequence[Sample], per: int) -> list[Sample]:
    """Up to ``per`` emails of each decision kind and language, evenly spread over the
    order they were sent (so over the games and their rounds)."""
    groups: dict[tuple[str, str], list[Sample]] = defaultdict(list)
    for s in samples:
        groups[s.kind, s.lang].append(s)
    out: list[Sample] = []
    for group in groups.values():
        step = max(len(group) / per, 1)
        out.extend(group[int(i * step)] for i in range(min(per, len(group))))
    return out


def measure_heights(samples: Sequence[Sample]) -> list[Height]:
    """Load each email's HTML in headless Chromium at 390 px wide and measure it. In a
    thread of its own: Playwright's synchronous API refuses a thread whose asyncio loop
    runs (a test process whose browser tests keep one running)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(_measure_heights, samples).result()


def _measure_heights(samples: Sequence[Sample]) -> list[Height]:
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    out: list[Height] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=HEIGHT_VIEWPORT)
            page.route("**/*", lambda route: route.abort())  # an email loads nothing
            for s in samples:
                page.set_content(s.html, wait_until="load")
                full, end = page.evaluate(HEIGHT_JS)
                out.append(Height(s, float(full), None if end is None else float(end)))
        finally:
            browser.close()
    return out


def report_heights(heights: Sequence[Height]) -> None:
    print(f"\nStone Age decision emails at {HEIGHT_VIEWPORT['width']} px in Chromium: "
          f"{len(heights)} emails ({sum(h.sample.lang == 'de' for h in heights)} German); "
          "px, median / max")
    print(f"  {'kind':<12}{'n':>4}{'to the end of #choices':>28}{'whole email':>22}")
    kinds: dict[str, list[Height]] = defaultdict(list)
    for h in heights:
        kinds[h.sample.kind].append(h)
    for kind, group in [*sorted(kinds.items()), ("overall", list(heights))]:
        ends = [h.choices_end for h in group if h.choices_end is not None]
        fulls = [h.full for h in group]
        end = f"{statistics.median(ends):>8.0f} / {max(ends):>6.0f}" if ends else "no #choices"
        print(f"  {kind:<12}{len(group):>4}{end:>28}{statistics.median(fulls):>12.0f} / "
              f"{max(fulls):>6.0f}")
    missing = sum(h.choices_end is None for h in heights)
    if missing:
        print(f"  !! {missing} emails have no element id=\"choices\"")
    for label, key in (("to the end of the choices", lambda h: h.choices_end or 0.0),
                       ("whole email", lambda h: h.full)):
        worst = max(heights, key=key)
        print(f"  worst, {label}: {key(worst):.0f} px, a {worst.sample.kind} email of "
              f"round {worst.sample.round} (seed {worst.sample.seed}, {worst.sample.lang})")


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--games", type=int, default=3,
                        help="games per configuration (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="the first game's seed")
    parser.add_argument("--configs", default=",".join(f"{g}:{n}" for g, n in CONFIGS),
                        help="comma-separated game:players (default: %(default)s)")
    parser.add_argument("--max-rounds", type=int, default=MAX_ROUNDS,
                        help="a game still running after this many rounds is left "
                             "unfinished (default %(default)s)")
    parser.add_argument("--standing", action="store_true",
                        help="every player sets standing choices for tools and feeding "
                             "before the game's first decision")
    parser.add_argument("--height", action="store_true",
                        help="measure the Stone Age decision emails in Chromium at 390 px")
    parser.add_argument("--height-sample", type=int, default=6, metavar="K",
                        help="--height: emails per decision kind and language "
                             "(default %(default)s)")
    parser.add_argument("--quick", action="store_true",
                        help=f"one game of each configuration, {QUICK_ROUNDS} rounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.games, args.max_rounds = 1, QUICK_ROUNDS
    configs = parse_configs(args.configs)
    seeds = list(range(args.seed, args.seed + args.games))
    print(f"email players: {args.games} game(s) per configuration, seeds "
          f"{', '.join(map(str, seeds))}; every seat a person picking uniformly among "
          f"what each email offers (links and listed reply commands), {MAX_TRIES} tries, "
          f"then the game page; half the players read German; standing choices "
          f"{'set' if args.standing else 'none'}; SQLite, memory mail, caps lifted, no clock")
    start = time.perf_counter()
    lines: list[Line] = []
    played = play_all(configs, seeds, args.max_rounds, args.standing, args.height,
                      done=lambda e, n, games, t: lines.append(report(e, n, games, t)))
    print("\nsummary")
    print("  " + LEGEND)
    summary(lines)
    if args.height:
        samples = [s for games in played.values() for g in games for s in g.samples]
        if samples:
            report_heights(measure_heights(pick_samples(samples, args.height_sample)))
    print(f"\nwall time {time.perf_counter() - start:.0f} s")
    if not args.quick and any(x.finished < x.games for x in lines):
        print("!! a game did not finish")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
