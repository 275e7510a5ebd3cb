"""The closed sets of words the server stores in its columns, as ``StrEnum``s.

Each column holds the member's value as plain text (``EnumText``: a VARCHAR of the same
length as before, no database enum type), so a new member needs no migration. A member
is its value (``GameStatus.ACTIVE == "active"``): templates, JSON and old rows compare
and read as they did. What the engine names (decision and event kinds) is not here: each
game has its own.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator
from sqlmodel.sql.sqltypes import AutoString


class GameStatus(StrEnum):
    """Where a game is: ``awaiting_host`` -> ``inviting`` -> ``active`` -> ``finished`` or
    ``abandoned`` (a game abandoned before it started skips ``active``)."""

    AWAITING_HOST = "awaiting_host"  # made on the web; the host has not confirmed it yet
    INVITING = "inviting"  # invitations are out; starts when every seat has accepted
    ACTIVE = "active"
    FINISHED = "finished"  # ended by the rules
    ABANDONED = "abandoned"  # ended without a winner: by the host, or nobody played


# A game that has ended, either way.
ENDED = frozenset({GameStatus.FINISHED, GameStatus.ABANDONED})


class Invite(StrEnum):
    """Where a seat's invitation stands (a player who left an unstarted game: declined)."""

    INVITED = "invited"
    ACCEPTED = "accepted"
    DECLINED = "declined"


class SeatBot(StrEnum):
    """Which bot plays a seat (the host's choice, or the policy's for an absent player)."""

    HEURISTIC = "heuristic"  # the game's heuristic bot
    DEFAULT = "default"  # the timeout default, move after move
    # Levels of a bot that holds a seat from the game's creation (``Seat.robot``):
    EASY = "easy"  # the game's heuristic
    STRONG = "strong"  # the game's search bot (its ``BOTS["strong"]``)


# The bot levels a host may seat at a new game, weakest first; a game offers a level when
# its ``BOTS`` has it (``easy``: the heuristic, which every game has).
BOT_LEVELS = (SeatBot.EASY, SeatBot.STRONG)


class MoveSource(StrEnum):
    """Who made a move."""

    PLAYER = "player"
    BOT = "bot"  # a seat on a bot (the host's choice, or standing in for an absent player)
    TIMEOUT = "timeout"  # the default action, at the deadline


class TimeControl(StrEnum):
    """How a game times its decisions (``GamePolicy.time_control``)."""

    FIXED = "fixed"  # the same hours for every decision (``hours_per_decision``)
    BANK = "bank"  # a time bank per player: a reserve, more after each move, capped


class ClosedBy(StrEnum):
    """What closed a decision: a move (``MoveSource``'s values), or no move at all."""

    PLAYER = "player"
    BOT = "bot"
    TIMEOUT = "timeout"
    SUPERSEDED = "superseded"  # the engine no longer asks it
    HOST = "host"  # the host abandoned the game
    IDLE = "idle"  # the game ended as abandoned: nobody played for too long


class TokenKind(StrEnum):
    """What a link token opens (see ``pbem.models.Token``)."""

    ACTION = "action"  # one decision, one action (a one-click choice)
    PAGE = "page"  # a seat's game page
    ADMIN = "admin"  # the host's page
    INVITE = "invite"  # accept or decline an invitation
    HOST_CONFIRM = "host_confirm"  # the host confirms a game made on the web
    HANDOVER = "handover"  # take over a seat the host hands over
    UNSUBSCRIBE = "unsubscribe"  # an email's unsubscribe link (belongs to an address)
    MY_GAMES = "my_games"  # the list of an address's games
    REPLY = "reply"  # an email's Reply-To address: answering it plays or talks for the seat


class EmailTemplate(StrEnum):
    """Every kind of email: ``templates/emails/<value>.txt`` and ``.html``."""

    DECISION = "decision"  # a decision is yours (also its reminders)
    RESULT = "result"  # the game ended
    NOTICE = "notice"  # something happened (a timeout, a pause, a hand-over...)
    GAME_STARTED = "game_started"
    HOST_CONFIRM = "host_confirm"  # confirm the game you made on the web
    INVITATION = "invitation"
    HANDOVER_INVITE = "handover_invite"  # take over a seat
    WELCOME = "welcome"  # you took over a seat
    DECLINED = "declined"  # to the host: someone declined a seat or a hand-over
    MY_GAMES = "my_games"  # the list of an address's games
    DIGEST = "digest"  # an address's daily digest of the games waiting for it
    REPLY = "reply"  # the server's answer to a player's reply by email
    GAME_LINK = "game_link"  # the link to one's game, asked for from one's calendar feed


class OutboxStatus(StrEnum):
    """Where an email stands (see ``pbem.models.Outbox``)."""

    PENDING = "pending"  # due at its next attempt
    SENDING = "sending"  # claimed by a sender, leased
    SENT = "sent"
    HELD = "held"  # over a sending cap; summed up in the next turn email...
    MERGED = "merged"  # ...which did
    SKIPPED = "skipped"  # stale, suppressed or muted when it was due
    UNDELIVERABLE = "undeliverable"  # failed for good


class Inbound(StrEnum):
    """What became of a message the inbound receiver took (``pbem.models.InboundMessage``)."""

    PLAYED = "played"  # at least one command was recorded
    REFUSED = "refused"  # read, nothing recorded: answered with the reason
    TALK = "talk"  # only table talk: posted (and answered)
    EMPTY = "empty"  # no command in it (answered with the commands of the moment)
    AUTO = "auto"  # an auto-reply, a mailing list or a delivery report: never answered
    UNAUTHENTICATED = "unauthenticated"  # failed DMARC (or SPF and DKIM): not read
    UNKNOWN = "unknown"  # no live reply address of ours: not read
    WRONG_SENDER = "wrong_sender"  # From is not the seat's address: not read
    DUPLICATE = "duplicate"  # the same message again (its Message-ID): already handled
    BOUNCE = "bounce"  # to an email's return path: a delivery report (services.bounces)


class Process(StrEnum):
    """A process that writes a heartbeat (``pbem.models.Heartbeat``, ``pbem.health``)."""

    CLOCK = "clock"  # ``pbem clock``: the sweeps and the mail loop
    INBOUND = "inbound"  # ``pbem inbound``: the receiver or the IMAP poller
    BOTS = "bots"  # ``pbem bots``: a bot worker (one row per worker process)


class Delivery(StrEnum):
    """How an address gets its turns (``pbem.models.Address``)."""

    TURN = "turn"  # an email for each turn (the default)
    DIGEST = "digest"  # one email a day listing every game waiting (reminders still go)


class News(StrEnum):
    """When an address gets the news of its games: a game started, someone timed out or
    was handed a seat, the game is over (``pbem.models.Address``)."""

    NOW = "now"  # an email at once (the default)
    TURN = "turn"  # told in the next turn email (the result still comes when it ends)
    NEVER = "never"


class SuppressionScope(StrEnum):
    """What an address asked to get no more of."""

    ALL = "all"  # any email from this server
    MY_GAMES = "my_games"  # lists of its games (the template's name)


E = TypeVar("E", bound=StrEnum)


class EnumText(TypeDecorator[E]):
    """A column of one ``StrEnum``, stored as its values in plain text (``AutoString`` of
    ``length``, the type these columns always had, so migrations see no change). Values
    load as members. Text that is no member (a row from another version, or damaged) is
    written and read as it is, as before this type: it fails where it is used (an email
    that cannot be rendered), not where it is read (the host page that lists it)."""

    impl = AutoString
    cache_ok = True

    def __init__(self, enum: type[E], length: int) -> None:
        super().__init__(length=length)
        self.enum = enum
        self.members: dict[str, E] = {member.value: member for member in enum}

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return value.value if isinstance(value, self.enum) else value

    def process_result_value(self, value: Any, dialect: Dialect) -> E | None:
        return None if value is None else self.members.get(value, value)
