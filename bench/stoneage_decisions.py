"""Stone Age decisions: how many a whole game asks of its players, and of which kinds.

Plays whole games with the heuristic bot in every seat, for 2, 3 and 4 players, and
prints the decisions per game (mean, and per player), the share of each decision kind,
and, for the use phase's ordering decision (``use`` before issue 20, ``order`` after), how
many choices it offered (the number of legal actions: places left for ``use``,
meaningful orders for ``order``). Deterministic: game ``i`` uses seed ``i``.

    .venv/bin/python bench/stoneage_decisions.py [--games 100]
        [--standing tools+feed|tools+feed+order]

Figures, 100 games each (decisions a game; the ordering decision's share):
  before issue 20 (1a), ``use``: 2 players 175.0, 24.7 %; 3 players 215.3, 26.1 %;
    4 players 272.2, 23.5 %.
  after, ``order``: 2 players 142.5, 7.4 % (10.6 a game); 3 players 158.0, 3.4 % (5.3);
    4 players 247.6, 12.5 % (31.0). It offered 2 orders in 82 % (2 players) to 94 %
    (4 players) of the cases, more than 12 in under 1 %, at most 48.

Issue 31 (the order free: asked wherever it can matter; standing choices), 40 games
each, decisions a player a round (2, 3, 4 players):
  before (47ce69a, no standing choices): 4.71, 3.93, 5.05.
  after, none set: 5.02, 4.28, 5.17.
  after, tools and feeding (--standing tools+feed): 4.61, 3.99, 4.31.
  after, tools, feeding and the order (--standing tools+feed+order): 4.00, 3.51, 3.56.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections import Counter

from engine.registry import get_game

ORDERING = ("use", "order")  # the kind that asks for the order of the use phase


STANDING = {  # --standing: each seat's standing choices (issue 31), as a player sets them
    "tools+feed": {"tools": "all", "feed": "pay"},
    "tools+feed+order": {"tools": "all", "feed": "pay", "order": "sensible"},
}


def play(players: int, seed: int, standing: str | None = None
         ) -> tuple[Counter[str], list[int], int]:
    """One game: decisions by kind, the choices each ordering decision offered, and the
    rounds played. ``standing``: a key of STANDING, set for every seat before the first
    decision."""
    game = get_game("stoneage")
    bot = game.BOTS["heuristic"]
    rng = random.Random(seed)
    state = game.setup([f"p{i}" for i in range(players)], seed)
    for seat in range(players):
        for key, value in STANDING.get(standing or "", {}).items():
            state, _ = game.set_standing(state, seat, key, value)
    kinds: Counter[str] = Counter()
    offered: list[int] = []
    while game.result(state) is None:
        decision = game.pending(state)[0]
        kinds[decision.kind] += 1
        if decision.kind in ORDERING:
            offered.append(len(game.legal_actions(state, decision.seat)))
        state, _ = game.apply(state, decision.seat, bot(state, decision.seat, rng))
    return kinds, offered, state.round


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--standing", choices=sorted(STANDING),
                        help="every seat sets these standing choices first")
    args = parser.parse_args()
    print(f"heuristic players; standing choices: {args.standing or 'none'}")
    for players in (2, 3, 4):
        per_game, kinds, offered, rounds = [], Counter[str](), [], 0
        for seed in range(args.games):
            k, o, r = play(players, seed, args.standing)
            per_game.append(sum(k.values()))
            kinds += k
            offered += o
            rounds += r
        total = sum(kinds.values())
        mean = statistics.fmean(per_game)
        print(f"{players} players, {args.games} games: {mean:.1f} decisions a game "
              f"({mean / players:.1f} a player, {total / rounds / players:.2f} a player "
              f"a round)")
        for kind, n in kinds.most_common():
            print(f"  {kind:6s} {n / args.games:6.1f} a game  {100 * n / total:5.1f} %")
        if offered:
            spread = Counter(offered)
            print(f"  choices of the ordering decision: mean {statistics.fmean(offered):.1f}, "
                  f"max {max(offered)}; "
                  + ", ".join(f"{c}: {spread[c]}" for c in sorted(spread)))


if __name__ == "__main__":
    main()
