"""Engine speed: decisions per second for apply plus legal_actions, on one core.

Records whole games played by the heuristic bot (every player count of the game), then
replays their action sequences, timing only the engine: for each decision ``pending`` to
find the seat, ``legal_actions`` for it and ``apply`` of the recorded action. Prints the
median of several repeats per player count, and the figure for all counts together, both
per CPU-second of this process (stable on a shared machine) and per wall-second.

    .venv/bin/python bench/engine_speed.py [--game cavemen|stoneage|all] [--games 40]
        [--repeats 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from engine.core import Game
from engine.registry import games


def record(game: Game, players: int, seed: int) -> tuple[Any, list]:
    bot = game.BOTS["heuristic"]
    rng = random.Random(seed)
    state = start = game.setup([f"p{i}" for i in range(players)], seed)
    steps = []
    while game.result(state) is None:
        seat = game.pending(state)[0].seat
        action = bot(state, seat, rng)
        steps.append((seat, action))
        state, _ = game.apply(state, seat, action)
    return start, steps


def replay(game: Game, start: Any, steps: list) -> None:
    state = start
    pending, legal, apply = game.pending, game.legal_actions, game.apply
    for seat, action in steps:
        pending(state)
        legal(state, seat)
        state, _ = apply(state, seat, action)


def measure(name: str, game: Game, count: int, repeats: int) -> None:
    total_decisions, total_wall, total_cpu = 0, 0.0, 0.0
    for players in range(game.MIN_PLAYERS, game.MAX_PLAYERS + 1):
        played = [record(game, players, seed) for seed in range(count)]
        decisions = sum(len(steps) for _, steps in played)
        walls, cpus = [], []
        for _ in range(repeats):
            w0, c0 = time.perf_counter(), time.process_time()
            for start, steps in played:
                replay(game, start, steps)
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        total_decisions += decisions
        total_wall += wall
        total_cpu += cpu
        print(f"{name} {players} players: {decisions:6d} decisions: "
              f"{decisions / cpu:10,.0f} /s CPU, {decisions / wall:10,.0f} /s wall "
              f"(medians of {repeats})")
    print(f"{name} all: {total_decisions / total_cpu:,.0f} decisions per CPU-second "
          f"({total_decisions / total_wall:,.0f} per wall-second; pending + legal_actions + "
          f"apply, one process)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--game", choices=[*sorted(games()), "all"], default="all")
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for name, game in sorted(games().items()):
        if args.game in (name, "all"):
            measure(name, game, args.games, args.repeats)


if __name__ == "__main__":
    main()
