"""Receiving mail: an SMTP (or LMTP) receiver that a mail server forwards replies to,
and an IMAP poller for a host who has only an ordinary mailbox. Both hand each raw
message to one service, ``pbem.services.replies.receive_reply`` (passed in as ``hand``:
this module knows nothing of games), in the app's context, and never crash on what they
receive.

Postfix, for a domain ``games.example.org`` whose mail is all for pbem (main.cf
``transport_maps = hash:/etc/postfix/transport``, and the domain in
``relay_domains``)::

    # /etc/postfix/transport
    games.example.org   smtp:[127.0.0.1]:2525
    # or, with PBEM_INBOUND_LMTP=true:
    games.example.org   lmtp:inet:127.0.0.1:2525

The receiver accepts only our reply addresses and return paths (``inbound.Addresses``:
``games+r.…``/``games+b.…`` at the sender's domain, ``play+…``/``bounce+…`` at the
inbound domain), refuses larger messages than ``INBOUND_MAX_BYTES`` at the SMTP level,
and answers 451 (try later) when the database fails, so the mail server keeps the
message and tries again; a message it cannot read is taken and dropped (logged), never
retried for ever.

The IMAP poller reads the host's mailbox, which may be their own: it hands over only the
unread messages whose headers name one of our addresses, and flags those read; any other
message (mail to the mailbox itself, something unreadable) stays unread for the person
who reads that mailbox, and is not looked at again while the poller runs.

Both write the inbound heartbeat (``pbem.health``) after each message handed over, the
poller after each poll too.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

from flask import Flask
from sqlalchemy.exc import SQLAlchemyError

from pbem import health
from pbem.kinds import Process
from pbem.mail.inbound import Addresses, names_ours

log = logging.getLogger("pbem.inbound")
Hand = Callable[[bytes, list[str], str | None], Any]


def handle(app: Flask, hand: Hand, raw: bytes, rcpts: list[str],
           envelope_from: str | None) -> str:
    """Give one message to ``hand`` in the app's context; an SMTP status for it."""
    try:
        with app.app_context():
            hand(raw, rcpts, envelope_from)
            health.beat(Process.INBOUND, message=True)
    except SQLAlchemyError:
        log.exception("inbound message: database error, the sender will try again")
        return "451 4.3.0 Temporary failure, try again later"
    except Exception:  # noqa: BLE001 - one bad message must not stop the receiver
        log.exception("inbound message could not be read; dropped")
    return "250 2.0.0 OK"


def describe(config: Any) -> str:
    """The addresses the receiver takes, as the host reads them at its start."""
    made = Addresses.of(config)
    local, host = made.mailbox.rsplit("@", 1)
    forms = [f"{local}{made.separator}r.…@{host}", f"play{made.separator}…@{made.domain}"]
    return " and ".join(forms if made.style == "mailbox" else forms[::-1])


def is_ours(address: str, addresses: Addresses) -> bool:
    """Whether ``address`` is one of our reply addresses or return paths (by its shape)."""
    return addresses.is_ours(address)


class Receiver:
    """aiosmtpd's handler: ``handle_RCPT`` refuses addresses that are not ours (so the
    receiver relays nothing and takes no mail for anyone else), ``handle_DATA`` hands the
    message over (in a worker thread: the service waits on the database)."""

    def __init__(self, app: Flask, hand: Hand, lmtp: bool = False) -> None:
        self.app, self.hand, self.lmtp = app, hand, lmtp
        self.addresses = Addresses.of(app.config)

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str,
                          rcpt_options: list[str]) -> str:
        if not is_ours(address, self.addresses):
            return "550 5.1.1 No such user here"
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        raw = envelope.original_content or envelope.content or b""
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "surrogateescape")
        status = await asyncio.get_running_loop().run_in_executor(
            None, handle, self.app, self.hand, raw, list(envelope.rcpt_tos),
            envelope.mail_from)
        if self.lmtp:  # LMTP answers DATA once for each recipient
            return "\r\n".join([status] * max(1, len(envelope.rcpt_tos)))
        return status


def smtp_receiver(app: Flask, hand: Hand, host: str | None = None, port: int | None = None,
                  lmtp: bool | None = None) -> Any:
    """A started receiver (aiosmtpd Controller, in a thread of its own) on ``host``:``port``
    (default the app's ``INBOUND_HOST``/``INBOUND_PORT``); ``.stop()`` ends it."""
    from aiosmtpd.controller import Controller
    from aiosmtpd.lmtp import LMTP
    from aiosmtpd.smtp import SMTP

    config = app.config
    lmtp = bool(config["INBOUND_LMTP"]) if lmtp is None else lmtp
    handler = Receiver(app, hand, lmtp)

    class _Controller(Controller):
        def factory(self) -> SMTP:
            return (LMTP if lmtp else SMTP)(self.handler, **self.SMTP_kwargs)

        def _trigger_server(self) -> None:
            """aiosmtpd's start check, without a connection. Its own opens one to make
            the server build its SMTP object (so that a broken ``factory`` shows at
            start) and hangs up, which the receiver logged at every start as
            "Connection lost during _handle_client()". The same object is built here in
            the server's loop; ``start`` then waits for it as before."""
            self.loop.call_soon_threadsafe(self._factory_invoker)

    controller = _Controller(handler, hostname=host or config["INBOUND_HOST"],
                             port=int(port or config["INBOUND_PORT"]),
                             data_size_limit=int(config["INBOUND_MAX_BYTES"]),
                             ident="pbem inbound")
    controller.start()
    return controller


def poll_imap(app: Flask, hand: Hand, stop: threading.Event | None = None,
              once: bool = False) -> int:
    """Read the IMAP mailbox (``IMAP_*``) every ``IMAP_POLL_SECONDS``: each unread
    message sent to one of our addresses is handed over, then flagged as read (a message
    the database refused stays unread, for the next poll); other messages stay unread
    and are passed over from then on. Until ``stop`` is set (or one pass with ``once``);
    the number of messages handed over."""
    config = app.config
    stop = stop or threading.Event()
    addresses = Addresses.of(config)
    passed: set[str] = set()  # "<UIDVALIDITY>:<UID>" of unread messages not ours
    handed = 0
    while True:
        with _imap_login(config) as mailbox:
            handed += _poll_once(app, hand, mailbox, addresses, passed)
        with app.app_context():
            health.beat(Process.INBOUND)  # polled: alive
        if once or stop.wait(float(config["IMAP_POLL_SECONDS"])):
            return handed


def _imap_login(config: Any) -> Any:
    from imap_tools import MailBox, MailBoxStartTls, MailBoxUnencrypted

    host, port = config["IMAP_HOST"], int(config["IMAP_PORT"])
    box: Any = (MailBox(host, port, timeout=30) if config["IMAP_SSL"]
                else MailBoxStartTls(host, port, timeout=30) if config["IMAP_STARTTLS"]
                else MailBoxUnencrypted(host, port, timeout=30))
    return box.login(config["IMAP_USER"], config["IMAP_PASSWORD"],
                     initial_folder=config["IMAP_FOLDER"])


def _poll_once(app: Flask, hand: Hand, mailbox: Any, addresses: Addresses,
               passed: set[str]) -> int:
    """One pass over the unread messages not passed over before; the number handed."""
    from imap_tools.query import AND

    try:  # UIDs name messages only within one UIDVALIDITY of the folder
        validity = str(mailbox.folder.status(None, ["UIDVALIDITY"]).get("UIDVALIDITY", ""))
    except Exception:  # noqa: BLE001 - a server that will not say: UIDs alone
        validity = ""
    uids = [uid for uid in mailbox.uids(AND(seen=False)) if f"{validity}:{uid}" not in passed]
    handed = 0
    for start in range(0, len(uids), 20):
        for msg in mailbox.fetch(AND(uid=uids[start:start + 20]), mark_seen=False, bulk=20):
            try:
                raw = msg.obj.as_bytes()
            except Exception:  # noqa: BLE001 - cannot be written back: not readable
                log.exception("IMAP message %s could not be read; left unread", msg.uid)
                raw = b""
            if not raw or not names_ours(raw, addresses):
                passed.add(f"{validity}:{msg.uid}")  # the person's own mail: left unread
                continue
            status = handle(app, hand, raw, [], None)
            if status.startswith("250") and msg.uid:
                mailbox.flag(msg.uid, "\\Seen", True)
                handed += 1
    return handed
