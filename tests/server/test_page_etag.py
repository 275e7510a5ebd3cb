"""A game page answers "has anything changed for me?" cheaply (issue 19, point 5): its ETag
names what it shows, a GET whose ``If-None-Match`` holds the current ETag is answered 304
from one indexed read (no state, no log, no template, no write lock), and every kind of
change its reader could see gives a new ETag. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import event
from sqlmodel import select

from pbem import services
from pbem.db import get_engine, session_scope
from pbem.models import Game, Seat
from pbem.tokens import mint
from pbem.web import fresh
from pbem.web.common import CSP, LOG_FETCH, SCRIPTS
from tests.server.conftest import new_table
from tests.server.helpers import Table, forms, holding_game, token_of
from tests.server.timekit import T0, at

ANN, BOB, CY = 0, 1, 2  # seat positions; Cy bids first


def token(app, game_id: str, position: int, kind: str = "page") -> str:
    """A fresh link of a seat: its game page (``page``) or a one-click link (``action``,
    which opens the page read-only)."""
    with app.app_context(), session_scope() as s:
        seat = s.exec(select(Seat).where(Seat.game_id == game_id,
                                         Seat.position == position)).one()
        return mint(s, kind, game_id, seat.id)


def spectator_path(app, game_id: str) -> str:
    with app.app_context(), session_scope() as s:
        return f"/watch/{s.get(Game, game_id).spectator_key}"


def get(client, path: str, etag: str | None = None, **headers: str):
    if etag is not None:
        headers["If-None-Match"] = f'"{etag}"'
    return client.get(path, headers=headers)


def etag_of(resp) -> str:
    tag, weak = resp.get_etag()
    assert tag and not weak, resp.headers
    return tag


# --------------------------------------------------------------------------- 200, then 304


def test_the_page_has_an_etag_and_the_same_etag_gets_304_with_no_body(table):
    path = f"/g/{token(table.app, table.game_id, ANN)}"
    page = get(table.client, path)
    assert page.status_code == 200
    assert page.headers["Cache-Control"] == "private, no-cache"
    again = get(table.client, path, etag_of(page))
    assert again.status_code == 304
    assert again.get_data() == b""
    assert etag_of(again) == etag_of(page)
    for header in ("Cache-Control", "Content-Security-Policy", "X-Frame-Options",
                   "X-Content-Type-Options", "Referrer-Policy"):
        assert again.headers[header] == page.headers[header], header


def test_a_weak_or_listed_tag_matches_too(table):
    """A proxy that compresses may weaken the tag; a browser may send several."""
    path = f"/g/{token(table.app, table.game_id, ANN)}"
    tag = etag_of(get(table.client, path))
    for header in (f'W/"{tag}"', f'"other", "{tag}"'):
        assert table.client.get(path, headers={"If-None-Match": header}).status_code == 304


@pytest.mark.parametrize("header", ['"nonsense"', '"0.0.p"', "*", '""'])
def test_a_tag_that_is_not_the_pages_gets_the_page(table, header):
    path = f"/g/{token(table.app, table.game_id, ANN)}"
    resp = table.client.get(path, headers={"If-None-Match": header})
    assert resp.status_code == 200
    assert 'id="log"' in resp.get_data(as_text=True)


def test_the_spectators_page_answers_304_too_and_varies_with_the_language(table):
    path = spectator_path(table.app, table.game_id)
    page = get(table.client, path, **{"Accept-Language": "en"})
    assert page.status_code == 200
    assert {"Cookie", "Accept-Language"} <= set(page.vary)
    again = get(table.client, path, etag_of(page), **{"Accept-Language": "en"})
    assert again.status_code == 304 and again.get_data() == b""
    assert {"Cookie", "Accept-Language"} <= set(again.vary)
    german = get(table.client, path, etag_of(page), **{"Accept-Language": "de"})
    assert german.status_code == 200 and etag_of(german) != etag_of(page)
    assert '<html lang="de">' in german.get_data(as_text=True)
    table.client.set_cookie("lang", "de")  # the page's language switch
    assert get(table.client, path, etag_of(page),
               **{"Accept-Language": "en"}).status_code == 200
    assert get(table.client, path, etag_of(german),
               **{"Accept-Language": "en"}).status_code == 304


def test_the_spectators_page_at_another_address_is_another_page(table):
    """Its language switch sends the address back: a query string is part of the page."""
    path = spectator_path(table.app, table.game_id)
    tag = etag_of(get(table.client, path))
    assert get(table.client, f"{path}?from=mail", tag).status_code == 200


def test_a_seats_page_speaks_the_seats_language_whatever_the_request_asks(table):
    """The request's language changes neither the seat's page nor its ETag."""
    path = f"/g/{token(table.app, table.game_id, ANN)}"
    english = get(table.client, path, **{"Accept-Language": "en"})
    german = get(table.client, path, **{"Accept-Language": "de"})
    assert german.get_data() == english.get_data()
    table.client.set_cookie("lang", "de")
    assert get(table.client, path, etag_of(english)).status_code == 304
    assert get(table.client, path).get_data() == english.get_data()


def test_a_one_click_link_opens_another_page_than_the_game_page_link(table):
    """A one-click link opens the page read-only: another page, another ETag."""
    page = get(table.client, f"/g/{token(table.app, table.game_id, CY)}")
    action_path = f"/g/{token(table.app, table.game_id, CY, 'action')}"
    readonly = get(table.client, action_path, etag_of(page))
    assert readonly.status_code == 200
    assert 'id="readonly"' in readonly.get_data(as_text=True)
    assert etag_of(readonly) != etag_of(page)
    assert get(table.client, action_path, etag_of(readonly)).status_code == 304


def test_the_forms_of_a_page_confirmed_by_a_304_still_work(table):
    """The page's forms carry no per-request secret: a signature of its link (HMAC with
    the app's key), the same on every render."""
    path = f"/g/{token(table.app, table.game_id, ANN)}"
    page = get(table.client, path)
    assert get(table.client, path, etag_of(page)).status_code == 304
    (vacation,) = [f for f in forms(page.get_data(as_text=True)) if f.action.endswith(
        "/vacation")]
    resp = table.client.post(vacation.action, data=vacation.data(days="1"))
    assert resp.status_code == 200
    assert 'id="notice"' in resp.get_data(as_text=True)


def test_another_secret_key_gets_the_page_again(table, make_app):
    """The forms' signatures are made with the key: pages signed with an old key are
    not confirmed."""
    path = f"/g/{token(table.app, table.game_id, ANN)}"
    tag = etag_of(get(table.client, path))
    assert get(make_app().test_client(), path, tag).status_code == 304
    assert get(make_app(SECRET_KEY="another key").test_client(), path, tag).status_code == 200


def test_another_code_version_gets_the_page_again(table, monkeypatch):
    """A deploy (templates, code, catalogs) changes every ETag."""
    path = f"/g/{token(table.app, table.game_id, ANN)}"
    tag = etag_of(get(table.client, path))
    monkeypatch.setattr(fresh, "build_id", lambda: "another version")
    assert get(table.client, path, tag).status_code == 200


def test_the_code_version_is_a_hash_of_the_files_that_render_pages():
    assert fresh.build_id() == fresh.build_id()
    assert len(fresh.build_id()) == 64


# --------------------------------------------------------------------------- what changes


def _hand_over(table: Table) -> None:
    services.hand_over(table.admin, CY, services.PlayerIn("Dee", "dee@example.com"))
    table.inbox.deliver()
    (invite,) = table.inbox.to("dee@example.com", "handover_invite")
    services.answer_handover(token_of(invite.text_links()[0]), True)


def _timezone(table: Table) -> None:
    with session_scope() as s:  # as a host would edit it by hand; no page offers it
        seat = s.exec(select(Seat).where(Seat.game_id == table.game_id,
                                         Seat.position == ANN)).one()
        seat.timezone = "Asia/Tokyo"


def _reminder(table: Table) -> None:
    decision = table.open()
    assert services.send_reminder(decision.id, decision.deadline_at - timedelta(hours=1))


# Each change as seen from Ann's page: (before it, if anything; the change). The page
# tokens of the seats are passed in by position.
CHANGES: dict[str, tuple[Callable | None, Callable]] = {
    "a move": (None, lambda t, raws: t.step()),
    "pause": (None, lambda t, raws: services.pause_game(t.admin)),
    "resume": (lambda t, raws: services.pause_game(t.admin),
               lambda t, raws: services.resume_game(t.admin)),
    "deadline extended": (None, lambda t, raws: services.extend_deadline(t.admin, 24)),
    "another's vacation": (None, lambda t, raws: services.take_vacation(raws[CY], 1)),
    "a reminder": (None, lambda t, raws: _reminder(t)),
    "own language": (None, lambda t, raws: services.set_language(raws[ANN], "de")),
    "own time zone": (None, lambda t, raws: _timezone(t)),
    "own emails muted": (None, lambda t, raws: services.set_notifications(raws[ANN], "mute")),
    "a seat handed over": (None, lambda t, raws: _hand_over(t)),
    "a player leaves": (None, lambda t, raws: services.set_notifications(raws[BOB], "leave")),
    "a bot takes a seat": (None, lambda t, raws: services.set_bot(t.admin, BOB, "heuristic")),
    "the game abandoned": (None, lambda t, raws: services.abandon_game(t.admin)),
}


@pytest.mark.parametrize("change", CHANGES)
def test_every_change_the_reader_can_see_gives_a_new_etag(table, change):
    before, act = CHANGES[change]
    raws = [token(table.app, table.game_id, p) for p in (ANN, BOB, CY)]
    if before is not None:
        with table.app.app_context():
            before(table, raws)
    path = f"/g/{raws[ANN]}"
    page = get(table.client, path)
    tag = etag_of(page)
    assert get(table.client, path, tag).status_code == 304
    with table.app.app_context():
        act(table, raws)
    now = get(table.client, path, tag)
    assert now.status_code == 200, change
    assert etag_of(now) != tag
    assert get(table.client, path, etag_of(now)).status_code == 304


def test_the_spectators_page_changes_with_a_move(table):
    path = spectator_path(table.app, table.game_id)
    tag = etag_of(get(table.client, path))
    table.step()
    assert get(table.client, path, tag).status_code == 200


def test_an_email_delivered_changes_no_page(table):
    """A seat's ``seen_event_seq`` moves with each email it is sent; no page shows it."""
    path = f"/g/{token(table.app, table.game_id, ANN)}"
    table.step()
    tag = etag_of(get(table.client, path))
    assert table.inbox.deliver()["sent"] > 0
    assert get(table.client, path, tag).status_code == 304


def test_a_page_read_with_its_words_for_the_time_changes_with_the_clock(app, game, frozen):
    """A time of the log within five days of now is written with its weekday ("Mon
    10:00" for Ann, in Berlin), later with its date: the ETag says until when it holds."""
    client = app.test_client()
    path = f"/g/{token(app, game.game_id, ANN)}"
    page = get(client, path)
    tag = etag_of(page)
    assert ">Mon 10:00<" in page.get_data(as_text=True)
    at(frozen, 5 * 24 - 1)
    assert get(client, path, tag).status_code == 304
    at(frozen, 5 * 24 + 1)
    later = get(client, path, tag)
    assert later.status_code == 200
    assert ">Mon 10:00<" not in later.get_data(as_text=True)
    assert "14 Jan 2030, 10:00" in later.get_data(as_text=True)
    assert etag_of(later) != tag
    assert get(client, path, etag_of(later)).status_code == 304


def test_words_that_move_with_the_clock_say_until_when_they_hold(app, frozen):
    from pbem import i18n

    with app.test_request_context("/"):
        assert i18n.changes_at() is None
        i18n.short_time(T0 - timedelta(days=10), "UTC")  # a date: it stays one
        assert i18n.changes_at() is None
        i18n.short_time(T0 - timedelta(days=1), "UTC")  # a weekday, for four days more
        assert i18n.changes_at() == T0 + timedelta(days=4)
        i18n.short_time(T0 + timedelta(days=8), "UTC")  # a date, a weekday in three days
        assert i18n.changes_at() == T0 + timedelta(days=3)
        i18n.time_until(T0 + timedelta(hours=5))  # "in 5 hours": not for long
        assert i18n.changes_at() == T0

    with app.test_request_context("/"):  # many at once: each as alone, the first change
        whens = [T0 - timedelta(days=10), None, T0 - timedelta(days=1), T0 + timedelta(days=8)]
        alone = [i18n.short_time(w, "Europe/Berlin") for w in whens]
        first = i18n.changes_at()
    with app.test_request_context("/"):
        assert i18n.short_times(whens, "Europe/Berlin") == alone
        assert alone[1] == "" and alone[2].startswith(("Mon", "Tue", "Wed", "Thu", "Fri", "Sat",
                                                       "Sun"))
        assert i18n.changes_at() == first == T0 + timedelta(days=3)


# --------------------------------------------------------------------------- a bad link: never 304


@pytest.mark.parametrize("raw", ["garbled", "x" * 43, "a" * 42 + "%"])
def test_a_bad_link_gets_its_clear_page_whatever_tag_it_sends(table, raw):
    path = f"/g/{token(table.app, table.game_id, ANN)}"
    tag = etag_of(get(table.client, path))
    resp = get(table.client, f"/g/{raw}", tag)
    assert resp.status_code == 404
    assert "This link is unknown or no longer valid." in resp.get_data(as_text=True)


def test_a_link_of_another_kind_gets_its_clear_page_not_304(table):
    """The host's link opens the host page, not a game page."""
    tag = etag_of(get(table.client, f"/g/{token(table.app, table.game_id, ANN)}"))
    resp = get(table.client, f"/g/{table.admin}", tag)
    assert resp.status_code == 404
    assert "This link is unknown or no longer valid." in resp.get_data(as_text=True)


def test_a_link_killed_by_a_hand_over_gets_its_clear_page_not_304(table):
    path = f"/g/{token(table.app, table.game_id, CY)}"
    tag = etag_of(get(table.client, path))
    with table.app.app_context():
        _hand_over(table)
    resp = get(table.client, path, tag)
    assert resp.status_code == 404
    assert "This link is unknown or no longer valid." in resp.get_data(as_text=True)


def test_an_unknown_spectator_address_gets_its_clear_page(table):
    path = spectator_path(table.app, table.game_id)
    tag = etag_of(get(table.client, path))
    for other in ("/watch/0123456789abcdef", "/watch/not-a-key"):
        resp = get(table.client, other, tag)
        assert resp.status_code == 404
        assert "No game at this address." in resp.get_data(as_text=True)


# --------------------------------------------------------------------------- cheap


def test_a_304_reads_one_row_and_loads_no_state(table, monkeypatch):
    path = f"/g/{token(table.app, table.game_id, ANN)}"
    tag = etag_of(get(table.client, path))
    statements: list[str] = []

    def spy(conn, cursor, statement, *args):
        statements.append(statement)

    def forbidden(*args, **kwargs):
        raise AssertionError("a 304 built the page")

    monkeypatch.setattr(services.reading, "load_state", forbidden)
    monkeypatch.setattr(services.reading, "_page_data", forbidden)
    monkeypatch.setattr("pbem.web.play.render_template", forbidden)
    engine = get_engine(table.app)
    event.listen(engine, "before_cursor_execute", spy)
    try:
        assert get(table.client, path, tag).status_code == 304
    finally:
        event.remove(engine, "before_cursor_execute", spy)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 1, statements
    assert "state" not in selects[0] and "event_log" not in selects[0].lower()
    assert len(statements) <= 3, statements  # BEGIN and a PRAGMA at most besides


def test_a_304_takes_no_write_lock(app, table):
    """Another connection holds the write lock (SQLite) or the game row (PostgreSQL); the
    304 answers at once."""
    path = f"/g/{token(app, table.game_id, ANN)}"
    tag = etag_of(get(table.client, path))
    with holding_game(app, table.game_id), ThreadPoolExecutor(1) as pool:
        resp = pool.submit(lambda: get(table.client, path, tag)).result(timeout=10)
    assert resp.status_code == 304


# --------------------------------------------------------------------------- the log's script


@pytest.fixture
def folded(saved, app, client, inbox) -> Table:
    """A table whose log has folded rounds (the 4th round begun): its page runs a
    script, allowed by its security policy."""

    def build() -> Table:
        table = new_table(app, client, inbox)
        table.play_until(lambda decision, state: state.round >= 4)
        return table

    return saved("etag_round4", build)


def test_a_304_carries_the_security_policy_of_the_page_it_confirms(folded):
    path = f"/g/{token(folded.app, folded.game_id, ANN)}"
    page = get(folded.client, path)
    assert page.headers["Content-Security-Policy"] == CSP + SCRIPTS + LOG_FETCH
    again = get(folded.client, path, etag_of(page))
    assert again.status_code == 304
    assert again.headers["Content-Security-Policy"] == CSP + SCRIPTS + LOG_FETCH
