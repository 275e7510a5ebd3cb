"""The numeric settings, checked once as the app is made: every setting whose default is a
number (``DefaultConfig``) must be one, finite, and in its range, whether it came from a
``PBEM_*`` variable (text that is not JSON stays text) or from the caller. A server
refuses to start with a setting it cannot use, saying which and why, instead of failing
later in a worker (a bot worker restarted again and again over ``PBEM_BOT_LEASE_SECONDS=
30s``) or, worse, quietly (a lease of 0 seconds: every claim is over at once, so two
workers think about one decision)."""

from __future__ import annotations

import math
from collections.abc import MutableMapping
from typing import Any

# more than 0: a wait, a lease, a timeout or an interval of 0 is a busy loop or no lease
POSITIVE = frozenset({
    "BOT_BEAT_SECONDS", "BOT_LEASE_SECONDS", "BOT_POLL_SECONDS",
    "CLOCK_INTERVAL", "DATABASE_CONNECT_TIMEOUT", "IMAP_POLL_SECONDS",
    "INBOUND_BEAT_SECONDS", "LIVE_POLL_SECONDS", "MAIL_LEASE_SECONDS",
    "MAIL_POLL_INTERVAL", "PUSH_TIMEOUT", "SMTP_TIMEOUT", "WEBHOOK_TIMEOUT",
    "WEB_WORKERS", "MAIL_MAX_ATTEMPTS"})
# the ranges of the few that are not "0 or more"
RANGES: dict[str, tuple[float, float]] = {"BOT_NICE": (-20, 19), "IMAP_PORT": (1, 65535),
                                          "INBOUND_PORT": (1, 65535),
                                          "SMTP_PORT": (1, 65535)}


# a time may be a fraction even where its default is whole (SMTP_TIMEOUT=0.5)
DURATIONS = ("_SECONDS", "_TIMEOUT", "_MINUTES", "_DAYS", "_INTERVAL")


class SettingsError(ValueError):
    """A setting the server cannot use; the message says which, what it is and why."""


def numeric_defaults(defaults: type) -> dict[str, int | float]:
    """The settings whose default is a number (not a truth value)."""
    return {name: value for name in dir(defaults) if name.isupper()
            for value in [getattr(defaults, name)]
            if isinstance(value, int | float) and not isinstance(value, bool)}


def check_numbers(config: MutableMapping[str, Any], defaults: type) -> None:
    """Make every numeric setting of ``config`` a number of its default's kind (text
    that reads as one becomes one), or raise ``SettingsError`` naming every setting that
    is not usable."""
    problems = []
    for name, default in sorted(numeric_defaults(defaults).items()):
        value = config.get(name, default)
        try:
            config[name] = _number(name, value, whole=isinstance(default, int)
                                   and not name.endswith(DURATIONS))
        except SettingsError as exc:
            problems.append(f"PBEM_{name} is {value!r}: {exc} (the default is {default})")
    if problems:
        raise SettingsError("a setting cannot be used: " + "; ".join(problems))


def _number(name: str, value: Any, whole: bool) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SettingsError("not a number")
    try:
        number = float(value) if not isinstance(value, int) else value
    except ValueError:
        raise SettingsError("not a number") from None
    if not math.isfinite(number):
        raise SettingsError("not a finite number")
    if whole:
        if number != int(number):
            raise SettingsError("not a whole number")
        number = int(number)
    low, high = RANGES.get(name, (0, math.inf))
    if name in POSITIVE and number <= 0:
        raise SettingsError("must be more than 0")
    if not low <= number <= high:
        raise SettingsError(f"must be from {low:g} to {high:g}" if high < math.inf
                            else "must not be negative")
    return number
