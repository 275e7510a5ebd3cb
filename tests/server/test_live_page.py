"""A game page under way follows the game (issue 20, point 1b): it carries static/live.js
and its own ETag, with which the script asks every few seconds whether anything changed
(answered 304 while nothing did), and a finished game's page runs no such script. The
browser side is tests/browser/test_live_page_in_browser.py. Both databases."""

from __future__ import annotations

import re
from datetime import timedelta

from freezegun import freeze_time
from sqlmodel import select

from pbem.db import session_scope
from pbem.models import Outbox, Seat, utcnow
from pbem.web import fresh
from pbem.web.common import CSP, LOG_FETCH, SCRIPTS
from tests.server.conftest import GAME_SEED, start_game
from tests.server.helpers import SECRET, Inbox, Table, form_signature
from tests.server.test_page_etag import ANN, BOB, CY, etag_of, get, spectator_path, token

LIVE = re.compile(r'<div class="box notice live" id="live" hidden aria-live="polite" '
                  r'data-etag="([^"]*)" data-every="(\d+)"'
                  r'(?: data-here="[^"]+" data-sig="[0-9a-f]+" data-here-every="\d+")?'
                  r' data-page="([^"]+)"'
                  r'( data-reload="true")?>')


def live_box(html: str) -> tuple[str, str, str, bool] | None:
    found = LIVE.search(html)
    if found is None:
        return None
    etag, every, page, reload = found.groups()
    return etag, every, page, bool(reload)


def test_a_seat_page_under_way_names_its_etag_and_the_script_that_asks_with_it(table):
    raw = token(table.app, table.game_id, BOB)
    resp = get(table.client, f"/g/{raw}")
    html = resp.get_data(as_text=True)
    etag, every, page, reload = live_box(html)
    assert etag == etag_of(resp) and page == f"/g/{raw}" and reload
    assert every == "5000"  # LIVE_POLL_SECONDS
    assert '<script src="/static/live.js' in html
    assert resp.headers["Content-Security-Policy"] == CSP + SCRIPTS + LOG_FETCH
    assert fresh.LIVE_TAG.decode() not in html
    assert get(table.client, page, etag).status_code == 304  # as the script asks


def test_the_tag_it_names_moves_with_a_move_the_reader_sees(table: Table):
    raw = token(table.app, table.game_id, ANN)
    etag = live_box(get(table.client, f"/g/{raw}").get_data(as_text=True))[0]
    assert get(table.client, f"/g/{raw}", etag).status_code == 304
    table.step()  # Cy bids first
    changed = get(table.client, f"/g/{raw}", etag)
    assert changed.status_code == 200
    new = live_box(changed.get_data(as_text=True))[0]
    assert new != etag and new == etag_of(changed)


def test_a_page_after_a_form_names_its_tag_and_shows_the_game_without_its_notice(table):
    raw = token(table.app, table.game_id, ANN)
    resp = table.client.post(f"/g/{raw}/vacation",
                             data={"sig": form_signature(SECRET, raw),
                                   "days": "1"}, follow_redirects=False)
    assert resp.status_code == 303  # the answer to a POST is no page (Post/Redirect/Get)
    after = get(table.client, resp.headers["Location"])
    assert after.status_code == 200
    etag, _, page, reload = live_box(after.get_data(as_text=True))
    assert etag == etag_of(after)
    # the script asks for that page with its tag; once the game moves on it shows the
    # game page itself, not the notice that was for then
    assert page == f"/g/{raw}" and not reload
    assert get(table.client, resp.headers["Location"], etag).status_code == 304


def test_the_spectators_page_follows_the_game_too(table):
    path = spectator_path(table.app, table.game_id)
    resp = get(table.client, path)
    etag, _, page, reload = live_box(resp.get_data(as_text=True))
    assert page == path and reload and etag == etag_of(resp)
    assert get(table.client, path, etag).status_code == 304


def test_a_finished_game_runs_no_live_script(table: Table):
    raw = token(table.app, table.game_id, CY)
    assert get(table.client, f"/g/{raw}").get_data(as_text=True).count("live.js") == 1
    done = table.client.post(f"/admin/{table.admin}/abandon", data={
        "sig": form_signature(SECRET, table.admin), "sure": "yes"})
    assert done.status_code == 200, done.get_data(as_text=True)
    html = get(table.client, f"/g/{raw}").get_data(as_text=True)
    assert 'id="result"' in html
    assert live_box(html) is None and "live.js" not in html
    assert fresh.LIVE_TAG.decode() not in html


def test_the_poll_interval_follows_the_configuration(table):
    table.app.config["LIVE_POLL_SECONDS"] = 0.25
    html = get(table.client, f"/g/{token(table.app, table.game_id, ANN)}").get_data(
        as_text=True)
    assert live_box(html)[1] == "250"


# --------------------------------------------------------------------------- present


def here(client, raw: str, sig: str | None = None):
    return client.post(f"/g/{raw}/here",
                       data={"sig": sig if sig is not None else form_signature(SECRET, raw)})


def seen_at(app, game_id: str, position: int):
    with app.app_context(), session_scope() as s:
        return s.exec(select(Seat.page_seen_at).where(Seat.game_id == game_id,
                                                      Seat.position == position)).one()


def decision_row(table: Table, decision_id: int) -> Outbox:
    with table.app.app_context(), session_scope() as s:
        (row,) = [o for o in s.exec(select(Outbox).where(Outbox.template == "decision"))
                  if o.context.get("decision_id") == decision_id]
        return row


def test_a_seat_page_says_it_is_open_and_nothing_it_shows_changes(table: Table):
    raw = token(table.app, table.game_id, ANN)
    page = get(table.client, f"/g/{raw}")
    html = page.get_data(as_text=True)
    assert f'data-here="/g/{raw}/here" data-sig="{form_signature(SECRET, raw)}"' in html
    assert seen_at(table.app, table.game_id, ANN) is None
    assert here(table.client, raw).status_code == 204
    first = seen_at(table.app, table.game_id, ANN)
    assert first is not None
    assert here(table.client, raw).status_code == 204
    assert seen_at(table.app, table.game_id, ANN) == first  # not written again so soon
    assert get(table.client, f"/g/{raw}", etag_of(page)).status_code == 304  # same page


def test_only_the_seats_own_page_link_can_say_so(table: Table):
    raw = token(table.app, table.game_id, ANN)
    assert here(table.client, raw, sig="0" * 64).status_code == 400
    action = token(table.app, table.game_id, ANN, "action")  # opens the page read-only
    assert 'data-here=' not in get(table.client, f"/g/{action}").get_data(as_text=True)
    assert here(table.client, action).status_code == 404
    assert here(table.client, "garbled").status_code == 404
    assert 'data-here=' not in get(table.client, spectator_path(
        table.app, table.game_id)).get_data(as_text=True)
    assert seen_at(table.app, table.game_id, ANN) is None


def waiting_table(make_app) -> Table:
    """The 3-player table on an app whose follow-up emails wait (as in production)."""
    app = make_app(FOLLOW_UP_MINUTES=10)
    created = start_game(app)
    return Table(app, app.test_client(), Inbox(app), created.game_id, created.admin_token,
                 bot_seed=GAME_SEED)


def test_the_email_of_a_decision_shown_on_an_open_page_waits_and_never_goes(make_app):
    table = waiting_table(make_app)
    minutes = 10
    ann = token(table.app, table.game_id, ANN)
    assert here(table.client, ann).status_code == 204  # Ann's page is open
    table.step()  # Cy bids; Ann is next
    decision = table.open()
    assert decision.position == ANN
    row = decision_row(table, decision.id)
    assert row.status == "pending" and row.context["follow_up"]
    assert row.next_attempt_at - row.created_at == timedelta(minutes=minutes)
    assert [m for m in table.inbox.all() if m.decision_id == decision.id] == []
    table.play_on_page(decision, table.bot_choice(decision))  # answered on the page
    with freeze_time(utcnow() + timedelta(minutes=minutes + 1)):
        assert [m for m in table.inbox.all() if m.decision_id == decision.id] == []
    assert decision_row(table, decision.id).status == "skipped"


def test_a_page_not_heard_from_for_a_while_counts_as_closed(make_app):
    table = waiting_table(make_app)
    with table.app.app_context(), session_scope() as s:
        seat = s.exec(select(Seat).where(Seat.game_id == table.game_id,
                                         Seat.position == ANN)).one()
        every = table.app.config["LIVE_HERE_SECONDS"]
        seat.page_seen_at = utcnow() - timedelta(seconds=2 * every + 1)
    table.step()
    decision = table.open()
    assert decision.position == ANN
    assert [m.decision_id for m in table.inbox.all()].count(decision.id) == 1  # at once
    row = decision_row(table, decision.id)
    assert row.status == "sent" and not row.context["follow_up"]
