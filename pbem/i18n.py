"""The player's language: which one a request speaks, and dates and numbers in it.

Catalogs live in ``pbem/translations/<lang>/LC_MESSAGES/messages.po`` (``make i18n``
extracts, updates and compiles them; the install step compiles them). A page shown to a
seat speaks the seat's language; any other page follows the visitor's choice (the switch
in the page header, kept in a cookie), else their browser's ``Accept-Language``. An
email speaks its recipient's language (``flask_babel.force_locale`` around its
rendering).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, cast
from zoneinfo import ZoneInfo

from babel.dates import format_datetime, format_timedelta
from babel.numbers import format_decimal
from babel.units import format_unit
from flask import Flask, g, has_request_context, request
from flask_babel import Babel, get_locale, get_translations, gettext, ngettext
from jinja2 import pass_context
from markupsafe import Markup

from pbem import PACKAGE, catalogs

LANGUAGES = {"en": "English", "de": "Deutsch"}  # code -> the language's own name
DEFAULT = "en"
COOKIE = "lang"
TRANSLATIONS = PACKAGE / "translations"
# An absolute deadline, as people write it in each language.
DATE_PATTERNS = {"en": "EEEE d MMMM y, HH:mm", "de": "EEEE, d. MMMM y, HH:mm"}


def select_locale() -> str:
    """The seat's language on its own pages; else the visitor's choice; else the
    browser's preference; else English."""
    chosen: str | None = g.get("language") if has_request_context() else None
    if chosen in LANGUAGES:
        return chosen
    if not has_request_context():
        return DEFAULT
    cookie = request.cookies.get(COOKIE)
    if cookie in LANGUAGES:
        return cookie
    return request.accept_languages.best_match(list(LANGUAGES)) or DEFAULT


def language() -> str:
    """The language being spoken now (a code of ``LANGUAGES``)."""
    code = str(get_locale() or DEFAULT)
    return code if code in LANGUAGES else DEFAULT


# Zone names that are UTC itself: a deadline in one of them is not written twice.
UTC_ZONES = frozenset({"UTC", "Etc/UTC", "Etc/UCT", "Etc/Universal", "Etc/Zulu", "UCT",
                       "Universal", "Zulu"})


def format_deadline(iso: str, tz: str) -> dict[str, str]:
    """A deadline as absolute times (never 'in 2 days'): ``local`` in the recipient's
    zone and language, ``utc``, and ``both`` (local, then UTC unless the zone is UTC)."""
    return dict(_deadline(iso, tz, language()))


@functools.lru_cache(maxsize=4096)
def _deadline(iso: str, tz: str, lang: str) -> dict[str, str]:
    """``format_deadline``, kept: every email of a game repeats the same deadlines, and
    Babel's formatting is a good part of an email's cost."""
    when = datetime.fromisoformat(iso)
    local = when.astimezone(ZoneInfo(tz))
    text = format_datetime(local, DATE_PATTERNS[lang], locale=lang)
    utc = when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return {"local": f"{text} ({tz})", "utc": utc, "iso": when.isoformat(),
            "both": f"{text} ({tz})" if tz in UTC_ZONES else f"{text} ({tz}) / {utc}"}


SHORT_PATTERNS = {"en": ("EEE HH:mm", "d MMM y, HH:mm"), "de": ("EEE HH:mm", "d. MMM y, HH:mm")}


def short_time(when: datetime | str | None, tz: str, now: datetime | None = None) -> str:
    """A time for a list in the reader's zone and language: the weekday within a few days
    of now ("Tue 14:02"), else the date ("3 Mar 2030, 14:02")."""
    return short_times((when,), tz, now)[0]


def short_times(whens: Iterable[datetime | str | None], tz: str,
                now: datetime | None = None) -> list[str]:
    """``short_time`` of each of ``whens`` (a game page's dozens of round headings and
    log days), with the language and the clock read once."""
    lang = language()
    near, far = SHORT_PATTERNS.get(lang, SHORT_PATTERNS[DEFAULT])
    track = now is None  # the words follow the clock: note when they will change
    current = datetime.now(UTC) if now is None else now
    out: list[str] = []
    change: datetime | None = None
    for when in whens:
        if when is None:
            out.append("")
            continue
        when = datetime.fromisoformat(when) if isinstance(when, str) else when
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        if track:
            for t in (when - NEAR, when + NEAR):
                if t > current and (change is None or t < change):
                    change = t
        out.append(_short_time(when, tz, near if abs(when - current) < NEAR else far, lang))
    if track:
        _changes_at(change)
    return out


@functools.lru_cache(maxsize=8192)
def _short_time(when: datetime, tz: str, pattern: str, lang: str) -> str:
    """``short_time``, kept (as ``_deadline``): a game page writes the start of every round
    of its log, the same times at every view."""
    return format_datetime(when.astimezone(ZoneInfo(tz)), pattern, locale=lang)


NEAR = timedelta(days=5)  # ``short_time`` gives the weekday of a time nearer than this


def _changes_at(when: datetime | None) -> None:
    """Note that what this request writes will read otherwise from ``when`` on (a time
    written with its weekday that will need its date), for ``changes_at``."""
    if when is not None and has_request_context():
        first = g.get("changes_at")
        g.changes_at = when if first is None else min(first, when)


def changes_at() -> datetime | None:
    """When the words of this request's page change with the clock alone: the first
    time ``short_time`` wrote differently from then on, or at once for words of
    ``time_until`` ("in 5 hours"); None: never."""
    return g.get("changes_at") if has_request_context() else None


def time_until(when: datetime | str, now: datetime | None = None) -> str:
    """How far ahead ``when`` is, in words ("in 5 hours"); an empty string once it has
    passed (the caller says "overdue" in its own words)."""
    when = datetime.fromisoformat(when) if isinstance(when, str) else when
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if now is None:
        now = datetime.now(UTC)
        _changes_at(now)  # words that move with the clock: the page holds for no time
    delta = when - now
    if delta.total_seconds() <= 0:
        return ""
    return format_timedelta(delta, add_direction=True, locale=language())


def clock_text(seconds: float) -> str:
    """The time on a player's clock in words, rounded down: days and hours from a day on
    ("2 days 4 hours"), hours and minutes from an hour on, else minutes ("0 minutes").
    The units are CLDR's, as a browser's ``Intl.NumberFormat`` writes them
    (static/clock.js writes the same words as the clock runs)."""
    minutes = int(max(0.0, seconds) // 60)
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    parts = ((days, "day"), (hours, "hour")) if days else (
        ((hours, "hour"), (mins, "minute")) if hours else ((mins, "minute"),))
    lang = language()
    return " ".join(_unit(value, unit, lang) for i, (value, unit) in enumerate(parts)
                    if value or i == 0)


@functools.lru_cache(maxsize=1024)
def _unit(value: int, unit: str, lang: str) -> str:
    """``value`` days, hours or minutes in words, kept (Babel's unit formatting is slow,
    and a page writes a few clocks at every view)."""
    return format_unit(value, f"duration-{unit}", length="long", locale=lang)


def time_left(when: datetime | str, now: datetime | None = None) -> str:
    """How long until ``when``, in words, for a reminder ("45 minutes", "2 hours", "1 day
    3 hours"); an empty string once it has passed. The time that really passes (a change
    of daylight saving time in between makes a day 23 or 25 hours), rounded to the
    nearest unit that keeps the words short: minutes under an hour, five minutes under
    three hours, hours under a day, days and hours under a week, then days."""
    when = datetime.fromisoformat(when) if isinstance(when, str) else when
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds <= 0:
        return ""
    minutes = max(1, round(seconds / 60))
    if minutes < 60:
        return _minutes(minutes)
    if minutes < 175:  # under three hours once rounded to five minutes
        hours, rest = divmod(5 * round(minutes / 5), 60)
        return _joined(_hours(hours), _minutes(rest)) if rest else _hours(hours)
    hours = round(seconds / 3600)
    if hours < 24:
        return _hours(hours)
    if hours < 7 * 24:
        days, rest = divmod(hours, 24)
        return _joined(_days(days), _hours(rest)) if rest else _days(days)
    return _days(round(seconds / 86400))


def _minutes(n: int) -> str:
    return cast(str, ngettext("%(num)s minute", "%(num)s minutes", n))


def _hours(n: int) -> str:
    return cast(str, ngettext("%(num)s hour", "%(num)s hours", n))


def _days(n: int) -> str:
    return cast(str, ngettext("%(num)s day", "%(num)s days", n))


def _joined(big: str, small: str) -> str:
    # TRANSLATORS: a time in two units, as "1 day 3 hours" or "1 hour 25 minutes"
    return cast(str, gettext("%(big)s %(small)s", big=big, small=small))


def mark(text: str) -> str:
    """Mark a string for the catalogs that is translated where it is shown, not where it
    is made (a reason stored with an email, shown on the host page)."""
    return text


def translated(text: Any) -> str:
    """The stored ``text`` in the current language when the catalog has it (else as it
    is: a mail server's error message, say)."""
    return gettext(str(text)) if text else ""


def number(value: Any) -> str:
    """A number as the language writes it, without a needless ``.0`` (48, 1.5, 1,5)."""
    try:
        return format_decimal(value, format="#,##0.##", locale=language())
    except (TypeError, ValueError, ArithmeticError):
        return str(value)


def init_app(app: Flask) -> None:
    load_catalogs()
    app.config.setdefault("BABEL_TRANSLATION_DIRECTORIES", str(TRANSLATIONS))
    Babel(app, locale_selector=select_locale)
    app.jinja_env.globals.update(format_deadline=format_deadline, languages=LANGUAGES,
                                 current_language=language, short_time=short_time,
                                 short_times=short_times,
                                 time_until=time_until, clock_text=clock_text)
    app.jinja_env.filters["num"] = number
    app.jinja_env.filters["sentence"] = sentence
    app.jinja_env.filters["translated"] = translated
    app.context_processor(template_gettext)


def load_catalogs() -> None:
    """Compile a catalog that is missing or older than its ``.po`` (a checkout where
    ``make`` has not run), and refuse to start without one: Flask-Babel would speak
    English where the player chose another language."""
    catalogs.compile_stale(TRANSLATIONS)
    missing = catalogs.missing(TRANSLATIONS, [code for code in LANGUAGES if code != DEFAULT])
    if missing:
        raise RuntimeError(f"no compiled catalog for {', '.join(missing)} in {TRANSLATIONS} "
                           "(reinstall pbem, or run make translations in a checkout)")


def template_gettext() -> dict[str, Any]:
    """``gettext``, ``ngettext`` and ``_`` for one page or email, bound to the
    catalog of the language it speaks. Flask-Babel's own look the language up through
    the request context on every call, a good part of rendering an email (a context
    processor: every ``render_template`` gets them; the same strings, escaping and
    ``%`` formatting as Jinja's "newstyle" gettext)."""
    translations = get_translations()
    bound = _BOUND.get(translations)
    if bound is None:
        bound = _BOUND[translations] = _bind(translations)
    return bound


_BOUND: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def _bind(translations: Any) -> dict[str, Any]:
    find, find_plural = translations.ugettext, translations.ungettext

    @pass_context
    def gettext_(context: Any, string: str, **variables: Any) -> str:
        text = find(string)
        return (Markup(text) if context.eval_ctx.autoescape else text) % variables

    @pass_context
    def ngettext_(context: Any, singular: str, plural: str, num: int,
                  **variables: Any) -> str:
        variables.setdefault("num", num)
        text = find_plural(singular, plural, num)
        return (Markup(text) if context.eval_ctx.autoescape else text) % variables

    # ``_`` itself: the i18n extension's ``_`` looks ``gettext`` up and calls it through
    # the context again, on every string
    return {"gettext": gettext_, "ngettext": ngettext_, "_": gettext_}


def sentence(text: object) -> str:
    """A message as a sentence: a capital first letter (the rest untouched) and a full
    stop, unless it already ends in one."""
    text = str(text)
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
