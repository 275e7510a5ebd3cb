"""Writes take the write lock late (issue 19, item 1): a confirm reads its link, its game
and works out its move before it takes the lock, then checks again under the lock what
may have changed meanwhile (the link revoked, the game moved on), on SQLite and
PostgreSQL."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import event, text
from sqlmodel import select

import pbem.services.playing as playing
from pbem import services
from pbem.db import _reader, get_engine, is_postgres, read_scope
from pbem.models import Move
from tests.server.helpers import holding_game, only_form, path_of


def _moves_of(app, decision_id: int) -> list[Move]:
    with app.app_context(), read_scope() as s:
        return list(s.exec(select(Move).where(Move.decision_id == decision_id)))


def _spy_apply(monkeypatch, after=None) -> threading.Event:
    """An event set once a confirm has worked out its move (``_try_apply``, before the
    write lock); ``after`` runs then, while the confirm's read is still open."""
    worked_out = threading.Event()
    original = playing._try_apply

    def spy(*args):
        found = original(*args)
        worked_out.set()
        if after is not None:
            after()
        return found

    monkeypatch.setattr(playing, "_try_apply", spy)
    return worked_out


def _writer(app, sql: str, **params) -> None:
    """A change committed by another connection, as another request would make it."""
    with app.app_context(), get_engine(app).begin() as conn:
        conn.execute(text(sql), params)


def test_a_confirm_works_out_its_move_while_another_writer_holds_the_lock(app, table,
                                                                           monkeypatch):
    """While another connection holds the write lock (SQLite) or the game row
    (PostgreSQL), the confirm gets as far as the move itself; once the lock is free it
    records exactly that move, once. A confirm that took the lock first would not reach
    the move until the other writer had finished."""
    decision = table.open()
    url, action = next(iter(table.one_click(decision).items()))
    form = only_form(table.client.get(path_of(url)).get_data(as_text=True)).data()
    worked_out = _spy_apply(monkeypatch)
    with holding_game(app, table.game_id) as conn, ThreadPoolExecutor(1) as pool:
        future = pool.submit(lambda: table.client.post(path_of(url), data=form))
        assert worked_out.wait(10), "the confirm waited for the lock before its move"
        assert not future.done()  # it waits for the lock only to write
        conn.rollback()
        resp = future.result(timeout=30)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert [m.action for m in _moves_of(app, decision.id)] == [action.to_json()]


def test_a_link_revoked_after_the_read_is_refused_under_the_lock(app, table, monkeypatch):
    """A hand-over revokes the old player's links: if that commits after the confirm's
    read, the confirm is refused under the lock and records nothing."""
    decision = table.open()
    url = next(iter(table.one_click(decision)))
    form = only_form(table.client.get(path_of(url)).get_data(as_text=True)).data()
    _spy_apply(monkeypatch, after=lambda: _writer(
        app, "UPDATE token SET revoked_at = CURRENT_TIMESTAMP WHERE seat_id = :seat",
        seat=decision.seat_id))
    resp = table.client.post(path_of(url), data=form)
    assert resp.status_code == 404, resp.get_data(as_text=True)
    assert "no longer valid" in resp.get_data(as_text=True)
    assert _moves_of(app, decision.id) == []


def test_a_game_that_moved_on_after_the_read_is_read_again_under_the_lock(app, table,
                                                                          monkeypatch):
    """If the game changes between the read and the lock (its version moves), the move
    is worked out again on the game as it is under the lock: the state is read twice,
    and the move recorded is still the one the link names, once."""
    decision = table.open()
    url, action = next(iter(table.one_click(decision).items()))
    form = only_form(table.client.get(path_of(url)).get_data(as_text=True)).data()
    _spy_apply(monkeypatch, after=lambda: _writer(
        app, "UPDATE game SET version = version + 1 WHERE id = :id", id=table.game_id))
    loads = []
    original = playing.load_state
    monkeypatch.setattr(playing, "load_state",
                        lambda mod, game: loads.append(game.version) or original(mod, game))
    resp = table.client.post(path_of(url), data=form)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert len(loads) == 2 and loads[1] == loads[0] + 1
    assert [m.action for m in _moves_of(app, decision.id)] == [action.to_json()]


def test_a_page_form_works_out_its_move_before_the_lock_too(app, table, monkeypatch):
    """The game page's form takes the same path: the words are read against the game
    before the lock, and the move is recorded once."""
    decision = table.open()
    worked_out = _spy_apply(monkeypatch)
    resp = table.play_on_page(decision, table.bot_choice(decision))
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert worked_out.is_set()
    assert len(_moves_of(app, decision.id)) == 1


def test_an_email_is_rendered_in_a_read_and_its_links_work(app, table, inbox, monkeypatch):
    """The mail loop renders in a read-only transaction (on SQLite another connection can
    take the write lock meanwhile); the links' tokens are stored before the email goes
    out, so its one-click link works."""
    import pbem.mail.delivery as delivery

    decision = table.open()
    seen: list[tuple[bool, bool]] = []
    original = delivery.render_row

    def spy(s, *args):
        read_only = s.execute(text("PRAGMA query_only" if not is_postgres(app)
                                   else "SHOW transaction_read_only")).scalar()
        free = True
        if not is_postgres(app):  # the database's write lock is free while it renders
            probe = get_engine(app).raw_connection()  # its own DBAPI connection
            try:
                probe.execute("PRAGMA busy_timeout=100")
                probe.execute("BEGIN IMMEDIATE")
                probe.execute("ROLLBACK")
            except Exception:  # noqa: BLE001 - "database is locked"
                free = False
            finally:
                probe.execute("PRAGMA busy_timeout=30000")
                probe.close()
        seen.append((read_only in (1, "on"), free))
        return original(s, *args)

    monkeypatch.setattr(delivery, "render_row", spy)
    table.play_on_page(decision, table.bot_choice(decision))
    following = table.open()
    url, action = next(iter(table.one_click(following).items()))  # delivers the emails
    assert seen and all(ok == (True, True) for ok in seen), seen
    page = table.client.get(path_of(url))
    assert page.status_code == 200
    resp = table.client.post(path_of(url),
                             data=only_form(page.get_data(as_text=True)).data())
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert [m.action for m in _moves_of(app, following.id)] == [action.to_json()]


def _count_link_reads(monkeypatch) -> list[bool]:
    """One entry per full read of a link (``read_seat_link`` before the lock: False;
    ``live_seat_link`` under it, ``again``: True)."""
    reads: list[bool] = []
    original, before = playing.live_seat_link, playing.read_seat_link

    def spy(*args, again=False):
        reads.append(again)
        return original(*args, again=again)

    def spy_before(*args):
        reads.append(False)
        return before(*args)

    monkeypatch.setattr(playing, "live_seat_link", spy)
    monkeypatch.setattr(playing, "read_seat_link", spy_before)
    return reads


def test_a_link_unchanged_since_the_read_is_not_loaded_again_under_the_lock(app, table,
                                                                           monkeypatch):
    """Nothing changed between the read and the lock: the writing transaction checks that
    in one small query and reuses the rows read before (one full read of the link), for
    a one-click link and for the page's form alike."""
    reads = _count_link_reads(monkeypatch)
    decision = table.open()
    url, action = next(iter(table.one_click(decision).items()))
    form = only_form(table.client.get(path_of(url)).get_data(as_text=True)).data()
    reads.clear()
    resp = table.client.post(path_of(url), data=form)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert reads == [False]  # the read before the lock only
    assert [m.action for m in _moves_of(app, decision.id)] == [action.to_json()]
    following = table.open()
    reads.clear()
    assert table.play_on_page(following, table.bot_choice(following)).status_code == 200
    assert reads == [False]
    assert len(_moves_of(app, following.id)) == 1


def test_a_decision_closed_after_the_read_is_refused_under_the_lock(app, table,
                                                                    monkeypatch):
    """Another writer closes the decision between the confirm's read and its lock, and
    moves nothing else (not even the game's page_version): the confirm still sees it
    under the lock and records nothing."""
    decision = table.open()
    url = next(iter(table.one_click(decision)))
    form = only_form(table.client.get(path_of(url)).get_data(as_text=True)).data()
    _spy_apply(monkeypatch, after=lambda: _writer(
        app, "UPDATE decision SET closed_at = CURRENT_TIMESTAMP, closed_by = 'timeout' "
             "WHERE id = :id", id=decision.id))
    resp = table.client.post(path_of(url), data=form)
    assert resp.status_code == 409, resp.get_data(as_text=True)
    assert _moves_of(app, decision.id) == []


def test_a_game_paused_after_the_read_is_refused_under_the_lock(app, table, monkeypatch):
    """A pause changes the game but not its version: it moves the game's page_version,
    so the confirm reads the link again under the lock, sees the pause and records
    nothing."""
    reads = _count_link_reads(monkeypatch)
    decision = table.open()
    url = next(iter(table.one_click(decision)))
    form = only_form(table.client.get(path_of(url)).get_data(as_text=True)).data()
    _spy_apply(monkeypatch, after=lambda: _writer(
        app, "UPDATE game SET paused_at = CURRENT_TIMESTAMP, "
             "page_version = page_version + 1 WHERE id = :id", id=table.game_id))
    reads.clear()
    resp = table.client.post(path_of(url), data=form)
    assert "paused" in resp.get_data(as_text=True), resp.get_data(as_text=True)
    assert resp.status_code == 409
    assert reads == [False, True]
    assert _moves_of(app, decision.id) == []


def test_a_confirm_checks_out_one_connection_on_postgresql(app, table):
    """PostgreSQL: the read before the lock and the write after it are one transaction on
    one pooled connection (one checkout, one BEGIN, one COMMIT, no ROLLBACK). SQLite: a
    read on a reader's connection, then the write on a writer's."""
    decision = table.open()
    url = next(iter(table.one_click(decision)))
    raw = path_of(url).rsplit("/", 1)[-1]
    checkouts: list[object] = []
    ends: list[str] = []
    engine = get_engine(app)

    def checkout(dbapi_conn, *_args):
        checkouts.append(dbapi_conn)

    def rollback(_conn):
        ends.append("rollback")

    def commit(_conn):
        ends.append("commit")

    with app.app_context():
        pools = {engine.pool, _reader(engine).pool}
        for pool in pools:
            event.listen(pool, "checkout", checkout)
        event.listen(engine, "rollback", rollback)
        event.listen(engine, "commit", commit)
        try:
            services.act_by_token(raw)
        finally:
            for pool in pools:
                event.remove(pool, "checkout", checkout)
            event.remove(engine, "rollback", rollback)
            event.remove(engine, "commit", commit)
    if is_postgres(app):
        assert len(checkouts) == 1 and ends == ["commit"], (checkouts, ends)
    else:
        assert len(set(map(id, checkouts))) == 2 and ends[-1] == "commit", (checkouts, ends)
    assert len(_moves_of(app, decision.id)) == 1


def test_a_confirm_reads_the_games_seats_with_its_check_under_the_lock(app, table):
    """The move needs every seat of the game and its open decisions: the check under the
    lock that the link is unchanged reads them in the same statement, so no statement
    reads them alone (two statements, and two round trips on PostgreSQL, fewer per
    confirm). The read before the lock is one statement with no BEGIN of its own on
    SQLite either."""
    decision = table.open()
    url, action = next(iter(table.one_click(decision).items()))
    raw = path_of(url).rsplit("/", 1)[-1]
    statements: list[str] = []
    engine = get_engine(app)

    def seen(_conn, _cursor, statement, *_args):
        statements.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", seen)
    try:
        with app.app_context():
            services.act_by_token(raw)
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert not [s for s in statements if s.startswith(("SELECT seat.", "SELECT decision."))
                ], statements  # (nor the game's open decisions)
    assert "BEGIN" not in statements  # the read before the lock: one statement, no BEGIN
    assert [s for s in statements if "FOR UPDATE" not in s and "JOIN seat ON seat.game_id"
            in s], statements  # the check, with the seats
    assert [m.action for m in _moves_of(app, decision.id)] == [action.to_json()]


def test_the_seats_a_confirm_plays_with_are_read_under_the_lock(app, table, monkeypatch):
    """A seat's page seen after the confirm's read (which moves no page_version) is seen
    by the move: the seats come from the read under the lock, not from before it."""
    decision = table.open()
    url = next(iter(table.one_click(decision)))
    form = only_form(table.client.get(path_of(url)).get_data(as_text=True)).data()
    _spy_apply(monkeypatch, after=lambda: _writer(
        app, "UPDATE seat SET page_seen_at = CURRENT_TIMESTAMP WHERE game_id = :id "
             "AND id != :seat", id=table.game_id, seat=decision.seat_id))
    used: list[list] = []
    original = playing.sync_decisions

    def spy(s, game, mod, state, seats, *args, **kwargs):
        used.append([(x.id, x.page_seen_at is not None) for x in seats])
        return original(s, game, mod, state, seats, *args, **kwargs)

    monkeypatch.setattr(playing, "sync_decisions", spy)
    resp = table.client.post(path_of(url), data=form)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert used and [seen for sid, seen in used[0] if sid != decision.seat_id], used
    assert all(seen for sid, seen in used[0] if sid != decision.seat_id), used
    assert len(_moves_of(app, decision.id)) == 1


def test_the_check_under_the_lock_gives_the_seats_and_open_decisions_a_read_would(
        app, table):
    """With several decisions open at once (one for each of two seats, and two for
    one seat), the check's seats and open decisions are those ``seats_of`` and
    ``open_decisions`` read, in order, with the link's own seat and decision the very
    objects read before the lock; a decision closed is not among them."""
    from pbem.db import read_then_write
    from pbem.kinds import TokenKind
    from pbem.services.plumbing import link_unchanged, read_seat_link, seats_of

    decision = table.open()
    url = next(iter(table.one_click(decision)))
    raw = path_of(url).rsplit("/", 1)[-1]
    with app.app_context():
        seats = [s.id for s in _seats(app, table.game_id)]
        other = next(s for s in seats if s != decision.seat_id)
        for seat_id, closed in ((other, None), (other, None), (decision.seat_id, None),
                                (other, "CURRENT_TIMESTAMP")):
            _writer(app, "INSERT INTO decision (game_id, seat_id, position, seq, kind, "
                         "opened_at, deadline_at, reminders_sent, closed_at) SELECT "
                         f":game, :seat, position, 0, 'extra', CURRENT_TIMESTAMP, "
                         f"CURRENT_TIMESTAMP, 0, {closed or 'NULL'} FROM seat WHERE id = :seat",
                    game=table.game_id, seat=seat_id)
        with read_then_write() as late:
            token, game, seat, found = read_seat_link(late.connection(), raw,
                                                      TokenKind.ACTION)
            s = late.write()
            playing.lock_game_row(s, game.id)
            now = link_unchanged(s, TokenKind.ACTION, token, game, seat, found)
            assert now is not None
            got_seats, got_open = now
            assert [x.id for x in got_seats] == [x.id for x in seats_of(s, game.id)]
            expected = sorted(playing.open_decisions(s, game.id), key=lambda d: d.id)
            assert [d.id for d in got_open] == [d.id for d in expected]
            assert len(got_open) == 4 and all(d.closed_at is None for d in got_open)
            assert seat in got_seats and found in got_open  # the very objects
            assert all(x is s.get(type(x), x.id) for x in [*got_seats, *got_open])
            s.rollback()


def _seats(app, game_id: str):
    from pbem.models import Seat

    with app.app_context(), read_scope() as s:
        return list(s.exec(select(Seat).where(Seat.game_id == game_id)
                           .order_by(Seat.position)))
