"""The channels beside email (issue 34, point 3), what is common to all of them
(``pbem.channels``, ``pbem.channels.delivery``), with a channel of the tests' own
(``channel_double``): a notice for each target in the transaction that queues the email,
delivered once, retried with backoff, its target stopped after failing too often or at
once when gone, a notice of a decision closed in the meantime not sent, quiet hours
kept, and a seat's email held while its notice may be answered first. Both databases."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import select

from pbem import mail
from pbem.channels import delivery
from pbem.db import session_scope
from pbem.kinds import OutboxStatus
from pbem.models import Address, Notice, Outbox, Webhook, utcnow
from tests.server import channel_double
from tests.server.helpers import open_decisions, seats_of


@pytest.fixture(autouse=True)
def double(monkeypatch):
    monkeypatch.setattr("pbem.channels.REGISTERED", ("tests.server.channel_double",))
    channel_double.SENT.clear()
    yield channel_double.SENT
    channel_double.SENT.clear()


def hook(app, game_id: str, url: str = "https://chat.example/ok") -> int:
    with app.app_context(), session_scope() as s:
        row = Webhook(game_id=game_id, kind="double", url=url)
        s.add(row)
        s.flush()
        return row.id


def notices(app, game_id: str) -> list[Notice]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Notice).where(Notice.game_id == game_id)
                           .order_by(Notice.id)))


def move(table) -> None:
    decision = table.open()
    table.play_on_page(decision, table.bot_choice(decision))


def deliver(app) -> dict[str, int]:
    with app.app_context():
        return delivery.deliver_due()


def test_a_notice_per_target_is_delivered_once_with_the_decision_it_tells_of(app, table,
                                                                              double):
    first, second = hook(app, table.game_id), hook(app, table.game_id, "https://b.example")
    move(table)
    (decision,) = open_decisions(app, table.game_id)[:1]
    rows = notices(app, table.game_id)
    assert {r.target_id for r in rows} == {first, second}
    assert all(r.context.get("decision_id") == decision.id for r in rows
               if r.template == "decision")
    assert deliver(app)["sent"] == len(rows)
    assert deliver(app) == {"sent": 0, "failed": 0, "skipped": 0}  # once
    seat = seats_of(app, table.game_id)[decision.position]
    assert {"url": "https://chat.example/ok", "template": "decision", "seat": seat.name,
            "decision": decision.id} in double
    assert all(r.status == OutboxStatus.SENT for r in notices(app, table.game_id))


def test_a_failing_target_is_retried_with_backoff_then_stopped_and_its_notices_given_up(
        frozen, app, table, double):
    target = hook(app, table.game_id, "https://chat.example/fail")
    move(table)
    assert deliver(app)["failed"] >= 1
    (row, *_) = notices(app, table.game_id)
    assert row.status == OutboxStatus.PENDING and row.next_attempt_at > utcnow()
    assert deliver(app)["failed"] == 0  # not due again before its backoff
    for _ in range(delivery.STOP_AFTER):
        frozen.tick(timedelta(hours=2))
        deliver(app)
    with app.app_context(), session_scope() as s:
        stopped = s.get(Webhook, target)
        assert stopped.stopped_at is not None and stopped.last_error == "503 try later"
    assert {"stopped": target, "error": "503 try later"} in double
    assert all(r.status in (OutboxStatus.UNDELIVERABLE, OutboxStatus.SKIPPED)
               for r in notices(app, table.game_id))
    move(table)  # a stopped target is told nothing more
    frozen.tick(timedelta(seconds=1))
    deliver(app)
    assert not [p for p in double if "url" in p]


def test_a_target_that_is_gone_is_stopped_at_once(app, table, double):
    target = hook(app, table.game_id, "https://chat.example/gone")
    move(table)
    deliver(app)
    with app.app_context(), session_scope() as s:
        assert s.get(Webhook, target).stopped_at is not None


def test_the_notice_of_a_decision_closed_before_it_went_is_not_sent(app, table, double):
    hook(app, table.game_id)
    move(table)
    move(table)  # the first notice's decision is closed now
    deliver(app)
    rows = notices(app, table.game_id)
    assert rows[0].status == OutboxStatus.SKIPPED
    assert rows[0].last_error == delivery.DECISION_CLOSED


def test_quiet_hours_hold_a_notice_until_they_end(app, table, double):
    hook(app, table.game_id)
    move(table)
    (decision,) = open_decisions(app, table.game_id)[:1]
    seat = seats_of(app, table.game_id)[decision.position]
    hour = utcnow().hour  # quiet from this hour for two (the deadline is 48 h away)
    with app.app_context(), session_scope() as s:
        s.add(Address(address=seat.email.lower(), timezone="UTC",
                      quiet_from=hour, quiet_to=(hour + 2) % 24))
    deliver(app)
    (row,) = [r for r in notices(app, table.game_id) if r.seat_id == seat.id]
    assert row.status == OutboxStatus.PENDING and row.next_attempt_at > utcnow()
    assert row.attempts == 0  # waiting is not an attempt
    assert not double


def test_a_seat_whose_notice_may_be_answered_first_gets_its_email_later(app, table, double):
    hook(app, table.game_id, "https://chat.example/hold")
    move(table)
    (decision,) = open_decisions(app, table.game_id)[:1]
    with app.app_context(), session_scope() as s:
        email = s.exec(select(Outbox).where(Outbox.template == "decision",
                                            Outbox.seat_id == seats_of(
                                                app, table.game_id)[decision.position].id)
                       .order_by(Outbox.id.desc())).first()
    assert email.next_attempt_at >= utcnow() + timedelta(minutes=9)
    move(table)  # answered before the email was due
    with app.app_context():
        mail.deliver_due(ids=[email.id])
    with app.app_context(), session_scope() as s:
        assert s.get(Outbox, email.id).status == OutboxStatus.PENDING  # not due yet
        s.get(Outbox, email.id).next_attempt_at = utcnow()
    with app.app_context():
        mail.deliver_due(ids=[email.id])
    with app.app_context(), session_scope() as s:
        row = s.get(Outbox, email.id)
        assert row.status == OutboxStatus.SKIPPED, row.last_error  # the decision closed
