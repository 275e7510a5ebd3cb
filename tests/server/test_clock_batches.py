"""The clock plays due decisions in batches (issue 19, item 4): several decisions in one
transaction, yet each exactly once and atomically. A failure in one decision of a batch
costs only that decision (the others are played again alone; it stays open and is found
due at the next sweep); a timeout racing a player's confirm records one move; a batch
holds at most BATCH_SIZE decisions and ends after BATCH_SECONDS; a sweep asks again
while pages of due decisions come full. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import logging
import threading

import pytest
from freezegun import freeze_time

from pbem import clock
from pbem.models import Decision, EventLog, Outbox
from pbem.services import deadlines
from pbem.tokens import form_signature
from tests.server.helpers import SECRET, Inbox, load, open_decisions, path_of, token_of
from tests.server.timekit import T0, at, events, moves, new_game, rows, seat


@pytest.fixture
def frozen():
    with freeze_time(T0) as freezer:
        yield freezer


def games_due(app, frozen, n: int) -> list[tuple[str, int]]:
    """``n`` started games, then the clock moved to the first deadline: (game, its due
    decision) each."""
    out = []
    for _ in range(n):
        g = new_game(app)
        (first,) = open_decisions(app, g.game_id)
        out.append((g.game_id, first.id))
    at(frozen, 48)
    return out


def written(app, game_id: str) -> tuple[int, int, int]:
    """(moves, events, outbox rows) of a game."""
    return (len(moves(app, game_id)), len(rows(app, EventLog, EventLog.game_id == game_id)),
            len(rows(app, Outbox, Outbox.game_id == game_id)))


def played_once(app, game_id: str, decision_id: int) -> None:
    """The timeout was played exactly once, with its events and emails once."""
    (move,) = moves(app, game_id)
    assert (move.decision_id, move.source) == (decision_id, "timeout")
    assert len(events(app, game_id, "decision_timed_out")) == 1
    notices = rows(app, Outbox, Outbox.game_id == game_id, Outbox.template == "notice")
    assert len(notices) == 2  # Bob and Cy; Ann gets her turn email
    (nxt,) = open_decisions(app, game_id)
    assert len(rows(app, Outbox, Outbox.idempotency_key == f"decision:{nxt.id}")) == 1


@pytest.fixture
def fail_in(monkeypatch):
    """``fail_in(game_id, times)``: the timeouts of that game fail (the first ``times``
    tries; None: always), after they have written part of their work."""
    real = deadlines.play_move

    def install(game_id: str, times: int | None = None):
        left = [times]

        def play_move(s, game, *args, **kwargs):
            played = real(s, game, *args, **kwargs)  # the move is written, then ...
            if game.id == game_id and (left[0] is None or left[0] > 0):
                if left[0] is not None:
                    left[0] -= 1
                raise RuntimeError("a bug in one game")
            return played

        monkeypatch.setattr(deadlines, "play_move", play_move)
        return lambda: monkeypatch.setattr(deadlines, "play_move", real)

    return install


def test_a_failing_decision_costs_only_itself(app, frozen, fail_in, caplog):
    due = games_due(app, frozen, 4)
    bad_game, bad_decision = due[1]
    before = written(app, bad_game)
    heal = fail_in(bad_game)
    with caplog.at_level(logging.WARNING, logger="pbem.clock"):
        result = clock.sweep(app)
    assert (result["timeouts"], result["errors"]) == (3, 1)
    assert "a batch of 4 failed" in caplog.text  # they were one batch
    for game_id, decision_id in due:
        if game_id != bad_game:
            played_once(app, game_id, decision_id)
    # the failing decision is as it was: open, nothing of its work written
    assert load(app, Decision, bad_decision).closed_at is None
    assert written(app, bad_game) == before
    assert seat(app, bad_game, 2).timeouts_in_row == 0
    # found due again at the next sweep (and again failing, nothing else is touched)
    assert (clock.sweep(app)["timeouts"], clock.sweep(app)["errors"]) == (0, 1)
    heal()
    assert clock.sweep(app)["timeouts"] == 1
    for game_id, decision_id in due:
        played_once(app, game_id, decision_id)


def test_after_a_failed_batch_each_decision_is_played_alone_once(app, frozen, fail_in):
    """The batch's transaction is rolled back as a whole, and each of its decisions played
    again in a transaction of its own: nothing twice (moves, events, emails)."""
    due = games_due(app, frozen, 5)
    fail_in(due[3][0], times=1)  # only inside the batch
    result = clock.sweep(app)
    assert (result["timeouts"], result["errors"]) == (5, 0)
    for game_id, decision_id in due:
        played_once(app, game_id, decision_id)
    assert clock.sweep(app)["timeouts"] == 0


def test_a_timeout_racing_a_players_confirm_records_one_move(app, client, frozen):
    inbox = Inbox(app)
    due = games_due(app, frozen, 6)
    links = []
    for _game_id, decision_id in due:
        url = inbox.for_decision(decision_id).action_links()[0]
        links.append(path_of(url))
    start = threading.Barrier(2)
    answers: list[int] = []
    swept: list[dict] = []

    def confirm() -> None:
        start.wait(30)
        for path in links:
            data = {"sig": form_signature(SECRET, token_of(path))}
            answers.append(app.test_client().post(path, data=data).status_code)

    def sweep() -> None:
        start.wait(30)
        swept.append(clock.sweep(app))

    threads = [threading.Thread(target=confirm), threading.Thread(target=sweep)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert set(answers) <= {200, 409}, answers
    assert swept[0]["errors"] == 0
    assert swept[0]["timeouts"] + answers.count(200) == len(due)
    for game_id, decision_id in due:
        (move,) = moves(app, game_id)
        assert move.decision_id == decision_id
        assert len(events(app, game_id, "decision_timed_out")) == (move.source == "timeout")
    assert clock.sweep(app)["timeouts"] == 0


@pytest.fixture
def batches(monkeypatch):
    """The number of timeouts played in each transaction, in order."""
    sizes: list[int] = []
    sessions: list[object] = []
    real = deadlines._time_out

    def _time_out(s, *args):
        if not sessions or sessions[-1] is not s:
            sessions.append(s)
            sizes.append(0)
        sizes[-1] += 1
        return real(s, *args)

    monkeypatch.setattr(deadlines, "_time_out", _time_out)
    return sizes


def test_all_due_decisions_go_in_one_batch_up_to_batch_size(app, frozen, batches):
    due = games_due(app, frozen, 5)
    assert clock.sweep(app)["timeouts"] == 5
    assert batches == [5]  # one transaction for all five (BATCH_SIZE is 10)
    for game_id, decision_id in due:
        played_once(app, game_id, decision_id)


def test_a_batch_holds_at_most_batch_size_decisions(app, frozen, monkeypatch, batches):
    due = games_due(app, frozen, 5)
    monkeypatch.setattr(deadlines, "BATCH_SIZE", 2)
    assert clock.sweep(app)["timeouts"] == 5
    assert batches == [2, 2, 1]
    for game_id, decision_id in due:
        played_once(app, game_id, decision_id)


def test_a_batch_ends_once_it_has_run_batch_seconds(app, frozen, monkeypatch, batches):
    due = games_due(app, frozen, 4)
    monkeypatch.setattr(deadlines, "BATCH_SECONDS", 0.0)
    assert clock.sweep(app)["timeouts"] == 4
    assert batches == [1, 1, 1, 1]  # one decision per transaction
    for game_id, decision_id in due:
        played_once(app, game_id, decision_id)


def test_a_sweep_asks_again_while_pages_come_full(app, frozen, monkeypatch, fail_in):
    """Five due with pages of two: one sweep plays them all; one that always fails is
    tried once per sweep (it stays at the head of every page) and does not hold up the
    others or loop."""
    due = games_due(app, frozen, 5)
    monkeypatch.setattr(clock, "DUE_PAGE", 2)
    fail_in(due[0][0])
    result = clock.sweep(app)
    assert (result["timeouts"], result["errors"]) == (4, 1)
    for game_id, decision_id in due[1:]:
        played_once(app, game_id, decision_id)


def test_a_reminder_batch_with_a_failure_costs_only_that_reminder(app, frozen, monkeypatch):
    games = [new_game(app) for _ in range(3)]
    at(frozen, 24)  # half time: every first decision's reminder is due
    real = deadlines.queue_reminder
    bad = games[1].game_id

    def queue_reminder(s, game, *args, **kwargs):
        real(s, game, *args, **kwargs)
        if game.id == bad:
            raise RuntimeError("a bug in one game")

    monkeypatch.setattr(deadlines, "queue_reminder", queue_reminder)
    result = clock.sweep(app)
    assert (result["reminders"], result["errors"]) == (2, 1)
    for g in games:
        reminders = rows(app, Outbox, Outbox.game_id == g.game_id,
                         Outbox.idempotency_key.like("reminder:%"))
        (decision,) = open_decisions(app, g.game_id)
        assert len(reminders) == (0 if g.game_id == bad else 1)
        assert decision.reminders_sent == (0 if g.game_id == bad else 1)
    monkeypatch.setattr(deadlines, "queue_reminder", real)
    assert clock.sweep(app)["reminders"] == 1
