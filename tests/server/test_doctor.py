"""``pbem doctor`` against real servers: an SMTP server (aiosmtpd) that takes STARTTLS
with a certificate the test made and trusts (SSL_CERT_FILE) and a login, Dovecot for the
IMAP mailbox, pbem's own receiver for the domain form, and a stub DNS server on loopback
answering real DNS packets. A good configuration passes every line and exits 0; each
broken one exits 1 with a ✗ line that names the fix; no secret is ever printed."""

from __future__ import annotations

import os
import re
import shutil
import smtplib
import subprocess
import threading
from datetime import UTC, datetime, timedelta

import pytest
from aiosmtpd.smtp import AuthResult, LoginPassword
from freezegun import freeze_time
from imap_tools import MailBoxUnencrypted

from pbem import create_app, health, services
from pbem.db import get_engine, session_scope
from pbem.doctor import CHECKS
from pbem.kinds import EmailTemplate, Process
from pbem.mail import receive
from pbem.models import Outbox
from tests.dnsstub import DnsStub, txt
from tests.imapserver import PASSWORD as IMAP_PASSWORD
from tests.imapserver import USER as IMAP_USER
from tests.imapserver import Dovecot, DovecotUnavailable
from tests.pgcluster import free_port
from tests.server.conftest import SmtpServer, app_config
from tests.server.replying import reply_address, reply_to, wire

SMTP_USER, SMTP_PASSWORD = "games", "smtp-test-password-9d2f"
SECRET_KEY = "k" * 20 + "0123456789abcdef0123456789abcdef"
DOMAIN = "pbem.test"
DKIM_KEY = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + "x" * 300


# --------------------------------------------------------------------------- servers


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1, made with openssl."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return str(cert), str(key)


class TlsSmtpServer(SmtpServer):
    """The tests' SMTP server, taking mail only after STARTTLS and a login."""

    def __init__(self, certificate: tuple[str, str]) -> None:
        super().__init__()
        self.certificate = certificate

    def start(self) -> None:
        import ssl

        from aiosmtpd.controller import Controller

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*self.certificate)
        self._controller = Controller(
            self, hostname="127.0.0.1", port=self.port, tls_context=context,
            require_starttls=True, authenticator=self.authenticate, auth_require_tls=True)
        self._controller.start()

    @staticmethod
    def authenticate(server, session, envelope, mechanism, auth_data) -> AuthResult:
        ok = (isinstance(auth_data, LoginPassword) and auth_data.login == SMTP_USER.encode()
              and auth_data.password == SMTP_PASSWORD.encode())
        return AuthResult(success=ok, handled=False)  # False: aiosmtpd answers 535


@pytest.fixture(scope="module")
def smtp_tls(certificate):
    server = TlsSmtpServer(certificate)
    server.start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def trusted(certificate, monkeypatch):
    """The test's certificate is the one the system trusts (OpenSSL reads SSL_CERT_FILE
    at each new context), so STARTTLS is verified as it is in production."""
    monkeypatch.setenv("SSL_CERT_FILE", certificate[0])
    monkeypatch.delenv("PBEM_PROXY_HOPS", raising=False)


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


@pytest.fixture(scope="module")
def dns_stub():
    stub = DnsStub().start()
    yield stub
    stub.stop()


@pytest.fixture
def dns(dns_stub) -> DnsStub:
    """The stub's records for a domain that does everything right."""
    dns_stub.records = {
        (DOMAIN, "TXT"): txt("v=spf1 include:_spf.mail.test -all", "some-verification=1"),
        ("_spf.mail.test", "TXT"): txt("v=spf1 ip4:192.0.2.0/24 a:smtp.mail.test ~all"),
        ("smtp.mail.test", "A"): ["127.0.0.1"],
        (f"pbem._domainkey.{DOMAIN}", "TXT"): txt(f"v=DKIM1; k=rsa; p={DKIM_KEY}"),
        (f"_dmarc.{DOMAIN}", "TXT"): txt("v=DMARC1; p=quarantine; rua=mailto:d@pbem.test"),
        (DOMAIN, "MX"): ["10 mx1.pbem.test.", "20 mx2.pbem.test."],
        ("replies.pbem.test", "MX"): ["10 mx1.pbem.test."],
    }
    return dns_stub


def good_config(smtp_tls, dovecot, dns) -> dict:
    return {"MAIL_BACKEND": "smtp", "MAIL_FROM": f"Friday games <games@{DOMAIN}>",
            "SMTP_HOST": "127.0.0.1", "SMTP_PORT": smtp_tls.port, "SMTP_STARTTLS": True,
            "SMTP_USER": SMTP_USER, "SMTP_PASSWORD": SMTP_PASSWORD,
            "BASE_URL": "https://games.pbem.test", "SECRET_KEY": SECRET_KEY, "PROXY_HOPS": 1,
            "IMAP_HOST": "127.0.0.1", "IMAP_PORT": dovecot.port, "IMAP_SSL": False,
            "IMAP_USER": IMAP_USER, "IMAP_PASSWORD": IMAP_PASSWORD,
            "DNS_SERVER": dns.server, "DKIM_SELECTOR": "pbem"}


@pytest.fixture
def build(sqlite_template, tmp_path, smtp_tls, dovecot, dns):
    """``build(**changes)``: an app on a migrated SQLite database with the good
    configuration and ``changes``; the database kind is not what these tests are about."""
    apps = []

    def make(**changes):
        path = tmp_path / f"pbem{len(apps)}.sqlite3"
        shutil.copyfile(sqlite_template, path)
        config = app_config(f"sqlite:///{path}", tmp_path)
        app = create_app(config | good_config(smtp_tls, dovecot, dns) | changes)
        apps.append(app)
        return app

    make.smtp = smtp_tls
    yield make
    for app in apps:
        get_engine(app).dispose()


def doctor(app, *args: str, clock: bool = True) -> tuple[int, dict[str, str]]:
    """Run the command; its exit status, and each check's line (with its fix line, if
    any) by the check's name. ``clock``: a clock has just swept (its heartbeat), as on
    a server that runs."""
    if clock:
        with app.app_context():
            health.beat(Process.CLOCK, swept=0.02)
    result = app.test_cli_runner().invoke(args=["pbem", "doctor", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    names = [f"{area} {name}" for area, name, _ in CHECKS]
    lines: dict[str, str] = {}
    last = ""
    for line in result.output.splitlines():
        named = [n for n in names if line[:1] in "✓✗–" and line[2:].startswith(n + " ")]
        if named:
            last = named[0]
            lines[last] = line
        elif line.startswith("  ") and last:
            lines[last] += "\n" + line
    lines["output"] = result.output
    return result.exit_code, lines


# --------------------------------------------------------------------------- good


def test_a_good_configuration_passes_every_check_and_exits_0(make_app, smtp_tls, dovecot, dns,
                                                              tmp_path):
    app = make_app(**good_config(smtp_tls, dovecot, dns))
    status, lines = doctor(app)
    print(lines["output"])
    assert status == 0, lines["output"]
    assert "✗" not in lines["output"]
    marks = {name: line[0] for name, line in lines.items() if name != "output"}
    swept = re.search(r"last sweep (\d+) s ago", lines["clock heartbeat"])
    assert swept and int(swept[1]) <= 10  # the sweep just before (the checks take a while)
    assert marks.pop("replies receiver") == "–"  # replies come by IMAP
    assert set(marks.values()) == {"✓"}, marks
    assert "STARTTLS, certificate verified" in lines["smtp TLS"]
    assert f"logged in as {SMTP_USER}" in lines["smtp login"]
    assert "everything checked is in order" in lines["output"]


def test_the_dns_lines_read_the_stub_resolvers_records(build, dns):
    status, lines = doctor(build())
    assert status == 0, lines["output"]
    assert "covers 127.0.0.1 (127.0.0.1) by a:smtp.mail.test" in lines["dns SPF"]
    assert f"rsa key at pbem._domainkey.{DOMAIN}" in lines["dns DKIM"]
    assert f"p=quarantine at _dmarc.{DOMAIN}" in lines["dns DMARC"]
    assert "mx1.pbem.test (10), mx2.pbem.test (20)" in lines["dns MX"]
    assert ("_spf.mail.test", "TXT") in dns.queries
    assert ("smtp.mail.test", "A") in dns.queries


def test_the_domain_form_checks_the_receiver_and_the_inbound_domains_mx(build, dns):
    port = free_port()
    app = build(INBOUND_ADDRESSES="domain", INBOUND_DOMAIN="replies.pbem.test",
                INBOUND_PORT=port, IMAP_HOST=None)
    receiver = receive.smtp_receiver(app, services.receive_reply)
    try:
        status, lines = doctor(app)
    finally:
        receiver.stop()
    assert status == 0, lines["output"]
    assert f"127.0.0.1:{port} takes reply addresses" in lines["replies receiver"]
    assert lines["replies IMAP"].startswith("–")
    assert "replies.pbem.test: mx1.pbem.test (10)" in lines["dns MX"]


def test_send_to_sends_one_test_email_through_the_smtp_server(build, smtp_tls):
    before = len(smtp_tls.mails)
    status, lines = doctor(build(), "--send-to", "ann@example.org", "--wait", "0")
    assert status == 0, lines["output"]
    assert "✓ test email  to ann@example.org" in lines["output"]
    assert len(smtp_tls.mails) == before + 1
    assert smtp_tls.recipients[-1] == ["ann@example.org"]
    assert "pbem doctor: test email" in smtp_tls.mails[-1].subject
    assert reply_address(smtp_tls.mails[-1]).startswith("games+r.")


def answer_when_it_arrives(smtp_tls, deliver) -> threading.Thread:
    """In a thread: once the next email reaches the SMTP server, answer it as its reader
    would, handing the answer to ``deliver`` (the mail server of the reply address)."""
    before = len(smtp_tls.mails)

    def answer() -> None:
        with smtp_tls.arrived:
            smtp_tls.arrived.wait_for(lambda: len(smtp_tls.mails) > before, timeout=20)
        test_mail = smtp_tls.mails[before]
        deliver(reply_address(test_mail), wire(reply_to(test_mail, "It arrived.")))

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return thread


def test_send_to_waits_for_the_reply_through_the_receiver(build):
    port = free_port()
    app = build(INBOUND_ADDRESSES="domain", INBOUND_DOMAIN="replies.pbem.test",
                INBOUND_PORT=port, IMAP_HOST=None)
    receiver = receive.smtp_receiver(app, services.receive_reply)

    def to_receiver(address: str, raw: bytes) -> None:
        with smtplib.SMTP("127.0.0.1", port, timeout=10) as conn:
            conn.sendmail("ann@example.org", [address], raw)

    try:
        answering = answer_when_it_arrives(build.smtp, to_receiver)
        status, lines = doctor(app, "--send-to", "ann@example.org", "--wait", "20")
        answering.join(5)
    finally:
        receiver.stop()
    assert status == 0, lines["output"]
    assert "✓ reply       a reply came back through `pbem inbound`" in lines["output"]


def test_send_to_waits_for_the_reply_through_the_imap_mailbox(build, dovecot):
    app = build(IMAP_POLL_SECONDS=0.2)
    stop = threading.Event()

    def to_mailbox(address: str, raw: bytes) -> None:
        with MailBoxUnencrypted("127.0.0.1", dovecot.port).login(IMAP_USER,
                                                                  IMAP_PASSWORD) as box:
            box.append(raw)

    poller = threading.Thread(target=receive.poll_imap,
                              args=(app, services.receive_reply, stop), daemon=True)
    poller.start()
    try:
        answering = answer_when_it_arrives(build.smtp, to_mailbox)
        status, lines = doctor(app, "--send-to", "ann@example.org", "--wait", "20")
        answering.join(5)
    finally:
        stop.set()
        poller.join(10)
    assert status == 0, lines["output"]
    assert "✓ reply       a reply came back through `pbem inbound`" in lines["output"]


def test_a_reply_left_in_the_mailbox_says_the_poller_does_not_run(build, dovecot):
    def to_mailbox(address: str, raw: bytes) -> None:
        with MailBoxUnencrypted("127.0.0.1", dovecot.port).login(IMAP_USER,
                                                                  IMAP_PASSWORD) as box:
            box.append(raw)

    app = build()
    answering = answer_when_it_arrives(build.smtp, to_mailbox)
    status, lines = doctor(app, "--send-to", "ann@example.org", "--wait", "3")
    answering.join(5)
    assert status == 1
    assert "✗ reply       the reply reached the mailbox of pbem" in lines["output"]
    assert "fix: start `flask --app pbem pbem inbound --imap`" in lines["output"]


def test_no_reply_in_time_fails_with_what_to_check(build):
    status, lines = doctor(build(), "--send-to", "ann@example.org", "--wait", "1")
    assert status == 1
    assert "✗ reply       no reply came back in 1 s" in lines["output"]


# --------------------------------------------------------------------------- broken


def test_a_wrong_smtp_password_fails_the_login_with_its_fix(build):
    status, lines = doctor(build(SMTP_PASSWORD="wrong-password"))
    assert status == 1
    assert lines["smtp login"].startswith("✗ smtp login")
    assert "535" in lines["smtp login"]
    assert "fix: check PBEM_SMTP_USER and PBEM_SMTP_PASSWORD" in lines["smtp login"]
    assert lines["smtp sender"].startswith("– smtp sender")
    assert "wrong-password" not in lines["output"]


def test_a_closed_smtp_port_fails_the_connection_with_its_fix(build):
    status, lines = doctor(build(SMTP_PORT=free_port()))
    assert status == 1
    assert lines["smtp connects"].startswith("✗")
    assert "fix: check PBEM_SMTP_HOST and PBEM_SMTP_PORT" in lines["smtp connects"]
    assert lines["smtp login"].startswith("–")


def test_starttls_off_while_the_server_offers_it_is_a_failure(build):
    status, lines = doctor(build(SMTP_STARTTLS=False))
    assert status == 1
    assert "fix: set PBEM_SMTP_STARTTLS=true" in lines["smtp TLS"]


def test_an_untrusted_certificate_fails_starttls(build, monkeypatch, tmp_path):
    other = tmp_path / "empty.pem"
    other.write_text("")
    monkeypatch.setenv("SSL_CERT_FILE", str(other))
    status, lines = doctor(build())
    assert status == 1
    assert "STARTTLS failed" in lines["smtp TLS"] and "CERTIFICATE_VERIFY_FAILED" in lines[
        "smtp TLS"]


def test_an_http_base_url_and_a_short_secret_key_fail_with_their_fixes(build):
    status, lines = doctor(build(BASE_URL="http://games.pbem.test", SECRET_KEY="short-key"))
    assert status == 1
    assert lines["config base URL"].startswith("✗")
    assert "fix: set PBEM_BASE_URL to the https address" in lines["config base URL"]
    assert lines["config secret key"].startswith("✗ config secret key")
    assert "9 characters" in lines["config secret key"]
    assert "fix: set PBEM_SECRET_KEY" in lines["config secret key"]
    assert "short-key" not in lines["output"]


def test_an_https_base_url_without_proxy_hops_asks_for_them(build):
    status, lines = doctor(build(PROXY_HOPS=0))
    assert status == 1
    assert "fix: set PBEM_PROXY_HOPS" in lines["config proxy hops"]


def test_no_secret_is_printed_even_where_a_server_echoes_it(build):
    status, lines = doctor(build(SMTP_USER=SMTP_PASSWORD, IMAP_USER=IMAP_PASSWORD))
    assert status == 1
    for secret in (SMTP_PASSWORD, IMAP_PASSWORD, SECRET_KEY):
        assert secret not in lines["output"]
    assert "***" in lines["smtp login"]


def test_a_database_not_migrated_fails_with_the_migrate_command(build, tmp_path):
    (tmp_path / "new.sqlite3").touch()
    status, lines = doctor(build(DATABASE_URL=f"sqlite:///{tmp_path / 'new.sqlite3'}"), clock=False)
    assert status == 1
    assert lines["database reachable"].startswith("✓")
    assert "no schema (never migrated)" in lines["database migrated"]
    assert "fix: run `flask --app pbem pbem migrate`" in lines["database migrated"]


def test_a_missing_sqlite_file_is_not_created_and_asks_for_migrate(build, tmp_path):
    path = tmp_path / "nowhere" / "pbem.sqlite3"
    status, lines = doctor(build(DATABASE_URL=f"sqlite:///{path}"), clock=False)
    assert status == 1
    assert f"no database file at {path}" in lines["database reachable"]
    assert "fix: run `flask --app pbem pbem migrate` to create it" in lines["database reachable"]
    assert not path.exists()


def test_a_database_behind_on_migrations_names_both_revisions(make_app, smtp_tls, dovecot,
                                                             dns):
    app = make_app(**good_config(smtp_tls, dovecot, dns))
    engine = get_engine(app)
    with engine.connect() as conn:
        (head,) = conn.exec_driver_sql("SELECT version_num FROM alembic_version").one()
    with engine.begin() as conn:  # the revision before head, as a database not upgraded
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0014'")
    try:
        status, lines = doctor(app)
    finally:  # PostgreSQL's database serves the next tests
        with engine.begin() as conn:
            conn.exec_driver_sql(f"UPDATE alembic_version SET version_num = '{head}'")
    assert status == 1
    assert f"schema at 0014, the code's head is {head}" in lines["database migrated"]


def test_an_unreachable_database_fails_and_skips_what_needs_it(build):
    url = f"postgresql+psycopg://pbem:db-secret-77@127.0.0.1:{free_port()}/pbem"
    status, lines = doctor(build(DATABASE_URL=url), clock=False)
    assert status == 1
    assert lines["database reachable"].startswith("✗")
    assert "fix: check PBEM_DATABASE_URL" in lines["database reachable"]
    assert lines["database migrated"].startswith("–")
    assert "db-secret-77" not in lines["output"]


def test_a_domain_without_spf_or_dmarc_fails_both_with_the_records_to_publish(build, dns):
    del dns.records[(DOMAIN, "TXT")]
    del dns.records[(f"_dmarc.{DOMAIN}", "TXT")]
    status, lines = doctor(build())
    assert status == 1
    assert f"no SPF record (TXT v=spf1) at {DOMAIN}" in lines["dns SPF"]
    assert f"fix: publish one TXT record at {DOMAIN}: v=spf1" in lines["dns SPF"]
    assert f"no DMARC record (TXT v=DMARC1) at _dmarc.{DOMAIN}" in lines["dns DMARC"]
    assert f"fix: publish a TXT record at _dmarc.{DOMAIN}: v=DMARC1" in lines["dns DMARC"]
    assert lines["dns DKIM"].startswith("✓")


def test_an_spf_record_that_leaves_out_the_smtp_server_fails(build, dns):
    dns.records[(DOMAIN, "TXT")] = txt("v=spf1 ip4:192.0.2.0/24 -all")
    status, lines = doctor(build(SMTP_HOST="localhost"))
    assert lines["dns SPF"].startswith("✓")  # a relay on this machine: not held against it
    dns.records[(DOMAIN, "TXT")] = txt("v=spf1 ip4:192.0.2.0/24 -all", "v=spf1 -all")
    status, lines = doctor(build())
    assert status == 1
    assert "2 SPF records" in lines["dns SPF"]


def test_spf_with_more_than_ten_lookups_is_broken(build, dns):
    dns.records[(DOMAIN, "TXT")] = txt("v=spf1 " + " ".join(
        f"include:s{i}.mail.test" for i in range(11)) + " -all")
    for i in range(11):
        dns.records[(f"s{i}.mail.test", "TXT")] = txt("v=spf1 ip4:192.0.2.1 ~all")
    status, lines = doctor(build())
    assert status == 1
    assert "more than SPF's 10" in lines["dns SPF"]


def test_dkim_without_a_selector_is_not_checked_and_says_how(build, dns):
    status, lines = doctor(build(DKIM_SELECTOR=None))
    assert status == 0, lines["output"]
    assert lines["dns DKIM"].startswith("–")
    assert "to check: set PBEM_DKIM_SELECTOR" in lines["dns DKIM"]


def test_a_missing_dkim_key_and_mx_fail(build, dns):
    del dns.records[(f"pbem._domainkey.{DOMAIN}", "TXT")]
    del dns.records[(DOMAIN, "MX")]
    status, lines = doctor(build())
    assert status == 1
    assert f"no DKIM key at pbem._domainkey.{DOMAIN}" in lines["dns DKIM"]
    assert f"no MX for {DOMAIN}" in lines["dns MX"]


def test_a_dns_server_that_does_not_answer_fails_the_dns_lines(build):
    status, lines = doctor(build(DNS_SERVER=f"127.0.0.1:{free_port()}"))
    assert status == 1
    assert "DNS did not answer" in lines["dns SPF"]
    assert "fix: check PBEM_DNS_SERVER" in lines["dns SPF"]


def test_a_wrong_imap_password_fails_with_its_fix(build):
    status, lines = doctor(build(IMAP_PASSWORD="not-the-password"))
    assert status == 1
    assert lines["replies IMAP"].startswith("✗")
    assert "fix: check PBEM_IMAP_HOST" in lines["replies IMAP"]


def test_the_mailbox_form_without_imap_says_what_reads_the_replies(build):
    status, lines = doctor(build(IMAP_HOST=None))
    assert status == 1
    assert "fix: set PBEM_IMAP_HOST" in lines["replies IMAP"]


def test_a_receiver_that_is_not_running_fails_with_the_command_to_start(build):
    status, lines = doctor(build(INBOUND_ADDRESSES="domain", INBOUND_DOMAIN="replies.pbem.test",
                                 INBOUND_PORT=free_port()))
    assert status == 1
    assert "fix: start `flask --app pbem pbem inbound`" in lines["replies receiver"]


def test_an_email_overdue_in_the_outbox_fails_the_oldest_due_line(make_app, smtp_tls, dovecot,
                                                                  dns):
    app = make_app(**good_config(smtp_tls, dovecot, dns))
    now = datetime.now(UTC)
    with app.app_context(), session_scope(app) as session:
        for i, (due, attempts) in enumerate([(now - timedelta(hours=2), 0),
                                             (now - timedelta(minutes=1), 3),
                                             (now + timedelta(hours=1), 0)]):
            session.add(Outbox(to_addr=f"p{i}@example.org", template=EmailTemplate.NOTICE,
                               idempotency_key=f"doctor-{i}", message_id=f"<{i}@pbem.test>",
                               next_attempt_at=due, attempts=attempts,
                               last_error="SMTPServerDisconnected: gone" if attempts else None))
    status, lines = doctor(app)
    assert status == 1
    assert "2 due now, 1 waiting for their time, 1 failed at least once" in lines[
        "outbox backlog"]
    assert "SMTPServerDisconnected: gone" in lines["outbox backlog"]
    assert "(2 h ago)" in lines["outbox oldest due"]
    assert "fix: is the clock running?" in lines["outbox oldest due"]


# --------------------------------------------------------------------------- SPF walked

PUBLIC = "93.184.215.14"  # the SMTP server as a public address (an IP literal: no lookup)


@pytest.fixture
def spf_of(build, dns):
    """``spf_of(record, **more_records)``: the SPF line for DOMAIN's ``record``, the SMTP
    server at PUBLIC."""
    from pbem import doctor as checks

    app = build(SMTP_HOST=PUBLIC)

    def check(record: str, **more: str):
        dns.records[(DOMAIN, "TXT")] = txt(record)
        for name, text in more.items():
            dns.records[(name.replace("_", "."), "TXT")] = txt(text)
        return checks.spf(checks.Probe(app, checks.make_resolver(app.config)), DOMAIN)

    return check


def test_spf_covering_the_smtp_server_through_an_include_and_redirect_passes(spf_of):
    found = spf_of("v=spf1 include:a.mail.test -all", a_mail_test="v=spf1 redirect=b.mail.test",
                   b_mail_test=f"v=spf1 ip4:192.0.2.0/24 ip4:{PUBLIC[:-3]}.0/24 ~all")
    assert found.ok is True
    assert f"by ip4:{PUBLIC[:-3]}.0/24" in found.what


def test_spf_that_does_not_cover_the_smtp_server_fails_and_says_so(spf_of):
    found = spf_of("v=spf1 ip4:192.0.2.0/24 include:a.mail.test -all",
                   a_mail_test="v=spf1 ip6:2001:db8::/32 ~all")
    assert found.ok is False
    assert f"does not cover {PUBLIC}" in found.what
    assert "include:" in found.fix


def test_spf_that_lets_anyone_send_fails(spf_of):
    found = spf_of("v=spf1 +all")
    assert found.ok is False
    assert "lets anyone send" in found.what


def test_spf_with_a_term_not_evaluated_says_so_rather_than_fail(spf_of):
    found = spf_of("v=spf1 exists:%{i}.spf.mail.test -all")
    assert found.ok is True
    assert "is not evaluated here" in found.what


def test_a_dns_server_setting_that_is_no_address_fails_the_dns_lines(build):
    status, lines = doctor(build(DNS_SERVER="dns.example.org:port"))
    assert status == 1
    assert "no DNS resolver" in lines["dns SPF"]
    assert "fix: check PBEM_DNS_SERVER (ip or ip:port)" in lines["dns SPF"]


# --------------------------------------------------------------------------- the clock


def test_without_a_clock_the_heartbeat_fails_with_the_command_that_starts_it(build):
    status, lines = doctor(build(), clock=False)
    assert status == 1
    assert " ".join(lines["clock heartbeat"].split()).startswith(
        "✗ clock heartbeat no clock has swept")
    assert "fix: start the clock: `flask --app pbem pbem clock`" in lines["clock heartbeat"]


def test_a_bots_move_waiting_for_a_worker_fails_the_bots_line_with_the_command(build):
    """No bot worker alive, and a bot's move due for 10 minutes (the clock leaves bots to
    workers said to run elsewhere): the bots line fails and names the command that
    starts workers; once a worker beats and nothing waits, it passes."""
    app = build(BOT_WORKERS=1, BOT_PAUSE_SECONDS=0)
    bot = services.PlayerIn("", "", "en", "UTC", bot="easy")
    with freeze_time(datetime.now(UTC) - timedelta(minutes=10)), app.app_context():
        created = services.create_game("cavemen", [services.PlayerIn("Ann", "ann@x.test"),
                                                   bot, bot], None, seed=7,
                                       confirm_by_email=False, start=True)
    status, lines = doctor(app)
    assert status == 1
    line = " ".join(lines["bots workers"].split())
    assert line.startswith("✗ bots workers no bot worker alive"), line
    assert "1 bot move(s) due, the oldest for 10 min" in line
    assert "fix: start bot workers: `flask --app pbem pbem bots`" in line
    with app.app_context(), session_scope() as s:
        s.connection().exec_driver_sql("UPDATE game SET status = 'finished' WHERE id = ?",
                                       (created.game_id,))
    with app.app_context():
        health.beat(Process.BOTS)
    status, lines = doctor(app)
    assert lines["bots workers"].startswith("✓"), lines["bots workers"]
    assert "1 bot worker(s) alive, 0 bot move(s) due" in lines["bots workers"]


def test_a_clock_silent_for_longer_than_its_limit_fails(build):
    app = build(CLOCK_SILENT_SECONDS=300)
    with freeze_time(datetime.now(UTC) - timedelta(minutes=10)), app.app_context():
        health.beat(Process.CLOCK, swept=0.5)
    status, lines = doctor(app, clock=False)
    assert status == 1
    line = " ".join(lines["clock heartbeat"].split())
    assert line.startswith("✗ clock heartbeat last sweep 10 min ago (took 0.50 s)"), line
    assert "silent for more than 5 min" in line and "fix: start the clock" in line
