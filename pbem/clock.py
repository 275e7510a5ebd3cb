"""The clock process: one in-memory APScheduler interval job that sweeps the database.

The database holds every deadline and every undelivered email, so the clock keeps no
state: each sweep looks for what is due. (Deadlines and reminders arrive with issue 4;
today a sweep delivers due mail.)
"""

from __future__ import annotations

import contextlib
import logging

from apscheduler.schedulers.blocking import BlockingScheduler
from flask import Flask

from pbem import mail

log = logging.getLogger("pbem.clock")


def sweep(app: Flask) -> dict[str, int]:
    """One idempotent pass over what is due."""
    with app.app_context():
        counts = mail.deliver_due(limit=500)
    if any(counts.values()):
        log.info("sweep: %s", counts)
    return counts


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
