"""The ``strong`` Stone Age bot: Monte Carlo rollouts (``engine.search``) played by the
``easy`` heuristic, on worlds that draw anew only what the seat cannot know.

What a seat cannot know, and is drawn anew for each world (``determinise``):
- the order of the civilization card pile, together with the cards an opponent drew face
  down with an "extra card" top (G05): such a card sits right after the extra-card card in
  the opponent's hand (it is appended when drawn), so those cards and the pile are
  shuffled together and dealt back, the pile keeping its length;
- the building tiles under the open top of each stack, together with the tiles that left
  the game unseen (fewer than four players): all unseen tiles are shuffled and dealt back
  under the tops, each stack keeping its length;
- the dice still to come: the state's random source is replaced by a fresh one;
- the order in which another seat chose to resolve its placements (``order``, shown to
  that seat only): it is forgotten, so that seat chooses again in the rollout;
- the standing choices of the other seats (each seat sees only its own): they are
  forgotten, so those seats decide in the rollout;
- the standing plans of the other seats (each seat sees only its own): forgotten too.
The other cards of opponents are known to a player who watched them being taken (they were
open in the display), so they stay as they are.

The budget: ``make_strong(budget_ms=...)`` (CPU ms per decision, default
``engine.search.DEFAULT_BUDGET_MS``) or ``make_strong(rollouts=N)`` (exactly N rollouts: the
choice depends only on the state and the rng). Stone Age has no setup options; the server
passes a budget by building the bot with ``make_strong`` (``BOTS["strong"]`` is the default).
"""

from __future__ import annotations

import math
import random

from engine.core import Action, Bot, Rng
from engine.search import Budget, GameHooks, SearchBot, contract_hooks, wins_and_margin
from engine.stoneage.data import PAYABLE, RESOURCE_VALUE
from engine.stoneage.rules import (
    DECLINE,
    STARVE,
    YIELD,
    State,
    apply,
    data,
    decision_kind,
    final_scores,
    legal_actions,
    pay_value,
    pending,
)

MAX_PLACE_CANDIDATES = 10  # placements searched: the policy's and the best by its values
MAX_ORDER_CANDIDATES = 6
REWARD_SCALE = 100.0  # points of margin worth as much as a win (see wins_and_margin)


def determinise(state: State, seat: int, rng: random.Random) -> State:
    """``state`` with what ``seat`` cannot know drawn anew (see the module docstring)."""
    d = data()
    boards = list(state.boards)
    hidden = list(state.pile)
    held: list[tuple[int, int]] = []  # (seat, index) of cards drawn face down by others
    for s, b in enumerate(boards):
        if s == seat:
            continue
        for i, cid in enumerate(b.cards[:-1]):
            if d.cards[cid].top == "extra_card":
                held.append((s, i + 1))
                hidden.append(b.cards[i + 1])
    hidden.sort()  # nothing of the true order may reach the shuffle
    rng.shuffle(hidden)
    for (s, i), cid in zip(held, hidden, strict=False):
        cards = list(boards[s].cards)
        cards[i] = cid
        boards[s] = boards[s]._replace(cards=tuple(cards))
    pile = tuple(hidden[len(held):])
    seen = {st[0] for st in state.stacks if st} | {t for b in boards for t in b.buildings}
    tiles = [t for t in d.building_ids if t not in seen]
    rng.shuffle(tiles)
    stacks, at = [], 0
    for st in state.stacks:
        under = len(st) - 1 if st else 0
        stacks.append((st[0], *tiles[at:at + under]) if st else ())
        at += under
    order = state.order if state.turn == seat else ()
    standing = tuple(row if s == seat else () for s, row in enumerate(state.standing))
    plans = tuple(plan if s == seat else None for s, plan in enumerate(state.plans))
    return state._replace(boards=tuple(boards), pile=pile, stacks=tuple(stacks),
                          rng=Rng(rng.getrandbits(62)), order=order,
                          standing=standing if any(standing) else (),
                          plans=plans if any(p is not None for p in plans) else ())


def candidates(state: State, seat: int, legal: list[Action], rng: random.Random,
               policy: Bot[State]) -> list[Action]:
    """The actions worth searching, the policy's choice first: every placement the policy
    values (the most people and half of them on a resource place), the pay-or-decline
    choice with the cheapest payments (for a building, those worth most), every pick, tool
    set and (a few) orders, feeding with the cheapest resources or losing the points."""
    from engine.stoneage.bots import place_value  # the easy heuristic's values

    first = policy(state, seat, random.Random(rng.getrandbits(32)))
    kind = decision_kind(state, seat)
    out: list[Action] = [first]
    if kind == "place":
        most: dict[str, list[Action]] = {}
        for a in legal:
            most.setdefault(a.get("at"), []).append(a)
        pool = []
        for place, rows in most.items():
            if place in YIELD:
                pool.append(rows[-1])
                if len(rows) > 2:
                    pool.append(rows[(len(rows) - 1) // 2])
            else:
                pool.extend(rows)
        valued = sorted(pool, key=lambda a: -place_value(state, seat, a))
        out += [a for a in valued if place_value(state, seat, a) > 0]
        out = _distinct(out)[:MAX_PLACE_CANDIDATES]
    elif kind == "card" or kind == "feed":
        payments = sorted((a for a in legal if a.kind != "decline" and a.kind != "starve"),
                          key=pay_value)
        out += payments[:2] + [DECLINE if kind == "card" else STARVE]
    elif kind == "build":
        payments = sorted((a for a in legal if a.kind != "decline"), key=pay_value,
                          reverse=True)
        out += payments[:3] + [DECLINE]
    elif kind == "order":
        out += legal[:MAX_ORDER_CANDIDATES]
    else:
        out += legal
    return _distinct(out)


def _distinct(actions: list[Action]) -> list[Action]:
    return list(dict.fromkeys(actions))


def reward(state: State, seat: int) -> float:
    """A finished game: a win (shared: a share), plus the margin over the best other seat
    / REWARD_SCALE. A rollout cut short: the same, with the win's chance from the
    estimated margin (``estimate``)."""
    finals = [final_scores(state, s) for s in range(state.n)]
    totals = [float(f["total"]) for f in finals]
    if state.phase == "over":
        return wins_and_margin(totals, [f["tiebreak"] for f in finals], seat, REWARD_SCALE)
    est = [t + future(state, s) for s, t in enumerate(totals)]
    margin = est[seat] - max(v for s, v in enumerate(est) if s != seat)
    return 1 / (1 + math.exp(-margin / MARGIN_SPREAD)) + margin / REWARD_SCALE


MARGIN_SPREAD = 20.0  # an estimated margin's points per unit of log-odds of winning
PER_ROUND = {"people": 2.2, "agriculture": 1.6, "tools": 0.9}  # points a round, as the
# heuristic values the Hut, the Field and the Tool maker


def future(state: State, seat: int) -> float:
    """What a seat's board may still bring beyond its end score as it stands: its people,
    agriculture and tools for the rounds left, its resources built into buildings."""
    from engine.stoneage.bots import rounds_left

    b = state.boards[seat]
    left = rounds_left(state)
    tools = min(12, sum(b.tools) + sum(b.spent))
    value = left * (PER_ROUND["people"] * b.people
                    + PER_ROUND["agriculture"] * min(b.agriculture, b.people)
                    + PER_ROUND["tools"] * tools)
    value += 0.7 * sum((RESOURCE_VALUE[r] - 1) * n for r, n in zip(PAYABLE, b.res, strict=True))
    value += 0.7 * (RESOURCE_VALUE["gold"] - 1) * b.wild + 0.3 * b.food
    return value


def hooks(policy: Bot[State]) -> GameHooks[State]:
    """The search's view of Stone Age, with ``policy`` playing the rollouts."""
    return contract_hooks(
        pending, apply, legal=legal_actions, determinise=determinise,
        candidates=lambda s, seat, legal, rng: candidates(s, seat, legal, rng, policy),
        policy=policy, reward=reward, round_of=lambda s: s.round)


HORIZON = 2  # rounds a rollout plays before ``reward`` judges it; None: to the end
GUARD = 1.0  # standard errors by which another action must beat the policy's


def make_strong(budget_ms: float | None = None, rollouts: int | None = None,
                policy: Bot[State] | None = None, horizon: int | None = HORIZON,
                guard: float = GUARD) -> SearchBot[State]:
    """The strong bot with ``budget_ms`` of CPU per decision (default
    ``DEFAULT_BUDGET_MS``), or exactly ``rollouts`` rollouts; ``policy`` plays the
    rollouts (default: the easy heuristic); ``horizon`` and ``guard``: see ``SearchBot``."""
    from engine.stoneage.bots import easy_bot

    return SearchBot(hooks(policy or easy_bot), Budget.of(budget_ms, rollouts),
                     horizon=horizon, guard=guard)


__all__ = ["candidates", "determinise", "hooks", "make_strong", "reward"]
