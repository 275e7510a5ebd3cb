"""Command line: ``python -m engine simulate stoneage --players 4 --games 100 --bot heuristic``
(any registered game: cavemen, stoneage)."""

from __future__ import annotations

import argparse
import sys

from engine.core import EngineError
from engine.registry import games
from engine.sim import report, simulate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine")
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="bots play many games; prints speed and balance")
    sim.add_argument("game", choices=sorted(games()))
    sim.add_argument("--players", type=int, default=4)
    sim.add_argument("--games", type=int, default=100)
    sim.add_argument("--bot", choices=["random", "heuristic"], default="heuristic")
    sim.add_argument("--against", choices=["random", "heuristic"], default=None,
                     help="one seat plays --bot, the others this bot (the seat rotates)")
    sim.add_argument("--seed", type=int, default=1)
    sim.add_argument("--round-cap", type=int, default=200)
    args = parser.parse_args(argv)
    if args.games < 1:
        parser.error("--games must be at least 1")
    if args.round_cap < 1:
        parser.error("--round-cap must be at least 1")
    try:
        records, elapsed = simulate(args.game, args.players, args.games, args.bot, args.seed,
                                    args.round_cap, args.against)
    except EngineError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    print(report(args.game, args.players, args.bot, records, elapsed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
