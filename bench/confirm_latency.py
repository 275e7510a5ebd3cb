"""Confirm latency: from a confirm POST to the committed next emails, over whole games.

Plays whole Cavemen games (heuristic bot, fixed seeds) on SQLite WAL in a temp dir. Web
requests only queue email (the clock process delivers it), so the figure stops at the
commit of the transaction that wrote the next decision's emails to the outbox (mail
delivery is not included; bench/mail_latency.py measures confirm-to-inbox). Each decision
is made through a one-click token: the link from the delivered decision email whose
action is the bot's choice, or, where the email offers no such link (discards, bids
beyond the ones offered, ...), a token minted by the bench for the bot's choice.

Two ways of making each move, same seeds and so the same decisions, played alternately:

* ``service``: ``services.act_by_token(raw)`` in an app context; timed from the call to
  its return (the transaction has committed when it returns); its CPU time is shown too,
  as the machine is shared and wall times swing with other load.
* ``http``: the Flask test client (in-process, no sockets): ``GET /a/<raw>`` for the
  confirm page and its ``sig`` (timed on its own, outside the POST), then ``POST /a/<raw>``
  timed from the start of the POST to the return of ``act_by_token`` inside it (the
  commit, before the response page is rendered), and to the full response.

Between moves the bench delivers the outbox (``mail.deliver_due()``, as the clock's mail
loop would; memory backend) untimed for the commit figure; that delivery is timed on its
own and shown as an extra line. The sending caps on notices are lifted (the bench plays a
game in seconds with the same addresses, which a real game spread over days never
would).

    .venv/bin/python bench/confirm_latency.py [--games 2] [--players 4] [--modes service,http]
"""

from __future__ import annotations

import argparse
import cProfile
import email
import email.policy
import json
import math
import pstats
import random
import re
import statistics
import tempfile
import time
from pathlib import Path

from sqlmodel import select

from engine.cavemen.bots import heuristic_bot
from engine.registry import get_game
from pbem import create_app, mail, services
from pbem.db import session_scope
from pbem.migrate import upgrade
from pbem.models import Decision, Game
from pbem.tokens import lookup, mint

BASE_URL = "http://bench.invalid"
LINK_RE = re.compile(re.escape(BASE_URL) + r"/a/([A-Za-z0-9_-]{43})")
SIG_RE = re.compile(r'name="sig" value="([0-9a-f]+)"')
NO_CAPS = {"CREATE_LIMIT_PER_HOUR": 100_000, "NOTICE_LIMIT_PER_ADDRESS": 100_000,
           "NOTICE_LIMIT_PER_GAME": 100_000, "INVITE_LIMIT_PER_ADDRESS": 100_000,
           "TAKEBACK_GRACE_SECONDS": 0}  # the next decision's email at once


def quantile(values: list[float], q: float) -> float:
    """Nearest-rank quantile (q in 0..1) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q * len(ordered))))
    return ordered[rank - 1]


def summary(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (f"n={len(ms):5d}  median {statistics.median(ms):7.2f} ms  "
            f"p90 {quantile(ms, 0.90):7.2f}  p99 {quantile(ms, 0.99):7.2f}  "
            f"max {max(ms):7.2f}")


def _figures() -> dict[str, list[float]]:
    """A mode's samples, in seconds: wall times and this thread's CPU times."""
    return {"commit": [], "get": [], "response": [], "cpu": [], "get_cpu": []}


def _key(action: dict) -> str:
    return json.dumps(action, sort_keys=True, separators=(",", ":"))


class Bench:
    def __init__(self, app, players: int) -> None:
        self.app = app
        self.client = app.test_client()
        self.mod = get_game("cavemen")
        self.players = [services.PlayerIn(f"Player {i}", f"p{i}@bench.invalid")
                        for i in range(players)]
        self.links: dict[tuple[int, str], str] = {}  # (decision id, action) -> raw token
        self.commit_at: list[float] = []
        self.commit_cpu: list[float] = []  # this thread's CPU time at each commit
        self.minted = 0
        self.linked = 0
        self.delivery: list[float] = []
        self.profiles: dict[str, cProfile.Profile] | None = None
        self._wrap_act()

    def _wrap_act(self) -> None:
        """Note the moment ``act_by_token`` returns (its transaction has committed)."""
        original = services.act_by_token

        def timed(raw: str, choice: str | None = None):
            outcome = original(raw, choice)
            self.commit_at.append(time.perf_counter())
            self.commit_cpu.append(time.thread_time())
            return outcome

        services.act_by_token = timed  # only in this bench process

    def deliver(self) -> None:
        """Deliver the outbox (untimed for the commit figure) and keep the action links."""
        t0 = time.perf_counter()
        mail.deliver_due(limit=1000)
        self.delivery.append(time.perf_counter() - t0)
        box = mail.backend()
        raws = []
        for out in box.sent:  # mail.Outgoing: envelope and the bytes on the wire
            msg = email.message_from_bytes(out.data, policy=email.policy.default)
            body = msg.get_body(("plain",))
            raws += LINK_RE.findall(body.get_content() if body else "")
        box.sent.clear()
        with session_scope() as s:
            for raw in raws:
                token = lookup(s, raw, "action")
                if token is not None:
                    self.links[(token.decision_id, _key(token.action))] = raw

    def next_move(self, game_id: str, rng: random.Random) -> str | None:
        """The raw token for the bot's choice at the game's first open decision."""
        with session_scope() as s:
            game = s.get(Game, game_id)
            if game.status != "active":
                return None
            state = self.mod.from_json(json.loads(game.state))
            wanted = self.mod.pending(state)[0]
            decision = s.exec(select(Decision).where(
                Decision.game_id == game_id, Decision.closed_at.is_(None),
                Decision.position == wanted.seat, Decision.kind == wanted.kind)).one()
            action = heuristic_bot(state, wanted.seat, rng).to_json()
            raw = self.links.pop((decision.id, _key(action)), None)
            if raw is not None:
                self.linked += 1
                return raw
            self.minted += 1
            return mint(s, "action", game_id, decision.seat_id, decision.id, action)

    def _get(self, url: str):
        if self.profiles is None:
            return self.client.get(url)
        with self.profiles["GET confirm page"]:
            return self.client.get(url)

    def _post(self, url: str, data: dict[str, str]):
        if self.profiles is None:
            return self.client.post(url, data=data)
        with self.profiles["POST confirm"]:
            return self.client.post(url, data=data)

    def play(self, mode: str, seed: int, out: dict[str, list[float]]) -> int:
        created = services.create_game("cavemen", self.players, seed=seed,
                                       confirm_by_email=False, start=True)
        self.deliver()
        rng = random.Random(seed)
        moves = 0
        while (raw := self.next_move(created.game_id, rng)) is not None:
            if mode == "service":
                c0, t0 = time.thread_time(), time.perf_counter()
                services.act_by_token(raw)
                out["commit"].append(self.commit_at[-1] - t0)
                out["cpu"].append(time.thread_time() - c0)
            else:
                c0, t0 = time.thread_time(), time.perf_counter()
                page = self._get(f"/a/{raw}")
                t1, c1 = time.perf_counter(), time.thread_time()
                sig = SIG_RE.search(page.get_data(as_text=True))
                if page.status_code != 200 or sig is None:
                    raise RuntimeError(f"GET /a/<token> answered {page.status_code}")
                n = len(self.commit_at)
                c2, t2 = time.thread_time(), time.perf_counter()
                resp = self._post(f"/a/{raw}", {"sig": sig.group(1)})
                t3 = time.perf_counter()
                # 303: the page after the move (Post/Redirect/Get)
                if resp.status_code != 303 or len(self.commit_at) != n + 1:
                    raise RuntimeError(f"POST /a/<token> answered {resp.status_code}: "
                                       f"{resp.get_data(as_text=True)[:300]}")
                out["get"].append(t1 - t0)
                out["get_cpu"].append(c1 - c0)
                out["commit"].append(self.commit_at[-1] - t2)
                out["cpu"].append(self.commit_cpu[-1] - c2)
                out["response"].append(t3 - t2)
            moves += 1
            self.deliver()
        return moves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=2, help="games per mode")
    parser.add_argument("--players", type=int, default=4, choices=range(2, 6))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--modes", default="service,http",
                        help="comma-separated: service, http")
    parser.add_argument("--profile", action="store_true",
                        help="after the timed games, play one more game over http under "
                             "cProfile (GET and POST profiled apart) and print the top "
                             "entries")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - {"service", "http"}:
        parser.error("--modes takes service and/or http")

    with tempfile.TemporaryDirectory(prefix="pbem-bench-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'pbem.sqlite3'}"
        upgrade(url)
        app = create_app({"DATABASE_URL": url, "MAIL_BACKEND": "memory",
                          "MAIL_FROM": "pbem bench <pbem@bench.invalid>",
                          "SECRET_KEY": "bench-secret", "BASE_URL": BASE_URL,
                          "MAILBOX_DIR": str(Path(tmp) / "mail"), **NO_CAPS})
        results = {m: _figures() for m in modes}
        moves = {m: 0 for m in modes}
        started = time.perf_counter()
        with app.app_context():
            bench = Bench(app, args.players)
            for i in range(args.games):
                for mode in modes:  # alternate, so both see the same database growth
                    moves[mode] += bench.play(mode, args.seed + i, results[mode])
            elapsed = time.perf_counter() - started
            if args.profile:
                bench.profiles = {"GET confirm page": cProfile.Profile(),
                                  "POST confirm": cProfile.Profile()}
                bench.play("http", args.seed + args.games,
                           _figures())

    print(f"confirm latency: {args.games} game(s) per mode, {args.players} players, "
          f"heuristic bot, seeds {args.seed}..{args.seed + args.games - 1}; "
          f"SQLite WAL (synchronous=NORMAL) in a temp dir")
    print("requests only queue email: 'commit' ends when act_by_token returns, i.e. the "
          "transaction that queued the next emails has committed; delivery not included")
    print(f"decisions via email one-click links: {bench.linked}, via tokens minted by the "
          f"bench for the bot's choice: {bench.minted}")
    for mode in modes:
        r = results[mode]
        print(f"\n[{mode}] {moves[mode]} confirms")
        if mode == "service":
            print(f"  act_by_token -> commit        {summary(r['commit'])}")
            print(f"  its CPU time (less noisy)     {summary(r['cpu'])}")
        else:
            print(f"  POST start -> commit          {summary(r['commit'])}")
            print(f"  its CPU time (less noisy)     {summary(r['cpu'])}")
            print(f"  POST start -> full response   {summary(r['response'])}")
            print(f"  GET confirm page (not in the above) {summary(r['get'])}")
            print(f"  its CPU time (less noisy)     {summary(r['get_cpu'])}")
    if set(modes) == {"service", "http"} and moves["service"] == moves["http"]:
        diffs = [h - s for h, s in zip(results["http"]["commit"],
                                       results["service"]["commit"], strict=True)]
        print(f"\nHTTP routing + sig check + describe_token before the commit, paired "
              f"per decision: median {statistics.median(diffs) * 1000:.2f} ms")
    print(f"\nseparately, after each commit (and each game's start): deliver_due() of the new "
          f"emails, render + memory backend, not in the figures above:\n  per call "
          f"{summary(bench.delivery)}")
    print(f"wall time {elapsed:.1f} s")
    for name, prof in (bench.profiles or {}).items():
        stats = pstats.Stats(prof).strip_dirs()
        print(f"\nprofile, {name} (one more game, untimed), by own time:")
        stats.sort_stats("tottime").print_stats(20)
        print("by total time:")
        stats.sort_stats("cumulative").print_stats(45)


if __name__ == "__main__":
    main()
