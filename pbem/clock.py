"""The clock process: deadlines swept by an APScheduler interval job, and mail delivered
by a loop of its own.

The database holds every deadline, reminder and undelivered email, so the clock keeps no
state. Each sweep (every ``CLOCK_INTERVAL`` seconds) queues due reminders (once each),
plays the default action of every expired decision (through the same service as a
player's click), plays the bots' moves whose pause is over (a bot seated at creation or
standing in for a player: no web request plays one), and deletes the games made on the
web that their host has not confirmed in a few days. The mail loop delivers the outbox
as soon as something is queued: web requests never talk to the mail server, so a slow or
hung one slows no page; on PostgreSQL a NOTIFY from the queueing transaction wakes the
loop at once; on SQLite the queueing process rings it after its commit by a datagram to
the loop's socket in the database's wake folder (``pbem.wake``), and it polls every
``MAIL_POLL_INTERVAL`` seconds only as a fallback. A hung mail server stalls only this
loop, never the deadlines.
Sweeps are guarded so that a second clock does no harm: an exclusive file lock on SQLite,
a PostgreSQL advisory lock otherwise; and each step re-checks its decision inside its own
locked transaction, so even an unguarded race plays every expired decision exactly once.
A deadline that passed while no clock ran is simply due at the next sweep. After each
sweep (or each skipped because another clock sweeps) the clock writes its heartbeat
(``pbem.health``), which the deep health check reads.

The due decisions are played in short transactions of a few at a time
(``services.time_out_due``: up to BATCH_SIZE decisions and BATCH_SECONDS each; a failure
in one costs only that one), and a sweep goes on while it finds more due. Players do not
wait behind the clock: on PostgreSQL it locks only the games it plays; on SQLite, whose
write lock is the whole database's, every transaction of the sweeps and of the mail loop
first gives way to players' writes (``pbem.db.background_writes``).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from apscheduler.schedulers.blocking import BlockingScheduler
from flask import Flask
from sqlalchemy import text

from engine.search import DEFAULT_BUDGET_MS
from pbem import bots, health, mail, services, wake
from pbem.channels.delivery import start_notice_thread
from pbem.db import background_writes, get_engine, is_postgres
from pbem.kinds import Process
from pbem.models import utcnow
from pbem.services.allowance import utc_day

if TYPE_CHECKING:

    from pbem.services.deadlines import Due, StepResult

log = logging.getLogger("pbem.clock")
ADVISORY_KEY = 0x70_62_65_6D  # "pbem"
DUE_PAGE = 500  # due decisions asked for at a time (again while pages come full)
Item = TypeVar("Item", int, str)  # what ``_guarded`` runs a step for: a decision, a game


@contextlib.contextmanager
def sweep_guard(app: Flask) -> Iterator[bool]:
    """Yield True if this process may sweep now (nobody else is sweeping)."""
    if is_postgres(app):
        with get_engine(app).connect() as conn:
            got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"),
                               {"k": ADVISORY_KEY}).scalar()
            conn.commit()  # the lock is the session's: no transaction stays open meanwhile
            try:
                yield bool(got)
            finally:
                if got:
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": ADVISORY_KEY})
                conn.commit()
        return
    path = _lock_path(app)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _lock_path(app: Flask) -> Path:
    """One lock per database: next to the SQLite file (else in the instance folder)."""
    url = app.config["DATABASE_URL"]
    if url.startswith("sqlite:///") and ":memory:" not in url:
        return Path(url.removeprefix("sqlite:///") + ".clock.lock")
    return Path(app.instance_path) / "clock.lock"


def sweep(app: Flask, now: datetime | None = None) -> dict[str, int]:
    """One idempotent pass over what is due; returns what it did.

    A failure on one decision is logged and does not stop the others or the mail."""
    counts = {"reminders": 0, "timeouts": 0, "bots": 0, "expired": 0, "busy": 0,
              "errors": 0}
    started = time.monotonic()
    with app.app_context(), background_writes(), sweep_guard(app) as mine:
        if mine:
            now = now or utcnow()
            _play_due(services.due_reminders, services.remind_due, now, counts, "reminders")
            _play_due(services.due_timeouts, services.time_out_due, now, counts, "timeouts")
            _play_bots(app, now, counts)
            for game_id in services.expired_unconfirmed(now):
                counts["expired"] += _guarded(services.expire_unconfirmed, game_id, now,
                                              counts)
            try:  # the daily digests whose hour has come
                digests = services.queue_digests(now)
            except Exception:  # noqa: BLE001 - logged; the next sweep tries again
                log.exception("sweep: the digests failed")
                counts["errors"] += 1
            else:
                if digests:
                    counts["digests"] = digests
            _forget_old_bot_usage(app, now, counts)
        else:
            counts["busy"] = 1
    with app.app_context():  # alive; and it swept, unless another clock did
        health.beat(Process.CLOCK,
                    swept=None if counts["busy"] else time.monotonic() - started)
    if counts["busy"]:
        log.warning("sweep skipped: another clock holds the lock")
    elif any(counts.values()):
        log.info("sweep: %s", counts)
    return counts


def _play_due(find: Callable[[datetime, int], list[Due]],
              play: Callable[[list[Due], datetime], list[tuple[Due, StepResult]]],
              now: datetime, counts: dict[str, int], key: str) -> None:
    """Play what ``find`` finds due (``DUE_PAGE`` at a time), in batches (``play``), and
    look again while pages come full: a thousand due timeouts take one sweep, not one
    sweep per page ``CLOCK_INTERVAL`` apart. A decision is tried once per sweep; one that
    failed is logged, counted and found due again at the next sweep."""
    tried: set[int] = set()
    while True:
        page = find(now, DUE_PAGE)
        due = [d for d in page if d.decision_id not in tried]
        if not due:
            return
        tried.update(d.decision_id for d in due)
        for item, outcome in play(due, now):
            if isinstance(outcome, Exception):
                log.error("sweep: %s failed for decision %s", play.__name__,
                          item.decision_id, exc_info=outcome)
                counts["errors"] += 1
            else:
                counts[key] += bool(outcome)
        if len(page) < DUE_PAGE:
            return


def _play_bots(app: Flask, now: datetime, counts: dict[str, int]) -> None:
    """The bots' due moves, only while no bot worker is alive (``pbem.bots``; else the
    workers play them): claimed as a worker claims them (so that a worker that starts
    meanwhile thinks about none of them too), each tried once a sweep, and for at most
    ``CLOCK_BOT_SECONDS`` a sweep (after the move under way), so that the sweeps after
    keep people's deadlines however many strong bots are due; strong bots think at most
    the default budget here (``engine.search.DEFAULT_BUDGET_MS``: the host's longer
    choice is for workers, which do not hold up the clock); and none in the clock's
    first ``CLOCK_BOT_GRACE_SECONDS`` (workers started with it are not up yet)."""
    started = app.extensions.get("pbem.clock_started")
    if started is not None and time.monotonic() - started < float(
            app.config["CLOCK_BOT_GRACE_SECONDS"]):
        return  # just started: bot workers started beside it get the time to say so
    until = time.monotonic() + float(app.config["CLOCK_BOT_SECONDS"])
    tried: set[int] = set()
    while time.monotonic() < until and not bots.workers_alive(now):
        item = bots.claim(now)
        if item is None:
            return
        if item.decision_id in tried:  # played (or not any more due) this sweep
            bots.release(item.decision_id)
            return
        tried.add(item.decision_id)
        try:
            counts["bots"] += services.play_bot(item.decision_id, now, item.game_id,
                                                cap_ms=DEFAULT_BUDGET_MS)
        except Exception:  # noqa: BLE001 - logged; the claim runs out, then tried again
            log.exception("sweep: play_bot failed for decision %s", item.decision_id)
            counts["errors"] += 1
            continue
        bots.release(item.decision_id)


_USAGE_FORGOTTEN = "pbem.bot_usage_forgotten"  # app.extensions: the UTC day last done


def _forget_old_bot_usage(app: Flask, now: datetime, counts: dict[str, int]) -> None:
    """The bots' CPU of days before yesterday deleted (``services.forget_old_usage``),
    once a UTC day per clock process: no older day is charged after that (a charge is
    for the day of its move), so the sweeps in between have nothing to ask."""
    day = utc_day(now)
    if app.extensions.get(_USAGE_FORGOTTEN) == day:
        return
    try:
        services.forget_old_usage(now)
    except Exception:  # noqa: BLE001 - logged; the next sweep tries again
        log.exception("sweep: the bots' old CPU usage could not be deleted")
        counts["errors"] += 1
        return
    app.extensions[_USAGE_FORGOTTEN] = day


def _guarded(step: Callable[[Item, datetime], bool], item: Item, now: datetime,
             counts: dict[str, int]) -> bool:
    """Run one step for one decision (or game); a bug or bad row there must not stop
    the clock."""
    try:
        return step(item, now)
    except Exception:  # noqa: BLE001 - logged with its traceback, then the sweep goes on
        log.exception("sweep: %s failed for %s", step.__name__, item)
        counts["errors"] += 1
        return False


# --------------------------------------------------------------------------- mail


def mail_loop(app: Flask, stop: threading.Event, batch: int = 100,
              waiting: threading.Event | None = None) -> None:
    """Deliver the outbox until ``stop`` is set: at once when woken, again at once while
    full batches keep coming, and after a failure no sooner than the next wake-up.
    ``waiting`` is set each time the loop goes to sleep until woken (tests wait on it)."""
    # woken by a PostgreSQL NOTIFY; on SQLite by a ring on the database's wake folder
    # (``pbem.wake``) or ``MAIL_QUEUED`` (a database without a folder); else the poll
    wakeup = wake.Waiter(get_engine(app).url, wake.MAIL, services.OUTBOX_CHANNEL,
                         event=services.MAIL_QUEUED)
    poll = float(app.config["MAIL_POLL_INTERVAL"])
    if is_postgres(app):  # NOTIFY is transactional: the poll is only for a lost one
        poll = max(poll, 5.0)
    try:
        wakeup.start()
        with app.app_context(), background_writes():
            while not stop.is_set():
                try:
                    counts = mail.deliver_due(limit=batch)
                except Exception:  # noqa: BLE001 - e.g. the database is away for a moment
                    log.exception("mail loop: delivery pass failed")
                    counts = {}
                if any(counts.values()):
                    log.info("mail: %s", counts)
                if sum(counts.values()) < batch:
                    if waiting is not None:
                        waiting.set()
                    wakeup.wait(stop, poll)
    finally:
        wakeup.close()


def start_mail_thread(app: Flask, waiting: threading.Event | None = None
                      ) -> tuple[threading.Thread, threading.Event]:
    """The mail loop in a daemon thread; set the returned event to stop it (``waiting``:
    see ``mail_loop``)."""
    stop = threading.Event()
    thread = threading.Thread(target=mail_loop, args=(app, stop, 100, waiting),
                              name="pbem-mail", daemon=True)
    thread.start()
    return thread, stop


def run(app: Flask) -> None:
    """Run the mail loop and the deadline sweeps until Ctrl-C (or SIGTERM)."""
    interval = float(app.config["CLOCK_INTERVAL"])
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, exit_on_sigterm)  # stop cleanly under a supervisor
    with app.app_context():
        health.beat(Process.CLOCK, start=True)
    app.extensions["pbem.clock_started"] = time.monotonic()
    thread, stop = start_mail_thread(app)
    notices, notices_stop = start_notice_thread(app)
    scheduler = BlockingScheduler()
    scheduler.add_job(sweep, "interval", seconds=interval, args=[app], id="sweep",
                      max_instances=1, coalesce=True, misfire_grace_time=None)
    sweep(app)  # at once: whatever fell due while no clock ran
    log.info("clock running: deadlines every %.1f s, mail as soon as it is queued, "
             "other notices within a second", interval)
    try:
        with contextlib.suppress(KeyboardInterrupt, SystemExit):
            scheduler.start()
    finally:
        stop.set()
        notices_stop.set()
        thread.join(timeout=float(app.config.get("SMTP_TIMEOUT", 10)) + 5)
        notices.join(timeout=15)
        # the grace for bot workers belongs to this run, not to the app (a test's app is
        # handed to the next test; its sweeps must play bots at once)
        app.extensions.pop("pbem.clock_started", None)


def exit_on_sigterm(*_args: object) -> None:
    """A SIGTERM handler: stop as Ctrl-C would (``finally`` blocks run)."""
    raise SystemExit(0)
