"""Bot workers (issue 35, points 1-3): bots think in worker processes (``pbem bots``),
never in the clock. A worker claims one due bot decision at a time with a lease; two
workers never hold one claim, a lease that ran out is claimed again, and two workers
thinking about one decision record one move; a worker killed mid-thought loses nothing;
due decisions are claimed round-robin across hosts; while a worker is alive the clock's
sweep plays people's timeouts on time and no bot (without one it still plays them).
Every test runs on SQLite and PostgreSQL; the workers of the last ones are real
processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import update

from pbem import bots, clock, health, mail, services
from pbem.db import session_scope
from pbem.kinds import Process
from pbem.models import Decision, Move, as_utc, utcnow
from tests.server.conftest import GAME_SEED
from tests.server.helpers import MAIL_FROM, PLAYERS, SECRET
from tests.server.timekit import rows

ANN, BOB, _CY = PLAYERS


def bot(level: str) -> services.PlayerIn:
    return services.PlayerIn("", "", "en", "UTC", bot=level)


def bot_game(app, host: services.PlayerIn = ANN, level: str = "easy",
             bot_ms: float | None = None) -> tuple[str, int]:
    """A started Cavemen game of ``host`` and two bots of ``level``; the bot of seat 2
    bids first, due at once: (the game, that decision)."""
    app.config["BOT_PAUSE_SECONDS"] = 0
    policy = {"bot_ms": bot_ms} if bot_ms else None
    with app.app_context():
        created = services.create_game("cavemen", [host, bot(level), bot(level)], policy,
                                       seed=GAME_SEED, confirm_by_email=False, start=True)
        mail.deliver_due()
    (first,) = rows(app, Decision, Decision.game_id == created.game_id,
                    Decision.closed_at.is_(None))
    assert first.position == 2 and first.deadline_at is not None
    return created.game_id, first.id


def moves_of(app, decision_id: int) -> list[Move]:
    return rows(app, Move, Move.decision_id == decision_id)


def claimed(app, decision_id: int) -> bool:
    (row,) = rows(app, Decision, Decision.id == decision_id)
    return row.bot_claimed_until is not None


# ------------------------------------------------------------------ claims, in process
def test_a_due_bot_decision_is_claimed_once_until_its_lease_runs_out(app):
    game_id, decision_id = bot_game(app)
    now = utcnow() + timedelta(seconds=1)
    with app.app_context():
        assert bots.claim(now, lease=30) == (decision_id, game_id)
        assert bots.claim(now, lease=30) is None  # a second worker finds nothing
        assert bots.claim(now + timedelta(seconds=29), lease=30) is None
        again = bots.claim(now + timedelta(seconds=31), lease=30)  # the first one died
    assert again == (decision_id, game_id)
    assert moves_of(app, decision_id) == []  # a claim plays nothing


def test_a_worker_plays_the_claimed_decision_once_and_the_claim_ends(app):
    game_id, decision_id = bot_game(app)
    with app.app_context():
        assert bots.work_once(utcnow() + timedelta(seconds=1)) == (decision_id, game_id)
    (move,) = moves_of(app, decision_id)
    assert move.source == "bot"
    assert not claimed(app, decision_id)
    (row,) = rows(app, Decision, Decision.id == decision_id)
    assert row.closed_at is not None


def test_two_workers_thinking_on_one_decision_record_one_move(app):
    """The first worker's lease ran out while it thought; a second claimed and thought
    too: the first records the move, the second finds the game moved and records none."""
    game_id, decision_id = bot_game(app)
    now = utcnow() + timedelta(seconds=1)
    with app.app_context():
        first = bots.claim(now, lease=1)
        second = bots.claim(now + timedelta(seconds=2), lease=30)
        assert first == second == (decision_id, game_id)
        assert services.play_bot(decision_id, now, game_id) is True
        assert services.play_bot(decision_id, now, game_id) is False
    assert len(moves_of(app, decision_id)) == 1


def test_due_bot_decisions_go_round_robin_across_hosts(app):
    """Ann's ten games fell due before Bob's one: Bob's decision is claimed second, not
    eleventh; then Ann's games go in turn, each once."""
    ann = [bot_game(app, ANN)[::-1] for _ in range(10)]  # (decision, game): as claimed
    bob = bot_game(app, BOB)[::-1]
    now = utcnow() + timedelta(seconds=1)
    with app.app_context():
        order = [bots.claim(now + timedelta(milliseconds=i), lease=60) for i in range(12)]
    assert order[0] == ann[0]  # the earliest due; nobody served yet
    assert order[1] == bob  # Ann was just served: Bob's turn
    assert sorted(order[2:11]) == sorted(ann[1:])
    assert order[11] is None


def test_a_decision_claimed_by_a_dead_worker_is_the_next_workers_after_the_lease(app):
    game_id, decision_id = bot_game(app)
    now = utcnow() + timedelta(seconds=1)
    with app.app_context():
        assert bots.claim(now, lease=5) == (decision_id, game_id)  # ... and it dies
        assert bots.work_once(now + timedelta(seconds=1)) is None
        assert bots.work_once(now + timedelta(seconds=6)) == (decision_id, game_id)
    assert len(moves_of(app, decision_id)) == 1


# ------------------------------------------------------------------ the clock
def test_the_clock_plays_no_bot_while_a_worker_is_alive(app):
    game_id, decision_id = bot_game(app)
    with app.app_context():
        health.beat(Process.BOTS, start=True)  # a worker's heartbeat, fresh
    assert clock.sweep(app)["bots"] == 0 and moves_of(app, decision_id) == []
    with app.app_context():
        health.forget(Process.BOTS)  # it stopped: the clock plays the bots again
    assert clock.sweep(app)["bots"] == 1 and len(moves_of(app, decision_id)) == 1


def test_the_clock_plays_no_bot_when_workers_run_elsewhere(app):
    _game_id, decision_id = bot_game(app)
    app.config["BOT_WORKERS"] = 2
    assert clock.sweep(app)["bots"] == 0 and moves_of(app, decision_id) == []


def test_without_workers_a_sweep_spends_a_bounded_time_on_bots(app):
    """No worker: the clock plays the bots itself, but after CLOCK_BOT_SECONDS a sweep
    plays no further bot (the next sweep goes on), so it comes back to the deadlines."""
    app.config["CLOCK_BOT_SECONDS"] = 0.1
    due = [bot_game(app, level="strong", bot_ms=300) for _ in range(3)]
    assert clock.sweep(app)["bots"] == 1
    assert clock.sweep(app)["bots"] == 1
    assert clock.sweep(app)["bots"] == 1
    assert [len(moves_of(app, d)) for _g, d in due] == [1, 1, 1]
    assert not any(claimed(app, d) for _g, d in due)


def test_the_clocks_fallback_thinks_strong_bots_at_the_default_budget(app, monkeypatch):
    """No worker: the clock plays a strong bot the host gave 3 s at the default budget
    instead (its sweep must keep people's deadlines); a worker thinks the host's 3 s."""
    from engine.search import DEFAULT_BUDGET_MS
    from pbem.services import playing

    built: list[float] = []
    real = playing._strong_bot

    def spy(engine: str, budget_ms: float):
        built.append(budget_ms)
        return real(engine, DEFAULT_BUDGET_MS)  # (the test need not wait 3 s)

    monkeypatch.setattr(playing, "_strong_bot", spy)
    _game, decision_id = bot_game(app, level="strong", bot_ms=3000)
    assert clock.sweep(app)["bots"] == 1
    assert built == [DEFAULT_BUDGET_MS] and len(moves_of(app, decision_id)) == 1
    _game, decision_id = bot_game(app, level="strong", bot_ms=3000)
    with app.app_context():
        assert bots.work_once() is not None
    assert built == [DEFAULT_BUDGET_MS, 3000] and len(moves_of(app, decision_id)) == 1


# ------------------------------------------------------------------ real processes
@pytest.fixture
def workers(db_url, tmp_path) -> Iterator:
    """``start(**config)``: a ``pbem bots`` process on this test's database (its log in
    ``log_of(proc)``); all killed at the end."""
    started: list[subprocess.Popen] = []

    def start(workers: int = 1, **config) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
        env.update(PBEM_DATABASE_URL=db_url, PBEM_SECRET_KEY=SECRET,
                   PBEM_MAIL_BACKEND="memory", PBEM_MAIL_FROM=MAIL_FROM,
                   PBEM_BOT_POLL_SECONDS="0.05", PBEM_BOT_PAUSE_SECONDS="0")
        env.update({f"PBEM_{k}": str(v) for k, v in config.items()})
        path = tmp_path / f"bots{len(started)}.log"
        with open(path, "wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", "flask", "--app", "pbem", "pbem",
                                     "bots", "--workers", str(workers)], env=env,
                                    cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
        proc.log = path  # type: ignore[attr-defined]
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def wait_until(check, within: float = 60, proc: subprocess.Popen | None = None) -> None:
    end = time.monotonic() + within
    while not check():
        assert time.monotonic() < end, "waited in vain"
        assert proc is None or proc.poll() is None, proc.log.read_text()  # type: ignore
        time.sleep(0.05)


def test_a_worker_killed_mid_thought_leaves_the_decision_to_another(app, workers):
    """A strong bot thinks 3 s; its worker is killed (SIGKILL) as it thinks: the
    decision stays open, and another worker takes it once the lease ran out and plays
    it, once."""
    game_id, decision_id = bot_game(app, level="strong", bot_ms=3000)
    first = workers(BOT_LEASE_SECONDS=2)
    wait_until(lambda: claimed(app, decision_id), proc=first)
    time.sleep(0.5)
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert moves_of(app, decision_id) == [] and claimed(app, decision_id)
    second = workers(BOT_LEASE_SECONDS=30)
    wait_until(lambda: moves_of(app, decision_id), within=60, proc=second)
    (move,) = moves_of(app, decision_id)
    assert move.source == "bot"
    assert f"claimed decision {decision_id} " in second.log.read_text()


def test_two_worker_processes_on_one_decision_record_one_move(app, workers):
    """A worker stalls mid-thought (SIGSTOP: it renews no lease), its lease runs out and
    a second worker takes the decision and plays it; the first, let go on, finishes its
    thought and records nothing: one move."""
    game_id, decision_id = bot_game(app, level="strong", bot_ms=2000)
    first = workers(BOT_LEASE_SECONDS=1)
    wait_until(lambda: claimed(app, decision_id), proc=first)
    first.send_signal(signal.SIGSTOP)
    try:
        time.sleep(1.5)  # the lease runs out: nobody renews it
        second = workers(BOT_LEASE_SECONDS=30)
        wait_until(lambda: moves_of(app, decision_id), within=60, proc=second)
    finally:
        first.send_signal(signal.SIGCONT)
    wait_until(lambda: f"decision {decision_id} of game {game_id} moved on"
               in first.log.read_text(), within=30, proc=first)
    assert len(moves_of(app, decision_id)) == 1
    assert f"played decision {decision_id} " not in first.log.read_text()
    assert f"played decision {decision_id} " in second.log.read_text()


def test_a_thought_longer_than_the_lease_is_not_taken_over(app, workers):
    """The worker renews its lease while it thinks: with a lease of 1 s and a bot that
    thinks 3 s, a second worker never claims the decision, and one move is recorded."""
    game_id, decision_id = bot_game(app, level="strong", bot_ms=3000)
    pool = workers(2, BOT_LEASE_SECONDS=1)
    wait_until(lambda: moves_of(app, decision_id), within=60, proc=pool)
    assert pool.log.read_text().count(f"claimed decision {decision_id} ") == 1, \
        pool.log.read_text()
    assert len(moves_of(app, decision_id)) == 1


def test_a_persons_timeout_is_played_on_time_while_a_worker_thinks(app, workers):
    """A strong bot thinks 5 s in a worker; meanwhile a person's deadline passes in
    another game: the clock's sweep plays that timeout at once and no bot."""
    _bots_game, bot_decision = bot_game(app, level="strong", bot_ms=5000)
    with app.app_context():
        people = services.create_game("cavemen", PLAYERS, None, seed=GAME_SEED,
                                      confirm_by_email=False, start=True)
    (late,) = rows(app, Decision, Decision.game_id == people.game_id,
                   Decision.closed_at.is_(None))
    worker = workers(BOT_LEASE_SECONDS=60)
    wait_until(lambda: claimed(app, bot_decision), proc=worker)
    with app.app_context(), session_scope() as s:
        s.connection().execute(update(Decision).where(Decision.id == late.id)
                               .values(deadline_at=utcnow() - timedelta(seconds=1)))
    started = time.monotonic()
    counts = clock.sweep(app)
    took = time.monotonic() - started
    assert (counts["timeouts"], counts["bots"]) == (1, 0) and took < 2, (counts, took)
    assert moves_of(app, bot_decision) == []  # still thinking, in the worker
    (timed_out,) = moves_of(app, late.id)
    assert timed_out.source == "timeout"
    wait_until(lambda: moves_of(app, bot_decision), within=60, proc=worker)


def test_an_idle_worker_is_woken_by_a_new_bot_decision_and_plays_it_when_due(app, workers):
    """A worker that would look for work only once a minute: a game whose first bot
    decision is due after a pause of 1-3 s is started; the commit wakes the worker (a
    ring on SQLite, NOTIFY on PostgreSQL), which waits until the decision is due and
    plays it at once then."""
    worker = workers(BOT_POLL_SECONDS=60)
    wait_until(lambda: "bot worker running" in worker.log.read_text(), proc=worker)
    time.sleep(1)  # in its wait by now: nothing was due when it looked
    app.config["BOT_PAUSE_SECONDS"] = 2
    with app.app_context():
        created = services.create_game("cavemen", [ANN, bot("easy"), bot("easy")], None,
                                       seed=GAME_SEED, confirm_by_email=False, start=True)
    (first,) = rows(app, Decision, Decision.game_id == created.game_id,
                    Decision.closed_at.is_(None))
    wait_until(lambda: moves_of(app, first.id), within=20, proc=worker)
    (move,) = moves_of(app, first.id)
    late = (as_utc(move.created_at) - as_utc(first.deadline_at)).total_seconds()
    assert 0 <= late < 1.0, late
