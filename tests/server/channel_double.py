"""A channel for the tests of the channels' machinery (``pbem.channels``): it tells each
of a game's ``Webhook`` rows of kind ``double`` of every decision and notice, as a chat
webhook would, but "sends" by recording what it was given (or by failing, when the
target's URL says ``fail``/``gone``). The real channels have their own tests against
real receivers; this one tests what is common to all of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from sqlmodel import Session, select

from pbem.channels import ChannelError, Send, Skip, Target
from pbem.kinds import EmailTemplate
from pbem.models import Game, Notice, Seat, Webhook

SENT: list[dict[str, Any]] = []  # what was "sent", in order (the tests clear it)
HOLD_EMAIL = timedelta(minutes=10)


class Double:
    name = "double"
    target_model = Webhook

    def targets(self, s: Session, game: Game, seats: Sequence[Seat],
                template: EmailTemplate, context: Mapping[str, Any]) -> list[Target]:
        if template not in (EmailTemplate.DECISION, EmailTemplate.NOTICE):
            return []
        hooks = s.exec(select(Webhook).where(Webhook.game_id == game.id,
                                             Webhook.kind == "double")).all()
        return [Target(hook.id or 0, seat, rcpt=seat.email.lower(), language=seat.language,
                       email_delay=HOLD_EMAIL if "hold" in hook.url else None)
                for hook in hooks for seat in seats]

    def prepare(self, s: Session, notice: Notice, game: Game | None,
                seat: Seat | None) -> Skip | Send:
        hook = s.get(Webhook, notice.target_id)
        if hook is None:
            return Skip("no such webhook")
        return Send({"url": hook.url, "template": str(notice.template),
                     "seat": seat.name if seat else None,
                     "decision": notice.context.get("decision_id")})

    def send(self, notice: Notice, payload: Any) -> None:
        if "gone" in payload["url"]:
            raise ChannelError("410 gone", gone=True)
        if "fail" in payload["url"]:
            raise ChannelError("503 try later")
        SENT.append(payload)

    def stopped(self, s: Session, target_id: int, error: str) -> None:
        SENT.append({"stopped": target_id, "error": error})


CHANNEL = Double()
