"""Reads never wait for the write lock (issue 19, item 1): a page is served while a writer
holds the game, a read keeps its snapshot across a confirm made meanwhile, and a read
scope cannot write."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import event, text
from sqlmodel import select

import pbem.services.playing as playing
from pbem.db import _reader, get_engine, is_postgres, one_read, read_scope, session_scope
from pbem.models import Game, Move
from tests.server.helpers import holding_game, only_form, path_of


def test_a_page_is_served_while_a_writer_holds_the_game(app, table):
    """SQLite: another connection holds the write lock (BEGIN IMMEDIATE); PostgreSQL: the
    game row is locked FOR UPDATE. A read that waited would wait for the busy timeout
    (30 s) or forever; the game page answers at once instead."""
    decision = table.open()
    page = path_of(table.page_link(decision))
    with holding_game(app, table.game_id), ThreadPoolExecutor(1) as pool:
        resp = pool.submit(lambda: table.client.get(page)).result(timeout=10)
    assert resp.status_code == 200
    assert 'id="decision"' in resp.get_data(as_text=True)


def test_a_read_keeps_its_snapshot_while_a_confirm_commits(app, table):
    """A read scope open across a concurrent confirm: the confirm neither waits for it nor
    is seen by it; a read started afterwards sees the move, recorded exactly once."""
    decision = table.open()
    url, action = next(iter(table.one_click(decision).items()))
    with app.app_context(), read_scope() as s:
        before = s.exec(select(Game.version).where(Game.id == table.game_id)).one()
        moves_before = len(s.exec(select(Move)).all())

        def confirm():
            page = table.client.get(path_of(url))
            return table.client.post(path_of(url),
                                     data=only_form(page.get_data(as_text=True)).data())

        with ThreadPoolExecutor(1) as pool:  # a confirm that waited for the read times out
            resp = pool.submit(confirm).result(timeout=10)
        assert resp.status_code == 200, resp.get_data(as_text=True)
        # still the old snapshot inside the open read
        assert s.exec(select(Game.version).where(Game.id == table.game_id)).one() == before
        assert len(s.exec(select(Move)).all()) == moves_before
    with app.app_context(), read_scope() as s:
        assert s.exec(select(Game.version).where(Game.id == table.game_id)).one() > before
        moves = s.exec(select(Move).where(Move.decision_id == decision.id)).all()
    assert [m.action for m in moves] == [action.to_json()]


def test_a_read_scope_refuses_to_write(app, table):
    with app.app_context(), read_scope() as s:
        game = s.get(Game, table.game_id)
        game.title = "changed"
        with pytest.raises(Exception, match="(?i)read.?only"):
            s.flush()
    with app.app_context(), read_scope() as s:
        assert s.get(Game, table.game_id).title != "changed"


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # PostgreSQL: one pool
def test_reads_and_writes_keep_to_connections_of_their_own(app, table):
    """SQLite: a read after a write (and a write after a read) does not switch a
    connection between reading and writing: ``PRAGMA query_only`` on a connection makes
    SQLite throw away every statement prepared on it. Readers still cannot write, and
    disposing of the engine closes the readers' connections too."""
    assert not is_postgres(app)  # PostgreSQL's readers share the pool: nothing to switch
    seen: list[str] = []

    def spy(_conn, _cursor, statement, *_args):
        seen.append(statement)

    with app.app_context():
        engine = get_engine(app)
        event.listen(engine, "before_cursor_execute", spy)  # readers' statements too
        try:
            for _ in range(3):
                with read_scope() as r:
                    r.get(Game, table.game_id)
                    assert r.execute(text("PRAGMA query_only")).scalar() == 1
                with session_scope() as s:
                    s.get(Game, table.game_id)
                    assert s.execute(text("PRAGMA query_only")).scalar() == 0
        finally:
            event.remove(engine, "before_cursor_execute", spy)
        switches = [x for x in seen if x.startswith("PRAGMA query_only=")]
        assert len(switches) <= 2, switches  # each connection set once, if ever
        assert any("SELECT" in x for x in seen)
        reader = _reader(engine)
        assert reader.pool is not engine.pool and reader.pool.checkedin() >= 1
        engine.dispose()
        assert reader.pool.checkedin() == 0


def test_the_confirm_page_reads_its_link_in_one_narrow_query(app, table):
    """GET /a/<token>: one SELECT, of the columns the page shows (not whole rows: no
    game policy, no seat address), and nothing else: no BEGIN (it is its own snapshot,
    in autocommit, on either database)."""
    decision = table.open()
    url = next(iter(table.one_click(decision)))
    seen: list[str] = []

    def spy(_conn, _cursor, statement, *_args):
        seen.append(" ".join(statement.split()))

    with app.app_context():
        engine = get_engine(app)
        event.listen(engine, "before_cursor_execute", spy)
        try:
            resp = table.client.get(path_of(url))
        finally:
            event.remove(engine, "before_cursor_execute", spy)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    selects = [x for x in seen if x.upper().startswith("SELECT")]
    assert len(selects) == 1, seen
    assert "policy" not in selects[0] and "email" not in selects[0], selects[0]
    assert len(seen) == 1, seen


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # PostgreSQL: autocommit
def test_a_one_statement_read_sends_no_begin_and_cannot_write_on_sqlite(app, table):
    """SQLite: ``one_read`` runs its statement with no BEGIN (outside a transaction, on
    a snapshot of its own), on a reader's connection, which refuses to write; the next
    transaction on that connection begins as usual."""
    seen: list[str] = []

    def spy(_conn, _cursor, statement, *_args):
        seen.append(statement)

    with app.app_context():
        engine = get_engine(app)
        event.listen(engine, "before_cursor_execute", spy)
        try:
            with one_read() as conn:
                assert conn.execute(text("SELECT title FROM game")).first() is not None
            assert [x for x in seen if x.startswith(("BEGIN", "SELECT"))] == [
                "SELECT title FROM game"], seen
            with one_read() as conn, pytest.raises(Exception, match="(?i)read.?only"):
                conn.execute(text("UPDATE game SET title = 'changed'"))
            seen.clear()
            with read_scope() as r:
                r.get(Game, table.game_id)
            assert seen[0] == "BEGIN", seen
        finally:
            event.remove(engine, "before_cursor_execute", spy)
    with app.app_context(), read_scope() as r:
        assert r.get(Game, table.game_id).title != "changed"


def test_the_confirm_page_reads_outside_a_transaction_on_postgresql(app, table,
                                                                     monkeypatch):
    """PostgreSQL: the confirm page's one query runs in autocommit (its own snapshot; no
    BEGIN and no ROLLBACK around it); SQLite: in a read-only transaction."""
    decision = table.open()
    url = next(iter(table.one_click(decision)))
    seen: list[bool] = []
    original = playing.confirm_link

    def spy(conn, raw):
        if is_postgres(app):
            seen.append(conn.connection.dbapi_connection.autocommit)
        else:
            seen.append(conn.execute(text("PRAGMA query_only")).scalar() == 1)
        return original(conn, raw)

    monkeypatch.setattr(playing, "confirm_link", spy)
    assert table.client.get(path_of(url)).status_code == 200
    assert seen == [True]
    with app.app_context(), session_scope() as s:  # the pool's connections write again
        assert s.execute(text("SELECT 1")).scalar() == 1
        if is_postgres(app):
            assert not s.connection().connection.dbapi_connection.autocommit
