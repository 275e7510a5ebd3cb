"""Bot workers (``flask --app pbem pbem bots --workers N``): the processes in which bots
think, so that neither the clock nor a web request ever does.

A worker claims one due bot decision at a time (``claim``): in one short transaction it
reads the due, unclaimed decisions of seats a bot plays (on PostgreSQL with
``FOR UPDATE SKIP LOCKED``, so that workers, on any number of machines, pass each other
by; on SQLite the transaction holds the database's write lock), picks one round-robin
(the host whose games a worker served longest ago first, then that host's game served
longest ago, then the earliest due), and writes a lease on it
(``Decision.bot_claimed_until``, ``BOT_LEASE_SECONDS`` from now) and the time on its game
(``Game.bot_served_at``). It then thinks holding no lock and no transaction, and records
the move through the clock's own service (``services.play_bot``): under the game's lock,
only if the game has not moved meanwhile, so there is exactly one move per decision
whatever races. A worker killed mid-thought loses nothing: its lease runs out and another
worker claims the decision. A worker writes a heartbeat (``Process.BOTS``) when it starts
and every ``BOT_BEAT_SECONDS``; while one is fresh (or ``BOT_WORKERS`` says workers run
elsewhere) the clock leaves the bots to the workers, else it still plays them itself, so
a setup without workers keeps its bots playing.

``--workers N`` (default: the cores less one, at least one) runs N worker processes under
the supervisor of ``pbem serve`` (``pbem.supervise``), each ``--workers 1``. Workers run
at a lower priority (``BOT_NICE``): the clock and the web get the CPU they need first.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from datetime import datetime, timedelta
from typing import Any

from flask import Flask
from sqlalchemy import and_, case, func, select, update
from sqlalchemy.orm import aliased

from pbem import health, wake
from pbem.db import background_writes, get_engine, read_connection, session_scope
from pbem.kinds import Process
from pbem.models import Decision, Game, Heartbeat, Seat, as_utc, table_of, utcnow
from pbem.services.deadlines import Due, bot_open, play_bot

log = logging.getLogger("pbem.bots")
_DECISION = table_of(Decision)
_GAME = table_of(Game)
_SEAT = table_of(Seat)
_BEAT = table_of(Heartbeat)
CANDIDATES = 200  # due decisions a claim chooses among
_LONG_AGO = datetime(1970, 1, 1)
MIN_PAUSE = 0.02  # seconds a worker waits at least when something is due soon


def default_workers() -> int:
    """The cores less one (the clock and the web need some), at least one."""
    return max(1, (os.cpu_count() or 1) - 1)


def _unclaimed(now: datetime) -> Any:
    claimed = _DECISION.c.bot_claimed_until
    return claimed.is_(None) | (claimed < now)


def claimable(now: datetime, seat: Any = _SEAT) -> Any:
    """Where a bot's decision may be claimed now: open in a running, unpaused game, its
    pause over and claimed by nobody (``seat``: the decision's seat as joined)."""
    return and_(_DECISION.c.deadline_at <= now, bot_open(_DECISION, _GAME, seat),
                _unclaimed(now))


def claim(now: datetime | None = None, lease: float | None = None) -> Due | None:
    """Claim the next due bot decision for this worker (the lease: ``lease`` seconds, by
    default ``BOT_LEASE_SECONDS``), round-robin across hosts and games; None if none is
    due. In the app's context."""
    from flask import current_app

    now = now or utcnow()
    lease = float(current_app.config["BOT_LEASE_SECONDS"] if lease is None else lease)
    bot_seat = aliased(_SEAT)
    host_seat = aliased(_SEAT)
    query = (select(_DECISION.c.id, _DECISION.c.game_id, _DECISION.c.deadline_at,
                    _GAME.c.bot_served_at, host_seat.c.email)
             .join(_GAME, _GAME.c.id == _DECISION.c.game_id)
             .join(bot_seat, bot_seat.c.id == _DECISION.c.seat_id)
             .outerjoin(host_seat, (host_seat.c.game_id == _GAME.c.id)
                        & host_seat.c.is_host.is_(True))
             .where(claimable(now, bot_seat))
             # the games served longest ago first: a host's thousand games fill the
             # window of candidates only until they are served
             .order_by(_GAME.c.bot_served_at.asc().nulls_first(), _DECISION.c.deadline_at)
             .limit(CANDIDATES))
    with read_connection() as conn:  # nothing due: no write transaction (SQLite's lock)
        if conn.execute(query.with_only_columns(_DECISION.c.id).limit(1)).first() is None:
            return None
    with background_writes(), session_scope() as s:
        conn = s.connection()
        if conn.dialect.name == "postgresql":  # other workers pass these rows by
            query = query.with_for_update(skip_locked=True, of=_DECISION)
        rows = list(conn.execute(query))
        if not rows:
            return None
        hosts = {r.email for r in rows if r.email}
        served: dict[str, datetime] = {}
        if hosts:  # when each host's games were last served, any of them
            last = (select(host_seat.c.email, func.max(_GAME.c.bot_served_at))
                    .join(_GAME, _GAME.c.id == host_seat.c.game_id)
                    .where(host_seat.c.is_host.is_(True), host_seat.c.email.in_(hosts))
                    .group_by(host_seat.c.email))
            served = {email: as_utc(at) for email, at in conn.execute(last) if at}

        def turn(r: Any) -> tuple[datetime, datetime, datetime, int]:
            game_at = as_utc(r.bot_served_at) if r.bot_served_at else None
            host_at = served.get(r.email) if r.email else game_at
            return (_naive(host_at), _naive(game_at), _naive(as_utc(r.deadline_at)), r.id)

        chosen = min(rows, key=turn)
        got = conn.execute(update(_DECISION)
                           .where(_DECISION.c.id == chosen.id,
                                  _DECISION.c.closed_at.is_(None), _unclaimed(now))
                           .values(bot_claimed_until=now + timedelta(seconds=lease)))
        if got.rowcount != 1:  # cannot happen under the lock; a race lost all the same
            return None
        conn.execute(update(_GAME).where(_GAME.c.id == chosen.game_id)
                     .values(bot_served_at=now))
        return Due(chosen.id, chosen.game_id)


def _naive(when: datetime | None) -> datetime:
    """A key that sorts never-served (None) first."""
    return when.replace(tzinfo=None) if when is not None else _LONG_AGO


def release(decision_id: int) -> None:
    """End this worker's claim (its move was recorded, or the game moved meanwhile: the
    decision may be claimed again at once)."""
    with background_writes(), session_scope() as s:
        s.connection().execute(update(_DECISION).where(_DECISION.c.id == decision_id)
                               .values(bot_claimed_until=None))


class Thinking:
    """The decision this worker holds a claim on, shared with its heartbeat thread,
    which renews the claim's lease while the worker thinks (so that a thought longer
    than the lease is never taken over by another worker; a worker that died or hangs
    renews nothing, and its lease runs out)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.decision_id: int | None = None

    def hold(self, decision_id: int) -> None:
        with self.lock:
            self.decision_id = decision_id

    def release(self) -> None:
        """Release the claim (``release``) and stop renewing it, as one step."""
        with self.lock:
            if self.decision_id is not None:
                release(self.decision_id)
            self.decision_id = None

    def forget(self) -> None:
        """Stop renewing the claim, keeping it until its lease runs out."""
        with self.lock:
            self.decision_id = None

    def renew(self, lease: float) -> bool:
        """Extend the lease of the claim held, if one is; whether it was."""
        with self.lock:
            if self.decision_id is None:
                return False
            with background_writes(), session_scope() as s:
                got = s.connection().execute(
                    update(_DECISION)
                    .where(_DECISION.c.id == self.decision_id,
                           _DECISION.c.closed_at.is_(None),
                           _DECISION.c.bot_claimed_until.is_not(None))
                    .values(bot_claimed_until=utcnow() + timedelta(seconds=lease)))
            return bool(got.rowcount)


def work_once(now: datetime | None = None, thinking: Thinking | None = None) -> Due | None:
    """Claim one due bot decision, think, record the move if the game has not moved;
    returns what it claimed (None: nothing was due). A failure keeps the claim until its
    lease runs out (so a decision that fails is not tried again at once). ``thinking``:
    where the worker's heartbeat thread finds the claim to renew."""
    thinking = thinking or Thinking()
    item = claim(now)
    if item is None:
        return None
    thinking.hold(item.decision_id)
    log.info("bots: claimed decision %s of game %s", item.decision_id, item.game_id)
    try:
        played = play_bot(item.decision_id, utcnow(), item.game_id)
    except Exception:  # noqa: BLE001 - logged; tried again once the lease runs out
        thinking.forget()
        log.exception("bots: the move of decision %s failed", item.decision_id)
        return item
    thinking.release()
    if played:
        log.info("bots: played decision %s of game %s", item.decision_id, item.game_id)
    else:
        log.info("bots: decision %s of game %s moved on meanwhile: nothing recorded",
                 item.decision_id, item.game_id)
    return item


# when an open bot decision may be claimed: its pause over, or its claim's lease run out
_NEXT = case((_DECISION.c.bot_claimed_until.is_(None), _DECISION.c.deadline_at),
             (_DECISION.c.bot_claimed_until < _DECISION.c.deadline_at,
              _DECISION.c.deadline_at),
             else_=_DECISION.c.bot_claimed_until)


def next_due() -> datetime | None:
    """When a bot decision may next be claimed (its pause over, or the lease of the
    claim on it run out); None if no bot has a decision open. In the app's context."""
    query = (select(func.min(_NEXT))
             .join(_GAME, _GAME.c.id == _DECISION.c.game_id)
             .join(_SEAT, _SEAT.c.id == _DECISION.c.seat_id)
             .where(_DECISION.c.deadline_at.is_not(None), bot_open(_DECISION, _GAME, _SEAT)))
    with read_connection() as conn:
        when = conn.execute(query).scalar()
    return as_utc(when) if when is not None else None


def pause_until_due(poll: float, now: datetime | None = None) -> float:
    """How long a worker with nothing to do waits: until the next bot decision is due,
    at most ``poll`` (woken sooner when one is opened), at least a moment."""
    now = now or utcnow()
    when = next_due()
    if when is None:
        return poll
    return min(poll, max(MIN_PAUSE, (when - now).total_seconds()))


def work(app: Flask, stop: threading.Event) -> None:
    """One worker: claim, think, record, until ``stop`` is set. While nothing is due it
    waits until the next bot decision is (``pause_until_due``), woken sooner when one
    is opened (``pbem.wake``: a ring on SQLite, ``NOTIFY`` on PostgreSQL), and at least
    every ``BOT_POLL_SECONDS``. Its heartbeat comes from a thread of its own every
    ``BOT_BEAT_SECONDS``, thinking or not (a long thought must not make the clock believe
    the worker dead), which renews the lease of the claim held three times a lease."""
    if int(app.config["BOT_NICE"]):  # the clock and the web first
        os.nice(int(app.config["BOT_NICE"]))
    poll = float(app.config["BOT_POLL_SECONDS"])
    every = float(app.config["BOT_BEAT_SECONDS"])
    lease = float(app.config["BOT_LEASE_SECONDS"])
    tick = min(every, lease / 3)
    thinking = Thinking()

    def beat() -> None:
        beaten = time.monotonic()
        with app.app_context():
            while not stop.wait(tick):
                try:
                    thinking.renew(lease)
                    if time.monotonic() - beaten >= every - tick / 2:
                        health.beat(Process.BOTS)
                        beaten = time.monotonic()
                except Exception:  # noqa: BLE001 - the database away for a moment
                    log.exception("bots: heartbeat failed")

    waiter = wake.Waiter(get_engine(app).url, wake.BOTS, wake.BOTS_CHANNEL)
    with app.app_context(), health.running(Process.BOTS, forget_at_end=True):
        waiter.start()
        beating = threading.Thread(target=beat, name="pbem-bots-beat", daemon=True)
        beating.start()
        try:
            while not stop.is_set():
                try:
                    item = work_once(thinking=thinking)
                    pause = 0.0 if item is not None else pause_until_due(poll)
                except Exception:  # noqa: BLE001 - e.g. the database is away for a moment
                    log.exception("bots: a claim failed")
                    pause = poll
                if pause:
                    waiter.wait(stop, pause)
        finally:
            stop.set()
            waiter.close()
            beating.join(timeout=5)


def run(app: Flask, workers: int) -> int:
    """``pbem bots``: one worker in this process, or ``workers`` of them as children of
    a supervisor (each restarted if it dies). Returns the exit status."""
    if workers <= 1:
        stop = threading.Event()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: stop.set())
        log.info("bot worker running (pid %d)", os.getpid())
        work(app, stop)
        return 0
    from pbem import supervise

    argv = (sys.executable, "-m", "flask", "--app", "pbem", "pbem", "bots", "--workers", "1")
    children = [supervise.Spec(f"bots{i + 1}", argv) for i in range(workers)]
    return supervise.Supervisor(children, os.environ).run()


def workers_alive(now: datetime | None = None) -> bool:
    """Whether bot workers play the bots (the clock then leaves them alone):
    ``BOT_WORKERS`` set above 0, or a bot worker's heartbeat fresher than
    ``BOT_SILENT_SECONDS``. In the app's context."""
    from flask import current_app

    config = current_app.config
    if int(config["BOT_WORKERS"]) > 0:
        return True
    now = now or utcnow()
    since = now - timedelta(seconds=float(config["BOT_SILENT_SECONDS"]))
    with read_connection() as conn:
        return conn.execute(select(func.count()).select_from(_BEAT).where(
            _BEAT.c.kind == Process.BOTS.value, _BEAT.c.beat_at >= since)).scalar_one() > 0

