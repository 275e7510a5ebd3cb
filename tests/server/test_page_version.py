"""``Game.page_version`` moves with every committed change to a game, its seats, its
decisions or its log (a session hook), once per transaction, and not for a column no page
shows. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlmodel import select

from pbem.db import session_scope
from pbem.models import NOT_ON_PAGES, PAGE_TABLES, EventLog, Game, Seat


def page_version(app, game_id: str) -> int:
    with app.app_context(), session_scope() as s:
        return s.get(Game, game_id).page_version


def test_the_page_version_moves_once_per_transaction_and_not_for_what_no_page_shows(table):
    app = table.app

    def version() -> int:
        return page_version(app, table.game_id)

    start = version()
    with app.app_context(), session_scope() as s:
        seats = s.exec(select(Seat).where(Seat.game_id == table.game_id)).all()
        for seat in seats:
            seat.seen_event_seq += 5
    assert version() == start
    with app.app_context(), session_scope() as s:
        seats = s.exec(select(Seat).where(Seat.game_id == table.game_id)).all()
        seats[0].name = "Anna"
        s.flush()
        seats[1].name = "Bobby"
    assert version() == start + 1
    with app.app_context(), session_scope() as s:  # a value set to itself is no change
        seat = s.exec(select(Seat).where(Seat.game_id == table.game_id)).first()
        seat.name = seat.name
    assert version() == start + 1


def test_a_row_added_or_deleted_moves_the_page_version(table):
    app = table.app

    def version() -> int:
        return page_version(app, table.game_id)

    start = version()
    with app.app_context(), session_scope() as s:
        s.add(EventLog(game_id=table.game_id, seq=10_000, kind="note"))
    assert version() == start + 1
    with app.app_context(), session_scope() as s:
        s.delete(s.exec(select(EventLog).where(EventLog.seq == 10_000)).one())
    assert version() == start + 2


def test_the_columns_no_page_shows_are_columns():
    for model, names in NOT_ON_PAGES.items():
        assert model in PAGE_TABLES
        assert names <= set(model.__table__.columns.keys()), model


def test_a_move_moves_the_page_version(table):
    """A move stores the state with a Core update that moves it too."""
    start = page_version(table.app, table.game_id)
    table.step()
    assert page_version(table.app, table.game_id) > start
