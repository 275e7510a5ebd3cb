"""What an address chooses for all of its games, with no account: through the link of
any email sent to it (the unsubscribe link of every email, its "Email settings" page).
An email per turn or a daily digest at an hour of its choice, quiet hours, when news
comes, and the zone of those hours. ``pbem.mail.addresses`` applies them when an email
falls due; the clock sends the digests (``pbem.services.digest``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask_babel import gettext
from sqlalchemy import func
from sqlmodel import Session, col, select

from pbem import zones
from pbem.db import session_scope
from pbem.errors import FormInvalid, InvalidInput
from pbem.forms import parse_int
from pbem.kinds import Delivery, Invite, News, TokenKind
from pbem.models import Address, Seat, utcnow
from pbem.services.plumbing import live_token

HOURS = range(24)


def address_settings(s: Session, address: str) -> dict[str, Any] | None:
    """The settings of ``address`` (lower case) as its page shows them, or None for an
    address that has never joined a game here (it has nothing to set)."""
    seats = s.exec(select(Seat).where(func.lower(Seat.email) == address,
                                      Seat.invite == Invite.ACCEPTED)
                   .order_by(col(Seat.id).desc())).all()
    if not seats:
        return None
    row = s.get(Address, address)
    zone = (row.timezone if row is not None and row.timezone else None) or seats[0].timezone
    if row is None:
        row = Address(address=address)
    return {"delivery": row.delivery, "digest_hour": row.digest_hour,
            "quiet_from": row.quiet_from, "quiet_to": row.quiet_to, "news": row.news,
            "timezone": zone}


def save_address_settings(raw: str, form: Mapping[str, Any]) -> None:
    """Set what the address of unsubscribe link ``raw`` chose, from the fields of its
    settings form; FormInvalid (field, message) for anything out of place, nothing
    saved then."""
    errors: list[tuple[str, str]] = []
    delivery = form.get("delivery", "")
    if delivery not in set(Delivery):
        errors.append(("delivery", gettext("choose how you get your turns")))
    digest_hour = _hour(form.get("digest_hour"), "digest_hour", errors, required=True)
    quiet_from = _hour(form.get("quiet_from"), "quiet_from", errors)
    quiet_to = _hour(form.get("quiet_to"), "quiet_to", errors)
    if (quiet_from is None) != (quiet_to is None) or (
            quiet_from is not None and quiet_from == quiet_to):
        errors.append(("quiet_from", gettext(
            "choose when your quiet hours begin and end (two different hours), or none")))
    news = form.get("news", "")
    if news not in set(News):
        errors.append(("news", gettext("choose when you hear the news of your games")))
    zone = form.get("timezone", "")
    if not zones.is_known(zone):
        errors.append(("timezone", gettext("choose a time zone from the list")))
    if errors:
        raise FormInvalid(errors)
    with session_scope() as s:
        token = live_token(s, raw, TokenKind.UNSUBSCRIBE)
        address = str((token.action or {}).get("address", "")).lower()
        if address_settings(s, address) is None:
            raise FormInvalid([("delivery", gettext(
                "this address plays no game here, so it has nothing to set"))])
        row = s.get(Address, address) or Address(address=address)
        if delivery == Delivery.DIGEST and (row.delivery != Delivery.DIGEST
                                            or row.digest_hour != digest_hour):
            row.digest_sent_at = utcnow()  # the first digest comes at the next such hour
        row.delivery, row.digest_hour = Delivery(delivery), digest_hour or 0
        row.quiet_from, row.quiet_to = quiet_from, quiet_to
        row.news, row.timezone, row.updated_at = News(news), zone, utcnow()
        s.add(row)


def _hour(value: Any, field: str, errors: list[tuple[str, str]],
          required: bool = False) -> int | None:
    if not required and value in (None, ""):
        return None
    try:
        return parse_int(value, HOURS.start, HOURS.stop - 1, "")
    except InvalidInput:
        errors.append((field, gettext("choose an hour from the list")))
        return None
