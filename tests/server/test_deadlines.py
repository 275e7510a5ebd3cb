"""Deadlines under a frozen clock: the policy chosen at creation, reminders, timeouts (also
with sweeps racing), a deadline missed while no clock ran, deadlines in every email in the
recipient's time zone, absent players on bots, and an auction where every bidder times out.

Time is driven by freezegun and ``pbem.clock.sweep`` is called directly (never a background
scheduler). Every test runs on SQLite and on PostgreSQL (the ``app`` fixture).
"""

from __future__ import annotations

import contextlib
import threading
from datetime import timedelta

import pytest
from freezegun import freeze_time

from engine.core import Action
from pbem import clock, services
from pbem.errors import InvalidInput
from pbem.models import Decision, Game, Outbox
from pbem.tokens import form_signature
from tests.server.conftest import GAME_SEED
from tests.server.helpers import (
    PLAYERS,
    SECRET,
    Inbox,
    Table,
    create_on_web,
    load,
    open_decisions,
    path_of,
    seats_of,
    text_of,
    token_of,
)
from tests.server.timekit import (
    ANN,
    BOB,
    CY,
    PASS,
    T0,
    as_entered,
    at,
    aware,
    events,
    idle,
    moves,
    new_game,
    page_form,
    page_of,
    rows,
    seat,
    subject,
    subjects,
    sweep_at,
    tick,
)

# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def frozen():
    with freeze_time(T0) as freezer:
        yield freezer


# --------------------------------------------------------------------------- policy


def test_default_reminders_are_half_time_and_two_hours_before():
    assert services.default_reminders(48) == (24.0, 2.0)
    assert services.default_reminders(10) == (5.0, 2.0)
    assert services.default_reminders(4) == (2.0,)  # half time is 2 hours before
    assert services.default_reminders(3) == (2.0, 1.5)
    assert services.default_reminders(1) == (0.5,)  # 2 hours before is before the start


def test_policy_defaults_at_creation(app, frozen):
    g = new_game(app)
    game = load(app, Game, g.game_id)
    assert game.policy == services.GamePolicy()  # 48 hours, reminders 24 and 2 hours before
    assert game.policy.reminder_hours == (24.0, 2.0)
    (d,) = open_decisions(app, g.game_id)
    assert (d.position, d.kind) == (2, "bid")
    assert d.opened_at == T0
    assert d.deadline_at == T0 + timedelta(hours=48)
    assert d.next_reminder_at == T0 + timedelta(hours=24)
    assert d.reminders_sent == 0


def test_policy_chosen_per_game_at_creation(app, frozen):
    a = new_game(app, hours=10, reminders="6, 1", absent_after=3, absent_bot="default",
                 vacation_days=3)
    b = new_game(app, hours=72, reminders=[48, 24, 1])
    game_a, game_b = load(app, Game, a.game_id), load(app, Game, b.game_id)
    assert game_a.policy == services.GamePolicy(10.0, (6.0, 1.0), 3, "default", 3.0)
    assert game_b.policy == services.GamePolicy(72.0, (48.0, 24.0, 1.0), 2, "heuristic", 7.0)
    assert game_a.policy.to_json() == {  # stored as JSON, the same names and values
        "hours_per_decision": 10.0, "reminder_hours": [6.0, 1.0], "absent_after": 3,
        "absent_bot": "default", "vacation_days": 3.0, "pause_quiet": False,
        "pause_weekends": False, "take_backs": True, "time_control": "fixed",
        "bank_days": 3.0, "increment_hours": 24.0, "cap_days": 7.0, "bot_ms": 100.0}
    (da,) = open_decisions(app, a.game_id)
    assert da.deadline_at == T0 + timedelta(hours=10)
    assert da.next_reminder_at == T0 + timedelta(hours=4)


@pytest.mark.parametrize(("policy", "message"), [
    ({"reminders": "48"}, "each reminder must fall between"),
    ({"reminders": "0"}, "each reminder must fall between"),
    ({"reminders": "soon"}, "reminders must be hours"),
    ({"absent_after": 0}, "a bot takes over after 1 to 100"),
    ({"absent_bot": "random"}, "'heuristic' or 'default'"),
    ({"vacation_days": 61}, "vacation is 0 to 60 days"),
])
def test_invalid_policies_are_refused(app, frozen, policy, message):
    with app.app_context(), pytest.raises(InvalidInput, match=message):
        services.create_game("cavemen", list(PLAYERS), as_entered(**policy), seed=1,
                             confirm_by_email=False, start=True)
    assert rows(app, Game) == []


def test_policy_from_the_web_form(app, client, frozen):
    create_on_web(client, app, reminders="12; 3", absent_after="3", absent_bot="default",
                  vacation_days="2.5", take_backs="on")  # ticked, as the form comes
    (game,) = rows(app, Game)
    assert game.policy == services.GamePolicy(48.0, (12.0, 3.0), 3, "default", 2.5)
    assert game.policy.take_backs
    create_on_web(client, app, title="No take-backs")  # the box unticked: sent as nothing
    assert not [g for g in rows(app, Game) if g.title == "No take-backs"][0].policy.take_backs


# --------------------------------------------------------------------------- reminders


def test_reminders_at_half_time_and_two_hours_before_once_each(app, frozen):
    inbox = Inbox(app)
    g = new_game(app)
    (d,) = open_decisions(app, g.game_id)
    inbox.clear()
    steps = [(23 + 59 / 60, 0), (24, 1), (24, 0), (30, 0), (45 + 59 / 60, 0), (46, 1),
             (46, 0), (47 + 59 / 60, 0)]
    for hours, expected in steps:
        assert sweep_at(app, frozen, hours)["reminders"] == expected, hours
    # each says the time left when it is sent
    assert [(m.to_addr, subject(m), m.template) for m in inbox.all()] == [
        (CY.email, "Reminder: 1 day left to bid for the conch", "reminder"),
        (CY.email, "Reminder: 2 hours left to bid for the conch", "reminder")]
    first, second = inbox.all()
    assert first.message_id != second.message_id
    for m, left in ((first, "1 day"), (second, "2 hours")):
        assert ("Decide by Wednesday 16 January 2030, 18:00 (Asia/Tokyo) / "
                f"2030-01-16 09:00 UTC ({left} left).") in m.text
        assert len(m.action_links()) == 5  # pass and bids 1..4, as in the first email
    row = load(app, Decision, d.id)
    assert (row.reminders_sent, row.reminded_at, row.next_reminder_at) == (
        2, T0 + timedelta(hours=46), None)
    assert moves(app, g.game_id) == []


def test_custom_reminder_offsets(app, frozen):
    inbox = Inbox(app)
    new_game(app, hours=10, reminders=[6, 1])
    inbox.clear()
    for hours, expected in [(3.99, 0), (4, 1), (8.99, 0), (9, 1), (9.5, 0)]:
        assert sweep_at(app, frozen, hours)["reminders"] == expected, hours
    assert subjects(inbox) == ["Reminder: 6 hours left to bid for the conch",
                               "Reminder: 1 hour left to bid for the conch"]
    assert sweep_at(app, frozen, 10)["timeouts"] == 1


def test_no_reminder_after_the_player_acted(app, client, frozen):
    inbox = Inbox(app)
    g = new_game(app)
    table = Table(app, client, inbox, g.game_id, g.admin_token)
    at(frozen, 1)
    cy_bid = table.open()
    table.play_on_page(cy_bid, PASS)
    inbox.clear()
    (ann_bid,) = open_decisions(app, g.game_id)
    assert ann_bid.position == 0
    assert ann_bid.next_reminder_at == T0 + timedelta(hours=25)
    assert sweep_at(app, frozen, 24)["reminders"] == 0  # Cy's reminder time: nothing
    assert sweep_at(app, frozen, 25)["reminders"] == 1
    assert [(m.to_addr, subject(m)) for m in inbox.all()] == [
        (ANN.email, "Reminder: 1 day left to bid for the conch")]
    assert load(app, Decision, cy_bid.id).reminders_sent == 0


def test_a_sweep_late_for_both_reminders_sends_only_one(app, frozen):
    inbox = Inbox(app)
    new_game(app)
    inbox.clear()
    assert sweep_at(app, frozen, 47)["reminders"] == 1
    assert sweep_at(app, frozen, 47.5)["reminders"] == 0
    assert subjects(inbox) == ["Reminder: 1 hour left to bid for the conch"]


# --------------------------------------------------------------------------- deadlines in emails


UTC_TOO = " / 2030-03-31 12:00 UTC"  # the deadline in UTC as well, after the local time


@pytest.mark.parametrize(("tz", "local"), [
    ("Europe/Berlin", "Sunday 31 March 2030, 14:00 (Europe/Berlin)" + UTC_TOO),  # summer
    ("America/New_York", "Sunday 31 March 2030, 08:00 (America/New_York)" + UTC_TOO),
    ("Asia/Tokyo", "Sunday 31 March 2030, 21:00 (Asia/Tokyo)" + UTC_TOO),
    ("Pacific/Kiritimati", "Monday 1 April 2030, 02:00 (Pacific/Kiritimati)" + UTC_TOO),
    ("UTC", "Sunday 31 March 2030, 12:00 (UTC)"),  # once: UTC is the reader's own zone
])
def test_decision_email_shows_the_deadline_in_the_recipients_zone_and_utc(
        app, client, tz, local):
    inbox = Inbox(app)
    players = [ANN, BOB, services.PlayerIn("Cy", CY.email, "en", tz)]
    with freeze_time("2030-03-29 12:00:00"):  # Friday, before Berlin's clocks go forward
        new_game(app, players)
    (mail_to_cy,) = inbox.to(CY.email, "decision")
    assert f"Decide by {local}." in mail_to_cy.text
    assert f"Decide by {local}." in mail_to_cy.html
    html = client.get(path_of(mail_to_cy.link("/g/"))).get_data(as_text=True)
    assert text_of(html, "waiting").endswith(f"You: bid for the conch – until {local}")  # her own page
    # The others' "game started" emails show Cy's deadline in their own zones.
    for player, their_local in [(ANN, "Sunday 31 March 2030, 14:00 (Europe/Berlin)"),
                                (BOB, "Sunday 31 March 2030, 08:00 (America/New_York)")]:
        (started,) = inbox.to(player.email, "game_started")
        assert (f"Waiting for:\n  - Cy: bid for the conch, deadline {their_local} / "
                "2030-03-31 12:00 UTC") in started.text
        assert f"<b>{their_local}</b> / 2030-03-31 12:00 UTC" in started.html
    assert subjects(inbox, ANN.email) == [
        "The game has started: nothing to do until your turn"]


def test_deadline_is_computed_when_the_email_is_sent(app, client, frozen):
    """A reminder that could not be sent before the host extended the deadline shows the
    extended deadline once it goes out."""
    inbox = Inbox(app)
    g = new_game(app)
    inbox.clear()
    inbox.backend.fail = OSError("mail server down")
    result = sweep_at(app, frozen, 24)
    assert (result["reminders"], result["sent"], result["failed"]) == (1, 0, 1)
    with app.app_context():
        services.extend_deadline(g.admin_token, 24)
    inbox.backend.fail = None
    result = sweep_at(app, frozen, 25)
    assert result["sent"] == 4  # the reminder and the three notices of the extension
    (reminder,) = inbox.to(CY.email, "reminder")
    assert ("Decide by Thursday 17 January 2030, 18:00 (Asia/Tokyo) / "
            "2030-01-17 09:00 UTC") in reminder.text


# --------------------------------------------------------------------------- timeouts


def test_expired_decision_is_auto_played_once_and_everyone_is_told(app, frozen):
    inbox = Inbox(app)
    g = new_game(app)
    (cy_bid,) = open_decisions(app, g.game_id)
    inbox.clear()
    at(frozen, 47 + 59 / 60)
    assert clock.sweep(app, now=T0 + timedelta(hours=47, minutes=59))["timeouts"] == 0
    inbox.clear()  # a reminder
    at(frozen, 48)
    result = tick(app, now=T0 + timedelta(hours=48))
    assert (result["timeouts"], result["sent"]) == (1, 3)
    (move,) = moves(app, g.game_id)
    assert (move.decision_id, move.position, move.action, move.source) == (
        cy_bid.id, 2, {"kind": "pass"}, "timeout")
    closed = load(app, Decision, cy_bid.id)
    assert (closed.closed_at, closed.closed_by) == (T0 + timedelta(hours=48), "timeout")
    (ev,) = events(app, g.game_id, "decision_timed_out")
    assert (ev.actor, ev.data) == (2, {"kind": "bid", "action": {"kind": "pass"}})
    assert (seat(app, g.game_id, 2).timeouts_in_row, seat(app, g.game_id, 2).bot) == (1, None)
    told = "Cy did not decide in time; the server played for them: Pass."
    told_cy = "You did not decide in time; the server played for you: Pass."
    # Ann decides next: her turn email tells her; Bob and Cy get a notice.
    assert sorted((m.to_addr, m.template) for m in inbox.all()) == [
        (ANN.email, "decision"), (BOB.email, "notice"), (CY.email, "notice")]
    for m in inbox.all():  # Cy reads it as "you"
        assert (told_cy if m.to_addr == CY.email else told) in m.text
    for addr in (BOB.email, CY.email):  # the first line in short
        (notice,) = inbox.to(addr)
        assert subject(notice) == ("You missed a deadline; the server played for you"
                                   if addr == CY.email else
                                   "Cy missed a deadline; the server played for them")
        assert notice.link("/g/")
    (ann_mail,) = inbox.to(ANN.email)
    assert subject(ann_mail) == "Your turn: bid for the conch, by Fri 10:00"
    assert ("Decide by Friday 18 January 2030, 10:00 (Europe/Berlin) / "
            "2030-01-18 09:00 UTC") in ann_mail.text
    (ann_bid,) = open_decisions(app, g.game_id)
    assert (ann_bid.position, ann_bid.deadline_at) == (0, T0 + timedelta(hours=96))
    for hours in (48, 49, 95):  # never again for Cy's bid; Ann's deadline is at 96
        assert sweep_at(app, frozen, hours)["timeouts"] == 0
    assert len(moves(app, g.game_id)) == 1
    assert sweep_at(app, frozen, 96)["timeouts"] == 1


def test_the_timed_out_players_links_are_dead_for_that_turn(app, client, frozen):
    inbox = Inbox(app)
    g = new_game(app)
    table = Table(app, client, inbox, g.game_id, g.admin_token)
    cy_bid = table.open()
    links = list(table.one_click(cy_bid))
    sweep_at(app, frozen, 48)
    resp = client.get(path_of(links[1]))
    assert resp.status_code == 409
    resp = client.post(path_of(links[1]), data={})
    assert resp.status_code == 409
    assert len(moves(app, g.game_id)) == 1


def test_a_deadline_missed_while_the_clock_was_down_fires_once_at_start(app, frozen,
                                                                       monkeypatch):
    inbox = Inbox(app)
    g = new_game(app)
    (cy_bid,) = open_decisions(app, g.game_id)
    inbox.clear()
    jobs = []

    class StubScheduler:  # no thread: run() sweeps once at start, then "runs" the job
        def add_job(self, func, trigger, **kwargs):
            jobs.append((func, trigger, kwargs))

        def start(self):
            jobs.append("started")

    monkeypatch.setattr(clock, "BlockingScheduler", StubScheduler)
    at(frozen, 100)  # the clock was down from before the first reminder until now
    clock.run(app)
    assert jobs[-1] == "started"
    func, trigger, kwargs = jobs[0]
    assert (func, trigger) == (clock.sweep, "interval")
    assert (kwargs["misfire_grace_time"], kwargs["coalesce"], kwargs["max_instances"]) == (
        None, True, 1)
    (move,) = moves(app, g.game_id)
    assert (move.decision_id, move.source) == (cy_bid.id, "timeout")
    assert load(app, Decision, cy_bid.id).closed_at == T0 + timedelta(hours=100)
    # No stale reminder reaches Cy: only the timeout's emails go out.
    assert sorted((m.to_addr, m.template) for m in inbox.all()) == [
        (ANN.email, "decision"), (BOB.email, "notice"), (CY.email, "notice")]
    (ann_bid,) = open_decisions(app, g.game_id)
    assert ann_bid.deadline_at == T0 + timedelta(hours=148)  # counted from the late sweep
    for hours in (100, 101):
        assert sweep_at(app, frozen, hours)["timeouts"] == 0
    assert len(moves(app, g.game_id)) == 1


# --------------------------------------------------------------------------- races


def run_together(*funcs):
    """Run the functions in threads released at the same moment; return their results."""
    barrier = threading.Barrier(len(funcs))
    results: list = [None] * len(funcs)
    errors: list = []

    def runner(i, func):
        try:
            barrier.wait(timeout=30)
            results[i] = func()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=runner, args=(i, f)) for i, f in enumerate(funcs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a racing thread hung"
    assert not errors, errors
    return results


def timeout_moves_per_decision(app, game_ids) -> dict[int, int]:
    counts: dict[int, int] = {}
    for gid in game_ids:
        for m in moves(app, gid, "timeout"):
            counts[m.decision_id] = counts.get(m.decision_id, 0) + 1
    return counts


def test_a_second_sweep_while_one_runs_is_busy_and_does_nothing(app, frozen):
    g = new_game(app)
    at(frozen, 48)
    with app.app_context(), clock.sweep_guard(app) as mine:
        assert mine is True
        other = clock.sweep(app)
    assert other["busy"] == 1
    assert not any(v for k, v in other.items() if k != "busy"), other
    assert moves(app, g.game_id) == []
    assert clock.sweep(app)["timeouts"] == 1  # the guard is free again


def test_two_sweeps_racing_play_the_expired_decision_exactly_once(app, frozen):
    g = new_game(app)
    (cy_bid,) = open_decisions(app, g.game_id)
    at(frozen, 48)
    results = []
    for _ in range(3):  # whether they overlap or not, the decision is played once
        results += run_together(lambda: clock.sweep(app), lambda: clock.sweep(app))
    assert sum(r["timeouts"] for r in results) == 1
    assert timeout_moves_per_decision(app, [g.game_id]) == {cy_bid.id: 1}
    assert len(events(app, g.game_id, "decision_timed_out")) == 1
    assert len(rows(app, Outbox, Outbox.template == "notice")) == 2


def test_unguarded_racing_sweeps_still_play_each_expired_decision_once(app, frozen,
                                                                       monkeypatch):
    """Even with the guard gone (two clocks on two machines with SQLite on a share, say),
    the per-decision check inside the locked transaction plays each decision once."""
    games = [new_game(app) for _ in range(4)]
    first = {d.id for g in games for d in open_decisions(app, g.game_id)}

    @contextlib.contextmanager
    def no_guard(_app):
        yield True

    monkeypatch.setattr(clock, "sweep_guard", no_guard)
    at(frozen, 48)
    results = run_together(*[lambda: clock.sweep(app)] * 3)
    assert sum(r["timeouts"] for r in results) == 4
    assert sum(r["busy"] for r in results) == 0
    counts = timeout_moves_per_decision(app, [g.game_id for g in games])
    assert counts == dict.fromkeys(first, 1)
    for g in games:
        assert len(events(app, g.game_id, "decision_timed_out")) == 1
        (nxt,) = open_decisions(app, g.game_id)
        assert nxt.position == 0
    sent_ids = [m.message_id for m in Inbox(app).all()]
    assert len(sent_ids) == len(set(sent_ids))  # no email went out twice either


def test_time_out_twice_at_once_on_one_decision_plays_it_once(app, frozen):
    g = new_game(app)
    (cy_bid,) = open_decisions(app, g.game_id)
    now = at(frozen, 48)

    def time_out():
        with app.app_context():
            return services.time_out(cy_bid.id, now)

    assert sorted(run_together(time_out, time_out)) == [False, True]
    assert run_together(time_out, time_out) == [False, False]
    assert timeout_moves_per_decision(app, [g.game_id]) == {cy_bid.id: 1}
    assert seat(app, g.game_id, 2).timeouts_in_row == 1
    assert len(events(app, g.game_id, "decision_timed_out")) == 1


def test_time_out_refuses_an_open_decision_before_its_deadline(app, frozen):
    g = new_game(app)
    (cy_bid,) = open_decisions(app, g.game_id)
    now = at(frozen, 47)
    with app.app_context():
        assert services.time_out(cy_bid.id, now) is False
        assert services.time_out(cy_bid.id + 1000, now) is False
    assert moves(app, g.game_id) == []


# --------------------------------------------------------------------------- the conch auction


def test_an_auction_where_every_bidder_times_out_ends_with_the_conch_kept(app, frozen):
    g = new_game(app)
    deciders = []
    for n in range(1, 4):
        (d,) = open_decisions(app, g.game_id)
        deciders.append((d.position, d.kind))
        assert sweep_at(app, frozen, 48 * n)["timeouts"] == 1
    assert deciders == [(2, "bid"), (0, "bid"), (1, "bid")]
    assert [(m.position, m.action, m.source) for m in moves(app, g.game_id)] == [
        (2, {"kind": "pass"}, "timeout"), (0, {"kind": "pass"}, "timeout"),
        (1, {"kind": "pass"}, "timeout")]
    (kept,) = events(app, g.game_id, "conch_kept")
    assert kept.actor == 2
    (d,) = open_decisions(app, g.game_id)
    assert (d.position, d.kind) == (2, "act")  # the auction is over, not going round again
    assert [x.bot for x in seats_of(app, g.game_id)] == [None, None, None]
    assert [x.timeouts_in_row for x in seats_of(app, g.game_id)] == [1, 1, 1]


def test_every_bidder_timing_out_onto_default_bots_never_loops(app, frozen, monkeypatch):
    """With the host's choice of the 'default' stand-in after one timeout, every bidder
    ends up on a bot that only ever passes and forages: a game that can never end by its
    own rules. The clock plays a bounded number of bot moves in a row after their short
    pauses, then each further one waits a person's time (the bound is lowered here to
    keep the test fast). The end of a game nobody plays is turned off here (test_idle_games)."""
    assert services.playing.BOT_MOVES_IN_A_ROW == 1000
    monkeypatch.setattr(services.playing, "BOT_MOVES_IN_A_ROW", 40)
    monkeypatch.setitem(app.config, "IDLE_ROUNDS", 1000)
    inbox = Inbox(app)
    g = new_game(app, absent_after=1, absent_bot="default")
    for n in (1, 2):
        assert sweep_at(app, frozen, 48 * n)["timeouts"] == 1
    assert [x.bot for x in seats_of(app, g.game_id)] == ["default", None, "default"]
    inbox.clear()
    result = sweep_at(app, frozen, 144)  # the timeout, then the bots' moves after it
    assert (result["timeouts"], result["bots"], result["sent"]) == (1, 40, 3)  # no flood
    assert [x.bot for x in seats_of(app, g.game_id)] == ["default", "default", "default"]
    played = moves(app, g.game_id)
    assert [m.source for m in played] == ["timeout"] * 3 + ["bot"] * 40
    assert {m.action["kind"] for m in played} <= {"pass", "forage", "discard", "lose"}
    assert load(app, Game, g.game_id).status == "active"
    # the 40 took their pauses, a few seconds each; the next waits a person's time
    last = aware(played[-1].created_at)
    assert T0 + timedelta(hours=144, seconds=40 * 2) <= last <= T0 + timedelta(hours=145)
    (waiting,) = open_decisions(app, g.game_id)
    assert aware(waiting.deadline_at) == last + timedelta(hours=48)
    hours = (last - T0) / timedelta(hours=1) + 48
    assert sweep_at(app, frozen, hours - 0.1)["bots"] == 0
    assert len(moves(app, g.game_id)) == 43
    result = sweep_at(app, frozen, hours)  # the clock plays it, then the next waits again
    assert (result["bots"], result["timeouts"]) == (1, 0)
    assert len(moves(app, g.game_id)) == 44
    (waiting,) = open_decisions(app, g.game_id)
    assert aware(waiting.deadline_at) == T0 + timedelta(hours=hours + 48)


def test_every_player_absent_with_heuristic_bots_plays_the_game_to_its_end(app, frozen,
                                                                          monkeypatch):
    """The heuristic bots can finish a game; the server ends a game nobody plays sooner
    (test_idle_games), so that end is turned off here."""
    monkeypatch.setitem(app.config, "IDLE_ROUNDS", 1000)
    inbox = Inbox(app)
    g = new_game(app, absent_after=1)
    for n in (1, 2, 3):
        assert sweep_at(app, frozen, 48 * n)["timeouts"] == 1
    game = load(app, Game, g.game_id)
    assert game.status == "finished"
    assert open_decisions(app, g.game_id) == []
    assert 3 < len(moves(app, g.game_id, "bot")) < services.BOT_MOVES_IN_A_ROW
    assert sorted(m.to_addr for m in inbox.of("result")) == sorted(p.email for p in PLAYERS)
    assert idle(sweep_at(app, frozen, 1000))


# --------------------------------------------------------------------------- absent players


def cy_times_out_twice(app, frozen, g) -> None:
    """Every bidder times out (1 each), then Cy misses the first action too (2 in a row)."""
    for n in range(1, 5):
        assert sweep_at(app, frozen, 48 * n)["timeouts"] == 1


def test_after_two_timeouts_in_a_row_a_bot_plays_the_seat(app, client, frozen):
    inbox = Inbox(app)
    g = new_game(app)
    table = Table(app, client, inbox, g.game_id, g.admin_token, bot_seed=GAME_SEED)
    cy_times_out_twice(app, frozen, g)
    cy = seat(app, g.game_id, 2)
    assert (cy.bot, cy.timeouts_in_row) == ("heuristic", 2)
    (on_bot,) = events(app, g.game_id, "seat_on_bot")
    assert (on_bot.actor, on_bot.data) == (2, {"bot": "heuristic", "timeouts": 2,
                                               "by": "absence"})
    last = moves(app, g.game_id)[-1]
    assert (last.position, last.action, last.source) == (2, {"kind": "forage"}, "timeout")
    explained = ("Cy missed 2 deadlines in a row, so a bot plays for them until they come "
                 "back (any link in their emails, or the 'I'm back' button on their game "
                 "page).")
    # The host (Ann, who acts next) and the absent player are both told.
    (to_ann,) = inbox.to(ANN.email)[-1:]
    assert to_ann.template == "decision" and explained in to_ann.text
    (to_cy,) = inbox.to(CY.email)[-1:]
    assert to_cy.template == "notice" and (
        "You missed 2 deadlines in a row, so a bot plays for you until you come back (any "
        "link in your emails, or the 'I'm back' button on your game page).") in to_cy.text
    assert to_cy.link("/g/")
    # The others play on; Cy's turns are played by the bot at once, without emails.
    turn_mails = len(inbox.to(CY.email, "decision"))
    assert turn_mails == 2  # the first bid and the first action, both timed out
    for _ in range(30):
        if moves(app, g.game_id, "bot"):
            break
        table.step()
    bot_moves = moves(app, g.game_id, "bot")
    assert bot_moves and {m.position for m in bot_moves} == {2}
    assert {load(app, Decision, m.decision_id).closed_by for m in bot_moves} == {"bot"}
    assert len(inbox.to(CY.email, "decision")) == turn_mails


def test_the_absent_player_comes_back_with_the_im_back_button(app, client, frozen):
    inbox = Inbox(app)
    g = new_game(app)
    table = Table(app, client, inbox, g.game_id, g.admin_token, bot_seed=GAME_SEED)
    cy_times_out_twice(app, frozen, g)
    page = page_of(inbox, CY.email)
    form = page_form(client, page, "back")
    assert form is not None and form.action == f"{page}/back"
    assert client.post(form.action, data={}).status_code == 400  # no sig: refused
    assert seat(app, g.game_id, 2).bot == "heuristic"
    before = len(inbox.all())
    resp = client.post(form.action, data=form.data())
    assert resp.status_code == 200
    assert "Welcome back: you play your seat again." in resp.get_data(as_text=True)
    assert page_form(client, page, "back") is None
    cy = seat(app, g.game_id, 2)
    assert (cy.bot, cy.timeouts_in_row) == (None, 0)
    (back,) = events(app, g.game_id, "seat_returned")
    assert (back.actor, back.data) == (2, {"bot": None, "by": "player"})
    told = inbox.all()[before:]
    assert sorted(m.to_addr for m in told) == sorted(p.email for p in PLAYERS)
    for m in told:
        assert subject(m) == ("You are back and play again." if m.to_addr == CY.email
                              else "Cy is back and plays again.")
    assert client.post(form.action, data=form.data()).status_code == 409  # already back
    # Cy's next turn is emailed to Cy again, not played by the bot.
    decision = table.play_until(lambda d, state: d.position == 2)
    assert inbox.for_decision(decision.id).to_addr == CY.email
    assert moves(app, g.game_id, "bot") == []


def test_the_default_stand_in_plays_the_timeout_defaults(app, client, frozen):
    inbox = Inbox(app)
    g = new_game(app, absent_after=1, absent_bot="default")
    table = Table(app, client, inbox, g.game_id, g.admin_token)
    assert sweep_at(app, frozen, 48)["timeouts"] == 1
    assert seat(app, g.game_id, 2).bot == "default"
    (on_bot,) = events(app, g.game_id, "seat_on_bot")
    assert on_bot.data == {"bot": "default", "timeouts": 1, "by": "absence"}
    for _ in range(2):  # Ann and Bob pass too: Cy keeps the conch and acts first
        table.play_on_page(table.open(), PASS)
    (turn,) = open_decisions(app, g.game_id)  # Cy's: not played in Bob's request
    assert turn.position == 2 and moves(app, g.game_id, "bot") == []
    table.clock_plays(turn)  # the clock plays it after the bot's pause
    (bot_move,) = moves(app, g.game_id, "bot")
    assert (bot_move.position, bot_move.action) == (2, {"kind": "forage"})
    assert load(app, Decision, bot_move.decision_id).closed_by == "bot"
    (d,) = open_decisions(app, g.game_id)
    assert d.position == 0


def test_a_player_acting_in_time_resets_the_count(app, client, frozen):
    inbox = Inbox(app)
    g = new_game(app)
    table = Table(app, client, inbox, g.game_id, g.admin_token)
    assert sweep_at(app, frozen, 48)["timeouts"] == 1  # Cy: 1
    assert seat(app, g.game_id, 2).timeouts_in_row == 1
    table.play_on_page(table.open(), PASS)  # Ann
    table.play_on_page(table.open(), PASS)  # Bob
    (d,) = open_decisions(app, g.game_id)
    assert (d.position, d.kind) == (2, "act")
    table.play_on_page(d, Action.of("forage"))  # Cy acts in time
    assert seat(app, g.game_id, 2).timeouts_in_row == 0
    assert seat(app, g.game_id, 2).bot is None


def test_the_absent_player_comes_back_by_confirming_any_old_one_click_link(app, client,
                                                                         frozen):
    inbox = Inbox(app)
    g = new_game(app)
    cy_times_out_twice(app, frozen, g)
    assert seat(app, g.game_id, 2).bot == "heuristic"
    old_turn = inbox.to(CY.email, "decision")[0]  # its decision timed out long ago
    link = path_of(old_turn.action_links()[0])
    page = client.get(link)
    assert page.status_code == 409 and "This turn is over" in page.get_data(as_text=True)
    assert seat(app, g.game_id, 2).bot == "heuristic"  # a GET changes nothing
    data = {"sig": form_signature(SECRET, token_of(link))}  # as the confirm page had it
    resp = client.post(link, data=data)
    assert resp.status_code == 200 and "Welcome back" in resp.get_data(as_text=True)
    cy = seat(app, g.game_id, 2)
    assert (cy.bot, cy.timeouts_in_row) == (None, 0)
    (back,) = events(app, g.game_id, "seat_returned")
    assert (back.actor, back.data) == (2, {"bot": None, "by": "player"})
    again = client.post(link, data=data)  # already back: just "this turn is over"
    assert again.status_code == 409 and "This turn is over" in again.get_data(as_text=True)
