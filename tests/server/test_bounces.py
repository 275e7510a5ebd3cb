"""Bounces: every email's return path names it (VERP); a delivery report that comes
back to it over SMTP marks that email undeliverable for the host, and an address that
bounces again and again gets no more mail while the host is told to hand the seat over.
Nothing sent to a return path is ever answered."""

from __future__ import annotations

import re

import pytest
from sqlmodel import select

from pbem.db import session_scope
from pbem.models import EventLog, Outbox, Suppression
from tests.server.helpers import PLAYERS, load, outbox
from tests.server.replying import Inbound

VERP = re.compile(r"^games\+b\.(\d+)\.([0-9a-f]{16})@pbem\.test$")


@pytest.fixture
def inbound(app):
    receiver = Inbound(app)
    yield receiver
    receiver.stop()


def report(to: str, action: str = "failed", status: str = "5.1.1") -> bytes:
    """A delivery report (RFC 3464) as a mail server writes it."""
    return (
        f"From: Mail Delivery System <MAILER-DAEMON@mx.example.com>\r\n"
        f"To: {to}\r\nSubject: Undelivered Mail Returned to Sender\r\n"
        "Auto-Submitted: auto-replied\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="B"\r\n\r\n'
        "--B\r\nContent-Type: text/plain\r\n\r\nThis is the mail system.\r\n"
        "--B\r\nContent-Type: message/delivery-status\r\n\r\n"
        "Reporting-MTA: dns; mx.example.com\r\n\r\n"
        "Final-Recipient: rfc822; bob@example.com\r\n"
        f"Action: {action}\r\nStatus: {status}\r\n"
        f"Diagnostic-Code: smtp; 550 {status} user unknown\r\n\r\n--B--\r\n").encode()


def return_paths(table) -> dict[int, str]:
    table.inbox.all()
    return {int(VERP.match(m.sender).group(1)): m.sender for m in table.inbox.backend.sent}


def test_every_email_has_its_own_return_path(table):
    paths = return_paths(table)
    assert len(paths) == len(table.inbox.backend.sent) >= 3
    ids = {row.id for row in outbox(table.app)}
    assert set(paths) <= ids


def test_a_hard_bounce_marks_that_email_undeliverable_for_the_host(table, inbound):
    paths = return_paths(table)
    row_id, path = next(iter(paths.items()))
    sent_before = len(table.inbox.all())
    inbound.send(report(path), "", [path])
    row = load(table.app, Outbox, row_id)
    assert row.status == "undeliverable" and row.last_error.startswith("bounced: 5.1.1")
    assert len(table.inbox.all()) == sent_before  # nobody is answered
    admin = table.client.get(f"/admin/{table.admin}").get_data(as_text=True)
    assert "came back as undeliverable" in admin


@pytest.mark.parametrize("case", ["delayed", "forged tag", "auto-reply"])
def test_other_mail_to_a_return_path_changes_nothing(table, inbound, case):
    row_id, path = next(iter(return_paths(table).items()))
    if case == "delayed":
        inbound.send(report(path, "delayed", "4.4.1"), "", [path])
    elif case == "forged tag":
        forged = re.sub(r"\.[0-9a-f]{16}@", "." + "0" * 16 + "@", path)
        inbound.send(report(forged), "", [forged])
    else:
        inbound.send(b"From: bob@example.com\r\nAuto-Submitted: auto-replied\r\n"
                     b"Subject: Out of office\r\n\r\nI am away.\r\n", "bob@example.com", [path])
    assert load(table.app, Outbox, row_id).status == "sent"


def test_an_address_that_keeps_bouncing_gets_no_more_mail_and_the_host_is_told(table,
                                                                                inbound):
    bob = PLAYERS[1].email
    table.app.config["BOUNCE_LIMIT"] = 2
    while len(table.inbox.to(bob)) < 2:
        table.step()
    rows = [r for r in outbox(table.app, Outbox.rcpt == bob) if r.status == "sent"][:2]
    paths = return_paths(table)
    for row in rows:
        inbound.send(report(paths[row.id]), "", [paths[row.id]])
    assert load(table.app, Suppression, bob) is not None
    with table.app.app_context(), session_scope() as s:
        (told,) = s.exec(select(EventLog).where(EventLog.game_id == table.game_id,
                                                EventLog.kind == "address_bouncing")).all()
    assert told.actor == 1 and told.visible_to == [0]
    (notice,) = [m for m in table.inbox.to(PLAYERS[0].email, "notice")
                 if "keep bouncing" in m.headline]
    assert "Bob" in notice.headline and notice.under("/admin/")
    before = len(table.inbox.to(bob))
    for _ in range(6):
        table.step()
    assert len(table.inbox.to(bob)) == before  # suppressed from now on
