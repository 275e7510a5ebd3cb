"""A search bot for any game of the contract: flat Monte Carlo over determinised rollouts.

At a decision with more than one candidate the bot plays many rollouts: each round it
draws one *world* (the game's ``determinise`` shuffles what the seat cannot know: a card
pile's order, building stacks, the dice still to come), plays every candidate still in
the race in that same world (common random numbers: the candidates are compared under the
same cards and the same dice), and lets the rollout policy (a game's heuristic bot) play
every seat to the end. The game's ``reward`` scores the end for the seat (a win counts
most, the margin breaks the rest). Candidates are dropped by sequential halving: after each
phase the worse half by mean reward leaves the race, so most rollouts go to the
candidates that matter.

The budget is CPU time of this thread (``time.thread_time``) in milliseconds, or a fixed
number of rollouts (``rollouts``). A fixed count makes the choice depend only on the state
and the ``rng`` (the tests use it); a time budget makes it depend on the machine's speed
too. The search never reads what ``determinise`` hides: it starts every rollout from a
determinised copy, never from the true state.
"""

from __future__ import annotations

import importlib
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from engine.core import Action, Bot, Decision, Event

S = TypeVar("S")

# A decision's CPU budget unless the caller names another: the server's default too
# (``GamePolicy.bot_ms``); bench/arena.py measured the strong bots at it (issue 22).
DEFAULT_BUDGET_MS = 100.0
MAX_ROLLOUT_DECISIONS = 5000  # a rollout that runs longer is scored where it stands
# Rollout decisions between two looks at the clock (time budgets). A look costs about
# 0.5 µs and a decision 50-100 µs; every few decisions keeps a decision's overrun to a few
# of them (at 50, one Cavemen decision was seen to overrun a 60 ms budget by far).
TIME_CHECK = 4


@dataclass(frozen=True)
class Budget:
    """How much a decision may search: ``ms`` of thread CPU time, or exactly ``rollouts``
    rollouts (which wins when given: the choice is then reproducible)."""

    ms: float | None = DEFAULT_BUDGET_MS
    rollouts: int | None = None

    def __post_init__(self) -> None:
        if self.rollouts is None and (self.ms is None or self.ms <= 0):
            raise ValueError("a budget needs ms > 0 or a number of rollouts")
        if self.rollouts is not None and self.rollouts < 1:
            raise ValueError("rollouts must be at least 1")

    @classmethod
    def of(cls, budget_ms: float | None = None, rollouts: int | None = None) -> Budget:
        """``rollouts`` when given, else ``budget_ms``, else the default budget."""
        if rollouts:
            return cls(rollouts=rollouts)
        return cls(ms=budget_ms) if budget_ms else cls()


@dataclass(frozen=True)
class GameHooks(Generic[S]):
    """What the search needs of one game.

    ``pending_seat(state)``: the seat of the first open decision, None when over.
    ``apply(state, seat, action)``: the next state. ``legal(state, seat)``: the legal
    actions. ``determinise(state, seat, rng)``: a copy of ``state`` in which everything
    ``seat`` cannot know is drawn anew at random (and the future dice). ``candidates(state,
    seat, legal, rng)``: the actions worth searching, the policy's own choice first.
    ``policy``: the rollout policy (a bot). ``reward(state, seat)``: a finished (or cut)
    rollout's worth for ``seat``, higher is better. ``round_of(state)``: the round a state
    is in, for rollouts cut after some rounds (``SearchBot``'s ``horizon``).
    """

    pending_seat: Callable[[S], int | None]
    apply: Callable[[S, int, Action], S]
    legal: Callable[[S, int], list[Action]]
    determinise: Callable[[S, int, random.Random], S]
    candidates: Callable[[S, int, list[Action], random.Random], list[Action]]
    policy: Bot[Any]
    reward: Callable[[S, int], float]
    round_of: Callable[[S], int] | None = None  # the round a state is in (for a horizon)


def contract_hooks(pending: Callable[[S], Sequence[Decision]],
                   apply: Callable[[S, int, Action], tuple[S, list[Event]]],
                   **rest: Any) -> GameHooks[S]:
    """``GameHooks`` from a game module's own ``pending`` and ``apply`` (the contract's:
    open decisions, and the next state with its events); ``rest`` are the other hooks."""

    def pending_seat(state: S) -> int | None:
        found = pending(state)
        return found[0].seat if found else None

    def next_state(state: S, seat: int, action: Action) -> S:
        return apply(state, seat, action)[0]

    return GameHooks(pending_seat=pending_seat, apply=next_state, **rest)


class Strong:
    """A game's ``strong`` level, with its search in ``module`` (a module with
    ``make_strong(budget_ms, rollouts, **options)``), imported when first needed: the
    search imports the game's bots, which list this level.

    ``make(budget_ms=..., rollouts=..., **options)`` builds a bot with that budget (the
    game's ``make_strong`` hook, ``engine.core.Searches``); the object itself is a bot
    that plays with the default budget (``BOTS["strong"]``), built once."""

    def __init__(self, module: str) -> None:
        self.module = module
        self._default: Bot[Any] | None = None

    def make(self, budget_ms: float | None = None, rollouts: int | None = None,
             **options: Any) -> Bot[Any]:
        factory: Callable[..., Bot[Any]] = importlib.import_module(self.module).make_strong
        return factory(budget_ms=budget_ms, rollouts=rollouts, **options)

    def __call__(self, state: Any, seat: int, rng: random.Random) -> Action:
        # Safe under threads: two first calls may each build a bot and one assignment
        # wins; the bots are alike and keep nothing between decisions (but ``last``,
        # figures for benchmarks that the decisions never read).
        if self._default is None:
            self._default = self.make()
        return self._default(state, seat, rng)


class SearchBot(Generic[S]):
    """``choose(state, seat, rng)``: the bot. Keeps no state between calls; ``last`` holds
    figures of the last decision (rollouts, candidates) for benchmarks only.

    ``horizon``: rollouts stop when that many rounds have begun after the decision's round
    (the game's ``reward`` then judges the position); None plays them to the end.
    ``guard``: another candidate replaces the policy's own choice only when its mean
    reward beats it, rollout by rollout in the same worlds, by ``guard`` standard errors
    of that paired difference (a few noisy rollouts never overturn the policy)."""

    def __init__(self, hooks: GameHooks[S], budget: Budget | None = None,
                 horizon: int | None = None, guard: float = 1.0) -> None:
        self.hooks = hooks
        self.budget = budget or Budget()
        self.horizon = horizon
        self.guard = guard
        self.last: dict[str, Any] = {}

    def __call__(self, state: S, seat: int, rng: random.Random) -> Action:
        hooks = self.hooks
        legal = hooks.legal(state, seat)
        if len(legal) == 1:
            self.last = {"rollouts": 0, "candidates": 1}
            return legal[0]
        candidates = hooks.candidates(state, seat, legal, rng)
        if len(candidates) == 1:
            self.last = {"rollouts": 0, "candidates": 1}
            return candidates[0]
        return self._search(state, seat, candidates, rng)

    def _search(self, state: S, seat: int, candidates: list[Action],
                rng: random.Random) -> Action:
        start = time.thread_time()
        round_of = self.hooks.round_of
        stop = (None if self.horizon is None or round_of is None
                else round_of(state) + self.horizon)
        budget = self.budget
        limit = budget.rollouts
        deadline = None if limit is not None else start + (budget.ms or 0) / 1000
        totals = [0.0] * len(candidates)
        counts = [0] * len(candidates)
        diffs: list[list[float]] = [[] for _ in candidates]  # paired with candidate 0
        alive = list(range(len(candidates)))
        phases = max(1, math.ceil(math.log2(len(candidates))))
        done = 0
        per_phase: int | None = None if limit is None else max(1, limit // phases)
        phase_done = 0
        out_of_budget = False
        while not out_of_budget:
            world = self.hooks.determinise(state, seat, rng)
            seed = rng.getrandbits(63)
            got: dict[int, float] = {}
            for i in alive:
                after = self.hooks.apply(world, seat, candidates[i])
                value = self._rollout(after, seat, random.Random(seed), stop, deadline)
                if value is None:  # the time ran out inside the rollout: not counted
                    out_of_budget = True
                    break
                got[i] = value
                totals[i] += value
                counts[i] += 1
                if i and 0 in got:
                    diffs[i].append(value - got[0])
                done += 1
                phase_done += 1
                if (limit is not None and done >= limit) or (
                        deadline is not None and time.thread_time() >= deadline):
                    out_of_budget = True
                    break
            if out_of_budget or len(alive) == 1:
                break
            if per_phase is None:  # a time budget: plan the phases after the first round
                spent = max(1e-6, time.thread_time() - start)
                expected = done * (budget.ms or 0) / 1000 / spent
                per_phase = max(len(alive), int(expected / phases))
            if phase_done >= per_phase and len(alive) > 1:
                alive = self._halve(alive, totals, counts)
                phase_done = 0
        best = max(alive, key=lambda i: (counts[i] > 0, totals[i] / max(1, counts[i]), -i))
        if best and not self._clearly_better(diffs[best]):
            best = 0
        self.last = {"rollouts": done, "candidates": len(candidates)}
        return candidates[best]

    def _clearly_better(self, diffs: list[float]) -> bool:
        """Whether paired differences beat the policy's choice by ``guard`` errors."""
        if len(diffs) < 2:
            return self.guard <= 0 and bool(diffs) and diffs[0] > 0
        mean = sum(diffs) / len(diffs)
        var = sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)
        return mean > self.guard * math.sqrt(var / len(diffs))

    @staticmethod
    def _halve(alive: list[int], totals: Sequence[float], counts: Sequence[int]) -> list[int]:
        """The better half of ``alive`` by mean reward (ties: the earlier candidate); the
        policy's own choice (0) always stays."""
        ranked = sorted(alive, key=lambda i: (-totals[i] / max(1, counts[i]), i))
        keep = ranked[: max(1, (len(ranked) + 1) // 2)]
        if 0 in alive and 0 not in keep:
            keep.append(0)
        return sorted(keep)

    def _rollout(self, state: S, seat: int, rng: random.Random, stop: int | None,
                 deadline: float | None = None) -> float | None:
        """Play ``state`` out with the policy; its reward, or None when ``deadline`` (thread
        CPU time) passed before the end (checked every TIME_CHECK decisions)."""
        hooks = self.hooks
        round_of = hooks.round_of
        for step in range(MAX_ROLLOUT_DECISIONS):
            if (deadline is not None and step and step % TIME_CHECK == 0
                    and time.thread_time() >= deadline):
                return None
            who = hooks.pending_seat(state)
            if who is None or (stop is not None and round_of is not None
                               and round_of(state) >= stop):
                break
            state = hooks.apply(state, who, hooks.policy(state, who, rng))
        return hooks.reward(state, seat)


def wins_and_margin(scores: Sequence[float], tiebreak: Sequence[float], seat: int,
                    scale: float) -> float:
    """A reward from final scores: 1 for a win alone, a share for a shared win, 0 for a
    loss, plus the margin over the best other seat divided by ``scale`` (a small nudge
    that tells a near miss from a rout)."""
    keys = list(zip(scores, tiebreak, strict=True))
    best = max(keys)
    winners = [s for s, k in enumerate(keys) if k == best]
    win = 1 / len(winners) if seat in winners else 0.0
    others = max(v for s, v in enumerate(scores) if s != seat)
    return win + (scores[seat] - others) / scale


__all__ = ["DEFAULT_BUDGET_MS", "Budget", "GameHooks", "SearchBot", "Strong", "contract_hooks",
           "wins_and_margin"]
