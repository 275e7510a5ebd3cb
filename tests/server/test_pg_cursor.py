"""PostgreSQL: the engine's psycopg cursors make a result's ``description`` only when it
is read (``pbem.db._psycopg_cursor``), and it is the one psycopg would have made."""

from __future__ import annotations

import psycopg
from sqlalchemy import text

from pbem.db import make_engine

QUERY = "SELECT 1::int AS one, 'two'::varchar(5) AS two, now() AS three"


def test_a_description_is_psycopgs_own_made_when_read(pg_cluster, monkeypatch):
    db = pg_cluster.create_database()
    with psycopg.connect(pg_cluster.dsn(db)) as plain:
        expected = [tuple(c) for c in plain.execute(QUERY).description]
    made: list[int] = []
    init = psycopg.Column.__init__

    def counted(self, cursor, index):
        made.append(index)
        init(self, cursor, index)

    monkeypatch.setattr(psycopg.Column, "__init__", counted)
    engine = make_engine(pg_cluster.url(db))
    try:
        with engine.connect() as conn:
            cursor = conn.connection.dbapi_connection.cursor()
            made.clear()  # (the dialect's first queries when it connected)
            described = cursor.execute(QUERY).description
            assert len(described) == 3 and made == []  # asked for, not read: none made
            cursor.execute("SELECT 42")  # another result: the first description stands
            assert [tuple(c) for c in described] == expected and made == [0, 1, 2]
            assert [c.name for c in described] == ["one", "two", "three"]
            assert described[1].display_size == 5 and described[-1].type_code == 1184
            assert cursor.execute("CREATE TABLE t (id int)").description is None
            assert list(cursor.execute("SELECT").description) == []  # tuples, no columns
            for _ in range(3):  # compiled once, then only the description's presence
                row = conn.execute(text("SELECT 1 AS a, 'b' AS b")).one()
                assert (row.a, row.b, row._fields) == (1, "b", ("a", "b"))
    finally:
        engine.dispose()
