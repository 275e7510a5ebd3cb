"""Taking back a move (issue 22, point 3): allowed until the next person acts and while
the move showed nothing hidden; refused after the next action, after a die roll, after a
card drawn; the host may turn it off; emails about the move are withdrawn, or followed
by a correction; a take-back racing the next player's click: exactly one wins. Both
databases."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import pytest
from freezegun import freeze_time
from sqlmodel import select

from engine.core import Action
from pbem import services
from pbem.db import session_scope
from pbem.models import EventLog, Game, Move, Outbox, utcnow
from pbem.tokens import form_signature
from tests.server.helpers import (
    PLAYERS,
    SECRET,
    Inbox,
    Table,
    forms,
    page_form_data,
    path_of,
    snapshot,
    text_of,
)
from tests.server.test_table_bots import bot, started
from tests.server.timekit import T0, at, new_game, seat, tick

ANN, BOB, CY = PLAYERS


def page_of_seat(table: Table, position: int) -> str:
    """The game page path of the seat at ``position`` (from its latest email)."""
    email = table.seats[position].email
    mail = [m for m in table.inbox.all() if m.to_addr == email
            and any("/g/" in u for u in m.text_links())][-1]
    return path_of(mail.link("/g/"))


def take_back(client, page: str):
    return client.post(page + "/takeback",
                       data={"sig": form_signature(SECRET, page.rsplit("/", 1)[1])})


def state_of(app, game_id: str) -> tuple[str, int]:
    with app.app_context(), session_scope() as s:
        game = s.get(Game, game_id)
        return game.state, game.version


def log_kinds(app, game_id: str) -> list[str]:
    with app.app_context(), session_scope() as s:
        return [e.kind for e in s.exec(select(EventLog).where(EventLog.game_id == game_id)
                                       .order_by(EventLog.seq))]


def test_a_move_is_taken_back_until_the_next_person_acts(app, client, table):
    cy = table.open()  # Cy bids first
    page = page_of_seat(table, cy.position)
    before_state, before_version = state_of(app, table.game_id)
    resp = table.play_on_page(cy, Action.of("bid", amount=2))
    html = resp.get_data(as_text=True)
    assert 'id="take-back"' in html  # offered on the page that says it was recorded
    game_page = client.get(page).get_data(as_text=True)
    assert "Your last move: Bid 2 Teeth." in text_of(game_page, "take-back")
    ann = table.open()
    assert ann.position != cy.position
    resp = take_back(client, page)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert "Taken back" in text_of(resp.get_data(as_text=True), "notice")
    state, version = state_of(app, table.game_id)
    assert state == before_state and version == before_version + 2  # the move, the undo
    again = table.open()
    assert again.position == cy.position and again.kind == cy.kind and again.id != cy.id
    with app.app_context(), session_scope() as s:
        assert s.exec(select(Move).where(Move.game_id == table.game_id)).all() == []
        # Ann's turn email, queued by the move and not sent yet: withdrawn
        rows = s.exec(select(Outbox).where(Outbox.game_id == table.game_id,
                                           Outbox.status == "skipped")).all()
        assert any(r.context.get("decision_id") == ann.id for r in rows)
    assert log_kinds(app, table.game_id)[-1] == "took_back"
    log = text_of(client.get(page).get_data(as_text=True), "log")
    assert "You took back your move: Bid 2 Teeth." in log
    # and then the move Cy really meant
    table.play_on_page(again, Action.of("bid", amount=3))
    assert table.open().position != cy.position
    assert [m.action for m in moves_of(app, table.game_id)] == [
        Action.of("bid", amount=3).to_json()]
    inbox = Inbox(app)
    assert not [m for m in inbox.all() if m.decision_id == ann.id]  # never sent


def moves_of(app, game_id: str) -> list[Move]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Move).where(Move.game_id == game_id).order_by(Move.id)))


def test_refused_once_the_next_person_has_acted(app, client, table):
    cy = table.open()
    page = page_of_seat(table, cy.position)
    table.play_on_page(cy, Action.of("bid", amount=2))
    ann = table.open()
    table.play_on_page(ann, Action.of("pass"))
    before = snapshot(app)
    resp = take_back(client, page)
    assert resp.status_code == 409, resp.get_data(as_text=True)
    assert "someone else has acted since your last move" in text_of(
        resp.get_data(as_text=True), "error")
    assert snapshot(app) == before
    assert 'id="take-back"' not in client.get(page).get_data(as_text=True)


def test_someone_else_cannot_take_back_your_move(app, client, table):
    cy = table.open()
    ann_page = page_of_seat(table, 0)
    table.play_on_page(cy, Action.of("bid", amount=2))
    before = snapshot(app)
    resp = take_back(client, ann_page)
    assert resp.status_code == 409
    assert snapshot(app) == before


def test_a_sent_email_about_the_move_is_followed_by_a_correction(app, client, table):
    cy = table.open()
    page = page_of_seat(table, cy.position)
    table.play_on_page(cy, Action.of("bid", amount=2))
    ann = table.open()
    assert table.mail(ann)  # Ann's turn email went out (reading the inbox delivers it)
    assert take_back(client, page).status_code == 200
    news = [m for m in Inbox(app).to(ANN.email, "notice")]
    assert news and news[-1].text.startswith("Cy took back their move: Bid 2 Teeth."), \
        news[-1].text if news else None
    # her old turn link is stale now: it shows no form to confirm
    link = table.mail(ann).action_links()[0]
    assert forms(client.get(path_of(link)).get_data(as_text=True)) == []
    assert table.open().position == cy.position


def test_the_host_can_turn_take_backs_off(app, client, inbox):
    with app.app_context():
        created = services.create_game("cavemen", PLAYERS, {"take_backs": ""},
                                       confirm_by_email=False, start=True)
    table = Table(app, client, inbox, created.game_id, created.admin_token)
    cy = table.open()
    page = page_of_seat(table, cy.position)
    resp = table.play_on_page(cy, Action.of("bid", amount=2))
    assert 'id="take-back"' not in resp.get_data(as_text=True)
    before = snapshot(app)
    resp = take_back(client, page)
    assert resp.status_code == 409
    assert "does not allow taking back" in text_of(resp.get_data(as_text=True), "error")
    assert snapshot(app) == before


@pytest.mark.parametrize("engine", ["cavemen", "stoneage"])
def test_refused_after_a_move_that_showed_something_hidden(app, client, inbox, engine):
    """Play until a player's move shows something hidden (Stone Age: a die roll or a
    card or building turned up; Cavemen: cards drawn at the end of a round), then that
    player's take-back is refused; a move before it that showed nothing was allowed."""
    with app.app_context():
        created = services.create_game(engine, PLAYERS, seed=7, confirm_by_email=False,
                                       start=True)
    table = Table(app, client, inbox, created.game_id, created.admin_token)
    allowed = refused = 0
    for _ in range(150):
        decision = table.open()
        page = page_of_seat(table, decision.position)
        table.play_on_page(decision, table.bot_choice(decision))
        last = moves_of(app, created.game_id)[-1]
        if last.revealed and not refused:
            before = snapshot(app)
            resp = take_back(client, page)
            assert resp.status_code == 409
            assert "rolled dice or showed a hidden card" in text_of(
                resp.get_data(as_text=True), "error")
            assert snapshot(app) == before
            refused += 1
        elif last.revealed is False and not allowed:
            state = state_of(app, created.game_id)[0]
            assert take_back(client, page).status_code == 200
            assert state != state_of(app, created.game_id)[0]  # the state went back
            allowed += 1
        if allowed and refused:
            break
    assert allowed == 1 and refused == 1


def test_a_take_back_racing_the_next_click_ends_with_exactly_one(app, client, inbox):
    outcomes = set()
    for _ in range(4):  # fresh games: either may win the race
        with app.app_context():
            created = services.create_game("cavemen", PLAYERS, seed=3,
                                           confirm_by_email=False, start=True)
        table = Table(app, client, inbox, created.game_id, created.admin_token)
        first = table.open()
        page = page_of_seat(table, first.position)
        table.play_on_page(first, Action.of("bid", amount=2))
        nxt = table.open()
        nxt_page = page_of_seat(table, nxt.position)
        click = {"sig": form_signature(SECRET, nxt_page.rsplit("/", 1)[1]),
                 "decision_id": str(nxt.id), **page_form_data(Action.of("pass"), nxt.kind)}
        back = {"sig": form_signature(SECRET, page.rsplit("/", 1)[1])}
        answers: dict[str, int] = {}
        gate = threading.Barrier(2)

        def press(name: str, path: str, form: dict, gate=gate, answers=answers) -> None:
            c = app.test_client()
            gate.wait()
            answers[name] = c.post(path, data=form).status_code

        threads = [threading.Thread(target=press, args=("back", page + "/takeback", back)),
                   threading.Thread(target=press, args=("next", nxt_page, click))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        moves = moves_of(app, created.game_id)
        took_back = log_kinds(app, created.game_id)[-1] == "took_back"
        if answers["back"] == 200:  # the take-back won: the click found its turn gone
            assert answers["next"] != 200 and took_back and moves == [], answers
        else:  # the click won: the take-back was refused
            assert answers == {"back": 409, "next": 200} and not took_back, answers
            assert [m.decision_id for m in moves] == [first.id, nxt.id]
        outcomes.add(answers["back"])
    assert outcomes <= {200, 409}


def test_a_move_and_the_bots_moves_after_it_are_taken_back_together(app, client, frozen):
    app.config["BOT_PAUSE_SECONDS"] = 2
    created = started(app, [ANN, bot("easy"), bot("easy")])
    inbox = Inbox(app)
    table = Table(app, client, inbox, created.game_id, created.admin_token)
    hours = 0.0
    for _ in range(200):  # until Ann bids and the bots bid after her
        hours += 5 / 3600
        at(frozen, hours)
        tick(app)
        (d,) = [x for x in table_open(app, created.game_id)][:1] or [None]
        if d is not None and d.position == 0 and d.kind == "bid":
            break
    page = page_of_seat(table, 0)
    before_state = state_of(app, created.game_id)[0]
    table.play_on_page(d, Action.of("bid", amount=1))
    for _ in range(6):  # the bots' pauses pass: they bid
        hours += 5 / 3600
        at(frozen, hours)
        tick(app)
    after = moves_of(app, created.game_id)
    bots_after = [m for m in after if m.id > max(x.id for x in after if x.position == 0)]
    assert bots_after and not any(m.revealed for m in bots_after)  # they bid after her
    assert take_back(client, page).status_code == 200
    assert state_of(app, created.game_id)[0] == before_state
    assert all(m.id < min(x.id for x in bots_after) for m in moves_of(app, created.game_id))


def table_open(app, game_id: str):
    from tests.server.helpers import open_decisions
    return open_decisions(app, game_id)


def test_what_the_table_said_meanwhile_is_kept(app, client, table):
    cy = table.open()
    page = page_of_seat(table, cy.position)
    table.play_on_page(cy, Action.of("bid", amount=2))
    with app.app_context():
        services.say(page.rsplit("/", 1)[1], "oops, wrong bid")
    assert take_back(client, page).status_code == 200
    kinds = log_kinds(app, table.game_id)
    assert kinds[-2:] == ["took_back", "table_talk"]
    assert "oops, wrong bid" in text_of(client.get(page).get_data(as_text=True), "log")


def test_a_take_back_with_a_foreign_or_garbled_signature_changes_nothing(app, client, table):
    cy = table.open()
    page = page_of_seat(table, cy.position)
    other = page_of_seat(table, 0)
    table.play_on_page(cy, Action.of("bid", amount=2))
    before = snapshot(app)
    for sig in (form_signature(SECRET, other.rsplit("/", 1)[1]), "", "x" * 5000,
                "ab\r\nSet-Cookie: a=b"):
        resp = client.post(page + "/takeback", data={"sig": sig})
        assert resp.status_code == 400, (sig[:20], resp.status_code)
    resp = client.post(page[:-3] + "xyz/takeback",
                       data={"sig": form_signature(SECRET, page[-43:-3] + "xyz")})
    assert resp.status_code in (400, 404)
    assert snapshot(app) == before


# --------------------------------------------------------------------------- the clock


@pytest.mark.parametrize("policy", [{}, {"time_control": "bank", "bank_days": 3,
                                         "increment_hours": 24, "cap_days": 7}],
                         ids=["fixed", "bank"])
def test_a_take_back_gives_back_the_time_left_at_the_move_and_no_more(
        app, client, frozen, policy):
    """The clock stood still while the move stood: neither a fresh 48 hours nor a time
    bank's increment is won by moving and taking the move back."""
    g = new_game(app, **policy)
    table = Table(app, client, Inbox(app), g.game_id, g.admin_token)
    cy = table.open()  # opened at T0: 48 hours, or a bank of 3 days
    allowed = timedelta(hours=48) if not policy else timedelta(days=3)
    assert cy.deadline_at == T0 + allowed
    page = page_of_seat(table, cy.position)
    at(frozen, 10)
    table.play_on_page(cy, Action.of("bid", amount=2))
    if policy:  # 62 hours kept and 24 added
        assert seat(app, g.game_id, cy.position).bank_left == pytest.approx(86 * 3600)
    now = at(frozen, 13)  # three hours later, nobody has acted: she takes it back
    assert take_back(client, page).status_code == 200
    again = table.open()
    assert again.position == cy.position and again.id != cy.id
    assert again.deadline_at == now + (allowed - timedelta(hours=10))
    if policy:
        assert seat(app, g.game_id, cy.position).bank_left == pytest.approx(
            (allowed - timedelta(hours=10)).total_seconds())
    # and the email of her decision, opened again, says that deadline
    with app.app_context(), session_scope() as s:
        (row,) = s.exec(select(Outbox).where(Outbox.game_id == g.game_id,
                                             Outbox.template == "decision",
                                             Outbox.seat_id == again.seat_id)
                        .order_by(Outbox.id.desc()).limit(1))
        assert row.context["decision_id"] == again.id
        assert datetime.fromisoformat(row.context["deadline"]) == again.deadline_at


# ------------------------------------------------- abuse from outside (issue 32, point 13)


GRACE = 90  # seconds a move's email to the next player waits (TAKEBACK_GRACE_SECONDS)


def mails_to(table: Table, position: int, since: int = 0) -> list:
    """The emails to the seat at ``position`` (delivered first), after the first
    ``since``."""
    return table.inbox.to(table.seats[position].email)[since:]


def later(seconds: float):
    """The clock ``seconds`` from now (the delivery pass sees what is due by then)."""
    return freeze_time(utcnow() + timedelta(seconds=seconds))


def test_a_take_back_within_the_grace_sends_the_next_player_nothing(app, client, table):
    """A move's email to the next player waits TAKEBACK_GRACE_SECONDS; a take-back in that
    time withdraws it: the next player gets neither a turn email nor a correction. The
    move made for good is mailed once, when the grace is over."""
    app.config["TAKEBACK_GRACE_SECONDS"] = GRACE
    cy = table.open()
    page = page_of_seat(table, cy.position)
    after_cy = (cy.position + 1) % len(table.seats)  # Ann, who bids next
    had = len(mails_to(table, after_cy))
    table.play_on_page(cy, Action.of("bid", amount=2))
    ann = table.open()
    assert ann.position == after_cy
    with later(GRACE - 5):
        assert mails_to(table, ann.position, had) == []  # held for the grace
    host_page = client.get(f"/admin/{table.admin}").get_data(as_text=True)
    assert "the move before it may still be taken back" in text_of(host_page, "outbox")
    assert take_back(client, page).status_code == 200
    with later(GRACE + 60):
        assert mails_to(table, ann.position, had) == []  # withdrawn; and no correction
    with app.app_context(), session_scope() as s:
        (row,) = [o for o in s.exec(select(Outbox).where(Outbox.game_id == table.game_id,
                                                         Outbox.template == "decision"))
                  if o.context.get("decision_id") == ann.id]
        assert row.status == "skipped" and row.last_error.startswith("withdrawn")
    again = table.open()
    table.play_on_page(again, Action.of("bid", amount=3))
    nxt = table.open()
    assert mails_to(table, nxt.position, had) == []
    with later(GRACE + 1):
        (mail,) = mails_to(table, nxt.position, had)
    assert mail.decision_id == nxt.id and mail.template == "decision"


def test_take_backs_are_capped_per_seat_and_turn(app, client, table):
    """Six move/take-back cycles, as tried from outside: the first TAKEBACKS_PER_TURN (2)
    are taken back, the third is refused with the reason and the move stands; the next
    player gets one turn email, after the grace, and no correction."""
    app.config.update(TAKEBACK_GRACE_SECONDS=GRACE, TAKEBACKS_PER_TURN=2)
    cy = table.open()
    page = page_of_seat(table, cy.position)
    had = {seat.position: len(mails_to(table, seat.position)) for seat in table.seats}
    answers = []
    for amount in (1, 2, 3, 1, 2, 3):
        decision = table.open()
        if decision.position != cy.position:
            break
        table.play_on_page(decision, Action.of("bid", amount=amount))
        resp = take_back(client, page)
        answers.append(resp.status_code)
    assert answers == [200, 200, 409]
    assert text_of(resp.get_data(as_text=True), "error") == (
        "you have taken back 2 moves this turn, as many as one turn allows: "
        "this one stands")
    assert 'id="take-back"' not in client.get(page).get_data(as_text=True)
    assert [m.action for m in moves_of(app, table.game_id)] == [
        Action.of("bid", amount=3).to_json()]
    ann = table.open()
    with later(GRACE + 1):
        assert [(m.template, m.decision_id)
                for m in mails_to(table, ann.position, had[ann.position])] == [
            ("decision", ann.id)]


def test_the_cap_on_take_backs_starts_again_when_someone_else_has_acted(app, client, table):
    app.config.update(TAKEBACKS_PER_TURN=1)
    cy = table.open()
    page = page_of_seat(table, cy.position)
    table.play_on_page(cy, Action.of("bid", amount=1))
    assert take_back(client, page).status_code == 200
    table.play_on_page(table.open(), Action.of("bid", amount=1))
    assert take_back(client, page).status_code == 409  # one a turn
    mine = table.play_until(lambda d, _state: d.position == cy.position)  # the others act
    table.play_on_page(mine, table.bot_choice(mine))
    assert 'id="take-back"' in client.get(page).get_data(as_text=True)
    assert take_back(client, page).status_code == 200


def test_a_bots_move_in_the_grace_holds_the_next_persons_email_too(make_app, frozen):
    """Ann bids, the bot after her bids a few seconds later: Bob's turn email waits for
    the rest of Ann's grace, so her take-back (which takes back the bot's move too) sends
    Bob nothing."""
    app = make_app(TAKEBACK_GRACE_SECONDS=GRACE, BOT_PAUSE_SECONDS=2)
    created = started(app, [ANN, bot("easy"), BOB])
    inbox = Inbox(app)
    table = Table(app, app.test_client(), inbox, created.game_id, created.admin_token)
    seconds = 0.0
    for _ in range(300):  # until Ann bids with the bot next, then Bob
        d = table.open()
        if d.position == 0 and d.kind == "bid":
            break
        if d.position == 2:
            table.play_on_page(d, Action.of("pass") if d.kind == "bid"
                               else table.bot_choice(d))
        seconds += GRACE + 5  # whatever was held is due
        at(frozen, seconds / 3600)
        tick(app)
    page = page_of_seat(table, 0)
    table.play_on_page(d, Action.of("bid", amount=1))
    bobs = len(inbox.to(BOB.email))
    for _ in range(4):  # the bot's pause passes: it bids, and Bob's turn opens
        seconds += 3
        at(frozen, seconds / 3600)
        tick(app)
    assert [m.source for m in moves_of(app, created.game_id)][-2:] == ["player", "bot"]
    bob = table.open()
    assert bob.position == 2 and len(inbox.to(BOB.email)) == bobs  # held
    assert table.client.post(page + "/takeback", data={
        "sig": form_signature(SECRET, page.rsplit("/", 1)[1])}).status_code == 200
    at(frozen, (seconds + GRACE + 60) / 3600)
    tick(app)
    assert len(inbox.to(BOB.email)) == bobs  # withdrawn: nothing, no correction
