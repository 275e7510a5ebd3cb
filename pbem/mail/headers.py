"""Every header of an email: addresses and headers built from user text, safely; the
Message-ID and threading; the List headers (one-click unsubscribe); how headers are
written on the wire, and the last check of a written-out message's header block.

Python's modern email policy decodes RFC 2047 encoded words found in a header value and
can write the decoded line breaks out raw, so a title like
``=?utf-8?q?Win=0D=0AReply-To:_x@evil.example?=`` could add headers or replace a body.
Here every header built from user text is made of plain ASCII words or of encoded words
that *we* produced from the text as typed, so a reader decodes exactly what was typed.

``parse_address`` is the one address check: the forms validate with it, and the header
builder runs it again, so an address that passed a form is always one we can write.

Every email of a game to one address carries the same Subject (the game's name) and
threads on the first email that address received from the game (``thread_of``).
"""

from __future__ import annotations

import base64
import re
import secrets
import unicodedata
from email.header import Header
from email.message import Message
from email.parser import BytesHeaderParser
from email.policy import Compat32, compat32
from email.utils import format_datetime
from typing import Any, cast

import idna
from flask import current_app
from flask_babel import gettext
from sqlalchemy import bindparam, func, union_all
from sqlmodel import Session, col, select

from pbem.i18n import mark
from pbem.kinds import OutboxStatus
from pbem.models import Game, Outbox, utcnow

MAX_ADDRESS = 254
PLAIN_MAX = 60
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
LOCAL_RE = re.compile(rf"^{_ATEXT}+(?:\.{_ATEXT}+)*$")
LABEL_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
# A phrase word we may write unencoded: RFC 5322 atext without '=' and '?' (so that no
# reader can mistake it for an encoded word).
PLAIN_WORD_RE = re.compile(r"^[A-Za-z0-9!#$%&'*+/^_`{|}~-]+$")
PLAIN_TEXT_RE = re.compile(r"^[A-Za-z0-9 !#$%&'()*+,./:;<>@\[\]^_`{|}~-]*$")
# Format characters that are legitimate inside words of some scripts.
ALLOWED_FORMAT = {"\u200c", "\u200d"}  # zero-width non-joiner and joiner


class BadAddress(ValueError):
    """An address we could not put in a mail header; ``str()`` says why, ``code`` is one
    of ``PROBLEMS`` (``address_problem`` gives the reason in the reader's language)."""

    def __init__(self, code: str) -> None:
        super().__init__(PROBLEMS[code])
        self.code = code


PROBLEMS = {  # marked for the catalogs; ``address_problem`` translates
    "empty": mark("the address is empty"),
    "long": mark("the address is too long"),
    "at": mark("an address has exactly one @"),
    "ascii": mark("use only ASCII letters, digits and . _ + - before the @"),
    "local": mark("the part before the @ has characters or dots an address cannot have"),
    "domain": mark("the part after the @ is not a mail domain"),
    "idna": mark("the part after the @ cannot be written as an international domain name "
                 "(IDNA 2008)"),
}


def address_problem(exc: BadAddress) -> str:
    """Why an address was refused, in the current language."""
    return cast(str, gettext(PROBLEMS[exc.code]))


def parse_address(text: str) -> str:
    """The address in the form we send to, or BadAddress saying why not.

    Accepted: a dot-atom local part (ASCII letters, digits and ``!#$%&'*+/=?^_`{|}~-``,
    single dots between them) and a host name of two or more labels; an international
    domain is turned into its ASCII (``xn--``) form by IDNA 2008 (``_ascii_domain``).
    Refused: quoted local parts, IP literals, domains with no IDNA 2008 form, and anything
    the header writer could not write back exactly.
    """
    addr = (text or "").strip()
    if not addr:
        raise BadAddress("empty")
    if len(addr) > MAX_ADDRESS:
        raise BadAddress("long")
    if addr.count("@") != 1:
        raise BadAddress("at")
    local, domain = addr.split("@")
    if not local.isascii():
        raise BadAddress("ascii")
    if len(local) > 64 or not LOCAL_RE.match(local) or "=?" in local or "?=" in local:
        raise BadAddress("local")
    domain = _ascii_domain(domain)
    labels = domain.split(".")
    if len(labels) < 2 or not all(LABEL_RE.match(x) for x in labels) or labels[-1].isdigit():
        raise BadAddress("domain")
    addr = f"{local}@{domain}"
    if len(addr) > MAX_ADDRESS:
        raise BadAddress("long")
    return addr


def _ascii_domain(domain: str) -> str:
    """The domain in the ASCII form mail servers look up: IDNA 2008 with the UTS 46
    mapping, so ``straße.de`` is ``xn--strae-oqa.de`` (Python's own ``idna`` codec is
    IDNA 2003, which sends it to ``strasse.de``, another domain). A domain that has no
    such form (a symbol, a bidi mix, a joiner out of place, an ``xn--`` label that does not
    decode to one, as a browser writes ``i❤.example``) is refused (``idna``)."""
    domain = domain.rstrip(".")
    if domain.isascii() and "xn--" not in domain.lower():
        return domain.lower()  # plain host names: the label checks of the caller suffice
    try:
        return idna.encode(domain, uts46=True, std3_rules=True,
                           transitional=False).decode("ascii")
    except (idna.IDNAError, UnicodeError):
        raise BadAddress("idna") from None


def bad_characters(text: str) -> bool:
    """True for text with control characters, line or paragraph separators, or invisible
    format characters (bidi overrides and the like): never allowed in names and titles."""
    for c in text or "":
        cat = unicodedata.category(c)
        if cat in ("Cc", "Zl", "Zp", "Cs", "Co", "Cn") or (cat == "Cf"
                                                           and c not in ALLOWED_FORMAT):
            return True
    return False


def encoded_word(text: str) -> str:
    """All of ``text`` as one RFC 2047 base64 encoded word (one word, so that no reader
    puts or drops a space where the text had none)."""
    return "=?utf-8?b?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


def phrase(text: str) -> str:
    """A display name (or List-Id phrase) as written in a header: plain ASCII words as
    they are, anything else as one encoded word."""
    words = text.split(" ")
    if text and all(PLAIN_WORD_RE.match(w) for w in words):
        return text
    return encoded_word(text)


def mailbox(name: str, addr: str) -> str:
    """``Name <addr>`` for a To or From header; the address is checked again here."""
    addr = parse_address(addr)
    return f"{phrase(name)} <{addr}>" if name else addr


def unstructured(text: str) -> str | Header:
    """A Subject-like header: short plain ASCII as it is, else utf-8 encoded words (which
    readers join without spaces, so a fold never adds or drops one)."""
    if (len(text) <= PLAIN_MAX and PLAIN_TEXT_RE.match(text) and "=?" not in text
            and "  " not in text and text == text.strip()):
        return text  # short enough never to be folded
    return Unstructured(text)


class Unstructured(Header):
    """``Header(text, "utf-8")`` that knows its text: how it folds follows from the text
    alone (``_Wire`` keeps it)."""

    def __init__(self, text: str) -> None:
        super().__init__(text, "utf-8")
        self.text = text


# --------------------------------------------------------------------------- a message's headers


_SHORT_PRINTABLE = re.compile(r"[\x20-\x7e]*\Z")


class _Wire(Compat32):
    """``compat32`` with CRLF line ends; a header that is printable ASCII, fits on one
    line and has no run of blanks (most of them) is written as it is, which is what the
    ``Header`` class would write, without building one (a good part of a message's cost)."""

    def fold_binary(self, name: str, value: Any) -> bytes:
        if (isinstance(value, str) and _SHORT_PRINTABLE.match(value)
                and not value.endswith(" ") and "  " not in value
                and (self.max_line_length is None
                     or len(name) + 2 + len(value) <= self.max_line_length)):
            return f"{name}: {value}{self.linesep}".encode("ascii")
        # a str, or a Header of ``unstructured``, folds the same every time: a game's
        # List-Id and Subject, an address's name are in all its emails
        key = ((name, value) if type(value) is str
               else (name, Unstructured, value.text) if type(value) is Unstructured
               else None)
        if key is None or self is not WIRE:  # a clone may fold otherwise
            return super().fold_binary(name, value)
        folded = _FOLDED.get(key)
        if folded is None:
            folded = super().fold_binary(name, value)
            if len(_FOLDED) >= _FOLDED_KEPT:
                _FOLDED.clear()
            _FOLDED[key] = folded
        return folded


WIRE = _Wire(linesep="\r\n", max_line_length=78)
# Headers folded by ``WIRE`` (immutable bytes; a dictionary under the GIL, emptied when
# full). Only WIRE's: the fold depends on the policy too.
_FOLDED: dict[tuple[Any, ...], bytes] = {}
_FOLDED_KEPT = 4096


def message_id(local: str) -> str:
    """A new Message-ID (fixed per outbox row when it is queued) for ``local``, a part
    that says what the email is, in the configured ``MAIL_DOMAIN``."""
    domain = current_app.config["MAIL_DOMAIN"]
    return f"<pbem.{local}.{secrets.token_hex(4)}@{domain}>"


# The first and the latest email sent to an address from a game, in one prebuilt query.
_SENT_BEFORE = (Outbox.game_id == bindparam("game_id"), Outbox.rcpt == bindparam("rcpt"),
                Outbox.status == OutboxStatus.SENT, Outbox.id != bindparam("id"))
_THREAD = (select(Outbox.message_id).where(col(Outbox.id).in_(union_all(
    select(func.min(Outbox.id)).where(*_SENT_BEFORE),
    select(func.max(Outbox.id)).where(*_SENT_BEFORE)))).order_by(col(Outbox.id)))


def thread_of(s: Session, row: Outbox) -> list[str]:
    """Message-IDs this email answers: the first and the latest email this address got
    from the game (both really received, so every mail program can join the thread)."""
    if row.game_id is None:
        return []
    return list(s.connection().execute(_THREAD, {"game_id": row.game_id, "rcpt": row.rcpt,
                                                 "id": row.id}).scalars())


def write_headers(msg: Message[str, Any], row: Outbox, game: Game | None, subject: str,
                  unsubscribe: str, thread: list[str] | None, lang: str,
                  reply_to: str | None = None) -> None:
    """Set every header of ``row``'s message but the MIME ones (in the order they are
    written): addressing (``reply_to``: the seat's reply address), threading on
    ``thread``, the List headers with the one-click ``unsubscribe`` link, and the flags
    that keep auto-responders quiet. (``msg`` takes str and ``Header`` values, as every
    ``compat32`` message does.)"""
    list_name = gettext("pbem games")
    name, sender = current_app.config["MAIL_FROM_PAIR"]
    domain = current_app.config["MAIL_DOMAIN"]
    msg["Subject"] = unstructured(subject)
    msg["From"] = mailbox(name, sender)
    msg["To"] = mailbox(row.to_name, row.to_addr)
    if reply_to:
        msg["Reply-To"] = mailbox(name, reply_to)
    msg["Date"] = format_datetime(utcnow())
    msg["Message-ID"] = row.message_id
    if thread:
        msg["In-Reply-To"] = thread[-1]
        msg["References"] = " ".join(thread)
    list_id = f"{game.id}.games.{domain}" if game is not None else f"mail.{domain}"
    msg["List-Id"] = f"{phrase(subject if game else list_name)} <{list_id}>"
    msg["List-Unsubscribe"] = f"<{unsubscribe}>"
    msg["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    msg["Auto-Submitted"] = "auto-generated"
    msg["X-Auto-Response-Suppress"] = "All"
    msg["Content-Language"] = lang


def check_header_block(data: bytes, expected: set[str]) -> None:
    """Refuse to send a message whose written-out headers are not exactly the ones set
    (a last line of defence against header injection through a value). Only the header
    block (up to the first empty line) is parsed: that is all a mail program reads as
    the message's headers."""
    head = data.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"
    found = [k.lower() for k in BytesHeaderParser(policy=compat32).parsebytes(head)]
    if sorted(found) != sorted(expected):
        raise ValueError(f"unexpected mail headers {sorted(set(found) ^ expected)}")
