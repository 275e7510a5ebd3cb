"""``flask --app pbem pbem doctor``: whether this server, as configured, will get its
emails to the players and their replies back, checked piece by piece.

Each check is a small function of a ``Probe`` (the app and what earlier checks found)
returning a ``Result``: ``ok`` True (✓), False (✗, with the fix) or None (–: does not
apply here, e.g. IMAP when replies come through the receiver). ``run`` prints them as a
table and says whether all passed. Nothing here writes to the database or sends mail,
except ``send_test`` (``--send-to``), which sends one email directly through the
configured mail server (not through the outbox: the answer comes at once, and the clock
need not run).

What is checked, and how far:

- configuration: the secret key set and long, the base URL https, ``PROXY_HOPS`` stated;
- database: reachable, and its schema at the migrations' head;
- SMTP (for the ``smtp`` backend): the server answers, speaks TLS (STARTTLS, the
  certificate verified as the sender does), takes the login, and accepts the sender's
  address in MAIL FROM (then RSET: nothing is sent);
- replies: the IMAP mailbox logs in and has its folder (the ``mailbox`` form), or the
  receiver answers on its port as ``pbem inbound`` and takes a reply address in RCPT
  (the ``domain`` form);
- DNS of the sender's domain, through ``PBEM_DNS_SERVER`` (``ip:port``) when set, else
  the system's resolver: SPF (the ``v=spf1`` record walked through ``include:`` and
  ``redirect=``, within SPF's 10 lookups; its ``ip4``/``ip6``/``a``/``mx`` terms are
  resolved and the SMTP server's own addresses looked up in them; ``exists``, ``ptr``
  and macros are not evaluated, and the address the mail server connects to is not
  always the one its mail leaves from, which the line says), DKIM (a ``p=`` key at
  ``<PBEM_DKIM_SELECTOR>._domainkey.<domain>``), DMARC (``v=DMARC1`` and its ``p=`` at
  ``_dmarc.<domain>``, else at the domain's last two labels), and MX of the domain the
  replies go to;
- the clock's heartbeat (not measured yet: always –) and the outbox: emails waiting,
  and how long the oldest one due has waited.

No secret is printed: the secret key, the SMTP and IMAP passwords and the database's
password are replaced by ``***`` wherever they would appear.
"""

from __future__ import annotations

import contextlib
import ipaddress
import smtplib
import socket
import ssl
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import click
from flask import Flask
from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlmodel import col

if TYPE_CHECKING:
    from pbem.health import Health

PASS, FAIL, NOT_APPLICABLE = "✓", "✗", "–"
MIN_SECRET_CHARS = 32
SPF_LOOKUP_LIMIT = 10  # RFC 7208 4.6.4: more DNS-querying terms are a permanent error
OVERDUE = timedelta(minutes=5)  # an email due longer than this: the clock or SMTP is stuck
PROBE_TIMEOUT = 10.0


class Result(NamedTuple):
    """What one check found: ``ok`` True, False or None (does not apply), what it saw,
    and for a failure how to fix it."""

    ok: bool | None
    what: str
    fix: str = ""


@dataclass
class Probe:
    """What the checks share: the app, the DNS resolver, the SMTP connection the SMTP
    checks take one after the other, and the mail domain's TXT records once read."""

    app: Flask
    resolver: Any = None
    smtp: smtplib.SMTP | None = None
    found: dict[str, Any] = field(default_factory=dict)

    @property
    def config(self) -> Any:
        return self.app.config

    def close(self) -> None:
        if self.smtp is not None:
            try:
                self.smtp.quit()
            except (OSError, smtplib.SMTPException):
                self.smtp.close()
            self.smtp = None


Check = Callable[[Probe], Result]

# --------------------------------------------------------------------------- configuration


def check_secret_key(probe: Probe) -> Result:
    key = str(probe.config.get("SECRET_KEY") or "")
    fix = ('set PBEM_SECRET_KEY to a long random value, e.g. the output of '
           '`python3 -c "import secrets; print(secrets.token_hex(32))"`, and keep it: '
           'when it changes, pages already open refuse their buttons and delivery reports of '
           'emails already sent are no longer recognised (the links themselves keep working)')
    if not key:
        return Result(False, "no secret key", fix)
    if len(key) < MIN_SECRET_CHARS:
        return Result(False, f"{len(key)} characters, fewer than {MIN_SECRET_CHARS}", fix)
    kept = Path(probe.app.instance_path) / "secret_key"
    if kept.is_file() and kept.read_text().strip() == key:
        return Result(True, f"{len(key)} characters, made and kept in {kept}: back it up "
                            "with the database")
    return Result(True, f"{len(key)} characters")


def check_base_url(probe: Probe) -> Result:
    from urllib.parse import urlsplit

    url = str(probe.config.get("BASE_URL") or "")
    parts = urlsplit(url)
    fix = ("set PBEM_BASE_URL to the https address players open, e.g. "
           "https://games.example.org, with TLS in front (deploy/caddy or deploy/nginx)")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return Result(False, f"{url!r} is not a web address", fix)
    if parts.scheme != "https":
        return Result(False, f"{url} is not https: every link in an email carries a "
                             "secret token, readable on the way", fix)
    if _is_local(parts.hostname):
        return Result(False, f"{url} names this machine: no player can open it", fix)
    return Result(True, url)


def check_proxy_hops(probe: Probe) -> Result:
    import os

    raw = probe.config.get("PROXY_HOPS", 0)
    fix = ("set PBEM_PROXY_HOPS to the number of reverse proxies in front of pbem: 1 "
           "behind Caddy or nginx, 0 when gunicorn is reached directly")
    try:
        hops = int(raw)
    except (TypeError, ValueError):
        return Result(False, f"{raw!r} is not a number", fix)
    if not 0 <= hops <= 5:
        return Result(False, f"{hops} is not a number of proxies (0 to 5)", fix)
    https = str(probe.config.get("BASE_URL") or "").startswith("https:")
    stated = "PBEM_PROXY_HOPS" in os.environ or hops > 0
    if https and not stated:
        return Result(False, "not set, while the base URL is https: if a proxy ends TLS, "
                             "every player counts as that proxy for the limits per client",
                      fix)
    return Result(True, f"{hops} (X-Forwarded-For trusted from {hops} "
                        f"prox{'y' if hops == 1 else 'ies'})" if hops
                  else "0 (no reverse proxy in front)")


# --------------------------------------------------------------------------- database


def check_database(probe: Probe) -> Result:
    from pbem.backup import shown_url
    from pbem.db import get_engine

    url = shown_url(str(probe.config["DATABASE_URL"]))
    probe.found["database"] = False
    if (missing := _missing_sqlite_file(str(probe.config["DATABASE_URL"]))) is not None:
        return Result(False, f"no database file at {missing}",
                      "run `flask --app pbem pbem migrate` to create it, or set "
                      "PBEM_DATABASE_URL to the database the server uses")
    try:
        with get_engine(probe.app).connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - whatever the driver raises, it is the finding
        return Result(False, f"{url}: {_first_line(exc)}",
                      "check PBEM_DATABASE_URL, and that the database server runs and "
                      "lets this user in")
    probe.found["database"] = True
    return Result(True, url)


def check_migrations(probe: Probe) -> Result:
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from pbem.db import get_engine
    from pbem.migrate import alembic_config

    if not probe.found.get("database"):
        return Result(None, "not checked: no database")
    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    with get_engine(probe.app).connect() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
    probe.found["schema"] = current is not None
    fix = "run `flask --app pbem pbem migrate`"
    if current is None:
        return Result(False, "no schema (never migrated)", fix)
    if current != head:
        return Result(False, f"schema at {current}, the code's head is {head}",
                      fix + " (with the server stopped, after `pbem backup FILE`)")
    return Result(True, f"schema at head ({head})")


# --------------------------------------------------------------------------- SMTP


def _smtp_applies(probe: Probe) -> Result | None:
    """None when the SMTP checks apply; else the result every one of them gives."""
    from pbem import mail

    try:
        mail.require(probe.app)
    except mail.ConfigError as exc:
        return Result(False, str(exc), "set the variables it names")
    kind = probe.config.get("MAIL_BACKEND")
    if kind != "smtp":
        return Result(False, f"PBEM_MAIL_BACKEND is {kind}: no email leaves this machine",
                      "set PBEM_SMTP_HOST, PBEM_SMTP_PORT, PBEM_SMTP_USER, "
                      "PBEM_SMTP_PASSWORD and PBEM_SMTP_STARTTLS=true for your mail "
                      "provider, and unset PBEM_MAIL_BACKEND")
    return None


def check_smtp_connects(probe: Probe) -> Result:
    if (off := _smtp_applies(probe)) is not None:
        return off
    host, port = str(probe.config["SMTP_HOST"]), int(probe.config["SMTP_PORT"])
    timeout = min(float(probe.config.get("SMTP_TIMEOUT") or PROBE_TIMEOUT), PROBE_TIMEOUT)
    fix = (f"check PBEM_SMTP_HOST and PBEM_SMTP_PORT (587 for STARTTLS at most "
           f"providers), and that this machine may connect out to {host}:{port}")
    conn = None
    try:
        conn = smtplib.SMTP(host, port, timeout=timeout)
        code, _ = conn.ehlo()
    except (OSError, smtplib.SMTPException) as exc:
        if conn is not None:
            conn.close()
        if port == 465:
            fix = ("pbem speaks STARTTLS, not TLS from the first byte (port 465): use "
                   "port 587 with PBEM_SMTP_STARTTLS=true")
        return Result(False, f"{host}:{port}: {_first_line(exc)}", fix)
    probe.smtp = conn
    if code != 250:
        return Result(False, f"{host}:{port} refused EHLO ({code})", fix)
    banner = _first_line(getattr(conn, "ehlo_resp", b"") or b"")
    return Result(True, f"{host}:{port} answers ({banner[:60]})" if banner
                  else f"{host}:{port} answers")


def check_smtp_tls(probe: Probe) -> Result:
    if _smtp_applies(probe) is not None:
        return Result(None, "not checked: no SMTP server (see above)")
    conn = probe.smtp
    if conn is None:
        return Result(None, "not checked: no connection")
    host = str(probe.config["SMTP_HOST"])
    offered = conn.has_extn("starttls")
    if not probe.config.get("SMTP_STARTTLS"):
        if offered:
            return Result(False, "the server offers STARTTLS, but pbem is told not to use it",
                          "set PBEM_SMTP_STARTTLS=true")
        if _is_local(host):
            return Result(True, f"no TLS, to a relay on this machine ({host})")
        return Result(False, "no TLS: the login and every email go in clear",
                      "use your provider's submission port (587) with "
                      "PBEM_SMTP_STARTTLS=true")
    if not offered:
        probe.close()
        return Result(False, "PBEM_SMTP_STARTTLS is set, but the server offers no STARTTLS",
                      "use the provider's submission port (587), or a server that offers "
                      "STARTTLS")
    try:
        conn.starttls(context=ssl.create_default_context())
        conn.ehlo()
    except (OSError, smtplib.SMTPException) as exc:  # ssl.SSLError is an OSError
        probe.close()
        return Result(False, f"STARTTLS failed: {_first_line(exc)}",
                      f"the certificate of {host} must be valid for that name: set "
                      "PBEM_SMTP_HOST to the name the provider gives (not an IP address)")
    cipher = conn.sock.cipher() if isinstance(conn.sock, ssl.SSLSocket) else None
    return Result(True, "STARTTLS, certificate verified"
                  + (f" ({cipher[1]})" if cipher else ""))


def check_smtp_login(probe: Probe) -> Result:
    if _smtp_applies(probe) is not None:
        return Result(None, "not checked: no SMTP server (see above)")
    conn = probe.smtp
    if conn is None:
        return Result(None, "not checked: no connection")
    user = probe.config.get("SMTP_USER")
    if not user:
        return Result(None, "no login (PBEM_SMTP_USER unset)")
    try:
        conn.login(str(user), str(probe.config.get("SMTP_PASSWORD") or ""))
    except smtplib.SMTPAuthenticationError as exc:
        probe.found["login refused"] = True
        return Result(False, f"{user} refused: {exc.smtp_code} {_text(exc.smtp_error)}",
                      "check PBEM_SMTP_USER and PBEM_SMTP_PASSWORD (at Gmail, Fastmail, "
                      "Outlook.com: an app password, not the account's own)")
    except smtplib.SMTPNotSupportedError:
        return Result(False, "the server offers no login (AUTH) here",
                      "turn on PBEM_SMTP_STARTTLS (most servers offer AUTH only over TLS)")
    except (OSError, smtplib.SMTPException) as exc:
        probe.close()
        return Result(False, f"login failed: {_first_line(exc)}",
                      "check PBEM_SMTP_USER and PBEM_SMTP_PASSWORD")
    return Result(True, f"logged in as {user}")


def check_smtp_sender(probe: Probe) -> Result:
    if _smtp_applies(probe) is not None:
        return Result(None, "not checked: no SMTP server (see above)")
    conn = probe.smtp
    if conn is None:
        return Result(None, "not checked: no connection")
    if probe.found.get("login refused"):
        return Result(None, "not checked: not logged in")
    sender = str(probe.config["MAIL_FROM_PAIR"][1])
    try:
        code, reply = conn.mail(sender)
        conn.rset()
    except (OSError, smtplib.SMTPException) as exc:
        probe.close()
        return Result(False, f"MAIL FROM <{sender}>: {_first_line(exc)}", "")
    if code != 250:
        return Result(False, f"MAIL FROM <{sender}> refused: {code} {_text(reply)}",
                      "set PBEM_MAIL_FROM to an address this SMTP login may send from")
    return Result(True, f"MAIL FROM <{sender}> accepted (nothing sent)")


# --------------------------------------------------------------------------- replies


def _replies_style(probe: Probe) -> str | None:
    """``mailbox`` or ``domain`` when replies by email are on; None when off or mail is
    not configured."""
    if not probe.config.get("REPLIES") or not probe.config.get("INBOUND_ADDRESSES"):
        return None
    return str(probe.config["INBOUND_ADDRESSES"])


def check_imap(probe: Probe) -> Result:
    style = _replies_style(probe)
    config = probe.config
    if style is None:
        return Result(None, "replies by email are off")
    if not config.get("IMAP_HOST"):
        if style == "domain":
            return Result(None, "replies come through the receiver (domain form)")
        return Result(False, f"replies go to the mailbox of {config['MAIL_FROM_PAIR'][1]}, "
                             "and no IMAP mailbox is set to read them",
                      "set PBEM_IMAP_HOST, PBEM_IMAP_USER and PBEM_IMAP_PASSWORD for that "
                      "mailbox, and run `flask --app pbem pbem inbound --imap`")
    from imap_tools import MailBox, MailBoxStartTls, MailBoxUnencrypted

    host, port, user = str(config["IMAP_HOST"]), int(config["IMAP_PORT"]), config["IMAP_USER"]
    kind: Any = (MailBox if config["IMAP_SSL"] else MailBoxStartTls
                 if config["IMAP_STARTTLS"] else MailBoxUnencrypted)
    folder = str(config.get("IMAP_FOLDER") or "INBOX")
    box = None
    try:
        box = kind(host, port, timeout=PROBE_TIMEOUT)
        with box.login(str(user), str(config.get("IMAP_PASSWORD") or ""),
                       initial_folder=folder):
            unread = len(box.uids("UNSEEN"))
    except Exception as exc:  # noqa: BLE001 - socket, TLS, IMAP errors alike are the finding
        return Result(False, f"{user} at {host}:{port}: {_first_line(exc)}",
                      "check PBEM_IMAP_HOST, PBEM_IMAP_PORT (993 with TLS), PBEM_IMAP_USER, "
                      "PBEM_IMAP_PASSWORD (an app password at most providers) and "
                      "PBEM_IMAP_FOLDER")
    finally:
        if box is not None and getattr(box.client, "sock", None) is not None:
            with contextlib.suppress(OSError):
                box.client.shutdown()  # after a refused login, the connection is still open
    plain = "" if config["IMAP_SSL"] or config["IMAP_STARTTLS"] else ", without TLS"
    return Result(True, f"{user} at {host}:{port}{plain}: {folder}, {unread} unread")


def check_receiver(probe: Probe) -> Result:
    style = _replies_style(probe)
    if style is None:
        return Result(None, "replies by email are off")
    if style != "domain":
        return Result(None, "replies come by IMAP (mailbox form)")
    from pbem.mail.inbound import Addresses

    config = probe.config
    host, port = str(config["INBOUND_HOST"]), int(config["INBOUND_PORT"])
    lmtp = bool(config.get("INBOUND_LMTP"))
    fix = (f"start `flask --app pbem pbem inbound`{' --lmtp' if lmtp else ''} (it listens "
           f"on PBEM_INBOUND_HOST:PBEM_INBOUND_PORT, now {host}:{port})")
    address = Addresses.of(config).reply("doctor")
    try:
        conn = (smtplib.LMTP if lmtp else smtplib.SMTP)(host, port, timeout=PROBE_TIMEOUT)
        try:
            conn.ehlo_or_helo_if_needed()
            conn.mail("")
            code, reply = conn.rcpt(address)
            conn.rset()
        finally:
            with contextlib.suppress(OSError, smtplib.SMTPException):
                conn.quit()
    except (OSError, smtplib.SMTPException) as exc:
        return Result(False, f"{host}:{port}: {_first_line(exc)}", fix)
    if code != 250:
        return Result(False, f"{host}:{port} refuses a reply address ({code} "
                             f"{_text(reply)}): another server listens there", fix)
    return Result(True, f"{host}:{port}{' (LMTP)' if lmtp else ''} takes reply addresses")


# --------------------------------------------------------------------------- DNS


def make_resolver(config: Any) -> Any:
    """dnspython's resolver: at ``DNS_SERVER`` (``ip``, ``ip:port`` or ``[ipv6]:port``)
    when set, else the system's."""
    import dns.resolver

    server = str(config.get("DNS_SERVER") or "").strip()
    if not server:
        resolver = dns.resolver.Resolver()
    else:
        resolver = dns.resolver.Resolver(configure=False)
        host, port = server, 53
        if server.startswith("["):
            host, _, rest = server[1:].partition("]")
            port = int(rest.lstrip(":") or 53)
        elif server.count(":") == 1:
            host, _, tail = server.partition(":")
            port = int(tail)
        resolver.nameservers = [host]
        resolver.port = port
    resolver.lifetime = 5.0
    resolver.timeout = 2.0
    return resolver


class DnsFailure(Exception):
    """The resolver did not answer (as opposed to answering that there is nothing)."""


def _records(probe: Probe, name: str, kind: str) -> list[Any]:
    """The records of ``kind`` at ``name``: [] when there are none; DnsFailure when DNS
    did not answer."""
    import dns.exception
    import dns.resolver

    key = f"{kind} {name.lower()}"
    if probe.resolver is None:
        raise DnsFailure(probe.found.get("resolver", "no DNS resolver"))
    if "dns down" in probe.found:  # asked once and waited out: the other lines say so too
        raise DnsFailure(probe.found["dns down"])
    if key not in probe.found:
        try:
            probe.found[key] = list(probe.resolver.resolve(name, kind, search=False))
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            probe.found[key] = []
        except (dns.resolver.NoNameservers, dns.exception.Timeout) as exc:
            probe.found["dns down"] = f"DNS did not answer for {name} {kind}: " \
                                      f"{_first_line(exc)}"
            raise DnsFailure(probe.found["dns down"]) from exc
        except dns.exception.DNSException as exc:
            raise DnsFailure(f"{name} {kind}: {_first_line(exc)}") from exc
    return list(probe.found[key])


def _txt(probe: Probe, name: str) -> list[str]:
    return [b"".join(r.strings).decode("utf-8", "replace") for r in _records(probe, name, "TXT")]


def _sender_domain(probe: Probe) -> str | None:
    pair = probe.config.get("MAIL_FROM_PAIR")
    return str(pair[1]).rsplit("@", 1)[1].lower() if pair else None


def _dns_check(check: Callable[[Probe, str], Result]) -> Check:
    """A DNS check of the sender's domain: – without mail configuration, ✗ when DNS fails."""

    def run(probe: Probe) -> Result:
        domain = _sender_domain(probe)
        if domain is None or probe.config.get("MAIL_BACKEND") != "smtp":
            return Result(None, "no sender domain: mail is not sent by SMTP")
        try:
            return check(probe, domain)
        except DnsFailure as exc:
            return Result(False, str(exc), "check PBEM_DNS_SERVER (ip or ip:port), or this "
                                           "machine's DNS (/etc/resolv.conf)")

    run.__name__ = check.__name__
    return run


@dataclass
class SpfWalk:
    """What walking an SPF record found: the address of ours it covers and by which
    term, how many DNS lookups it takes, and what it could not evaluate."""

    addresses: list[ipaddress.IPv4Address | ipaddress.IPv6Address]
    covered: str | None = None
    lookups: int = 0
    unchecked: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _spf_records(probe: Probe, domain: str) -> list[str]:
    return [t for t in _txt(probe, domain) if t.lower().split(" ", 1)[0] == "v=spf1"]


def _walk_spf(probe: Probe, domain: str, walk: SpfWalk, depth: int = 0) -> None:
    records = _spf_records(probe, domain)
    if len(records) != 1:
        walk.problems.append(f"{domain} has {len(records) or 'no'} v=spf1 records"
                             + (" (exactly one is allowed)" if records else ""))
        return
    redirect = None
    for term in records[0].split()[1:]:
        if walk.covered or walk.lookups > SPF_LOOKUP_LIMIT:
            return
        qualifier = term[0] if term[0] in "+-~?" else "+"
        body = term.lstrip("+-~?")
        mech, _, arg = body.partition(":")
        mech = mech.lower()
        if "%" in body:
            walk.unchecked.append(term)
            walk.lookups += mech in ("include", "a", "mx", "exists", "ptr")
            continue
        if mech.startswith("redirect="):
            redirect = body.split("=", 1)[1]
        elif mech in ("ip4", "ip6"):
            _spf_match(walk, term, [arg], qualifier)
        elif mech.split("/")[0] in ("a", "mx"):
            walk.lookups += 1
            name, cidr = _spf_target(body, domain)
            hosts = [name] if mech.startswith("a") else [
                str(r.exchange).rstrip(".") for r in _records(probe, name, "MX")]
            nets = [f"{addr}/{cidr[addr.count(':') > 0]}" if cidr else addr
                    for host in hosts[:10] for addr in _addresses(probe, host)]
            _spf_match(walk, term, nets, qualifier)
        elif mech == "include":
            walk.lookups += 1
            if depth < SPF_LOOKUP_LIMIT:
                _walk_spf(probe, arg, walk, depth + 1)
        elif mech in ("exists", "ptr"):
            walk.lookups += 1
            walk.unchecked.append(term)
    if redirect and not walk.covered:
        walk.lookups += 1
        _walk_spf(probe, redirect, walk, depth + 1)


def _spf_target(body: str, domain: str) -> tuple[str, tuple[str, str] | None]:
    """The domain of an ``a``/``mx`` term and its prefix lengths (v4, v6), if any."""
    named = body.split("/", 1)[0]
    name = named.split(":", 1)[1] if ":" in named else domain
    cidr = body[len(named):]
    if not cidr:
        return name, None
    if cidr.startswith("//"):
        return name, ("32", cidr[2:])
    v4, _, v6 = cidr[1:].partition("//")
    return name, (v4 or "32", v6 or "128")


def _spf_match(walk: SpfWalk, term: str, nets: list[str], qualifier: str) -> None:
    for net in nets:
        try:
            network = ipaddress.ip_network(net, strict=False)
        except ValueError:
            walk.problems.append(f"{term}: {net!r} is no address")
            continue
        if any(addr in network for addr in walk.addresses):
            if qualifier == "+":
                walk.covered = term
            else:
                walk.problems.append(f"{term} covers the SMTP server, but with {qualifier}")
            return


def _addresses(probe: Probe, host: str) -> list[str]:
    return [r.address for kind in ("A", "AAAA") for r in _records(probe, host, kind)]


def _smtp_addresses(host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The SMTP server's addresses as this machine connects to them (its own resolver)."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return []
    return sorted({ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos},
                  key=str)


def spf(probe: Probe, domain: str) -> Result:
    smtp_host = str(probe.config["SMTP_HOST"])
    records = _spf_records(probe, domain)
    fix = (f"publish one TXT record at {domain}: v=spf1 with your mail provider's "
           f"include: (as its setup page gives it) or ip4:<the address {smtp_host} sends "
           f"from>, ending in ~all or -all")
    if not records:
        return Result(False, f"no SPF record (TXT v=spf1) at {domain}", fix)
    if len(records) > 1:
        return Result(False, f"{len(records)} SPF records at {domain}: receivers reject "
                             "all of them", "merge them into one " + fix.split(": ", 1)[1])
    record = records[0]
    if any(t.lower() in ("+all", "all") for t in record.split()[1:]):
        return Result(False, f"{record!r} lets anyone send as {domain}", fix)
    walk = SpfWalk(_smtp_addresses(smtp_host))
    _walk_spf(probe, domain, walk)
    shown = ", ".join(map(str, walk.addresses)) or "no address"
    if walk.lookups > SPF_LOOKUP_LIMIT:
        return Result(False, f"{record!r} takes {walk.lookups} DNS lookups, more than "
                             f"SPF's {SPF_LOOKUP_LIMIT}: receivers treat it as broken", fix)
    if walk.covered:
        return Result(True, f"{record!r} covers {smtp_host} ({shown}) by {walk.covered}")
    if any(not a.is_global for a in walk.addresses):
        return Result(True, f"{record!r}; {smtp_host} ({shown}) is a relay on this "
                            "machine or network, whose public address is not checked")
    if walk.unchecked:
        return Result(True, f"{record!r}; {smtp_host} ({shown}) not found in it, but "
                            f"{', '.join(walk.unchecked[:3])} is not evaluated here")
    why = "; ".join(walk.problems[:2])
    return Result(False, f"{record!r} does not cover {smtp_host} ({shown})"
                         + (f": {why}" if why else ""),
                  fix + f". (The address {smtp_host} sends from may differ from the one "
                        "you connect to: your provider's include: covers both)")


def dkim(probe: Probe, domain: str) -> Result:
    selector = str(probe.config.get("DKIM_SELECTOR") or "").strip()
    if not selector:
        return Result(None, "no selector to look up (PBEM_DKIM_SELECTOR unset)",
                      "set PBEM_DKIM_SELECTOR to the selector your provider signs with "
                      "(Gmail: google; Fastmail: fm1) to check its key")
    name = f"{selector}._domainkey.{domain}"
    fix = (f"publish the DKIM key your mail provider gives as a TXT (or CNAME) record at "
           f"{name}, and turn on its signing for {domain}")
    records = [t for t in _txt(probe, name) if "p=" in t.replace(" ", "")]
    if not records:
        return Result(False, f"no DKIM key at {name}", fix)
    tags = _tags(records[0])
    key = tags.get("p", "")
    if not key:
        return Result(False, f"the key at {name} is revoked (empty p=)", fix)
    return Result(True, f"{tags.get('k', 'rsa')} key at {name} ({len(key)} base64 "
                        "characters)")


def dmarc(probe: Probe, domain: str) -> Result:
    fix = (f"publish a TXT record at _dmarc.{domain}: v=DMARC1; p=none; "
           f"rua=mailto:<an address of yours> (p=quarantine once reports look right)")
    names = [f"_dmarc.{domain}"]
    if domain.count(".") > 1:  # the organisational domain, naively: the last two labels
        names.append("_dmarc." + ".".join(domain.split(".")[-2:]))
    for name in names:
        records = [t for t in _txt(probe, name)
                   if t.replace(" ", "").lower().startswith("v=dmarc1")]
        if len(records) > 1:
            return Result(False, f"{len(records)} DMARC records at {name}", fix)
        if records:
            tags = _tags(records[0])
            policy = tags.get("p" if name == names[0] else "sp", tags.get("p", "")).lower()
            if policy not in ("none", "quarantine", "reject"):
                return Result(False, f"{records[0]!r} at {name} has no valid p=", fix)
            return Result(True, f"p={policy} at {name}"
                          + (" (reports only)" if policy == "none" else ""))
    return Result(False, f"no DMARC record (TXT v=DMARC1) at _dmarc.{domain}", fix)


def mx(probe: Probe, domain: str) -> Result:
    style = _replies_style(probe)
    if style is None:
        return Result(None, "replies by email are off")
    where = str(probe.config["INBOUND_DOMAIN"]) if style == "domain" else domain
    hosts = sorted((r.preference, str(r.exchange).rstrip("."))
                   for r in _records(probe, where, "MX"))
    if not hosts or hosts == [(0, "")]:
        fix = (f"publish an MX record for {where} naming the mail server that hands its "
               f"mail to `pbem inbound` (README: Running it for real)" if style == "domain"
               else f"publish the MX records your mail provider gives for {where}")
        return Result(False, f"no MX for {where}: replies to it cannot arrive", fix)
    return Result(True, f"{where}: " + ", ".join(f"{host} ({pref})" for pref, host in hosts))


check_spf, check_dkim, check_dmarc, check_mx = map(_dns_check, (spf, dkim, dmarc, mx))


# --------------------------------------------------------------------------- clock, outbox


def _health_facts(probe: Probe) -> Health | Result:
    """The deep health check's facts (``pbem.health.status``), or the line saying why
    they could not be read."""
    if not probe.found.get("schema"):
        return Result(None, "not checked: no database schema")
    from pbem import health

    try:
        with probe.app.app_context():
            return health.status()
    except Exception as exc:  # noqa: BLE001 - e.g. a schema without heartbeats
        return Result(None, f"not checked: {_first_line(exc)}")


def check_clock(probe: Probe) -> Result:
    """The freshest clock's last sweep (``pbem.health``: the heartbeat every clock writes
    after each sweep), against ``CLOCK_SILENT_SECONDS``."""
    facts = _health_facts(probe)
    if isinstance(facts, Result):
        return facts
    silent = float(probe.config["CLOCK_SILENT_SECONDS"])
    fix = ("start the clock: `flask --app pbem pbem clock` (or `pbem serve`, which starts "
           "it with the web server); without it no email goes out and no deadline passes")
    age = facts.clock_last_sweep_age
    if age is None:
        return Result(False, "no clock has swept this database", fix)
    took = facts.clock_sweep_seconds
    what = (f"last sweep {_seconds(age)} ago"
            + (f" (took {took:.2f} s)" if took is not None else "")
            + f", {facts.clock_processes} clock(s) alive")
    if age > silent:
        return Result(False, what + f": silent for more than {_seconds(silent)}", fix)
    return Result(True, what)


def check_bots(probe: Probe) -> Result:
    """The bot workers' heartbeats and the bots' moves waiting for one
    (``pbem.health``: ``bots/behind`` after ``BOTS_BEHIND_SECONDS``)."""
    from pbem import health

    facts = _health_facts(probe)
    if isinstance(facts, Result):
        return facts
    workers = (f"{facts.bot_workers} bot worker(s) alive" if facts.bot_workers
               else "no bot worker alive (the clock plays the bots itself, strong ones at the "
                     "default budget)")
    oldest = facts.bots_oldest_due_age
    what = (workers + f", {facts.bots_due} bot move(s) due"
            + (f", the oldest for {_seconds(oldest)}" if oldest is not None else ""))
    if health.BOTS_BEHIND in facts.problems:
        return Result(False, what, "start bot workers: `flask --app pbem pbem bots` (`pbem "
                                   "serve` starts them), more of them, or on another machine")
    return Result(True, what)


def _seconds(value: float) -> str:
    if value < 120:
        return f"{value:.0f} s"
    if value < 7200:
        return f"{value / 60:.0f} min"
    return f"{value / 3600:.1f} h"


def _outbox_due(probe: Probe) -> tuple[int, int, int, datetime | None, str | None]:
    """Emails pending: due now, waiting for later, failed at least once; the oldest due
    time; the last error of one that failed."""
    from pbem.db import read_scope
    from pbem.kinds import OutboxStatus
    from pbem.models import Outbox

    now = datetime.now(UTC)
    pending = col(Outbox.status).in_([OutboxStatus.PENDING, OutboxStatus.SENDING])
    due_at, tried = col(Outbox.next_attempt_at), col(Outbox.attempts)
    with read_scope(probe.app) as session:
        due, oldest = session.execute(
            sa_select(func.count(), func.min(due_at)).where(pending, due_at <= now)).one()
        later = session.execute(
            sa_select(func.count()).where(pending, due_at > now)).scalar_one()
        retried = session.execute(
            sa_select(func.count()).where(pending, tried > 0)).scalar_one()
        error = session.execute(
            sa_select(col(Outbox.last_error)).where(pending, tried > 0)
            .where(col(Outbox.last_error).is_not(None))
            .order_by(due_at.desc()).limit(1)).scalar()
    if oldest is not None and oldest.tzinfo is None:
        oldest = oldest.replace(tzinfo=UTC)
    return int(due), int(later), int(retried), oldest, error


def check_outbox(probe: Probe) -> Result:
    if not probe.found.get("schema"):
        return Result(None, "not checked: no database schema")
    try:
        due, later, retried, _, error = _outbox_due(probe)
    except Exception as exc:  # noqa: BLE001 - e.g. no schema: the line above says so
        return Result(None, f"not checked: {_first_line(exc)}")
    what = f"{due} due now, {later} waiting for their time, {retried} failed at least once"
    if retried:
        return Result(False, what + (f" (last error: {error[:120]})" if error else ""),
                      "the SMTP lines above say what the mail server answers; the clock "
                      "retries with backoff")
    return Result(True, what)


def check_oldest_pending(probe: Probe) -> Result:
    if not probe.found.get("schema"):
        return Result(None, "not checked: no database schema")
    try:
        _, _, _, oldest, _ = _outbox_due(probe)
    except Exception as exc:  # noqa: BLE001
        return Result(None, f"not checked: {_first_line(exc)}")
    if oldest is None:
        return Result(True, "none due")
    age = datetime.now(UTC) - oldest
    what = f"due since {oldest:%Y-%m-%d %H:%M} UTC ({_age(age)})"
    if age > OVERDUE:
        return Result(False, what, "is the clock running? `flask --app pbem pbem clock` "
                                   "sends the outbox (or `pbem serve`, which starts it)")
    return Result(True, what)


# --------------------------------------------------------------------------- the runner

CHECKS: tuple[tuple[str, str, Check], ...] = (
    ("config", "secret key", check_secret_key),
    ("config", "base URL", check_base_url),
    ("config", "proxy hops", check_proxy_hops),
    ("database", "reachable", check_database),
    ("database", "migrated", check_migrations),
    ("smtp", "connects", check_smtp_connects),
    ("smtp", "TLS", check_smtp_tls),
    ("smtp", "login", check_smtp_login),
    ("smtp", "sender", check_smtp_sender),
    ("replies", "IMAP", check_imap),
    ("replies", "receiver", check_receiver),
    ("dns", "SPF", check_spf),
    ("dns", "DKIM", check_dkim),
    ("dns", "DMARC", check_dmarc),
    ("dns", "MX", check_mx),
    ("clock", "heartbeat", check_clock),
    ("bots", "workers", check_bots),
    ("outbox", "backlog", check_outbox),
    ("outbox", "oldest due", check_oldest_pending),
)


def results(app: Flask) -> Iterator[tuple[str, str, Result]]:
    """Every check's result, in order (a check that raises is a ✗ naming the error)."""
    probe = Probe(app)
    try:
        probe.resolver = make_resolver(app.config)
    except Exception as exc:  # noqa: BLE001 - a bad PBEM_DNS_SERVER, no resolv.conf
        probe.found["resolver"] = f"no DNS resolver: {_first_line(exc)}"
    try:
        for area, name, check in CHECKS:
            try:
                found = check(probe)
            except Exception as exc:  # noqa: BLE001 - the doctor itself must not crash
                found = Result(False, f"the check failed: {type(exc).__name__}: "
                                      f"{_first_line(exc)}", "")
            yield area, name, found
    finally:
        probe.close()


def mark(ok: bool | None) -> str:
    return PASS if ok else NOT_APPLICABLE if ok is None else FAIL


def run(app: Flask, echo: Callable[[str], None] = click.echo) -> bool:
    """Print the table of every check; True when none failed."""
    hide = _secrets(app)
    width = max(len(f"{area} {name}") for area, name, _ in CHECKS)
    failed = 0
    for area, name, found in results(app):
        failed += found.ok is False
        echo(hide(f"{mark(found.ok)} {f'{area} {name}':<{width}}  {found.what}"))
        if found.fix and found.ok is not True:
            echo(hide(f"  {' ' * width}  {'fix' if found.ok is False else 'to check'}: "
                      f"{found.fix}"))
    echo(f"{failed} problem{'' if failed == 1 else 's'} found" if failed
         else "everything checked is in order")
    return not failed


def run_send_test(app: Flask, to: str, wait: float,
                  echo: Callable[[str], None] = click.echo) -> bool:
    """``--send-to``: send the test email, then wait for its reply; True when all went."""
    hide = _secrets(app)
    sent_result, sent = send_test(app, to)
    echo(hide(f"{mark(sent_result.ok)} test email  {sent_result.what}"))
    if sent is None or sent.reply_to is None or wait <= 0:
        return bool(sent_result.ok)
    echo(f"  waiting up to {wait:.0f} s for an answer to it (to {sent.reply_to})...")
    answer = await_reply(app, sent, wait)
    echo(hide(f"{mark(answer.ok)} reply       {answer.what}"))
    if answer.fix:
        echo(hide(f"  fix: {answer.fix}"))
    return bool(answer.ok)


@dataclass(frozen=True)
class Sent:
    """The test email as sent: its Message-ID, its reply address (None: replies off)
    and when it went."""

    message_id: str
    reply_to: str | None
    at: datetime


def send_test(app: Flask, to: str) -> tuple[Result, Sent | None]:
    """Send one test email to ``to`` directly through the configured mail backend (not
    the outbox: the mail server's answer comes at once, and the clock need not run).
    With replies on, its Reply-To is a reply address of a token that is nobody's, so a
    reply to it is taken by ``pbem inbound`` like a player's, recorded, and not played
    nor answered."""
    import base64
    import secrets

    from pbem import mail
    from pbem.mail.headers import BadAddress, parse_address
    from pbem.mail.inbound import Addresses

    try:
        rcpt = parse_address(to)
        mail.require(app)
    except (BadAddress, mail.ConfigError) as exc:
        return Result(False, f"not sent: {exc}", ""), None
    name, sender = app.config["MAIL_FROM_PAIR"]
    reply_to = None
    if _replies_style(Probe(app)) is not None:
        token = base64.b32encode(secrets.token_bytes(20)).decode().lower()
        reply_to = Addresses.of(app.config).reply(token)
    msg = EmailMessage()
    msg["From"] = f"{name} <{sender}>" if name else sender
    msg["To"] = rcpt
    msg["Subject"] = "pbem doctor: test email"
    msg["Date"] = format_datetime(datetime.now(UTC))
    msg["Message-ID"] = make_msgid("doctor." + uuid.uuid4().hex[:12],
                                   domain=str(app.config["MAIL_DOMAIN"]))
    if reply_to:
        msg["Reply-To"] = reply_to
    msg.set_content(
        f"This is a test email from the pbem server at {app.config['BASE_URL']}, sent by "
        f"`pbem doctor --send-to`. If it reached you, mail from {sender} arrives.\n"
        + ("\nPlease answer it (any words will do): `pbem doctor` waits for your reply "
           "to come back through the way players' replies take.\n" if reply_to else ""))
    started = time.monotonic()
    try:
        mail.backend(app).send(mail.Outgoing(sender, rcpt, msg.as_bytes()))
    except mail.MailError as exc:
        return Result(False, f"to {rcpt}: {exc}", "the SMTP lines above say more"), None
    finally:
        mail.backend(app).close()
    sent = Sent(str(msg["Message-ID"]), reply_to, datetime.now(UTC))
    return Result(True, f"to {rcpt} ({sent.message_id}), handed to the mail server in "
                        f"{(time.monotonic() - started) * 1000:.0f} ms"), sent


def await_reply(app: Flask, sent: Sent, wait: float, every: float = 1.0) -> Result:
    """Wait up to ``wait`` seconds for a reply to the test email to come back: handed to
    ``pbem inbound`` (a message it recorded since the test email went; in the domain
    form any such message, as its sender's Message-ID is not known here), and in the
    mailbox form also found in the IMAP mailbox (In-Reply-To the test email), which
    tells a reply that arrived but was not taken from one that never came."""
    end = time.monotonic() + wait
    in_mailbox = False
    while True:
        if (handed := _handed_since(app, sent.at)) is not None:
            seconds = (handed - sent.at).total_seconds()
            return Result(True, f"a reply came back through `pbem inbound` "
                                f"{max(seconds, 0):.0f} s after the test email")
        in_mailbox = in_mailbox or _in_mailbox(app, sent.message_id)
        if time.monotonic() >= end:
            break
        time.sleep(min(every, max(end - time.monotonic(), 0)))
    if in_mailbox:
        return Result(False, f"the reply reached the mailbox of {app.config['IMAP_USER']}, "
                             f"but `pbem inbound --imap` did not take it in {wait:.0f} s",
                      "start `flask --app pbem pbem inbound --imap` (or `pbem serve`)")
    return Result(False, f"no reply came back in {wait:.0f} s",
                  "answer the test email, then run again with a longer --wait; if the "
                  "answer was sent, check the lines on replies and MX above and that "
                  "`flask --app pbem pbem inbound` runs")


def _handed_since(app: Flask, since: datetime) -> datetime | None:
    from pbem.db import read_scope
    from pbem.models import InboundMessage

    received = col(InboundMessage.received_at)
    with read_scope(app) as session:
        found = session.execute(sa_select(func.min(received))
                                .where(received >= since)).scalar()
    if found is not None and found.tzinfo is None:
        found = found.replace(tzinfo=UTC)
    return found


def _in_mailbox(app: Flask, message_id: str) -> bool:
    config = app.config
    if not config.get("IMAP_HOST") or config.get("INBOUND_ADDRESSES") != "mailbox":
        return False
    from imap_tools import MailBox, MailBoxStartTls, MailBoxUnencrypted

    kind: Any = (MailBox if config["IMAP_SSL"] else MailBoxStartTls
                 if config["IMAP_STARTTLS"] else MailBoxUnencrypted)
    try:
        with kind(str(config["IMAP_HOST"]), int(config["IMAP_PORT"]),
                  timeout=PROBE_TIMEOUT).login(
                str(config["IMAP_USER"]), str(config.get("IMAP_PASSWORD") or ""),
                initial_folder=str(config.get("IMAP_FOLDER") or "INBOX")) as box:
            return bool(box.uids(f'HEADER In-Reply-To "{message_id}"'))
    except Exception:  # noqa: BLE001 - the IMAP line of the table says why
        return False


# --------------------------------------------------------------------------- helpers


def _secrets(app: Flask) -> Callable[[str], str]:
    from sqlalchemy.engine import make_url

    values = [str(app.config.get(k) or "") for k in ("SECRET_KEY", "SMTP_PASSWORD",
                                                     "IMAP_PASSWORD")]
    with contextlib.suppress(Exception):
        values.append(make_url(str(app.config["DATABASE_URL"])).password or "")
    values = sorted({v for v in values if len(v) >= 4}, key=len, reverse=True)

    def hide(line: str) -> str:
        for value in values:
            line = line.replace(value, "***")
        return line

    return hide


def _missing_sqlite_file(url: str) -> str | None:
    """The path of a SQLite database file that does not exist (connecting would create
    it empty), else None."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    path = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or path in ("", ":memory:") \
            or path.startswith("file:"):
        return None
    return None if Path(path).exists() else path


def _is_local(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _tags(record: str) -> dict[str, str]:
    """``k=v; k=v`` (DKIM, DMARC) as a dict, keys in lower case, spaces taken out."""
    pairs = (part.split("=", 1) for part in record.split(";") if "=" in part)
    return {k.strip().lower(): "".join(v.split()) for k, v in pairs}


def _text(reply: bytes | str) -> str:
    return (reply.decode("utf-8", "replace") if isinstance(reply, bytes) else reply).strip()


def _first_line(exc: object) -> str:
    text = _text(exc) if isinstance(exc, bytes | str) else str(exc) or type(exc).__name__
    return text.strip().splitlines()[0][:200] if text.strip() else type(exc).__name__


def _age(age: timedelta) -> str:
    seconds = int(age.total_seconds())
    if seconds < 120:
        return f"{seconds} s ago"
    if seconds < 7200:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h ago" if seconds < 172800 else f"{seconds // 86400} days ago"
