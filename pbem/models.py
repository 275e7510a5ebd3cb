"""All database tables (SQLModel), in one module.

Times are aware UTC datetimes. Engine states and actions are stored as JSON text. Raw
link tokens are never stored: a Token row holds only the SHA-256 hash. Statuses and kinds
are the StrEnums of ``pbem.kinds``, stored as plain text.

Every transaction that changes a game, its seats, its decisions or its log moves the
game's ``page_version`` (a session hook at the end of this module), so that a page can
tell whether anything it shows changed from one indexed read.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any, cast

from sqlalchemy import (
    JSON,
    Column,
    ColumnElement,
    Index,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
    bindparam,
    event,
    update,
)
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.orm import Session, make_transient_to_detached
from sqlmodel import Field, SQLModel

from pbem.kinds import (
    ClosedBy,
    Delivery,
    EmailTemplate,
    EnumText,
    GameStatus,
    Inbound,
    Invite,
    MoveSource,
    News,
    OutboxStatus,
    Process,
    SeatBot,
    SuppressionScope,
    TokenKind,
)
from pbem.policy import GamePolicy, PolicyColumn

# A naming convention before the first revision, so constraints can be dropped later.
SQLModel.metadata.naming_convention = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata: MetaData = SQLModel.metadata


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(when: datetime) -> datetime:
    """A stored time as UTC (SQLite gives it back without its zone)."""
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def table_of(model: type[SQLModel]) -> Table:
    """The Core table of a model, for Core statements that skip the ORM's costs (what
    SQLModel sets as ``__table__`` without declaring it)."""
    return cast(Table, sa_inspect(model).local_table)


class RowLoader:
    """Objects of ``model`` made from the rows of a Core query as the ORM's query loads
    them (every column set, no history), at a fraction of its cost: its execution and
    loading cost several times the statement on SQLite. ``keys``: the attributes of the
    table's columns, in the table's order (a row's values for them, in that order)."""

    def __init__(self, model: type[SQLModel]) -> None:
        mapper = sa_inspect(model)
        self.model = model
        self.keys = tuple(mapper.get_property_by_column(c).key
                          for c in mapper.local_table.columns)
        self.pk = [c.name for c in mapper.local_table.columns].index(
            mapper.primary_key[0].name)
        self._mapper = mapper
        self._new = mapper.class_manager.new_instance

    def detached(self, values: Any) -> Any:
        """A detached object with these column values (brought into a session with
        ``Session.add``, persistent: no second load)."""
        obj = self._new()
        obj.__dict__.update(zip(self.keys, values, strict=True))
        make_transient_to_detached(obj)
        return obj

    def in_session(self, s: Session, values: Any) -> Any:
        """The object of ``s`` for the row, as a query gives it: the one the session
        holds of that identity, else a new persistent one (``detached``, added)."""
        held = s.identity_map.get(self._mapper.identity_key_from_primary_key(
            (values[self.pk],)))
        if held is not None:
            return held
        obj = self.detached(values)
        s.add(obj)
        return obj


def id_column(column: int | None) -> ColumnElement[int]:
    """An integer primary key (``Outbox.id``) as a column of ints, to select ids with: on
    an object it is ``int | None`` (None until the object is flushed), in a row never
    None."""
    return cast("ColumnElement[int]", column)


class Game(SQLModel, table=True):
    """A game: its engine state (JSON), a version for optimistic locking, its policy."""

    id: str = Field(primary_key=True, max_length=16)
    engine: str = Field(max_length=32)
    title: str = Field(default="", max_length=200)
    options: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    seed: int
    state: str | None = Field(default=None, sa_column=Column(Text))
    # The state before the last move a player made, while only bots moved after it: what a
    # take-back restores (services.takeback); None once anything else moved.
    undo_state: str | None = Field(default=None, sa_column=Column(Text))
    version: int = 0
    status: GameStatus = Field(default=GameStatus.AWAITING_HOST, index=True,
                               sa_type=EnumText(GameStatus, 20))
    # How the server runs it: deadlines, reminders, absent players, vacation (pbem.policy).
    policy: GamePolicy = Field(default_factory=GamePolicy,
                               sa_column=Column(PolicyColumn, nullable=False))
    # Full rounds in a row in which no person played (every decision closed by a timeout
    # or a bot); -1 while a person has played in the current round. A game whose engine
    # has no rounds counts moves instead. At the server's IDLE_ROUNDS the game ends as
    # abandoned (services.playing).
    idle_rounds: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    paused_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    event_seq: int = 0  # last EventLog.seq written
    # Moves with every committed change to the game, its seats, its decisions or its log
    # (the hook at the end of this module): a page's ETag names it instead of the page.
    page_version: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    # public, not secret: the spectator URL
    spectator_key: str = Field(max_length=32, index=True)
    # The game the host started from this one with "play again with the same players"
    # (set once: a second press opens that game instead of making another).
    follow_up_game_id: str | None = Field(default=None, max_length=16)
    # When a bot worker last claimed a decision of this game (``pbem.bots``): due bot
    # decisions go round-robin, the host (and game) served longest ago first.
    bot_served_at: datetime | None = None


class Seat(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("game_id", "position"),)

    id: int | None = Field(default=None, primary_key=True)
    game_id: str = Field(foreign_key="game.id", index=True, max_length=16)
    position: int
    name: str = Field(max_length=100)
    email: str = Field(max_length=254)
    language: str = Field(default="en", max_length=8)
    timezone: str = Field(default="UTC", max_length=64)
    is_host: bool = False
    invite: Invite = Field(default=Invite.INVITED, sa_type=EnumText(Invite, 12))
    bot: SeatBot | None = Field(default=None, sa_type=EnumText(SeatBot, 16))  # None: a person
    # A bot from the game's creation (the host seated it; ``bot`` is its level): never a
    # person, no address, never mailed; its moves are played by the clock.
    robot: bool = Field(default=False, sa_column_kwargs={"server_default": "0"})
    seen_event_seq: int = 0  # events up to here were narrated to this seat
    # The last time the seat's game page said it was open and in view (static/live.js):
    # a decision opened meanwhile shows up there, and its email waits (FOLLOW_UP_MINUTES).
    page_seen_at: datetime | None = None
    timeouts_in_row: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    # A time bank game (``GamePolicy.banked``): the seconds left on the seat's clock as
    # its last decision closed (None: the whole reserve, never used). While a decision of
    # the seat is open, its deadline is the clock's end (``services.playing``).
    bank_left: float | None = None
    vacation_used_hours: float = Field(default=0.0, sa_column_kwargs={"server_default": "0"})
    vacation_until: datetime | None = None
    # Notification settings: only turn emails (and the result); or the player left the
    # game (a bot plays the seat and nothing more is sent to them).
    mute_notices: bool = Field(default=False, sa_column_kwargs={"server_default": "0"})
    # Table talk: email each message of the others at once (else it comes in the next
    # email of the game, as everything else that happened).
    talk_now: bool = Field(default=False, sa_column_kwargs={"server_default": "0"})
    left_at: datetime | None = None
    # A hand-over the host asked for and the new person has not accepted yet:
    # {"name", "email", "language", "timezone", "at"}. Nothing but the one invitation
    # goes to that address until they accept.
    pending_handover: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))


class Decision(SQLModel, table=True):
    """One open (or closed) question to one seat, with its deadline."""

    __table_args__ = (Index("ix_decision_open", "closed_at", "deadline_at"),
                      Index("ix_decision_remind", "closed_at", "next_reminder_at"))

    id: int | None = Field(default=None, primary_key=True)
    game_id: str = Field(foreign_key="game.id", index=True, max_length=16)
    seat_id: int = Field(foreign_key="seat.id", index=True)
    position: int
    seq: int  # the game version at which it opened
    kind: str = Field(max_length=32)
    opened_at: datetime = Field(default_factory=utcnow)
    deadline_at: datetime | None = None
    reminded_at: datetime | None = None  # the last reminder sent
    next_reminder_at: datetime | None = None
    reminders_sent: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    host_reminded_at: datetime | None = None  # the host's "remind now" (once per decision)
    closed_at: datetime | None = None
    closed_by: ClosedBy | None = Field(default=None, sa_type=EnumText(ClosedBy, 16))
    # A bot worker thinks about this (a bot's) decision until then (``pbem.bots``): no
    # other worker claims it meanwhile; a worker that died leaves it to the next after.
    bot_claimed_until: datetime | None = None


class Token(SQLModel, table=True):
    """A link secret, stored only as its SHA-256 hash.

    Kinds (``TokenKind``): ``action`` (one decision, one action), ``page`` (a seat's
    game page), ``admin`` (the host's admin page; ``action`` holds the address it was sent
    to, who joins a game made by its "play again"), ``unsubscribe`` (``action``: the
    address and the template of its email), ``invite`` (accept/decline), ``host_confirm``,
    ``handover`` (take over a seat), ``my_games`` (the list of an address's games,
    ``action`` holds the address; it expires ``LINK_DAYS`` after ``created_at``, and names
    one of the address's games only because every token names a game).
    """

    hash: str = Field(primary_key=True, max_length=64)
    kind: TokenKind = Field(sa_type=EnumText(TokenKind, 16))
    game_id: str = Field(foreign_key="game.id", index=True, max_length=16)
    seat_id: int | None = Field(default=None, foreign_key="seat.id")
    decision_id: int | None = Field(default=None, foreign_key="decision.id", index=True)
    action: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow)
    revoked_at: datetime | None = None


class Move(SQLModel, table=True):
    """Append-only record of every action applied."""

    id: int | None = Field(default=None, primary_key=True)
    game_id: str = Field(foreign_key="game.id", index=True, max_length=16)
    decision_id: int = Field(foreign_key="decision.id", unique=True)
    position: int
    action: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    source: MoveSource = Field(sa_type=EnumText(MoveSource, 16))
    created_at: datetime = Field(default_factory=utcnow)
    # The game's version and its last event before the move (None: recorded before
    # take-backs), and whether the move showed anything hidden (``engine.core.Reveals``).
    version: int | None = None
    event_seq: int | None = None
    revealed: bool | None = None


class EventLog(SQLModel, table=True):
    """The narration log: engine events (with visibility) and server notices."""

    # the game page finds the beginnings of rounds among a long game's events by kind
    __table_args__ = (UniqueConstraint("game_id", "seq"),
                      Index("ix_eventlog_game_kind", "game_id", "kind", "seq"))

    id: int | None = Field(default=None, primary_key=True)
    game_id: str = Field(foreign_key="game.id", index=True, max_length=16)
    seq: int
    kind: str = Field(max_length=40)
    actor: int | None = None
    data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    visible_to: list[int] | None = Field(default=None, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow)


class Outbox(SQLModel, table=True):
    """One row per email, written in the same transaction as the move that causes it.

    Status (``OutboxStatus``): ``pending`` (due at ``next_attempt_at``), ``sending``
    (claimed, leased until ``next_attempt_at``), ``sent``; or it ended without being sent:
    ``skipped`` (stale, suppressed, muted), ``held`` (over a sending cap; summarised in the
    recipient's next turn email, then ``merged``), ``undeliverable`` (failed for good;
    ``last_error``).
    """

    __table_args__ = (Index("ix_outbox_due", "status", "next_attempt_at"),
                      Index("ix_outbox_rcpt", "rcpt", "created_at"),
                      Index("ix_outbox_failed_at", "failed_at"))

    id: int | None = Field(default=None, primary_key=True)
    game_id: str | None = Field(default=None, foreign_key="game.id", index=True, max_length=16)
    seat_id: int | None = Field(default=None, foreign_key="seat.id")
    to_addr: str = Field(max_length=254)
    rcpt: str = Field(default="", max_length=254,  # to_addr in lower case, for the caps
                      sa_column_kwargs={"server_default": ""})
    to_name: str = Field(default="", max_length=100)
    language: str = Field(default="en", max_length=8)
    template: EmailTemplate = Field(sa_type=EnumText(EmailTemplate, 64))
    context: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    idempotency_key: str = Field(unique=True, max_length=200)
    status: OutboxStatus = Field(default=OutboxStatus.PENDING,
                                 sa_type=EnumText(OutboxStatus, 16))
    attempts: int = 0
    next_attempt_at: datetime = Field(default_factory=utcnow)
    last_error: str | None = Field(default=None, sa_column=Column(Text))
    message_id: str = Field(max_length=200)
    created_at: datetime = Field(default_factory=utcnow)
    sent_at: datetime | None = None
    # The last failed attempt to send it (an error, the mail server's refusal, giving up,
    # a bounce): the deep health check and /metrics count the failures of the last hour.
    failed_at: datetime | None = None


class Suppression(SQLModel, table=True):
    """An address that asked to get no more email of some kind from this server:
    ``scope`` ``all`` (never email me again: a one-click unsubscribe by someone who is not
    a player, or the choice on the unsubscribe page) or ``my_games`` (no more lists of
    one's games: a one-click unsubscribe from such a list). ``all`` covers the other."""

    address: str = Field(primary_key=True, max_length=254)  # lower case
    scope: SuppressionScope = Field(default=SuppressionScope.ALL,
                                    sa_type=EnumText(SuppressionScope, 16),
                                    sa_column_kwargs={"server_default": SuppressionScope.ALL.value})
    created_at: datetime = Field(default_factory=utcnow)


class Address(SQLModel, table=True):
    """What one email address chose for all of its games, set through links sent to it
    (there are no accounts; ``pbem.mail.addresses`` applies it when an email is due):

    - ``delivery``: an email per turn, or a daily digest at ``digest_hour`` (reminders
      go as ever); ``digest_sent_at``: the last digest's time;
    - quiet hours from ``quiet_from`` to ``quiet_to`` (whole hours; None: none): what
      falls due then waits until they end;
    - ``news``: at once, in the next turn email, or never;
    - ``timezone`` for those hours (None: the zone of the seat an email is about);
    - ``calendar_hash``, the hash of its private calendar feed's secret (the feed of
      every open decision of the address, ``pbem.services.calendar``; None: no feed),
      made at ``calendar_since``."""

    address: str = Field(primary_key=True, max_length=254)  # lower case
    timezone: str | None = Field(default=None, max_length=64)
    delivery: Delivery = Field(default=Delivery.TURN, sa_type=EnumText(Delivery, 16))
    digest_hour: int = 8
    digest_sent_at: datetime | None = None
    quiet_from: int | None = None
    quiet_to: int | None = None
    news: News = Field(default=News.NOW, sa_type=EnumText(News, 16))
    calendar_hash: str | None = Field(default=None, max_length=64, unique=True)
    calendar_since: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class InboundMessage(SQLModel, table=True):
    """A message the inbound receiver handed to ``services.replies``: one row per
    Message-ID (``key``, its SHA-256), so the same message delivered twice (a retrying
    mail server, an IMAP poll after a crash) is read once. ``outcome``: ``Inbound``;
    ``answered``: whether the server answered it (its answers per seat are capped);
    ``lines``/``played``: the command lines read and recorded. The sender's address is
    kept only for messages about a seat (the seat's own)."""

    __table_args__ = (Index("ix_inboundmessage_seat", "seat_id", "received_at"),)

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(unique=True, max_length=64)
    received_at: datetime = Field(default_factory=utcnow)
    game_id: str | None = Field(default=None, foreign_key="game.id", index=True,
                                max_length=16)
    seat_id: int | None = Field(default=None, foreign_key="seat.id")
    outcome: Inbound = Field(default=Inbound.UNKNOWN, sa_type=EnumText(Inbound, 20))
    answered: bool = False
    lines: int = 0
    played: int = 0


class Heartbeat(SQLModel, table=True):
    """What a clock or inbound process last did, one row per process (``process``:
    kind, host name and pid), written over as it works (an upsert, ``pbem.health.beat``),
    so that the web's health check can tell a silent clock from a quiet one. Several
    clocks may run (on PostgreSQL, on several machines): each has its row, and the
    freshest counts. Rows of processes silent for a day are deleted (``pbem.health``)."""

    process: str = Field(primary_key=True, max_length=255)
    kind: Process = Field(sa_type=EnumText(Process, 16))
    started_at: datetime = Field(default_factory=utcnow)
    beat_at: datetime = Field(default_factory=utcnow)  # the last sign of life
    # clock: the end of its last sweep (not of one skipped because another clock swept),
    # how long that sweep took, and how many it made since it started
    swept_at: datetime | None = None
    sweep_seconds: float | None = None
    sweeps: int = 0
    # inbound: the last message handed over, and how many since it started
    message_at: datetime | None = None
    messages: int = 0


class BotUsage(SQLModel, table=True):
    """The CPU time (seconds of the thinking thread) a game's bots spent choosing moves
    in one UTC ``day``: one row per game and day, added to by an upsert after each bot
    decision (``services.allowance``), whether or not its move could be recorded.
    ``host``: the address of the game's host seat (lower case), so that a host's day is
    the sum of its games' rows. Rows of days before yesterday are deleted by the clock."""

    __tablename__ = "bot_usage"
    __table_args__ = (Index("ix_bot_usage_host", "day", "host"),)

    day: date = Field(primary_key=True)
    game_id: str = Field(primary_key=True, max_length=16)
    host: str = Field(default="", max_length=254)
    cpu_seconds: float = 0.0
    decisions: int = 0


class Notice(SQLModel, table=True):
    """A notice that is not an email, for one channel's target (a chat webhook of the
    table, a browser's push subscription...): written in the same transaction as the
    email the services queued for the same news (``pbem.channels.queue_notices``), and
    delivered by its channel from here with leases, retries and backoff as the outbox's
    emails are (``pbem.channels.delivery``). ``status`` as ``Outbox.status`` (never
    ``held``: the caps are the emails'). ``rcpt``: the address whose settings (quiet
    hours, digest, news) apply to it ("": none, e.g. a notice to a whole table).
    ``context``: the email's context, as queued."""

    __table_args__ = (Index("ix_notice_due", "status", "next_attempt_at"),
                      Index("ix_notice_target", "channel", "target_id"))

    id: int | None = Field(default=None, primary_key=True)
    channel: str = Field(max_length=16)
    target_id: int
    game_id: str | None = Field(default=None, foreign_key="game.id", index=True, max_length=16)
    seat_id: int | None = Field(default=None, foreign_key="seat.id")
    rcpt: str = Field(default="", max_length=254)
    language: str = Field(default="en", max_length=8)
    template: EmailTemplate = Field(sa_type=EnumText(EmailTemplate, 64))
    context: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    idempotency_key: str = Field(unique=True, max_length=200)
    status: OutboxStatus = Field(default=OutboxStatus.PENDING,
                                 sa_type=EnumText(OutboxStatus, 16))
    attempts: int = 0
    next_attempt_at: datetime = Field(default_factory=utcnow)
    last_error: str | None = Field(default=None, sa_type=Text)
    created_at: datetime = Field(default_factory=utcnow)
    sent_at: datetime | None = None
    failed_at: datetime | None = None


class NoticeTarget(SQLModel):
    """What a channel's target keeps of its deliveries: after ``failures`` failed ones
    in a row (``pbem.channels.delivery.STOP_AFTER``) it is stopped (``stopped_at``) and
    the page that set it says so, with the last error; a delivery that works sets
    ``failures`` back to 0."""

    created_at: datetime = Field(default_factory=utcnow)
    failures: int = 0
    last_error: str | None = Field(default=None, sa_type=Text)
    failed_at: datetime | None = None
    stopped_at: datetime | None = None
    delivered_at: datetime | None = None


class Webhook(NoticeTarget, table=True):
    """A chat webhook (Discord, Slack, Matrix, or plain JSON) the host set for a game's
    table: it is told whose turn it is with the game page's public link, never a seat's
    own link; ``mirror_talk``: the table talk too."""

    id: int | None = Field(default=None, primary_key=True)
    game_id: str = Field(foreign_key="game.id", index=True, max_length=16)
    kind: str = Field(max_length=16)
    url: str = Field(sa_type=Text)
    mirror_talk: bool = False


class PushSubscription(NoticeTarget, table=True):
    """A browser's Web Push subscription for one seat ("notify me on this device"):
    the push service's endpoint and the browser's keys for the payload's encryption."""

    __table_args__ = (UniqueConstraint("seat_id", "endpoint_hash"),)

    id: int | None = Field(default=None, primary_key=True)
    seat_id: int = Field(foreign_key="seat.id", index=True)
    endpoint: str = Field(sa_type=Text)
    endpoint_hash: str = Field(max_length=64)  # sha256 hex of endpoint (unique per seat)
    p256dh: str = Field(max_length=200)
    auth: str = Field(max_length=100)
    label: str = Field(default="", max_length=100)


class RateLimit(SQLModel, table=True):
    """Counts of a limited action (creating games) per client key and window."""

    key: str = Field(primary_key=True, max_length=120)
    window_start: datetime = Field(primary_key=True)
    count: int = 0


# ------------------------------------------------------------------ what a page shows moved

# The tables a game's pages are read from, and the columns of them that no page shows (a
# change to those alone leaves ``Game.page_version`` where it is): ``seen_event_seq``
# moves with every email delivered, ``page_seen_at`` while a page is open; neither changes
# a page.
PAGE_TABLES: tuple[type[SQLModel], ...] = (Game, Seat, Decision, EventLog)
NOT_ON_PAGES: dict[type[SQLModel], frozenset[str]] = {
    Game: frozenset({"page_version"}), Seat: frozenset({"seen_event_seq", "page_seen_at"})}
_BUMPED = "pbem.page_version_bumped"  # session.info: games bumped in this transaction
_GAME = table_of(Game)
_BUMP = (update(_GAME).where(_GAME.c.id.in_(bindparam("ids", expanding=True)))
         .values(page_version=_GAME.c.page_version + 1))


def _game_of(obj: object) -> str | None:
    """The game of a row of ``PAGE_TABLES`` (None for a row of another table)."""
    if isinstance(obj, Game):
        return obj.id
    if isinstance(obj, Seat | Decision | EventLog):
        return obj.game_id
    return None


def _shown_change(obj: SQLModel) -> bool:
    """Whether a changed row has a changed column that some page shows (a column set to
    the value it had is no change). Only the attributes set since the row was loaded are
    looked at (``committed_state`` holds their old values)."""
    state = sa_inspect(obj)
    quiet = NOT_ON_PAGES.get(type(obj), frozenset())
    return any(state.attrs[key].history.has_changes() for key in state.committed_state
               if key not in quiet)


@event.listens_for(Session, "before_flush")
def _bump_page_version(session: Session, _context: Any, _instances: Any) -> None:
    """Every transaction that changes what a game's pages show moves its
    ``page_version`` (once per transaction is enough: no reader sees the changes before
    the commit). Core statements that bypass the ORM move it themselves
    (``services.playing._UPDATE_STATE``, with ``page_version_moved``). The update comes
    before the flush's own writes, so a transaction locks the game row before its seats
    and decisions, in the order every service takes them."""
    bumped: set[str] = session.info.get(_BUMPED, set())
    games: set[str] = set()
    for obj in (*session.new, *session.deleted):
        game = _game_of(obj)
        if game is not None and game not in bumped:
            games.add(game)
    for obj in session.dirty:  # a game already moved needs no look at what changed
        game = _game_of(obj)
        if game is not None and game not in bumped and game not in games \
                and _shown_change(obj):
            games.add(game)
    if games:
        session.connection().execute(_BUMP, {"ids": sorted(games)})
        session.info[_BUMPED] = bumped | games


def page_version_moved(session: Session, game_id: str) -> None:
    """Say that this transaction moved the game's ``page_version`` itself (a Core update):
    the hook need not move it again."""
    session.info.setdefault(_BUMPED, set()).add(game_id)


@event.listens_for(Session, "after_transaction_end")
def _forget_bumped(session: Session, transaction: Any) -> None:
    """A new transaction bumps again, and so does one after a savepoint (rolled back, it
    may have undone a bump: bumping twice is harmless, missing one is not)."""
    if transaction.parent is None or transaction.nested:
        session.info.pop(_BUMPED, None)
