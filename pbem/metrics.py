"""``/metrics``: the server's numbers in the Prometheus text format (prometheus-client).

Every number but one is read from the database when Prometheus asks (a collector run once
per scrape), not counted in the web process that answers: so they are the same whichever
gunicorn worker (or machine) answers, and survive restarts. The clock's sweep time is the
one its heartbeat row keeps (the last sweep's, not a histogram). Counts that only grow
are counters (moves); counts of rows in a state, which go up and down, are gauges.

The one exception is the time a move takes to confirm (``pbem_confirm_seconds``, the POST
of a one-click link's confirmation page or of a game page's form, from the request's
start to its answer), which only the web process that answers sees: a histogram in that
process, summed over gunicorn's workers when ``PROMETHEUS_MULTIPROC_DIR`` names an empty
directory writable by them (prometheus-client's multiprocess mode); without it, each
worker answers with its own requests only.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Iterator
from enum import StrEnum
from typing import Any

from flask import current_app, g, request
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from pbem import health
from pbem.db import read_connection
from pbem.kinds import GameStatus, Inbound, MoveSource, OutboxStatus
from pbem.models import Game, InboundMessage, Move, Outbox, table_of
from pbem.services.bounces import BOUNCED

_MOVE, _GAME, _OUTBOX = table_of(Move), table_of(Game), table_of(Outbox)
_INBOUND = table_of(InboundMessage)


# The endpoints whose POST confirms a move, and the label of each.
CONFIRMS = {"play.one_click": "link", "play.game_act": "page"}
_CONFIRM_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_HISTOGRAM = "pbem.confirm_seconds"  # app.extensions


def confirm_started() -> None:
    """Before each request (``pbem.web.health``): note when a confirming POST began."""
    if (request.method == "POST" and request.endpoint in CONFIRMS
            and current_app.config["METRICS"]):
        g.pbem_confirm_started = time.perf_counter()


def confirm_ended(response: Any) -> Any:
    """After each request: a confirming POST's time into the histogram."""
    started = g.pop("pbem_confirm_started", None)
    if started is not None:
        confirm_seconds().labels(CONFIRMS[str(request.endpoint)]).observe(
            time.perf_counter() - started)
    return response


def confirm_seconds() -> Histogram:
    """This app's histogram of confirm times (made on first use; kept in no registry but
    the one a scrape builds)."""
    found = current_app.extensions.get(_HISTOGRAM)
    if found is None:
        found = current_app.extensions[_HISTOGRAM] = Histogram(
            "pbem_confirm_seconds", "Seconds from a move's confirming POST to its answer.",
            ["via"], registry=None, buckets=_CONFIRM_BUCKETS)
    return found


def exposition(accept: str = "") -> tuple[bytes, str]:
    """The metrics now (in the app's context), in the format the scraper's ``Accept``
    header asks for (the text format 0.0.4 by default, or OpenMetrics), and its content
    type."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector())
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # every worker's confirms, summed
        from prometheus_client.multiprocess import MultiProcessCollector

        MultiProcessCollector(registry)
    else:
        registry.register(confirm_seconds())
    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type


class DatabaseCollector(Collector):
    """Reads every number afresh from the database at each scrape."""

    def collect(self) -> Iterator[Metric]:
        with read_connection() as conn:
            moves = _by(conn, _MOVE.c.source)
            games = _by(conn, _GAME.c.status)
            emails = _by(conn, _OUTBOX.c.status)
            replies = _by(conn, _INBOUND.c.outcome)
            bounced = conn.execute(select(func.count()).select_from(_OUTBOX).where(
                _OUTBOX.c.status == OutboxStatus.UNDELIVERABLE.value,
                _OUTBOX.c.last_error.startswith(BOUNCED))).scalar_one()
        facts = health.status()
        yield _family(CounterMetricFamily, "pbem_moves", "Moves recorded, by who made them.",
                      "source", MoveSource, moves)
        yield _family(GaugeMetricFamily, "pbem_games", "Games, by status.", "status",
                      GameStatus, games)
        yield _family(GaugeMetricFamily, "pbem_emails",
                      "Emails in the outbox, by status (sent, undeliverable: failed for "
                      "good, pending: waiting, ...).", "status", OutboxStatus, emails)
        yield GaugeMetricFamily("pbem_emails_bounced",
                                "Emails marked undeliverable by a bounce.", value=bounced)
        yield GaugeMetricFamily("pbem_emails_failed_last_hour",
                                "Emails whose last failed attempt was in the last hour.",
                                value=facts.failed_last_hour)
        yield GaugeMetricFamily("pbem_emails_retrying",
                                "Emails waiting for another attempt after a failure.",
                                value=facts.outbox_retrying)
        yield GaugeMetricFamily("pbem_outbox_due",
                                "Emails whose time to be sent has come.",
                                value=facts.outbox_due)
        yield _gauge("pbem_outbox_oldest_due_age_seconds",
                     "How long the longest waiting due email has waited (NaN: none).",
                     facts.outbox_oldest_due_age)
        yield _family(GaugeMetricFamily, "pbem_replies",
                      "Messages the inbound receiver or poller handed over, by outcome.",
                      "outcome", Inbound, replies)
        yield _gauge("pbem_clock_last_sweep_age_seconds",
                     "Seconds since a clock last finished a sweep (NaN: never).",
                     facts.clock_last_sweep_age)
        yield _gauge("pbem_clock_sweep_duration_seconds",
                     "How long that last sweep took (NaN: never).",
                     facts.clock_sweep_seconds)
        yield GaugeMetricFamily("pbem_clock_processes",
                                "Clock processes with a fresh heartbeat.",
                                value=facts.clock_processes)
        yield _gauge("pbem_inbound_last_beat_age_seconds",
                     "Seconds since an inbound process last wrote its heartbeat "
                     "(NaN: none runs).", facts.inbound_last_beat_age)
        yield _gauge("pbem_inbound_last_message_age_seconds",
                     "Seconds since inbound last handed a message over (NaN: never).",
                     facts.inbound_last_message_age)
        yield GaugeMetricFamily("pbem_bot_workers",
                                "Bot workers with a fresh heartbeat.",
                                value=facts.bot_workers)
        yield GaugeMetricFamily("pbem_bots_due",
                                "Bots' moves whose pause is over, claimed by no worker.",
                                value=facts.bots_due)
        yield _gauge("pbem_bots_oldest_due_age_seconds",
                     "How long the longest waiting due bot's move has waited (NaN: none).",
                     facts.bots_oldest_due_age)
        problems = GaugeMetricFamily("pbem_health_problem",
                                     "1 for each problem the deep health check reports.",
                                     labels=["problem"])
        for code in health.PROBLEMS:
            problems.add_metric([code], float(code in facts.problems))
        yield problems


def _by(conn: Any, column: Any) -> dict[str, int]:
    return {str(key): count for key, count in conn.execute(
        select(column, func.count()).group_by(column))}


def _family(kind: type[CounterMetricFamily | GaugeMetricFamily], name: str, doc: str,
            label: str, members: Iterable[StrEnum],
            counts: dict[str, int]) -> Metric:
    """One sample per member of ``members`` (0 when there is none), and any other value
    found in the column (an old or damaged row) as it is."""
    family = kind(name, doc, labels=[label])
    for value in sorted({m.value for m in members} | set(counts)):
        family.add_metric([value], counts.get(value, 0))
    return family


def _gauge(name: str, doc: str, value: float | None) -> Metric:
    return GaugeMetricFamily(name, doc, value=math.nan if value is None else value)
