"""The order of the use phase (issue 31, 1): free, as the rules say ("Die Reihenfolge des
Handelns darf der Spieler frei wählen"). At any point of a use turn the player may
resolve any placement left next (``use at=PLACE``, then be asked again) or commit to a
whole order (``order places=...``); the engine suggests the sensible order and refuses
none. It asks only where the order of what is left can change what the player may do
or know.

Components used below: G01 5 Food, G03 tool step, G06 dice for all, G11 2 Stone,
G13 3 points, G15 3 Food, S06 one-time tool 4, S07 one-time tool 3; building B01
2 Wood + 1 Brick (10 points).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from itertools import permutations

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
from engine.stoneage.rules import ORDERS_LISTED, order_matters
from tests.engine.stoneage_builders import board, build, rolling

NO_TOOLS = Action.of("no_tools")


def order(*places: str) -> Action:
    return Action.of("order", places=places)


def use(place: str) -> Action:
    return Action.of("use", at=place)


def ev(kind: str, actor: int | None = None, /, **data) -> Event:
    return Event(kind, actor, data)


def use_turn(*spots, spec=None, civ=("G01",), **kw):
    """Seat 0 (the start player) is about to use its placements ``spots`` (place,
    count); seat 1 stands on the Hunting grounds with one person."""
    return build(spec or board(), board(), civ=civ, phase="use", start=0, turn=0,
                 spots=[(p, 0, c) for p, c in spots] + [("hunt", 1, 1)], **kw)


def rolled(events) -> list[str]:
    return [e.data["place"] for e in events if e.kind == "dice_rolled"]


def asked(state, seat: int = 0) -> str | None:
    return next((d.kind for d in pending(state) if d.seat == seat), None)


def play_out(state, seat: int = 0, choose=None):
    """Answer every follow-up of ``seat``'s use turn (tools, card, build, and every
    seat's picks of dice for all) with the timeout's choice (or ``choose``) until the
    turn is over or ``seat`` is asked the order again; the state and every event."""
    log = []
    while state.phase == "use" and state.turn == seat and asked(state, seat) != "order":
        d = pending(state)[0]
        action = (choose or default_action)(state, d.seat)
        state, events = apply(state, d.seat, action)
        log += events
    return state, log


# --------------------------------------------------------------------------- when it opens


def test_rolls_without_a_tool_anywhere_are_resolved_without_asking():
    """Two rolls and no tool: each only shows its own dice, nothing to decide after."""
    state = build(board(people=6), board(), start=1, turn=0,
                  spots=[("hunt", 1, 5), ("forest", 0, 2), ("hunt", 0, 1), ("clay", 0, 2)])
    state, events = apply(state, 0, Action.of("place", at="field", count=1))
    assert rolled(events)[:4] == ["hunt", "clay", "forest", "hunt"]  # seat 1's, then ours
    assert all(d.kind != "order" for d in pending(state))


def test_cards_and_buildings_that_only_cost_resources_are_resolved_without_asking():
    """Either order lets the player take either, or both if they can pay both."""
    state = use_turn(("card2", 1), ("building1", 1), ("card1", 1), civ=("G01", "G13"),
                     spec=board(wood=5, brick=2), stacks=(("B01",), None))
    assert not order_matters(state, 0)


def test_a_roll_before_a_card_the_player_can_pay_for_is_asked():
    """Seeing the hunt's dice first may change whether the player pays for the card."""
    state = use_turn(("card1", 1), ("hunt", 2), civ=("G01",), spec=board(wood=1))
    assert asked(state) == "order"
    assert set(legal_actions(state, 0)) == {order("hunt", "card1"), order("card1", "hunt"),
                                            use("hunt"), use("card1")}


def test_a_card_that_cannot_be_paid_for_and_gets_nothing_to_pay_with_is_not_asked():
    state = use_turn(("card1", 1), ("hunt", 2), civ=("G01",), spec=board())
    assert not order_matters(state, 0)


def test_two_rolls_with_a_tool_at_hand_are_asked():
    state = use_turn(("hunt", 1), ("quarry", 2), spec=board(tools=(1,)))
    assert asked(state) == "order"


def test_one_placement_left_is_never_asked():
    state = use_turn(("forest", 2), spec=board(tools=(2,)))
    assert not order_matters(state, 0)


# --------------------------------------------------------------------------- every order


def _random_use_turn(rng: random.Random, most: int = 6):
    """Seat 0 with 2 to ``most`` placements left among rolls, cards and buildings."""
    places = rng.sample(["hunt", "forest", "clay", "quarry", "river", "card1", "card2",
                         "card3", "card4", "building1"], rng.randint(2, most))
    cards = rng.sample(["G02", "G03", "G04", "G06", "G11", "G13", "S07", "S18", "G07"], 4)
    spec = board(people=10, wood=rng.randint(0, 4), brick=rng.randint(0, 2),
                 tools=rng.choice([(), (1,), (2, 2), (4, 4, 4)]),
                 one_time=rng.choice([(), ("S06",)]))
    civ = [c for c in cards if c not in spec.cards]
    return build(spec, board(), board(), civ=civ, phase="use", turn=0,
                 spots=[(p, 0, 1) for p in places], rng=rng.randint(0, 10_000))


def _resolved(state, events) -> list[str]:
    """The placements of seat 0 in the order they were resolved (rolled, paid or left)."""
    out = []
    for e in events:
        if e.actor != 0:
            continue
        place = e.data.get("place")
        if e.kind == "dice_rolled" and place in ("hunt", "forest", "clay", "quarry",
                                                  "river"):
            out.append(place)
        elif e.kind in ("card_taken", "card_declined", "card_unaffordable"):
            out.append(f"card{e.data['slot']}")
        elif e.kind in ("building_built", "building_declined", "building_unaffordable"):
            out.append(f"building{e.data['stack']}")
    return out


def test_every_whole_order_is_legal_and_played_in_that_order():
    rng = random.Random(31)
    checked = 0
    for _ in range(60):
        state = _random_use_turn(rng, most=4)
        if asked(state) != "order":
            continue
        places = pending(state)[0].get("places")
        legal = set(legal_actions(state, 0))
        for chosen in permutations(places):
            assert order(*chosen) in legal
            after, events = apply(state, 0, order(*chosen))
            after, more = play_out(after)
            assert asked(after) != "order"
            assert _resolved(after, events + more) == list(chosen)
            checked += 1
    assert checked > 200


def test_every_order_can_be_played_one_placement_at_a_time():
    """``use`` of any placement left, again and again, in any order: each is legal each
    time it is asked, and the placements are resolved exactly in the order named."""
    rng = random.Random(32)
    checked = 0
    for _ in range(80):
        state = _random_use_turn(rng, most=8)
        if asked(state) != "order":
            continue
        wanted = list(pending(state)[0].get("places"))
        rng.shuffle(wanted)
        log, pos = [], 0
        while asked(state) == "order":
            left = set(pending(state)[0].get("places"))
            assert {use(p) for p in left} <= set(legal_actions(state, 0))
            nxt = next(p for p in wanted[pos:] if p in left)
            state, events = apply(state, 0, use(nxt))
            state, more = play_out(state)
            log += events + more
            pos = wanted.index(nxt) + 1
        done = _resolved(state, log)
        # after the last question, the rest (whose order cannot matter) came by itself
        assert done[:pos] == [p for p in wanted if p in done][:pos]
        checked += 1
    assert checked > 30


def test_with_more_placements_than_listed_every_use_and_the_sensible_order_are_legal():
    state = build(board(people=10, tools=(2,), wood=3), board(), board(), board(),
                  civ=("S07", "S08", "G02", "G11"), phase="use", turn=0,
                  spots=[(p, 0, 1) for p in ("hunt", "forest", "clay", "quarry", "river",
                                             "card1", "card2", "card3", "card4",
                                             "building1")])
    legal = legal_actions(state, 0)
    places = pending(state)[0].get("places")
    assert len(places) > ORDERS_LISTED
    assert {use(p) for p in places} <= set(legal)
    assert default_action(state, 0) in legal and len(legal) == len(places) + 1
    assert explain(state, 0, "order " + " ".join(reversed(places))) == {
        "why": "order/long", "most": ORDERS_LISTED,
        "places": list(default_action(state, 0).get("places"))}


# --------------------------------------------------------------------------- the three cases


def test_a_one_time_tool_card_with_three_tiles_of_four_may_come_before_the_river():
    """Case (a): tiles 4, 4, 4 (no tool step can help), and a card that gives a one-time
    tool: taking the card first puts its 3 pips on the River's roll."""
    state = use_turn(("river", 1), ("card1", 1), civ=("S07",),
                     spec=board(wood=1, tools=(4, 4, 4)), rng=rolling((5,)))
    assert asked(state) == "order"
    assert order("card1", "river") in legal_actions(state, 0)
    state, _ = apply(state, 0, use("card1"))
    state, _ = apply(state, 0, Action.of("take", pay=("wood",)))
    assert asked(state) == "tools"  # the River rolled 5: 5 + 12 = 17, + 3 = 20 Gold 3
    assert Action.of("tools", use=("t4", "t4", "t4", "S07")) in legal_actions(state, 0)
    state, events = apply(state, 0, Action.of("tools", use=("t4", "t4", "t4", "S07")))
    assert ev("resources_gained", 0, resource="gold", amount=3, place="river") in events


def test_the_hunt_may_come_before_a_tool_card_so_the_wood_can_feed_after_a_poor_hunt():
    """Case (b): 4 Wood, no Food, the Hunting grounds and a tool card costing 4: the
    player may hunt first and, after a poor hunt, leave the card and keep the Wood."""
    state = use_turn(("hunt", 2), ("card4", 1), civ=("G13", "G15", "G07", "S06"),
                     spec=board(food=0, wood=4), rng=rolling((1, 2)))
    assert asked(state) == "order"
    assert {order("hunt", "card4"), order("card4", "hunt")} <= set(legal_actions(state, 0))
    state, events = apply(state, 0, use("hunt"))
    assert ev("resources_gained", 0, resource="food", amount=1, place="hunt") in events
    assert pending(state) == [Decision(0, "card", (("place", "card4"),))]
    state, _ = apply(state, 0, Action.of("decline"))
    assert state.boards[0].res[0] == 4


def test_after_the_quarry_the_player_chooses_between_the_forest_and_the_building():
    """Case (c): Quarry, Forest and a building: after the Quarry's roll the player is
    asked again, and may build before the Forest or after it."""
    state = use_turn(("quarry", 1), ("forest", 1), ("building1", 1),
                     spec=board(wood=2, brick=1, tools=(2,)), stacks=(("B01",), None),
                     rng=rolling((4,)))
    legal = set(legal_actions(state, 0))
    assert all(order(*o) in legal for o in permutations(("quarry", "forest", "building1")))
    state, _ = apply(state, 0, use("quarry"))
    state, _ = apply(state, 0, NO_TOOLS)
    assert pending(state) == [Decision(0, "order", (("places", ("forest", "building1")),))]
    assert {use("forest"), use("building1")} <= set(legal_actions(state, 0))
    state, events = apply(state, 0, use("building1"))
    assert pending(state) == [Decision(0, "build", (("place", "building1"),))]


# --------------------------------------------------------------------------- playing it out


def test_a_whole_order_is_played_with_tools_and_payments_in_between():
    state = use_turn(("forest", 2), ("hunt", 1), ("card1", 1), civ=("G11",),
                     spec=board(tools=(2,)), rng=rolling((3,), (6, 4)))
    state, events = apply(state, 0, order("hunt", "forest", "card1"))
    assert events == [ev("dice_rolled", 0, place="hunt", dice=[3], total=3)]
    assert asked(state) == "tools"
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


def test_use_asks_again_only_while_the_order_of_the_rest_can_matter():
    state = use_turn(("hunt", 1), ("forest", 1), ("building1", 1),
                     spec=board(wood=2, brick=1, tools=(1,)), stacks=(("B01",), None),
                     rng=rolling((2,), (6,)))
    state, _ = apply(state, 0, use("building1"))
    state, _ = apply(state, 0, Action.of("build", pay=("wood", "wood", "brick")))
    assert asked(state) == "order"  # two rolls, a tool at hand
    state, events = apply(state, 0, use("forest"))
    assert rolled(events) == ["forest"] and asked(state) == "tools"
    state, events = apply(state, 0, NO_TOOLS)
    assert rolled(events)[:1] == ["hunt"]  # the last one: not asked


def test_a_whole_order_is_kept_through_the_other_players_picks_of_dice_for_all():
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
    assert rolled(events)[:1] == ["quarry"]
    assert all(d.kind != "order" for d in pending(state))


def test_the_sensible_order_is_the_default_and_the_first_choice():
    state = use_turn(("hunt", 1), ("forest", 1), ("river", 1), ("card1", 1),
                     civ=("G03",), spec=board(wood=1, tools=(1,)))
    sensible = order("card1", "river", "forest", "hunt")
    assert default_action(state, 0) == sensible
    assert legal_actions(state, 0)[0] == sensible
    assert email_choices(state, 0) == [sensible, *(use(p) for p in sensible.get("places"))]


def test_with_two_placements_the_email_offers_the_two_orders():
    state = use_turn(("hunt", 1), ("quarry", 2), spec=board(tools=(1,)))
    assert email_choices(state, 0) == [order("quarry", "hunt"), order("hunt", "quarry")]


# --------------------------------------------------------------------------- refused


@pytest.fixture
def asked_state():
    """Seat 0 chooses what to use of Forest, the Hunting grounds, building stack 1 and
    card 1, a tool at hand."""
    state = build(board(tools=(1,), wood=1), board(), civ=("G01",), stacks=(("B01",), None),
                  phase="use", start=0, turn=0,
                  spots=[("forest", 0, 2), ("building1", 0, 1), ("hunt", 0, 1),
                         ("card1", 0, 1), ("hunt", 1, 1)])
    assert asked(state) == "order"
    return state


LEFT = ["forest", "hunt", "building1", "card1"]  # the sensible order


@pytest.mark.parametrize(("command", "why"), [
    ("order forest hunt card1", {"why": "order/missing", "places": ["building1"]}),
    ("order forest hunt hunt card1 building1", {"why": "order/twice", "place": "hunt"}),
    ("order toolmaker forest hunt card1 building1",
     {"why": "order/unknown", "word": "toolmaker", "places": LEFT}),
    ("use river", {"why": "order/unknown", "word": "river", "places": LEFT}),
    ("use", {"why": "order/none", "places": LEFT}),
    ("order", {"why": "order/none", "places": LEFT}),
])
def test_an_order_that_is_no_order_of_the_placements_left_is_refused_and_explained(
        asked_state, command, why):
    words = command.split()
    action = (use(words[1]) if words[0] == "use" and len(words) > 1 else
              order(*words[1:]))
    with pytest.raises(IllegalAction):
        apply(asked_state, 0, action)
    assert explain(asked_state, 0, command) == why


def test_an_order_the_old_engine_refused_as_never_better_is_legal(asked_state):
    legal = legal_actions(asked_state, 0)
    assert parse_action("order building1 forest hunt card1", legal, exact=True) == order(
        "building1", "forest", "hunt", "card1")
    assert parse_action("use building1", legal, exact=True) == use("building1")


# --------------------------------------------------------------------------- stored states


def test_a_state_stored_before_the_order_existed_loads_and_asks_the_order():
    """A game saved by an older engine between two placements: no ``order`` in its
    JSON, three placements left."""
    old = use_turn(("quarry", 2), ("hunt", 1), ("forest", 1), spec=board(tools=(2,)))
    raw = json.loads(json.dumps(to_json(old)))
    del raw["order"]
    loaded = from_json(raw)
    assert loaded.order == () and loaded == old
    assert pending(loaded) == [Decision(0, "order", (("places", ("quarry", "hunt",
                                                                 "forest")),))]
    state, _ = apply(loaded, 0, default_action(loaded, 0))
    assert state.order or asked(state) != "order"


def test_a_state_stored_mid_roll_with_no_order_asks_it_after_the_roll():
    state = use_turn(("hunt", 1), ("forest", 1), ("quarry", 1), spec=board(tools=(2,)),
                     rng=rolling((3,), (6,), (4,)))
    state, _ = apply(state, 0, order("hunt", "forest", "quarry"))
    assert asked(state) == "tools" and state.order == ("forest", "quarry")
    raw = json.loads(json.dumps(to_json(state)))
    del raw["order"]  # as an older engine stored it: the rest chosen one at a time
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


# --------------------------------------------------------------------------- whole games


def _decisions(players: int, seed: int, bot: str = "heuristic"):
    """Every decision of a game: (round, turn, kind, legal action count)."""
    play = BOTS[bot]
    rng = random.Random(seed)
    state = setup([f"p{i}" for i in range(players)], seed)
    out = []
    while pending(state):
        d = pending(state)[0]
        out.append((state.round, state.turn, d.kind, len(legal_actions(state, d.seat))))
        state, _ = apply(state, d.seat, play(state, d.seat, rng))
    return out


@pytest.mark.parametrize(("players", "seed"), [(2, 1), (3, 2), (4, 3)])
def test_a_player_who_commits_a_whole_order_is_asked_at_most_once_a_use_turn(
        players, seed):
    asked_ = [(r, t, n) for r, t, kind, n in _decisions(players, seed) if kind == "order"]
    assert asked_
    assert max(Counter((r, t) for r, t, _ in asked_).values()) == 1


@pytest.mark.parametrize("players", [2, 3, 4])
def test_the_same_seed_and_actions_make_the_same_game(players):
    bot = BOTS["random"]
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
