"""A player's clock that stops during their quiet hours and at weekends (pbem.clocks):
exact cases across time zones and a change to summer time, and properties over random
starts, durations, zones and stops (hypothesis)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.clocks import Stops, advance, running_between, running_spans

BERLIN, LA = ZoneInfo("Europe/Berlin"), ZoneInfo("America/Los_Angeles")
HOUR = 3600.0


def local(zone, *args) -> datetime:
    return datetime(*args, tzinfo=zone)


@pytest.mark.parametrize("stops, start, hours, end", [
    # no stops: plain hours
    (Stops(BERLIN), local(BERLIN, 2030, 1, 14, 21), 2, local(BERLIN, 2030, 1, 14, 23)),
    # quiet 22-07: 21:00 + 2 h runs one hour, stands until 07:00, runs one more
    (Stops(BERLIN, (22, 7)), local(BERLIN, 2030, 1, 14, 21), 2, local(BERLIN, 2030, 1, 15, 8)),
    # started inside quiet hours: runs from their end
    (Stops(BERLIN, (22, 7)), local(BERLIN, 2030, 1, 15, 3), 1, local(BERLIN, 2030, 1, 15, 8)),
    # weekends: Friday 23:00 + 2 h -> Monday 01:00
    (Stops(BERLIN, None, True), local(BERLIN, 2030, 1, 18, 23), 2,
     local(BERLIN, 2030, 1, 21, 1)),
    # both: Friday 21:00 + 3 h -> Monday 09:00 (1 h Friday, quiet until 07:00 Monday)
    (Stops(BERLIN, (22, 7), True), local(BERLIN, 2030, 1, 18, 21), 3,
     local(BERLIN, 2030, 1, 21, 9)),
    # the night Berlin goes to summer time (02:00 -> 03:00, 28 March 2027): quiet hours
    # end at 07:00 by the wall clock, 05:00 UTC instead of 06:00
    (Stops(BERLIN, (22, 7)), local(BERLIN, 2027, 3, 27, 21), 2,
     datetime(2027, 3, 28, 6, 0, tzinfo=UTC)),
    # and back to winter time (31 October 2027, 03:00 -> 02:00): 07:00 is 06:00 UTC
    (Stops(BERLIN, (22, 7)), local(BERLIN, 2027, 10, 30, 21), 2,
     datetime(2027, 10, 31, 7, 0, tzinfo=UTC)),
    # Los Angeles, the same quiet hours there: 22-07 Pacific
    (Stops(LA, (22, 7)), local(LA, 2030, 1, 14, 21), 2, local(LA, 2030, 1, 15, 8)),
])
def test_a_clock_runs_only_outside_its_stops(stops, start, hours, end):
    assert advance(start, hours * HOUR, stops) == end
    assert running_between(start, end, stops) == pytest.approx(hours * HOUR)


def test_a_clock_that_ran_nothing_yet():
    stops = Stops(BERLIN, (22, 7))
    at = local(BERLIN, 2030, 1, 14, 23)  # stopped: it starts running at 07:00
    assert advance(at, 0, stops) == local(BERLIN, 2030, 1, 15, 7)
    assert running_between(at, at + timedelta(hours=7), stops) == 0
    assert running_between(at, at - timedelta(hours=1), stops) == 0


ZONES = st.sampled_from(["UTC", "Europe/Berlin", "America/Los_Angeles", "Asia/Tokyo",
                         "Australia/Lord_Howe", "America/St_Johns", "Asia/Kathmandu"])
QUIET = st.one_of(st.none(), st.tuples(st.integers(0, 23), st.integers(0, 23)))
STARTS = st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2031, 1, 1),
                      timezones=st.just(UTC))


@settings(max_examples=300, deadline=None)
@given(zone=ZONES, quiet=QUIET, weekends=st.booleans(), start=STARTS,
       seconds=st.floats(0, 40 * 24 * HOUR), more=st.floats(0, 5 * 24 * HOUR))
def test_advance_and_running_between_agree(zone, quiet, weekends, start, seconds, more):
    stops = Stops(ZoneInfo(zone), quiet, weekends)
    end = advance(start, seconds, stops)
    assert end >= start
    assert running_between(start, end, stops) == pytest.approx(seconds, abs=1e-3)
    if seconds > 1:  # the clock was running just before it ended
        assert not stops.stopped(end - timedelta(milliseconds=1))
    assert advance(start, seconds + more, stops) >= end  # more time never ends sooner
    if stops.never:
        assert end == start + timedelta(seconds=seconds)


@settings(max_examples=200, deadline=None)
@given(zone=ZONES, quiet=QUIET, weekends=st.booleans(), start=STARTS,
       seconds=st.floats(0, 20 * 24 * HOUR), limit=st.integers(1, 40))
def test_the_spans_of_a_running_clock_add_up_to_its_running_time(zone, quiet, weekends,
                                                                 start, seconds, limit):
    """(What a page's script counts down: ``running_spans``.) In order, apart, each
    running all along; as many as ``limit`` allows, and then all of its running time."""
    stops = Stops(ZoneInfo(zone), quiet, weekends)
    end = start + timedelta(seconds=seconds)
    spans = running_spans(start, end, stops, limit)
    assert len(spans) <= limit
    for i, (a, b) in enumerate(spans):
        assert start <= a < b <= end
        assert not stops.stopped(a) and not stops.stopped(a + (b - a) / 2)
        if i + 1 < len(spans):
            assert b < spans[i + 1][0]
    total = sum((b - a).total_seconds() for a, b in spans)
    if len(spans) < limit:
        assert total == pytest.approx(running_between(start, end, stops), abs=1e-3)
    else:
        assert total + running_between(spans[-1][1], end, stops) == pytest.approx(
            running_between(start, end, stops), abs=1e-3)


def test_the_spans_of_a_clock_in_berlin_over_the_autumn_change_and_a_weekend():
    stops = Stops(BERLIN, (22, 7), True)  # Friday 25 October 2030, 20:00 (summer time)
    spans = running_spans(local(BERLIN, 2030, 10, 25, 20), local(BERLIN, 2030, 10, 29, 12),
                          stops)
    assert spans == [(local(BERLIN, 2030, 10, 25, 20), local(BERLIN, 2030, 10, 25, 22)),
                     (local(BERLIN, 2030, 10, 28, 7), local(BERLIN, 2030, 10, 28, 22)),
                     (local(BERLIN, 2030, 10, 29, 7), local(BERLIN, 2030, 10, 29, 12))]
    assert spans[1][0].utcoffset() == timedelta(hours=1)  # winter time by Monday
