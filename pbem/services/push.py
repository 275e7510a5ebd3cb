"""A seat's browsers notified by Web Push ("notify me on this device", see
``pbem.channels.push``): a browser's subscription registered from the seat's game page,
removed from it (that device, or any of the list), and the list the page shows."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec
from flask import current_app
from flask_babel import gettext
from sqlalchemy import func
from sqlmodel import Session, col, select

from pbem.channels import move_page, push
from pbem.db import session_scope
from pbem.errors import InvalidInput, RateLimited, WrongState
from pbem.kinds import GameStatus, Invite, TokenKind
from pbem.models import Game, PushSubscription, Seat
from pbem.services.plumbing import live_seat_page

MAX_LABEL = 100  # characters of a device's name ("Firefox on Android")
BASE64URL = re.compile(r"[A-Za-z0-9_-]+={0,2}")


@dataclass(frozen=True, slots=True)
class Device:
    """One of a seat's browsers, as its game page lists it."""

    id: int
    label: str
    since: datetime
    endpoint_hash: str  # the page's script knows its own browser by it
    stopped: bool  # failed too often, or the push service forgot it
    last_error: str | None


def seat_devices(s: Session, seat: Seat) -> list[Device]:
    """The seat's browsers, oldest first."""
    rows = s.exec(select(PushSubscription).where(PushSubscription.seat_id == seat.id)
                  .order_by(col(PushSubscription.id))).all()
    return [Device(row.id or 0, row.label, row.created_at, row.endpoint_hash,
                   row.stopped_at is not None, row.last_error) for row in rows]


def endpoint_hash(endpoint: str) -> str:
    return hashlib.sha256(endpoint.encode()).hexdigest()


def add_push_device(page_raw: str, form: Any) -> None:
    """Register the browser subscription of ``form`` (``endpoint``, ``p256dh``, ``auth``
    as the browser's ``PushSubscription.toJSON()`` gives them, and ``label``) for the
    seat of the game-page link ``page_raw``. The same browser again renews its keys and
    starts it again if it was stopped. Refused with InvalidInput (what is wrong with it),
    WrongState (the seat plays no more) or RateLimited (too many devices)."""
    endpoint, p256dh, auth, label = _checked(form)
    digest = endpoint_hash(endpoint)
    with session_scope() as s:
        _token, game, seat = live_seat_page(s, page_raw, TokenKind.PAGE)
        _require_player(game, seat)
        row = s.exec(select(PushSubscription).where(
            PushSubscription.seat_id == seat.id,
            PushSubscription.endpoint_hash == digest)).first()
        if row is None:
            count = s.exec(select(func.count()).select_from(PushSubscription).where(
                PushSubscription.seat_id == seat.id)).one()
            most = int(current_app.config["PUSH_DEVICES_PER_SEAT"])
            if count >= most:
                raise RateLimited(gettext(
                    "this seat has %(num)s devices already: remove one first", num=most),
                    reason="push/too_many")
            row = PushSubscription(seat_id=seat.id or 0, endpoint=endpoint,
                                   endpoint_hash=digest, p256dh=p256dh, auth=auth)
        row.p256dh, row.auth, row.label = p256dh, auth, label
        row.stopped_at, row.failures, row.last_error, row.failed_at = None, 0, None, None
        s.add(row)
        move_page(s, game.id)


def remove_push_device(page_raw: str, device: Any = None, endpoint: Any = None) -> bool:
    """Stop notifying one of the seat's browsers: the one of id ``device`` (the page's
    list) or of address ``endpoint`` (this browser, from the page's script). False if the
    seat has no such device (any more)."""
    with session_scope() as s:
        _token, game, seat = live_seat_page(s, page_raw, TokenKind.PAGE)
        query = select(PushSubscription).where(PushSubscription.seat_id == seat.id)
        if isinstance(endpoint, str) and endpoint:
            query = query.where(PushSubscription.endpoint_hash == endpoint_hash(endpoint))
        elif isinstance(device, str) and device.isdigit() and len(device) < 10:
            query = query.where(PushSubscription.id == int(device))
        else:
            raise InvalidInput(gettext("choose a device to remove"))
        row = s.exec(query).first()
        if row is None:
            return False
        s.delete(row)
        move_page(s, game.id)
        return True


def _require_player(game: Game, seat: Seat) -> None:
    if (game.status not in (GameStatus.INVITING, GameStatus.ACTIVE) or seat.left_at
            is not None or seat.invite != Invite.ACCEPTED):
        raise WrongState(gettext("the game is not running"))


def _checked(form: Any) -> tuple[str, str, str, str]:
    """The fields of a subscription, checked: the push service's address (see
    ``channels.push.endpoint_refusal``), the browser's public key (a point of P-256) and
    its 16-byte secret, and a device name of at most ``MAX_LABEL`` printable
    characters."""
    endpoint, p256dh, auth = (form.get(name, "") for name in ("endpoint", "p256dh", "auth"))
    refused = push.endpoint_refusal(
        endpoint, bool(current_app.config["PUSH_ALLOW_HTTP_LOOPBACK"]))
    if refused:
        raise InvalidInput(gettext("this browser's push service address cannot be used "
                                   "(%(why)s)", why=gettext(refused)), reason="push/endpoint")
    key = _b64(p256dh, 100)
    try:
        if key is None or len(key) != 65:
            raise ValueError
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), key)
    except ValueError:
        raise InvalidInput(gettext("this browser's notification key is not valid"),
                           reason="push/key") from None
    secret = _b64(auth, 40)
    if secret is None or len(secret) != 16:
        raise InvalidInput(gettext("this browser's notification secret is not valid"),
                           reason="push/auth")
    label = "".join(c for c in str(form.get("label", "")) if c.isprintable())
    label = " ".join(label.split())[:MAX_LABEL] or gettext("A browser")
    return endpoint, p256dh.rstrip("="), auth.rstrip("="), label


def _b64(text: Any, most: int) -> bytes | None:
    """The bytes of base64url ``text`` (padded or not) of at most ``most`` characters."""
    if not isinstance(text, str) or len(text) > most or not BASE64URL.fullmatch(text):
        return None
    text = text.rstrip("=")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
