"""Replies by email: the time from a reply handed to the inbound receiver to the next
decision email leaving, and the share of replies played at the first try.

For each database (SQLite: a temp file; PostgreSQL: a throwaway cluster from
tests/pgcluster.py), migrated, this script runs in one process what a deployment runs
in three: the inbound SMTP receiver (``pbem.mail.receive``, aiosmtpd) on a free loopback
port and the players in this process; the clock (``flask --app pbem pbem clock``) as a
process of its own, as deployed: its mail loop polls the outbox every ``--poll`` s on
SQLite (pbem's default 0.5 s) and is woken by NOTIFY on PostgreSQL, and sends by SMTP to
an aiosmtpd server here. Whole 3-player Cavemen games are played only by replying
to the decision emails as they arrive (``tests/server/replying.ReplyGame``: the heuristic
bot's choice typed as a person types it, in turn plain, HTML-only, under a German quote
header, with a signature; consecutive moves of one player in one reply). A sample runs
from the moment the reply is handed to the receiver (``smtplib`` connects) to the moment
the SMTP server has the next decision email (the first decision email that arrives
after the reply was acted on; a reply that ends the game gives none). Prints the median
and p99 (nearest rank) and the share of replies played at the first try.

    .venv/bin/python bench/reply_latency.py [--games 3] [--db sqlite|postgresql|both]
        [--against ../main]

``--against TREE`` runs, for each database, the same bench of another checkout first
(its own bench script, its own pbem and clock, its ``.venv`` if it has one) and then
this one's, and prints both: a before and after in one run on one machine.

Measured 2026-11-27 on the two-core machine, shared (load average 15), 3 games each:
SQLite median 590 ms, p99 1183 ms (n=312); PostgreSQL median 164 ms, p99 557 ms
(n=312); 98.4 % of 315 replies played at the first try (the rest: a shortened word
that named several places or cards, e.g. "place 1 buil", answered with the choices).
On SQLite the clock's outbox poll (0.5 s) is most of it: ``--poll 0.05`` gave median
129 ms, p99 296 ms (1 game).

Measured 2026-11-28 on the same machine (shared), 3 games each, ``--against`` the
commit before the wake-up (before then after per database, n=312 each), two runs:
SQLite median 542 -> 39 ms, p99 1087 -> 125 ms (load average about 5) and 585 -> 54 ms,
p99 1197 -> 223 ms (load about 9); PostgreSQL (unchanged but for listening before the
first pass) 69 -> 56 ms, p99 181 -> 135 ms and 73 -> 97 ms, p99 205 -> 238 ms (noise).
On SQLite the process that commits mail now rings the clock's mail loop (``pbem.wake``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.*

from pbem import create_app, services  # noqa: E402
from pbem.migrate import upgrade  # noqa: E402
from tests.server.replying import Inbound, ReplyGame, TimedSmtp  # noqa: E402

SEEDS = (114, 7, 21, 33, 45, 58, 61, 77)


@contextlib.contextmanager
def database(kind: str, tmp: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp / 'bench.sqlite3'}"
        return
    from tests.pgcluster import PostgresCluster

    cluster = PostgresCluster()
    cluster.start()
    try:
        yield cluster.url("postgres")
    finally:
        cluster.stop()


def run(kind: str, games: int, poll: float) -> tuple[list[float], int, int]:
    latencies: list[float] = []
    replies = first = 0
    with tempfile.TemporaryDirectory() as tmp, database(kind, Path(tmp)) as url:
        upgrade(url)
        smtp = TimedSmtp()
        smtp.start()
        config = {
            "DATABASE_URL": url, "SECRET_KEY": "bench", "MAIL_BACKEND": "smtp",
            "SMTP_HOST": "127.0.0.1", "SMTP_PORT": smtp.port, "MAIL_FROM":
            "pbem <games@bench.example>", "BASE_URL": "http://bench.example",
            "MAILBOX_DIR": tmp, "MAIL_POLL_INTERVAL": poll, "FOLLOW_UP_MINUTES": 0,
            "TAKEBACK_GRACE_SECONDS": 0,
            "REPLY_ANSWERS_PER_HOUR": 10**9, "NOTICE_LIMIT_PER_ADDRESS": 10**9,
            "NOTICE_LIMIT_PER_GAME": 10**9}
        app = create_app(config)
        app.instance_path = tmp
        # the clock's own process: pbem's defaults but these (read as JSON where they can)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
        env.update({f"PBEM_{k}": str(v) for k, v in config.items()})
        env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)  # this tree's pbem
        flask = Path(sys.executable).with_name("flask")
        clock = subprocess.Popen([str(flask), "--app", "pbem", "pbem", "clock"], env=env,
                                 cwd=Path(__file__).resolve().parent.parent,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        inbound = Inbound(app)
        try:
            for n in range(games):
                people = [services.PlayerIn(name, f"{name.lower()}{n}@bench.example", lang,
                                            "UTC")
                          for name, lang in (("Ann", "en"), ("Bob", "en"), ("Dee", "de"))]
                seed = SEEDS[n % len(SEEDS)]
                read = len(smtp.mails)  # this game's emails come after these
                with app.app_context():
                    created = services.create_game("cavemen", people, seed=seed,
                                                   confirm_by_email=False, start=True)
                player = ReplyGame(app, smtp, inbound, created.game_id, seed)
                player.read = read
                player.play(len(people))
                latencies += player.latencies
                replies += player.replies
                first += player.first_try
        finally:
            inbound.stop()
            clock.terminate()
            clock.wait(30)
            smtp.stop()
    return latencies, replies, first


def run_elsewhere(tree: Path, kind: str, games: int, poll: float) -> str:
    """The line of ``tree``'s own bench for ``kind`` (run in a process of its own)."""
    python = tree / ".venv" / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    env["PYTHONPATH"] = str(tree)
    done = subprocess.run(
        [str(python if python.exists() else Path(sys.executable)),
         str(tree / "bench" / "reply_latency.py"), "--db", kind, "--games", str(games),
         "--poll", str(poll)], cwd=tree, env=env, capture_output=True, text=True,
        check=True)
    return next(line for line in done.stdout.splitlines()
                if re.match(rf"{kind}: reply", line))


def report(kind: str, latencies: list[float], replies: int, first: int) -> None:
    ms = sorted(x * 1000 for x in latencies)
    p99 = ms[max(0, round(0.99 * len(ms)) - 1)]
    print(f"{kind}: reply -> next decision email: median {statistics.median(ms):.0f} ms, "
          f"p99 {p99:.0f} ms (n={len(ms)}); {replies} replies, "
          f"{first / replies:.1%} played at the first try")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--db", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--games", type=int, default=3)
    parser.add_argument("--poll", type=float, default=0.5,
                        help="the mail loop's outbox poll on SQLite (pbem's default 0.5)")
    parser.add_argument("--against", type=Path, metavar="TREE",
                        help="another checkout to measure first, side by side")
    args = parser.parse_args()
    for kind in ("sqlite", "postgresql") if args.db == "both" else (args.db,):
        if args.against:
            print(f"before ({args.against.resolve()}): "
                  f"{run_elsewhere(args.against.resolve(), kind, args.games, args.poll)}",
                  flush=True)
            print("after  (this tree): ", end="", flush=True)
        report(kind, *run(kind, args.games, args.poll))


if __name__ == "__main__":
    main()
