"""Engine speed: decisions per second for apply plus legal_actions, on one core.

Records whole games played by the heuristic bot (2 to 5 players), then replays their
action sequences, timing only the engine: for each decision ``pending`` to find the seat,
``legal_actions`` for it and ``apply`` of the recorded action. Prints the median of
several repeats per player count, and the figure for all counts together, both per
CPU-second of this process (stable on a shared machine) and per wall-second.

    .venv/bin/python bench/engine_speed.py [--games 40] [--repeats 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from engine import cavemen
from engine.cavemen.bots import heuristic_bot


def record(players: int, seed: int) -> tuple[cavemen.State, list]:
    rng = random.Random(seed)
    state = start = cavemen.setup([f"p{i}" for i in range(players)], seed)
    steps = []
    while cavemen.result(state) is None:
        seat = cavemen.pending(state)[0].seat
        action = heuristic_bot(state, seat, rng)
        steps.append((seat, action))
        state, _ = cavemen.apply(state, seat, action)
    return start, steps


def replay(start: cavemen.State, steps: list) -> None:
    state = start
    pending, legal, apply = cavemen.pending, cavemen.legal_actions, cavemen.apply
    for seat, action in steps:
        pending(state)
        legal(state, seat)
        state, _ = apply(state, seat, action)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    total_decisions, total_wall, total_cpu = 0, 0.0, 0.0
    for players in (2, 3, 4, 5):
        games = [record(players, seed) for seed in range(args.games)]
        decisions = sum(len(steps) for _, steps in games)
        walls, cpus = [], []
        for _ in range(args.repeats):
            w0, c0 = time.perf_counter(), time.process_time()
            for start, steps in games:
                replay(start, steps)
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        total_decisions += decisions
        total_wall += wall
        total_cpu += cpu
        print(f"{players} players: {decisions:6d} decisions: {decisions / cpu:10,.0f} /s CPU, "
              f"{decisions / wall:10,.0f} /s wall (medians of {args.repeats})")
    print(f"all: {total_decisions / total_cpu:,.0f} decisions per CPU-second "
          f"({total_decisions / total_wall:,.0f} per wall-second; pending + legal_actions + "
          f"apply, one process)")


if __name__ == "__main__":
    main()
