"""The clock gives way to players (issue 19, item 4), SQLite: a player's write waits for
at most the clock's transaction under way, however many the clock writes back to back,
and goes on as soon as it ends; the clock waits for players at most ``GIVE_WAY_SECONDS``
per transaction; the gate is let go however a transaction ends; reads never touch it.
(PostgreSQL locks rows, not the database: there the clock holds up only a confirm on the
very game it is playing.)"""

from __future__ import annotations

import fcntl
import threading
import time

import pytest
from sqlalchemy import text

from pbem import db
from pbem.db import background_writes, read_scope, session_scope

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def clock_like(app, hold: float, stop: threading.Event, done: list[int],
               limit: float = 5.0) -> None:
    """Writing transactions back to back, each holding the write lock ``hold`` seconds,
    as the clock's sweep does, until ``stop`` (or ``limit`` seconds)."""
    end = time.monotonic() + limit
    with app.app_context(), background_writes():
        while not stop.is_set() and time.monotonic() < end:
            with session_scope() as s:
                s.execute(text("SELECT 1"))  # BEGIN IMMEDIATE: the write lock, held
                time.sleep(hold)
            done[0] += 1


def timed_write(app) -> float:
    start = time.monotonic()
    with app.app_context(), session_scope() as s:
        s.execute(text("SELECT 1"))
    return time.monotonic() - start


def gate_path(app) -> str:
    return app.config["DATABASE_URL"].split("///", 1)[1] + ".writers"


def test_a_players_write_waits_only_for_the_clocks_transaction_under_way(app):
    """Without the gate SQLite's busy handler retries ever more rarely (every 100 ms after
    a while) and finds the lock free only by luck in the clock's short gaps: seconds."""
    stop, done = threading.Event(), [0]
    clock = threading.Thread(target=clock_like, args=(app, 0.02, stop, done))
    clock.start()
    try:
        while done[0] < 2:  # the clock is writing
            time.sleep(0.005)
        waits = [timed_write(app) for _ in range(8)]
        assert max(waits) < 0.5, waits  # one clock transaction is 20 ms
        behind = done[0]
        time.sleep(0.2)
        assert done[0] > behind, "the clock goes on between the player's writes"
    finally:
        stop.set()
        clock.join()


def test_a_waiting_player_goes_on_as_soon_as_the_clocks_transaction_ends(app):
    """The player waits at the gate, not in SQLite's busy handler, whose next try comes
    by its own schedule (here at 178 ms, 48 ms after the end at 130 ms)."""
    late = []
    for _ in range(5):
        started, ended = threading.Event(), []

        def clock(started=started, ended=ended) -> None:
            with app.app_context(), background_writes(), session_scope() as s:
                s.execute(text("SELECT 1"))
                started.set()
                time.sleep(0.15)
            ended.append(time.monotonic())

        thread = threading.Thread(target=clock)
        thread.start()
        started.wait(10)
        time.sleep(0.02)
        timed_write(app)
        done = time.monotonic()
        thread.join()
        late.append(done - ended[0])
    assert sorted(late)[2] < 0.02, late  # the median: one try may be slow on a busy machine


def test_the_clock_gives_way_at_most_give_way_seconds_per_transaction(app, monkeypatch):
    """A player that holds the gate for long (here a stuck process that took it and never
    wrote) slows the clock down, but never stops it."""
    monkeypatch.setattr(db, "GIVE_WAY_SECONDS", 0.1)
    with app.app_context(), session_scope() as s:
        s.execute(text("SELECT 1"))  # the gate's file exists
    with open(gate_path(app), "ab") as gate:
        fcntl.flock(gate, fcntl.LOCK_SH)
        stop, done = threading.Event(), [0]
        start = time.monotonic()
        clock_like(app, 0.0, stop, done, limit=0.35)
        took = time.monotonic() - start
    assert 2 <= done[0] <= 4, (done, took)  # about one per 0.1 s


def test_the_gate_is_let_go_however_a_transaction_ends(app, monkeypatch):
    """After a commit, a rollback on an error, and a read, the clock does not wait."""
    monkeypatch.setattr(db, "GIVE_WAY_SECONDS", 2.0)  # a gate left held would show

    def clock_write() -> float:
        start = time.monotonic()
        with app.app_context(), background_writes(), session_scope() as s:
            s.execute(text("SELECT 1"))
        return time.monotonic() - start

    with app.app_context(), session_scope() as s:
        s.execute(text("SELECT 1"))
    assert clock_write() < 1.0
    with pytest.raises(ZeroDivisionError), app.app_context(), session_scope() as s:
        s.execute(text("SELECT 1"))
        _ = 1 / 0
    assert clock_write() < 1.0
    with app.app_context(), read_scope() as s:
        s.execute(text("SELECT 1"))
        assert clock_write() < 1.0  # an open read holds no gate (nor the write lock)
    # and a player's transaction under way holds it: the clock waits for it
    holding, release = threading.Event(), threading.Event()

    def player() -> None:
        with app.app_context(), session_scope() as s:
            s.execute(text("SELECT 1"))
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=player)
    thread.start()
    holding.wait(10)
    threading.Timer(0.3, release.set).start()
    waited = clock_write()
    thread.join()
    assert 0.25 <= waited < 1.5, waited
