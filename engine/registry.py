"""The games this product plays: the one place that lists them, with what the server needs
to offer each one.

Each game is a ``Listing``: its name, the module that implements the contract of
``engine.core.Game``, its title in every language the product speaks, the bot levels it
offers, its options with their defaults, and where its templates live. The order of
registration is the order the home page and the CLI offer the games. Everything else (the
home page, the CLI's choices, the rules pages, template lookup, the tests) derives from
this list.

Nothing in ``engine/`` imports this module (the games import ``engine.core``, never the
registry), so there is no import circle. Adding a game is one ``register`` call, here for
the games this product ships, or from anywhere before the server starts (the toy game of
``tests/toygame`` registers itself from its test).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from engine.core import Game, SetupError


@dataclass(frozen=True)
class Listing:
    """One registered game.

    ``module``: the import path of the module that implements the ``Game`` contract.
    ``titles``: its name as players read it, by language (``"en"`` and ``"de"`` at least).
    ``bots``: the bot levels offered for its seats, weakest first (each a key of the
    module's ``BOTS``). ``options``: the game's own options and their defaults (passed to
    ``setup``). ``templates``: the folder of its templates (narration, boards, form,
    rules); ``None`` means ``templates/games/<name>/`` of the server. A part a game does not
    provide is taken from ``templates/games/default/``.
    """

    name: str
    module: str
    titles: Mapping[str, str]
    bots: tuple[str, ...] = ("random", "heuristic")
    options: Mapping[str, Any] = field(default_factory=dict)
    templates: Path | None = None

    @property
    def game(self) -> Game:
        """The game's module (imported on first use)."""
        return cast(Game, importlib.import_module(self.module))

    @property
    def min_players(self) -> int:
        return self.game.MIN_PLAYERS

    @property
    def max_players(self) -> int:
        return self.game.MAX_PLAYERS

    def title(self, language: str) -> str:
        """The title in ``language``, else in English."""
        return self.titles.get(language) or self.titles["en"]


_LISTINGS: dict[str, Listing] = {}


def register(listing: Listing) -> Listing:
    """Add a game (or replace the listing of the same name, keeping its place)."""
    if not listing.name.isidentifier() or listing.name != listing.name.lower():
        raise SetupError(f"a game's name is a lower-case identifier, not {listing.name!r}",
                         game=listing.name)
    if "en" not in listing.titles:
        raise SetupError(f"game {listing.name!r} has no English title", game=listing.name)
    _LISTINGS[listing.name] = listing
    return listing


def unregister(name: str) -> None:
    """Remove a game (tests that register one take it away again)."""
    _LISTINGS.pop(name, None)


def listings() -> Mapping[str, Listing]:
    """Every registered game by name, in the order offered (read-only)."""
    return MappingProxyType(_LISTINGS)


def listing(name: str) -> Listing:
    """The listing of the game ``name``; SetupError if there is none."""
    found = _LISTINGS.get(name) if isinstance(name, str) else None
    if found is None:
        raise SetupError(f"unknown game {name!r}", game=str(name))
    return found


def games() -> dict[str, Game]:
    """Every registered game module by name, in the order offered."""
    return {name: entry.game for name, entry in _LISTINGS.items()}


def get_game(name: str) -> Game:
    """The module of the game ``name``; SetupError if there is none."""
    return listing(name).game


register(Listing("cavemen", "engine.cavemen", {
    "en": "Cavemen: The Quest for Fire", "de": "Cavemen – Die Entdeckung des Feuers"}))
register(Listing("stoneage", "engine.stoneage", {"en": "Stone Age", "de": "Stone Age"}))
