"""Golden playthroughs: whole seeded games by the heuristic bot, every decision and event
written out and diffed against a committed transcript. A rules change that alters play
shows up here as a readable diff.

Regenerate deliberately with ``UPDATE_GOLDEN=1 .venv/bin/pytest tests/engine/test_golden.py``.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from engine.core import format_action
from engine.registry import get_game

GOLDEN = Path(__file__).with_name("golden")
CASES = [("cavemen", 2, 11), ("cavemen", 3, 7), ("cavemen", 5, 3), ("stoneage", 2, 11),
         ("stoneage", 3, 7), ("stoneage", 4, 3)]


def transcript(name: str, players: int, seed: int) -> list[str]:
    game = get_game(name)
    heuristic_bot = game.BOTS["heuristic"]
    state, events = game.setup_with_events([f"P{i + 1}" for i in range(players)], seed)
    lines = [f"setup players={players} seed={seed}"]
    lines += [_event(e) for e in events]
    rng = random.Random(seed)
    while game.result(state) is None:
        decision = game.pending(state)[0]
        action = heuristic_bot(state, decision.seat, rng)
        lines.append(f"> seat {decision.seat} {decision.kind}: {format_action(action)}")
        state, events = game.apply(state, decision.seat, action)
        lines += [_event(e) for e in events]
    lines.append(f"result {json.dumps(game.result(state).to_json(), sort_keys=True)}")
    return lines


def _event(e) -> str:
    seen = "" if e.visible_to is None else f" to={list(e.visible_to)}"
    return f"  {e.kind} actor={e.actor}{seen} {json.dumps(dict(e.data), sort_keys=True)}"


@pytest.mark.parametrize(("name", "players", "seed"), CASES)
def test_playthrough_matches_golden_transcript(name: str, players: int, seed: int) -> None:
    path = GOLDEN / f"{name}_{players}p_seed{seed}.txt"
    lines = transcript(name, players, seed)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text("\n".join(lines) + "\n")
    assert path.exists(), f"no golden transcript {path.name}; run with UPDATE_GOLDEN=1"
    expected = path.read_text().splitlines()
    assert lines == expected
