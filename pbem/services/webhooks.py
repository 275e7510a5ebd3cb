"""A game table's chat webhooks, set by the host on the host page: add one (its URL
checked: ``pbem.channels.webhook``), remove it, start a stopped one again, send it a
test message; what the host page lists of them. The notices themselves are the
channel's (``pbem.channels.webhook``, delivered by ``pbem.channels.delivery``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import current_app
from flask_babel import gettext, ngettext
from sqlalchemy import bindparam, func, insert
from sqlmodel import Session, col, select

from pbem import wake
from pbem.channels import move_page
from pbem.channels import webhook as channel
from pbem.db import read_scope, session_scope
from pbem.errors import InvalidInput, NotFound, RateLimited, WrongState
from pbem.forms import DB_INT_MAX
from pbem.kinds import ENDED, EmailTemplate, OutboxStatus
from pbem.models import Game, Notice, Webhook, table_of, utcnow
from pbem.services.plumbing import admin_game

CHOICES = ("auto", *channel.KINDS)  # the form's kinds ("auto": guessed from the URL)


def _refused(exc: channel.Refused) -> InvalidInput:
    return InvalidInput(gettext(exc.message), reason="webhook/refused")


def add_webhook(admin_raw: str, url: Any, kind: Any, mirror_talk: bool) -> int:
    """Add a webhook to the host's game: its URL checked (its host looked up before the
    transaction, so a slow name server holds no lock), at most ``WEBHOOKS_PER_GAME``."""
    text = url if isinstance(url, str) else ""
    if not text.strip():
        raise InvalidInput(gettext("paste the webhook's address first"),
                           reason="webhook/empty")
    if kind not in CHOICES:
        raise InvalidInput(gettext("choose the kind of chat from the list"),
                           reason="webhook/kind")
    try:
        checked = channel.check(text, current_app.config)
    except channel.Refused as exc:
        raise _refused(exc) from None
    limit = int(current_app.config["WEBHOOKS_PER_GAME"])
    with session_scope() as s:
        game = admin_game(s, admin_raw)
        if game.status in ENDED:
            raise WrongState(gettext("the game is over; its table hears nothing more"))
        count = s.exec(select(func.count()).select_from(Webhook)
                       .where(Webhook.game_id == game.id)).one()
        if count >= limit:
            raise InvalidInput(ngettext("a game has at most %(num)s webhook; remove one first",
                                        "a game has at most %(num)s webhooks; remove one "
                                        "first", limit), reason="webhook/too_many")
        hook = Webhook(game_id=game.id, url=checked.url, mirror_talk=bool(mirror_talk),
                       kind=channel.guess_kind(checked.url) if kind == "auto" else kind)
        s.add(hook)
        s.flush()
        if hook.mirror_talk:  # the game pages' talk box says so
            move_page(s, game.id)
        return int(hook.id or 0)


def _hook(s: Session, game: Game, hook_id: Any) -> Webhook:
    """The game's webhook ``hook_id`` (a form's field), or a friendly refusal: an id of
    another game's webhook is no webhook of this one."""
    text = hook_id if isinstance(hook_id, str) else ""
    number = int(text) if text.isdigit() and len(text) < 12 else -1
    hook = s.get(Webhook, number) if 0 < number <= DB_INT_MAX else None
    if hook is None or hook.game_id != game.id:
        raise NotFound(gettext("this game has no such webhook; it may have been removed "
                               "already"), reason="webhook/unknown")
    return hook


def remove_webhook(admin_raw: str, hook_id: Any) -> None:
    """Remove a webhook; its notices still waiting are given up."""
    with session_scope() as s:
        game = admin_game(s, admin_raw)
        hook = _hook(s, game, hook_id)
        notices = table_of(Notice)
        s.connection().execute(notices.update().where(
            notices.c.channel == channel.CHANNEL.name, notices.c.target_id == hook.id,
            notices.c.status.in_((OutboxStatus.PENDING, OutboxStatus.SENDING)))
            .values(status=OutboxStatus.SKIPPED, last_error="the webhook was removed"))
        if hook.mirror_talk:
            move_page(s, game.id)
        s.delete(hook)


def restart_webhook(admin_raw: str, hook_id: Any) -> None:
    """Start a stopped webhook again: it hears of the news from now on."""
    with session_scope() as s:
        hook = _hook(s, admin_game(s, admin_raw), hook_id)
        if hook.mirror_talk and hook.stopped_at is not None:
            move_page(s, hook.game_id)
        hook.stopped_at, hook.failures = None, 0


def send_test_message(admin_raw: str, hook_id: Any) -> None:
    """Queue a test message for a webhook (at most ``WEBHOOK_TESTS_PER_HOUR`` a game)."""
    with session_scope() as s:
        game = admin_game(s, admin_raw)
        hook = _hook(s, game, hook_id)
        if hook.stopped_at is not None:
            raise WrongState(gettext("this webhook is stopped; start it again first"))
        limit = int(current_app.config["WEBHOOK_TESTS_PER_HOUR"])
        since = utcnow() - timedelta(hours=1)
        tests = s.exec(select(func.count()).select_from(Notice).where(
            Notice.channel == channel.CHANNEL.name, Notice.game_id == game.id,
            col(Notice.idempotency_key).startswith("webhook-test:"),
            Notice.created_at >= since)).one()
        if tests >= limit:
            raise RateLimited(ngettext(
                "at most %(num)s test message an hour; try again later",
                "at most %(num)s test messages an hour; try again later", limit))
        now = utcnow()
        s.connection().execute(insert(table_of(Notice)), [dict(
            channel=channel.CHANNEL.name, target_id=hook.id, game_id=game.id, seat_id=None,
            rcpt="", language="en", template=EmailTemplate.NOTICE,
            context={"headline": channel.TEST, "event_seq": game.event_seq},
            idempotency_key=f"webhook-test:{hook.id}:{now.isoformat()}:{tests}",
            status=OutboxStatus.PENDING, attempts=0, next_attempt_at=now, created_at=now)])
        s.info[wake.NOTICES_QUEUED] = True


_MIRRORED = select(Webhook.id).where(Webhook.game_id == bindparam("game_id"),
                                     col(Webhook.mirror_talk).is_(True),
                                     col(Webhook.stopped_at).is_(None)).limit(1)


def talk_mirrored(s: Session, game_id: str) -> bool:
    """Whether the table talk of the game goes to a chat too (a webhook that mirrors
    it, not stopped): the talk box says so to whoever writes in it."""
    return s.connection().execute(_MIRRORED, {"game_id": game_id}).first() is not None


def webhooks_of(s: Session, game: Game) -> list[dict[str, Any]]:
    """The game's webhooks as the host page lists them (the URL cut short: it holds the
    chat's secret)."""
    hooks = s.exec(select(Webhook).where(Webhook.game_id == game.id)
                   .order_by(col(Webhook.id))).all()
    return [{"id": h.id, "kind": h.kind, "shown": channel.shown_url(h.url),
             "mirror_talk": h.mirror_talk, "failures": h.failures,
             "last_error": h.last_error, "failed_at": h.failed_at,
             "stopped_at": h.stopped_at, "delivered_at": h.delivered_at} for h in hooks]


def game_webhooks(admin_raw: str) -> list[dict[str, Any]]:
    with read_scope() as s:
        return webhooks_of(s, admin_game(s, admin_raw, lock=False))
