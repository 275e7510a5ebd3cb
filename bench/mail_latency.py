"""Mail latency: confirm-to-inbox through a real SMTP server, and page times while the SMTP
server hangs; on SQLite and PostgreSQL.

For each database (SQLite: a temp file; PostgreSQL: a throwaway cluster from
tests/pgcluster.py, by default when its binaries are installed, always with
``--postgres``, never with ``--no-postgres``), migrated with ``pbem.migrate.upgrade``, this
script runs the deployment as real subprocesses: gunicorn (2 sync workers,
``--config python:pbem.gunicorn_conf``, a free loopback port) and one clock
(``flask --app pbem pbem clock``), with ``PBEM_MAIL_BACKEND=smtp`` to an aiosmtpd server
in this process on a free loopback port, pbem's default settings otherwise (the mail loop
polls the outbox every ``PBEM_MAIL_POLL_INTERVAL`` = 0.5 s on SQLite; on PostgreSQL a
NOTIFY from the queueing transaction wakes it), and the sending caps lifted. Games are
created in this process with ``services.create_game(..., start=True)`` on the same
database, each with addresses of its own. It measures:

a. Confirm -> inbox. Whole 4-player Cavemen games are played by answering each decision
   email as it arrives at the SMTP server: a random one-click link (``/a/<token>``) from
   the email's text part, ``GET`` (the confirm page) and ``POST`` its form (the ``sig``);
   a discard has no one-click link, so the game page (``/g/<token>``, form ``decision``)
   is posted instead, keeping 3 cards in the pool. One confirm at a time, each after a
   random "think time" (uniform in 0..``--think`` s, default 0.5 = the poll interval)
   from the email's arrival: a bench that clicks at once falls into step with the SQLite
   mail loop, whose next poll then always comes a full interval later (``--think 0``
   shows that worst case). The figure runs from the moment the POST is sent to the moment
   the SMTP server has the next decision email that POST caused (a decision that opened
   with it, found in the database after the POST answered, matched by its Message-ID
   ``<pbem.decision.<id>.…>``). A POST that opens no decision of its own (the end of the
   game, or a seat that waits for others) gives no sample. ``--confirms`` samples per
   database (default 200).
b. Pages while the SMTP server hangs. A single client, one request at a time, repeats
   ``GET /``, ``GET /g/<token>`` (a seat's game page), ``GET /a/<token>`` and the confirm
   ``POST /a/<token>`` on a few games (action and page tokens minted by this process for
   each game's next decision, untimed), at least ``--page-samples`` times (default 200)
   and for at least ``--phase-seconds`` (default 22): first with the working SMTP server
   (the clock delivers the confirms' emails meanwhile); then, on new games with the same
   seeds and choices (a game page grows with the game's log), as many times again with
   a tarpit on the same port: it accepts TCP connections and never sends the 220
   greeting, so the clock's mail loop is stuck in SMTP timeouts (``PBEM_SMTP_TIMEOUT``,
   10 s each: the 20 s or so of this phase see one fail and the next one hang).
   Requests only queue mail, so the pages should not notice. Prints the medians and p99s
   of each, and the ratio tarpit/normal. (In the normal phase the clock renders and
   sends email on the same 2 cores, in the tarpit phase it waits: a ratio below 1 is
   that work missing, not the tarpit helping.)

The machine is shared and noisy: compare figures within one run, as ratios, and quote
medians. The p99 of 200 samples is the third largest (nearest rank).

    .venv/bin/python bench/mail_latency.py [--confirms 200] [--page-samples 200]
        [--phase-seconds 22] [--think 0.5] [--postgres | --no-postgres] [--keep-logs]
    .venv/bin/python bench/mail_latency.py --confirms 20 --page-samples 20 \
        --phase-seconds 0 --no-postgres                                  # a quick look
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import email
import email.policy
import http.client
import itertools
import json
import math
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.pgcluster

from sqlalchemy import func  # noqa: E402
from sqlmodel import select  # noqa: E402

from engine.cavemen.bots import heuristic_bot  # noqa: E402
from engine.registry import get_game  # noqa: E402
from pbem import DefaultConfig, create_app, services  # noqa: E402
from pbem.db import get_engine, session_scope  # noqa: E402
from pbem.migrate import upgrade  # noqa: E402
from pbem.models import Decision, Game, Outbox, utcnow  # noqa: E402
from pbem.tokens import mint  # noqa: E402
from tests.pgcluster import PostgresCluster, PostgresUnavailable, free_port  # noqa: E402
from tests.smtpsink import SmtpSink, Tarpit  # noqa: E402

BIN = Path(sys.executable).parent
MAIL_FROM = "pbem bench <games@bench.example.org>"
NO_CAPS = {"CREATE_LIMIT_PER_HOUR": 100_000, "NOTICE_LIMIT_PER_ADDRESS": 100_000,
           "NOTICE_LIMIT_PER_GAME": 100_000, "INVITE_LIMIT_PER_ADDRESS": 100_000}
DECISION_ID_RE = re.compile(r"<pbem\.decision\.(\d+)\.")
SIG_RE = re.compile(r'name="sig" value="([0-9a-f]+)"')
DECISION_FORM_RE = re.compile(r'<form[^>]*id="decision".*?</form>', re.S)
DECISION_INPUT_RE = re.compile(r'name="decision_id" value="(\d+)"')
CARD_RE = re.compile(r'name="cards" value="([^"]+)"')
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
WAIT = 30.0  # seconds to wait for an email before counting it as lost


# --------------------------------------------------------------------------- figures


def quantile(values: list[float], q: float) -> float:
    """Nearest-rank quantile (q in 0..1) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(1, min(len(ordered), math.ceil(q * len(ordered)))) - 1]


def summary(values: list[float]) -> str:
    if not values:
        return "n=    0"
    ms = [v * 1000 for v in values]
    return (f"n={len(ms):4d}  median {statistics.median(ms):8.2f} ms  "
            f"p90 {quantile(ms, 0.90):8.2f}  p99 {quantile(ms, 0.99):8.2f}  "
            f"max {max(ms):8.2f}")


# --------------------------------------------------------------------------- SMTP side


@dataclass
class Received:
    """One message as the SMTP server got it, with the moment it had all of it."""

    at: float  # time.perf_counter() when the DATA was complete
    data: bytes

    @cached_property
    def msg(self) -> email.message.EmailMessage:
        return email.message_from_bytes(self.data, policy=email.policy.default)

    @cached_property
    def decision_id(self) -> int | None:
        m = DECISION_ID_RE.match(str(self.msg["Message-ID"]))
        return int(m.group(1)) if m else None

    @cached_property
    def game_id(self) -> str:
        """From the List-Id, ``<title> <GAMEID.games.domain>``."""
        m = re.search(r"<([0-9a-f]+)\.games\.", str(self.msg["List-Id"]))
        return m.group(1) if m else ""

    @cached_property
    def text(self) -> str:
        body = self.msg.get_body(("plain",))
        return body.get_content().replace("\r\n", "\n") if body else ""

    def links(self, prefix: str) -> list[str]:
        """The paths ``/a/<token>`` (or ``/g/``) of the links in the text part."""
        return re.findall(r"https?://[^/\s]+(" + re.escape(prefix) + r"[A-Za-z0-9_-]{43})",
                          self.text)


class Sink(SmtpSink):
    """The SMTP server of the bench; it keeps every message with its arrival time."""

    def __init__(self, port: int) -> None:
        super().__init__(port)
        self.received_list: list[Received] = []
        self.cond = threading.Condition()

    def received(self, envelope) -> None:
        at = time.perf_counter()  # parsed later, by the reader: the reply is not delayed
        with self.cond:
            self.received_list.append(Received(at, envelope.original_content
                                               or envelope.content))
            self.cond.notify_all()

    def count(self) -> int:
        with self.cond:
            return len(self.received_list)

    def wait_for(self, start: int, match: Callable[[Received], bool],
                 timeout: float = WAIT) -> Received | None:
        """The first message from index ``start`` on that matches, waiting for it."""
        end = time.monotonic() + timeout
        i = start
        while True:
            with self.cond:
                batch = self.received_list[i:]
                if not batch:
                    left = end - time.monotonic()
                    if left <= 0:
                        return None
                    self.cond.wait(min(left, 0.5))
                    continue
            i += len(batch)
            for rec in batch:
                if match(rec):
                    return rec


# --------------------------------------------------------------------------- processes


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if this bench process dies (Linux)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Proc:
    """A subprocess in a session of its own, stopped by its process group."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.name, self.argv, self.env, self.log = name, argv, env, log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, preexec_fn=_die_with_parent)

    def tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def check(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            code = None if self.proc is None else self.proc.returncode
            raise RuntimeError(f"{self.name} exited ({code}):\n{self.tail()}")

    def wait_until(self, ready: Callable[[], bool], timeout: float = 60.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.check()
            with contextlib.suppress(OSError, http.client.HTTPException):
                if ready():
                    return
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready after {timeout:.0f} s:\n{self.tail()}")

    def stop(self, grace: float = 20.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):  # a worker left behind
            os.killpg(self.proc.pid, signal.SIGKILL)


def request(port: int, method: str, path: str,
            form: list[tuple[str, str]] | None = None) -> tuple[int, bytes, float, float]:
    """One request on a new connection: (status, body, start, end), perf_counter times;
    ``start`` is taken just before the request is written to the socket."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    body = urllib.parse.urlencode(form).encode() if form is not None else None
    try:
        conn.connect()
        t0 = time.perf_counter()
        conn.request(method, path, body=body, headers=FORM if body is not None else {})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, data, t0, time.perf_counter()
    finally:
        conn.close()


# --------------------------------------------------------------------------- one database


@dataclass
class Results:
    db: str
    poll: str
    inbox: list[float] = field(default_factory=list)  # POST sent -> next email at the server
    post: list[float] = field(default_factory=list)  # the same POSTs' response times
    no_sample: int = 0  # POSTs that opened no decision of their own
    lost: int = 0  # emails that did not come within WAIT seconds
    refused: int = 0  # POSTs not answered 200 (a closed decision, a discard retried)
    via_page: int = 0  # discards posted through the game page
    keep_two: int = 0  # of which refused keeping 3 cards, then recorded keeping 2
    emails: int = 0  # all emails the server got during part a
    games: int = 0
    pages: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    tarpit: dict[str, object] = field(default_factory=dict)


class Deployment:
    """gunicorn + clock on one database, the SMTP server, and this process's app."""

    def __init__(self, kind: str, url: str, work: Path, args) -> None:
        self.kind, self.url, self.work, self.args = kind, url, work, args
        self.smtp_port = free_port()
        self.web_port = free_port()
        self.secret = "bench-" + os.urandom(16).hex()
        base = f"http://127.0.0.1:{self.web_port}"
        config = {"DATABASE_URL": url, "BASE_URL": base, "SECRET_KEY": self.secret,
                  "MAIL_BACKEND": "smtp", "SMTP_HOST": "127.0.0.1",
                  "SMTP_PORT": str(self.smtp_port), "MAIL_FROM": MAIL_FROM,
                  # a player's own next decision is emailed at once, not held back for
                  # an answer on the page: every confirm causes an email to time
                  "FOLLOW_UP_MINUTES": "0",
                  # nor held for a take-back (TAKEBACK_GRACE_SECONDS): the figure is the
                  # machinery's, from the click to the inbox
                  "TAKEBACK_GRACE_SECONDS": "0",
                  **{k: str(v) for k, v in NO_CAPS.items()}}
        # pbem's defaults for everything else: no PBEM_* setting from this shell leaks in
        env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
        env.update({f"PBEM_{k}": v for k, v in config.items()})
        self.env = env
        self.app = create_app({**config, "SMTP_PORT": self.smtp_port, **NO_CAPS,
                               "MAIL_POLL_INTERVAL": DefaultConfig.MAIL_POLL_INTERVAL,
                               "SMTP_TIMEOUT": DefaultConfig.SMTP_TIMEOUT})
        self.sink = Sink(self.smtp_port)
        self.tarpit: Tarpit | None = None
        self.web = Proc("gunicorn", [str(BIN / "gunicorn"), "--workers", "2", "--bind",
                                     f"127.0.0.1:{self.web_port}", "--config",
                                     "python:pbem.gunicorn_conf", "pbem:create_app()"],
                        env, work / "gunicorn.log")
        self.clock = Proc("clock", [str(BIN / "flask"), "--app", "pbem", "pbem", "clock"],
                          env, work / "clock.log")
        self.rng = random.Random(args.seed)
        self.serial = 0

    def start(self) -> None:
        self.sink.start()
        self.web.start()
        self.clock.start()
        self.web.wait_until(lambda: request(self.web_port, "GET", "/healthz")[0] == 200)
        self.clock.wait_until(lambda: "clock running" in self.clock.tail())

    def stop(self) -> None:
        if self.tarpit is not None:  # first, so the clock's SMTP wait ends at once
            self.tarpit.stop()
        self.clock.stop()
        self.web.stop()
        self.sink.stop()
        get_engine(self.app).dispose()

    # ----------------------------------------------------------------- database

    def new_games(self, count: int, players: int,
                  seeds: Iterator[int] | None = None) -> list[str]:
        """New games that start at once, each with addresses of its own; their engine
        seeds from ``seeds`` (default: this run's next seeds)."""
        ids = []
        with self.app.app_context():
            for _ in range(count):
                self.serial += 1
                people = [services.PlayerIn(f"Player {i}", f"p{i}.g{self.serial}@example.com")
                          for i in range(players)]
                seed = next(seeds) if seeds is not None else self.args.seed + self.serial
                ids.append(services.create_game("cavemen", people, seed=seed,
                                                confirm_by_email=False,
                                                start=True).game_id)
        return ids

    def open_decisions(self, game_id: str) -> tuple[str, list[int]]:
        with session_scope(self.app) as s:
            status = s.get(Game, game_id).status
            ids = list(s.exec(select(Decision.id).where(Decision.game_id == game_id,
                                                        Decision.closed_at.is_(None))))
        return status, sorted(ids)

    def outbox(self, since_id: int = 0, due_only: bool = False) -> dict[str, int]:
        """Emails by status (``due_only``: those whose time to be sent has come)."""
        query = select(Outbox.status, func.count()).where(Outbox.id > since_id)
        if due_only:
            query = query.where(Outbox.next_attempt_at <= utcnow())
        with session_scope(self.app) as s:
            rows = s.exec(query.group_by(Outbox.status)).all()
        return {str(status): count for status, count in rows}

    def last_outbox_id(self) -> int:
        with session_scope(self.app) as s:
            return s.exec(select(func.max(Outbox.id))).one() or 0

    def failures(self, since_id: int) -> tuple[int, str | None]:
        """Emails since ``since_id`` whose sending failed at least once, and the latest
        error (not the rows skipped on purpose, e.g. for a decision that closed)."""
        where = (Outbox.id > since_id, Outbox.last_error.is_not(None),
                 Outbox.status.in_(("pending", "sending", "undeliverable")))
        with session_scope(self.app) as s:
            n = s.exec(select(func.count()).select_from(Outbox).where(*where)).one()
            last = s.exec(select(Outbox.last_error).where(*where)
                          .order_by(Outbox.id.desc()).limit(1)).first()
        return n, last

    def drain(self, timeout: float = 120.0) -> None:
        """Wait until the clock has delivered everything that is due (a follow-up email
        held back while its player may answer on the page is not due yet)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.clock.check()
            left = self.outbox(due_only=True)
            if not left.get("pending", 0) and not left.get("sending", 0):
                time.sleep(0.3)  # the pass ends and its connection closes
                return
            time.sleep(0.1)
        raise RuntimeError(f"the outbox did not drain in {timeout:.0f} s: {self.outbox()}\n"
                           + self.clock.tail())

    # ----------------------------------------------------------------- part a

    def confirm(self, rec: Received, res: Results) -> tuple[float, float] | None:
        """Answer one decision email; (POST start, POST end) if it was recorded."""
        links = rec.links("/a/")
        if links:
            path = self.rng.choice(links)
            status, page, _, _ = request(self.web_port, "GET", path)
            sig = SIG_RE.search(page.decode()) if status == 200 else None
            if sig is None:
                res.refused += 1
                return None
            status, _, t0, t1 = request(self.web_port, "POST", path, [("sig", sig.group(1))])
            if status not in (200, 303):  # 303: the move's page (Post/Redirect/Get)
                res.refused += 1
                return None
            return t0, t1
        # no one-click link (a discard): the game page's decision form
        (path,) = rec.links("/g/")[:1] or (None,)
        if path is None:
            res.refused += 1
            return None
        status, page, _, _ = request(self.web_port, "GET", path)
        form = DECISION_FORM_RE.search(page.decode())
        if status != 200 or form is None:
            res.refused += 1
            return None
        html = form.group(0)
        sig, decision = SIG_RE.search(html).group(1), DECISION_INPUT_RE.search(html).group(1)
        cards = CARD_RE.findall(html)
        res.via_page += 1
        # 3 cards stay in the pool: 3 of these, or 2 if a locked Fire (no checkbox) is in
        # it; the page does not say which, so a refusal is tried again keeping 2
        for keep in (3, 2):
            fields = [("sig", sig), ("decision_id", decision), ("kind", "discard")]
            fields += [("cards", c) for c in cards[: max(0, len(cards) - keep)]]
            status, _, t0, t1 = request(self.web_port, "POST", path, fields)
            if status in (200, 303):
                res.keep_two += keep == 2
                return t0, t1
            if status != 400:
                break
        res.refused += 1
        return None

    def play(self, res: Results) -> None:
        """Play whole games, one confirm at a time, until enough samples."""
        seen: set[int] = set()  # decision ids whose email came
        answered: set[int] = set()
        first = self.sink.count()
        cursor = first
        waiting: dict[int, Received] = {}

        def collect() -> None:
            nonlocal cursor
            with self.sink.cond:
                batch = self.sink.received_list[cursor:]
            cursor += len(batch)
            for rec in batch:
                if rec.decision_id is not None:
                    seen.add(rec.decision_id)
                    if rec.decision_id not in answered:
                        waiting[rec.decision_id] = rec

        games: list[str] = []
        while len(res.inbox) < self.args.confirms:
            if not games:
                games = self.new_games(2, 4)
                res.games += 2
                self.drain()
            game = games[0]
            collect()
            status, open_ids = self.open_decisions(game)
            if status != "active":
                games.pop(0)
                continue
            todo = [d for d in open_ids if d in waiting]
            if not todo:
                got = self.sink.wait_for(cursor, lambda r, ids=set(open_ids):
                                         r.decision_id in ids)
                if got is None:
                    res.lost += 1
                    games.pop(0)  # give this game up
                continue
            rec = waiting.pop(todo[0])
            answered.add(todo[0])
            time.sleep(self.rng.uniform(0, self.args.think))  # the player reads the email
            collect()
            known = set(seen)
            mark = self.sink.count()
            done = self.confirm(rec, res)
            if done is None:
                continue
            t0, t1 = done
            res.post.append(t1 - t0)
            _, now_open = self.open_decisions(game)
            new = set(now_open) - known - answered
            if not new:
                res.no_sample += 1
                continue
            got = self.sink.wait_for(mark, lambda r, ids=new: r.decision_id in ids)
            if got is None:
                res.lost += 1
                continue
            res.inbox.append(got.at - t0)
        res.emails = self.sink.count() - first

    # ----------------------------------------------------------------- part b

    def next_tokens(self, games: list[str], rng: random.Random,
                    seeds: Iterator[int]) -> Iterator[tuple[str, str]]:
        """For each game in turn: (action token for its next decision, page token of that
        seat), minted here for the heuristic bot's choice; new games replace ended ones."""
        mod = get_game("cavemen")
        i = 0
        while True:
            game_id = games[i % len(games)]
            with session_scope(self.app) as s:  # (SQLite: holds the write lock)
                game = s.get(Game, game_id)
                decision = s.exec(select(Decision).where(
                    Decision.game_id == game_id, Decision.closed_at.is_(None))
                    .order_by(Decision.id)).first() if game.status == "active" else None
                if decision is not None:
                    state = mod.from_json(json.loads(game.state))
                    action = heuristic_bot(state, decision.position, rng).to_json()
                    act = mint(s, "action", game_id, decision.seat_id, decision.id, action)
                    page = mint(s, "page", game_id, decision.seat_id)
            if decision is None:  # the game ended: a new one in its place
                games[i % len(games)] = self.new_games(1, 3, seeds)[0]
                continue
            i += 1
            yield act, page

    def pages(self, samples: int, tokens: Iterator[tuple[str, str]],
              seconds: float = 0.0) -> dict[str, list[float]]:
        """At least ``samples`` rounds, for at least ``seconds``."""
        out: dict[str, list[float]] = {"GET /": [], "GET /g/<token>": [],
                                       "GET /a/<token>": [], "POST /a/<token>": []}
        end = time.monotonic() + seconds
        done = 0
        while done < samples or time.monotonic() < end:
            done += 1
            act, page = next(tokens)  # untimed
            for name, path in (("GET /", "/"), ("GET /g/<token>", f"/g/{page}")):
                status, _, t0, t1 = request(self.web_port, "GET", path)
                if status != 200:
                    raise RuntimeError(f"{name} answered {status}")
                out[name].append(t1 - t0)
            status, body, t0, t1 = request(self.web_port, "GET", f"/a/{act}")
            sig = SIG_RE.search(body.decode())
            if status != 200 or sig is None:
                raise RuntimeError(f"GET /a/<token> answered {status}")
            out["GET /a/<token>"].append(t1 - t0)
            status, _, t0, t1 = request(self.web_port, "POST", f"/a/{act}",
                                        [("sig", sig.group(1))])
            if status != 303:  # to the page that says the move (Post/Redirect/Get)
                raise RuntimeError(f"POST /a/<token> answered {status}")
            out["POST /a/<token>"].append(t1 - t0)
        return out

    def phase_tokens(self) -> Iterator[tuple[str, str]]:
        """Tokens for one phase of part b: 4 new 3-player games, the same seeds and bot
        choices in each phase (so both phases see the same pages: a game page grows with
        the game's log); 5 rounds played untimed to warm the workers, then the outbox
        drained."""
        seeds = itertools.count(self.args.seed + 100_000)
        games = self.new_games(4, 3, seeds)
        tokens = self.next_tokens(games, random.Random(self.args.seed), seeds)
        self.pages(5, tokens)
        self.drain()
        return tokens

    def tarpit_phases(self, res: Results) -> None:
        tokens = self.phase_tokens()
        before, since = self.sink.count(), self.last_outbox_id()
        t0 = time.perf_counter()
        res.pages["normal"] = self.pages(self.args.page_samples, tokens,
                                         self.args.phase_seconds)
        res.tarpit["normal_seconds"] = time.perf_counter() - t0
        res.tarpit["normal_emails"] = self.sink.count() - before
        res.tarpit["normal_outbox"] = self.outbox(since)  # at the phase's end
        self.drain()
        rounds = len(res.pages["normal"]["GET /"])
        tokens = self.phase_tokens()
        self.sink.stop()  # the port now goes to a server that never answers
        self.tarpit = Tarpit(self.smtp_port)
        self.tarpit.start()
        since = self.last_outbox_id()
        t0 = time.perf_counter()
        res.pages["tarpit"] = self.pages(rounds, tokens)  # the same rounds as before
        res.tarpit.update(seconds=time.perf_counter() - t0, held=self.tarpit.accepted,
                          outbox=self.outbox(since), failed=self.failures(since))


# --------------------------------------------------------------------------- running


@contextlib.contextmanager
def database(kind: str, work: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{work / 'pbem.sqlite3'}"
        return
    cluster = PostgresCluster()
    cluster.start()
    try:
        yield cluster.url(cluster.create_database())
    finally:
        cluster.stop()


def run_one(kind: str, work: Path, args) -> Results:
    poll = DefaultConfig.MAIL_POLL_INTERVAL
    how = (f"mail loop polls every {poll:g} s" if kind == "sqlite" else
           f"mail loop woken by NOTIFY (poll fallback {max(poll, 5.0):g} s)")
    res = Results(kind, how)
    with database(kind, work) as url:
        upgrade(url)
        dep = Deployment(kind, url, work, args)
        try:
            dep.start()
            print(f"[{kind}] gunicorn on :{dep.web_port}, clock, SMTP on :{dep.smtp_port}; "
                  f"{how}", flush=True)
            t0 = time.monotonic()
            dep.play(res)
            print(f"[{kind}] part a: {len(res.inbox)} samples in {time.monotonic() - t0:.0f} s",
                  flush=True)
            t0 = time.monotonic()
            dep.tarpit_phases(res)
            print(f"[{kind}] part b: {time.monotonic() - t0:.0f} s", flush=True)
        finally:
            dep.stop()
    return res


def report(res: Results) -> None:
    print(f"\n=== {res.db} === ({res.poll})")
    print("a. confirm POST sent -> SMTP server has the next decision email it caused:")
    print(f"   {summary(res.inbox)}")
    print(f"   the same confirms' POST response alone: {summary(res.post)}")
    print(f"   {res.games} games; {len(res.post)} confirms recorded ({res.via_page} discards "
          f"through the game page, {res.keep_two} of them a second POST keeping 2 cards "
          f"besides a locked Fire, timed), {res.no_sample} opened no decision of their own (no "
          f"sample), {res.lost} emails lost (> {WAIT:g} s), {res.refused} POSTs refused; "
          f"{res.emails} emails received in all")
    normal, tarpit = res.pages.get("normal"), res.pages.get("tarpit")
    if not normal or not tarpit:
        return
    t = res.tarpit
    print(f"b. page times, working SMTP server vs a tarpit on its port (one request at a "
          f"time; normal: {len(normal['GET /'])} of each in {t['normal_seconds']:.0f} s, "
          f"tarpit: {len(tarpit['GET /'])} of each in {t['seconds']:.0f} s):")
    for name in normal:
        a, b = normal[name], tarpit[name]
        ma, mb = statistics.median(a), statistics.median(b)
        pa, pb = quantile(a, 0.99), quantile(b, 0.99)
        print(f"   {name:<16} normal median {ma * 1000:7.2f} ms  p99 {pa * 1000:7.2f} | "
              f"tarpit median {mb * 1000:7.2f} ms  p99 {pb * 1000:7.2f} | ratio tarpit/normal "
              f"median {mb / ma:5.2f}  p99 {pb / pa:5.2f}")
    def statuses(counts: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"

    failed, error = t["failed"]
    skipped = " (skipped: the decision closed before its email went out)"
    print(f"   normal phase: the SMTP server got {t['normal_emails']} emails; the phase's "
          f"emails at its end: {statuses(t['normal_outbox'])}"
          + (skipped if "skipped" in t["normal_outbox"] else ""))
    print(f"   tarpit phase: {t['held']} SMTP connection(s) from the clock held by the "
          f"tarpit; the phase's emails at its end: {statuses(t['outbox'])}; {failed} failed "
          f"at least once" + (f" (last error: {error})" if error else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--confirms", type=int, default=200,
                        help="confirm -> inbox samples per database (part a)")
    parser.add_argument("--page-samples", type=int, default=200,
                        help="requests of each kind per phase (part b)")
    parser.add_argument("--phase-seconds", type=float, default=22.0,
                        help="least duration of each phase of part b")
    parser.add_argument("--think", type=float, default=DefaultConfig.MAIL_POLL_INTERVAL,
                        help="part a: wait uniform in 0..THINK s after an email before "
                             "clicking (0: click at once)")
    parser.add_argument("--postgres", action=argparse.BooleanOptionalAction, default=None,
                        help="also PostgreSQL (default: when its binaries are installed)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep-logs", action="store_true",
                        help="keep the temp dir with the gunicorn and clock logs")
    args = parser.parse_args()

    def on_signal(signum, _frame):
        raise SystemExit(f"stopped by signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    kinds = ["sqlite"]
    if args.postgres is not False:
        try:
            PostgresCluster().stop()  # only finds the binaries (and removes its temp dir)
            kinds.append("postgresql")
        except PostgresUnavailable as exc:
            if args.postgres:
                sys.exit(f"--postgres: {exc}")
            print(f"(PostgreSQL skipped: {exc})")
    started = time.monotonic()
    print(f"mail latency: gunicorn 2 sync workers (--config python:pbem.gunicorn_conf) + one "
          f"clock process, real SMTP (aiosmtpd) on loopback; pbem defaults (SMTP timeout "
          f"{DefaultConfig.SMTP_TIMEOUT} s), sending caps lifted; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    results = []
    tmp = Path(tempfile.mkdtemp(prefix="pbem-bench-mail-"))
    try:
        for kind in kinds:
            work = tmp / kind
            work.mkdir()
            results.append(run_one(kind, work, args))
    finally:
        if args.keep_logs:
            print(f"(logs kept in {tmp})")
        else:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    for res in results:
        report(res)
    print(f"\nwall time {time.monotonic() - started:.0f} s; load average now "
          f"{os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
