"""Email, one module per concern; callers use the names re-exported here
(``mail.deliver_due()``, ``mail.backend()``, ``mail.DevMailbox``).

Sending (today), each module importing only ones listed above it:

- ``headers``: every header: addresses and headers built from user text (the one
  address check, ``parse_address``), Message-IDs and threading, the List headers
  (one-click unsubscribe), how headers go on the wire and the last check of them.
- ``backends``: SMTP, the dev mailbox and memory, picked from the configuration (failing
  closed: no mail configuration, no server), and the form of the reply addresses settled
  (``inbound.Addresses``: ``inbound`` imports nothing of pbem).
- ``recipients``: who may get which email: the kinds of email, unsubscribing
  (suppressions), the checks made when an email is queued and again when it is sent.
- ``compose``: an outbox row rendered into a message: its links minted as tokens, the
  .txt and .html twins of its template in the reader's language, the game's name.
- ``delivery``: the clock's loop over the outbox: leases, retries with backoff, each
  row's status (sent, skipped, undeliverable).

Receiving, beside sending:

- ``inbound``: a received message read (pure): its reply address or return path,
  whether a machine sent it, whether the receiving server found it forged, the new
  text without the quoted email and signature; delivery reports; the reply addresses
  and return paths themselves.
- ``receive``: the SMTP/LMTP receiver (aiosmtpd) and the IMAP poller (imap-tools), each
  handing the raw message to one service (``services.receive_reply``); what a message
  does to a game stays in ``pbem.services``, like everything that commits.
"""

from pbem.mail.backends import (
    ConfigError,
    DevMailbox,
    MailError,
    MemoryBackend,
    Outgoing,
    SMTPBackend,
    Unconfigured,
    backend,
    configure,
    init_app,
    require,
)
from pbem.mail.compose import (
    EXTRA_CONTEXT,
    LINK_PATHS,
    TALK_EVENT,
    build_message,
    default_title,
    game_name,
    load_row,
    open_deadlines,
    render_row,
    table_talk,
)
from pbem.mail.delivery import (
    MAX_BACKOFF,
    PREPARE_AT_SENDING,
    RENDER_ATTEMPTS,
    deliver_due,
)
from pbem.mail.headers import WIRE, thread_of
from pbem.mail.recipients import (
    INVITE_TEMPLATES,
    MUTABLE_TEMPLATES,
    TURN_TEMPLATES,
    may_mail,
    suppressed,
)

__all__ = [
    "EXTRA_CONTEXT", "INVITE_TEMPLATES", "LINK_PATHS", "MAX_BACKOFF", "MUTABLE_TEMPLATES",
    "PREPARE_AT_SENDING", "RENDER_ATTEMPTS", "TALK_EVENT", "TURN_TEMPLATES", "WIRE",
    "ConfigError", "DevMailbox", "MailError", "MemoryBackend", "Outgoing", "SMTPBackend",
    "Unconfigured", "backend", "build_message", "configure", "default_title", "deliver_due",
    "game_name", "init_app", "load_row", "may_mail", "open_deadlines", "render_row",
    "require", "suppressed", "table_talk", "thread_of",
]
