"""Alembic: an empty database upgrades to head and then matches the models exactly."""

from __future__ import annotations

import json

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import create_engine, inspect, text

from pbem.migrate import alembic_config, check, upgrade
from pbem.models import metadata
from pbem.policy import AbsentBot, GamePolicy


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request, tmp_path) -> str:
    """A database with no tables at all."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'empty.sqlite3'}"
    cluster = request.getfixturevalue("pg_cluster")
    return cluster.url(cluster.create_database())


def inspect_url(url: str, fn):
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return fn(conn)
    finally:
        engine.dispose()


def head_revision(conn) -> str:
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()


def test_upgrade_of_an_empty_database_to_head_leaves_nothing_to_autogenerate(empty_url):
    upgrade(empty_url)
    check(empty_url)  # raises CommandError if autogenerate would find anything
    tables = inspect_url(empty_url, lambda c: set(inspect(c).get_table_names()))
    assert tables == set(metadata.tables) | {"alembic_version"}
    heads = ScriptDirectory.from_config(alembic_config(empty_url)).get_heads()
    assert [inspect_url(empty_url, head_revision)] == heads


def test_check_notices_a_database_that_differs_from_the_models(empty_url):
    upgrade(empty_url)
    inspect_url(empty_url, lambda c: (c.execute(text("DROP INDEX ix_outbox_due")),
                                      c.commit()))
    with pytest.raises(CommandError, match="New upgrade operations detected"):
        check(empty_url)


def test_upgrade_is_idempotent(empty_url):
    upgrade(empty_url)
    upgrade(empty_url)
    check(empty_url)


def test_a_database_with_games_upgrades_from_the_first_revision(empty_url):
    """Columns added later need server defaults for the rows already there."""
    upgrade(empty_url, "0001")

    def add_game(conn):
        conn.execute(text(
            "INSERT INTO game (id, engine, title, options, seed, version, status, "
            "hours_per_decision, created_at, thread_id, event_seq, spectator_key) VALUES "
            "('g1', 'cavemen', '', '{}', 1, 0, 'inviting', 48, '2030-01-01 00:00:00+00', "
            "'<t@x>', 0, 'abc')"))
        conn.execute(text(
            "INSERT INTO seat (game_id, position, name, email, language, timezone, is_host, "
            "invite, seen_event_seq) VALUES ('g1', 0, 'Ann', 'ann@example.com', 'en', "
            "'UTC', true, 'accepted', 0)"))
        conn.commit()

    inspect_url(empty_url, add_game)
    upgrade(empty_url)
    check(empty_url)
    policy = inspect_url(empty_url, lambda c: c.execute(text("SELECT policy FROM game")).one())
    assert _json(policy[0]) == {"hours_per_decision": 48.0, "reminder_hours": [],
                                "absent_after": 2, "absent_bot": "heuristic",
                                "vacation_days": 7.0}
    seat = inspect_url(empty_url, lambda c: c.execute(text(
        "SELECT timeouts_in_row, vacation_used_hours FROM seat")).one())
    assert tuple(seat) == (0, 0.0)
    assert inspect_url(empty_url, lambda c: c.execute(text(
        "SELECT page_version FROM game")).scalar_one()) == 0


def _json(value):
    return json.loads(value) if isinstance(value, str) else value


def test_the_policy_columns_become_one_json_value_and_back(empty_url):
    """0007 copies each game's five policy columns into ``policy``; its downgrade copies
    them back."""
    upgrade(empty_url, "0006")

    def add_game(conn):
        conn.execute(text(
            "INSERT INTO game (id, engine, title, options, seed, version, status, "
            "hours_per_decision, reminder_hours, absent_after, absent_bot, vacation_days, "
            "idle_rounds, created_at, event_seq, spectator_key) VALUES ('g1', 'cavemen', '', "
            "'{}', 1, 0, 'inviting', 10, '[6, 1.5]', 3, 'default', 2.5, 0, "
            "'2030-01-01 00:00:00+00', 0, 'abc')"))
        conn.commit()

    inspect_url(empty_url, add_game)
    upgrade(empty_url)
    check(empty_url)
    stored = inspect_url(empty_url, lambda c: c.execute(text("SELECT policy FROM game")).one())
    expected = {"hours_per_decision": 10.0, "reminder_hours": [6.0, 1.5], "absent_after": 3,
                "absent_bot": "default", "vacation_days": 2.5}
    assert _json(stored[0]) == expected
    assert GamePolicy.from_json(_json(stored[0])) == GamePolicy(10.0, (6.0, 1.5), 3,
                                                                 AbsentBot.DEFAULT, 2.5)
    command.downgrade(alembic_config(empty_url), "0006")
    back = inspect_url(empty_url, lambda c: c.execute(text(
        "SELECT hours_per_decision, reminder_hours, absent_after, absent_bot, vacation_days "
        "FROM game")).one())
    assert (back[0], _json(back[1]), *back[2:]) == (10.0, [6.0, 1.5], 3, "default", 2.5)


def test_the_heartbeats_and_failed_at_go_and_come_back(empty_url):
    """0016: the heartbeat table and outbox.failed_at (with its index), down and up."""
    upgrade(empty_url)
    command.downgrade(alembic_config(empty_url), "0015")
    tables = inspect_url(empty_url, lambda c: set(inspect(c).get_table_names()))
    assert "heartbeat" not in tables
    columns = inspect_url(empty_url, lambda c: {col["name"] for col in
                                                inspect(c).get_columns("outbox")})
    assert "failed_at" not in columns
    upgrade(empty_url)
    check(empty_url)
    indexes = inspect_url(empty_url, lambda c: {i["name"] for i in
                                                inspect(c).get_indexes("outbox")})
    assert "ix_outbox_failed_at" in indexes
