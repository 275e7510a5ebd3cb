"""A game's policy: how the server runs it, as one typed value.

The host sets it when creating a game (the home page's form, the CLI); it is stored as
JSON in ``Game.policy`` (``PolicyColumn`` turns the column into a ``GamePolicy`` and back)
and shown on the host page. Everything that decides *how* a game is run rather than
*what* is played belongs here: deadlines, reminders, what happens to an absent player,
vacation. A new setting is one field with a default (old games read it as the default),
one check in ``parse``, and its line on the host page.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from flask_babel import gettext
from sqlalchemy import JSON
from sqlalchemy.types import TypeDecorator

from engine.search import DEFAULT_BUDGET_MS
from pbem.clocks import Stops
from pbem.errors import InvalidInput, Problems
from pbem.forms import parse_int
from pbem.kinds import SeatBot, TimeControl

MAX_HOURS = 24 * 30  # a turn lasts at most 30 days
MIN_HOURS = 0.0005  # and at least a few seconds (tests and demos)
MAX_REMINDERS = 10
MAX_VACATION_DAYS = 60.0
MAX_BANK_DAYS = 60.0  # a time bank's reserve and its cap hold at most 60 days


# Who plays the seat of a player who missed ``absent_after`` deadlines in a row.
AbsentBot = SeatBot


def default_reminders(hours: float) -> tuple[float, ...]:
    """Half time and 2 hours before the deadline, where those fall inside the window."""
    return tuple(sorted({h for h in (hours / 2, 2.0) if 0 < h < hours}, reverse=True))


@dataclass(frozen=True)
class GamePolicy:
    """How the server runs one game.

    ``hours_per_decision``: the time a player has for each decision. ``reminder_hours``:
    a reminder this many hours before each deadline, latest first. ``absent_after``: after
    this many timeouts in a row a bot (``absent_bot``) plays the seat until the player
    comes back. ``vacation_days``: the vacation each seat may take per game.
    ``pause_quiet`` and ``pause_weekends``: a player's clock stands still during their
    quiet hours (their address's settings) and at weekends, in their zone
    (``pbem.clocks``). ``take_backs``: a player may take back their last move while no
    other person has acted and nothing hidden was shown (``services.takeback``).

    ``time_control``: ``fixed``, the same ``hours_per_decision`` for every decision; or
    ``bank``, a time bank per player, as correspondence chess has: each starts with
    ``bank_days`` on their clock, which runs while a decision of theirs is open; after
    each of their moves ``increment_hours`` are added, up to ``cap_days`` (the bank's
    rules: ``services.playing.settle_clock``). The bank fields are kept (as entered,
    or their defaults) but unused in a game of fixed hours.

    ``bot_ms``: the CPU milliseconds a ``strong`` bot seated at the game may think per
    decision (the game's search bot, ``engine.core.Searches``). The default is the
    engine's (``engine.search.DEFAULT_BUDGET_MS``), the budget bench/arena.py measured.
    """

    hours_per_decision: float = 48.0
    reminder_hours: tuple[float, ...] = (24.0, 2.0)
    absent_after: int = 2
    absent_bot: AbsentBot = AbsentBot.HEURISTIC
    vacation_days: float = 7.0
    pause_quiet: bool = False
    pause_weekends: bool = False
    take_backs: bool = True
    time_control: TimeControl = TimeControl.FIXED
    bank_days: float = 3.0
    increment_hours: float = 24.0
    cap_days: float = 7.0
    bot_ms: float = DEFAULT_BUDGET_MS

    def vacation_left(self, used_hours: float) -> int:
        """The whole days of vacation a seat that took ``used_hours`` may still take
        (a vacation is whole days; a fraction left of the allowance is none)."""
        return max(0, math.floor(self.vacation_days - used_hours / 24 + 1e-9))

    @property
    def banked(self) -> bool:
        """Whether each player has a time bank (else fixed hours per decision)."""
        return self.time_control == TimeControl.BANK

    def running(self, stops: Stops) -> Stops:
        """The stops of a player's clock (``stops``: their quiet hours and zone) as far
        as this policy stops it: in quiet hours if ``pause_quiet``, at weekends if
        ``pause_weekends``."""
        return Stops(stops.zone, stops.quiet if self.pause_quiet else None,
                     self.pause_weekends)

    @property
    def stops_clocks(self) -> bool:
        """Whether a clock ever stands still in this game (else no player's quiet hours
        or zone matter to it)."""
        return self.pause_quiet or self.pause_weekends

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> GamePolicy:
        """A policy from what a host entered (text or numbers; a missing setting takes its
        default; no ``reminder_hours`` means half time and 2 hours before). Every problem
        is refused at once: FormInvalid names each setting's field on the home page
        (``hours``, ``reminders``, ``absent_after``, ``absent_bot``, ``vacation_days``,
        ``time_control``, ``bank_days``, ``increment_hours``, ``cap_days``, ``bot_ms``). The bank's
        fields are checked only for a time bank; in a game of fixed hours they keep their
        defaults."""
        problems = Problems()
        policy = cls.parse_into(raw, problems)
        problems.raise_any()
        assert policy is not None
        return policy

    @classmethod
    def parse_into(cls, raw: Mapping[str, Any], problems: Problems) -> GamePolicy | None:
        """Like ``parse``, noting problems in ``problems`` (None if there were any)."""
        base = cls()
        hours = problems.check("hours", _hours, raw.get("hours_per_decision",
                                                        base.hours_per_decision))
        control = problems.check("time_control", _time_control, raw.get("time_control"))
        bank: dict[str, Any] = {"bank_days": base.bank_days,
                                "increment_hours": base.increment_hours,
                                "cap_days": base.cap_days}
        if control == TimeControl.BANK:
            bank = _bank(raw, problems, base)
        # a reminder falls within a turn: with a bank, within the most a clock holds
        window, first = hours, hours
        if control == TimeControl.BANK:
            window, first = _in_hours(bank["cap_days"]), _in_hours(bank["bank_days"])
        values = {
            "hours_per_decision": hours,
            "reminder_hours": problems.check("reminders", _reminders,
                                             raw.get("reminder_hours"), window, first),
            "absent_after": problems.check("absent_after", _absent_after,
                                           raw.get("absent_after", base.absent_after)),
            "absent_bot": problems.check("absent_bot", _absent_bot,
                                         raw.get("absent_bot", base.absent_bot)),
            "vacation_days": problems.check("vacation_days", _vacation_days,
                                            raw.get("vacation_days", base.vacation_days)),
            "pause_quiet": problems.check("pause_quiet", _switch, raw.get("pause_quiet")),
            "pause_weekends": problems.check("pause_weekends", _switch,
                                             raw.get("pause_weekends")),
            "take_backs": problems.check("take_backs", _switch,
                                         raw.get("take_backs", base.take_backs)),
            "bot_ms": problems.check("bot_ms", _bot_ms, raw.get("bot_ms", base.bot_ms)),
            "time_control": control, **bank,
        }
        if any(v is None for v in values.values()):
            return None
        return cls(**values)

    def with_hours(self, hours: float) -> GamePolicy:
        """The same policy with another time per decision (and its default reminders)."""
        return replace(self, hours_per_decision=hours, reminder_hours=default_reminders(hours))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["reminder_hours"] = list(self.reminder_hours)
        data["absent_bot"] = str(self.absent_bot)
        data["time_control"] = str(self.time_control)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> GamePolicy:
        """The stored policy (settings it lacks take their defaults; unknown keys, from a
        newer version, are ignored). Raises ValueError for a value that cannot be one."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in (data or {}).items() if k in known}
        if "reminder_hours" in values:
            values["reminder_hours"] = tuple(float(h) for h in values["reminder_hours"])
        if "absent_bot" in values:
            values["absent_bot"] = AbsentBot(values["absent_bot"])
        if "time_control" in values:
            values["time_control"] = TimeControl(values["time_control"])
        for name, kind in (("hours_per_decision", float), ("absent_after", int),
                           ("vacation_days", float), ("pause_quiet", bool),
                           ("pause_weekends", bool), ("bank_days", float),
                           ("increment_hours", float), ("cap_days", float),
                           ("bot_ms", float), ("take_backs", bool)):
            if name in values:
                values[name] = kind(values[name])
        return cls(**values)


class PolicyColumn(TypeDecorator[GamePolicy]):
    """A JSON column holding a ``GamePolicy``."""

    impl = JSON
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, GamePolicy):
            return value.to_json()
        return GamePolicy.from_json(value).to_json()

    def process_result_value(self, value: Any, dialect: Any) -> GamePolicy | None:
        return None if value is None else GamePolicy.from_json(value)


# --------------------------------------------------------------------------- checks


def _hours(value: Any) -> float:
    try:
        hours = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(gettext("hours per decision must be a number")) from None
    if not MIN_HOURS <= hours <= MAX_HOURS:
        raise InvalidInput(gettext("hours per decision must be between a few seconds and 30 days"))
    return hours


def _reminders(reminders: Any, hours: float | None,
               first: float | None = None) -> tuple[float, ...] | None:
    """The reminder offsets, latest first, each within ``hours`` (the longest a turn
    lasts); by default half of ``first`` (a first turn's time, else ``hours``) and 2 hours
    before (None: the hours are wrong, so is the default)."""
    if reminders is None:
        first = hours if first is None else first
        return default_reminders(first) if hours is not None and first is not None else None
    if isinstance(reminders, str):
        reminders = [r for r in reminders.replace(";", ",").split(",") if r.strip()]
    try:
        offsets = tuple(sorted({float(r) for r in reminders}, reverse=True))
    except (TypeError, ValueError):
        raise InvalidInput(gettext("reminders must be hours before the deadline, like 24, 2"))\
            from None
    if len(offsets) > MAX_REMINDERS or any(not 0 < r < (hours or float("inf"))
                                           for r in offsets):
        raise InvalidInput(gettext("each reminder must fall between the start of a turn "
                                   "and its deadline (at most 10)"))
    return offsets


def _time_control(value: Any) -> TimeControl:
    """Fixed hours per decision (absent or empty: the default) or a time bank."""
    if value is None or value == "":
        return TimeControl.FIXED
    try:
        return TimeControl(str(value).strip().lower())
    except ValueError:
        raise InvalidInput(gettext("the time control is fixed hours per decision or a time "
                                   "bank")) from None


def _bank(raw: Mapping[str, Any], problems: Problems, base: GamePolicy) -> dict[str, Any]:
    """A time bank's reserve, increment and cap as entered, each checked (None where
    refused); the cap holds at least the reserve."""
    reserve = problems.check("bank_days", _amount, raw.get("bank_days", base.bank_days),
                             MIN_HOURS / 24, MAX_BANK_DAYS,
                             gettext("the time bank is more than 0 and at most 60 days"))
    increment = problems.check(
        "increment_hours", _amount, raw.get("increment_hours", base.increment_hours),
        MIN_HOURS, MAX_HOURS,
        gettext("the time added after each move is more than 0 hours and at most 30 days"))
    cap = problems.check("cap_days", _amount, raw.get("cap_days", base.cap_days),
                         MIN_HOURS / 24, MAX_BANK_DAYS,
                         gettext("the most a clock holds is more than 0 and at most 60 days"))
    if reserve is not None and cap is not None and cap < reserve:
        problems.add("cap_days", gettext("the most a clock holds cannot be less than the "
                                         "time bank it starts with"))
        cap = None
    return {"bank_days": reserve, "increment_hours": increment, "cap_days": cap}


def _in_hours(days: float | None) -> float | None:
    return None if days is None else days * 24


def _amount(value: Any, low: float, high: float, refusal: str) -> float:
    """A number between ``low`` and ``high`` (text as a person writes it: a decimal comma
    is read as a point), else InvalidInput(``refusal``); never NaN or infinite."""
    if isinstance(value, str):
        value = value.strip().replace(",", ".")
    try:
        amount = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(refusal) from None
    if not low <= amount <= high:  # NaN compares false: refused too
        raise InvalidInput(refusal)
    return amount


def _absent_after(value: Any) -> int:
    return parse_int(value, 1, 100,
                     gettext("a bot takes over after 1 to 100 missed deadlines in a row"))


ABSENT_BOTS = (AbsentBot.HEURISTIC, AbsentBot.DEFAULT)  # the stand-ins a host may choose


def _absent_bot(value: Any) -> AbsentBot:
    try:
        if AbsentBot(value) not in ABSENT_BOTS:  # the levels of seated bots are not
            raise ValueError(value)
        return AbsentBot(value)
    except ValueError:
        raise InvalidInput(gettext("the stand-in for an absent player is 'heuristic' or "
                                   "'default'")) from None


def _switch(value: Any) -> bool:
    """A checkbox or a command-line switch: absent, empty or off is False."""
    if value is None or value is False or value == "":
        return False
    if value is True or str(value).strip().lower() in ("on", "1", "true", "yes"):
        return True
    if str(value).strip().lower() in ("off", "0", "false", "no"):
        return False
    raise InvalidInput(gettext("a switch is on or off"))


MIN_BOT_MS, MAX_BOT_MS = 10.0, 5000.0


def _bot_ms(value: Any) -> float:
    """A strong bot's thinking time in milliseconds, 10 to 5000 (the home form's text as
    ``_amount`` reads it); absent or empty: the engine's default."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return DEFAULT_BUDGET_MS
    return _amount(value, MIN_BOT_MS, MAX_BOT_MS,
                   gettext("a strong bot thinks 10 to 5000 milliseconds a decision"))


def _vacation_days(value: Any) -> float:
    try:
        vacation = float(value)
    except (TypeError, ValueError):
        vacation = -1.0
    if not 0 <= vacation <= MAX_VACATION_DAYS:
        raise InvalidInput(gettext("vacation is 0 to 60 days per player"))
    return vacation
