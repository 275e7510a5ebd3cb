"""No input gives a 500: garbage in every field and path, wrong methods, forged forms.

Each test sends a family of bad requests to one route and checks that every answer is a
clear 4xx page and that nothing was written. (The app runs with TESTING, so an unhandled
exception would surface here as an error rather than hide behind the 500 page.)
"""

from __future__ import annotations

import pytest

from pbem.tokens import form_signature
from tests.server.helpers import (
    SECRET,
    create_on_web,
    forms,
    open_decisions,
    path_of,
    snapshot,
    text_of,
)

GARBAGE = [
    "",
    " ",
    "x",
    "A" * 10_000,
    "ü€😀 Ω",
    "\x00",
    "a\x00b",
    "\r\nX-Injected: 1",
    "'; DROP TABLE game; --",
    "<script>alert(1)</script>",
    "-1",
    "0",
    "99999999999999999999999",
    "1e999",
    "nan",
    "inf",
    "%s%n",
    "../../etc/passwd",
]


def assert_clean_refusal(resp, allowed=(400, 404, 405, 409)) -> None:
    body = resp.get_data(as_text=True)
    assert resp.status_code in allowed, (resp.status_code, body[:500])
    assert "Traceback" not in body


def page_of(table, decision):
    url = path_of(table.mail(decision).link("/g/"))
    raw = url.rsplit("/", 1)[1]
    return url, raw, form_signature(SECRET, raw)


# --------------------------------------------------------------------------- the game page


def test_game_page_form_with_missing_or_garbage_fields_is_refused(app, client, table):
    decision = table.open()
    url, _, sig = page_of(table, decision)
    did = str(decision.id)
    cases = [{}, {"sig": sig}, {"sig": "x" * 5000, "decision_id": did, "choice": "pass"}]
    cases += [{"sig": sig, "decision_id": g, "choice": "pass"} for g in GARBAGE]
    cases += [{"sig": sig, "decision_id": did, "choice": g} for g in GARBAGE]
    cases += [{"sig": sig, "decision_id": did, "choice": "bid", "bid.amount": g} for g in GARBAGE]
    cases += [{"sig": sig, "decision_id": did}, {"sig": sig, "decision_id": did, "choice": ""}]
    before = snapshot(app)
    for data in cases:
        resp = client.post(url, data=data)
        assert_clean_refusal(resp)
    assert snapshot(app) == before


def test_illegal_choices_on_the_game_page_are_refused_with_the_reason(app, client, table):
    decision = table.open()  # a bid: Cy holds 4 Teeth
    url, _, sig = page_of(table, decision)
    base = {"sig": sig, "decision_id": str(decision.id)}
    before = snapshot(app)
    for extra in ({"choice": "forage"}, {"choice": "hunt B01"}, {"choice": "bid 5"},
                  {"choice": "bid", "bid.amount": "5"}, {"choice": "bid", "bid.amount": "0"},
                  {"choice": "bid", "bid.amount": "-3"}, {"choice": "lose C01"}):
        resp = client.post(url, data={**base, **extra})
        assert resp.status_code == 400, extra
        html = resp.get_data(as_text=True)
        assert text_of(html, "error") == BID_RULE, extra  # says what to do instead
        assert any(f.attrs.get("id") == "decision" for f in forms(html))  # and asks again
    # A discard while bidding gets past the form reader; the engine refuses it.
    resp = client.post(url, data={**base, "kind": "discard", "discard.cards": ["X"]})
    assert resp.status_code == 400
    assert text_of(resp.get_data(as_text=True), "error") == BID_RULE
    assert snapshot(app) == before


BID_RULE = "Bid more than the highest bid so far and no more than your Teeth, or pass."


def test_forged_decision_ids_are_refused(app, client, table):
    bidder = table.open()
    others = [s for s in table.seats if s.position != bidder.position]
    # Another seat's page, posting the bidder's decision id.
    other_page = path_of(table.inbox.to(others[0].email, "game_started")[0].link("/g/"))
    other_sig = form_signature(SECRET, other_page.rsplit("/", 1)[1])
    before = snapshot(app)
    resp = client.post(other_page, data={"sig": other_sig, "decision_id": str(bidder.id),
                                         "choice": "pass"})
    assert resp.status_code == 404
    assert "does not belong" in resp.get_data(as_text=True)
    assert snapshot(app) == before
    # The bidder's own page, a decision id that does not exist.
    url, _, sig = page_of(table, bidder)
    resp = client.post(url, data={"sig": sig, "decision_id": str(bidder.id + 1000),
                                  "choice": "pass"})
    assert resp.status_code == 404
    # A decision already taken: recorded, whatever the form says now.
    table.step()
    resp = client.post(url, data={"sig": sig, "decision_id": str(bidder.id),
                                  "choice": "bid", "bid.amount": "1"})
    assert resp.status_code == 409
    assert "already recorded" in resp.get_data(as_text=True)


def test_a_decision_of_another_game_is_refused(app, client, table):
    from tests.server.conftest import start_game

    start_game(app)
    theirs = open_decisions(app, [g for g in _game_ids(app) if g != table.game_id][0])[0]
    url, _, sig = page_of(table, table.open())
    before = snapshot(app)
    resp = client.post(url, data={"sig": sig, "decision_id": str(theirs.id),
                                  "choice": "pass"})
    assert resp.status_code == 404
    assert snapshot(app) == before


def _game_ids(app):
    from sqlmodel import select

    from pbem.db import session_scope
    from pbem.models import Game

    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Game.id)))


def is_discard(decision, state) -> bool:
    return decision.kind == "discard"


def test_discard_with_the_wrong_number_of_cards_is_refused(app, client, table):
    decision = table.play_until(is_discard)
    state = table.state()
    pool = list(state.pool)
    need = len(pool) - 3  # the form asks to discard down to 3 cards
    assert need >= 1, pool
    url, _, sig = page_of(table, decision)
    base = {"sig": sig, "decision_id": str(decision.id), "kind": "discard"}
    before = snapshot(app)
    wrong = [[], pool[: need - 1], pool[: need + 1], pool, pool[: need - 1] + ["ZZ99"],
             ["\x00"] * need, ["A" * 5000] * need]
    for cards in wrong:
        resp = client.post(url, data={**base, "discard.cards": cards})
        assert resp.status_code == 400, cards
        assert text_of(resp.get_data(as_text=True), "error")
    assert snapshot(app) == before
    # The right number, in any order, is taken.
    choice = table.bot_choice(decision)
    resp = client.post(url, data={**base, "discard.cards": list(reversed(choice.get("cards")))})
    assert resp.status_code == 200
    assert open_decisions(app, table.game_id)[0].kind == "bid"


# --------------------------------------------------------------------------- other routes


WRONG_METHODS = [
    ("PATCH", "/new"), ("PUT", "/new"), ("DELETE", "/"), ("POST", "/"), ("POST", "/healthz"),
    ("PUT", "/a/" + "A" * 43), ("DELETE", "/g/" + "A" * 43), ("PATCH", "/invite/x"),
    ("GET", "/admin/x/replace"), ("GET", "/admin/x/pause"), ("PUT", "/host/confirm/x"),
    ("OPTIONS", "/a/x"), ("GET", "/g/x/vacation"),
]


@pytest.mark.parametrize(("method", "path"), WRONG_METHODS)
def test_wrong_methods_get_a_clean_405(client, method, path):
    resp = client.open(path, method=method)
    if method == "OPTIONS":
        assert resp.status_code == 200  # Flask answers OPTIONS itself, changing nothing
    else:
        assert resp.status_code == 405
        assert 'id="error"' in resp.get_data(as_text=True)


def test_one_click_links_with_garbage_forms_change_nothing(app, client, table):
    links = [path_of(u) for u in table.mail(table.open()).action_links()]
    before = snapshot(app)
    for url in links:
        for data in [{}, {"sig": ""}, {"sig": "\x00"}, {"sig": "x" * 10_000},
                     {"sig": form_signature(SECRET, "A" * 43)}]:
            assert_clean_refusal(client.post(url, data=data), allowed=(400,))
    assert snapshot(app) == before


@pytest.mark.parametrize("route", ["/a/", "/g/", "/admin/", "/invite/", "/host/confirm/",
                                   "/watch/", "/dev/mail/", "/my/"])
def test_garbage_paths_get_404_never_500(client, route):
    for junk in ["x", "%00", "a%00b", "%ff", "ü" * 50, "A" * 20_000, "..%2f..%2f", "%0d%0a"]:
        for method in ("GET", "POST"):
            resp = client.open(route + junk, method=method, data={"sig": "x"})
            assert_clean_refusal(resp, allowed=(400, 404, 405))


def test_new_game_form_with_garbage_never_fails_and_writes_nothing_when_refused(app,
                                                                                client):
    client.get("/")
    with client.session_transaction() as sess:
        csrf = sess["csrf"]
    good = {"csrf": csrf, "name0": "Ann", "email0": "ann@example.com",
            "name1": "Bob", "email1": "bob@example.com"}
    cases = [{}, {"csrf": csrf}, {**good, "csrf": "x"}, {**good, "name0": "", "email0": ""}]
    for field in ("name0", "email0", "name1", "email1", "lang0", "tz0", "tz1", "hours",
                  "game", "reminders", "absent_after", "absent_bot", "vacation_days"):
        cases += [{**good, field: junk} for junk in GARBAGE]
    for data in cases:
        before = snapshot(app)
        resp = client.post("/new", data=data)
        assert_clean_refusal(resp, allowed=(200, 400))  # some junk is fine: "x" is a name
        values = [v for k, v in data.items() if k != "csrf"]
        if any(v == "A" * 10_000 or "\x00" in v or "\n" in v.strip() or "<" in v
               for v in values):
            assert resp.status_code == 400, data
        if resp.status_code == 400:
            assert text_of(resp.get_data(as_text=True), "error"), data
            assert snapshot(app) == before, data


def test_new_game_with_a_garbage_title_is_refused_with_the_reason(app, client, inbox):
    client.get("/")
    with client.session_transaction() as sess:
        csrf = sess["csrf"]
    player = {"name0": "Ann", "email0": "ann@example.com", "name1": "Bob",
              "email1": "bob@example.com"}
    before = snapshot(app)
    for title, reason in [("A\x00B\r\nBcc: x@example.com", "line breaks"),
                          ("t" * 101, "longer than 100")]:
        resp = client.post("/new", data={"csrf": csrf, "title": title, **player})
        assert resp.status_code == 400
        assert reason in text_of(resp.get_data(as_text=True), "error")
    assert snapshot(app) == before and inbox.all() == []


def test_admin_forms_with_garbage_are_refused(app, client, table):
    admin = f"/admin/{table.admin}"
    sig = form_signature(SECRET, table.admin)
    before = snapshot(app)
    for control in ("replace", "handover", "bot", "extend", "nope"):
        for data in [{}, {"sig": "x"}, {"sig": sig}]:
            assert_clean_refusal(client.post(f"{admin}/{control}", data=data))
        for junk in GARBAGE:
            data = {"sig": sig, "position": junk, "name": junk, "email": junk, "lang": junk,
                    "tz": junk, "hours": junk, "bot": junk or "x"}
            assert_clean_refusal(client.post(f"{admin}/{control}", data=data))
    assert snapshot(app) == before


def test_player_extras_with_garbage_are_refused(app, client, table):
    url, raw, sig = page_of(table, table.open())
    before = snapshot(app)
    for junk in GARBAGE:
        assert_clean_refusal(client.post(f"{url}/vacation", data={"sig": sig, "days": junk}))
    assert_clean_refusal(client.post(f"{url}/back", data={"sig": sig}))
    assert_clean_refusal(client.post(f"{url}/vacation", data={"days": "1"}))
    assert snapshot(app) == before


def test_invitation_and_host_links_refuse_garbage_forms(app, client):
    host_mail = create_on_web(client, app)
    confirm = path_of(host_mail.link("/host/confirm/"))
    before = snapshot(app)
    for data in [{}, {"sig": ""}, {"sig": "x" * 10_000}, {"sig": "\x00"}]:
        assert_clean_refusal(client.post(confirm, data=data), allowed=(400,))
    assert snapshot(app) == before



# --------------------------------------------------------------------------- issue 32-33 routes


@pytest.mark.parametrize("action", ["host", "stop", "open"])
def test_garbage_my_games_links_are_refused_and_write_nothing(app, client, action):
    """My games' new buttons (open the host page, stop every link) with a link that is
    garbage, CR/LF, huge or a forged token: 404, nothing written, nothing mailed."""
    before = snapshot(app)
    for junk in ["x", "%0d%0aX-Injected:%201", "A" * 20_000, "B" * 43, "%00"]:
        resp = client.post(f"/my/{junk}/{action}", data={"sig": "x"})
        assert_clean_refusal(resp, allowed=(400, 404, 405))
    assert snapshot(app) == before


def test_health_and_metrics_take_garbage_without_a_500(make_app):
    app = make_app(METRICS=True, METRICS_TOKEN="s3cret-metrics-token")
    client = app.test_client()
    for junk in GARBAGE:
        resp = client.get("/healthz", query_string={"deep": junk})
        assert resp.status_code in (200, 503), (junk, resp.status_code)
        safe = junk.replace("\r", "").replace("\n", "").replace("\x00", "")
        resp = client.get("/metrics", headers={"Authorization": f"Bearer {safe}"})
        assert resp.status_code == 401, (junk, resp.status_code)
    assert client.get("/metrics", headers={
        "Authorization": "Bearer s3cret-metrics-token"}).status_code == 200
