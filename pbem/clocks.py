"""A player's clock that may stop: during their quiet hours and at weekends, in their own
time zone, when the host chose so (``GamePolicy.pause_quiet``, ``pause_weekends``).

Pure time arithmetic, no database: ``advance`` is the time at which a clock started at
``start`` has run ``seconds``; ``running_between`` how long it ran between two times;
``running_spans`` when it runs between them (for a page whose clock runs on its own).
Both walk from boundary to boundary (local midnight, the start and the end of the quiet
hours) in the player's zone, so that a change to or from summer time moves the stops
with the local clock: quiet hours from 22:00 stay from 22:00 by the wall clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo

WEEKEND = (5, 6)  # Saturday, Sunday (date.weekday())
MAX_STEPS = 100_000  # boundaries walked at most (a clock that never runs is a bug)


@dataclass(frozen=True)
class Stops:
    """When a player's clock stands still: ``quiet`` (from, to) local whole hours, over
    midnight when ``to`` is the smaller (None: no quiet hours), and ``weekends``."""

    zone: tzinfo
    quiet: tuple[int, int] | None = None
    weekends: bool = False

    @property
    def never(self) -> bool:
        return not self.weekends and (self.quiet is None or self.quiet[0] == self.quiet[1])

    def stopped(self, when: datetime) -> bool:
        """Whether the clock stands still at ``when``."""
        local = when.astimezone(self.zone)
        if self.weekends and local.weekday() in WEEKEND:
            return True
        if self.quiet is None:
            return False
        start, end = self.quiet
        hour = local.hour
        return start <= hour < end if start < end else start != end and (
            hour >= start or hour < end)

    def next_boundary(self, when: datetime) -> datetime:
        """The first local midnight or quiet-hours edge after ``when``."""
        local = when.astimezone(self.zone)
        hours = {0}
        if self.quiet is not None:
            hours |= set(self.quiet)
        candidates = []
        for offset in (0, 1, 2):
            day = local.date() + timedelta(days=offset)
            for hour in hours:
                at = _local(day, hour, self.zone)
                if at > when:
                    candidates.append(at)
        return min(candidates)


def quiet_span(stops: Stops, when: datetime) -> tuple[datetime, datetime] | None:
    """The quiet hours ``when`` falls in, as (start, end); None outside them."""
    if stops.quiet is None or stops.quiet[0] == stops.quiet[1]:
        return None
    quiet_only = Stops(stops.zone, stops.quiet)
    if not quiet_only.stopped(when):
        return None
    start_hour, end_hour = stops.quiet
    day = when.astimezone(stops.zone).date()
    starts = [at for at in (_local(day - timedelta(days=d), start_hour, stops.zone)
                            for d in (0, 1)) if at <= when]
    ends = [at for at in (_local(day + timedelta(days=d), end_hour, stops.zone)
                          for d in (0, 1)) if at > when]
    return max(starts), min(ends)


def _local(day: date, hour: int, zone: tzinfo) -> datetime:
    """``hour`` o'clock on ``day`` in ``zone``, as an aware time (a wall time a change to
    summer time skips is read as the zone's rules read it: the same instant as an hour
    later)."""
    return datetime(day.year, day.month, day.day, hour, tzinfo=zone)


def advance(start: datetime, seconds: float, stops: Stops) -> datetime:
    """When a clock started at ``start`` has run ``seconds``, standing still at ``stops``."""
    if stops.never:
        return start + timedelta(seconds=seconds)
    now, left = start, max(0.0, seconds)
    for _ in range(MAX_STEPS):
        edge = stops.next_boundary(now)
        if stops.stopped(now):
            now = edge
            continue
        span = (edge - now).total_seconds()
        if span >= left:
            return now + timedelta(seconds=left)
        left -= span
        now = edge
    raise RuntimeError(f"a clock from {start} never ran {seconds} s")


def running_between(start: datetime, end: datetime, stops: Stops) -> float:
    """How many seconds a clock ran from ``start`` to ``end`` (0 if ``end`` is earlier)."""
    if end <= start:
        return 0.0
    if stops.never:
        return (end - start).total_seconds()
    now, ran = start, 0.0
    for _ in range(MAX_STEPS):
        if now >= end:
            return ran
        edge = min(stops.next_boundary(now), end)
        if not stops.stopped(now):
            ran += (edge - now).total_seconds()
        now = edge
    raise RuntimeError(f"a clock from {start} to {end} took too many steps")


def running_spans(start: datetime, end: datetime, stops: Stops,
                  limit: int = 64) -> list[tuple[datetime, datetime]]:
    """The spans from ``start`` to ``end`` in which a clock runs, in order, those that
    touch merged (at most ``limit``: the first ones); [] if ``end`` is not later."""
    if end <= start:
        return []
    if stops.never:
        return [(start, end)]
    spans: list[tuple[datetime, datetime]] = []
    now = start
    for _ in range(MAX_STEPS):
        if now >= end:
            return spans
        edge = min(stops.next_boundary(now), end)
        if not stops.stopped(now):
            if spans and spans[-1][1] == now:
                spans[-1] = (spans[-1][0], edge)
            elif len(spans) < limit:
                spans.append((now, edge))
            else:
                return spans
        now = edge
    raise RuntimeError(f"a clock from {start} to {end} took too many steps")
