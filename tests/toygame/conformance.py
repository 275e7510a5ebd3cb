"""Pebbles offers the contract of ``engine.core.Game``: checked by mypy (``make
typecheck`` runs ``mypy --strict`` on this folder), as ``engine/conformance.py`` checks the
games the server ships. Nothing imports this module."""

from __future__ import annotations

from engine.core import Game, Stats
from tests import toygame

PEBBLES: Game[toygame.State] = toygame
_pebbles_stats: Stats[toygame.State] = toygame.stats
