"""Digest week: emails per player per day, three games at once over a simulated week.

(Issue 20, point 6: "with the digest, at most 2 emails per player per day across three
games running at once over a simulated week".)

Four friends in four zones play three games at once, started together on a Monday:
Stone Age for 3 (Ann, Bob, Cy), Cavemen for 4 (all four) and Stone Age for 2 (Ann, Dee);
Ann is in all three, the others in two. The policy is the default (48 hours a decision,
reminders 24 and 2 hours before). A temporary SQLite database, the memory mail backend,
freezegun moving the clock in steps of ``--step`` minutes (10); at each step the clock's
sweep runs (``clock.sweep``: reminders, timeouts, digests), then its mail loop's delivery
pass, then the players read what reached them, as people do:

* ``turn`` (the default setting: an email per turn): each player reads their mail at
  09:00, 13:00 and 19:00 local time and answers every decision email still open, through
  its links (the heuristic bot's choice: the one-click link bound to it, or one whose
  confirmation page offers it as a variant, else the game page's form), and goes on with
  the follow-up decisions its answer page shows, as in ``bench/inbox.py --modes page``.
* ``digest``: each player chose a daily digest at a local hour (Ann 08:00 Berlin, Bob
  07:00 Los Angeles, Cy 20:00 Tokyo, Dee 09:00 London) and news at once; they answer
  every decision the digest lists when it comes (its one-click links, else its game page
  links), going on with the follow-ups on the answer page, and act on a reminder when
  they read their mail (as in ``turn``).
* ``digest+news``: the same, with the news (a game started, a timeout, a hand-over)
  "in the next turn email" instead of at once.

Counted: every email each address receives, by kind, per local day of the player (Monday
to Sunday); the decisions the players made; moves not made by them (timeouts); games
finished. Printed: emails per player per day, mean and max over every player-day, with
the days of the games' start apart (the start and the invitations come once).

    .venv/bin/python bench/digest_week.py                  # all three settings
    .venv/bin/python bench/digest_week.py --settings digest --days 3
    .venv/bin/python bench/digest_week.py --quick          # the smoke test's run

Figures (909e67d + the digest's news, 2026-11-27, 19 s): emails per player per whole
local day, 7 days, the first being the start day:

    setting        mean  max  mean after start max after decisions timeouts
    turn           3.39    6              3.33         6       116        0
    digest         1.07    3              0.83         1        46        0
    digest+news    0.86    1              0.83         1        46        0

With the digest, the start day brings the games' start (news at once: one game_started
per game but the one where the player decides first) and the digest; every later day at
most the digest (no reminder falls due: a decision opened after one digest is listed in
the next, within 24 hours, before its half-time reminder). With the news in the digest,
at most one email a day. The games move slower with the digest (46 decisions in the week
against 116 when the players read their mail three times a day): one visit a day.
"""

from __future__ import annotations

import argparse
import email
import email.policy
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from email.utils import parseaddr
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from freezegun import freeze_time
from sqlmodel import select

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from inbox import BASE_URL as INBOX_BASE  # noqa: E402
from inbox import LINK_RE, NO_CAPS, decision_form, form_data, forms_of  # noqa: E402

from engine.core import Action, format_action  # noqa: E402
from engine.registry import get_game  # noqa: E402
from pbem import clock, create_app, mail, services  # noqa: E402
from pbem.db import get_engine, session_scope  # noqa: E402
from pbem.kinds import Delivery, News  # noqa: E402
from pbem.migrate import upgrade  # noqa: E402
from pbem.models import Address, Decision, Game, Move, Outbox, Seat  # noqa: E402
from pbem.tokens import lookup  # noqa: E402

BASE_URL = INBOX_BASE
T0 = datetime(2030, 1, 14, 6, 0, tzinfo=UTC)  # a Monday
PEOPLE = {  # name: (zone, digest hour)
    "Ann": ("Europe/Berlin", 8), "Bob": ("America/Los_Angeles", 7),
    "Cy": ("Asia/Tokyo", 20), "Dee": ("Europe/London", 9)}
GAMES = (("stoneage", ("Ann", "Bob", "Cy")), ("cavemen", ("Ann", "Bob", "Cy", "Dee")),
         ("stoneage", ("Ann", "Dee")))
READS = (9, 13, 19)  # local hours a player reads their mail
SETTINGS = ("turn", "digest", "digest+news")


def address(name: str, setting: str) -> str:
    return f"{name.lower()}.{setting.replace('+', '-')}@bench.invalid"


class Week:
    def __init__(self, app, setting: str, seed: int) -> None:
        self.app, self.setting = app, setting
        self.client = app.test_client()
        self.box = mail.backend(app)
        self.rng = random.Random(seed)
        self.emails: dict[str, Counter] = defaultdict(Counter)  # (address, day) -> kinds
        self.inbox: dict[str, list[tuple[str, list[str], int | None]]] = defaultdict(list)
        self.made: Counter = Counter()  # how decisions were made
        self.zone = {address(n, setting): ZoneInfo(z) for n, (z, _) in PEOPLE.items()}

    # -- mail

    def deliver(self, now: datetime) -> None:
        mail.deliver_due(limit=10_000)
        sent, self.box.sent[:] = list(self.box.sent), []
        for out in sent:
            msg = email.message_from_bytes(out.data, policy=email.policy.default)
            with session_scope() as s:
                row = s.exec(select(Outbox).where(
                    Outbox.message_id == str(msg["Message-ID"]))).one()
                kind = str(row.template)
                if kind == "decision" and row.context.get("reminder"):
                    kind = "reminder"
                decision_id = row.context.get("decision_id")
            to = parseaddr(str(msg["To"]))[1].lower()
            body = msg.get_body(("plain",))
            links = LINK_RE.findall(body.get_content() if body is not None else "")
            day = now.astimezone(self.zone[to]).date()
            self.emails[(to, day)][kind] += 1
            self.inbox[to].append((kind, links, decision_id))

    # -- acting

    def open_decisions(self, to: str) -> list[Decision]:
        with session_scope() as s:
            found = s.exec(select(Decision).join(Seat, Seat.id == Decision.seat_id)
                           .where(Seat.email == to, Decision.closed_at.is_(None))
                           .order_by(Decision.id)).all()
            for d in found:
                s.expunge(d)
            return list(found)

    def bot(self, decision: Decision) -> tuple[Any, Any, Action]:
        with session_scope() as s:
            game = s.get(Game, decision.game_id)
            mod = get_game(game.engine)
            state = mod.from_json(json.loads(game.state))
        return mod, state, mod.BOTS["heuristic"](state, decision.position, self.rng)

    def still_open(self, decision_id: int) -> Decision | None:
        with session_scope() as s:
            d = s.get(Decision, decision_id)
            if d is None or d.closed_at is not None:
                return None
            s.expunge(d)
            return d

    def act(self, decision: Decision, links: list[str]) -> None:
        """The bot's choice for ``decision`` through the links of one email, then the
        follow-ups on the answer page."""
        mod, state, action = self.bot(decision)
        vary = getattr(mod, "choice_variants", None)
        page_link = None
        with session_scope() as s:
            tokens = [(p, lookup(s, p[3:], "action") if p.startswith("/a/")
                       else lookup(s, p[3:], "page")) for p in links
                      if p.startswith(("/a/", "/g/"))]
        for path, token in tokens:
            if token is None or token.game_id != decision.game_id:
                continue
            if path.startswith("/g/"):
                page_link = page_link or path
                continue
            if token.decision_id != decision.id or token.action is None:
                continue
            bound = Action.from_json(token.action)
            if bound != action and not (vary and action in vary(state, decision.position,
                                                                 bound)):
                continue
            page = self.client.get(path)
            form = next(f for f in forms_of(page.get_data(as_text=True)) if "sig" in f.hidden)
            data = {"sig": form.hidden["sig"]}
            if "choice" in form.radios:
                data["choice"] = format_action(action)
            resp = self.client.post(path, data=data, follow_redirects=True)
            self.made["one-click"] += 1
            return self.follow_ups(resp)
        if page_link is None:
            raise RuntimeError(f"no link for decision {decision.id} in the email")
        form = decision_form(self.client.get(page_link).get_data(as_text=True))
        if form is None or form.hidden.get("decision_id") != str(decision.id):
            raise RuntimeError(f"the game page does not show decision {decision.id}")
        self.made["game page"] += 1
        self.follow_ups(self.post(form, decision, action))

    def post(self, form, decision: Decision, action: Action):
        resp = self.client.post(form.action, data=form_data(action, decision.kind, form),
                                follow_redirects=True)
        if resp.status_code != 200:
            raise RuntimeError(f"{decision.kind} {action}: {resp.status_code}")
        return resp

    def follow_ups(self, resp) -> None:
        if resp.status_code != 200:
            raise RuntimeError(f"answer: {resp.status_code}")
        while (form := decision_form(resp.get_data(as_text=True))) is not None:
            decision = self.still_open(int(form.hidden["decision_id"]))
            if decision is None:
                raise RuntimeError("the answer page shows a closed decision")
            self.made["answer page"] += 1
            resp = self.post(form, decision, self.bot(decision)[2])

    def read(self, to: str, now: datetime, step: timedelta) -> None:
        """What ``to`` does with the mail that reached them."""
        local = now.astimezone(self.zone[to])
        reading = any(local.hour == h and local.minute < step.seconds // 60 for h in READS)
        keep = []
        for kind, links, decision_id in self.inbox[to]:
            if kind == "digest":  # read when it comes: every decision it lists
                with session_scope() as s:
                    listed = {t.game_id for p in links if p.startswith("/g/")
                              and (t := lookup(s, p[3:], "page")) is not None}
                for decision in self.open_decisions(to):
                    if decision.game_id in listed and self.still_open(decision.id):
                        self.act(decision, links)
            elif not reading:
                keep.append((kind, links, decision_id))
            elif decision_id is not None and (d := self.still_open(decision_id)) is not None:
                self.act(d, links)
        self.inbox[to] = keep

    # -- the week

    def setup(self) -> list[str]:
        if self.setting != "turn":
            with session_scope() as s:
                for name, (zone, hour) in PEOPLE.items():
                    s.add(Address(address=address(name, self.setting), timezone=zone,
                                  delivery=Delivery.DIGEST, digest_hour=hour,
                                  digest_sent_at=T0 - timedelta(days=1),
                                  news=News.TURN if "news" in self.setting else News.NOW))
        games = []
        for i, (engine_name, names) in enumerate(GAMES):
            players = [services.PlayerIn(n, address(n, self.setting),
                                         timezone=PEOPLE[n][0]) for n in names]
            games.append(services.create_game(engine_name, players, seed=i + 1,
                                              confirm_by_email=False, start=True).game_id)
        return games

    def run(self, days: int, step: timedelta) -> dict[str, Any]:
        with freeze_time(T0) as frozen:
            games = self.setup()
            now = T0
            while now < T0 + timedelta(days=days):
                frozen.move_to(now)
                result = clock.sweep(self.app, now=now)
                if result.get("errors"):
                    raise RuntimeError(f"the sweep failed: {result}")
                self.deliver(now)
                for to in list(self.zone):
                    self.read(to, now, step)
                self.deliver(now)  # what the moves queued, read at the next step
                now += step
        with session_scope() as s:
            moves = s.exec(select(Move.source).where(Move.game_id.in_(games))).all()
            finished = len(s.exec(select(Game.id).where(Game.id.in_(games),
                                                        Game.status == "finished")).all())
        return {"moves": Counter(moves), "finished": finished}


def report(week: Week, outcome: dict[str, Any], days: int) -> dict[str, Any]:
    start = {to: T0.astimezone(z).date() for to, z in week.zone.items()}
    per_day: list[int] = []
    after_start: list[int] = []
    kinds: Counter = Counter()
    lines = []
    end = T0 + timedelta(days=days)
    for to, zone in week.zone.items():
        row = []
        for offset in range(days + 1):
            day = start[to] + timedelta(days=offset)
            if datetime(day.year, day.month, day.day, tzinfo=zone) + timedelta(days=1) > end:
                break  # a day the week does not cover to its end
            count = week.emails.get((to, day), Counter())
            kinds.update(count)
            n = sum(count.values())
            row.append(n)
            per_day.append(n)
            if day != start[to]:
                after_start.append(n)
        lines.append(f"    {to.split('.')[0]:<5}" + " ".join(f"{n:3d}" for n in row))
    print(f"\nsetting {week.setting}: {days} days, emails per player per local day "
          "(whole local days; the first is the day the games start)")
    print("\n".join(lines))
    print("  emails by kind: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
    print(f"  decisions by the players: {outcome['moves'].get('player', 0)}"
          f" ({', '.join(f'{k} {v}' for k, v in week.made.items())}); "
          f"not by them: {sum(v for k, v in outcome['moves'].items() if k != 'player')}; "
          f"games finished: {outcome['finished']}")
    summary = {"setting": week.setting, "mean": statistics.mean(per_day),
               "max": max(per_day), "mean_after": statistics.mean(after_start),
               "max_after": max(after_start),
               "decisions": outcome["moves"].get("player", 0),
               "timeouts": sum(v for k, v in outcome["moves"].items() if k != "player")}
    print(f"  per player-day: mean {summary['mean']:.2f}, max {summary['max']}; after the "
          f"start day: mean {summary['mean_after']:.2f}, max {summary['max_after']}")
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--step", type=int, default=10, help="minutes per clock step")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--quick", action="store_true", help="2 days, digest+news only")
    args = parser.parse_args()
    if args.quick:
        args.days, args.settings, args.step = 2, "digest+news", 30
    settings = [x.strip() for x in args.settings.split(",") if x.strip()]
    if not settings or set(settings) - set(SETTINGS):
        parser.error(f"--settings takes {', '.join(SETTINGS)}")
    print(f"digest week: 3 games at once (Stone Age 3p, Cavemen 4p, Stone Age 2p), 4 players "
          f"in Berlin, Los Angeles, Tokyo, London; {args.days} days from Monday "
          f"{T0:%Y-%m-%d %H:%M} UTC, clock steps of {args.step} min")
    lines = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pbem-bench-digest-") as tmp:
        for setting in settings:
            url = f"sqlite:///{Path(tmp) / (setting.replace('+', '-') + '.sqlite3')}"
            upgrade(url)
            app = create_app({"DATABASE_URL": url, "MAIL_BACKEND": "memory",
                              "MAIL_FROM": "pbem bench <pbem@bench.invalid>",
                              "SECRET_KEY": "bench-secret", "BASE_URL": BASE_URL,
                              "MAILBOX_DIR": str(Path(tmp) / "mail"), **NO_CAPS})
            app.instance_path = tmp
            with app.app_context():
                week = Week(app, setting, args.seed)
                lines.append(report(week, week.run(args.days, timedelta(minutes=args.step)),
                                    args.days))
                get_engine(app).dispose()
    print("\nsummary (emails per player per local day)")
    print(f"{'setting':<13}{'mean':>6}{'max':>5}{'mean after start':>18}{'max after':>10}"
          f"{'decisions':>10}{'timeouts':>9}")
    for x in lines:
        print(f"{x['setting']:<13}{x['mean']:>6.2f}{x['max']:>5}{x['mean_after']:>18.2f}"
              f"{x['max_after']:>10}{x['decisions']:>10}{x['timeouts']:>9}")
    print(f"\nwall time {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
