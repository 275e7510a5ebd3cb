"""The IMAP path of replies by email, against a real IMAP server (Dovecot on loopback):
a reply in the mailbox is played, answered, and flagged read, found by its reply address
in whichever header the mail server wrote it; a delivery report to a return path marks
its email bounced; a reply to one of our addresses that must not play is flagged read
and plays nothing; mail to the mailbox itself stays unread for its owner."""

from __future__ import annotations

import os

import pytest
from imap_tools import MailBoxUnencrypted
from imap_tools.query import AND

from pbem import services
from pbem.kinds import Process
from pbem.mail import receive
from pbem.models import Outbox
from tests.imapserver import PASSWORD, USER, Dovecot, DovecotUnavailable
from tests.server.helpers import load
from tests.server.replying import reply_address, reply_to, wire
from tests.server.test_bounces import report, return_paths
from tests.server.test_health import heartbeats
from tests.server.test_replies import answers, moves, spoken


@pytest.fixture(scope="module")
def dovecot():
    server = Dovecot()
    try:
        server.start()
    except DovecotUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Dovecot is required under CI=true but could not start: {exc}")
        pytest.skip(f"Dovecot not available (under CI=true this fails): {exc}")
    yield server
    server.stop()


@pytest.fixture
def mailbox(dovecot, table):
    table.app.config.update(IMAP_HOST="127.0.0.1", IMAP_PORT=dovecot.port, IMAP_SSL=False,
                            IMAP_USER=USER, IMAP_PASSWORD=PASSWORD, IMAP_POLL_SECONDS=0.1)
    with MailBoxUnencrypted("127.0.0.1", dovecot.port).login(USER, PASSWORD) as box:
        box.delete([m.uid for m in box.fetch(mark_seen=False)])
        yield box


def unread(box) -> int:
    """Messages not flagged read, as another mail program sees them now."""
    box.client.noop()
    return len(list(box.fetch(AND(seen=False), mark_seen=False)))


def test_a_reply_in_the_mailbox_is_played_answered_and_flagged_read(table, mailbox):
    decision = table.open()
    m = table.mail(decision)
    mailbox.append(wire(reply_to(m, spoken(table, decision)[0])))
    handed = receive.poll_imap(table.app, services.receive_reply, once=True)
    assert handed == 1
    (move,) = moves(table.app, table.game_id)
    assert move.decision_id == decision.id
    assert answers(table.inbox, m.to_addr)[-1].headline.startswith("Recorded:")
    assert unread(mailbox) == 0
    assert receive.poll_imap(table.app, services.receive_reply, once=True) == 0


def test_replies_from_strangers_machines_and_to_no_token_are_flagged_read_and_play_nothing(
        table, mailbox):
    decision = table.open()
    m = table.mail(decision)
    mailbox.append(wire(reply_to(m, spoken(table, decision)[0], sender="eve@evil.example")))
    mailbox.append(wire(reply_to(m, spoken(table, decision)[0],
                                 headers={"Auto-Submitted": "auto-replied"})))
    mailbox.append(wire(reply_to(m, spoken(table, decision)[0], to="games+r.@pbem.test")))
    sent_before = len(table.inbox.all())
    assert receive.poll_imap(table.app, services.receive_reply, once=True) == 3
    assert moves(table.app, table.game_id) == []
    assert len(table.inbox.all()) == sent_before
    assert unread(mailbox) == 0


def test_the_mailboxs_own_mail_stays_unread_and_plays_nothing(table, mailbox):
    """The mailbox may be the host's own: mail not sent to one of our addresses (to the
    mailbox itself, with another tag, unreadable) is left for the person who reads it,
    and a reply that comes after it is still played."""
    decision = table.open()
    m = table.mail(decision)
    line = spoken(table, decision)[0]
    mailbox.append(b"\xff\xfe garbage without headers\r\n")
    mailbox.append(wire(reply_to(m, line, to="Friday games <games@pbem.test>")))
    mailbox.append(wire(reply_to(m, line, to="games+family@pbem.test")))
    for _ in range(2):
        assert receive.poll_imap(table.app, services.receive_reply, once=True) == 0
    assert unread(mailbox) == 3
    mailbox.append(wire(reply_to(m, line)))
    assert receive.poll_imap(table.app, services.receive_reply, once=True) == 1
    (move,) = moves(table.app, table.game_id)
    assert move.decision_id == decision.id
    assert unread(mailbox) == 3


@pytest.mark.parametrize("header", ["Delivered-To", "X-Delivered-To", "X-Original-To",
                                    "Envelope-To"])
def test_a_reply_found_only_in_the_delivery_headers_is_played(table, mailbox, header):
    """Gmail writes the plus address it delivered to in Delivered-To, Fastmail in
    X-Delivered-To, Postfix in X-Original-To, Exim in Envelope-To; the To header may
    name the mailbox alone (a blind copy), and case may change on the way."""
    decision = table.open()
    m = table.mail(decision)
    msg = reply_to(m, spoken(table, decision)[0], to="Friday games <games@pbem.test>")
    msg[header] = reply_address(m).upper()
    mailbox.append(wire(msg))
    assert receive.poll_imap(table.app, services.receive_reply, once=True) == 1
    (move,) = moves(table.app, table.game_id)
    assert move.decision_id == decision.id


def test_a_delivery_report_in_the_mailbox_marks_that_email_bounced(table, mailbox):
    row_id, path = next(iter(return_paths(table).items()))
    assert path.startswith("games+b.")
    sent_before = len(table.inbox.all())
    mailbox.append(b"Delivered-To: " + path.encode() + b"\r\n" + report(path))
    assert receive.poll_imap(table.app, services.receive_reply, once=True) == 1
    assert load(table.app, Outbox, row_id).status == "undeliverable"
    assert len(table.inbox.all()) == sent_before
    assert unread(mailbox) == 0


def test_each_poll_writes_inbounds_heartbeat_and_each_reply_counts(table, mailbox):
    """pbem.health: a poller that finds nothing is alive; one that hands a reply over
    says when."""
    receive.poll_imap(table.app, services.receive_reply, once=True)
    (beat,) = heartbeats(table.app, Process.INBOUND)
    assert (beat.messages, beat.message_at) == (0, None)
    decision = table.open()
    mailbox.append(wire(reply_to(table.mail(decision), spoken(table, decision)[0])))
    receive.poll_imap(table.app, services.receive_reply, once=True)
    (again,) = heartbeats(table.app, Process.INBOUND)
    assert again.messages == 1 and again.message_at is not None
    assert again.beat_at >= beat.beat_at
