"""Stone Age bots: ``random`` (any legal action) and ``heuristic`` (plays to win).

A bot is ``choose(state, seat, rng) -> Action`` and only ever returns a legal action. The
``rng`` is the caller's ``random.Random``; bots keep no state between calls.

The heuristic bot values every placement in points: it hunts enough to feed its people,
grows people and agriculture while the game is young, takes the tool maker, builds what
it can pay, values civilization cards by what they add to its own final scoring (culture
sets, its multipliers) and their top effect, and sends the rest of its people where the
open buildings' resources come from. In the use phase it gathers first, then builds, then
takes cards; it feeds with resources rather than lose 10 points.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from engine.core import Action, Bot
from engine.search import Strong
from engine.stoneage.data import PAYABLE, RESOURCE_VALUE
from engine.stoneage.rules import (
    DECLINE,
    MAX_AGRICULTURE,
    MAX_PEOPLE,
    STARVE,
    YIELD,
    State,
    at_home,
    building_payments,
    card_in_slot,
    data,
    default_action,
    final_scores,
    legal_actions,
    open_step,
    pay_value,
    payments_of_size,
    pending,
)


def random_bot(state: State, seat: int, rng: random.Random) -> Action:
    """Any legal action, uniformly."""
    return rng.choice(legal_actions(state, seat))


def heuristic_bot(state: State, seat: int, rng: random.Random) -> Action:
    kind = next(d.kind for d in pending(state) if d.seat == seat)
    if kind == "place":
        return _place(state, seat)
    if kind == "order":
        return default_action(state, seat)  # the sensible order
    if kind == "card":
        return _card(state, seat)
    if kind == "build":
        return _build(state, seat)
    if kind == "feed":
        return _feed(state, seat)
    if kind == "pick":
        return _pick(state, seat)
    return default_action(state, seat)  # tools: the fewest reaching the best yield


def easy_bot(state: State, seat: int, rng: random.Random) -> Action:
    """The improved heuristic (``easy``, the strong bot's rollout policy): as
    ``heuristic_bot``, but cards and places are valued by what they will score at the end
    (culture sets still to grow, the figures' multipliers on what the place brings)."""
    kind = next(d.kind for d in pending(state) if d.seat == seat)
    if kind == "place":
        return _place(state, seat, place_value)
    if kind == "order":
        return default_action(state, seat)
    if kind == "card":
        return _card(state, seat, easy_card_value)
    if kind == "build":
        return _build(state, seat)
    if kind == "feed":
        return _feed(state, seat)
    if kind == "pick":
        return _pick(state, seat)
    return default_action(state, seat)


# ``strong``: the search bot (``engine.stoneage.search``); ``make_strong`` builds it with a
# CPU budget per decision (the hook ``engine.core.Searches``), ``strong_bot`` plays with
# the default budget (``engine.search.DEFAULT_BUDGET_MS``).
strong_bot = Strong("engine.stoneage.search")
make_strong = strong_bot.make


BOTS: dict[str, Bot[State]] = {"random": random_bot, "heuristic": heuristic_bot,
                               "easy": easy_bot, "strong": strong_bot}


# --------------------------------------------------------------------------- valuing


def rounds_left(state: State) -> int:
    """A guess at the rounds still to play (this one included)."""
    stacks = min(len(s) for s in state.stacks)
    cards = (len(state.pile) + 4) // max(2, state.n)
    return max(1, min(stacks * 2, cards, 30 - state.round))


def food_need(state: State, seat: int) -> int:
    """Food still missing for the next feeding, counting agriculture."""
    b = state.boards[seat]
    return max(0, b.people - b.agriculture - b.food)


def card_value(state: State, seat: int, card_id: str) -> float:
    """What a civilization card adds: its end scoring for this seat, and its top."""
    d = data()
    card = d.cards[card_id]
    board = state.boards[seat]
    left = rounds_left(state)
    before = final_scores(state, seat)
    with_card = state._replace(boards=tuple(
        b._replace(cards=(*b.cards, card_id)) if s == seat else b
        for s, b in enumerate(state.boards)))
    after = final_scores(with_card, seat)
    value = float(after["culture"] - before["culture"])
    if card.figure:
        growth = {"farmer": min(MAX_AGRICULTURE, board.agriculture + left // 3),
                  "toolmaker": min(12, sum(board.tools) + sum(board.spent) + left // 3),
                  "hutbuilder": len(board.buildings) + left // 2,
                  "shaman": min(MAX_PEOPLE, board.people + left // 4)}
        value += card.count * growth[card.figure]
    top = card.top
    if top == "food":
        value += card.amount * 0.5
    elif top == "resource":
        value += card.amount * RESOURCE_VALUE[card.top_resource] * 0.8
    elif top == "points":
        value += card.amount
    elif top == "any":
        value += 8
    elif top == "agriculture":
        value += min(left, 8) if board.agriculture < MAX_AGRICULTURE else 0
    elif top == "tool_step":
        value += min(left, 6) * 0.6
    elif top == "one_time_tool":
        value += card.value
    elif top == "dice":
        value += 5
    elif top == "dice_for_all" or top == "extra_card":
        value += 4
    return value


def _needed_resources(state: State, seat: int) -> dict[str, float]:
    """How much each building resource is wanted for the open buildings."""
    d = data()
    board = state.boards[seat]
    want = {r: 1.0 for r in PAYABLE}
    for stack in state.stacks:
        if not stack:
            continue
        tile = d.buildings[stack[0]]
        if tile.cost is not None:
            for r, n, have in zip(PAYABLE, tile.cost, board.res, strict=True):
                if n > have:
                    want[r] += 0.4 * (n - have)
    return want


def _place_value(state: State, seat: int, action: Action) -> float:
    d = data()
    place: str = action.get("at")
    count: int = action.get("count")
    board = state.boards[seat]
    left = rounds_left(state)
    need = food_need(state, seat)
    tools = sum(board.tools)
    if place == "hut":
        if board.people >= MAX_PEOPLE or left < 3:
            return 0.0
        return 2.2 * min(left, 10)
    if place == "field":
        if board.agriculture >= MAX_AGRICULTURE:
            return 0.0
        return 1.6 * min(left, 10) + (3 if need else 0)
    if place == "toolmaker":
        if sum(board.tools) + sum(board.spent) >= 12:
            return 0.0
        return 0.9 * min(left, 8)
    if place.startswith("building"):
        stack = state.stacks[int(place[-1]) - 1]
        tile = d.buildings[stack[0]]
        payments = building_payments(board, tile)
        if not payments:
            return 0.0
        best = max(sum(RESOURCE_VALUE[r] for r in p) for p in payments)
        return best + 3
    if place.startswith("card"):
        slot = int(place[-1]) - 1
        if not payments_of_size(board, slot + 1):
            return 0.0
        return card_value(state, seat, card_in_slot(state, slot)) - 2.5 * (slot + 1)
    # resource places: the expected yield, as points
    resource = YIELD[place]
    value = RESOURCE_VALUE[resource]
    expected = max(0.0, (3.5 * count + tools) / value - 0.45)
    if resource == "food":
        fed = min(expected, need)
        return fed * 3.0 + (expected - fed) * 0.6
    return expected * value * _needed_resources(state, seat)[resource] * 0.9


def _place(state: State, seat: int,
           value_of: Callable[[State, int, Action], float] | None = None) -> Action:
    value_of = value_of or _place_value
    legal = legal_actions(state, seat)
    home = at_home(state, seat)
    need = food_need(state, seat)
    hunting = any(s.place == "hunt" and s.seat == seat for s in state.spots)
    # People to keep for hunting so that nobody starves.
    reserve = min(home, int(need / 1.75 + 0.99)) if (need and not hunting) else 0
    single = [a for a in legal if a.get("at") not in YIELD]
    best, best_value = None, 0.0
    for action in single:
        if home - action.get("count") < reserve:
            continue
        value = value_of(state, seat, action)
        if value > best_value:
            best, best_value = action, value
    if best is not None and best_value >= 4:
        return best
    # Gather: hunt what is needed, else the place worth most with the people at home.
    if reserve:
        for action in legal:
            if action.get("at") == "hunt" and action.get("count") == reserve:
                return action
    gather = [a for a in legal if a.get("at") in YIELD]
    if gather:
        top = {}
        for a in gather:
            top[a.get("at")] = a  # the most people each place takes
        return max(top.values(), key=lambda a: value_of(state, seat, a))
    return best or legal[0]


# --------------------------------------------------------------------------- easy


def figures(state: State, seat: int) -> dict[str, int]:
    """The seat's figures on its cards so far (farmer, toolmaker, hutbuilder, shaman)."""
    return {k: v["figures"] for k, v in final_scores(state, seat)["multipliers"].items()}


def easy_card_value(state: State, seat: int, card_id: str) -> float:
    """What a civilization card will score: a culture symbol by the set it joins as that
    set may still grow, a figure by its multiplier as it may stand at the end, plus its
    top effect (as ``card_value``)."""
    d = data()
    card = d.cards[card_id]
    left = rounds_left(state)
    value = card_value(state, seat, card_id)
    if card.culture:
        held = [d.cards[c].culture for c in state.boards[seat].cards if d.cards[c].culture]
        new = card.culture not in held
        distinct = len(set(held))
        if new:  # the first set grows by one now and may grow further: 2k+1 now, more later
            value += 2 * min(7 - distinct, CULTURE_GROWTH * left)
        else:
            sets = held.count(card.culture) + 1
            second = sum(1 for c in set(held) if held.count(c) >= sets)
            value += min(second, CULTURE_GROWTH * left)
    return value


CULTURE_GROWTH = 0.3  # new culture symbols a seat may still add per round left


def place_value(state: State, seat: int, action: Action) -> float:
    """A placement's value (as ``_place_value``), with cards valued by
    ``easy_card_value`` and the village places and buildings raised by the figures that
    will multiply what they bring (farmers the Field, tool makers the Tool maker, shamans
    the Hut, hut builders a building)."""
    place: str = action.get("at")
    if place.startswith("card"):
        board = state.boards[seat]
        slot = int(place[-1]) - 1
        if not payments_of_size(board, slot + 1):
            return 0.0
        return easy_card_value(state, seat, card_in_slot(state, slot)) - 2.5 * (slot + 1)
    value = _place_value(state, seat, action)
    if value <= 0:
        return value
    multiplier = FIGURE_OF.get(place[:8] if place.startswith("building") else place)
    if multiplier:
        value += figures(state, seat)[multiplier]
    return value


FIGURE_OF = {"field": "farmer", "toolmaker": "toolmaker", "hut": "shaman",
             "building": "hutbuilder"}


# --------------------------------------------------------------------------- using


def _card(state: State, seat: int,
          value_of: Callable[[State, int, str], float] | None = None) -> Action:
    value_of = value_of or card_value
    legal = legal_actions(state, seat)
    slot = int(open_step(state).place[-1]) - 1
    if value_of(state, seat, card_in_slot(state, slot)) < 1.5 * (slot + 1):
        return DECLINE
    return min((a for a in legal if a != DECLINE), key=pay_value)


def _build(state: State, seat: int) -> Action:
    legal = [a for a in legal_actions(state, seat) if a != DECLINE]
    short = food_need(state, seat)  # resources to keep for feeding this round
    board = state.boards[seat]

    def key(action: Action) -> tuple[int, int]:
        pay = action.get("pay")
        keeps = sum(board.res) + board.wild - len(pay) >= short
        return (keeps, pay_value(action))

    return max(legal, key=key)


def _feed(state: State, seat: int) -> Action:
    board = state.boards[seat]
    if board.short > 6:
        return STARVE
    return default_action(state, seat)


def _pick(state: State, seat: int) -> Action:
    legal = legal_actions(state, seat)
    board = state.boards[seat]
    faces = {a.get("face"): a for a in legal}
    left = rounds_left(state)
    order = [6, 5, 4, 3, 2, 1] if left > 3 else [4, 3, 2, 1, 6, 5]
    if board.agriculture >= MAX_AGRICULTURE:
        order.remove(6)
    for face in order:
        if face in faces:
            return faces[face]
    return legal[0]


__all__ = ["BOTS", "card_value", "easy_bot", "easy_card_value", "heuristic_bot", "make_strong",
           "place_value", "random_bot", "rounds_left", "strong_bot"]
