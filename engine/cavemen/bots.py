"""Cavemen bots: ``random`` (any legal action) and ``heuristic`` (plays to win).

A bot is ``choose(state, seat, rng) -> Action`` and only ever returns a legal action. The
``rng`` is the caller's ``random.Random``; bots keep no state between calls.

The heuristic bot keeps its tribe fed, builds Inventing toward Fire, bids for the conch
when it could invent Fire this round (or to stop someone who could), and hunts when hungry.
"""

from __future__ import annotations

import random

from engine.cavemen.deck import Scores
from engine.cavemen.rules import (
    FORAGE,
    PASS,
    State,
    auction_of,
    default_action,
    legal_actions,
    pending,
    scores,
)
from engine.core import Action, Bot
from engine.search import Strong


def random_bot(state: State, seat: int, rng: random.Random) -> Action:
    """Any legal action, uniformly; bids are rare so auctions stay short."""
    actions = legal_actions(state, seat)
    if actions[0] == PASS and rng.random() < 0.7:
        return PASS
    return rng.choice(actions)


def heuristic_bot(state: State, seat: int, rng: random.Random) -> Action:
    kind = next(d.kind for d in pending(state) if d.seat == seat)
    if kind == "bid":
        return _bid(state, seat)
    if kind == "act":
        return _act(state, seat, rng)
    if kind in ("starve", "casualty"):
        return _loss(state, seat)
    return _discard(state, seat)


# ``strong``: the search bot (``engine.cavemen.search``); ``make_strong`` builds it with a
# CPU budget per decision (the hook ``engine.core.Searches``), ``strong_bot`` plays with
# the default budget (``engine.search.DEFAULT_BUDGET_MS``).
strong_bot = Strong("engine.cavemen.search")
make_strong = strong_bot.make


# ``easy`` is the heuristic itself (the strong bot's rollout policy).
BOTS: dict[str, Bot[State]] = {"random": random_bot, "heuristic": heuristic_bot,
                               "easy": heuristic_bot, "strong": strong_bot}


# --------------------------------------------------------------------------- bidding


def _fire_in_reach(state: State, seat: int) -> bool:
    deck = state.deck
    return (deck.fire_id in state.pool
            and scores(state, seat).inventing >= deck.fire_cost[state.n])


def _bid(state: State, seat: int) -> Action:
    a = auction_of(state)
    teeth = state.tribes[seat].teeth
    rivals = [s for s in range(state.n) if s != seat and _fire_in_reach(state, s)]
    if a.bidder == seat:
        return PASS
    if (_fire_in_reach(state, seat) or rivals) and teeth > a.high:
        # Win outright if Fire is ours to take; else outbid a rival one Tooth at a time.
        return Action.of("bid", amount=teeth if _fire_in_reach(state, seat) else a.high + 1)
    return PASS


# --------------------------------------------------------------------------- acting


def _act(state: State, seat: int, rng: random.Random) -> Action:
    actions = legal_actions(state, seat)
    best, best_value = FORAGE, _value(state, seat, FORAGE)
    for action in actions:
        if action.kind == "invent" and action.get("card") == state.deck.fire_id:
            return action
        value = _value(state, seat, action) + rng.random() * 0.01
        if value > best_value:
            best, best_value = action, value
    return best


def _food_weight(state: State, seat: int) -> float:
    """What one more Food is worth: much when starvation looms, little once stocked."""
    sc = scores(state, seat)
    need = max(1, sc.cavemen - sc.feeding_relief)  # what a conch round costs
    food = state.tribes[seat].food
    if food < need + 1:
        return 2.5
    if food < 2 * need + 2:
        return 1.0
    if food < 4 * need:
        return 0.4
    return 0.05


def _teeth_weight(state: State, seat: int) -> float:
    """Teeth buy cavemen and caves, and the conch once Fire is near."""
    sc = scores(state, seat)
    cost = state.deck.fire_cost[state.n]
    teeth = state.tribes[seat].teeth
    if sc.inventing >= cost:  # only the conch stands between us and Fire
        return 3.0
    if sc.inventing >= cost - 2:
        return 1.0
    return 0.5 if teeth < 12 else 0.1


def _value(state: State, seat: int, action: Action) -> float:
    deck, tribe = state.deck, state.tribes[seat]
    sc = scores(state, seat)
    food_w, teeth_w = _food_weight(state, seat), _teeth_weight(state, seat)
    if action.kind == "forage":
        food, _ = sc.income_for("forage")
        return (sc.foraging + food) * food_w
    card = deck.card(action.get("card"))
    if action.kind == "hunt":
        food, teeth = sc.income_for("hunt")
        risk = 0.0 if sc.protected_casualties or sc.cavemen < 2 else 0.3 * len(
            {deck.card(c).stone for c in tribe.cards if deck.card(c).is_caveman})
        return ((card.reward_food + food) * food_w + (card.reward_teeth + teeth) * teeth_w
                - risk)
    after = list(tribe.cards)
    if action.get("replace"):
        after.remove(action.get("replace"))
    after.append(card.id)
    new = deck.scores(tuple(after))
    gain = _tableau_gain(state, sc, new)
    if action.kind == "recruit":
        pay = action.get("pay")
        cost = (card.cost_food if pay == "food" else card.cost_teeth) - (
            sc.discount("recruit", card.type))
        weight = food_w if pay == "food" else teeth_w
        return gain - max(0, cost) * weight - (1.5 if action.get("replace") else 0)
    if action.kind == "explore":
        cost = 0 if sc.can_explore else max(0, card.cost_teeth - sc.discount("explore"))
        return gain - cost * teeth_w
    return gain  # invent


def action_value(state: State, seat: int, action: Action) -> float:
    """The heuristic's value of an ``act`` action (Fire above everything)."""
    if action.kind == "invent" and action.get("card") == state.deck.fire_id:
        return 1000.0
    return _value(state, seat, action)


def _tableau_gain(state: State, old: Scores, new: Scores) -> float:
    """The worth of moving from scores ``old`` to ``new``: Inventing above all."""
    room = old.population - old.cavemen
    pop_w = 2.5 if room <= 0 else (1.0 if room == 1 else 0.3)
    value = ((new.inventing - old.inventing) * 4.0
             + (new.hunting - old.hunting) * 1.2
             + (new.foraging - old.foraging) * 1.2
             + (new.population - old.population) * pop_w
             - (new.cavemen - old.cavemen) * 0.8)  # each caveman eats when holding the conch
    value += 1.5 * (new.protected_casualties - old.protected_casualties)
    value += 1.0 * (new.protected_starvation - old.protected_starvation)
    value += 1.5 * (new.feeding_relief - old.feeding_relief)
    value += 1.0 * (new.can_explore - old.can_explore)
    value += 0.8 * (len(new.discounts) - len(old.discounts))
    value += 1.5 * (sum(a for *_, a in new.income) - sum(a for *_, a in old.income))
    return value


# --------------------------------------------------------------------------- losses, discard


def _loss(state: State, seat: int) -> Action:
    """Lose the caveman worth least to a Fire-seeking tribe (Inventing counts double)."""
    deck = state.deck
    options = [a.get("card") for a in legal_actions(state, seat)]
    worth = {c: deck.card(c).inventing * 2 + deck.card(c).hunting + deck.card(c).foraging
             for c in options}
    return Action.of("lose", card=min(reversed(options), key=worth.__getitem__))


def _discard(state: State, seat: int) -> Action:
    """Keep the three cards most useful to this tribe; locked Fire always stays."""
    worth = pool_worth(state, seat)
    return max(legal_actions(state, seat),
               key=lambda a: sum(worth[c] for c in state.pool if c not in a.get("cards")),
               default=default_action(state, seat))


def pool_worth(state: State, seat: int) -> dict[str, float]:
    """What each pool card is worth to this tribe (a discard keeps the most)."""
    deck = state.deck
    tribe = state.tribes[seat]
    old = scores(state, seat)

    def worth(cid: str) -> float:
        card = deck.card(cid)
        if card.type == "beast":
            return card.reward_food * 0.5 + card.reward_teeth * 0.5
        return _tableau_gain(state, old, deck.scores((*tribe.cards, cid)))

    return {c: worth(c) for c in state.pool}
