"""Sweep time: one clock sweep over a database full of open games, SQLite and PostgreSQL.

Builds a database at the migrations' head with ``--games`` active Cavemen games
(default 10,000) holding ``--decisions`` open decisions (default 100,000), every one with
a deadline and a next reminder still ahead, then times ``pbem.clock.sweep(app, now)``:

* ``steady``: nothing is due (the normal state of a server between deadlines): the
  figure is the cost of the two due-queries on a large table. (A sweep does not deliver
  mail: the clock's mail loop does, see ``pbem.clock.mail_loop``; the cost of its poll of
  an empty outbox is shown among the parts.)
* ``due N`` (``--due``, default 100 and 1000): N decisions fall due at the sweep's
  ``now``, half past their deadline (the sweep plays their default action through
  ``services.time_out_due``, in batches) and half with a reminder due
  (``services.remind_due``), each in a different game. Each due sweep gets a fresh batch.
  A sweep asks for 500 due at a time (``pbem.clock.DUE_PAGE``), again while pages come
  full, and only queues their emails. The time of each step (reminders, timeouts) is
  measured by wrapping the functions the sweep calls, during the timed sweeps only.
  After each due sweep, one pass of the clock's mail loop, ``mail.deliver_due(limit=100)``
  (its batch), is timed on its own; the emails left after it are counted, then marked
  sent (untimed) so the next batch starts clean.
* ``timeouts-only N`` (``--timeouts-only``, off by default): N decisions, each in a
  different game, are past their deadline at once (no reminders due): the figure is the
  time until every one is played, i.e. the sweeps run back to back until one finds none
  due. A sweep asks again while pages of 500 come full, so 1,000 take one sweep (before
  commit 2a798ae a sweep played at most 500, so two sweeps, the second on a running clock
  ``CLOCK_INTERVAL`` later; that wait was not counted). Each timeout is cProfiled with
  ``--profile`` (top entries printed; the timed run is a separate batch, unprofiled).

Rows are bulk-inserted with SQLAlchemy core, cloned from a few real games made by
``services.create_game(..., confirm_by_email=False, start=True)`` (3, 4 and 5 players), so
each game holds a real engine state and its seat 0 has a real open ``bid``; the game's
other open decisions are extra rows (10 per game by default, more than a real game has at
once: the issue's figures fix 100,000 pending over 10,000 games). Due decisions are always
the real ones. ``--closed`` adds closed (history) decisions as a real server would have.

SQLite is a temporary file (WAL, as pbem configures it). PostgreSQL is a throwaway cluster
that this script starts (as the ``postgres`` user when run as root; ``initdb -A trust``,
fsync off) on a free loopback port and removes at the end. Mail uses the memory backend.
The app's instance folder (which holds the clock's file lock on SQLite) is pointed at a
temporary directory, so a clock running elsewhere in the repository cannot make a sweep
``busy``. PostgreSQL gets ``ANALYZE`` after the load (autovacuum would do the same soon);
SQLite is not analysed unless ``--sqlite-analyze`` (pbem never runs ANALYZE).

The query plans of the due-queries (the exact SQL of a sweep, captured from the engine) are
printed for both databases: ``EXPLAIN QUERY PLAN`` on SQLite, ``EXPLAIN ANALYZE`` on
PostgreSQL.

    .venv/bin/python bench/sweep_time.py                        # 10,000 games, both databases
    .venv/bin/python bench/sweep_time.py --games 1000 --decisions 10000 --due 100 --quick
    .venv/bin/python bench/sweep_time.py --db sqlite --repeats 20
    .venv/bin/python bench/sweep_time.py --db sqlite --games 2000 --decisions 4000 \
        --due '' --timeouts-only 1000 --quick [--profile]

Figures (2 shared cores, load below 1, ``--games 2000 --decisions 4000 --due ''
--timeouts-only 1000 --quick``), 1,000 timeouts in 2 sweeps: SQLite before (commit
4bd01d5) 6.1 to 6.4 s, after 2.3 s; PostgreSQL 11.5 s before, 5.8 s after. ``--due 1000``
(500 timeouts and 500 reminders in one sweep), SQLite: 4.3 s before, 1.6 s after.

Issue 19, point 4 (the clock in short batches, fewer statements per timeout; branch
clock19 against ef85a70, the same quiet machine, pairs run back to back, a day on which
that commit took 3.6-4.4 s where the figure above says 2.3 s): ``--timeouts-only 1000``
SQLite 3.80 and 4.41 s -> 1.71 and 1.92 s (CPU 3.7-4.3 s -> 1.7-1.9 s; 1 sweep instead
of 2), PostgreSQL 13.9 s -> 7.3 s (CPU 9.3 -> 5.1 s); ``--due 1000`` SQLite 2.92 s ->
1.63 s (timeouts 4.4 -> 1.9 ms each, reminders 1.5 -> 1.4 ms). A timeout ran 21.7 SQL
statements, now 13 (``--profile`` shows the rest).

Issue 19, point 3 (the mail loop's rendering; branch mailcpu against 622c631, run
alternately on a busy machine, ``--db sqlite --due 200``): the mail-loop pass took 10.7,
9.7 and 11.1 ms of CPU per email before, 7.0, 6.9 and 8.0 ms after (wall time 14.6 to
17.5 ms -> 7.1 to 12.3 ms, which the machine's other processes inflate).

Issue 35, point 6 (branch perfb35 against 0868480, alternating runs, six each, load 10 to
14; ``--db sqlite --games 1000 --decisions 4000 --due 200 --repeats 2 --quick``): the
mail-loop pass's CPU per email, median 5.85 ms -> 5.3 ms (5.4-6.6 -> 4.6-5.6). Rendering is
three quarters of it; the loop's own three short transactions (claim, the links' tokens,
marked sent) now run on a Core connection without an ORM session. The pass is the
process's first, so it includes compiling the templates.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import os
import pstats
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import event, func, insert, select, text, update

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.pgcluster

from pbem import create_app, mail, services
from pbem.clock import sweep
from pbem.db import get_engine, session_scope
from pbem.migrate import upgrade
from pbem.models import Decision, Game, Outbox, Seat, utcnow
from tests.pgcluster import PostgresCluster

BASE_URL = "http://bench.invalid"
CHUNK = 5000
TEMPLATE_PLAYERS = (3, 4, 5)


# --------------------------------------------------------------------------- databases


@contextlib.contextmanager
def database(kind: str, workdir: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{workdir / 'bench.sqlite3'}"
        return
    cluster = PostgresCluster()  # the tests' throwaway cluster (tests/pgcluster.py)
    cluster.start()
    try:
        yield cluster.url("postgres")
    finally:
        cluster.stop()


# --------------------------------------------------------------------------- building


def make_templates(app) -> list[dict]:
    """Real games (one per player count): their game row, seats and the open decision."""
    out = []
    with app.app_context():
        for n in TEMPLATE_PLAYERS:
            players = [services.PlayerIn(f"Player {i}", f"t{n}p{i}@bench.invalid")
                       for i in range(n)]
            created = services.create_game("cavemen", players, seed=1000 + n,
                                           confirm_by_email=False, start=True)
            while mail.deliver_due(limit=500)["sent"]:
                pass
            with get_engine(app).connect() as conn:
                game = dict(conn.execute(select(Game.__table__).where(
                    Game.id == created.game_id)).mappings().one())
                seats = [dict(r) for r in conn.execute(
                    select(Seat.__table__).where(Seat.game_id == created.game_id)
                    .order_by(Seat.position)).mappings()]
                (real,) = conn.execute(select(Decision.position, Decision.kind).where(
                    Decision.game_id == created.game_id, Decision.closed_at.is_(None))).all()
            out.append({"game": game, "seats": seats, "position": real[0], "kind": real[1]})
    mail.backend(app).sent.clear()
    return out


def bulk_load(app, templates: list[dict], args, t0, due_plan: list[list[dict]]) -> None:
    """Insert the games, seats and decisions. ``due_plan[v][b]`` lists the game indexes
    and due times of variant v, batch b; they get their real decision due then."""
    rng = random.Random(args.seed)
    engine = get_engine(app)
    due_at: dict[int, tuple[str, object]] = {}
    for batches in due_plan:
        for batch in batches:
            for gi in batch["timeouts"]:
                due_at[gi] = ("timeout", batch["at"])
            for gi in batch["reminders"]:
                due_at[gi] = ("reminder", batch["at"])

    def gid(i: int) -> str:
        return f"b{i:09d}"

    with engine.begin() as conn:
        rows = []
        for i in range(args.games):
            tpl = templates[i % len(templates)]["game"]
            g = dict(tpl)
            g.update(id=gid(i), title=f"bench {i}",
                     spectator_key=f"{i:016x}", seed=i)
            rows.append(g)
            if len(rows) >= CHUNK:
                conn.execute(insert(Game.__table__), rows)
                rows = []
        if rows:
            conn.execute(insert(Game.__table__), rows)

        rows = []
        for i in range(args.games):
            for seat in templates[i % len(templates)]["seats"]:
                s = {k: v for k, v in seat.items() if k != "id"}
                s.update(game_id=gid(i), email=f"p{seat['position']}.{gid(i)}@bench.invalid")
                rows.append(s)
            if len(rows) >= CHUNK:
                conn.execute(insert(Seat.__table__), rows)
                rows = []
        if rows:
            conn.execute(insert(Seat.__table__), rows)
        seat_ids = {(g, p): sid for sid, g, p in conn.execute(
            select(Seat.id, Seat.game_id, Seat.position).where(Seat.game_id.like("b%")))}

        far = t0 + timedelta(hours=1)  # every steady time is later than this

        def steady() -> tuple:
            deadline = far + timedelta(hours=1 + rng.random() * 47)
            remind = far + (deadline - far) * rng.random()
            return deadline, remind

        rows = []
        for j in range(args.decisions):
            i = j % args.games
            tpl = templates[i % len(templates)]
            nseats = len(tpl["seats"])
            real = j < args.games
            position = tpl["position"] if real else (j // args.games) % nseats
            deadline, remind = steady()
            reminded, sent = None, 0
            if real and i in due_at:
                what, at = due_at[i]
                if what == "timeout":
                    deadline, remind, reminded, sent = at, None, at - timedelta(hours=2), 2
                else:
                    deadline, remind = t0 + timedelta(hours=20), at
            rows.append({"game_id": gid(i), "seat_id": seat_ids[(gid(i), position)],
                         "position": position, "seq": 1, "kind": tpl["kind"],
                         "opened_at": t0 - timedelta(hours=1), "deadline_at": deadline,
                         "reminded_at": reminded, "next_reminder_at": remind,
                         "reminders_sent": sent, "closed_at": None, "closed_by": None})
            if len(rows) >= CHUNK:
                conn.execute(insert(Decision.__table__), rows)
                rows = []
        for k in range(args.closed):
            i = k % args.games
            tpl = templates[i % len(templates)]
            position = k % len(tpl["seats"])
            opened = t0 - timedelta(days=30) + timedelta(seconds=k)
            rows.append({"game_id": gid(i), "seat_id": seat_ids[(gid(i), position)],
                         "position": position, "seq": 1, "kind": tpl["kind"],
                         "opened_at": opened, "deadline_at": opened + timedelta(hours=48),
                         "reminded_at": None, "next_reminder_at": None,
                         "reminders_sent": 0, "closed_at": opened + timedelta(hours=3),
                         "closed_by": "player"})
            if len(rows) >= CHUNK:
                conn.execute(insert(Decision.__table__), rows)
                rows = []
        if rows:
            conn.execute(insert(Decision.__table__), rows)


def plan_due(args) -> list[list[dict]]:
    """Distinct games for every due batch: variant v, batch b falls due at minute
    1 + v * R + b after the load (the caller sets ``at``); steady times are after 1 hour."""
    plan, nxt = [], 0
    for v, n in enumerate(args.due):
        batches = []
        for b in range(args.due_repeats):
            games = list(range(nxt, nxt + n))
            nxt += n
            batches.append({"timeouts": games[: n // 2], "reminders": games[n // 2:],
                            "minute": 1 + v * args.due_repeats + b, "at": None})
        plan.append(batches)
    for n in ([args.timeouts_only] * (1 + bool(args.profile))) if args.timeouts_only else []:
        v = len(plan)
        games = list(range(nxt, nxt + n))
        nxt += n
        plan.append([{"timeouts": games, "reminders": [], "only": True,
                      "minute": 1 + v * args.due_repeats, "at": None}])
    if nxt > args.games:
        sys.exit(f"--due {args.due} x --due-repeats {args.due_repeats} needs {nxt} games "
                 f"with a due decision, but --games is {args.games}")
    if len(plan) * args.due_repeats >= 55:
        sys.exit("too many due batches (they must all fall within the first hour)")
    return plan


# --------------------------------------------------------------------------- measuring


class Capture:
    """Records the SQL (and parameters) of the due-queries the sweep runs."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.found: dict[str, tuple[str, object]] = {}
        self.on = False

    def __enter__(self) -> Capture:
        event.listen(self.engine, "before_cursor_execute", self._hook)
        return self

    def __exit__(self, *exc) -> None:
        event.remove(self.engine, "before_cursor_execute", self._hook)

    def _hook(self, conn, cursor, statement, parameters, context, executemany) -> None:
        low = " ".join(statement.lower().split())
        if "from decision join game" not in low:
            return
        if "decision.deadline_at <=" in low:
            self.found.setdefault("due_timeouts", (statement, parameters))
        elif "decision.next_reminder_at <=" in low:
            self.found.setdefault("due_reminders", (statement, parameters))


class Parts:
    """Times the steps of a sweep by wrapping the functions ``pbem.clock.sweep`` calls
    (only while the block runs; pbem itself is not changed)."""

    TARGETS = ((services, "remind_due", "reminders"), (services, "time_out_due", "timeouts"))

    def __init__(self) -> None:
        self.time = {name: 0.0 for _, _, name in self.TARGETS}
        self.calls = {name: 0 for _, _, name in self.TARGETS}
        self.saved: list = []

    def __enter__(self) -> Parts:
        for mod, attr, name in self.TARGETS:
            original = getattr(mod, attr)
            self.saved.append((mod, attr, original))
            setattr(mod, attr, self._wrap(original, name))
        return self

    def __exit__(self, *exc) -> None:
        for mod, attr, original in self.saved:
            setattr(mod, attr, original)

    def _wrap(self, fn, name):
        def wrapper(*a, **kw):
            start = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.time[name] += time.perf_counter() - start
                self.calls[name] += 1
        return wrapper

    def describe(self, counts: dict[str, int]) -> str:
        done = {"reminders": counts["reminders"], "timeouts": counts["timeouts"]}
        out = []
        for name, total in self.time.items():
            each = f" = {total / done[name] * 1000:.1f} ms each" if done[name] else ""
            out.append(f"{name} {total:.2f} s for {done[name]}{each}")
        return "; ".join(out)


def count_pending(app) -> int:
    with get_engine(app).connect() as conn:
        return conn.execute(select(func.count()).select_from(Outbox)
                            .where(Outbox.status == "pending")).scalar()


def trivial(app) -> None:
    with session_scope(app) as s:
        s.execute(text("SELECT 1"))


def clear_outbox(app) -> int:
    """Mark the emails a due sweep left pending as sent (untimed); returns how many."""
    with get_engine(app).begin() as conn:
        done = conn.execute(update(Outbox).where(Outbox.status == "pending")
                            .values(status="sent", sent_at=utcnow()))
        return done.rowcount


def with_now(parameters, now):
    """The captured parameters with the due-query's time replaced by ``now``."""
    if isinstance(parameters, dict):
        return {k: (now if isinstance(v, datetime) else v) for k, v in parameters.items()}
    fmt = "%Y-%m-%d %H:%M:%S.%f"  # SQLite receives pbem's UTC times as naive text
    out = []
    for v in parameters:
        if isinstance(v, datetime):
            v = now
        elif isinstance(v, str) and len(v) >= 19 and v[4] == "-" and v[10] == " ":
            v = now.astimezone(UTC).replace(tzinfo=None).strftime(fmt)
        out.append(v)
    return tuple(out)


def explain(app, kind: str, statement: str, parameters) -> list[str]:
    engine = get_engine(app)
    with engine.connect() as conn:
        if kind == "sqlite":
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters).all()
            lines = [f"{r[3]}" for r in rows]
        else:
            rows = conn.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + statement,
                                        parameters).all()
            lines = [r[0] for r in rows]
        conn.rollback()
    return lines


def plan_summary(kind: str, lines: list[str]) -> str:
    """The access paths of a plan on one line (and PostgreSQL's execution time)."""
    if kind == "sqlite":
        return " | ".join(x.strip() for x in lines)
    keep = [x.strip().removeprefix("->  ").split("  (")[0] for x in lines
            if "Scan" in x or "Execution Time" in x]
    return " | ".join(keep)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def timed(fn, *a):
    start = time.perf_counter()
    out = fn(*a)
    return time.perf_counter() - start, out


def run_one(kind: str, url: str, args, workdir: Path) -> dict:
    print(f"\n=== {kind} ===", flush=True)
    start = time.perf_counter()
    upgrade(url)
    inst = workdir / f"instance-{kind}"
    inst.mkdir()
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench", "BASE_URL": BASE_URL,
                      "MAIL_BACKEND": "memory", "MAILBOX_DIR": str(workdir / "mailbox")})
    app.instance_path = str(inst)
    engine = get_engine(app)
    try:
        templates = make_templates(app)
        t0 = utcnow().replace(microsecond=0)
        plan = plan_due(args)
        for batches in plan:
            for batch in batches:
                batch["at"] = t0 + timedelta(minutes=batch["minute"])
        bulk_load(app, templates, args, t0, plan)
        if kind == "postgresql":
            with engine.connect() as conn:
                conn.execute(text("ANALYZE"))
                conn.commit()
        elif args.sqlite_analyze:
            with engine.connect() as conn:
                conn.exec_driver_sql("ANALYZE")
                conn.commit()
        with engine.connect() as conn:
            n_games = conn.execute(select(func.count()).select_from(Game)
                                   .where(Game.status == "active")).scalar()
            n_open = conn.execute(select(func.count()).select_from(Decision)
                                  .where(Decision.closed_at.is_(None))).scalar()
            n_all = conn.execute(select(func.count()).select_from(Decision)).scalar()
            pending_mail = conn.execute(select(func.count()).select_from(Outbox)
                                        .where(Outbox.status == "pending")).scalar()
            conn.rollback()
        print(f"built in {time.perf_counter() - start:.1f} s: {n_games} active games, "
              f"{n_open} open decisions ({n_all} in all), {pending_mail} pending emails",
              flush=True)
        result: dict = {"db": kind, "games": n_games, "open": n_open}

        # steady state: nothing due at t0
        sweep(app, t0)  # warm-up (connections, caches); not counted
        steady_times, steady_counts = [], []
        with Capture(engine) as cap:
            for _ in range(args.repeats):
                dt, counts = timed(sweep, app, t0)
                steady_times.append(dt)
                steady_counts.append(counts)
        due_counts = {k: max(c[k] for c in steady_counts) for k in steady_counts[0]}
        if due_counts["busy"]:
            print("WARNING: a sweep found the clock lock taken (busy)")
        result["steady"] = steady_times
        print(f"steady ({args.repeats} sweeps, nothing due): "
              f"median {ms(statistics.median(steady_times))}  max {ms(max(steady_times))}"
              f"  min {ms(min(steady_times))}")
        print(f"  due found per sweep: reminders {due_counts['reminders']}, timeouts "
              f"{due_counts['timeouts']}, errors {due_counts['errors']}")
        poll = "deliver_due (the mail loop's poll, outbox empty)"
        with app.app_context():
            parts = {"due_reminders": [], "due_timeouts": [], poll: [],
                     "a trivial transaction (SELECT 1)": []}
            for _ in range(args.repeats):
                parts["due_reminders"].append(timed(services.due_reminders, t0)[0])
                parts["due_timeouts"].append(timed(services.due_timeouts, t0)[0])
                parts[poll].append(timed(mail.deliver_due, 100)[0])
                parts["a trivial transaction (SELECT 1)"].append(timed(trivial, app)[0])
        print("  parts (median): " + ", ".join(
            f"{k} {statistics.median(v) * 1000:.2f} ms" for k, v in parts.items()))

        for name in ("due_timeouts", "due_reminders"):
            if name not in cap.found:
                print(f"  (could not capture the SQL of {name})")
                continue
            statement, params = cap.found[name]
            how = "EXPLAIN QUERY PLAN" if kind == "sqlite" else "EXPLAIN ANALYZE"
            print(f"\n  query plan of {name} ({how}):")
            print("    SQL: " + " ".join(statement.split()))
            lines = explain(app, kind, statement, params)
            for line in lines:
                print("    " + line)
            result[f"plan_{name}"] = lines

        # due variants
        if args.freeze:  # as ``pbem clock`` does at its start: a full collection then
            gc.collect()  # walks only what was made since, not the process's lifelong
            gc.freeze()  # objects
        result["due"] = {}
        variants = [b for b in plan if not b[0].get("only")]
        for n, batches in zip(args.due, variants, strict=True):
            firsts, parts_list, left, mails, cpus = [], [], [], [], []
            due_plan = {}
            for batch in batches:
                now = batch["at"] + timedelta(seconds=30)
                if not due_plan:
                    for name in ("due_timeouts", "due_reminders"):
                        if name in cap.found:
                            statement, params = cap.found[name]
                            params = with_now(params, now)
                            due_plan[name] = plan_summary(
                                kind, explain(app, kind, statement, params))
                with Parts() as parts:
                    dt, counts = timed(sweep, app, now)
                firsts.append(dt)
                parts_list.append((parts, counts))
                queued = count_pending(app)
                with app.app_context():  # one pass of the clock's mail loop, on its own
                    cpu = time.thread_time()
                    mail_dt, sent = timed(mail.deliver_due, 100)
                    cpus.append(time.thread_time() - cpu)
                mails.append((queued, mail_dt, sent))
                left.append(clear_outbox(app))
                mail.backend(app).sent.clear()
            result["due"][n] = {"first": firsts}
            parts, d0 = parts_list[0]
            print(f"\ndue {n} ({len(batches)} sweeps, each with a fresh batch of {n // 2} "
                  f"past deadline and {n - n // 2} reminders due):")
            print(f"  sweep: median {ms(statistics.median(firsts))}  max {ms(max(firsts))}")
            print(f"  it did: reminders {d0['reminders']}, timeouts {d0['timeouts']}, "
                  f"errors {d0['errors']}; it queued {mails[0][0]} emails")
            print("  first sweep's time went to: " + parts.describe(d0))
            handled = [sum(c.values()) for _, _, c in mails]
            each = [dt / h for (_, dt, _), h in zip(mails, handled, strict=True) if h]
            each_cpu = [dt / h for dt, h in zip(cpus, handled, strict=True) if h]
            q0, m0, c0 = mails[0]
            print(f"  then one mail-loop pass (deliver_due, batch 100): median "
                  f"{ms(statistics.median(dt for _, dt, _ in mails))}; first: sent "
                  f"{c0['sent']}, skipped {c0['skipped']}, failed {c0['failed']}"
                  + (f", {statistics.median(each) * 1000:.1f} ms per email (CPU "
                     f"{statistics.median(each_cpu) * 1000:.1f} ms)" if each else "")
                  + f"; {statistics.median(left):.0f} emails left for later passes")
            for name, line in due_plan.items():
                print(f"  plan of {name} with these due: {line}")
            result["due"][n]["plans"] = due_plan
        only = [b[0] for b in plan if b[0].get("only")]
        if only:
            result["only"] = timeouts_only(app, only, args.profile)
        return result
    finally:
        engine.dispose()


def timeouts_only(app, batches: list[dict], profile: bool) -> dict:
    """Sweep until every decision of the batch is played; the figures of the last batch
    (with ``--profile`` the first batch runs under cProfile, the second is timed)."""
    out: dict = {}
    for i, batch in enumerate(batches):
        profiling = profile and i == 0
        now = batch["at"] + timedelta(seconds=30)
        n = len(batch["timeouts"])
        prof = cProfile.Profile(time.process_time) if profiling else None
        passes, played, errors, total = [], 0, 0, 0.0
        cpu = time.process_time()
        with Parts() as parts:
            while True:
                if prof:
                    prof.enable()
                dt, counts = timed(sweep, app, now)
                if prof:
                    prof.disable()
                if not counts["timeouts"]:
                    break
                passes.append(dt)
                total += dt
                played += counts["timeouts"]
                errors += counts["errors"]
        cpu = time.process_time() - cpu
        queued = clear_outbox(app)
        mail.backend(app).sent.clear()
        if prof:
            text = io.StringIO()
            pstats.Stats(prof, stream=text).strip_dirs().sort_stats("cumulative").print_stats(40)
            print(f"\ntimeouts-only {n}, profiled batch (cProfile, by cumulative time):")
            print("\n".join(text.getvalue().splitlines()[4:]))
            continue
        print(f"\ntimeouts-only {n} (past their deadline at once, no reminders): "
              f"{played} played in {total:.2f} s by {len(passes)} sweeps "
              f"({', '.join(f'{x:.2f} s' for x in passes)}), "
              f"{total / max(played, 1) * 1000:.1f} ms per timeout (CPU time of this "
              f"process {cpu:.2f} s); errors {errors}; {queued} emails queued")
        print("  time went to: " + parts.describe({"reminders": 0, "timeouts": played}))
        out = {"n": n, "total": total, "passes": passes, "played": played, "cpu": cpu}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--decisions", type=int, default=100_000,
                        help="open decisions (at least one per game)")
    parser.add_argument("--closed", type=int, default=0,
                        help="closed (history) decisions added as well")
    parser.add_argument("--due", default="100,1000",
                        help="comma-separated sizes of the due variants")
    parser.add_argument("--repeats", type=int, default=10, help="steady sweeps timed")
    parser.add_argument("--due-repeats", type=int, default=3,
                        help="due sweeps timed per variant (each with a fresh batch)")
    parser.add_argument("--freeze", action="store_true",
                        help="gc.freeze() before the due sweeps and mail passes, as the "
                             "clock process does at its start")
    parser.add_argument("--quick", action="store_true",
                        help="fewer repeats (5 steady, 1 per due variant)")
    parser.add_argument("--sqlite-analyze", action="store_true",
                        help="run ANALYZE on SQLite after the load")
    parser.add_argument("--timeouts-only", type=int, default=0,
                        help="also time N decisions past their deadline at once, swept "
                             "until all are played")
    parser.add_argument("--profile", action="store_true",
                        help="with --timeouts-only: profile one more such batch first")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    args.due = [int(x) for x in args.due.split(",") if x.strip()]
    if args.quick:
        args.repeats, args.due_repeats = min(args.repeats, 5), 1
    if args.decisions < args.games:
        parser.error("--decisions must be at least --games (each game has its real one)")
    kinds = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    print(f"{os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.2f} "
          "(other processes on this machine make figures vary)")
    results = []
    with tempfile.TemporaryDirectory(prefix="pbem-bench-sweep-") as tmp:
        for kind in kinds:
            work = Path(tmp) / kind
            work.mkdir()
            with database(kind, work) as url:
                results.append(run_one(kind, url, args, work))

    print(f"\n=== summary === (load average now {os.getloadavg()[0]:.2f})")
    print(f"{'database':<11}{'games':>7}{'open':>8}  {'variant':<10}{'median':>11}{'max':>11}")
    for r in results:
        print(f"{r['db']:<11}{r['games']:>7}{r['open']:>8}  {'steady':<10}"
              f"{ms(statistics.median(r['steady'])):>11}{ms(max(r['steady'])):>11}")
        for n, d in r["due"].items():
            print(f"{'':<26}  {f'due {n}':<10}{ms(statistics.median(d['first'])):>11}"
                  f"{ms(max(d['first'])):>11}")
        if r.get("only"):
            o = r["only"]
            print(f"{'':<26}  timeouts-only {o['n']}: all played in {o['total']:.2f} s "
                  f"({len(o['passes'])} sweeps; CPU {o['cpu']:.2f} s)")
    print("\nplans of due_timeouts:")
    for r in results:
        print(f"  {r['db']}, nothing due: "
              f"{plan_summary(r['db'], r.get('plan_due_timeouts', []))}")
        for n, d in r["due"].items():
            print(f"  {r['db']}, {n} due: {d.get('plans', {}).get('due_timeouts', '?')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
