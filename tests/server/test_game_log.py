"""The game log on the game page: grouped by round, in the order things happened (the
order of the emails), the last two rounds open and older ones folded, loaded on demand
from an endpoint that the page's own link (or key) authorises."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update
from sqlmodel import select

from engine.registry import get_game
from pbem.db import session_scope
from pbem.models import EventLog, Game, Seat
from pbem.tokens import mint
from tests.server.conftest import new_table
from tests.server.helpers import Table, text_of

ROUND_PART = re.compile(r'<(section|details) class="log-round" id="round-(\d+)"')


def page_token(app, game_id: str, position: int) -> str:
    """A fresh game-page link of a seat (as its emails carry)."""
    with app.app_context(), session_scope() as s:
        seat = s.exec(select(Seat).where(Seat.game_id == game_id,
                                         Seat.position == position)).one()
        return mint(s, "page", game_id, seat.id)


def spectator_key(app, game_id: str) -> str:
    with app.app_context(), session_scope() as s:
        return s.get(Game, game_id).spectator_key


def parts(html: str) -> list[tuple[str, int]]:
    """The log's parts in page order: (section = open | details = folded, number)."""
    return [(tag, int(n)) for tag, n in ROUND_PART.findall(html)]


def part_text(html: str, number: int) -> str | None:
    return text_of(html, f"round-{number}")


@pytest.fixture
def round4(saved, app, client, inbox) -> Table:
    """The 3-player table played on until its 4th round has begun (played once per worker
    and database, then copied)."""

    def build() -> Table:
        table = new_table(app, client, inbox)
        table.play_until(lambda decision, state: state.round >= 4)
        return table

    return saved("round4", build)


def test_the_log_runs_oldest_first_with_the_last_two_rounds_open(round4, client):
    raw = page_token(round4.app, round4.game_id, 0)
    html = client.get(f"/g/{raw}").get_data(as_text=True)
    assert parts(html) == [("details", 0), ("details", 1), ("details", 2), ("section", 3),
                           ("section", 4)]
    current = part_text(html, 4)
    assert current.startswith("Round 4")
    # oldest entry first, as the emails tell it: the round's own beginning comes first
    assert re.match(r"Round 4 \S+ \d\d:\d\d \S+ \d\d:\d\d Round 4 begins\.", current), current
    assert re.match(r"Round 3 \S+ \d\d:\d\d \S+ \d\d:\d\d Round 3 begins\.", part_text(html, 3))
    # folded rounds carry no entries, only their link
    for number in (2, 1):
        folded = part_text(html, number)
        assert folded.startswith(f"Round {number} ") and folded.endswith("Show this round")
        assert "begins" not in folded and "bids" not in folded
        assert f'href="/g/{raw}/log/{number}"' in html
    assert "Start of the game" in part_text(html, 0)
    # each entry shows its time, in the reader's zone
    assert re.search(r'<li><time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d\+0[12]:00">', html)  # Berlin


def test_a_folded_round_loads_as_a_fragment_and_as_a_page_of_its_own(round4, client):
    raw = page_token(round4.app, round4.game_id, 1)
    page = client.get(f"/g/{raw}").get_data(as_text=True)
    (src,) = re.findall(r'id="round-2" data-src="([^"]+)"', page)
    assert src == f"/g/{raw}/log/2?part=1"
    fragment = client.get(src)
    assert fragment.status_code == 200
    text = fragment.get_data(as_text=True)
    assert "<html" not in text and text.lstrip().startswith("<ol")
    assert "Round 2 begins." in text and "Round 3 begins." not in text
    assert "Round 1 begins." not in text
    own = client.get(f"/g/{raw}/log/2")
    assert own.status_code == 200
    html = own.get_data(as_text=True)
    assert "<html" in html and f'href="/g/{raw}"' in html
    assert "Round 2 begins." in text_of(html, "log")
    setup = client.get(f"/g/{raw}/log/0?part=1").get_data(as_text=True)
    assert "The game begins." in setup and "Round 1 begins." not in setup
    key = spectator_key(round4.app, round4.game_id)
    watched = client.get(f"/watch/{key}/log/2?part=1").get_data(as_text=True)
    assert "Round 2 begins." in watched


def test_the_game_page_lets_only_its_own_script_fetch_older_rounds(round4, client):
    raw = page_token(round4.app, round4.game_id, 0)
    resp = client.get(f"/g/{raw}")
    policy = resp.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "connect-src 'self'" in policy
    assert "'unsafe-inline'" not in policy
    html = resp.get_data(as_text=True)
    assert re.search(r'<script src="/static/log.js\?v=[0-9a-f]{12}" defer></script>', html)
    with client.get("/static/log.js") as script:
        assert script.status_code == 200 and b"data-src" in script.get_data()


@pytest.mark.parametrize("path", [
    "/g/{bad}/log/1", "/g/{bad}/log/1?part=1", "/g/{raw}/log/5", "/g/{raw}/log/99?part=1",
    "/g/{raw}/log/999999999999999999999999", "/g/{raw}/log/-1", "/g/{raw}/log/abc",
    "/watch/{badkey}/log/1", "/watch/{key}/log/5?part=1", "/watch/not-a-key/log/1",
])
def test_the_round_endpoint_refuses_a_wrong_link_or_round_with_a_clear_404(round4, client,
                                                                              path):
    raw = page_token(round4.app, round4.game_id, 0)
    key = spectator_key(round4.app, round4.game_id)
    url = path.format(raw=raw, key=key, bad="A" * 43, badkey="0" * 16)
    resp = client.get(url)
    assert resp.status_code == 404
    html = resp.get_data(as_text=True)
    assert "<h1" in html  # the friendly error page, never a bare error
    assert any(words in html.lower() for words in (
        "no such round", "unknown or no longer valid", "no game at this address",
        "nothing at this address"))


def test_hidden_events_never_reach_another_seat_in_a_fragment(round4, client):
    """An event only seat 0 may see (as Stone Age's kept cards are) stays out of the
    other seats' and the spectators' log, open or fetched."""
    app, game_id = round4.app, round4.game_id
    with app.app_context(), session_scope() as s:
        starts = [seq for seq, in s.execute(
            select(EventLog.seq).where(EventLog.game_id == game_id,
                                       EventLog.kind == "round_started")
            .order_by(EventLog.seq))]
        hidden = s.execute(select(EventLog.seq).where(
            EventLog.game_id == game_id, EventLog.seq > starts[0], EventLog.seq < starts[1])
            .order_by(EventLog.seq)).scalars().first()
        s.execute(update(EventLog).where(EventLog.game_id == game_id, EventLog.seq == hidden)
                  .values(kind="secret_drawn", visible_to=[0]))
    key = spectator_key(app, game_id)
    owner = page_token(app, game_id, 0)
    assert "secret drawn" in client.get(f"/g/{owner}/log/1?part=1").get_data(as_text=True)
    for url in (f"/g/{page_token(app, game_id, 1)}/log/1?part=1",
                f"/g/{page_token(app, game_id, 2)}/log/1",
                f"/watch/{key}/log/1?part=1", f"/watch/{key}/log/1"):
        text = client.get(url).get_data(as_text=True)
        assert "Round 1 begins." in text and "secret" not in text, url


def test_a_german_reader_gets_german_round_headings(round4, client):
    app, game_id = round4.app, round4.game_id
    with app.app_context(), session_scope() as s:
        s.execute(update(Seat).where(Seat.game_id == game_id, Seat.position == 2)
                  .values(language="de"))
    raw = page_token(app, game_id, 2)
    html = client.get(f"/g/{raw}").get_data(as_text=True)
    assert "Runde 4" in part_text(html, 4) and "Runde 4 beginnt." in part_text(html, 4)
    assert "Spielbeginn" in part_text(html, 0)
    assert "Diese Runde anzeigen" in part_text(html, 2)
    assert "Round" not in text_of(html, "log")
    own = client.get(f"/g/{raw}/log/1").get_data(as_text=True)
    assert "Zurück zur Spielseite" in own and "Runde 1" in own
    missing = client.get(f"/g/{raw}/log/9").get_data(as_text=True)
    assert "Diese Runde gibt es im Spielverlauf nicht." in missing


def test_a_game_without_rounds_shows_its_whole_log_as_one_open_part(round4, client,
                                                                    monkeypatch):
    monkeypatch.delattr(get_game("cavemen"), "ROUND_EVENT")
    raw = page_token(round4.app, round4.game_id, 0)
    html = client.get(f"/g/{raw}").get_data(as_text=True)
    assert parts(html) == [("section", 0)]
    log = text_of(html, "log")
    assert log.index("The game begins.") < log.index("Round 1 begins.") < log.index(
        "Round 4 begins.")
    assert client.get(f"/g/{raw}/log/1").status_code == 404


def test_narrated_entries_kept_between_views_follow_names_language_and_reader(round4,
                                                                              client):
    """The log's narrated entries are kept in the process (``NarratedLog``) between
    views, yet a renamed player (a hand-over), another language or another reader gets
    their own words at the next view, never the kept ones."""
    app, game_id = round4.app, round4.game_id
    narrated = app.extensions["pbem.narrated"]
    raw = page_token(app, game_id, 0)
    first = part_text(client.get(f"/g/{raw}").get_data(as_text=True), 4)
    kept = len(narrated)
    assert kept > 0 and part_text(client.get(f"/g/{raw}").get_data(as_text=True), 4) == first
    assert len(narrated) == kept  # the second view used the kept words
    with app.app_context(), session_scope() as s:
        old = s.exec(select(Seat.name).where(Seat.game_id == game_id,
                                             Seat.position == 1)).one()
        s.execute(update(Seat).where(Seat.game_id == game_id, Seat.position == 1)
                  .values(name="Zed Newcomer"))
    assert old in first
    renamed = part_text(client.get(f"/g/{raw}").get_data(as_text=True), 4)
    assert "Zed Newcomer" in renamed and old not in renamed
    other = part_text(client.get(f"/g/{page_token(app, game_id, 1)}")
                      .get_data(as_text=True), 4)
    assert "You " in other and other != renamed
    with app.app_context(), session_scope() as s:
        s.execute(update(Seat).where(Seat.game_id == game_id, Seat.position == 0)
                  .values(language="de"))
    assert "Runde 4 beginnt." in part_text(client.get(f"/g/{raw}").get_data(as_text=True), 4)


def test_an_entry_shows_its_day_when_it_is_the_first_of_a_day(round4, client):
    """Within an open round, the first entry of each day (in the reader's zone) writes
    the day with its time; the others only the time."""
    app, game_id = round4.app, round4.game_id
    with app.app_context(), session_scope() as s:
        seqs = s.exec(select(EventLog.seq).where(EventLog.game_id == game_id)
                      .order_by(EventLog.seq)).all()
        # every event a day apart at 10:00 UTC (11:00 in Berlin, the reader's zone), far
        # back, so the day is written as a date
        first = datetime(2020, 1, 1, 10, 0, tzinfo=UTC)
        for n, seq in enumerate(seqs):
            s.execute(update(EventLog).where(EventLog.game_id == game_id, EventLog.seq == seq)
                      .values(created_at=first + timedelta(days=n)))
        s.execute(update(EventLog).where(EventLog.game_id == game_id, EventLog.seq == seqs[-1])
                  .values(created_at=first + timedelta(days=len(seqs) - 2, hours=2)))
    html = client.get(f"/g/{page_token(app, game_id, 0)}").get_data(as_text=True)
    times = re.findall(r'<li><time datetime="([^"]+)">([^<]+)</time>', text_of_raw(html, 4))
    assert len(times) >= 3
    *days, (last_iso, last_written) = times
    for iso, written in days:  # each the first of its day: with its date
        day = datetime.fromisoformat(iso)
        assert written == f"{day.day} {day.strftime('%b')} {day.year}, 11:00", (iso, written)
    assert last_iso.endswith("T13:00+01:00") and last_written == "13:00"  # same day as before


def text_of_raw(html: str, number: int) -> str:
    """The HTML of the log's part ``number``."""
    found = re.search(rf'id="round-{number}".*?</(section|details)>', html, re.S)
    assert found, number
    return found.group(0)


def test_narrated_log_keeps_at_most_its_limit():
    from flask import Flask
    from flask_babel import Babel

    from pbem.narrate import NarratedLog

    app = Flask("t")
    Babel(app)
    log = NarratedLog(limit=8)
    game = type("G", (), {"id": "g1"})()
    calls = []

    def event(e, names, card, me):
        calls.append(e.seq)
        return f"said {e.seq}"

    with app.test_request_context():
        for seq in range(20):
            e = type("E", (), {"seq": seq, "kind": "k", "actor": 0, "raw": f'{{"n": {seq}}}'})()
            assert log(event, game, e, ["Ann"], None) == f"said {seq}"
            assert log(event, game, e, ["Ann"], None) == f"said {seq}"  # kept: no new call
        assert len(log) <= 8 and calls == list(range(20))
