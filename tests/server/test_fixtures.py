"""The fixtures' own rules: under CI a missing PostgreSQL fails, elsewhere skips; a saved
game comes back whole."""

from __future__ import annotations

import pytest
from sqlmodel import select

from pbem.db import session_scope
from pbem.models import Move
from tests import pgcluster
from tests.server import conftest
from tests.server.helpers import snapshot


def test_under_ci_a_missing_postgres_fails_the_tests(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required under CI=true"):
        conftest.give_up_on_postgres("no server")


def test_outside_ci_a_missing_postgres_skips_with_the_reason(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="not available.*no server"):
        conftest.give_up_on_postgres("no server")


def test_missing_server_binaries_are_reported(monkeypatch):
    monkeypatch.setattr(pgcluster.glob, "glob", lambda pattern: [])
    with pytest.raises(pgcluster.PostgresUnavailable, match="no PostgreSQL server binaries"):
        pgcluster.PostgresCluster()


def test_a_saved_table_comes_back_whole_in_an_empty_database(saved, app, client, inbox,
                                                             db_url):
    """Every row, the emails sent, the bots' random state; and the id counters go on from
    the copy's (the next move gets the same id and is the same move as the original's)."""

    def build():
        table = conftest.new_table(app, client, inbox)
        table.play_until(lambda decision, state: state.round >= 2)
        return table

    original = saved("fixture check", build)
    rows, mails = snapshot(app), [m.data for m in inbox.backend.sent]
    first = last_move(app, original.step())
    if not db_url.startswith("sqlite"):  # a SQLite copy replaces the whole file
        conftest.empty_tables(conftest._dsn(db_url))
    inbox.backend.sent.clear()

    copy = saved("fixture check", build)
    assert copy is not original
    assert snapshot(app) == rows
    assert [m.data for m in inbox.backend.sent] == mails
    again = last_move(app, copy.step())
    assert (again.id, again.decision_id, again.action) == (
        first.id, first.decision_id, first.action)


def last_move(app, decision) -> Move:
    with app.app_context(), session_scope() as s:
        return s.exec(select(Move).where(Move.decision_id == decision.id)).one()
