"""The ``strong`` Cavemen bot: Monte Carlo rollouts (``engine.search``) played by the
heuristic, on worlds that draw anew only what the seat cannot know.

Everything in Cavemen is open but the order of the draw pile (Fire may be in it): each
world shuffles the draw pile and replaces the state's random source (the reshuffles and
Fire's return still to come). The discard pile, the pool, every tableau and all Food and
Teeth are public.

The budget: ``make_strong(budget_ms=...)`` (CPU ms per decision, default
``engine.search.DEFAULT_BUDGET_MS``) or ``make_strong(rollouts=N)`` (exactly N rollouts,
reproducible). The game's options (``deck``, ``tribes``) are the game's, not the bot's;
the server passes a budget by building the bot with ``make_strong``.
"""

from __future__ import annotations

import random

from engine.cavemen.rules import PASS, State, apply, auction_of, legal_actions, pending, scores
from engine.core import Action, Bot, Rng
from engine.search import Budget, GameHooks, SearchBot, contract_hooks

MAX_ACT_CANDIDATES = 10
MAX_DISCARD_CANDIDATES = 6
PROGRESS_WEIGHT = 0.1  # a lost rollout's Inventing progress toward Fire, as a win's share


def determinise(state: State, seat: int, rng: random.Random) -> State:
    """``state`` with the draw pile shuffled and a fresh random source."""
    draw = sorted(state.draw)  # nothing of the true order may reach the shuffle
    rng.shuffle(draw)
    return state._replace(draw=tuple(draw), rng=Rng(rng.getrandbits(62)))


def candidates(state: State, seat: int, legal: list[Action], rng: random.Random,
               policy: Bot[State]) -> list[Action]:
    """The policy's choice first; bids: pass, the lowest bid, every Tooth; actions: the
    best by the heuristic's values; losses: all; discards: the heuristic's best few."""
    from engine.cavemen.bots import action_value, pool_worth

    first = policy(state, seat, random.Random(rng.getrandbits(32)))
    kind = next(d.kind for d in pending(state) if d.seat == seat)
    out = [first]
    if kind == "bid":
        bids = [a for a in legal if a.kind == "bid"]
        a = auction_of(state)
        out += [PASS, *bids[:1], *bids[-1:]]
        out += [b for b in bids if b.get("amount") == a.high + 2]
    elif kind == "act":
        out += sorted(legal, key=lambda x: -action_value(state, seat, x))
        out = list(dict.fromkeys(out))[:MAX_ACT_CANDIDATES]
    elif kind == "discard":
        worth = pool_worth(state, seat)
        out += sorted(legal, key=lambda x: -sum(worth[c] for c in state.pool
                                                if c not in x.get("cards")))
        out = list(dict.fromkeys(out))[:MAX_DISCARD_CANDIDATES]
    else:
        out += legal
    return list(dict.fromkeys(out))


def reward(state: State, seat: int) -> float:
    """1 for the seat that invented Fire; else a little for its Inventing toward Fire."""
    if state.winner == seat:
        return 1.0
    need = state.deck.fire_cost[state.n]
    return PROGRESS_WEIGHT * min(1.0, scores(state, seat).inventing / need)


def hooks(policy: Bot[State]) -> GameHooks[State]:
    """The search's view of Cavemen, with ``policy`` playing the rollouts."""
    return contract_hooks(
        pending, apply, legal=legal_actions, determinise=determinise,
        candidates=lambda s, seat, legal, rng: candidates(s, seat, legal, rng, policy),
        policy=policy, reward=reward)


GUARD = 1.0  # standard errors by which another action must beat the policy's


def make_strong(budget_ms: float | None = None, rollouts: int | None = None,
                policy: Bot[State] | None = None, guard: float = GUARD) -> SearchBot[State]:
    """The strong bot with ``budget_ms`` of CPU per decision (default
    ``DEFAULT_BUDGET_MS``), or exactly ``rollouts`` rollouts; ``policy`` plays the
    rollouts (default: the heuristic)."""
    from engine.cavemen.bots import heuristic_bot

    return SearchBot(hooks(policy or heuristic_bot), Budget.of(budget_ms, rollouts), guard=guard)


__all__ = ["candidates", "determinise", "hooks", "make_strong", "reward"]
