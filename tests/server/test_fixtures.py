"""The PostgreSQL fixture's own rule: under CI a missing server fails, elsewhere skips."""

from __future__ import annotations

import pytest

from tests import pgcluster
from tests.server import conftest


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
