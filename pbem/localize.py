"""Game data in the reader's language: card names, card texts and other printed names.

The engine keeps its views in the language of its data file; a game that ships
translations (``mod.translation(state, lang)``) gets its card lookups, and its views if it
says how (``mod.translated_view``), rewritten here for the language being spoken. A game
without them, or a language without a file, shows the data file's own words. Nothing
here knows a game.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from engine.core import Game as EngineGame
from pbem.i18n import LANGUAGES

CardLookup = Callable[[str], dict[str, Any]]


def translation_for(mod: EngineGame, state: Any, lang: str) -> Any:
    find = getattr(mod, "translation", None)
    if find is None or state is None or lang not in LANGUAGES:
        return None
    return find(state, lang)


def card(info: dict[str, Any], tr: Any) -> dict[str, Any]:
    """A card's view with its name, text and tribe in the translation's language."""
    if tr is None or "id" not in info:
        return info
    out = dict(info, name=tr.card_name(info["id"]))
    if info.get("text"):
        out["text"] = tr.card_text(info["id"])
    if info.get("tribe"):
        out["tribe"] = tr.tribe_name(info["tribe"])
    return out


def view(mod: EngineGame, data: dict[str, Any] | None, tr: Any) -> dict[str, Any] | None:
    """A game view with its printed names in the translation's language (a new dict), by
    the game's own ``translated_view(view, card, tr)`` if it has one; else the view as it is
    (its templates then look names up through ``lookup``)."""
    rewrite = getattr(mod, "translated_view", None)
    if data is None or tr is None or rewrite is None:
        return data
    return cast(dict[str, Any], rewrite(data, lambda info: card(info, tr), tr))


def lookup(mod: EngineGame, state: Any, tr: Any) -> CardLookup:
    """A function from card id to its (translated) printed data, for narration."""
    if state is None or not hasattr(mod, "card_info"):
        return lambda cid: {"id": cid, "name": cid}
    seen: dict[Any, dict[str, Any]] = {}  # one page or email names the same cards often

    def find(cid: Any) -> dict[str, Any]:
        try:
            return seen[cid]
        except KeyError:
            seen[cid] = found = card(mod.card_info(state, cid), tr)
            return found
        except TypeError:  # not a card id a dict can hold (a template's mistake)
            return card(mod.card_info(state, cid), tr)

    return find
