"""Deadline run: a 3-player game played to its end by deadlines alone, clock killed once.

In a temporary directory this script, through the real command line:

1. migrates a fresh SQLite database (``flask --app pbem pbem migrate``);
2. creates a 3-player Cavemen game that starts at once with a deadline of
   ``--hours-per-decision`` (default 0.001 h = 3.6 s) per decision (``pbem new-game ...
   --start``; reminders at pbem's default, half time, unless ``--reminders``);
3. starts the clock (``flask --app pbem pbem clock``, sweeping every second), nobody ever
   clicks: each decision times out and its default action is played; after 2 timeouts in a
   row a seat is handed to the heuristic bot, and once every seat is on a bot the bots
   play (the clock, after ``--bot-pause`` each) until nobody has played for
   ``--idle-rounds`` (3) rounds and the server ends
   the game as abandoned (or the bots finish it first);
4. kills the clock with SIGKILL after ``--kill-after`` seconds, leaves it down for
   ``--down`` seconds (longer than a deadline, so a deadline passes with no clock), then
   starts it again and waits until the game is finished (or abandoned) and the outbox is
   empty (bounded by ``--timeout``);
5. checks the database: every decision is closed; every decision closed by ``timeout`` has
   exactly one Move, with source ``timeout``; no decision has two moves; every timeout came
   at or after its deadline; no decision past its deadline was left without a move unless
   the engine superseded it; one ``decision_timed_out`` event per timeout; no decision got
   more reminders than the policy has; and prints the counts, the timeline and the result.

Mail goes to the dev mailbox (``PBEM_MAIL_BACKEND=dev``: ``.eml`` files in the temporary
directory), delivered by the clock's own mail loop (it polls the outbox every
``PBEM_MAIL_POLL_INTERVAL`` seconds on SQLite); the web server is not run. The clock's file
lock sits next to the SQLite file (``pbem.sqlite3.clock.lock`` in the temporary
directory), so no other clock in this checkout can make our sweeps ``busy``; a busy sweep
would be logged ("sweep skipped") and counted. Every child process is killed at the end.

Exit code 0 when every check held, 1 when one failed, 2 when the run itself did not work
(the game did not end in time, a command failed, or the kill came after the game ended).

    .venv/bin/python bench/deadline_run.py
    .venv/bin/python bench/deadline_run.py --kill-after 8 --down 10 --keep
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLASK = str(Path(sys.executable).parent / "flask")
PLAYERS = ["Ann <ann@example.com>", "Bob <bob@example.com>", "Cid <cid@example.com>"]


def now_utc() -> datetime:
    return datetime.now(UTC)


def parse_ts(value: str | None) -> datetime | None:
    """SQLite stores pbem's UTC datetimes as naive ISO text."""
    if value is None:
        return None
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


class Run:
    def __init__(self, args: argparse.Namespace, tmp: Path) -> None:
        self.args = args
        self.tmp = tmp
        self.db = tmp / "pbem.sqlite3"
        self.mailbox = tmp / "mailbox"
        self.env = {**os.environ,
                    "PBEM_DATABASE_URL": f"sqlite:///{self.db}",
                    "PBEM_MAIL_BACKEND": "dev",
                    "PBEM_MAILBOX_DIR": str(self.mailbox),
                    "PBEM_CLOCK_INTERVAL": str(args.interval),
                    "PBEM_IDLE_ROUNDS": str(args.idle_rounds),
                    "PBEM_BOT_PAUSE_SECONDS": str(args.bot_pause),
                    "PBEM_MAIL_LEASE_SECONDS": str(args.lease),
                    "PBEM_SECRET_KEY": "deadline-run-secret",
                    "PBEM_BASE_URL": "http://127.0.0.1:5000"}
        self.env_shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items()
                                  if k.startswith("PBEM_"))
        self.clock_app = "pbem"
        self.clocks: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        self.conn: sqlite3.Connection | None = None

    # ----------------------------------------------------------------- processes

    def cli(self, *argv: str, timeout: float = 120) -> str:
        cmd = [FLASK, "--app", "pbem", "pbem", *argv]
        print("$ .venv/bin/flask " + " ".join(shlex.quote(c) for c in cmd[1:]), flush=True)
        done = subprocess.run(cmd, env=self.env, cwd=ROOT, capture_output=True, text=True,
                              timeout=timeout)
        out = (done.stdout + done.stderr).strip()
        for line in out.splitlines():
            print("  " + line)
        if done.returncode != 0:
            raise RuntimeError(f"command failed ({done.returncode})")
        return done.stdout

    def start_clock(self) -> subprocess.Popen:
        log = self.tmp / f"clock{len(self.clocks) + 1}.log"
        self.logs.append(log)
        cmd = [FLASK, "--app", self.clock_app, "pbem", "clock"]
        print(f"$ .venv/bin/flask --app {self.clock_app} pbem clock   (clock run "
              f"{len(self.clocks) + 1}, log {log.name})", flush=True)
        with open(log, "wb") as fh:
            proc = subprocess.Popen(cmd, env=self.env, cwd=ROOT, stdout=fh,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.clocks.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen, sig: int) -> None:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)  # its own session: only the clock we started
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def stop_all(self) -> None:
        for proc in self.clocks:
            self.kill(proc, signal.SIGINT)

    # ----------------------------------------------------------------- database

    def q(self, sql: str, *params) -> list[tuple]:
        if self.conn is None:
            self.conn = sqlite3.connect(self.db, timeout=10, isolation_level=None)
        return self.conn.execute(sql, params).fetchall()

    def one(self, sql: str, *params):
        rows = self.q(sql, *params)
        return rows[0][0] if rows else None

    def status(self, game: str) -> str:
        return self.one("SELECT status FROM game WHERE id = ?", game)

    def timeouts(self, game: str) -> int:
        return self.one("SELECT COUNT(*) FROM decision WHERE game_id = ? AND "
                        "closed_by = 'timeout'", game)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours-per-decision", default="0.001",
                        help="time per decision in hours (pbem allows >= 0.0005)")
    parser.add_argument("--reminders", default=None,
                        help="hours before each deadline to remind; '' for none "
                             "(default: pbem's default, half time for short deadlines)")
    parser.add_argument("--interval", type=float, default=1.0, help="PBEM_CLOCK_INTERVAL")
    parser.add_argument("--kill-after", type=float, default=10.0,
                        help="seconds after the clock starts to SIGKILL it")
    parser.add_argument("--down", type=float, default=8.0,
                        help="seconds the clock stays down (more than one deadline)")
    parser.add_argument("--timeout", type=float, default=240.0,
                        help="give up if the game has not ended this long after the restart")
    parser.add_argument("--bot-pause", type=float, default=0.5,
                        help="PBEM_BOT_PAUSE_SECONDS: the clock plays a bot's move (the "
                             "stand-ins') after about this long")
    parser.add_argument("--idle-rounds", type=int, default=3,
                        help="PBEM_IDLE_ROUNDS: rounds nobody plays before the game ends")
    parser.add_argument("--lease", type=float, default=120.0,
                        help="PBEM_MAIL_LEASE_SECONDS: an email the killed clock was "
                             "sending goes out again after this")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="pbem-deadline-run-"))
    run = Run(args, tmp)
    try:
        return play(run, args)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"RUN FAILED: {exc}")
        return 2
    finally:
        run.stop_all()
        if run.conn is not None:
            run.conn.close()
        if args.keep:
            print(f"(kept {tmp})")
        else:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


def play(run: Run, args: argparse.Namespace) -> int:
    print(f"environment: {run.env_shown}\n")
    run.cli("migrate")
    extra = [] if args.reminders is None else ["--reminders", args.reminders]
    out = run.cli("new-game", *[x for p in PLAYERS for x in ("--player", p)],
                  "--hours-per-decision", str(args.hours_per_decision), "--seed",
                  str(args.seed), "--title", "deadline run", "--start", *extra)
    game = next(line.split()[1] for line in out.splitlines() if line.startswith("game "))
    policy = json.loads(run.one("SELECT policy FROM game WHERE id = ?", game))
    reminder_hours = policy["reminder_hours"]
    print(f"game {game}: {float(args.hours_per_decision) * 3600:.1f} s per decision, "
          f"reminders {reminder_hours} h before the deadline, absent_after "
          f"{policy['absent_after']}\n")

    t_start = now_utc()
    clock1 = run.start_clock()
    deadline = time.monotonic() + args.kill_after
    while time.monotonic() < deadline:
        if clock1.poll() is not None:
            raise RuntimeError(f"the clock exited early ({clock1.returncode}); see "
                               f"{run.logs[-1]}:\n{run.logs[-1].read_text()[-2000:]}")
        time.sleep(0.2)
    os.killpg(clock1.pid, signal.SIGKILL)
    clock1.wait(timeout=10)
    t_kill = now_utc()
    state = run.status(game)
    done_before = run.timeouts(game)
    print(f"  SIGKILL the clock at +{(t_kill - t_start).total_seconds():.1f} s: "
          f"{done_before} timeouts so far, game {state}")
    if state != "active":
        print("the game ended before the kill; use a smaller --kill-after")
        return 2
    time.sleep(args.down)
    overdue = run.q("SELECT id, position, kind, deadline_at FROM decision WHERE game_id = ? "
                    "AND closed_at IS NULL", game)
    t_restart = now_utc()
    late = [d for d in overdue if parse_ts(d[3]) <= t_restart]
    print(f"  after {args.down:.0f} s with no clock: {len(overdue)} open decision(s), "
          f"{len(late)} past the deadline: "
          + ", ".join(f"#{d[0]} seat {d[1]} {d[2]} (deadline "
                      f"+{(parse_ts(d[3]) - t_start).total_seconds():.1f} s)" for d in overdue))

    run.start_clock()
    end_by = time.monotonic() + args.timeout
    while True:
        state = run.status(game)
        pending = run.one("SELECT COUNT(*) FROM outbox WHERE status IN ('pending', "
                          "'sending')")
        if state in ("finished", "abandoned") and pending == 0:
            break
        if run.clocks[-1].poll() is not None:
            raise RuntimeError(f"the restarted clock exited ({run.clocks[-1].returncode}):\n"
                               f"{run.logs[-1].read_text()[-2000:]}")
        if time.monotonic() > end_by:
            raise RuntimeError(f"the game is still {state} ({pending} emails pending) "
                               f"{args.timeout:.0f} s after the restart")
        time.sleep(0.25)
    t_end = now_utc()
    time.sleep(2 * args.interval)  # one more sweep or two: must change nothing
    run.stop_all()
    print(f"  game {state} at +{(t_end - t_start).total_seconds():.1f} s; clock stopped\n")
    return check(run, game, t_start, t_kill, t_restart, reminder_hours)


def check(run: Run, game: str, t_start: datetime, t_kill: datetime, t_restart: datetime,
          reminder_hours: list) -> int:
    rel = lambda t: f"+{(t - t_start).total_seconds():6.1f}"  # noqa: E731
    decisions = run.q("SELECT d.id, d.position, d.kind, d.opened_at, d.deadline_at, "
                      "d.closed_at, d.closed_by, d.reminders_sent, "
                      "(SELECT COUNT(*) FROM move m WHERE m.decision_id = d.id), "
                      "(SELECT group_concat(m.source) FROM move m WHERE m.decision_id = d.id) "
                      "FROM decision d WHERE d.game_id = ? ORDER BY d.id", game)
    by = {}
    for d in decisions:
        by[d[6]] = by.get(d[6], 0) + 1
    print("timeline (decisions not played by a bot; times from the first clock start):")
    print("    id seat kind      opened  deadline    closed  by          late  reminders "
          "moves")
    for d in decisions:
        if d[6] == "bot":
            continue
        opened, dl, closed = parse_ts(d[3]), parse_ts(d[4]), parse_ts(d[5])
        late = f"{(closed - dl).total_seconds():5.1f} s" if closed else "      "
        run_no = ("" if closed is None else " (clock 1)" if closed <= t_kill
                  else " (clock 2)" if closed >= t_restart else " (no clock?)")
        print(f"  {d[0]:4d} {d[1]:4d} {d[2]:<8} {rel(opened)} {rel(dl)} "
              f"{rel(closed) if closed else '  open'}  {d[6] or '-':<10} {late}  "
              f"{d[7]:9d} {d[9] or '-'}{run_no}")
    print(f"  ... and {by.get('bot', 0)} decisions played by bots\n")

    failures: list[str] = []

    def expect(ok: bool, what: str) -> None:
        print(f"  [{'ok' if ok else 'FAIL'}] {what}")
        if not ok:
            failures.append(what)

    status = run.status(game)
    open_n = sum(1 for d in decisions if d[5] is None)
    timeouts = [d for d in decisions if d[6] == "timeout"]
    timeout_moves = run.one("SELECT COUNT(*) FROM move WHERE game_id = ? AND "
                            "source = 'timeout'", game)
    stray = run.q("SELECT m.id FROM move m JOIN decision d ON d.id = m.decision_id "
                  "WHERE m.game_id = ? AND m.source = 'timeout' AND "
                  "d.closed_by IS NOT 'timeout'", game)
    double = run.q("SELECT decision_id FROM move WHERE game_id = ? GROUP BY decision_id "
                   "HAVING COUNT(*) > 1", game)
    early = [d[0] for d in timeouts if parse_ts(d[5]) < parse_ts(d[4])]
    expired_no_move = [d[0] for d in decisions
                       if d[5] is not None and parse_ts(d[5]) >= parse_ts(d[4])
                       and d[8] == 0 and d[6] != "superseded"]
    superseded_late = [d[0] for d in decisions if d[6] == "superseded"
                       and parse_ts(d[5]) >= parse_ts(d[4])]
    events = run.one("SELECT COUNT(*) FROM eventlog WHERE game_id = ? AND "
                     "kind = 'decision_timed_out'", game)
    too_many_reminders = [d[0] for d in decisions if d[7] > len(reminder_hours)]
    moves_by_source = dict(run.q("SELECT source, COUNT(*) FROM move WHERE game_id = ? "
                                 "GROUP BY source", game))
    print("checks:")
    expect(status in ("finished", "abandoned"), f"the game ended (status {status})")
    expect(open_n == 0, f"every decision is closed ({open_n} open of {len(decisions)})")
    expect(all(d[8] == 1 and d[9] == "timeout" for d in timeouts),
           f"each of the {len(timeouts)} decisions closed by timeout has exactly one move, "
           "with source 'timeout'")
    expect(timeout_moves == len(timeouts) and not stray,
           f"{timeout_moves} timeout moves, none on a decision not closed by timeout")
    expect(not double, f"no decision has two moves ({len(double)} have)")
    expect(not early, f"no timeout before its deadline ({early or 'none'})")
    expect(not expired_no_move,
           f"every decision that reached its deadline got a move or was superseded "
           f"({expired_no_move or 'none missing'}; superseded after their deadline: "
           f"{superseded_late or 'none'})")
    expect(events == len(timeouts),
           f"{events} 'decision_timed_out' events for {len(timeouts)} timeouts")
    expect(not too_many_reminders,
           f"no decision got more than {len(reminder_hours)} reminder(s) "
           f"({too_many_reminders or 'none did'})")
    expect(moves_by_source.get("player", 0) == 0, "no player moves (nobody clicked)")
    killed_between = [d[0] for d in decisions
                      if d[5] is not None and t_kill < parse_ts(d[5]) < t_restart]
    expect(not killed_between, "nothing was played while no clock ran "
           f"({killed_between or 'nothing'})")

    # counts
    outbox = dict(run.q("SELECT status, COUNT(*) FROM outbox GROUP BY status"))
    templates = dict(run.q("SELECT template, COUNT(*) FROM outbox GROUP BY template"))
    reminders = run.one("SELECT COALESCE(SUM(reminders_sent), 0) FROM decision "
                        "WHERE game_id = ?", game)
    eml = len(list(run.mailbox.glob("*.eml"))) if run.mailbox.is_dir() else 0
    seats = run.q("SELECT position, name, bot, timeouts_in_row FROM seat WHERE game_id = ? "
                  "ORDER BY position", game)
    logs = [p.read_text(errors="replace") for p in run.logs]
    sweeps = [sum("sweep:" in line for line in text.splitlines()) for text in logs]
    busy = [sum("sweep skipped" in line for line in text.splitlines()) for text in logs]
    tracebacks = [text.count("Traceback") for text in logs]
    expect(not any(tracebacks), f"no tracebacks in the clock logs ({tracebacks})")
    expect(eml >= outbox.get("sent", 0),
           f"{eml} .eml files written for {outbox.get('sent', 0)} outbox rows marked sent")

    print("\ncounts:")
    print(f"  decisions {len(decisions)}: " + ", ".join(f"{k} {v}" for k, v in sorted(
        by.items(), key=lambda kv: str(kv[0]))))
    print("  moves: " + ", ".join(f"{k} {v}" for k, v in sorted(moves_by_source.items())))
    print(f"  timeouts {len(timeouts)}, bot moves {moves_by_source.get('bot', 0)}, "
          f"reminders sent {reminders}")
    print(f"  emails: {eml} written to the dev mailbox; outbox "
          + ", ".join(f"{k} {v}" for k, v in sorted(outbox.items()))
          + "; by template " + ", ".join(f"{k} {v}" for k, v in sorted(templates.items())))
    print("  seats: " + "; ".join(f"{p} {n}: bot {b or '-'}, timeouts in a row {t}"
                                  for p, n, b, t in seats))
    print(f"  clock runs: sweeps that did something {sweeps}, busy sweeps {busy}")


    from engine.registry import get_game

    mod = get_game("cavemen")
    state = mod.from_json(json.loads(run.one("SELECT state FROM game WHERE id = ?", game)))
    result = mod.result(state)
    names = {p: n for p, n, _, _ in seats}
    if result is not None:
        winners = ", ".join(names[w] for w in result.winners) or "nobody"
        print(f"  result: {result.to_json()} (winners: {winners})")
    else:
        print("  result: none (the engine reports no result)")
    print(f"\ninvariant {'HELD' if not failures else 'BROKEN'}: exactly one auto-played move "
          "per expired decision" + ("" if not failures else f"; failed: {failures}"))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
