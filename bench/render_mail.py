"""Render mail: CPU time to render one two-part email, every kind, both games.

Builds real games through the services on a temporary SQLite database (migrated with
``pbem.migrate.upgrade``, memory mail backend, sending caps lifted): for each game and
player count of ``--players`` (default 2, 3 and 4; seats alternate English and German,
with time zones of their own), a game made on the web (``create_game(...,
confirm_by_email=True)``: host_confirm), confirmed by the host (invitations), one seat
declining (declined) and re-invited, everyone accepting (game_started and the first
decisions), then played to its end by the games' heuristic bots through the same service
code as a click (``services.playing.locked_decision`` / ``act``). On the way, the 3rd
decision gets its reminder (``services.send_reminder``), the 5th times out
(``services.time_out``: notices to the others), on the 8th a seat is handed over and
accepted (handover_invite, welcome, notices) and on the 12th a hand-over is declined
(handover_invite, declined); the game ends with a result email to everyone.

After every step, each email the step queued is rendered ``--reps`` times (default 5) the
way the mail loop renders it (``pbem.mail.load_row``, ``why_not_send`` and
``render_row``: the database reads, the links minted as tokens, both templates, the MIME
message), each time in a transaction that is then rolled back (the minted tokens vanish),
timed with ``time.thread_time()`` (CPU time of this thread, SQLite included; a shared
machine slows it less than the wall clock). Then the mail loop delivers them for real
(``mail.deliver_due``), so the next emails show only what happened since, as players get
them. The first render of each kind, game and language is an untimed warm-up (template
compilation). ``--every N`` times only every N-th decision email (the others are still
delivered) for a quicker run.

Prints, per kind of email and game: emails, the median and p99 (nearest rank) of their
render times (each email's time is the median of its reps), then the overall figures, and
where the time goes (medians per email): ``templates`` (the two templates rendered),
``mime`` (the rest of ``build_message``: headers, quoted-printable, the header check),
``state+view`` (the engine's ``from_json`` and ``view``, the translation and the
translated view), ``tokens`` (minting the links) and ``rest`` (database reads, events,
deadlines, threading). ``--profile`` renders each email once more under cProfile (not
timed: profiling slows what it measures) and prints the top entries.

Figures on this machine (2 shared cores, load below 1; quote medians, compare ratios
within one run), ``--reps 3``, the 6 games, 1,080 emails, the templates of commit 4bd01d5:

    before (the code of 4bd01d5): median 9.9 ms, p99 16.0 ms per email (templates 4.2,
        MIME 1.1, tokens 1.3, the rest 2.9)
    after (catalogs bound per render, prebuilt statements, one insert for the links,
        binascii quoted-printable, plain headers written as they are, deadlines and card
        lookups kept): median 5.0 ms, p99 8.1 ms (templates 2.4, MIME 0.7, tokens 0.2,
        the rest 1.5); between 4.1 and 5.2 ms over several runs

Issue 19, point 3 (branch mailcpu against 622c631, the two run alternately on a busy
machine, load 4 to 6; ``--reps 3 --every 2``, 589 emails timed): median 8.8 and 9.4 ms ->
7.4 and 7.4 ms, p99 19.1 and 15.2 ms -> 14.2 and 13.2 ms (templates 4.1 -> 3.9, MIME 1.6
-> 0.8, the rest 2.6 -> 1.9): the message's bytes written directly
(``compose.wire_message``), the game's narration imported once per part, the reads as
Core rows on the session's connection. Not kept: a cache of whole boards (per game
state, seat and language): in these games 998 of the 1,017 emails with a board show one
that no other email to the same address showed, so it would hit only on this bench's own
repeats of an email.

Issue 19, point 3, round 2 (branch mailcpu2 against 4eec30e, the two run alternately,
load 5 to 6; ``--reps 3 --every 2``, 589 emails): median 5.84 and 6.83 ms -> 4.77 and
5.38 ms, p99 10.1 and 13.7 ms -> 9.3 and 10.3 ms (templates 3.1 and 3.6 -> 2.1 and 2.3;
the rest as it was): the narration both parts say (news, choices, prompts, asks, hints)
said once, in text, and reused as the HTML when nothing in it needed escaping
(``pbem.narrate.EmailNarration``); ``_`` bound directly; a dict's fields read as items
first (``TemplateEnvironment``); the text boards' shared parts kept by ``memo`` (hit
rates with each email rendered once: 37% to 90%); names and choices listed in Python.
Not reached: the goal of 3 ms median. Left: the HTML boards (about a fifth of a decision
email; the player's own panel changes with every email), Jinja's call overhead per
macro and attribute, loading the row with its game and seat as ORM objects (a tenth).

Issue 35, point 6 (branch perfb35 against 0868480, the two run side by side at once, three
pairs, load 5 to 10 from the other sessions' work; ``--reps 3 --every 2``, 539 emails):
median 7.45, 7.16, 6.83 ms -> 7.07, 6.69, 6.49 ms (5 to 7% less), p99 13.5, 13.5, 12.2 ->
12.3, 12.1, 10.5 ms (9 to 14% less), templates 3.07, 2.92, 2.77 -> 2.61, 2.43, 2.36 ms
(15 to 17% less); the rest as it was. What changed: the narration modules of a game are
made once per template and language in the process and shared by the emails
(``pbem.narrate.narration_module``: two modules an email, a few dozen macro definitions
each, were a twentieth of the time), a template's calls skip Jinja's second look at each
callable (``TemplateContext``: ``Context.call`` and its ``hasattr`` checks were a tenth
of the samples, now a twentieth), and the memo keys of card data are their ``repr`` (sorted
JSON: 3.4% of the samples -> 1.8%). A statistical profile (SIGPROF every 0.5 ms over the
timed renders) puts the rest: templates 39% (cards, choices and board of Stone Age first,
each a few percent, no one call above 4%), loading the row with its game and seat as ORM
objects 11%, the seat's view 7%, minting the links 6%, quoted-printable 3%. Not reached:
the goals of 3 ms median and 8 ms p99 (a quiet machine measured 4.9 and 8.5 ms before).

Issue 35, point 6, third session (branch perfc35 against ef474a4, run one after the other,
alternating, five pairs, load 2 to 8 from the other sessions' work; ``--reps 3 --every
2``, 539 emails): median 3.80, 3.40, 3.47, 3.65, 4.04 ms -> 3.15, 2.90, 3.02, 3.50, 3.03 ms
(median of the runs 3.65 -> 3.03, paired ratio 0.85), p99 7.57 -> 6.09 ms (median of the
runs); templates 1.57 -> 1.27 ms, MIME 0.57 -> 0.39 ms. What changed: every ``{% import
... with context %}`` is kept in the process and shared by renders alike
(``pbem.narrate.kept_import``, keyed as the narration modules are: ``memo`` and ``ui``
say which names of their context they read), ``ui_inline`` is called without Jinja's
look at ``__call__`` (a fifth of an email's calls), quoted-printable is encoded line by
line with each line's encoding kept (the same bytes), ``WIRE`` keeps how a header folds
(a game's List-Id and Subject), ``memo``'s scope is made once per part, the context
processors run once per part, the outbox row, game and seat are one Core query, a
decision's suppression and state are one statement, board marks and Stone Age's glossary
links are kept, the events other than talk are picked in Python. Every email of this
bench's games is byte for byte what it was (both languages, both games, 965 emails
rendered with tokens, time and boundaries fixed), and so are 285 game pages but for
their ETag (it names the code's build). Not reached: the median of 3 ms is met in 2
runs of 10 (2.90 and 2.91 ms); what is left is spread thin (Jinja's macro calls, the
database reads and the links' insert, the seat's view).

    .venv/bin/python bench/render_mail.py
    .venv/bin/python bench/render_mail.py --reps 3 --every 4 --profile
    .venv/bin/python bench/render_mail.py --games stoneage --players 4
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

from sqlmodel import Session, select

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.registry import games, get_game
from pbem import create_app, localize, mail, services
from pbem.db import get_engine, session_scope
from pbem.migrate import upgrade
from pbem.models import Decision, Game, Outbox, Seat
from pbem.services.playing import act, locked_decision
from pbem.tokens import mint

BASE_URL = "http://bench.invalid"
ZONES = {"en": "America/New_York", "de": "Europe/Berlin"}
PARTS = ("templates", "mime", "state+view", "tokens", "rest")


# --------------------------------------------------------------------------- timing


class Parts:
    """CPU time per part of a render, by wrapping the functions ``pbem.mail.compose`` calls
    (only while the bench runs; pbem itself is not changed). Nested calls of one part
    count once."""

    def __init__(self) -> None:
        self.time: dict[str, float] = defaultdict(float)
        self.depth: dict[str, int] = defaultdict(int)
        self.saved: list = []

    def install(self) -> None:
        targets = [(mail.compose, "render_template", "templates"),
                   (mail.compose, "_render", "templates"),
                   (mail.compose, "build_message", "message"),
                   (mail.compose, "mint_links", "tokens"),
                   (localize, "translation_for", "state+view"), (localize, "view", "state+view")]
        for mod in games().values():
            targets += [(mod, "from_json", "state+view"), (mod, "view", "state+view")]
        for obj, attr, part in targets:
            original = getattr(obj, attr, None)
            if original is None:  # a name of an older or newer pbem
                continue
            self.saved.append((obj, attr, original))
            setattr(obj, attr, self._wrap(original, part))

    def uninstall(self) -> None:
        for obj, attr, original in reversed(self.saved):
            setattr(obj, attr, original)
        self.saved = []

    def _wrap(self, fn, part):
        def wrapper(*a, **kw):
            self.depth[part] += 1
            start = time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                self.depth[part] -= 1
                if not self.depth[part]:
                    self.time[part] += time.thread_time() - start
        return wrapper

    def take(self) -> dict[str, float]:
        out = dict(self.time)
        self.time.clear()
        return out


class Sampler:
    """Times the render of every email queued since the last call, then delivers them."""

    def __init__(self, app, reps: int, every: int, profile: cProfile.Profile | None) -> None:
        self.app, self.reps, self.every, self.profile = app, reps, every, profile
        self.done: set[int] = set()
        self.warm: set[tuple] = set()
        self.decisions = 0
        self.parts = Parts()
        # (kind, game, language) -> per email: (median total, {part: median})
        self.samples: dict[tuple[str, str, str], list[tuple[float, dict]]] = defaultdict(list)

    def take(self, engine_name: str) -> None:
        with session_scope() as s:
            rows = s.exec(select(Outbox.id, Outbox.template, Outbox.context, Outbox.language)
                          .where(Outbox.status == "pending").order_by(Outbox.id)).all()
        for row_id, template, context, lang in rows:
            if row_id in self.done:
                continue
            self.done.add(row_id)
            kind = "reminder" if template == "decision" and context.get("reminder") else template
            if kind == "decision":
                self.decisions += 1
                if self.decisions % self.every:
                    continue
            key = (kind, engine_name, lang)
            if key not in self.warm:
                self.warm.add(key)
                self.render_once(row_id)
            if self.profile:  # an extra render of its own: profiling slows what it sees
                self.profile.enable()
                self.render_once(row_id)
                self.profile.disable()
            times, parts = [], []
            for _ in range(self.reps):
                total, part = self.render_once(row_id, timed=True)
                times.append(total)
                parts.append(part)
            self.samples[key].append((statistics.median(times), {
                p: statistics.median(x.get(p, 0.0) for x in parts)
                for p in ("templates", "message", "tokens", "state+view")}))
        mail.deliver_due(limit=10_000)
        mail.backend(self.app).sent.clear()

    def render_once(self, row_id: int, timed: bool = False) -> tuple[float, dict]:
        with Session(get_engine(self.app), expire_on_commit=False) as s:
            if timed:
                self.parts.install()
                self.parts.take()
            start = time.thread_time()
            try:
                row, game, seat, to_player = mail.load_row(s, row_id)
                mail.recipients.why_not_send(s, row, game, seat, to_player)
                mail.render_row(s, row, game, seat, to_player)
                total = time.thread_time() - start
            finally:
                if timed:
                    self.parts.uninstall()
                s.rollback()
        return total, self.parts.take()


# --------------------------------------------------------------------------- games


def token(kind: str, game_id: str, seat_id: int, action: dict | None = None) -> str:
    with session_scope() as s:
        return mint(s, kind, game_id, seat_id, None, action)


def seats_of(game_id: str) -> list[Seat]:
    with session_scope() as s:
        return list(s.exec(select(Seat).where(Seat.game_id == game_id)
                           .order_by(Seat.position)))


def player(i: int, tag: str, lang: str) -> services.PlayerIn:
    return services.PlayerIn(f"Player {i}", f"p{i}.{tag}@bench.invalid", lang, ZONES[lang])


def next_decision(game_id: str) -> Decision | None:
    """The earliest open decision of a person (bots play inside the moves)."""
    with session_scope() as s:
        return s.exec(select(Decision).join(Seat, Seat.id == Decision.seat_id)
                      .where(Decision.game_id == game_id, Decision.closed_at.is_(None),
                             Seat.bot.is_(None)).order_by(Decision.id)).first()


def bot_move(game_id: str, decision: Decision, rng: random.Random) -> None:
    """The heuristic bot's choice for a person's decision, played as their click."""
    with session_scope() as s:
        game, seat, dec = locked_decision(s, game_id, decision.seat_id, decision.id)
        mod = get_game(game.engine)
        state = mod.from_json(json.loads(game.state))
        action = mod.BOTS["heuristic"](state, seat.position, rng)
        act(s, game, seat, dec, action, "player", state)


def play_game(app, sampler: Sampler, engine_name: str, n: int, seed: int) -> int:
    """One game from its creation on the web to its end; returns the moves played."""
    tag = f"{engine_name}{n}"
    langs = ["en", "de"] * 3 if n % 2 == 0 else ["de", "en"] * 3
    players = [player(i, tag, langs[i]) for i in range(n)]
    created = services.create_game(engine_name, players, seed=seed, title="")
    gid, admin = created.game_id, created.admin_token
    sampler.take(engine_name)  # host_confirm
    seats = seats_of(gid)
    services.confirm_host(token("host_confirm", gid, seats[0].id))
    sampler.take(engine_name)  # invitations
    services.answer_invitation(token("invite", gid, seats[1].id), False)
    sampler.take(engine_name)  # declined
    services.replace_player(admin, 1, player(1, tag + "b", langs[1]))
    sampler.take(engine_name)  # the new invitation
    for seat in seats_of(gid)[1:]:
        services.answer_invitation(token("invite", gid, seat.id), True)
        sampler.take(engine_name)  # game_started and the first decisions
    rng = random.Random(seed)
    moves = 0
    while (decision := next_decision(gid)) is not None:
        moves += 1
        if moves == 3 and decision.next_reminder_at is not None:
            services.send_reminder(decision.id, decision.next_reminder_at)
            sampler.take(engine_name)
        if moves == 5:
            services.time_out(decision.id, decision.deadline_at + timedelta(seconds=1))
        elif moves in (8, 12):
            position = 1 if moves == 8 else n - 1
            new = player(position, f"{tag}h{moves}", langs[position])
            services.hand_over(admin, position, new)
            sampler.take(engine_name)  # handover_invite
            seat_id = seats_of(gid)[position].id
            answer = {"answer": "accept", "email": new.email}
            services.answer_handover(token("handover", gid, seat_id, answer), moves == 8)
        else:
            bot_move(gid, decision, rng)
        sampler.take(engine_name)
    with session_scope() as s:
        status = s.get(Game, gid).status
    if status != "finished":
        sys.exit(f"{engine_name} {n} players: the game ended as {status!r}")
    return moves


# --------------------------------------------------------------------------- report


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * 99 // 100) - 1)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.2f}"


def report(samples: dict[tuple[str, str, str], list[tuple[float, dict]]]) -> None:
    by_kind: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (kind, engine_name, _), rows in samples.items():
        by_kind[(kind, engine_name)] += [t for t, _ in rows]
    print(f"\n{'kind':<16}{'game':<10}{'emails':>7}{'median ms':>11}{'p99 ms':>9}")
    for (kind, engine_name), times in sorted(by_kind.items()):
        print(f"{kind:<16}{engine_name:<10}{len(times):>7}{ms(statistics.median(times)):>11}"
              f"{ms(p99(times)):>9}")
    print()
    for label, pick in (("English", lambda k: k[2] == "en"), ("German", lambda k: k[2] == "de"),
                        *((g, lambda k, g=g: k[1] == g) for g in sorted(games())),
                        ("overall", lambda k: True)):
        rows = [r for k, v in samples.items() if pick(k) for r in v]
        if not rows:
            continue
        times = [t for t, _ in rows]
        print(f"{label:<10} {len(times):5d} emails: median {ms(statistics.median(times))} ms, "
              f"p99 {ms(p99(times))} ms per two-part email")
    rows = [r for v in samples.values() for r in v]
    split = {p: [] for p in PARTS}
    for total, part in rows:
        message = part.get("message", 0.0)
        split["templates"].append(part["templates"])
        split["mime"].append(max(0.0, message - part["templates"]))
        split["state+view"].append(part["state+view"])
        split["tokens"].append(part["tokens"])
        split["rest"].append(max(0.0, total - message - part["state+view"] - part["tokens"]))
    print("where the time goes (median per email, ms): " + ", ".join(
        f"{p} {ms(statistics.median(v)).strip()}" for p, v in split.items()))
    print("                       (mean per email, ms): " + ", ".join(
        f"{p} {ms(statistics.mean(v)).strip()}" for p, v in split.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default=",".join(sorted(games())),
                        help="comma-separated games (default: all)")
    parser.add_argument("--players", default="2,3,4", help="comma-separated player counts")
    parser.add_argument("--reps", type=int, default=5, help="timed renders per email")
    parser.add_argument("--every", type=int, default=1,
                        help="time only every N-th decision email")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--profile", action="store_true",
                        help="profile one extra render per email; print the top entries")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.2f} "
          "(other processes on this machine make figures vary)")
    # CPU time of this thread: time other processes take from this one is not counted
    profile = cProfile.Profile(time.thread_time) if args.profile else None
    with tempfile.TemporaryDirectory(prefix="pbem-bench-render-") as tmp:
        url = f"sqlite:///{tmp}/bench.sqlite3"
        upgrade(url)
        app = create_app({
            "DATABASE_URL": url, "SECRET_KEY": "bench", "BASE_URL": BASE_URL,
            "MAIL_BACKEND": "memory", "MAIL_FROM": "pbem <games@bench.invalid>",
            "MAILBOX_DIR": f"{tmp}/mailbox", "FOLLOW_UP_MINUTES": 0,
            "TAKEBACK_GRACE_SECONDS": 0,
            "CREATE_LIMIT_PER_HOUR": 10**6, "NOTICE_LIMIT_PER_ADDRESS": 10**6,
            "NOTICE_LIMIT_PER_GAME": 10**6, "INVITE_LIMIT_PER_ADDRESS": 10**6,
            "HANDOVER_LIMIT_PER_GAME": 10**6})
        app.instance_path = tmp
        sampler = Sampler(app, args.reps, args.every, profile)
        start = time.perf_counter()
        with app.app_context():
            for i, engine_name in enumerate(args.games.split(",")):
                for n in (int(x) for x in args.players.split(",")):
                    moves = play_game(app, sampler, engine_name, n, args.seed + 10 * i + n)
                    print(f"{engine_name} {n} players: {moves} moves by people, "
                          f"{time.perf_counter() - start:.0f} s so far", flush=True)
        get_engine(app).dispose()
    report(sampler.samples)
    print(f"(load average now {os.getloadavg()[0]:.2f})")
    if profile:
        for key in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profile, stream=out).strip_dirs().sort_stats(key).print_stats(30)
            print(f"\n--- cProfile over one extra render per email, by {key} ---")
            print("\n".join(out.getvalue().splitlines()[4:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
