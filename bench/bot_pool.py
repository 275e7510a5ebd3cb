"""Bot pool: today's abuse (a host's games full of strong bots) beside a game of people,
with the clock alone playing the bots (``--workers 0``: the clock fallback, as before
issue 35) or with 1, 2, 4 bot workers (``pbem bots --workers N``).

For each worker count, on a fresh database (SQLite in a temporary folder, or a throwaway
PostgreSQL cluster with ``--db postgresql``), it makes ``--games`` Cavemen games of one
host, each the host and three strong bots thinking ``--bot-ms`` ms a move, and one game
of three people elsewhere; every decision of a person gets ``--seconds`` seconds
(``hours_per_decision``), so the people's timeouts keep falling due (the host's too,
and the host's seat soon goes to a stand-in: then only bots play those games). Then it
runs the clock (``pbem clock``, ``PBEM_CLOCK_INTERVAL=--interval``, memory mail) and the
bot workers for ``--duration`` seconds and prints:

* the lateness of the people's game's timeouts (the move's time less the deadline):
  median and max, and how many were played; and of their reminders (half time: the
  reminder email's time less the deadline less half of ``--seconds``);
* bot moves per minute over the run (all games);
* the CPU seconds each process used (the clock; the bot workers, children included);
* decisions with more than one move (must be 0).

    .venv/bin/python bench/bot_pool.py [--db sqlite|postgresql] [--workers 0 1 2 4]
        [--games 10] [--bot-ms 5000] [--duration 60] [--seconds 10] [--interval 0.5]
        [--host-allowance SECONDS]

Figures (one run each, SQLite, 2 cores shared with other busy processes, load about 5;
defaults but ``--duration 50``; branch pool35): the people's timeouts late median / max,
bot moves a minute, CPU seconds:

* the clock alone plays the bots (the fallback, at most CLOCK_BOT_SECONDS a sweep after
  the move under way): 2.00 / 4.99 s, 9.6 a minute, clock 32.7 s; (before that bound,
  in an earlier run, the clock's first sweep thought for minutes: 0 timeouts played in
  60 s, the issue's 10.6 s median);
* 1 worker: 0.50 / 0.51 s, 12.0 a minute, clock 2.2 s, bots 47.0 s;
* 2 workers: 0.49 / 0.50 s, 24.0 a minute, clock 2.2 s, bots 95.3 s;
* 4 workers: 0.49 / 0.50 s, 10.8 a minute (2 cores, shared: no gain past 2), clock
  2.3 s, bots 52.0 s. Nothing doubled in any run. The lateness is the clock's interval
  (0.5 s): the sweep no longer thinks.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for pbem and tests.pgcluster when run as a script
sys.path.insert(0, str(ROOT / "bench"))

from sqlmodel import select  # noqa: E402
from sweep_time import database  # noqa: E402

from pbem import create_app, mail, services  # noqa: E402
from pbem.db import get_engine, session_scope  # noqa: E402
from pbem.migrate import upgrade  # noqa: E402
from pbem.models import Decision, Move, Outbox, as_utc, utcnow  # noqa: E402

SECRET = "bench-bot-pool-" + "s" * 40
MAIL_FROM = "pbem <games@bench.invalid>"


def config(url: str, folder: Path) -> dict[str, str]:
    return {"DATABASE_URL": url, "SECRET_KEY": SECRET, "MAIL_BACKEND": "memory",
            "MAIL_FROM": MAIL_FROM, "BASE_URL": "http://bench.invalid",
            "CREATE_LIMIT_PER_HOUR": "100000", "NOTICE_LIMIT_PER_ADDRESS": "100000",
            "NOTICE_LIMIT_PER_GAME": "100000", "INVITE_LIMIT_PER_ADDRESS": "100000",
            "MAILBOX_DIR": str(folder / "mailbox")}


def build(app, games: int, bot_ms: float, seconds: float) -> str:
    """The host's bot games and the people's game; returns the people's game id."""
    strong = services.PlayerIn("", "", "en", "UTC", bot="strong")
    policy = {"hours_per_decision": seconds / 3600, "bot_ms": bot_ms}
    with app.app_context():
        for i in range(games):
            host = services.PlayerIn("Host", "host@bench.invalid")
            services.create_game("cavemen", [host, strong, strong, strong], policy,
                                 seed=100 + i, confirm_by_email=False, start=True)
        people = [services.PlayerIn(n, f"{n.lower()}@bench.invalid")
                  for n in ("Ann", "Bob", "Cy")]
        created = services.create_game("cavemen", people, {"hours_per_decision":
                                                           seconds / 3600},
                                       seed=7, confirm_by_email=False, start=True)
        while mail.deliver_due(limit=1000)["sent"]:
            pass
    return created.game_id


def cpu_seconds(pid: int) -> float:
    """User and system CPU of ``pid`` and its living descendants."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for p in [pid, *descendants(pid)]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        out += [int(k) for k in kids]
        todo += [int(k) for k in kids]
    return out


def start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "flask", "--app", "pbem", "pbem",
                                 *argv], env=env, cwd=log.parent, stdout=out,
                                stderr=subprocess.STDOUT)


def one_run(kind: str, workers: int, args: argparse.Namespace) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="bot_pool") as tmp:
        folder = Path(tmp)
        with database(kind, folder) as url:
            settings = config(url, folder)
            upgrade(url)
            app = create_app(settings)
            people = build(app, args.games, args.bot_ms, args.seconds)
            env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
            env.update({f"PBEM_{k}": v for k, v in settings.items()})
            env.update(PBEM_CLOCK_INTERVAL=str(args.interval), PYTHONUNBUFFERED="1")
            if args.host_allowance is not None:  # the host's bots' CPU a day
                env["PBEM_BOT_CPU_HOST_SECONDS"] = str(args.host_allowance)
            began = time.monotonic()
            t0 = utcnow()
            procs = {"clock": start(["clock"], env, folder / "clock.log")}
            if workers:
                procs["bots"] = start(["bots", "--workers", str(workers)], env,
                                      folder / "bots.log")
            cpu: dict[str, float] = {}
            try:
                while time.monotonic() - began < args.duration:
                    time.sleep(0.5)
                    for name, proc in procs.items():
                        assert proc.poll() is None, (folder / f"{name}.log").read_text()
                        cpu[name] = cpu_seconds(proc.pid)
            finally:
                for proc in procs.values():
                    proc.terminate()
                for proc in procs.values():
                    try:
                        proc.wait(timeout=20)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
            if args.logs:  # the processes' logs, kept
                keep = Path(args.logs) / f"{kind}-{workers}"
                keep.mkdir(parents=True, exist_ok=True)
                for log in folder.glob("*.log"):
                    (keep / log.name).write_bytes(log.read_bytes())
            with app.app_context(), session_scope() as s:
                moves = list(s.exec(select(Move).where(Move.created_at >= t0)))
                deadlines = {d.id: d.deadline_at for d in s.exec(
                    select(Decision).where(Decision.game_id == people))}
                reminders = [(o.idempotency_key, o.created_at) for o in s.exec(
                    select(Outbox).where(Outbox.game_id == people,
                                         Outbox.idempotency_key.startswith("reminder:"),
                                         Outbox.created_at >= t0))]
            get_engine(app).dispose()
    late = [(as_utc(m.created_at) - as_utc(deadlines[m.decision_id])).total_seconds()
            for m in moves if m.game_id == people and m.source == "timeout"
            and deadlines.get(m.decision_id) is not None]
    half = args.seconds / 2
    reminded = []
    for key, at in reminders:  # "reminder:<decision id>:<n>"
        deadline = deadlines.get(int(key.split(":")[1]))
        if deadline is not None:
            reminded.append((as_utc(at) - as_utc(deadline)).total_seconds() + half)
    per_decision: dict[int, int] = {}
    for m in moves:
        if m.decision_id is not None:
            per_decision[m.decision_id] = per_decision.get(m.decision_id, 0) + 1
    bot_moves = sum(1 for m in moves if m.source == "bot")
    return {"late": late, "reminded": reminded, "cpu": cpu,
            "bot_per_min": bot_moves * 60 / args.duration,
            "doubled": sum(1 for n in per_decision.values() if n > 1),
            "bot_moves": bot_moves}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2, 4])
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--bot-ms", type=float, default=5000)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--seconds", type=float, default=10,
                        help="seconds per decision of a person")
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--logs", help="a folder to keep the processes' logs in")
    parser.add_argument("--host-allowance", type=float,
                        help="BOT_CPU_HOST_SECONDS for the run (the default: the server's)")
    args = parser.parse_args()
    print(f"{args.db}: {args.games} games x 3 strong bots at {args.bot_ms:g} ms, a game of "
          f"people at {args.seconds:g} s a decision; {args.duration:g} s a run, clock every "
          f"{args.interval:g} s, {os.cpu_count()} cores")
    for workers in args.workers:
        r = one_run(args.db, workers, args)
        late = r["late"]
        assert isinstance(late, list)
        lateness = (f"median {statistics.median(late):6.2f} s, max {max(late):6.2f} s"
                    if late else "none played")
        reminded = r["reminded"]
        assert isinstance(reminded, list)
        if reminded:
            lateness += (f"; {len(reminded)} reminders, late median "
                         f"{statistics.median(reminded):.2f} s, max {max(reminded):.2f} s")
        cpu = r["cpu"]
        assert isinstance(cpu, dict)
        who = "clock plays bots" if workers == 0 else f"{workers} bot worker(s)"
        print(f"{who:<18} people's timeouts: {len(late):3d}, late {lateness}; "
              f"bot moves/min {r['bot_per_min']:6.1f}; CPU s: "
              + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items())
              + f"; doubled {r['doubled']}")


if __name__ == "__main__":
    main()
