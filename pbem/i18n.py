"""The player's language: which one a request speaks, and dates and numbers in it.

Catalogs live in ``pbem/translations/<lang>/LC_MESSAGES/messages.po`` (``make i18n``
extracts, updates and compiles them; the install step compiles them). A page shown to a
seat speaks the seat's language; any other page follows the visitor's choice (the switch
in the page header, kept in a cookie), else their browser's ``Accept-Language``. An
email speaks its recipient's language (``flask_babel.force_locale`` around its
rendering).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from babel.dates import format_datetime
from babel.numbers import format_decimal
from flask import Flask, g, has_request_context, request
from flask_babel import Babel, get_locale, gettext

from pbem import ROOT

LANGUAGES = {"en": "English", "de": "Deutsch"}  # code -> the language's own name
DEFAULT = "en"
COOKIE = "lang"
TRANSLATIONS = ROOT / "pbem" / "translations"
# An absolute deadline, as people write it in each language.
DATE_PATTERNS = {"en": "EEEE d MMMM y, HH:mm", "de": "EEEE, d. MMMM y, HH:mm"}


def select_locale() -> str:
    """The seat's language on its own pages; else the visitor's choice; else the
    browser's preference; else English."""
    chosen = g.get("language") if has_request_context() else None
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


def format_deadline(iso: str, tz: str) -> dict[str, str]:
    """A deadline as absolute times: the recipient's zone, in their language, and UTC
    (never 'in 2 days')."""
    when = datetime.fromisoformat(iso)
    local = when.astimezone(ZoneInfo(tz))
    lang = language()
    text = format_datetime(local, DATE_PATTERNS[lang], locale=lang)
    return {"local": f"{text} ({tz})",
            "utc": when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "iso": when.isoformat()}


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
    app.config.setdefault("BABEL_TRANSLATION_DIRECTORIES", str(TRANSLATIONS))
    Babel(app, locale_selector=select_locale)
    app.jinja_env.globals.update(format_deadline=format_deadline, languages=LANGUAGES,
                                 current_language=language)
    app.jinja_env.filters["num"] = number
    app.jinja_env.filters["sentence"] = sentence
    app.jinja_env.filters["translated"] = translated


def sentence(text: Any) -> str:
    """A message as a sentence: a capital first letter (the rest untouched) and a full
    stop, unless it already ends in one."""
    text = str(text)
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
