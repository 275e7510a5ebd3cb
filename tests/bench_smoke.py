"""Each script of ``bench/`` run once with tiny sizes, as a subprocess, so a benchmark
that no longer runs fails the suite (the figures themselves are for ``bench/``, never
asserted here). Shared by ``tests/test_bench_smoke*.py``: two files, so that two workers
of pytest-xdist share the minute they take."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# script: (tiny arguments, a line every run prints with its figures)
BENCHES: dict[str, tuple[list[str], str | list[str]]] = {
    "engine_speed.py": (["--games", "1", "--repeats", "1"],
                        r"stoneage all: [\d,]+ decisions per CPU-second"),
    "render_mail.py": (["--games", "cavemen", "--players", "2", "--reps", "1", "--every",
                        "50"], r"overall +\d+ emails: median +[\d.]+ ms"),
    "seat_view.py": (["--players", "2", "--reps", "1"],
                     r"stoneage: \d+ decisions[\s\S]*page +median +[\d.]+ ms"),
    "gc_pause.py": (["--repeats", "1", "--bot-ms", "20"],
                    [r"one full collection, CPU \(median of 1\): [\d.]+ ms before gc\.freeze\(\), "
                     r"[\d.]+ ms after",
                     r"a strong Stone Age decision of 20 ms, after: \d+ full collection"]),
    "push_cost.py": (["--n", "20", "--reps", "1"],
                     r"push on, one device: \d+ µs[\s\S]*encrypting one notification"),
    "page_time.py": (["--players", "2", "--reps", "1", "--cheap-reps", "5"],
                     r"game page \(seat 0\) +200 +[\d.]+[\s\S]*"
                     r"game page \(seat 0\), 304 +304 +[\d.]+"),
    "my_timing.py": (["--db", "both", "--pairs", "3", "--games", "2", "--known-games", "1"],
                     r"postgresql: 3 pairs"),
    "sweep_time.py": (["--db", "both", "--games", "20", "--decisions", "40", "--due", "5",
                       "--repeats", "1", "--due-repeats", "1"],
                      r"steady \(1 sweeps, nothing due\): median +[\d.]+ ms"),
    "confirm_latency.py": (["--games", "1", "--players", "2"],
                           r"act_by_token -> commit +n= *\d+ +median +[\d.]+ ms"),
    "confirm_statements.py": (["--confirms", "3"],
                              [r"POST: CPU median +[\d.]+ ms", r"    INSERT +median +\d"]),
    "mail_latency.py": (["--confirms", "3", "--page-samples", "3", "--phase-seconds", "1",
                         "--no-postgres"], r"GET /g/<token> +normal median +[\d.]+ ms"),
    "confirm_throughput.py": (["--duration", "0.5", "--warmup", "0.2", "--clients", "2",
                               "--client-procs", "1", "--workers", "1", "--players", "2",
                               "--baseline-runs", "1", "--max-games", "20", "--pollers", "3",
                               "--poll-every", "0.2"],
                              [r"pbem queued +[\d.]+ confirm POSTs/s",
                               r"write lock, gunicorn workers: \d+ holds",
                               r"polls: [\d.]+/s answered", r"pbem \+clock +1 +[\d.]+"]),
    "clock_stall.py": (["--db", "both", "--due", "10", "--games", "40", "--reference", "0.3",
                        "--warmup", "0.2", "--rate", "20", "--clients", "2", "--workers", "1",
                        "--tail", "0.1"],
                       r"postgresql +10 due timeouts in [\d.]+ s; confirm POST during: p50"),
    "inbox.py": (["--quick"], r"Cavemen 4p +page +1 "),  # run by test_bench_inbox_smoke
    # run in-process by test_bench_email_players_smoke
    "email_players.py": (["--quick"], r"Cavemen 4p +1 +0 +3\.0 "),
    "reply_latency.py": (["--games", "1", "--db", "sqlite", "--poll", "0.05"],
                         r"sqlite: reply -> next decision email: median +\d+ ms, p99 +\d+ ms"),
    "stoneage_decisions.py": (["--games", "2"], r"order +[\d.]+ a game +[\d.]+ %"),
    "arena.py": (["--game", "stoneage", "--players", "2", "--bots", "strong", "heuristic",
                  "--games", "2", "--rollouts", "2"],
                 [r"A win rate [\d.]+%  95% CI \[[\d.]+%, [\d.]+%\]",
                  r"CPU ms per decision A \(strong\): median [\d.]+, p99 [\d.]+",
                  r"bought per game: A cards [\d.]+, buildings [\d.]+"]),
    "digest_week.py": (["--quick"], r"digest\+news +[\d.]+ +1 +[\d.]+ +1 +\d+ +0"),
    "health_bench.py": (["--db", "both", "--emails", "300", "--moves", "100", "--replies",
                         "20", "--repeats", "2"],
                        [r"/healthz\?deep=1 +200 +median +[\d.]+ ms",
                         r"/metrics +200 +median +[\d.]+ ms",
                         r"PostgreSQL: loaded 300 emails"]),
    "bot_pool.py": (["--workers", "0", "1", "--games", "1", "--bot-ms", "50", "--duration",
                     "6", "--seconds", "3"],
                    [r"clock plays bots +people's timeouts: +\d+",
                     r"1 bot worker\(s\) +people's timeouts: +\d+.*doubled 0"]),
    "deadline_run.py": (["--hours-per-decision", "0.0005", "--idle-rounds", "1",
                         "--kill-after", "2", "--down", "2.5", "--interval", "0.2",
                         "--lease", "3", "--timeout", "120"], r"invariant HELD"),
}

# further runs of a script, with other options: name: (script, arguments, figures). On
# PostgreSQL only what differs from SQLite (the cluster, the lock probe's FOR UPDATE): no
# clock, no baseline (the SQLite run covers them; each costs seconds).
VARIANTS: dict[str, tuple[str, list[str], str | list[str]]] = {
    "arena.py --game cavemen": (
        "arena.py", ["--game", "cavemen", "--players", "3", "--bots", "strong", "heuristic",
                     "--games", "3", "--rollouts", "2", "--jobs", "2"],
        r"A win rate [\d.]+%  95% CI \[[\d.]+%, [\d.]+%\]"),
    "confirm_throughput.py --db postgresql": (
        "confirm_throughput.py",
        ["--db", "postgresql", "--configs", "queued", "--baseline-runs", "0", "--duration",
         "0.5", "--warmup", "0.2", "--clients", "2", "--client-procs", "1", "--workers", "1",
         "--players", "2", "--max-games", "20"],
        [r"pbem queued +[\d.]+ confirm POSTs/s", r"write lock, gunicorn workers: \d+ holds",
         r"PostgreSQL cluster removed"]),
    "confirm_statements.py --db postgresql": (
        "confirm_statements.py", ["--db", "postgresql", "--confirms", "3", "--server-log",
                                  "--pg-stat", "--list"],
        [r"POST: CPU median +[\d.]+ ms", r"the cluster's processes: [\d.]+ ms CPU",
         r"POST, as the server logged them:\n +BEGIN",
         r"the server's time per confirm by statement"]),
}

# modules that benches import (not scripts of their own)
HELPERS = {"lock_probe.py"}


def run_bench(name: str) -> None:
    """Run ``bench/<script>`` with its tiny arguments (``name``: a script of BENCHES or a
    run of VARIANTS); it must exit 0 and print its figures."""
    script, args, figures = VARIANTS.get(name) or (name, *BENCHES[name])
    done = subprocess.run([sys.executable, f"bench/{script}", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    for figure in [figures] if isinstance(figures, str) else figures:
        assert re.search(figure, done.stdout), (figure, done.stdout[-3000:])


def test_every_bench_script_has_a_smoke_run() -> None:
    scripts = {p.name for p in (ROOT / "bench").glob("*.py")} - HELPERS
    assert sorted(BENCHES) == sorted(scripts)
    assert {script for script, _, _ in VARIANTS.values()} <= scripts
