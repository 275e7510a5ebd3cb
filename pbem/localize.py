"""Game data in the reader's language: card names, card texts and tribe names.

The engine keeps its views in the language of the deck file; a game that ships
translations (``mod.translation(state, lang)``) gets its views and card lookups rewritten
here for the language being spoken. A game without them, or a language without a file,
shows the deck's own words.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def view(data: dict[str, Any] | None, tr: Any) -> dict[str, Any] | None:
    """A game view with every card and tribe name translated (a new dict)."""
    if data is None or tr is None:
        return data
    out = dict(data)
    if "pool" in out:
        out["pool"] = [card(c, tr) for c in out["pool"]]
    if "tribes" in out:
        out["tribes"] = [dict(t, tribe=tr.tribe_name(t["tribe"]),
                              cards=[card(c, tr) for c in t.get("cards", [])])
                         for t in out["tribes"]]
    return out


def lookup(mod: EngineGame, state: Any, tr: Any) -> CardLookup:
    """A function from card id to its (translated) printed data, for narration."""
    if state is None or not hasattr(mod, "card_info"):
        return lambda cid: {"id": cid, "name": cid}
    return lambda cid: card(mod.card_info(state, cid), tr)
