"""Health: heartbeats of the clock and inbound processes, and the facts that tell whether
the server does its work (``/healthz?deep=1``, ``/metrics``, ``pbem doctor``).

The clock writes its heartbeat after every sweep, the inbound receiver or poller when it
starts, after each message it hands over and each poll (the receiver, which waits for
mail, every ``INBOUND_BEAT_SECONDS`` too). A heartbeat is one row per process
(``Heartbeat``: kind, host name and pid), written over (an upsert), never a growing
log; rows of processes silent for ``HEARTBEAT_KEEP_DAYS`` are deleted when a process
starts and after each sweep. Several clocks may run: the freshest row counts.

``status()`` reads the facts in one read-only snapshot (it writes nothing: a GET asks
for it) and says what is wrong, by code:

- ``clock/silent``: no clock has finished a sweep for ``CLOCK_SILENT_SECONDS`` (or ever);
- ``outbox/stuck``: an email due to be sent has waited ``OUTBOX_STUCK_SECONDS`` (the
  mail loop is not running, or hangs). Emails held back on purpose (quiet hours, the
  grace of a take-back, a retry's backoff) are not due until their time;
- ``inbound/silent``: an inbound process has written a heartbeat, and none for
  ``INBOUND_SILENT_SECONDS`` (it died; one stopped by Ctrl-C or SIGTERM removes its
  row: replies by email are optional, a server that never ran inbound is not unhealthy);
- ``bots/behind``: a bot's move has been due and unclaimed for ``BOTS_BEHIND_SECONDS``
  (no bot worker runs and the clock does not play them, or the workers cannot keep up).

Only counts and ages come out: no address, token or game id.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import delete, func, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from pbem.db import background_writes, one_read, read_connection, session_scope
from pbem.kinds import OutboxStatus, Process
from pbem.models import Heartbeat, Outbox, as_utc, table_of, utcnow

log = logging.getLogger("pbem.health")
_BEAT = table_of(Heartbeat)
_OUTBOX = table_of(Outbox)
_WAITING = (OutboxStatus.PENDING, OutboxStatus.SENDING)  # not yet sent nor given up

CLOCK_SILENT = "clock/silent"
OUTBOX_STUCK = "outbox/stuck"
INBOUND_SILENT = "inbound/silent"
BOTS_BEHIND = "bots/behind"
PROBLEMS = (CLOCK_SILENT, OUTBOX_STUCK, INBOUND_SILENT, BOTS_BEHIND)


# --------------------------------------------------------------------------- heartbeats


def process_key(kind: Process) -> str:
    """This process's row: ``clock:<host>:<pid>``."""
    return f"{kind.value}:{socket.gethostname()[:200]}:{os.getpid()}"


def beat(kind: Process, *, start: bool = False, swept: float | None = None,
         message: bool = False) -> None:
    """Write this process's heartbeat: ``start`` (a new row), ``swept`` (a clock's sweep
    ended, taking that many seconds), ``message`` (inbound handed a message over). At a
    start and after a sweep, rows of processes silent for ``HEARTBEAT_KEEP_DAYS`` are
    deleted. Never raises: a
    heartbeat that cannot be written is logged (and its absence is what the health check
    sees)."""
    now = utcnow()
    values: dict[str, Any] = {"beat_at": now}
    if swept is not None:
        values |= {"swept_at": now, "sweep_seconds": swept, "sweeps": _BEAT.c.sweeps + 1}
    if message:
        values |= {"message_at": now, "messages": _BEAT.c.messages + 1}
    if start:
        values |= {"started_at": now, "swept_at": None, "sweep_seconds": None, "sweeps": 0,
                   "message_at": None, "messages": 0}
    row = {"process": process_key(kind), "kind": kind.value, "started_at": now,
           "beat_at": now, "sweeps": int(swept is not None), "messages": int(message),
           **({"swept_at": now, "sweep_seconds": swept} if swept is not None else {}),
           **({"message_at": now} if message else {})}
    try:
        with background_writes(), session_scope() as s:
            conn = s.connection()
            insert = (postgresql.insert if conn.dialect.name == "postgresql"
                      else sqlite.insert)(_BEAT).values(**row)
            conn.execute(insert.on_conflict_do_update(index_elements=["process"],
                                                      set_=values))
            if start or swept is not None:  # a tiny table: no cost worth a schedule
                days = float(current_app.config["HEARTBEAT_KEEP_DAYS"])
                conn.execute(delete(_BEAT).where(_BEAT.c.beat_at < now - timedelta(days=days)))
    except SQLAlchemyError:
        log.exception("the %s heartbeat could not be written", kind.value)


def forget(kind: Process) -> None:
    """Delete this process's heartbeat (it stops on purpose)."""
    try:
        with background_writes(), session_scope() as s:
            s.connection().execute(delete(_BEAT).where(_BEAT.c.process == process_key(kind)))
    except SQLAlchemyError:
        log.exception("the %s heartbeat could not be deleted", kind.value)


@contextlib.contextmanager
def running(kind: Process, forget_at_end: bool = False) -> Iterator[None]:
    """A heartbeat when the block starts; with ``forget_at_end`` the row is deleted when
    the block ends (Ctrl-C, SIGTERM where it raises SystemExit, a normal end; not a
    crash or a kill)."""
    beat(kind, start=True)
    try:
        yield
    finally:
        if forget_at_end:
            forget(kind)


# --------------------------------------------------------------------------- the facts


def database_answers() -> bool:
    """Whether a trivial query works (``/healthz``); writes nothing, and on SQLite takes
    no write lock (a reader's connection), so it never waits behind a writer."""
    try:
        with one_read() as conn:
            conn.execute(text("SELECT 1")).scalar()
    except SQLAlchemyError:
        log.warning("health: the database does not answer", exc_info=True)
        return False
    return True


@dataclass(frozen=True)
class Health:
    """What the server's background work looks like at ``checked_at``. Ages are seconds
    (None: never happened, or nothing waiting)."""

    checked_at: datetime
    clock_last_sweep_age: float | None  # the freshest sweep of any clock
    clock_last_beat_age: float | None  # the freshest sign of life of any clock
    clock_sweep_seconds: float | None  # how long that freshest sweep took
    clock_processes: int  # clocks with a heartbeat within CLOCK_SILENT_SECONDS
    outbox_backlog: int  # emails not yet sent nor given up (incl. those held for later)
    outbox_due: int  # of them, those whose time to be sent has come
    outbox_oldest_due_age: float | None  # how long the longest waiting due one waited
    outbox_oldest_pending_age: float | None  # the age of the oldest in the backlog
    outbox_retrying: int  # in the backlog after a failed attempt
    failed_last_hour: int  # emails whose last failed attempt was in the last hour
    replies_on: bool  # emails carry reply addresses (REPLIES): inbound should run
    inbound_processes: int  # inbound processes with a heartbeat row (alive or not)
    inbound_last_beat_age: float | None
    inbound_last_message_age: float | None  # the last message handed over, any process
    bot_workers: int  # bot workers with a heartbeat within BOT_SILENT_SECONDS
    bots_due: int  # bots' moves whose pause is over, claimed by no worker
    bots_oldest_due_age: float | None  # how long the longest waiting of them waited
    problems: tuple[str, ...]  # codes: PROBLEMS

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["checked_at"] = self.checked_at.isoformat()
        data["problems"] = list(self.problems)
        return {"ok": self.ok, **data}


def status(now: datetime | None = None) -> Health:
    """The facts, read in one snapshot (in the app's context); raises SQLAlchemyError
    when the database does not answer."""
    now = now or utcnow()
    config = current_app.config
    with read_connection() as conn:
        clocks = _beats(conn, Process.CLOCK)
        inbound = _beats(conn, Process.INBOUND)
        workers = _beats(conn, Process.BOTS)
        backlog = _outbox(conn, now)
        bots_due, bots_oldest = _bots_due(conn, now)
        failed = conn.execute(select(func.count()).select_from(_OUTBOX).where(
            _OUTBOX.c.failed_at >= now - timedelta(hours=1))).scalar_one()
    silent = float(config["CLOCK_SILENT_SECONDS"])
    swept = [r for r in clocks if r.swept_at is not None]
    last_sweep = max(swept, key=lambda r: as_utc(r.swept_at), default=None)
    facts = {
        "clock_last_sweep_age": _age(now, last_sweep.swept_at if last_sweep else None),
        "clock_last_beat_age": _age(now, max((r.beat_at for r in clocks), default=None)),
        "clock_sweep_seconds": (round(last_sweep.sweep_seconds, 4)
                                if last_sweep and last_sweep.sweep_seconds is not None
                                else None),
        "clock_processes": sum(1 for r in clocks if (_age(now, r.beat_at) or 0) <= silent),
        **backlog, "failed_last_hour": failed,
        "replies_on": bool(config["REPLIES"]),
        "inbound_processes": len(inbound),
        "inbound_last_beat_age": _age(now, max((r.beat_at for r in inbound), default=None)),
        "inbound_last_message_age": _age(now, max(
            (r.message_at for r in inbound if r.message_at is not None), default=None)),
        "bot_workers": sum(1 for r in workers if (_age(now, r.beat_at) or 0)
                           <= float(config["BOT_SILENT_SECONDS"])),
        "bots_due": bots_due, "bots_oldest_due_age": _age(now, bots_oldest),
    }
    return Health(checked_at=now, problems=_problems(facts, config), **facts)


def _beats(conn: Any, kind: Process) -> list[Any]:
    return list(conn.execute(select(_BEAT.c.beat_at, _BEAT.c.swept_at,
                                    _BEAT.c.sweep_seconds, _BEAT.c.message_at)
                             .where(_BEAT.c.kind == kind.value)))


def _outbox(conn: Any, now: datetime) -> dict[str, Any]:
    waiting = _OUTBOX.c.status.in_([s.value for s in _WAITING])
    due = _OUTBOX.c.next_attempt_at <= now
    row = conn.execute(select(
        func.count(), func.count().filter(due), func.min(_OUTBOX.c.created_at),
        func.min(_OUTBOX.c.next_attempt_at).filter(due),
        func.count().filter(_OUTBOX.c.status == OutboxStatus.PENDING.value,
                            _OUTBOX.c.failed_at.is_not(None))).where(waiting)).one()
    return {"outbox_backlog": row[0], "outbox_due": row[1],
            "outbox_oldest_pending_age": _age(now, row[2]),
            "outbox_oldest_due_age": _age(now, row[3]), "outbox_retrying": row[4]}


def _bots_due(conn: Any, now: datetime) -> tuple[int, datetime | None]:
    """Open decisions of bots in running games, due and claimed by nobody (what a bot
    worker may claim: ``bots.claimable``): how many, and the earliest due time."""
    from pbem.bots import claimable
    from pbem.models import Decision, Game, Seat

    decision, game, seat = table_of(Decision), table_of(Game), table_of(Seat)
    row = conn.execute(
        select(func.count(), func.min(decision.c.deadline_at))
        .join(game, game.c.id == decision.c.game_id)
        .join(seat, seat.c.id == decision.c.seat_id)
        .where(claimable(now))).one()
    return int(row[0]), row[1]


def _age(now: datetime, when: datetime | None) -> float | None:
    if when is None:
        return None
    return round(max(0.0, (now - as_utc(when)).total_seconds()), 3)


def _problems(facts: dict[str, Any], config: Any) -> tuple[str, ...]:
    found = []
    sweep_age = facts["clock_last_sweep_age"]
    if sweep_age is None or sweep_age > float(config["CLOCK_SILENT_SECONDS"]):
        found.append(CLOCK_SILENT)
    due_age = facts["outbox_oldest_due_age"]
    if due_age is not None and due_age > float(config["OUTBOX_STUCK_SECONDS"]):
        found.append(OUTBOX_STUCK)
    beat_age = facts["inbound_last_beat_age"]
    if beat_age is not None and beat_age > float(config["INBOUND_SILENT_SECONDS"]):
        found.append(INBOUND_SILENT)
    bots_age = facts["bots_oldest_due_age"]
    if bots_age is not None and bots_age > float(config["BOTS_BEHIND_SECONDS"]):
        found.append(BOTS_BEHIND)
    return tuple(found)
