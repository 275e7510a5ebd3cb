"""Link tokens: 32 random bytes, URL-safe, stored only as their SHA-256 hash."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete, insert
from sqlmodel import Session, col, select

from pbem.kinds import TokenKind
from pbem.models import PushSubscription, Token, table_of, utcnow

TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")
# Anything in a log line that may be a link token: 32 or more URL-safe characters (ours
# are 43), percent-encoded ones included.
SECRET_RE = re.compile(r"[A-Za-z0-9_%-]{32,}")


def redact(text: str) -> str:
    """``text`` with every possible link token written as ``<token>`` (for logs)."""
    return SECRET_RE.sub("<token>", text)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode("ascii", "replace")).hexdigest()


# One statement object for every token: SQLAlchemy compiles it once (its cache key is
# memoised on the object), where a new ``insert(...).values(...)`` is built each time.
INSERT_TOKEN = insert(table_of(Token))


def mint(session: Session, kind: TokenKind, game_id: str, seat_id: int | None = None,
         decision_id: int | None = None, action: dict[str, Any] | None = None) -> str:
    """Create a token row and return the raw token (shown once, never stored)."""
    (raw,) = mint_many(session, [{"kind": kind, "game_id": game_id, "seat_id": seat_id,
                                  "decision_id": decision_id, "action": action}])
    return raw


def mint_many(session: Session, specs: list[dict[str, Any]],
              make: Callable[[], str] = new_token) -> list[str]:
    """Create a token row for each spec (``kind``, ``game_id``, ``seat_id``,
    ``decision_id``, ``action``) in one statement; returns the raw tokens in order
    (``make`` makes each: a reply address's token has a form of its own)."""
    raws = [make() for _ in specs]
    now = utcnow()
    rows = [{**spec, "hash": hash_token(raw), "created_at": now}
            for spec, raw in zip(specs, raws, strict=True)]
    deferred = session.info.get(DEFERRED_TOKENS)
    if deferred is not None:  # a read that renders: the caller writes them later
        deferred.extend(rows)
    elif rows:  # Core, not the ORM's bulk insert: token rows are never loaded as objects
        session.connection().execute(INSERT_TOKEN, rows)
    return raws


# A session whose ``info`` holds a list under this key (a read that renders an email) gets
# the rows of the tokens it mints appended there, for the caller to insert (``INSERT_TOKEN``)
# in a short writing transaction before the links can be used.
DEFERRED_TOKENS = "pbem.deferred_tokens"


def lookup(session: Session, raw: str, *kinds: TokenKind) -> Token | None:
    """The live token of one of ``kinds`` for ``raw``, or None (garbled, unknown, revoked)."""
    if not well_formed(raw):
        return None
    token = session.get(Token, hash_token(raw))
    return token if is_live(token, *kinds) else None


def well_formed(raw: Any) -> bool:
    """Whether ``raw`` can be a token at all (else it is refused without a query)."""
    return isinstance(raw, str) and TOKEN_RE.match(raw) is not None


def is_live(token: Token | None, *kinds: TokenKind) -> bool:
    """Whether a token row found by its hash still works: not revoked, and of one of
    ``kinds`` (any kind if none are named)."""
    return token is not None and token.revoked_at is None and (
        not kinds or token.kind in kinds)


def revoke_seat(session: Session, seat_id: int) -> None:
    """Kill every player link of a seat at once (hand-over). The host's admin link stays:
    it belongs to the host, who keeps hosting after handing over their own seat; and so
    do unsubscribe links, which belong to an address and must work for good. The old
    player's browsers are forgotten too (a push subscription is the player's, not the
    seat's: it would tell the former player of the new one's turns)."""
    kept = (TokenKind.ADMIN, TokenKind.UNSUBSCRIBE)
    for token in session.exec(select(Token).where(Token.seat_id == seat_id,
                                                  col(Token.revoked_at).is_(None),
                                                  col(Token.kind).not_in(kept))):
        token.revoked_at = utcnow()
    session.execute(delete(PushSubscription).where(
        col(PushSubscription.seat_id) == seat_id))


def form_signature(secret: str, raw: str) -> str:
    """A CSRF value for a form that acts through a link token: HMAC(secret, token)."""
    return hmac.new(secret.encode(), raw.encode("ascii", "replace"), "sha256").hexdigest()


def check_signature(secret: str, raw: str, signature: str | None) -> bool:
    """Whether ``signature`` is the form signature of ``raw``; any text (non-ASCII
    included) is compared as bytes, in constant time."""
    return bool(signature) and same_secret(form_signature(secret, raw), signature)


def same_secret(expected: str, given: Any) -> bool:
    """Constant-time comparison of two secrets as UTF-8 bytes (``hmac.compare_digest``
    refuses str with non-ASCII characters, which any form field may contain)."""
    if not isinstance(given, str) or not expected:
        return False
    return hmac.compare_digest(expected.encode("utf-8"),
                               given.encode("utf-8", "surrogatepass"))
