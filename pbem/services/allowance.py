"""The bots' CPU allowance: the CPU time a game's bots spent thinking today (UTC), per
game and per host (the address of the game's host seat), against the day's allowance of
each (``BOT_CPU_GAME_SECONDS``, ``BOT_CPU_HOST_SECONDS``). Beyond either, a strong bot
thinks at the default budget (``engine.search.DEFAULT_BUDGET_MS``, or the host's own
choice when it is less) until the next UTC day; within both, the host's choice stands.

The CPU is counted where the bots think (``deadlines.play_bot``: the thread CPU time
around the choice, whether or not its move could be recorded) into one ``BotUsage`` row
per game and day (an upsert); the clock deletes the rows of days before yesterday."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, cast

from flask import current_app
from sqlalchemy import Executable, bindparam, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from engine.search import DEFAULT_BUDGET_MS
from pbem.db import background_writes, one_read, session_scope
from pbem.models import BotUsage, Seat, table_of

_USAGE = table_of(BotUsage)
_SEAT = table_of(Seat)
log = logging.getLogger("pbem.bots")


@dataclass(frozen=True, slots=True)
class BotCpu:
    """The CPU a game's bots used today (UTC) in seconds, its host's in all their games,
    and the day's allowance of each; ``over``: either is spent, so strong bots think at
    the default budget (``capped_ms``) until 00:00 UTC."""

    game_seconds: float
    host_seconds: float
    game_allowance: float
    host_allowance: float
    capped_ms: float

    @property
    def over(self) -> bool:
        """Whether the game or its host has spent the day's allowance."""
        return (self.game_seconds >= self.game_allowance
                or self.host_seconds >= self.host_allowance)

    def budget(self, chosen_ms: float) -> float:
        """The budget a strong bot of the host's choice ``chosen_ms`` thinks at now."""
        return min(chosen_ms, self.capped_ms) if self.over else chosen_ms


def utc_day(now: datetime) -> date:
    """The UTC day of ``now`` (an aware time): the allowance's day."""
    return now.astimezone(UTC).date()


_GAME_DAY = select(_USAGE.c.cpu_seconds).where(_USAGE.c.day == bindparam("day"),
                                               _USAGE.c.game_id == bindparam("game_id"))
_OLD_DAY = select(_USAGE.c.day).where(_USAGE.c.day < bindparam("cutoff")).limit(1)
_HOST_DAY = select(func.sum(_USAGE.c.cpu_seconds)).where(_USAGE.c.day == bindparam("day"),
                                                         _USAGE.c.host == bindparam("host"))


def host_address(email: str | None) -> str:
    """The host's address as its usage is kept: lower case; "" for a game with no host
    seat."""
    return str(email or "").lower()


def bot_cpu(conn: Connection, game_id: str, host: str, now: datetime) -> BotCpu:
    """What the game ``game_id`` of ``host`` used of today's allowance (two indexed
    reads)."""
    day = utc_day(now)
    game_s = conn.execute(_GAME_DAY, {"day": day, "game_id": game_id}).scalar()
    host_s = conn.execute(_HOST_DAY, {"day": day, "host": host.lower()}).scalar()
    config = current_app.config
    return BotCpu(float(game_s or 0.0), float(host_s or 0.0),
                  float(config["BOT_CPU_GAME_SECONDS"]), float(config["BOT_CPU_HOST_SECONDS"]),
                  DEFAULT_BUDGET_MS)


def budget_ms(conn: Connection, game_id: str, host: str, chosen_ms: float,
              now: datetime) -> float:
    """The budget a strong bot of the game thinks at now: the host's choice
    ``chosen_ms``, or at most the default budget once the game or its host is over the
    day's allowance."""
    if chosen_ms <= DEFAULT_BUDGET_MS:
        return chosen_ms  # nothing to cap: no need to read the day's usage
    return bot_cpu(conn, game_id, host, now).budget(chosen_ms)


def _upsert(dialect: Any) -> Executable:
    """The charge of one decision, an upsert of ``dialect`` (built once for each)."""
    stmt = dialect.insert(_USAGE).values(
        day=bindparam("day"), game_id=bindparam("game_id"), host=bindparam("host"),
        cpu_seconds=bindparam("cpu_seconds"), decisions=1)
    return cast(Executable, stmt.on_conflict_do_update(
        index_elements=["day", "game_id"],
        set_={"cpu_seconds": _USAGE.c.cpu_seconds + stmt.excluded.cpu_seconds,
              "decisions": _USAGE.c.decisions + 1, "host": stmt.excluded.host}))


_CHARGE = {"postgresql": _upsert(postgresql), "sqlite": _upsert(sqlite)}


def charge(conn: Connection, game_id: str, host: str, seconds: float,
           now: datetime) -> None:
    """Add one bot decision of ``seconds`` of CPU to the game's row of the day (an
    upsert)."""
    conn.execute(_CHARGE[conn.dialect.name], {"day": utc_day(now), "game_id": game_id,
                                              "host": host.lower(), "cpu_seconds": seconds})


def charge_alone(game_id: str, host: str, seconds: float, now: datetime) -> None:
    """``charge`` in a transaction of its own (the move's failed: the CPU was spent);
    a failure here is logged, not raised (the move's own is the one to tell)."""
    try:
        with background_writes(), session_scope() as s:
            charge(s.connection(), game_id, host, seconds, now)
    except SQLAlchemyError:
        log.exception("the bots' CPU of game %s could not be recorded", game_id)


def forget_old_usage(now: datetime) -> int:
    """Delete the rows of days before yesterday; how many were deleted. The clock asks
    at every sweep: an indexed read that finds nothing on all but one sweep a day, and
    takes no write lock then."""
    cutoff = utc_day(now) - timedelta(days=1)
    with one_read() as conn:
        if conn.execute(_OLD_DAY, {"cutoff": cutoff}).first() is None:
            return 0
    with background_writes(), session_scope() as s:
        done = s.connection().execute(delete(_USAGE).where(_USAGE.c.day < cutoff))
        return int(done.rowcount or 0)
