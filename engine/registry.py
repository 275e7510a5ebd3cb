"""The games this product plays, by name: the one place that lists them.

Nothing in ``engine/`` imports this module (the games import ``engine.core``, never the
registry), so there is no import circle; the server, the simulator and the tests ask it
for a game by name. Adding a game is one line here (see README, "Adding a game").
"""

from __future__ import annotations

import importlib

from engine.core import Game, SetupError

GAMES = {
    "cavemen": "engine.cavemen",
    "stoneage": "engine.stoneage",
}


def games() -> dict[str, Game]:
    """Every registered game module by name."""
    return {name: importlib.import_module(module) for name, module in GAMES.items()}


def get_game(name: str) -> Game:
    module = GAMES.get(name) if isinstance(name, str) else None
    if module is None:
        raise SetupError(f"unknown game {name!r}", game=name)
    return importlib.import_module(module)
