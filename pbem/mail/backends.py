"""Sending: the mail backends (SMTP, the dev mailbox, memory) and picking one from the
configuration, failing closed.

A backend has ``send(out: Outgoing)``, which raises ``MailError`` when the message was
not handed over, and ``close()``, called at the end of every delivery pass.
"""

from __future__ import annotations

import os
import smtplib
import ssl
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parseaddr
from pathlib import Path
from typing import Any

from flask import Flask, current_app

from pbem.mail import headers, inbound


class MailError(Exception):
    """A message could not be handed to the mail server. ``permanent``: the server
    refused this message for good; ``server``: the server itself is unreachable or hung,
    so the rest of this pass would fail the same way."""

    def __init__(self, message: str, permanent: bool = False, server: bool = False) -> None:
        super().__init__(message)
        self.permanent, self.server = permanent, server


@dataclass(frozen=True)
class Outgoing:
    """One message as it goes on the wire: envelope and bytes."""

    sender: str
    recipient: str
    data: bytes


class MemoryBackend:
    """Keeps messages in a list (unit tests)."""

    def __init__(self) -> None:
        self.sent: list[Outgoing] = []
        self.fail: Exception | None = None

    def send(self, out: Outgoing) -> None:
        """Keep ``out``; or fail as told: a MailError as it is, any other exception as a
        mail server that is down."""
        if isinstance(self.fail, MailError):
            raise self.fail
        if self.fail is not None:
            raise MailError(str(self.fail), server=True)
        self.sent.append(out)

    def close(self) -> None:
        pass


class DevMailbox:
    """Writes each message as an .eml file; the dev mailbox page reads them back."""

    def __init__(self, directory: str) -> None:
        self.dir = Path(directory)

    def send(self, out: Outgoing) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        name = f"{stamp}-{os.getpid()}-{threading.get_ident() % 10000}.eml"
        tmp = self.dir / (name + ".tmp")
        tmp.write_bytes(out.data)
        tmp.replace(self.dir / name)

    def messages(self) -> list[Path]:
        if not self.dir.is_dir():
            return []
        return sorted(self.dir.glob("*.eml"), reverse=True)

    def close(self) -> None:
        pass


@dataclass
class SMTPBackend:
    """SMTP with one connection per thread, reused for a whole delivery pass."""

    host: str
    port: int
    user: str | None = None
    password: str | None = None
    starttls: bool = False
    timeout: float = 10.0
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def _connection(self) -> smtplib.SMTP:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
            try:
                if self.starttls:
                    conn.starttls(context=ssl.create_default_context())
                if self.user:
                    conn.login(self.user, self.password or "")
            except BaseException:
                conn.close()
                raise
            self._local.conn = conn
        return conn

    def send(self, out: Outgoing) -> None:
        try:
            self._connection().sendmail(out.sender, [out.recipient], out.data)
        except smtplib.SMTPRecipientsRefused as exc:
            self.close()
            code, reply = next(iter(exc.recipients.values()), (450, b""))
            raise MailError(f"recipient refused: {code} {_reply(reply)}",
                            permanent=code >= 500) from exc
        except smtplib.SMTPSenderRefused as exc:  # our configuration: every message fails
            self.close()
            raise MailError(f"sender refused: {exc.smtp_code} {_reply(exc.smtp_error)}",
                            server=True) from exc
        except smtplib.SMTPResponseException as exc:
            self.close()
            raise MailError(f"refused: {exc.smtp_code} {_reply(exc.smtp_error)}",
                            permanent=exc.smtp_code >= 500) from exc
        except (OSError, smtplib.SMTPException) as exc:  # down, hung, disconnected
            self.close()
            raise MailError(f"{type(exc).__name__}: {exc}", server=True) from exc

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            try:
                conn.quit()
            except (OSError, smtplib.SMTPException):
                conn.close()


def _reply(text: bytes | str) -> str:
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)


class ConfigError(RuntimeError):
    """The server cannot start with this configuration; the message says what to set."""


def configure(app: Flask) -> None:
    """Pick the mail backend, failing closed: with no mail configuration the server
    refuses to start instead of showing every secret link in a public dev mailbox."""
    kind = app.config.get("MAIL_BACKEND")
    if not kind:
        if not app.config.get("SMTP_HOST"):
            raise ConfigError(
                "no mail server is configured. Set PBEM_SMTP_HOST (with PBEM_MAIL_FROM) to "
                "send real email, or PBEM_MAIL_BACKEND=dev to keep every email in the dev "
                "mailbox at /dev/mail (for trying pbem on your own machine only: it shows "
                "everyone's secret links).")
        kind = "smtp"
    if kind not in ("smtp", "dev", "memory"):
        raise ConfigError(f"PBEM_MAIL_BACKEND must be smtp, dev or memory, not {kind!r}")
    if kind == "smtp" and not app.config.get("MAIL_FROM"):
        raise ConfigError("PBEM_MAIL_FROM must be set to send email by SMTP, e.g. "
                          "'Friday games <games@example.org>'")
    app.config["MAIL_BACKEND"] = kind
    app.config["MAIL_FROM"] = app.config.get("MAIL_FROM") or "pbem <pbem@pbem.localhost>"
    name, addr = parseaddr(app.config["MAIL_FROM"])
    try:
        addr = headers.parse_address(addr)
    except headers.BadAddress as exc:
        raise ConfigError(f"PBEM_MAIL_FROM {app.config['MAIL_FROM']!r}: {exc}") from None
    if headers.bad_characters(name):
        raise ConfigError("PBEM_MAIL_FROM has control characters in its name")
    app.config["MAIL_FROM_PAIR"] = (name, addr)
    domain = (app.config.get("MAIL_DOMAIN") or addr.split("@", 1)[1]).lower()
    try:
        domain = headers.parse_address(f"x@{domain}").split("@", 1)[1]  # IDN: xn-- form
    except headers.BadAddress:
        raise ConfigError(f"PBEM_MAIL_DOMAIN {domain!r} must be a domain name "
                          "(it ends every Message-ID), not an address or IP") from None
    app.config["MAIL_DOMAIN"] = domain
    _inbound_addresses(app, addr, domain)


def _inbound_addresses(app: Flask, addr: str, domain: str) -> None:
    """Settle the form of the reply addresses and return paths (``inbound.Addresses``).
    ``INBOUND_ADDRESSES`` unset is ``domain`` (``play+<token>@``) when the host named an
    ``INBOUND_DOMAIN`` other than the sender's (their own mail server hands it to ``pbem
    inbound``), else ``mailbox`` (``games+r.<token>@`` the sender's own mailbox, which
    any plus-addressing mail account delivers to it). Refuses what could not work."""
    config = app.config
    name = (config.get("INBOUND_DOMAIN") or domain).lower()
    try:
        name = headers.parse_address(f"x@{name}").split("@", 1)[1]
    except headers.BadAddress:
        raise ConfigError(f"PBEM_INBOUND_DOMAIN {name!r} must be a domain name "
                          "(replies go to play+<token>@ it)") from None
    own_domain = config.get("INBOUND_DOMAIN") and name != addr.rsplit("@", 1)[1].lower()
    style = config.get("INBOUND_ADDRESSES") or (inbound.DOMAIN if own_domain
                                                else inbound.MAILBOX)
    style = str(style).strip().lower()
    if style not in inbound.STYLES:
        raise ConfigError(f"PBEM_INBOUND_ADDRESSES must be mailbox or domain, not {style!r}")
    separator = str(config.get("INBOUND_SEPARATOR") or "+").strip()
    if separator not in inbound.SEPARATORS:
        raise ConfigError(f"PBEM_INBOUND_SEPARATOR must be + or -, not {separator!r}")
    if style == inbound.MAILBOX and (problem := inbound.mailbox_problem(addr)):
        raise ConfigError(
            f"PBEM_MAIL_FROM {addr!r} cannot take reply addresses: {problem}. Send from "
            "a shorter address, or set PBEM_INBOUND_ADDRESSES=domain with a "
            "PBEM_INBOUND_DOMAIN whose mail reaches pbem inbound")
    config.update(INBOUND_ADDRESSES=style, INBOUND_SEPARATOR=separator, INBOUND_DOMAIN=name)


class Unconfigured:
    """The mail backend of an app loaded without a usable mail configuration by the
    ``flask`` command, for a command that sends nothing (``--help``, ``migrate``): it
    holds the configuration's error, which says what to set, for ``require``."""

    def __init__(self, error: ConfigError) -> None:
        self.error = error

    def send(self, out: Any) -> None:
        raise self.error

    def close(self) -> None:
        pass


def init_app(app: Flask, required: bool = True) -> None:
    """Configure the mail backend; with ``required=False`` a configuration error waits
    (an ``Unconfigured`` backend) for the first use that sends mail."""
    try:
        configure(app)
    except ConfigError as exc:
        if required:
            raise
        app.extensions["pbem.mail"] = Unconfigured(exc)
        return
    kind = app.config["MAIL_BACKEND"]
    if kind == "memory":
        backend: Any = MemoryBackend()
    elif kind == "smtp":
        backend = SMTPBackend(app.config["SMTP_HOST"], int(app.config["SMTP_PORT"]),
                              app.config.get("SMTP_USER"), app.config.get("SMTP_PASSWORD"),
                              bool(app.config.get("SMTP_STARTTLS")),
                              float(app.config.get("SMTP_TIMEOUT", 10)))
    else:
        backend = DevMailbox(app.config["MAILBOX_DIR"])
    app.extensions["pbem.mail"] = backend


def backend(app: Flask | None = None) -> Any:
    return (app or current_app).extensions["pbem.mail"]


def require(app: Flask | None = None) -> None:
    """Raise the ``ConfigError`` that says what to set if mail cannot be sent."""
    found = backend(app)
    if isinstance(found, Unconfigured):
        raise found.error
