"""One typed view of a seat (issue 34, point 1): ``pbem.view.seat_view`` gives what the
seat's game page is built from (the same open decisions, the same legal actions, the
email's choices, the board, the clocks), no other seat's secrets (Stone Age cards held,
events seen by one seat only), the events and table talk since a point, and nothing in
it typed ``Any``."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from datetime import UTC, datetime

import pytest
from freezegun import freeze_time
from sqlmodel import select

from engine.core import Action, format_action
from pbem import services, view
from pbem.db import read_scope, session_scope
from pbem.models import EventLog, Game, Seat
from pbem.services import talk
from tests.engine.stoneage_builders import board, build
from tests.server.conftest import start_game
from tests.server.helpers import PLAYERS, forms, path_of, token_of
from tests.server.test_exact_moves import Position

# --------------------------------------------------------------------------- helpers


def raw_of(page: str) -> str:
    return page.rsplit("/", 1)[1]


def json_text(value: object) -> str:
    """A view (or part of one) as JSON text: tuples as lists, times as text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.dumps(value, default=str, sort_keys=True)


def assert_as_the_page_has_it(app, raw: str) -> view.SeatView:
    """The view of the seat behind ``raw`` against what its game page is built from
    (``game_for_page``) and what the page shows (its decision form)."""
    with app.app_context(), freeze_time(datetime.now(UTC)):  # the clocks, at one moment
        seen = services.seat_view(raw)
        page = services.game_for_page(raw)
    assert [d.id for d in seen.open] == [d.id for d in page["open"]]
    assert [(d.position, d.kind) for d in seen.open] == [(d.position, d.kind)
                                                         for d in page["open"]]
    assert json_text(seen.board.view) == json_text(page["view"])
    assert seen.clocks == tuple(page["clocks"][p] for p in sorted(page["clocks"]))
    assert [s.name for s in seen.seats] == [s.name for s in page["seats"]]
    assert json_text(seen.forms.plan) == json_text(page["plan_form"])
    assert json_text(seen.forms.standing) == json_text(page["standing_form"])
    if page["decision"] is None:
        assert seen.mine is None
        return seen
    assert seen.mine is not None
    assert seen.mine.decision.id == page["decision"].id
    assert [c.notation for c in seen.mine.legal] == [format_action(a) for a in page["legal"]]
    assert [c.to_action() for c in seen.mine.legal] == page["legal"]
    assert [c.to_action() for c in seen.mine.email] == page["choices"]
    assert [json_text(c.effect) for c in seen.mine.legal] == [
        json_text(page["effect"](a)) for a in page["legal"]]
    return seen


def decision_form(client, page: str) -> dict[str, str]:
    (form,) = [f for f in forms(client.get(page).get_data(as_text=True))
               if f.attrs.get("id") == "decision"]
    return form.attrs


# --------------------------------------------------------------------------- Cavemen


def test_the_deciding_seat_sees_the_decision_and_legal_actions_of_its_page(table):
    decision = table.open()
    page = path_of(table.page_link(decision))
    seen = assert_as_the_page_has_it(table.app, raw_of(page))
    assert seen.mine is not None and seen.mine.decision.id == decision.id
    assert seen.mine.decision.kind == decision.kind == decision_form(table.client, page)[
        "data-kind"]
    # the email's one-click links are the view's email choices, in the email's order
    assert list(table.one_click(decision).values()) == [c.to_action()
                                                        for c in seen.mine.email]
    assert seen.mine.email
    assert all(c in seen.mine.legal for c in seen.mine.email)
    assert seen.reader.position == decision.position


def test_a_seat_that_is_not_asked_sees_whom_the_game_waits_for_and_has_nothing_to_play(
        table):
    decision = table.open()
    other = next(s for s in table.seats if s.position != decision.position)
    page = path_of(table.inbox.to(other.email)[0].link("/g/"))
    seen = assert_as_the_page_has_it(table.app, raw_of(page))
    assert seen.mine is None
    assert [(d.position, d.mine) for d in seen.open] == [(decision.position, False)]


def test_the_view_follows_the_game_after_a_move_played_on_the_page(table):
    first = table.step()
    decision = table.open()
    assert decision.id != first.id
    seen = assert_as_the_page_has_it(table.app, raw_of(path_of(table.page_link(decision))))
    assert seen.mine is not None and seen.mine.decision.id == decision.id
    assert seen.game.version >= 1


def test_a_one_click_link_reads_the_same_view_as_the_game_page(table):
    decision = table.open()
    url = next(iter(table.one_click(decision)))
    page = path_of(table.page_link(decision))
    with table.app.app_context(), freeze_time(datetime.now(UTC)):
        by_link, by_page = services.seat_view(token_of(url)), services.seat_view(raw_of(page))
    assert by_link == by_page


def test_a_link_that_opens_no_page_reads_no_view(app):
    from pbem.errors import NotFound

    with app.app_context(), pytest.raises(NotFound):
        services.seat_view("x" * 43)


# --------------------------------------------------------------------------- events, talk


def test_events_since_a_point_and_table_talk_with_the_speakers_name(table):
    decision = table.open()
    speaker = table.seats[decision.position]
    page = path_of(table.page_link(decision))
    with table.app.app_context():
        before = services.seat_view(raw_of(page), since=0)
        talk.say(raw_of(page), "Hunt <the> mammoth?")
        after = services.seat_view(raw_of(page), since=before.game.event_seq)
    assert before.events and before.events[0].seq == 1
    assert [e.kind for e in after.events] == ["table_talk"]
    assert [(t.position, t.name, t.text) for t in after.talk] == [
        (speaker.position, speaker.name, "Hunt <the> mammoth?")]
    assert after.since == before.game.event_seq
    assert all(e.seq > after.since for e in after.events)


def test_by_default_the_events_start_after_the_seats_last_news_email(table):
    decision = table.open()
    with table.app.app_context(), read_scope() as s:
        seat = s.exec(select(Seat).where(Seat.game_id == table.game_id,
                                         Seat.position == decision.position)).one()
        seen = services.read_seat_view(s, s.get(Game, table.game_id), seat)
    assert seen.since == seat.seen_event_seq > 0
    assert all(e.seq > seat.seen_event_seq for e in seen.events)


# --------------------------------------------------------------------------- secrets


HELD = ("G01", "G13")  # seat 1's civilization cards


@pytest.fixture
def stone_age(app, client, inbox):
    """A two-player Stone Age game at a built position: seat 0 places, seat 1 holds two
    civilization cards, and the log has a card kept that only seat 1 may read."""
    created = start_game(app, players=PLAYERS[:2], game="stoneage")
    game = Position(app, client, inbox, created.game_id)
    assert game.put(build(board(), board(cards=HELD), phase="place", turn=0)) == 0
    with app.app_context(), session_scope() as s:
        row = s.get(Game, created.game_id)
        row.event_seq += 1
        s.add(EventLog(game_id=row.id, seq=row.event_seq, kind="card_kept", actor=1,
                       data={"card": HELD[0]}, visible_to=[1]))
        s.add(row)
    return game


def test_stone_age_a_seat_sees_the_page_it_is_shown(stone_age):
    for page in stone_age.pages:
        assert_as_the_page_has_it(stone_age.app, raw_of(page))


def test_no_seat_sees_the_cards_another_holds(stone_age):
    with stone_age.app.app_context():
        deciding, holder = (services.seat_view(raw_of(p), since=0) for p in stone_age.pages)
    assert deciding.mine is not None and holder.mine is None
    text = json_text(deciding)
    assert not [card for card in HELD if card in text]
    assert "card_kept" not in [e.kind for e in deciding.events]
    assert deciding.board.view["boards"][1]["cards_held"] == len(HELD)
    # the holder sees its own: the same search finds them in its view
    mine = json_text(holder)
    assert all(card in mine for card in HELD)
    assert "card_kept" in [e.kind for e in holder.events]


def test_a_spectator_sees_no_hidden_card_and_has_nothing_to_play(stone_age):
    with stone_age.app.app_context(), read_scope() as s:
        seen = services.read_seat_view(s, s.get(Game, stone_age.game_id), None)
    assert seen.reader.position is None and seen.mine is None
    assert seen.since == 0 and seen.events
    assert not [card for card in HELD if card in json_text(seen)]


def test_the_view_names_no_address_and_no_link(stone_age):
    with stone_age.app.app_context():
        text = json_text(services.seat_view(raw_of(stone_age.pages[0]), since=0))
    for page in stone_age.pages:
        assert raw_of(page) not in text
    for person in PLAYERS[:2]:
        assert person.email not in text


def test_the_view_is_read_only(stone_age):
    with stone_age.app.app_context():
        seen = services.seat_view(raw_of(stone_age.pages[0]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        seen.mine = None  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        seen.mine.decision.kind = "pass"  # type: ignore[misc, union-attr]


# --------------------------------------------------------------------------- the types


def _types_in(tp: object, seen: set[object]) -> list[object]:
    """Every type named in ``tp``, through unions, generics and the view's dataclasses."""
    if tp in seen:
        return []
    seen.add(tp)
    out = [tp]
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp, vars(view))
        for hint in hints.values():
            out += _types_in(hint, seen)
    for arg in typing.get_args(tp):
        out += _types_in(arg, seen)
    if isinstance(tp, typing.ForwardRef):  # the recursive JSON alias
        out += _types_in(eval(tp.__forward_arg__, vars(view)), seen)  # noqa: S307
    return out


def test_nothing_in_the_view_is_typed_any():
    named = _types_in(view.SeatView, set())
    assert typing.Any not in named
    # the walk reached the leaves: the JSON alias and the times
    assert datetime in named and str in named and view.Choice in named
    assert all(not isinstance(t, types.GenericAlias) or typing.Any not in typing.get_args(t)
               for t in named)


def test_as_json_refuses_what_is_not_json_data():
    data = {"a": [1, (2, None)], "b": {"c": True, "d": 1.5}}
    assert view.as_json(data) is data
    for bad in ({1: "x"}, {"a": {1, 2}}, object(), Action("pass")):
        with pytest.raises(view.NotJSON):
            view.as_json(bad)

