"""Time zones: which names the server accepts, and the list people choose from.

Any IANA name the system knows is accepted (``Europe/Berlin``, ``UTC``, old aliases such
as ``Asia/Calcutta`` too). The list offered on forms holds each zone once, under its
current name, grouped by region and named by its city in the reader's language
("Wien", "Vienna") with its offset from UTC now.
"""

from __future__ import annotations

import functools
import unicodedata
import zoneinfo
from datetime import UTC, datetime

from babel.core import get_global
from babel.dates import get_timezone_location

# The regions of the IANA names, in the order the list shows them.
REGIONS = ("Europe", "America", "Asia", "Africa", "Australia", "Pacific", "Atlantic",
           "Indian", "Antarctica", "Arctic")


@functools.cache
def known() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones()) | {"UTC"}


def is_known(name: object) -> bool:
    """Whether ``name`` is a time zone this server can compute with (any name the time
    zone database loads, as before the list existed: stored zones stay valid)."""
    if not isinstance(name, str) or not 0 < len(name) <= 64:
        return False
    if name in known():
        return True
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


@functools.cache
def _listed() -> dict[str, set[str]]:
    """The zones offered per region: each zone once (the aliases CLDR knows left out)."""
    aliases = get_global("zone_aliases")
    out: dict[str, set[str]] = {region: set() for region in REGIONS}
    for name in known():
        region = name.split("/", 1)[0]
        if region in out and name not in aliases:
            out[region].add(name)
    return out


def is_listed(name: object) -> bool:
    """Whether ``name`` is one of the zones the list offers (UTC included)."""
    return name == "UTC" or (isinstance(name, str) and "/" in name
                             and name in _listed().get(name.split("/", 1)[0], ()))


def choices(lang: str, now: datetime | None = None) -> list[tuple[str, list[tuple[str, str]]]]:
    """``[(region, [(zone, label), ...]), ...]`` for a select, in ``lang``: labels like
    "Wien (UTC+1)", sorted by city (the offsets are those of the current hour)."""
    now = now or datetime.now(UTC)
    return _choices(lang, now.replace(minute=0, second=0, microsecond=0))


@functools.lru_cache(maxsize=8)
def _choices(lang: str, hour: datetime) -> list[tuple[str, list[tuple[str, str]]]]:
    out = []
    for region, names in _listed().items():
        labelled = [(name, f"{city(name, lang)} ({offset(name, hour)})") for name in names]
        labelled.sort(key=lambda item: _sort_key(item[1]))
        out.append((region, labelled))
    return out


def city(name: str, lang: str) -> str:
    """The zone's city in ``lang`` ("Wien"), or its last part as written ("Knox")."""
    try:
        return get_timezone_location(name, locale=lang, return_city=True)
    except (LookupError, ValueError):
        return name.rsplit("/", 1)[-1].replace("_", " ")


def offset(name: str, when: datetime) -> str:
    """The zone's offset from UTC at ``when``: "UTC+1", "UTC-3:30", "UTC"."""
    delta = when.astimezone(zoneinfo.ZoneInfo(name)).utcoffset()
    minutes = int(delta.total_seconds() // 60) if delta else 0
    if minutes == 0:
        return "UTC"
    sign = "+" if minutes > 0 else "-"
    hours, rest = divmod(abs(minutes), 60)
    return f"UTC{sign}{hours}" + (f":{rest:02d}" if rest else "")


def _sort_key(text: str) -> str:
    plain = unicodedata.normalize("NFKD", text)
    return "".join(c for c in plain if not unicodedata.combining(c)).casefold()
