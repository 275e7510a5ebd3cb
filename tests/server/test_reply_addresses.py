"""Reply addresses and return paths: made from the sender's own mailbox by plus
addressing (``games+r.<token>@``, ``games+b.<id>.<tag>@``), so one ordinary mailbox gets
every reply and bounce, or in today's form at an inbound domain of the host's own
(``play+<token>@``, ``bounce+<id>-<tag>@``). Every form, with either separator, is read
at all times, so addresses already sent keep working after a change; anything else
sent to the receiver is refused or dropped without a word.

Replies go over SMTP into the real inbound receiver on loopback; the IMAP side is in
``test_replies_imap.py``."""

from __future__ import annotations

import hmac
import re
import smtplib

import pytest

from pbem import mail
from pbem.mail.headers import parse_address
from pbem.mail.inbound import MAX_MAILBOX_LOCAL, Addresses, new_reply_token
from pbem.models import Outbox
from tests.server.conftest import new_table
from tests.server.helpers import Inbox, load
from tests.server.replying import Inbound, reply_address
from tests.server.test_bounces import report
from tests.server.test_replies import answers, commands, moves

SECRET = "k"
TOKEN = "abcdefghijklmnopqrstuvwxyz234567"  # 32 base32 characters
MAILBOX = Addresses("mailbox", "+", "games@example.org", "in.example.org")
ALL_WAYS = [Addresses(style, sep, "games@example.org", "in.example.org")
            for style in ("mailbox", "domain") for sep in ("+", "-")]


def tag(row_id: int) -> str:
    """The return path's tag as today's servers compute it (an HMAC of the row id)."""
    return hmac.new(SECRET.encode(), f"bounce:{row_id}".encode(), "sha256").hexdigest()[:16]


# --------------------------------------------------------------------------- the forms


def test_the_mailbox_form_is_made_from_the_senders_own_address():
    assert MAILBOX.reply(TOKEN) == f"games+r.{TOKEN}@example.org"
    assert MAILBOX.bounce(42, SECRET) == f"games+b.42.{tag(42)}@example.org"


def test_the_domain_form_is_exactly_todays():
    made = Addresses("domain", "+", "games@example.org", "in.example.org")
    assert made.reply(TOKEN) == f"play+{TOKEN}@in.example.org"
    assert made.bounce(42, SECRET) == f"bounce+42-{tag(42)}@in.example.org"


def test_the_separator_can_be_a_dash():
    made = Addresses("mailbox", "-", "games@example.org", "in.example.org")
    assert made.reply(TOKEN) == f"games-r.{TOKEN}@example.org"
    assert made.bounce(7, SECRET) == f"games-b.7.{tag(7)}@example.org"


@pytest.mark.parametrize("maker", ALL_WAYS, ids=lambda a: f"{a.style}{a.separator}")
@pytest.mark.parametrize("reader", ALL_WAYS, ids=lambda a: f"{a.style}{a.separator}")
def test_every_form_and_separator_is_read_whatever_is_made_now(maker, reader):
    assert reader.token(maker.reply(TOKEN)) == TOKEN
    assert reader.bounced(maker.bounce(99, SECRET), SECRET) == 99
    assert reader.is_ours(maker.reply(TOKEN)) and reader.is_ours(maker.bounce(99, SECRET))


def test_addresses_are_read_whatever_the_case_a_mail_server_gives_them():
    shouted = f"<GAMES+R.{TOKEN.upper()}@EXAMPLE.ORG>"
    assert MAILBOX.token(shouted) == TOKEN
    assert MAILBOX.bounced(MAILBOX.bounce(5, SECRET).upper(), SECRET) == 5
    capital = Addresses("mailbox", "+", "Games@Example.org", "example.org")
    assert capital.reply(TOKEN) == f"Games+r.{TOKEN}@Example.org"  # as the host wrote it
    assert capital.token(f"games+r.{TOKEN}@example.org") == TOKEN


def test_a_sender_address_that_is_already_plus_addressed_still_works():
    made = Addresses("mailbox", "+", "me+games@gmail.com", "gmail.com")
    assert made.reply(TOKEN) == f"me+games+r.{TOKEN}@gmail.com"
    assert made.token(made.reply(TOKEN)) == TOKEN
    assert made.token(f"me+r.{TOKEN}@gmail.com") is None  # another tag of the mailbox


@pytest.mark.parametrize("address", [
    "games@example.org",  # the mailbox itself, without a tag
    "Games@Example.org",
    "games+r.@example.org",
    "games+r@example.org",
    "games+b.x.y@example.org",
    "games+b.1.@example.org",
    f"games+b.1.{'0' * 16}@example.org",  # a forged tag
    f"games+r.{TOKEN}x@example.org",  # a token too long
    f"games+r.{TOKEN[:-1]}1@example.org",  # not base32
    f"games+r.{TOKEN}@other.example",  # another host
    f"gamesx+r.{TOKEN}@example.org",  # another mailbox
    f"xgames+r.{TOKEN}@example.org",
    f"games_r.{TOKEN}@example.org",  # a separator we do not make
    f"games+r.{TOKEN}\r\n@example.org",  # CR/LF
    f"games+r.{TOKEN}@example.org\r\nBcc: x@evil.example",
    f"games+r.{TOKEN}\n",
    f"games+r.{TOKEN}",  # no host
    f"play+{TOKEN}@example.org",  # the domain form at the mailbox's host
    f"play+r.{TOKEN}@in.example.org",  # the mailbox form at the inbound domain
    "games+r." + "a" * 100_000 + "@example.org",  # huge
    "", "@", "<>", "+r.@",
])
def test_garbage_is_nobodys_reply_address_or_return_path(address):
    assert MAILBOX.token(address) is None
    assert MAILBOX.bounced(address, SECRET) is None


@pytest.mark.parametrize("address", ["games@example.org", "games+family@example.org",
                                     "games+@example.org", "other@example.org"])
def test_the_mailboxs_own_mail_is_not_ours(address):
    assert not MAILBOX.is_ours(address)


def test_the_longest_mailbox_allowed_still_makes_addresses_rfc_5321_takes():
    local = "g" * MAX_MAILBOX_LOCAL
    made = Addresses("mailbox", "+", f"{local}@example.org", "example.org")
    for address in (made.reply(new_reply_token()), made.bounce(10**15 - 1, SECRET)):
        assert len(address.split("@")[0]) <= 64
        assert parse_address(address) == address  # the server's own address check


# --------------------------------------------------------------------------- configuration


def test_without_an_inbound_domain_the_addresses_are_the_mailboxs(make_app):
    app = make_app()
    assert app.config["INBOUND_ADDRESSES"] == "mailbox"
    assert app.config["INBOUND_SEPARATOR"] == "+"


def test_a_host_with_an_inbound_domain_of_its_own_keeps_todays_form(make_app):
    assert make_app(INBOUND_DOMAIN="in.pbem.test").config["INBOUND_ADDRESSES"] == "domain"
    chosen = make_app(INBOUND_DOMAIN="in.pbem.test", INBOUND_ADDRESSES="Mailbox")
    assert chosen.config["INBOUND_ADDRESSES"] == "mailbox"


def test_an_inbound_domain_that_is_the_senders_own_gives_the_mailbox_form(make_app):
    """The README told hosts with an ordinary account to set the account's domain as
    the inbound domain: play+…@gmail.com would be a stranger's mailbox."""
    app = make_app(MAIL_FROM="Games <friday.games@gmail.com>", INBOUND_DOMAIN="GMail.com")
    assert app.config["INBOUND_ADDRESSES"] == "mailbox"


@pytest.mark.parametrize("setting", [{"INBOUND_ADDRESSES": "catchall"},
                                     {"INBOUND_SEPARATOR": "_"},
                                     {"INBOUND_SEPARATOR": "+\r\nBcc: x"}])
def test_a_form_or_separator_we_do_not_make_is_refused_at_start(make_app, setting):
    with pytest.raises(mail.ConfigError, match="PBEM_INBOUND_"):
        make_app(**setting)


def test_a_sender_whose_local_part_is_too_long_for_reply_addresses_is_refused(make_app):
    long_local = "g" * (MAX_MAILBOX_LOCAL + 1)
    with pytest.raises(mail.ConfigError, match="PBEM_MAIL_FROM .* at most 29"):
        make_app(MAIL_FROM=f"Games <{long_local}@pbem.test>")
    app = make_app(MAIL_FROM=f"Games <{long_local}@pbem.test>", INBOUND_ADDRESSES="domain")
    assert app.config["INBOUND_ADDRESSES"] == "domain"  # play+… does not grow with it


# --------------------------------------------------------------------------- over SMTP


@pytest.fixture
def inbound(app):
    receiver = Inbound(app)
    yield receiver
    receiver.stop()


def return_paths(table) -> dict[int, str]:
    """Outbox row id -> the envelope sender its email went out with."""
    table.inbox.all()
    out = {}
    for sent in table.inbox.backend.sent:
        m = re.search(r"(?:b\.(\d+)\.|bounce[+-](\d+)-)[0-9a-f]{16}@", sent.sender)
        out[int(m.group(1) or m.group(2))] = sent.sender
    return out


def play_one(table, receiver, m, decision) -> None:
    receiver.reply(m, commands(table, decision)[0])
    (move,) = moves(table.app, table.game_id)
    assert move.decision_id == decision.id


def test_a_reply_to_a_mailbox_form_address_plays_the_move(table, inbound):
    decision = table.open()
    m = table.mail(decision)
    assert re.fullmatch(r"games\+r\.[a-z2-7]{32}@pbem\.test", reply_address(m))
    play_one(table, inbound, m, decision)
    assert answers(table.inbox, m.to_addr)[-1].headline.startswith("Recorded:")


def test_a_bounce_to_a_mailbox_form_return_path_marks_the_email_bounced(table, inbound):
    row_id, path = next(iter(return_paths(table).items()))
    assert re.fullmatch(r"games\+b\.\d+\.[0-9a-f]{16}@pbem\.test", path)
    inbound.send(report(path), "", [path])
    assert load(table.app, Outbox, row_id).status == "undeliverable"


def domain_table(make_app, **config):
    app = make_app(**config)
    return new_table(app, app.test_client(), Inbox(app))


def test_the_domain_form_plays_and_bounces_as_before(make_app):
    table = domain_table(make_app, INBOUND_DOMAIN="in.pbem.test")
    decision = table.open()
    m = table.mail(decision)
    assert re.fullmatch(r"play\+[a-z2-7]{32}@in\.pbem\.test", reply_address(m))
    receiver = Inbound(table.app)
    try:
        row_id, path = next(iter(return_paths(table).items()))
        assert re.fullmatch(r"bounce\+\d+-[0-9a-f]{16}@in\.pbem\.test", path)
        play_one(table, receiver, m, decision)
        receiver.send(report(path), "", [path])
        assert load(table.app, Outbox, row_id).status == "undeliverable"
    finally:
        receiver.stop()


@pytest.mark.parametrize(("before", "after"), [
    ({"INBOUND_ADDRESSES": "domain"}, {"INBOUND_ADDRESSES": "mailbox"}),
    ({"INBOUND_ADDRESSES": "mailbox"}, {"INBOUND_ADDRESSES": "domain"}),
    ({"INBOUND_SEPARATOR": "-"}, {"INBOUND_SEPARATOR": "+"}),
], ids=["domain-to-mailbox", "mailbox-to-domain", "dash-to-plus"])
def test_addresses_sent_before_a_change_keep_working(make_app, before, after):
    table = domain_table(make_app, **before)
    decision = table.open()
    old = table.mail(decision)
    row_id, old_path = next(iter(return_paths(table).items()))
    table.app.config.update(after)  # the host changes the setting and restarts
    receiver = Inbound(table.app)
    try:
        play_one(table, receiver, old, decision)
        answer = answers(table.inbox, old.to_addr)[-1]
        assert reply_address(answer) != reply_address(old)  # made the new way now
        assert answer.headline.startswith("Recorded:")
        receiver.send(report(old_path), "", [old_path])
        assert load(table.app, Outbox, row_id).status == "undeliverable"
    finally:
        receiver.stop()


def test_the_dash_separator_plays_a_reply(make_app):
    table = domain_table(make_app, INBOUND_SEPARATOR="-")
    decision = table.open()
    m = table.mail(decision)
    assert re.fullmatch(r"games-r\.[a-z2-7]{32}@pbem\.test", reply_address(m))
    assert all(p.startswith("games-b.") for p in return_paths(table).values())
    receiver = Inbound(table.app)
    try:
        play_one(table, receiver, m, decision)
    finally:
        receiver.stop()


@pytest.mark.parametrize("rcpt", ["games@pbem.test", "Games@PBEM.test",
                                  "games+family@pbem.test", "games+@pbem.test",
                                  "ann@pbem.test"])
def test_the_receiver_takes_no_mail_for_the_mailbox_itself(table, inbound, rcpt):
    with pytest.raises(smtplib.SMTPRecipientsRefused):
        inbound.send(b"Subject: hi\r\n\r\nbid 1\r\n", "a@example.com", [rcpt])


@pytest.mark.parametrize("rcpt", [
    "games+r.@pbem.test", "games+b.x.y@pbem.test", "games+r.nonsense@pbem.test",
    "GAMES+R." + "A" * 32 + "@PBEM.TEST",  # well formed, no such token
    "forged tag",
])
def test_garbage_to_our_addresses_plays_and_answers_nothing(table, inbound, rcpt):
    decision = table.open()
    m = table.mail(decision)
    if rcpt == "forged tag":  # a real email's return path, its tag made up
        rcpt = re.sub(r"\.[0-9a-f]{16}@", "." + "0" * 16 + "@", return_paths(table)[
            max(return_paths(table))])
    sent_before = len(table.inbox.all())
    inbound.reply(m, commands(table, decision)[0], to=rcpt)
    assert moves(table.app, table.game_id) == []
    assert len(table.inbox.all()) == sent_before
    assert {load(table.app, Outbox, row).status for row in return_paths(table)} == {"sent"}


def test_a_huge_recipient_is_refused_and_the_receiver_goes_on(table, inbound):
    decision = table.open()
    m = table.mail(decision)
    with pytest.raises(smtplib.SMTPException):
        inbound.send(b"Subject: x\r\n\r\nbid 1\r\n", m.to_addr,
                     ["games+r." + "a" * 5000 + "@pbem.test"])
    play_one(table, inbound, m, decision)  # the real reply afterwards is played
