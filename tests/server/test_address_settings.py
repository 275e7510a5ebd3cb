"""What an address chooses for all of its games (issue 20, point 3), under a frozen clock:
its settings page (the unsubscribe link of any of its emails), quiet hours holding an
email and letting it go when they end (in two time zones and over a change to summer
time), a reminder never held past its deadline, news told in the next turn email or
never, and a digest address's turn emails left to the digest. Both databases."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from sqlmodel import select

from engine.core import Action
from pbem import mail
from pbem.db import session_scope
from pbem.kinds import OutboxStatus
from pbem.mail.addresses import IN_DIGEST, NO_NEWS, QUIET, TOLD_IN_TURN, quiet_until
from pbem.models import Address, Outbox, Seat
from pbem.tokens import form_signature, mint
from tests.server.helpers import SECRET, Inbox, Table
from tests.server.timekit import ANN, at, new_game, tick

SETTINGS = {"delivery": "turn", "digest_hour": "8", "quiet_from": "", "quiet_to": "",
            "news": "now", "timezone": "Europe/Berlin"}


def unsubscribe_link(app, game_id: str, email: str) -> str:
    """The unsubscribe link of an email to ``email`` (as every email carries)."""
    with app.app_context(), session_scope() as s:
        seat = s.exec(select(Seat).where(Seat.game_id == game_id, Seat.email == email)).one()
        return mint(s, "unsubscribe", game_id, seat.id,
                    action={"address": email.lower(), "of": "decision"})


def save(client, raw: str, **fields: str):
    return client.post(f"/u/{raw}", data={"sig": form_signature(SECRET, raw),
                                          "how": "settings", **{**SETTINGS, **fields}})


def settings_of(app, email: str) -> Address | None:
    with app.app_context(), session_scope() as s:
        row = s.get(Address, email.lower())
        if row is not None:
            s.expunge(row)
        return row


def rows(app, template: str, email: str) -> list[Outbox]:
    with app.app_context(), session_scope() as s:
        found = s.exec(select(Outbox).where(Outbox.template == template,
                                            Outbox.rcpt == email.lower())
                       .order_by(Outbox.id)).all()
        for row in found:
            s.expunge(row)
        return list(found)


def deliver(app) -> dict[str, int]:
    with app.app_context():
        return mail.deliver_due(limit=1000)


# --------------------------------------------------------------------------- the page


def test_the_settings_page_saves_what_the_address_chose(app, client, frozen):
    created = new_game(app)
    raw = unsubscribe_link(app, created.game_id, ANN.email)
    page = client.get(f"/u/{raw}").get_data(as_text=True)
    assert 'id="address-settings"' in page and "For all games of ann@example.com" in page
    assert settings_of(app, ANN.email) is None  # looking saves nothing
    resp = save(client, raw, delivery="digest", digest_hour="7", quiet_from="22",
                quiet_to="7", news="turn", timezone="America/Los_Angeles")
    assert resp.status_code == 200
    assert "Saved: your settings apply to all your games" in resp.get_data(as_text=True)
    row = settings_of(app, ANN.email)
    assert (row.delivery, row.digest_hour, row.quiet_from, row.quiet_to, row.news,
            row.timezone) == ("digest", 7, 22, 7, "turn", "America/Los_Angeles")
    again = client.get(f"/u/{raw}").get_data(as_text=True)  # the form shows them
    assert '<option value="22" selected>22:00</option>' in again
    assert 'value="digest" checked' in again and 'value="turn" checked' in again


@pytest.mark.parametrize("fields, field", [
    ({"delivery": "hourly"}, "delivery"), ({"digest_hour": "24"}, "digest_hour"),
    ({"digest_hour": "-1"}, "digest_hour"), ({"digest_hour": "8\r\nBcc: x"}, "digest_hour"),
    ({"quiet_from": "22"}, "quiet_from"), ({"quiet_from": "7", "quiet_to": "7"}, "quiet_from"),
    ({"news": "sometimes"}, "news"), ({"timezone": "Mars/Olympus"}, "timezone"),
    ({"quiet_from": "9" * 40, "quiet_to": "7"}, "quiet_from"),
])
def test_a_wrong_setting_is_refused_and_nothing_is_saved(app, client, frozen, fields, field):
    created = new_game(app)
    raw = unsubscribe_link(app, created.game_id, ANN.email)
    resp = save(client, raw, **fields)
    assert resp.status_code == 400
    assert f'id="{field}-error"' in resp.get_data(as_text=True)
    assert settings_of(app, ANN.email) is None


def test_a_forged_form_or_a_stranger_sets_nothing(app, client, frozen):
    created = new_game(app)
    raw = unsubscribe_link(app, created.game_id, ANN.email)
    forged = client.post(f"/u/{raw}", data={**SETTINGS, "how": "settings", "sig": "0" * 64})
    assert forged.status_code == 400
    assert client.post("/u/garbled", data={**SETTINGS, "how": "settings",
                                           "sig": "0" * 64}).status_code in (400, 404)
    assert settings_of(app, ANN.email) is None


# --------------------------------------------------------------------------- quiet hours


def test_quiet_hours_hold_a_turn_email_until_they_end(app, client, frozen):
    created = new_game(app)  # Cy bids first; Ann (Berlin) is next
    save(client, unsubscribe_link(app, created.game_id, ANN.email), quiet_from="22",
         quiet_to="7")
    at(frozen, 14)  # 23:00 in Berlin
    table_cy_passes(app, client, created)
    deliver(app)
    (row,) = rows(app, "decision", ANN.email)
    assert row.status == OutboxStatus.PENDING and row.last_error == QUIET
    assert row.attempts == 0
    assert row.next_attempt_at == datetime(2030, 1, 15, 6, 0, tzinfo=UTC)  # 07:00 Berlin
    at(frozen, 20.9)  # 05:54 UTC: still quiet
    deliver(app)
    assert rows(app, "decision", ANN.email)[0].status == OutboxStatus.PENDING
    at(frozen, 21.01)
    deliver(app)
    assert rows(app, "decision", ANN.email)[0].status == OutboxStatus.SENT


def table_cy_passes(app, client, created) -> None:
    """Cy, who bids first, passes on their game page."""
    table = Table(app, client, Inbox(app), created.game_id, created.admin_token)
    decision = table.open()
    assert decision.position == 2
    table.play_on_page(decision, Action.of("pass"))


@pytest.mark.parametrize("zone, now, until", [
    # Berlin: the night of the change to summer time (02:00 -> 03:00 on 28 March 2027)
    ("Europe/Berlin", datetime(2027, 3, 27, 23, 30, tzinfo=UTC),
     datetime(2027, 3, 28, 5, 0, tzinfo=UTC)),
    ("Europe/Berlin", datetime(2027, 3, 27, 21, 30, tzinfo=UTC),
     datetime(2027, 3, 28, 5, 0, tzinfo=UTC)),
    ("Europe/Berlin", datetime(2027, 3, 27, 20, 30, tzinfo=UTC), None),  # 21:30 there
    ("Europe/Berlin", datetime(2027, 1, 10, 23, 0, tzinfo=UTC),
     datetime(2027, 1, 11, 6, 0, tzinfo=UTC)),
    # Los Angeles the same winter night: 22:00-07:00 there is 06:00-15:00 UTC
    ("America/Los_Angeles", datetime(2027, 1, 11, 7, 0, tzinfo=UTC),
     datetime(2027, 1, 11, 15, 0, tzinfo=UTC)),
    ("America/Los_Angeles", datetime(2027, 1, 10, 23, 0, tzinfo=UTC), None),
])
def test_quiet_hours_end_at_their_local_hour_whatever_the_zone_and_season(zone, now, until):
    assert quiet_until(22, 7, ZoneInfo(zone), now) == until


def test_a_quiet_period_within_one_day_and_none():
    utc = ZoneInfo("UTC")
    noon = datetime(2030, 1, 14, 12, 30, tzinfo=UTC)
    assert quiet_until(12, 14, utc, noon) == datetime(2030, 1, 14, 14, tzinfo=UTC)
    assert quiet_until(13, 14, utc, noon) is None
    assert quiet_until(None, None, utc, noon) is None


def test_a_reminder_whose_deadline_falls_in_quiet_hours_is_not_held(app, client, frozen):
    created = new_game(app, hours=12)  # Cy's deadline: 21:00 UTC, 22:00 in Berlin
    with app.app_context(), session_scope() as s:
        cy = s.exec(select(Seat).where(Seat.game_id == created.game_id,
                                       Seat.position == 2)).one()
        cy.timezone = "Europe/Berlin"
        cy_email = cy.email
    save(client, unsubscribe_link(app, created.game_id, cy_email), quiet_from="18",
         quiet_to="23")
    at(frozen, 9)  # 18:00 UTC, 19:00 in Berlin: quiet; the reminder is due (half time)
    tick(app)
    reminders = [r for r in rows(app, "decision", cy_email) if r.context.get("reminder")]
    assert reminders and reminders[-1].status == OutboxStatus.SENT


# --------------------------------------------------------------------------- news, digest


def test_news_in_the_next_turn_email_skips_the_notice_and_the_turn_email_tells_it(
        app, client, frozen):
    created = new_game(app)
    save(client, unsubscribe_link(app, created.game_id, ANN.email), news="turn")
    resp = client.post(f"/admin/{created.admin_token}/pause", data={
        "sig": form_signature(SECRET, created.admin_token)})
    assert resp.status_code == 200
    client.post(f"/admin/{created.admin_token}/resume", data={
        "sig": form_signature(SECRET, created.admin_token)})
    deliver(app)
    notices = rows(app, "notice", ANN.email)
    assert notices and all(n.status == OutboxStatus.SKIPPED and n.last_error == TOLD_IN_TURN
                           for n in notices)
    assert any(n.status == OutboxStatus.SENT for n in rows(app, "notice", "bob@example.com"))
    table_cy_passes(app, client, created)
    deliver(app)
    (turn,) = [m for m in Inbox(app).all() if m.to_addr == ANN.email
               and m.decision_id is not None]
    assert "paused" in turn.text.lower()  # told in the turn email


def test_no_news_means_no_notice_and_no_result(app, client, frozen):
    created = new_game(app)
    save(client, unsubscribe_link(app, created.game_id, ANN.email), news="never")
    client.post(f"/admin/{created.admin_token}/abandon", data={
        "sig": form_signature(SECRET, created.admin_token), "sure": "yes"})
    deliver(app)
    mine = rows(app, "result", ANN.email) + rows(app, "notice", ANN.email)
    assert mine and all(r.status == OutboxStatus.SKIPPED and r.last_error == NO_NEWS
                        for r in mine)
    assert not [m for m in Inbox(app).all() if m.to_addr == ANN.email
                and m.template in ("result", "notice")]


def test_a_digest_address_gets_no_turn_email_of_its_own(app, client, frozen):
    created = new_game(app)
    save(client, unsubscribe_link(app, created.game_id, ANN.email), delivery="digest")
    table_cy_passes(app, client, created)
    deliver(app)
    (row,) = rows(app, "decision", ANN.email)
    assert row.status == OutboxStatus.SKIPPED and row.last_error == IN_DIGEST
