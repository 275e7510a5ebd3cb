"""A time bank per player (issue 20, point 4): each player's clock starts with a reserve,
runs while a decision of theirs is open, gets the increment after each move and holds at
most the cap; a deadline is the clock's end, advanced through the player's quiet hours
(Berlin and Los Angeles, across their autumn changes of time); a clock that runs out
plays the default and everyone is told; a game made before time banks plays as before;
the form and the CLI refuse bad numbers. Pages and emails show the time left.

Under a frozen clock (freezegun moves it; ``pbem.clock.sweep`` is called directly), on
SQLite and PostgreSQL (the ``app`` fixture). The arithmetic of a clock that stops is
tests/test_clocks.py's.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import JSON, type_coerce, update
from sqlmodel import select

from pbem import mail, services
from pbem.db import session_scope
from pbem.models import Decision, Game, Seat, table_of
from pbem.services.playing import act
from pbem.services.plumbing import lock_game
from tests.server.helpers import (
    Inbox,
    Table,
    load,
    open_decisions,
    path_of,
    snapshot,
    text_of,
)
from tests.server.test_address_settings import save, table_cy_passes, unsubscribe_link
from tests.server.test_cli import new_game as cli_new_game
from tests.server.test_home_form import post, summary
from tests.server.timekit import (
    ANN,
    BOB,
    CY,
    PASS,
    T0,
    at,
    events,
    moves,
    new_game,
    rows,
    seat,
    sweep_at,
)

HOUR, DAY = 3600.0, 86400.0
CLI_PLAYERS = ("Ann <ann@example.com>", "Bob <bob@example.com>", "Cy <cy@example.com>")
BANK = {"time_control": "bank", "bank_days": 3, "increment_hours": 24, "cap_days": 4}


def banked(**changes) -> dict:
    return {**BANK, **changes}


def page(client, inbox: Inbox, addr: str) -> str:
    """The game page of ``addr``'s latest email."""
    return client.get(path_of(inbox.to(addr)[-1].link("/g/"))).get_data(as_text=True)


# --------------------------------------------------------------------------- the policy


def test_the_policy_keeps_a_time_bank_and_older_policies_read_fixed_hours():
    policy = services.GamePolicy.parse(banked(increment_hours="12,5"))
    assert (policy.banked, policy.bank_days, policy.increment_hours, policy.cap_days) == (
        True, 3.0, 12.5, 4.0)
    assert policy.reminder_hours == (36.0, 2.0)  # half the reserve and 2 hours before
    assert services.GamePolicy.from_json(policy.to_json()) == policy
    old = services.GamePolicy.from_json({"hours_per_decision": 10, "reminder_hours": [5]})
    assert (old.banked, old.time_control, old.hours_per_decision) == (False, "fixed", 10.0)


def test_a_game_of_fixed_hours_ignores_what_the_bank_fields_hold():
    policy = services.GamePolicy.parse({"time_control": "fixed", "bank_days": "lots"})
    assert (policy.banked, policy.bank_days) == (False, 3.0)


# --------------------------------------------------------------------------- the clock


def test_the_bank_pays_for_the_time_each_decision_was_open_and_refills_to_its_cap(
        app, client, frozen):
    """Every open decision's deadline is its opening plus its player's bank; each move
    takes the time it was open from the bank, then adds 24 hours, up to 4 days."""
    g = new_game(app, **BANK)
    table = Table(app, client, Inbox(app), g.game_id, g.admin_token)
    banks = {position: 3 * DAY for position in range(3)}
    hours, capped = 0.0, set()
    for wait in (10, 1, 2, 30, 1, 1, 1, 5, 1, 1):
        for d in open_decisions(app, g.game_id):
            assert d.deadline_at == d.opened_at + timedelta(seconds=banks[d.position])
        decision = table.open()
        hours += wait
        now = at(frozen, hours)
        table.play_on_page(decision, table.bot_choice(decision))
        spent = (now - decision.opened_at).total_seconds()
        banks[decision.position] = min(4 * DAY, banks[decision.position] - spent + 24 * HOUR)
        if banks[decision.position] == 4 * DAY:
            capped.add(decision.position)
        assert seat(app, g.game_id, decision.position).bank_left == pytest.approx(
            banks[decision.position])
    assert capped, "no bank reached its cap"
    assert banks != {position: 3 * DAY for position in range(3)}


def test_a_seat_with_two_decisions_open_pays_once_for_the_time_they_overlap(app, frozen):
    """No game of ours asks one seat two things at once yet; a second row of Cy's, as a
    game that did would open it, shares Cy's clock: when Cy moves 10 hours later, the bank
    loses 10 hours, not 20, and the other decision moves to the clock's new end."""
    g = new_game(app, **BANK)
    (bid,) = open_decisions(app, g.game_id)
    with app.app_context(), session_scope() as s:
        s.add(Decision(game_id=g.game_id, seat_id=bid.seat_id, position=2, seq=0,
                       kind="extra", opened_at=T0, deadline_at=bid.deadline_at))
    now = at(frozen, 10)
    with app.app_context(), session_scope() as s:
        game = lock_game(s, g.game_id)
        cy, decision = s.get(Seat, bid.seat_id), s.get(Decision, bid.id)
        act(s, game, cy, decision, PASS, "player")
    assert seat(app, g.game_id, 2).bank_left == pytest.approx(3 * DAY - 10 * HOUR + 24 * HOUR)
    (extra,) = rows(app, Decision, Decision.kind == "extra")
    assert extra.closed_by == "superseded"  # the game does not ask it: closed, costs nothing
    assert extra.closed_at == now


@pytest.mark.parametrize(("zone", "opens", "deadline"), [
    # Saturday 26 October 2030, 20:00 in Berlin (summer time); the clock runs two hours,
    # stands from 22:00 until 07:00 on Sunday (winter time: the night is an hour longer)
    # and runs ten more: 17:00 there, 16:00 UTC (an hour later than the same wall clock
    # in summer time would say).
    ("Europe/Berlin", datetime(2030, 10, 26, 18, 0, tzinfo=UTC),
     datetime(2030, 10, 27, 16, 0, tzinfo=UTC)),
    # Saturday 2 November 2030, 20:00 in Los Angeles (PDT), whose clocks go back that
    # night: the deadline is Sunday 17:00 PST, 01:00 UTC on Monday.
    ("America/Los_Angeles", datetime(2030, 11, 3, 3, 0, tzinfo=UTC),
     datetime(2030, 11, 4, 1, 0, tzinfo=UTC)),
])
def test_a_bank_deadline_waits_out_the_quiet_hours_across_the_change_of_time(
        app, client, frozen, zone, opens, deadline):
    frozen.move_to(opens - timedelta(hours=1))
    created = new_game(app, **banked(bank_days=0.5, increment_hours=1, cap_days=1),
                       pause_quiet="on")
    save(client, unsubscribe_link(app, created.game_id, ANN.email), quiet_from="22",
         quiet_to="7", timezone=zone)
    frozen.move_to(opens)
    table_cy_passes(app, client, created)
    (ann,) = open_decisions(app, created.game_id)
    assert (ann.position, ann.opened_at, ann.deadline_at) == (0, opens, deadline)
    # her reminders (6 and 2 hours before the end) fall outside her quiet hours
    assert ann.next_reminder_at == deadline - timedelta(hours=6)
    # Sunday 08:00 there: one hour ran since the night; she moves with 9 hours left
    moved = deadline - timedelta(hours=9)
    frozen.move_to(moved)
    table = Table(app, client, Inbox(app), created.game_id, created.admin_token)
    table.play_on_page(ann, PASS)
    assert seat(app, created.game_id, 0).bank_left == pytest.approx(9 * HOUR + 1 * HOUR)


def test_the_game_page_shows_each_clock_and_the_readers_own_first(app, client, frozen):
    inbox = Inbox(app)
    created = new_game(app, **BANK, pause_quiet="on")
    save(client, unsubscribe_link(app, created.game_id, ANN.email), quiet_from="22",
         quiet_to="7", timezone="Europe/Berlin")
    at(frozen, 1)  # 11:00 in Berlin: Cy passes, Ann's clock starts
    table_cy_passes(app, client, created)
    at(frozen, 12)  # 22:00 in Berlin: 11 hours ran, and it stands still in her quiet hours
    ann_page = page(client, inbox, ANN.email)
    assert text_of(ann_page, "my-clock") == (
        "Your clock: 2 days 13 hours left (standing still now)")
    clocks = text_of(ann_page, "clocks")
    assert "Ann: 2 days 13 hours left (standing still now)" in clocks
    assert "Bob: 3 days left (waiting for their turn)" in clocks
    assert "Cy: 3 days 23 hours left (waiting for their turn)" in clocks  # 72 - 1 + 24
    assert "24 hours are added after each move, up to 4 days" in clocks
    assert 'class="mine">Ann:' in ann_page
    assert 'src="/static/clock.js?v=' in ann_page
    assert 'data-runs="' in ann_page  # the spans the page's script counts down
    at(frozen, 22)  # 08:00 in Berlin: it runs again
    assert text_of(page(client, inbox, CY.email), "my-clock") == (
        "Your clock: 3 days 23 hours left · it runs while a decision is yours")
    assert "Ann: 2 days 12 hours left (running)" in text_of(page(client, inbox, CY.email),
                                                           "clocks")


def test_the_decision_email_says_the_time_left_on_the_clock_in_the_readers_language(
        app, client, frozen):
    inbox = Inbox(app)
    players = [ANN, BOB, services.PlayerIn("Cy", CY.email, "de", "Asia/Tokyo")]
    created = new_game(app, players, **BANK)
    (cy_mail,) = inbox.to(CY.email, "decision")
    assert "Auf deiner Uhr bleiben dir noch 3 Tage." in cy_mail.text
    assert "Auf deiner Uhr bleiben dir noch 3 Tage." in cy_mail.html
    at(frozen, 30.25)
    table_cy_passes(app, client, created)
    (ann_mail,) = inbox.to(ANN.email, "decision")
    assert "You have 3 days left on your clock." in ann_mail.text
    host = client.get(f"/admin/{created.admin_token}").get_data(as_text=True)
    assert "Clock: 2 days 17 hours left" in text_of(host, "seats")  # Cy's, after 30¼ h
    assert text_of(host, "time-control").startswith(
        "A time bank: each player's clock starts with 3 days")


def test_a_clock_that_runs_out_plays_the_default_and_everyone_is_told(app, client, frozen):
    inbox = Inbox(app)
    g = new_game(app, **banked(bank_days=1, increment_hours=6, cap_days=2))
    (cy_bid,) = open_decisions(app, g.game_id)
    assert cy_bid.deadline_at == T0 + timedelta(days=1)
    assert sweep_at(app, frozen, 23.9)["timeouts"] == 0
    inbox.clear()  # the reminders
    result = sweep_at(app, frozen, 24)
    assert result["timeouts"] == 1
    (move,) = moves(app, g.game_id)
    assert (move.position, move.action, move.source) == (2, {"kind": "pass"}, "timeout")
    (ev,) = events(app, g.game_id, "decision_timed_out")
    assert ev.data == {"kind": "bid", "action": {"kind": "pass"}, "clock_hours": 6.0}
    assert seat(app, g.game_id, 2).bank_left == pytest.approx(6 * HOUR)  # the increment
    told = ("Cy's clock ran out; the server played for them: Pass. Their clock starts "
            "again with 6 hours.")
    told_cy = ("Your clock ran out; the server played for you: Pass. Your clock starts "
               "again with 6 hours.")
    assert sorted((m.to_addr, m.template) for m in inbox.all()) == [
        (ANN.email, "decision"), (BOB.email, "notice"), (CY.email, "notice")]
    for m in inbox.all():
        assert (told_cy if m.to_addr == CY.email else told) in m.text
    (ann_mail,) = inbox.to(ANN.email, "decision")
    assert "You have 1 day left on your clock." in ann_mail.text
    # Cy's next decision has the 6 hours the clock holds now
    table = Table(app, client, inbox, g.game_id, g.admin_token)
    table.play_until(lambda d, _state: d.position == 2)
    (cy_next,) = [d for d in open_decisions(app, g.game_id) if d.position == 2]
    assert cy_next.deadline_at == cy_next.opened_at + timedelta(hours=6)


def test_a_game_made_before_time_banks_plays_with_fixed_hours_as_before(app, client, frozen):
    inbox = Inbox(app)
    g = new_game(app, hours=10)
    old = {"hours_per_decision": 10.0, "reminder_hours": [5.0, 2.0], "absent_after": 2,
           "absent_bot": "heuristic", "vacation_days": 7.0}  # as such a game stored it
    game_table = table_of(Game)
    with app.app_context(), session_scope() as s:
        s.connection().execute(update(game_table).where(game_table.c.id == g.game_id)
                               .values(policy=type_coerce(old, JSON)))
    assert load(app, Game, g.game_id).policy.banked is False
    at(frozen, 3)
    table_cy_passes(app, client, g)
    (ann,) = open_decisions(app, g.game_id)
    assert ann.deadline_at == T0 + timedelta(hours=13)
    assert [x.bank_left for x in rows(app, Seat, Seat.game_id == g.game_id)] == [None] * 3
    html = page(client, inbox, ANN.email)
    assert text_of(html, "my-clock") == "Your time for this decision: 10 hours left (running)"
    assert text_of(html, "clocks").endswith("Ann: 10 hours left (running)")
    # fixed hours: the email's deadline says it all (no clock line, which is a bank's)
    assert "left on your clock" not in inbox.to(ANN.email, "decision")[-1].text
    assert sweep_at(app, frozen, 13)["timeouts"] == 1
    (ev,) = events(app, g.game_id, "decision_timed_out")
    assert "clock_hours" not in ev.data


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("fields", "target", "message"), [
    ({"bank_days": "three"}, "f-bank_days", "the time bank is more than 0 and at most 60 days"),
    ({"bank_days": "-1"}, "f-bank_days", "the time bank is more than 0 and at most 60 days"),
    ({"bank_days": "0"}, "f-bank_days", "the time bank is more than 0 and at most 60 days"),
    ({"bank_days": "nan"}, "f-bank_days", "the time bank is more than 0 and at most 60 days"),
    ({"bank_days": "1e400"}, "f-bank_days", "the time bank is more than 0 and at most 60 days"),
    ({"increment_hours": "99999999999999999999999"}, "f-increment_hours",
     "the time added after each move is more than 0 hours and at most 30 days"),
    ({"increment_hours": ""}, "f-increment_hours", "the time added after each move"),
    ({"cap_days": "61"}, "f-cap_days", "the most a clock holds is more than 0 and at most 60"),
    ({"cap_days": "2"}, "f-cap_days", "cannot be less than the time bank it starts with"),
    ({"time_control": "sometimes"}, "f-time_control", "the time control is fixed hours"),
])
def test_the_form_refuses_a_bad_time_bank_at_its_field(app, client, inbox, fields, target,
                                                        message):
    before = snapshot(app)
    resp = post(client, **{**{k: str(v) for k, v in BANK.items()}, **fields})
    assert resp.status_code == 400
    problems = dict(summary(resp.get_data(as_text=True)))
    assert list(problems) == [target]
    assert message.lower() in problems[target].lower()
    assert snapshot(app) == before and inbox.all() == []


def test_the_form_makes_a_time_bank_game(app, client, frozen):
    resp = post(client, time_control="bank", bank_days="2,5", increment_hours="12",
                cap_days="5")
    assert resp.status_code == 200
    (game,) = rows(app, Game)
    assert (game.policy.banked, game.policy.bank_days, game.policy.increment_hours,
            game.policy.cap_days) == (True, 2.5, 12.0, 5.0)


def test_the_home_form_offers_the_time_control_with_fixed_hours_chosen(client):
    html = client.get("/").get_data(as_text=True)
    assert 'id="f-time_fixed" name="time_control" value="fixed" checked' in html
    for field, value in (("bank_days", "3"), ("increment_hours", "24"), ("cap_days", "7")):
        assert f'id="f-{field}" name="{field}" inputmode="decimal" size="4" value="{value}"' \
            in html


def test_the_cli_makes_a_time_bank_game(app):
    result = cli_new_game(app, *CLI_PLAYERS,
                          extra=("--bank", "3", "--increment", "24", "--cap", "7"))
    assert result.exit_code == 0, result.output
    (game,) = rows(app, Game)
    assert (game.policy.banked, game.policy.bank_days, game.policy.increment_hours,
            game.policy.cap_days) == (True, 3.0, 24.0, 7.0)


@pytest.mark.parametrize(("extra", "message"), [
    (("--bank", "abc"), "the time bank is more than 0 and at most 60 days"),
    (("--bank", "-2"), "the time bank is more than 0 and at most 60 days"),
    (("--bank", "1e999"), "the time bank is more than 0 and at most 60 days"),
    (("--bank", "3", "--increment", "1e12"), "the time added after each move"),
    (("--bank", "3", "--cap", "2"), "cannot be less than the time bank it starts with"),
    (("--increment", "5"), "--increment and --cap go with --bank DAYS"),
])
def test_the_cli_refuses_a_bad_time_bank_and_makes_nothing(app, extra, message):
    result = cli_new_game(app, *CLI_PLAYERS, extra=extra)
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output
    assert rows(app, Game) == []


def test_no_open_decision_of_a_bank_game_lacks_a_deadline(app, client, frozen):
    """(The clock's sweep finds timeouts by deadline: every decision has one.)"""
    g = new_game(app, **BANK)
    table = Table(app, client, Inbox(app), g.game_id, g.admin_token)
    for _ in range(6):
        table.step()
    with app.app_context(), session_scope() as s:
        found = s.exec(select(Decision).where(Decision.game_id == g.game_id)).all()
        assert all(d.deadline_at is not None for d in found)


def test_a_reminder_says_one_time_left_in_its_subject_and_its_body(app, client, frozen):
    """Issue 32, point 11: the subject's "left" and the clock's are one rounding (the
    clock's, rounded down), not "2 days 12 hours" above "2 days 11 hours"."""
    inbox = Inbox(app)
    players = [ANN, BOB, services.PlayerIn("Cy", CY.email, "de", "UTC")]
    created = new_game(app, players, **BANK)
    (cy_bid,) = open_decisions(app, created.game_id)
    at(frozen, 12 + 20 / 60)  # 59 h 40 min left on Cy's clock
    inbox.clear()
    with app.app_context():
        services.remind_now(created.admin_token, cy_bid.id)
        mail.deliver_due()
    (reminder,) = inbox.to(CY.email, "reminder")
    first, *rest = reminder.text.splitlines()
    assert "2 Tage 11 Stunden" in first  # the headline (the preview line)
    assert "Auf deiner Uhr bleiben dir noch 2 Tage 11 Stunden." in reminder.text
    assert "2 Tage 12 Stunden" not in reminder.text
