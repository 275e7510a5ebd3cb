"""What a page says after a form changed something (Post/Redirect/Get, see
``common.see_other``): the POST answers ``303`` to a page with ``?done=<code>``, and the
page looks the code up here. A code names a sentence from a fixed list, never words of
the request; and where the database can bear the sentence out (the game is paused, the
seat is muted, a bot no longer plays it) the page says it only if it does, so a link
that names a code says nothing untrue. An unknown code says nothing.

Each entry maps a code to a function of what the page shows (the page's data) that
gives the sentence in the reader's language, or None."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from flask_babel import LazyString, lazy_gettext, ngettext

from pbem import i18n
from pbem.kinds import GameStatus

Said = Callable[[dict[str, Any]], Any]


def _always(text: LazyString) -> Said:
    return lambda data: text


def _if(text: LazyString, holds: Callable[[dict[str, Any]], Any]) -> Said:
    return lambda data: text if holds(data) else None


def say(table: dict[str, Said], code: str | None, data: dict[str, Any]) -> Any:
    """The sentence ``code`` names in ``table`` for a page showing ``data`` (None: an
    unknown code, or one the database does not bear out)."""
    said = table.get(code or "")
    return said(data) if said is not None else None


# What a player's notification settings became (the game page's form and the unsubscribe
# page's), by what ``services.set_notifications`` and ``services.unsubscribe`` return.
NOTIFY_TEXT = {
    "muted": lazy_gettext("From now on you get an email only when it is your turn (and "
                          "the result)."),
    "unmuted": lazy_gettext("You get every email of this game again."),
    "left": lazy_gettext("You left the game. A bot plays your seat, and the host has been "
                         "told."),
    "suppressed": lazy_gettext("This address will get no more email from this server."),
    "lists": lazy_gettext("This address will get no more lists of its games. The emails "
                          "of your games go on as before."),
    "ended": lazy_gettext("This game has ended, so it sends you nothing more. Your other "
                          "games go on as before."),
}


def _seat(data: dict[str, Any]) -> Any:
    return data.get("seat")


def _vacation(data: dict[str, Any]) -> str | None:
    seat = _seat(data)
    if seat is None or not seat.vacation_used_hours:
        return None
    left = data["game"].policy.vacation_left(seat.vacation_used_hours)
    return cast(str, ngettext("Your deadlines moved. Vacation left: %(d)s day.",
                              "Your deadlines moved. Vacation left: %(d)s days.",
                              1 if left == 1 else 2, d=i18n.number(left)))


# The codes whose sentence the game's log must bear out: the game page gives them the
# log's latest entry if the seat made it (``services.seat_last_event``: ``by_seat``).
BY_SEAT = frozenset({"vacation", "taken_back", "back"})


def _by_seat(data: dict[str, Any], kind: str, by: str | None = None) -> bool:
    last = data.get("by_seat")
    return last is not None and last[0] == kind and (by is None or last[1].get("by") == by)


# A seat's game page (``/g/<raw>?done=<code>``), after its forms.
GAME: dict[str, Said] = {
    "plan_set": _always(lazy_gettext("Your plan is set: it places your people on your next "
                                     "placement turns, until it cannot be followed.")),
    "plan_cleared": _always(lazy_gettext("Your plan is cleared: you place your people "
                                         "yourself.")),
    "no_plan": _always(lazy_gettext("You have no plan to clear.")),
    "standing_saved": _always(lazy_gettext("Your standing choices are saved; they decide "
                                           "from your next decision of their kind on.")),
    "standing_same": _always(lazy_gettext("Your standing choices are as they were.")),
    "vacation": lambda data: _vacation(data) if _by_seat(data, "vacation_taken") else None,
    "said": _always(lazy_gettext("Your message is on the table.")),
    "talk_saved": _always(lazy_gettext("Saved.")),
    "taken_back": _if(lazy_gettext("Taken back: decide again. Everyone sees in the log that "
                                   "you took the move back."),
                      lambda data: data.get("decision") is not None
                      and _by_seat(data, "took_back")),
    "back": _if(lazy_gettext("Welcome back: you play your seat again."),
                lambda data: _seat(data) is not None and _seat(data).bot is None
                and _by_seat(data, "seat_returned", by="player")),
    "language": _always(lazy_gettext("Your language is saved; your next emails use it too.")),
    "muted": _if(NOTIFY_TEXT["muted"],
                 lambda data: _seat(data) is not None and _seat(data).mute_notices),
    "unmuted": _if(NOTIFY_TEXT["unmuted"],
                   lambda data: _seat(data) is not None and not _seat(data).mute_notices),
    "left": _if(NOTIFY_TEXT["left"],
                lambda data: _seat(data) is not None and _seat(data).left_at is not None),
    "push_added": _if(lazy_gettext("Done: this device is notified of your turns and of the "
                                   "news of this game."),
                      lambda data: any(not d.stopped for d in data.get("devices") or ())),
    "push_removed": _always(lazy_gettext("Done: that device is no longer notified of this "
                                         "game.")),
}


def _status(data: dict[str, Any]) -> Any:
    return data["game"].status


def _last(*kinds: str, by: str | None = None) -> Callable[[dict[str, Any]], bool]:
    """Whether the game's latest log entry (``admin_data``'s ``last_event``) is one of
    ``kinds`` (and, given ``by``, made by that hand): the control just used left it."""
    def holds(data: dict[str, Any]) -> bool:
        event = data.get("last_event")
        return event is not None and event.kind in kinds and (
            by is None or (event.data or {}).get("by") == by)
    return holds


def _handover_waits(data: dict[str, Any]) -> bool:
    return any(seat.pending_handover for seat in data["seats"])


# The host page (``/admin/<raw>?done=<code>``), after its controls. Each sentence is said
# only while the game bears it out (the log's latest entry, the game's status, a
# hand-over waiting), so a link that names a code for what did not happen says nothing.
HOST: dict[str, Said] = {
    "pause": _if(lazy_gettext("Done: the game is paused."),
                 lambda data: data["game"].paused_at is not None),
    "resume": _if(lazy_gettext("Done: the game goes on."),
                  lambda data: data["game"].paused_at is None
                  and _status(data) == GameStatus.ACTIVE and _last("game_resumed")(data)),
    "extend": _if(lazy_gettext("Done: the deadline is extended."), _last("deadline_extended")),
    "bot": _if(lazy_gettext("Done: the seat is played as you chose."),
               _last("seat_on_bot", "seat_returned", by="host")),
    "withdraw": _if(lazy_gettext("Done: the offer is withdrawn."),
                    lambda data: not _handover_waits(data)),
    "abandon": _if(lazy_gettext("Done: the game is over for everyone."),
                   lambda data: _status(data) == GameStatus.ABANDONED),
    "handover_updated": _always(lazy_gettext("Done: the seat's name, language and time zone "
                                             "are updated.")),
    "handover_sent": _if(lazy_gettext(
        "Invitation sent: the seat changes hands when they accept. Until then the seat "
        "stays as it is, and nothing else is sent to that address."), _handover_waits),
    "replaced": _if(lazy_gettext("Invitation sent."),
                    lambda data: _status(data) == GameStatus.INVITING),
    "again": _if(lazy_gettext("A new game with the same players: the invitations are on "
                              "their way. This is its host page."),
                 lambda data: _status(data) == GameStatus.INVITING),
    "webhook_add": _if(lazy_gettext("Saved: the chat hears of this game from now on."),
                       lambda data: bool(data.get("webhooks"))),
    "webhook_remove": _always(lazy_gettext("Done: the webhook is removed.")),
    "webhook_restart": _if(lazy_gettext("Done: the webhook is started again."),
                           lambda data: any(h["stopped_at"] is None
                                            for h in data.get("webhooks") or [])),
    "webhook_test": _if(lazy_gettext("A test message is on its way to the chat."),
                        lambda data: bool(data.get("webhooks"))),
}


# The unsubscribe page (``/u/<raw>?done=<code>``), after its choices; ``data`` is
# ``services.describe_unsubscribe``'s.
UNSUBSCRIBE: dict[str, Said] = {
    "muted": _if(NOTIFY_TEXT["muted"],
                 lambda info: info["seat"] is not None and info["seat"].mute_notices),
    "unmuted": _if(NOTIFY_TEXT["unmuted"],
                   lambda info: info["seat"] is not None and not info["seat"].mute_notices),
    "left": _always(NOTIFY_TEXT["left"]),
    "suppressed": _if(NOTIFY_TEXT["suppressed"], lambda info: info["suppressed"]),
    "lists": _if(NOTIFY_TEXT["lists"], lambda info: info["lists_stopped"]),
    "ended": _if(NOTIFY_TEXT["ended"], lambda info: info["ended"]),
    "saved": _always(lazy_gettext("Saved: your settings apply to all your games from now "
                                  "on.")),
}
