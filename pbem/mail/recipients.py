"""Who may get which email: the kinds of email, unsubscribing (suppressions), and the
checks made when an email is queued and again when it is sent (``why_not_send``)."""

from __future__ import annotations

from sqlalchemy import bindparam
from sqlmodel import select

from pbem.i18n import mark
from pbem.models import Decision, Game, Outbox, Seat, Suppression

# Turn emails are never held back by the caps; the player asked for them by playing.
TURN_TEMPLATES = frozenset({"decision", "result"})
# Emails to people who have not (yet) joined a game.
INVITE_TEMPLATES = frozenset({"host_confirm", "invitation", "handover_invite"})
# What a player who chose "only my turns" no longer gets.
MUTABLE_TEMPLATES = frozenset({"notice", "game_started"})

_SUPPRESSED = select(Suppression.scope).where(Suppression.address == bindparam("rcpt"))


def why_not_send(s, row: Outbox, game: Game | None, seat: Seat | None,
                 to_player: bool) -> str | None:
    """Why this email must not go out now (checked at sending, not only at queueing)."""
    if suppressed(s, row.rcpt, row.template):
        return mark("the address asked not to get email from this server")
    decision_id = row.context.get("decision_id")
    if row.template == "decision" and decision_id is not None:
        decision = s.get(Decision, decision_id)
        if decision is None or decision.closed_at is not None:
            return mark("the decision closed before this email could be sent")
    if seat is None:
        return None
    if row.template == "handover_invite":
        pending = seat.pending_handover or {}
        if str(pending.get("email", "")).lower() != row.rcpt or game.status != "active":
            return mark("the host withdrew or changed this hand-over, or the game ended")
        return None
    if not to_player:
        # handed over (or re-invited): fresh links for the seat must not reach the old address
        return mark("the seat went to someone else before this email could be sent")
    if game is not None and not may_mail(game, seat, row.template):
        return mark("this person has not joined the game")
    if seat.left_at is not None:
        return mark("the player left the game")
    if seat.mute_notices and row.template in MUTABLE_TEMPLATES:
        return mark("the player asked for turn emails only")
    return None


def suppressed(s, rcpt: str, template: str | None = None) -> bool:
    """Whether address ``rcpt`` (lower case) asked for no email of ``template`` (a
    suppression's scope is a template, or ``all``); without ``template``, whether it
    asked for none at all ("never email me again")."""
    scope = s.execute(_SUPPRESSED, {"rcpt": rcpt}).scalar()
    return scope == "all" or (scope is not None and scope == template)


def may_mail(game: Game, seat: Seat, template: str) -> bool:
    """Before a person has accepted, only their invitation (or the host's confirmation
    link) may reach them. Checked when queueing and again when sending."""
    if game.status == "awaiting_host":
        return template == "host_confirm" and seat.is_host
    if seat.invite != "accepted":
        return template == "invitation" and seat.invite == "invited"
    return True
