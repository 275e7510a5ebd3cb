"""Who may get which email: the kinds of email, unsubscribing (suppressions), and the
checks made when an email is queued and again when it is sent (``why_not_send``)."""

from __future__ import annotations

from sqlalchemy import bindparam
from sqlmodel import Session, select

from pbem.i18n import mark
from pbem.kinds import EmailTemplate, GameStatus, Invite, SuppressionScope
from pbem.models import Decision, Game, Outbox, Seat, Suppression

# Turn emails are never held back by the caps; the player asked for them by playing (and
# the answer to a reply by email, by replying: those have a cap of their own,
# REPLY_ANSWERS_PER_HOUR, in ``pbem.services.replies``; and the link to a game asked for
# from the calendar, capped per address and day in ``pbem.services.calendar``).
TURN_TEMPLATES = frozenset({EmailTemplate.DECISION, EmailTemplate.RESULT,
                            EmailTemplate.REPLY, EmailTemplate.GAME_LINK})
# Emails to people who have not (yet) joined a game.
INVITE_TEMPLATES = frozenset({EmailTemplate.HOST_CONFIRM, EmailTemplate.INVITATION,
                              EmailTemplate.HANDOVER_INVITE})
# What a player who chose "only my turns" no longer gets.
MUTABLE_TEMPLATES = frozenset({EmailTemplate.NOTICE, EmailTemplate.GAME_STARTED})

# Run as Core statements on the session's connection (cheaper than the ORM's execution).
_SUPPRESSED = select(Suppression.scope).where(Suppression.address == bindparam("rcpt"))
_CLOSED = select(Decision.closed_at).where(Decision.id == bindparam("id"))
# Both asked of a decision's email in one statement (each a row at most: the address and
# the decision's id are primary keys): the suppression's scope, whether the decision
# exists, and when it closed.
_SUPPRESSED_AND_CLOSED = select(
    _SUPPRESSED.scalar_subquery().label("scope"),
    select(Decision.id).where(Decision.id == bindparam("id")).scalar_subquery().label("found"),
    _CLOSED.scalar_subquery().label("closed_at"))


def why_not_send(s: Session, row: Outbox, game: Game | None, seat: Seat | None,
                 to_player: bool) -> str | None:
    """Why this email must not go out now (checked at sending, not only at queueing)."""
    decision_id = row.context.get("decision_id")
    if row.template == EmailTemplate.DECISION and decision_id is not None:
        scope, found, closed_at = s.connection().execute(
            _SUPPRESSED_AND_CLOSED, {"rcpt": row.rcpt, "id": decision_id}).one()
        if covers(scope, row.template):
            return mark("the address asked not to get email from this server")
        if found is None or closed_at is not None:
            return mark("the decision closed before this email could be sent")
    elif suppressed(s, row.rcpt, row.template):
        return mark("the address asked not to get email from this server")
    if seat is None:
        return None
    if row.template == EmailTemplate.HANDOVER_INVITE:
        pending = seat.pending_handover or {}
        if (str(pending.get("email", "")).lower() != row.rcpt or game is None
                or game.status != GameStatus.ACTIVE):
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


def suppressed(s: Session, rcpt: str, template: EmailTemplate | None = None) -> bool:
    """Whether address ``rcpt`` (lower case) asked for no email of ``template`` (a
    suppression's scope is a template, or ``all``); without ``template``, whether it
    asked for none at all ("never email me again")."""
    return covers(s.connection().execute(_SUPPRESSED, {"rcpt": rcpt}).scalar(), template)


def covers(scope: str | None, template: str | None) -> bool:
    """Whether an address's suppression ``scope`` (None: it has none) covers emails of
    ``template`` (None: any email, "never email me again")."""
    return scope == SuppressionScope.ALL or (scope is not None and scope == template)


def may_mail(game: Game, seat: Seat, template: EmailTemplate) -> bool:
    """Before a person has accepted, only their invitation (or the host's confirmation
    link) may reach them; a bot seated at creation (``Seat.robot``) gets nothing. Checked
    when queueing and again when sending."""
    if seat.robot:
        return False
    if game.status == GameStatus.AWAITING_HOST:
        return template == EmailTemplate.HOST_CONFIRM and seat.is_host
    if seat.invite != Invite.ACCEPTED:
        return template == EmailTemplate.INVITATION and seat.invite == Invite.INVITED
    return True
