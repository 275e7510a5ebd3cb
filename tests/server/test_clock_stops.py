"""Deadlines that fit real life (issue 20, point 4, in part): the host may have each
player's clock stand still during their quiet hours and at weekends, in their zone; a
reminder that would fall in a player's quiet hours comes before they begin. Under a
frozen clock, both databases. (The arithmetic itself: tests/test_clocks.py.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import select

from pbem.db import session_scope
from pbem.errors import InvalidInput
from pbem.models import Decision
from pbem.policy import GamePolicy
from tests.server.test_address_settings import save, table_cy_passes, unsubscribe_link
from tests.server.timekit import ANN, T0, at, new_game

FRIDAY = T0 + timedelta(days=4)  # Friday 18 January 2030, 09:00 UTC (10:00 in Berlin)


def open_decision(app, game_id: str) -> Decision:
    with app.app_context(), session_scope() as s:
        (row,) = s.exec(select(Decision).where(Decision.game_id == game_id,
                                               Decision.closed_at.is_(None))).all()
        s.expunge(row)
        return row


def test_a_clock_that_stops_at_weekends_runs_friday_to_monday(app, frozen):
    frozen.move_to(FRIDAY)
    created = new_game(app, hours=24, pause_weekends="on")
    decision = open_decision(app, created.game_id)  # Cy, in Tokyo (UTC+9)
    # Friday 18:00 in Tokyo + 24 running hours: 6 on Friday, then Monday 00:00 to 18:00
    assert decision.deadline_at == datetime(2030, 1, 21, 9, 0, tzinfo=UTC)


def test_a_clock_without_stops_runs_through_the_weekend(app, frozen):
    frozen.move_to(FRIDAY)
    created = new_game(app, hours=24)
    assert open_decision(app, created.game_id).deadline_at == FRIDAY + timedelta(hours=24)


def test_a_clock_that_stops_in_quiet_hours_waits_them_out(app, client, frozen):
    created = new_game(app, hours=2, pause_quiet="on")  # Cy bids first; Ann is next
    save(client, unsubscribe_link(app, created.game_id, ANN.email), quiet_from="22",
         quiet_to="7", timezone="Europe/Berlin")
    at(frozen, 11)  # 20:00 UTC, 21:00 in Berlin
    table_cy_passes(app, client, created)
    decision = open_decision(app, created.game_id)
    assert decision.position == 0
    # one hour until 22:00, then from 07:00 on: 08:00 in Berlin
    assert decision.deadline_at == datetime(2030, 1, 15, 7, 0, tzinfo=UTC)


def test_a_reminder_in_quiet_hours_comes_an_hour_before_they_begin(app, client, frozen):
    created = new_game(app, hours=8, reminders="2")  # no stops: the deadline stands
    save(client, unsubscribe_link(app, created.game_id, ANN.email), quiet_from="22",
         quiet_to="7", timezone="Europe/Berlin")
    at(frozen, 10.5)  # 20:30 in Berlin: Ann's deadline 04:30 there, her reminder 02:30
    table_cy_passes(app, client, created)
    decision = open_decision(app, created.game_id)
    assert decision.deadline_at == datetime(2030, 1, 15, 3, 30, tzinfo=UTC)
    assert decision.next_reminder_at == datetime(2030, 1, 14, 20, 0, tzinfo=UTC)  # 21:00


def test_the_policy_takes_the_switches_and_refuses_anything_else():
    policy = GamePolicy.parse({"pause_quiet": "on", "pause_weekends": ""})
    assert policy.pause_quiet and not policy.pause_weekends
    assert GamePolicy.from_json(policy.to_json()) == policy
    assert GamePolicy.from_json({}).pause_quiet is False  # games made before
    with pytest.raises(InvalidInput):
        GamePolicy.parse({"pause_weekends": "sometimes"})


def test_the_host_page_says_how_the_clocks_run(app, client, frozen):
    created = new_game(app, pause_quiet="on", pause_weekends="on")
    page = client.get(f"/admin/{created.admin_token}").get_data(as_text=True)
    assert "Each player&#39;s clock stops during their quiet hours and at weekends." in page \
        or "Each player's clock stops during their quiet hours and at weekends." in page
