"""The clock process: one in-memory APScheduler interval job that sweeps the database.

The database holds every deadline, reminder and undelivered email, so the clock keeps no
state: each sweep sends due reminders (once each), plays the default action of every
expired decision (through the same service as a player's click), and delivers due mail.
Sweeps are guarded so that a second clock does no harm: an exclusive file lock on SQLite,
a PostgreSQL advisory lock otherwise; and each step re-checks its decision inside its own
locked transaction, so even an unguarded race plays every expired decision exactly once.
A deadline that passed while no clock ran is simply due at the next sweep.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from apscheduler.schedulers.blocking import BlockingScheduler
from flask import Flask
from sqlalchemy import text

from pbem import mail, services
from pbem.db import get_engine, is_postgres
from pbem.models import utcnow

log = logging.getLogger("pbem.clock")
ADVISORY_KEY = 0x70_62_65_6D  # "pbem"


@contextlib.contextmanager
def sweep_guard(app: Flask) -> Iterator[bool]:
    """Yield True if this process may sweep now (nobody else is sweeping)."""
    if is_postgres(app):
        with get_engine(app).connect() as conn:
            got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"),
                               {"k": ADVISORY_KEY}).scalar()
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
    counts = {"reminders": 0, "timeouts": 0, "sent": 0, "failed": 0, "skipped": 0,
              "busy": 0, "errors": 0}
    with app.app_context(), sweep_guard(app) as mine:
        if mine:
            now = now or utcnow()
            for decision_id in services.due_reminders(now):
                counts["reminders"] += _guarded(services.send_reminder, decision_id, now,
                                                counts)
            for decision_id in services.due_timeouts(now):
                counts["timeouts"] += _guarded(services.time_out, decision_id, now, counts)
            delivered = mail.deliver_due(limit=500)
            for key in ("sent", "failed", "skipped"):
                counts[key] = delivered[key]
        else:
            counts["busy"] = 1
    if counts["busy"]:
        log.warning("sweep skipped: another clock holds the lock")
    elif any(counts.values()):
        log.info("sweep: %s", counts)
    return counts


def _guarded(step, decision_id: int, now: datetime, counts: dict[str, int]) -> bool:
    """Run one step for one decision; a bug or bad row there must not stop the clock."""
    try:
        return step(decision_id, now)
    except Exception:  # noqa: BLE001 - logged with its traceback, then the sweep goes on
        log.exception("sweep: %s failed for decision %s", step.__name__, decision_id)
        counts["errors"] += 1
        return False


def run(app: Flask) -> None:
    """Run sweeps forever every ``CLOCK_INTERVAL`` seconds (Ctrl-C stops)."""
    interval = float(app.config["CLOCK_INTERVAL"])
    scheduler = BlockingScheduler()
    scheduler.add_job(sweep, "interval", seconds=interval, args=[app], id="sweep",
                      max_instances=1, coalesce=True, misfire_grace_time=None)
    sweep(app)  # at once: whatever fell due while no clock ran
    log.info("clock running, sweeping every %.1f s", interval)
    with contextlib.suppress(KeyboardInterrupt, SystemExit):
        scheduler.start()
