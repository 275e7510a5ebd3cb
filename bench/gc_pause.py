"""GC pause: what one full garbage collection costs in a long-running pbem process
(the clock, a bot worker), before and after ``gc.freeze()``, which ``pbem clock`` and
``pbem bots`` (each worker) call once started, and gunicorn's workers once booted.

It builds the app as those processes do, plays one strong bot's decision of each game
and renders nothing else (what a worker holds), then times ``gc.collect()`` (CPU, median
of ``--repeats``) with every object tracked, and again after ``gc.collect(); gc.freeze()``;
and counts the full collections a strong Stone Age decision of ``--bot-ms`` runs, and
the time they take, before and after.

    .venv/bin/python bench/gc_pause.py [--repeats 9] [--bot-ms 1000]
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.registry import get_game  # noqa: E402
from pbem import create_app  # noqa: E402


def full_collection(repeats: int) -> float:
    """The median CPU seconds of a full collection."""
    took = []
    for _ in range(repeats):
        started = time.thread_time()
        gc.collect()
        took.append(time.thread_time() - started)
    return statistics.median(took)


def search_collections(bot_ms: float) -> tuple[int, float]:
    """The full collections one strong Stone Age decision of ``bot_ms`` runs, and their
    wall time in all (gc.callbacks)."""
    mod = get_game("stoneage")
    state = mod.setup(["A", "B", "C", "D"], 3)
    seat = mod.pending(state)[0].seat
    began: list[float] = []
    spent = [0, 0.0]

    def callback(phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            began.append(time.perf_counter())
        elif began:
            spent[0] += 1
            spent[1] += time.perf_counter() - began.pop()

    gc.callbacks.append(callback)
    try:
        mod.make_strong(budget_ms=bot_ms)(state, seat, random.Random(4))
    finally:
        gc.callbacks.remove(callback)
    return int(spent[0]), float(spent[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--bot-ms", type=float, default=1000)
    args = parser.parse_args()
    create_app({"DATABASE_URL": "sqlite://", "SECRET_KEY": "bench-gc-" + "s" * 40,
                "MAIL_BACKEND": "memory", "MAIL_FROM": "pbem <games@bench.invalid>"})
    for name in ("cavemen", "stoneage"):  # a worker's searches, once
        mod = get_game(name)
        state = mod.setup(["A", "B", "C", "D"], 1)
        seat = mod.pending(state)[0].seat
        mod.make_strong(budget_ms=50)(state, seat, random.Random(2))
    tracked = len(gc.get_objects())
    before = full_collection(args.repeats)
    searched_before = search_collections(args.bot_ms)
    gc.collect()
    gc.freeze()
    after = full_collection(args.repeats)
    searched_after = search_collections(args.bot_ms)
    print(f"objects tracked by the collector: {tracked}; frozen: {gc.get_freeze_count()}")
    print(f"one full collection, CPU (median of {args.repeats}): "
          f"{before * 1000:.1f} ms before gc.freeze(), {after * 1000:.2f} ms after")
    for what, (count, took) in (("before", searched_before), ("after", searched_after)):
        print(f"a strong Stone Age decision of {args.bot_ms:g} ms, {what}: {count} full "
              f"collection(s), {took * 1000:.1f} ms in them")


if __name__ == "__main__":
    main()
