"""PostgreSQL's pooled connections: a connection the server closed is replaced when it
is checked out (no request fails on it), and a healthy one is used again as it is,
without a round trip to ask (``db._postgres_liveness``, instead of ``pool_pre_ping``)."""

from __future__ import annotations

import time

import psycopg
import pytest

from pbem.db import get_engine, is_postgres

# PostgreSQL only (SQLite has no server to go away): the database parameter narrowed,
# not a skip
pytestmark = pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)


@pytest.fixture
def pg_app(app):
    assert is_postgres(app)
    return app


def _backend(engine) -> int:
    with engine.connect() as conn:
        return conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()


def test_a_healthy_pooled_connection_is_used_again_without_a_ping(pg_app, monkeypatch):
    engine = get_engine(pg_app)
    pings: list[object] = []
    original = type(engine.dialect).do_ping
    monkeypatch.setattr(type(engine.dialect), "do_ping",
                        lambda self, conn: pings.append(conn) or original(self, conn))
    first = _backend(engine)
    assert _backend(engine) == first  # the same server process: the same connection
    assert pings == []


def test_a_connection_the_server_closed_is_replaced_at_checkout(pg_app, client):
    engine = get_engine(pg_app)
    victim = _backend(engine)  # now idle in the pool
    with psycopg.connect(engine.url.set(drivername="postgresql")
                         .render_as_string(hide_password=False), autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (victim,)).fetchone()[0]
        deadline = time.monotonic() + 5
        while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                            (victim,)).fetchone()[0] and time.monotonic() < deadline:
            time.sleep(0.01)
    assert _backend(engine) != victim  # a new connection, and no error
    assert client.get("/").status_code == 200
