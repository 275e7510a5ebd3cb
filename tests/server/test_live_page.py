"""A game page under way follows the game (issue 20, point 1b): it carries static/live.js
and its own ETag, with which the script asks every few seconds whether anything changed
(answered 304 while nothing did), and a finished game's page runs no such script. The
browser side is tests/browser/test_live_page_in_browser.py. Both databases."""

from __future__ import annotations

import re

from pbem.web import fresh
from pbem.web.common import CSP, LOG_FETCH, SCRIPTS
from tests.server.helpers import Table, form_signature
from tests.server.test_page_etag import ANN, BOB, CY, etag_of, get, spectator_path, token

LIVE = re.compile(r'<div class="box notice live" id="live" hidden aria-live="polite" '
                  r'data-etag="([^"]*)" data-every="(\d+)" data-page="([^"]+)"'
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


def test_a_page_answering_a_form_names_the_current_tag_and_the_page_to_show(table):
    raw = token(table.app, table.game_id, ANN)
    resp = table.client.post(f"/g/{raw}/vacation",
                             data={"sig": form_signature(table.app.config["SECRET_KEY"], raw),
                                   "days": "1"})
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    assert "ETag" not in resp.headers  # the answer to a POST is no page to revalidate
    etag, _, page, reload = live_box(html)
    assert page == f"/g/{raw}" and not reload  # shown by going to the page, not re-posting
    assert get(table.client, page, etag).status_code == 304


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
        "sig": form_signature(table.app.config["SECRET_KEY"], table.admin), "sure": "yes"})
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
