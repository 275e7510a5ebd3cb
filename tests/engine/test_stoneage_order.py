"""The order of the use phase (issue 20, 1a): one ``order`` decision per use turn, asked
only when two or more orders are meaningful, then played out without asking again,
stopping only for tools, payments and dice-for-all picks.

Components used below: G01 5 Food, G03 tool step, G06 dice for all, G11 2 Stone,
G13 3 points, S07 one-time tool 3; building B01 2 Wood + 1 Brick (10 points).
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from engine.core import Action, Decision, Event, IllegalAction, parse_action
from engine.stoneage import (
    BOTS,
    apply,
    check_invariants,
    default_action,
    email_choices,
    explain,
    from_json,
    legal_actions,
    pending,
    setup,
    to_json,
)
from engine.stoneage.rules import MAX_ORDERS, use_orders
from tests.engine.stoneage_builders import board, build, rolling

NO_TOOLS = Action.of("no_tools")


def order(*places: str) -> Action:
    return Action.of("order", places=places)


def orders(state, seat: int = 0) -> list[tuple[str, ...]]:
    return [a.get("places") for a in legal_actions(state, seat)]


def ev(kind: str, actor: int | None = None, /, **data) -> Event:
    return Event(kind, actor, data)


def use_turn(*spots, spec=None, civ=("G01",), **kw):
    """Seat 0 (the start player) is about to use its placements ``spots`` (place,
    count); seat 1 stands on the Hunting grounds with one person."""
    return build(spec or board(), board(), civ=civ, phase="use", start=0, turn=0,
                 spots=[(p, 0, c) for p, c in spots] + [("hunt", 1, 1)], **kw)


# --------------------------------------------------------------------------- when it opens


def test_rolls_without_a_tool_at_hand_go_in_one_order_without_asking():
    state = build(board(people=6), board(), start=1, turn=0,
                  spots=[("hunt", 1, 5), ("forest", 0, 2), ("hunt", 0, 1), ("clay", 0, 2)])
    state, events = apply(state, 0, Action.of("place", at="card1", count=1))
    rolled = [e.data["place"] for e in events if e.kind == "dice_rolled"]
    assert rolled[:4] == ["hunt", "clay", "forest", "hunt"]  # seat 1's, then the most valuable
    assert all(d.kind != "order" for d in pending(state))


def test_a_building_always_comes_after_the_rolls():
    """The roll can only add to what pays for the building: no decision."""
    state = use_turn(("building1", 1), ("forest", 2), stacks=(("B01",), None),
                     rng=rolling((6, 6)))
    assert orders(state) == [("forest", "building1")]


def test_two_rolls_with_a_tool_at_hand_may_come_in_either_order():
    state = use_turn(("hunt", 1), ("quarry", 2), spec=board(tools=(1,)))
    assert orders(state) == [("quarry", "hunt"), ("hunt", "quarry")]


def test_a_tool_card_before_a_roll_it_may_raise_or_after_the_roll_that_pays_it():
    state = use_turn(("card1", 1), ("forest", 2), civ=("G03",))
    assert orders(state) == [("forest", "card1"), ("card1", "forest")]


def test_a_tool_card_comes_before_a_hunt_that_cannot_pay_for_it():
    state = use_turn(("card1", 1), ("hunt", 2), civ=("S07",), spec=board(wood=1))
    assert orders(state) == [("card1", "hunt")]


def test_two_cards_that_bring_resources_may_come_in_either_order():
    state = use_turn(("card1", 1), ("card2", 1), civ=("G11", "S02"),
                     spec=board(wood=3))
    assert orders(state) == [("card1", "card2"), ("card2", "card1")]


def test_cards_that_bring_no_resources_and_buildings_go_in_one_order():
    state = use_turn(("card2", 1), ("building1", 1), ("card1", 1), civ=("G01", "G13"),
                     spec=board(wood=5, brick=2))
    assert orders(state) == [("building1", "card1", "card2")]


def test_a_seat_with_one_meaningful_order_plays_it_without_a_decision():
    state = build(board(wood=2, brick=1), board(), start=1, turn=0,
                  stacks=(("B01",), None),
                  spots=[("hunt", 1, 5), ("building1", 0, 1), ("hunt", 0, 3)])
    state, events = apply(state, 0, Action.of("place", at="forest", count=1))
    assert pending(state) == [Decision(0, "build", (("place", "building1"),))]
    rolled = [e.data["place"] for e in events if e.kind == "dice_rolled"]
    assert rolled == ["hunt", "forest", "hunt"]


def _decisions(players: int, seed: int):
    """Every decision of a heuristic game: (round, turn, kind, legal action count)."""
    bot = BOTS["heuristic"]
    rng = random.Random(seed)
    state = setup([f"p{i}" for i in range(players)], seed)
    out = []
    while pending(state):
        d = pending(state)[0]
        out.append((state.round, state.turn, d.kind, len(legal_actions(state, d.seat))))
        state, _ = apply(state, d.seat, bot(state, d.seat, rng))
    return out


@pytest.mark.parametrize(("players", "seed"), [(2, 1), (3, 2), (4, 3)])
def test_the_order_decision_opens_at_most_once_a_use_turn_with_two_orders_or_more(
        players, seed):
    asked = [(r, t, n) for r, t, kind, n in _decisions(players, seed) if kind == "order"]
    assert asked
    turns = Counter((r, t) for r, t, _ in asked)
    assert max(turns.values()) == 1
    assert min(n for _, _, n in asked) >= 2


# --------------------------------------------------------------------------- playing it out


def test_the_chosen_order_is_played_with_tools_and_payments_in_between():
    state = use_turn(("forest", 2), ("hunt", 1), ("card1", 1), civ=("G11",),
                     spec=board(tools=(2,)), rng=rolling((3,), (6, 4)))
    assert set(orders(state)) >= {("hunt", "forest", "card1"), ("forest", "hunt", "card1")}
    state, events = apply(state, 0, order("hunt", "forest", "card1"))
    assert events == [ev("dice_rolled", 0, place="hunt", dice=[3], total=3)]
    assert pending(state)[0].kind == "tools"
    state, events = apply(state, 0, Action.of("tools", use=("t2",)))
    assert events == [ev("tools_added", 0, tiles=[2], one_time=[], added=2),
                      ev("resources_gained", 0, resource="food", amount=2, place="hunt"),
                      ev("dice_rolled", 0, place="forest", dice=[6, 4], total=10),
                      ev("resources_gained", 0, resource="wood", amount=3, place="forest")]
    assert pending(state) == [Decision(0, "card", (("place", "card1"),))]
    assert state.order == ()
    state, events = apply(state, 0, Action.of("take", pay=("wood",)))
    assert [e.kind for e in events][:4] == ["card_taken", "card_kept", "resources_gained",
                                            "dice_rolled"]
    assert events[3].actor == 1  # the next seat's turn: nothing asked again of seat 0


def test_the_order_is_kept_through_the_other_players_picks_of_dice_for_all():
    state = build(board(wood=1, tools=(1,)), board(), board(), civ=("G06",), phase="use",
                  start=0, turn=0, spots=[("card1", 0, 1), ("quarry", 0, 1),
                                          ("hunt", 0, 1)],
                  rng=rolling((1, 2, 3), (5,), (6,)))
    state, _ = apply(state, 0, order("card1", "quarry", "hunt"))
    state, _ = apply(state, 0, Action.of("take", pay=("wood",)))
    assert pending(state)[0] == Decision(0, "pick", (("dice", (1, 2, 3)),))
    state, _ = apply(state, 0, Action.of("pick", face=3))
    assert pending(state)[0].seat == 1 and pending(state)[0].kind == "pick"
    assert state.order == ("quarry", "hunt")
    state, events = apply(state, 1, Action.of("pick", face=2))
    assert [e.data["place"] for e in events if e.kind == "dice_rolled"][:1] == ["quarry"]
    assert all(d.kind != "order" for d in pending(state))


def test_the_sensible_order_is_the_default_and_the_first_email_choice():
    state = use_turn(("hunt", 1), ("forest", 1), ("river", 1), ("card1", 1),
                     civ=("G03",), spec=board(wood=1, tools=(1,)))
    sensible = order("card1", "river", "forest", "hunt")
    assert default_action(state, 0) == sensible
    choices = email_choices(state, 0)
    assert choices[0] == sensible and 1 < len(choices) <= 4
    assert set(choices) <= set(legal_actions(state, 0))


def test_at_most_max_orders_are_listed_and_the_sensible_one_among_them():
    state = build(board(people=10, tools=(2,), wood=3), board(), board(), board(),
                  civ=("S07", "S08", "G02", "G11"), phase="use", turn=0,
                  spots=[(p, 0, 1) for p in ("hunt", "forest", "clay", "quarry", "river",
                                             "card1", "card2", "card3", "card4",
                                             "building1")])
    legal = legal_actions(state, 0)
    assert len(legal) == MAX_ORDERS
    assert default_action(state, 0) in legal


# --------------------------------------------------------------------------- refused


@pytest.fixture
def asked():
    """Seat 0 chooses the order of Forest, the Hunting grounds and building stack 1,
    its Tool maker already used (a tool at hand)."""
    state = build(board(tools=(1,)), board(), civ=("G01",), stacks=(("B01",), None),
                  phase="use", start=0, turn=0,
                  spots=[("forest", 0, 2), ("building1", 0, 1), ("hunt", 0, 1),
                         ("card1", 0, 1), ("hunt", 1, 1)])
    assert pending(state)[0].kind == "order"
    return state


@pytest.mark.parametrize(("places", "why"), [
    (("forest", "hunt", "card1"), {"why": "order/missing", "places": ["building1"]}),
    (("forest", "hunt", "hunt", "card1", "building1"), {"why": "order/twice",
                                                        "place": "hunt"}),
    (("toolmaker", "forest", "hunt", "card1", "building1"),
     {"why": "order/unknown", "word": "toolmaker",
      "places": ["forest", "building1", "hunt", "card1"]}),
    (("building1", "forest", "hunt", "card1"),
     {"why": "order/never_better", "order": ["forest", "hunt", "building1", "card1"]}),
    ((), {"why": "order/none", "places": ["forest", "building1", "hunt", "card1"]}),
])
def test_an_order_not_offered_is_refused_and_explained(asked, places, why):
    with pytest.raises(IllegalAction):
        apply(asked, 0, order(*places))
    assert explain(asked, 0, " ".join(("order", *places))) == why


def test_the_use_of_one_placement_at_a_time_is_no_longer_an_action(asked):
    with pytest.raises(IllegalAction):
        apply(asked, 0, Action.of("use", at="forest"))


def test_an_order_typed_as_offered_is_read(asked):
    legal = legal_actions(asked, 0)
    assert parse_action("order forest hunt building1 card1", legal, exact=True) == order(
        "forest", "hunt", "building1", "card1")


# --------------------------------------------------------------------------- stored states


def test_a_state_stored_before_the_order_existed_loads_and_asks_the_order():
    """A game saved by the old engine (one ``use`` at a time) between two placements:
    no ``order`` in its JSON, three placements left."""
    old = use_turn(("quarry", 2), ("hunt", 1), ("forest", 1), spec=board(tools=(2,)))
    raw = json.loads(json.dumps(to_json(old)))
    del raw["order"]
    loaded = from_json(raw)
    assert loaded.order == () and loaded == old
    assert pending(loaded) == [Decision(0, "order", (("places", ("quarry", "hunt",
                                                                 "forest")),))]
    state, _ = apply(loaded, 0, default_action(loaded, 0))
    assert state.order or pending(state)[0].kind != "order"


def test_a_state_stored_mid_roll_before_the_order_asks_it_after_the_roll():
    state = use_turn(("hunt", 1), ("forest", 1), ("quarry", 1), spec=board(tools=(2,)),
                     rng=rolling((3,), (6,), (4,)))
    state, _ = apply(state, 0, order("hunt", "forest", "quarry"))
    assert pending(state)[0].kind == "tools" and state.order == ("forest", "quarry")
    raw = json.loads(json.dumps(to_json(state)))
    del raw["order"]  # as the old engine stored it: the rest chosen one at a time
    loaded = from_json(raw)
    assert loaded.order == ()
    after, events = apply(loaded, 0, NO_TOOLS)
    assert [e.kind for e in events] == ["resources_gained"]
    assert pending(after) == [Decision(0, "order", (("places", ("forest", "quarry")),))]


def test_an_order_that_does_not_name_the_placements_left_is_a_corrupt_state():
    state = use_turn(("hunt", 1), ("forest", 1), spec=board(tools=(2,)))
    with pytest.raises(Exception, match="chosen order"):
        check_invariants(state._replace(order=("hunt",)))
    raw = to_json(state._replace(order=("forest", "hunt")))
    assert from_json(raw).order == ("forest", "hunt")


# --------------------------------------------------------------------------- replay


@pytest.mark.parametrize("players", [2, 3, 4])
def test_the_same_seed_and_actions_make_the_same_game(players):
    bot = BOTS["heuristic"]
    first, steps, log = setup([f"p{i}" for i in range(players)], 5), [], []
    state, rng = first, random.Random(5)
    while pending(state):
        seat = pending(state)[0].seat
        action = bot(state, seat, rng)
        steps.append((seat, action))
        state, events = apply(state, seat, action)
        log.append(events)
    again = setup([f"p{i}" for i in range(players)], 5)
    for (seat, action), events in zip(steps, log, strict=True):
        again, replayed = apply(again, seat, action)
        assert replayed == events
    assert again == state


def test_use_orders_with_a_limit_stop_early():
    state = use_turn(("hunt", 1), ("forest", 1), ("quarry", 1), spec=board(tools=(2,)))
    assert len(use_orders(state, 0)) == 6
    assert len(use_orders(state, 0, limit=2)) == 2


# --------------------------------------------------------------------------- properties


def _random_use_turn(rng: random.Random):
    """Seat 0 with 2 to 6 placements left among rolls, cards and buildings, any tools."""
    places = rng.sample(["hunt", "forest", "clay", "quarry", "river", "card1", "card2",
                         "card3", "card4", "building1"], rng.randint(2, 6))
    cards = rng.sample(["G02", "G03", "G04", "G06", "G11", "G13", "S07", "S18", "G07"], 4)
    spec = board(people=10, wood=rng.randint(0, 3), tools=rng.choice([(), (1,), (2, 2)]))
    return build(spec, board(), civ=cards, phase="use", turn=0,
                 spots=[(p, 0, 1) for p in places])


def test_every_order_leads_to_a_listed_one_and_the_listed_ones_stay_as_they_are():
    """Moving placements as ``_fault`` says ends (in a meaningful order, listed), and
    leaves the listed orders alone; the sensible order is always listed."""
    from engine.stoneage.rules import _has_tools, _normal_order, _uses

    rng = random.Random(20)
    for _ in range(150):
        state = _random_use_turn(rng)
        listed = use_orders(state, 0)
        uses = {u.place: u for u in _uses(state, 0)}
        tools = _has_tools(state.boards[0])
        for order in listed:
            assert _normal_order([uses[p] for p in order], tools) == order
        for _ in range(5):
            shuffled = rng.sample(list(uses.values()), len(uses))
            assert _normal_order(shuffled, tools) in listed
        assert default_action(state, 0).get("places") in listed
