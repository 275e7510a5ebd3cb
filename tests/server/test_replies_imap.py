"""The IMAP path of replies by email, against a real IMAP server (Dovecot on loopback):
a reply in the mailbox is played, answered, and flagged read; a broken or foreign
message is flagged read too and plays nothing."""

from __future__ import annotations

import os

import pytest
from imap_tools import MailBoxUnencrypted
from imap_tools.query import AND

from pbem import services
from pbem.mail import receive
from tests.imapserver import PASSWORD, USER, Dovecot, DovecotUnavailable
from tests.server.replying import reply_to, wire
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


def test_broken_and_foreign_messages_are_flagged_read_and_play_nothing(table, mailbox):
    decision = table.open()
    m = table.mail(decision)
    mailbox.append(b"\xff\xfe garbage without headers\r\n")
    mailbox.append(wire(reply_to(m, spoken(table, decision)[0], sender="eve@evil.example")))
    mailbox.append(wire(reply_to(m, spoken(table, decision)[0],
                                 headers={"Auto-Submitted": "auto-replied"})))
    sent_before = len(table.inbox.all())
    assert receive.poll_imap(table.app, services.receive_reply, once=True) == 3
    assert moves(table.app, table.game_id) == []
    assert len(table.inbox.all()) == sent_before
    assert unread(mailbox) == 0
