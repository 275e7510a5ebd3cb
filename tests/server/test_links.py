"""One-time links from emails: tokens, confirmation pages, the acting POST, closed turns."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from sqlmodel import select

from engine.core import Action
from pbem import services
from pbem.db import session_scope
from pbem.models import Decision, Move
from pbem.tokens import form_signature
from tests.server.conftest import start_game
from tests.server.helpers import (
    PLAYERS,
    SECRET,
    TOKEN_IN_URL_RE,
    Table,
    all_stored_text,
    forms,
    game_state,
    load,
    only_form,
    open_decisions,
    page_form_data,
    path_of,
    snapshot,
    text_of,
    token_of,
    token_row,
)


def moves(app, game_id):
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Move).where(Move.game_id == game_id).order_by(Move.id)))


def link_for(table, decision, wanted: Action) -> str:
    for url, action in table.one_click(decision).items():
        if action == wanted:
            return path_of(url)
    raise AssertionError(f"no one-click link for {wanted}")


PASS = Action.of("pass")


# --------------------------------------------------------------------------- tokens


def test_tokens_are_random_url_safe_and_distinct(table):
    raws = [token_of(u) for m in table.inbox.all() for u in m.token_links()]
    # 3 emails: a bid (pass + bids 1..4 + the page) and two game_started (the page),
    # each with its "all your games" link and its unsubscribe link.
    assert len(raws) == 14
    assert len(set(raws)) == len(raws)
    assert all(TOKEN_IN_URL_RE.search(f"/a/{raw}") for raw in raws)
    assert len({raw[:8] for raw in raws}) == len(raws)  # no shared prefix: not a counter


def test_database_holds_only_the_sha256_of_each_token(app, table):
    raws = [token_of(u) for m in table.inbox.all() for u in m.token_links()]
    stored = all_stored_text(app)
    for raw in raws:
        assert raw not in stored
        digest = hashlib.sha256(raw.encode()).hexdigest()
        assert token_row(app, raw).hash == digest
        assert digest in stored


def test_one_click_token_is_bound_to_one_decision_and_one_action(app, table):
    decision = table.open()
    links = table.one_click(decision)
    assert list(links.values()) == [PASS, *(Action.of("bid", amount=n) for n in range(1, 5))]
    for url in links:
        row = token_row(app, token_of(url))
        assert (row.kind, row.decision_id, row.seat_id) == ("action", decision.id,
                                                            decision.seat_id)


# --------------------------------------------------------------------------- safe GET


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_get_or_head_of_a_link_changes_nothing(app, client, table, method):
    decision = table.open()
    url = link_for(table, decision, Action.of("bid", amount=2))
    before = snapshot(app)
    resp = client.open(url, method=method)
    assert resp.status_code == 200
    assert snapshot(app) == before


def test_get_shows_a_confirmation_page_naming_the_action(client, table):
    decision = table.open()
    name = table.seats[decision.position].name
    page = client.get(link_for(table, decision, Action.of("bid", amount=3)))
    html = page.get_data(as_text=True)
    assert text_of(html, "action") == "Bid 3 Teeth"
    assert f"{name}, you chose:" in html
    form = only_form(html)
    assert form.method == "post"
    assert set(form.hidden) == {"sig"}


# --------------------------------------------------------------------------- acting POST


def test_post_without_sig_is_refused_and_changes_nothing(app, client, table):
    url = link_for(table, table.open(), PASS)
    before = snapshot(app)
    resp = client.post(url, data={})
    assert resp.status_code == 400
    assert "did not come from this site" in resp.get_data(as_text=True)
    assert snapshot(app) == before


def test_post_with_the_sig_of_another_link_is_refused(app, client, table):
    decision = table.open()
    other = only_form(client.get(link_for(table, decision, PASS)).get_data(as_text=True))
    url = link_for(table, decision, Action.of("bid", amount=4))
    before = snapshot(app)
    resp = client.post(url, data=other.data())
    assert resp.status_code == 400
    assert snapshot(app) == before


def test_post_from_the_confirmation_page_plays_the_bound_action_only(app, client, table):
    decision = table.open()
    url = link_for(table, decision, Action.of("bid", amount=2))
    form = only_form(client.get(url).get_data(as_text=True))
    # Extra fields cannot change what a one-click link does.
    resp = client.post(url, data=form.data(choice="bid 4", amount="4", decision_id="1"))
    assert resp.status_code == 200
    assert text_of(resp.get_data(as_text=True), "recorded") == "Recorded: Bid 2 Teeth"
    (move,) = moves(app, table.game_id)
    assert (move.decision_id, move.position, move.action, move.source) == (
        decision.id, decision.position, {"kind": "bid", "amount": 2}, "player")
    closed = load(app, Decision, decision.id)
    assert closed.closed_at is not None and closed.closed_by == "player"


def test_second_post_for_a_taken_decision_says_already_recorded(app, client, table):
    decision = table.open()
    url = link_for(table, decision, PASS)
    form = only_form(client.get(url).get_data(as_text=True))
    assert client.post(url, data=form.data()).status_code == 200
    before = snapshot(app)
    again = client.post(url, data=form.data())
    assert again.status_code == 409
    html = again.get_data(as_text=True)
    assert "Already recorded" in html
    assert 'data-reason="recorded"' in html
    assert snapshot(app) == before


def test_another_link_of_a_taken_decision_says_already_recorded(app, client, table):
    decision = table.open()
    first = link_for(table, decision, PASS)
    client.post(first, data=only_form(client.get(first).get_data(as_text=True)).data())
    second = link_for(table, decision, Action.of("bid", amount=1))
    page = client.get(second)
    assert page.status_code == 409
    assert "Already recorded" in page.get_data(as_text=True)
    before = snapshot(app)
    resp = client.post(second, data={"sig": "x"})
    assert resp.status_code == 409
    assert snapshot(app) == before
    assert len(moves(app, table.game_id)) == 1


def test_link_after_deciding_on_the_game_page_says_already_recorded(app, client, table):
    decision = table.open()
    url = link_for(table, decision, PASS)
    table.play_on_page(decision, Action.of("bid", amount=1))
    resp = client.get(url)
    assert resp.status_code == 409
    assert "Already recorded" in resp.get_data(as_text=True)
    assert [m.action for m in moves(app, table.game_id)] == [{"kind": "bid", "amount": 1}]


def close_by_timeout(app, decision) -> None:
    """The clock plays the default when the deadline passes (another path than the link)."""
    with app.app_context():
        assert services.time_out(decision.id, decision.deadline_at + timedelta(seconds=1))


def close_by_host(app, table, decision) -> None:
    with app.app_context():
        services.abandon_game(table.admin)


@pytest.mark.parametrize("closer", ["timeout", "host"])
def test_link_of_a_decision_closed_another_way_says_the_turn_is_over(app, client, table,
                                                                      closer):
    decision = table.open()
    url = link_for(table, decision, PASS)
    if closer == "timeout":
        close_by_timeout(app, decision)
    else:
        close_by_host(app, table, decision)
    before = snapshot(app)
    resp = client.get(url)
    assert resp.status_code == 409
    html = resp.get_data(as_text=True)
    assert "This turn is over" in html
    assert f'data-reason="{closer}"' in html
    assert forms(html) == []  # nothing left to press
    raw = url.rsplit("/", 1)[1]
    assert f'href="/g/{raw}"' in html
    game_page = client.get(f"/g/{raw}")
    assert game_page.status_code == 200
    assert "Game log" in game_page.get_data(as_text=True)
    post = client.post(url, data={"sig": form_signature(SECRET, raw)})  # a valid sig
    assert post.status_code == 409
    assert "This turn is over" in post.get_data(as_text=True)
    assert snapshot(app) == before


def test_page_form_of_a_decision_closed_by_timeout_says_the_turn_is_over(app, client,
                                                                         table):
    decision = table.open()
    page = path_of(table.mail(decision).link("/g/"))
    form = next(f for f in forms(client.get(page).get_data(as_text=True))
                if f.attrs.get("id") == "decision")
    close_by_timeout(app, decision)
    before = snapshot(app)
    resp = client.post(form.action, data=form.data(choice="pass"))
    assert resp.status_code == 409
    assert "This turn is over" in resp.get_data(as_text=True)
    assert snapshot(app) == before


# --------------------------------------------------------------------------- unknown links


GARBLED = [
    "x",
    "A" * 43,  # the right shape, but no such token
    "A" * 42 + "!",
    "A" * 5000,
    "ü" * 43,
    "%00" * 43,
    "%ff%fe",
    "..%2F..%2Fetc%2Fpasswd",
]
LINK_ROUTES = ["/a/", "/g/", "/admin/", "/invite/", "/host/confirm/"]


@pytest.mark.parametrize("prefix", LINK_ROUTES)
@pytest.mark.parametrize("raw", GARBLED, ids=range(len(GARBLED)))
def test_garbled_or_unknown_token_gets_a_friendly_404(client, prefix, raw):
    resp = client.get(prefix + raw)
    assert resp.status_code == 404
    html = resp.get_data(as_text=True)
    assert 'id="error"' in html and "Sorry" in html
    assert "Traceback" not in html
    assert forms(html) == []


def test_a_truncated_link_from_an_email_gets_a_friendly_404(client, table):
    url = path_of(table.mail(table.open()).action_links()[0])
    resp = client.get(url[:-5])
    assert resp.status_code == 404
    assert "no longer valid" in resp.get_data(as_text=True)


def test_a_page_token_is_not_a_one_click_link(client, table):
    page = path_of(table.mail(table.open()).link("/g/"))
    resp = client.get(page.replace("/g/", "/a/"))
    assert resp.status_code == 404


# --------------------------------------------------------------------------- deciding again


def next_for_same_seat(table, decision, action) -> str | None:
    """The kind of decision ``action`` would leave the same seat with at once, if any."""
    mod, state = game_state(table.app, table.game_id)
    after, _ = mod.apply(state, decision.position, action)
    return next((d.kind for d in mod.pending(after) if d.seat == decision.position), None)


def leads_to_same_seat(table, decision, action) -> bool:
    return next_for_same_seat(table, decision, action) is not None


@pytest.mark.parametrize("next_kind", ["act", "casualty"])
def test_when_the_same_player_must_decide_again_the_response_shows_the_next_form(
        app, client, table, next_kind):
    """The conch holder's bid that nobody can top (the action follows at once), and a hunt
    that needs a casualty choice: after confirming the one-click link, the page that
    answers already holds the next decision's form."""

    def again_by_link(decision, state):
        return any(next_for_same_seat(table, decision, a) == next_kind
                   for a in table.one_click(decision).values())

    decision = table.play_until(again_by_link)
    url, action = next((path_of(u), a) for u, a in table.one_click(decision).items()
                       if next_for_same_seat(table, decision, a) == next_kind)
    form = only_form(client.get(url).get_data(as_text=True))
    resp = client.post(url, data=form.data())
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    assert moves(app, table.game_id)[-1].action == action.to_json()
    (following,) = open_decisions(app, table.game_id)
    assert (following.position, following.kind) == (decision.position, next_kind)
    decision_forms = [f for f in forms(html) if f.attrs.get("id") == "decision"]
    assert len(decision_forms) == 1
    form = decision_forms[0]
    assert form.attrs["data-kind"] == following.kind
    assert form.hidden["decision_id"] == str(following.id)
    # ...and that form works right away.
    choice = table.bot_choice(following)
    resp = client.post(form.action, data=form.data(**page_form_data(choice, following.kind)))
    assert resp.status_code == 200
    assert moves(app, table.game_id)[-1].action == choice.to_json()
    assert load(app, Decision, following.id).closed_by == "player"


def test_after_a_page_form_move_the_response_shows_the_next_form_too(app, client, inbox):
    """Two players: the discarder holds the conch next round and bids first at once."""
    created = start_game(app, players=PLAYERS[:2], seed=11)
    table = Table(app, client, inbox, created.game_id, created.admin_token, bot_seed=11)
    decision = table.play_until(lambda d, state: d.kind == "discard")
    choice = table.bot_choice(decision)
    assert leads_to_same_seat(table, decision, choice)
    page = path_of(table.mail(decision).link("/g/"))
    (form,) = [f for f in forms(client.get(page).get_data(as_text=True))
               if f.attrs.get("id") == "decision"]
    assert form.attrs["data-kind"] == "discard"
    resp = client.post(form.action, data=form.data(**page_form_data(choice, "discard")))
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    assert text_of(html, "recorded").startswith("Recorded: Discard")
    (following,) = open_decisions(app, table.game_id)
    assert (following.position, following.kind) == (decision.position, "bid")
    (next_form,) = [f for f in forms(html) if f.attrs.get("id") == "decision"]
    assert next_form.attrs["data-kind"] == "bid"
    assert next_form.hidden["decision_id"] == str(following.id)


# --------------------------------------------------------------------------- double submits


def test_the_game_page_form_submitted_twice_at_once_always_says_already_recorded(app,
                                                                                 table):
    """Two presses of the same form race each other; one records the move and the other
    answers "Already recorded" (never a 400 such as 'no legal action of kind pass')."""
    import threading

    for _ in range(6):
        decision = table.open()
        page = path_of(table.mail(decision).link("/g/"))
        choice = table.bot_choice(decision)
        data = {"sig": form_signature(SECRET, page.rsplit("/", 1)[1]),
                "decision_id": str(decision.id), **page_form_data(choice, decision.kind)}
        answers: list[tuple[int, str]] = []
        gate = threading.Barrier(2)

        def press(data=data, page=page, answers=answers, gate=gate) -> None:
            client = app.test_client()
            gate.wait()
            resp = client.post(page, data=data)
            answers.append((resp.status_code, resp.get_data(as_text=True)))

        threads = [threading.Thread(target=press) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert sorted(code for code, _ in answers) == [200, 409], answers
        (again,) = [html for code, html in answers if code == 409]
        assert text_of(again, "closed") == ("Already recorded Your choice for this turn is "
                                            "already recorded.")
        assert [m.decision_id for m in moves(app, table.game_id)].count(decision.id) == 1


def test_a_used_confirmation_link_says_the_game_is_confirmed(app, client):
    """Opened or posted again, it answers 409 with the used-link page, as every used
    link does (an answered invitation, a decision already taken)."""
    from tests.server.helpers import create_on_web

    host_mail = create_on_web(client, app)
    url = path_of(host_mail.link("/host/confirm/"))
    form = only_form(client.get(url).get_data(as_text=True))
    assert client.post(url, data=form.data()).status_code == 200
    for resp in (client.get(url), client.post(url, data=form.data())):
        assert resp.status_code == 409
        assert text_of(resp.get_data(as_text=True), "confirmed") == (
            "Already confirmed This game is confirmed and the invitations are out. The "
            "game starts when everyone has accepted.")
