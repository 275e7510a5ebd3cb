"""Scenario tests: every rule and ruling of docs/games/stoneage.md, one idea per test.

Each test builds a position with the builders (tests/engine/stoneage_builders.py), plays
actions through the public contract of ``engine.stoneage`` (setup, pending,
legal_actions, apply, default_action, view, result, final_scores) and checks concrete
numbers and the exact events. Dice are fixed with ``rolling``: ``rolling((6, 5, 4))``
is an Rng whose next roll is 6, 5, 4.

Components used below (engine/stoneage/standard.toml): G03 tool step, G04 2 dice Gold,
G05 extra card, G06 dice for all, G07 7 Food, G09 agriculture, G11 2 Stone, G13 3
points, G02 2 resources of choice, S07 one-time tool 3, S08 one-time tool 2, S20 2 dice
Wood; buildings B07 wood+brick+stone (12), B01 2 wood+brick (10), B19 4 of 2 kinds,
B20 4 of 3 kinds, B26 1 to 7 of any kinds.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from itertools import combinations_with_replacement

import pytest

from engine.core import (
    Action,
    Decision,
    Event,
    GameOver,
    IllegalAction,
    NotYourTurn,
    Result,
    SetupError,
    format_action,
    parse_action,
)
from engine.stoneage import (
    BOTS,
    Board,
    apply,
    check_invariants,
    choice_effect,
    choice_variants,
    default_action,
    email_choices,
    final_scores,
    from_json,
    legal_actions,
    pending,
    result,
    setup,
    setup_with_events,
    to_json,
    view,
)
from engine.stoneage.data import TOP_KINDS
from tests.engine.stoneage_builders import (
    BUILDING_IDS,
    CARD_IDS,
    DATA,
    board,
    build,
    last_use,
    rolling,
)

KINDS = ("wood", "brick", "stone", "gold")
VALUE = {"food": 2, "wood": 3, "brick": 4, "stone": 5, "gold": 6}
RESOURCE_PLACES = ("forest", "clay", "quarry", "river")
VILLAGE = ("toolmaker", "hut", "field")
DECLINE = Action.of("decline")
NO_TOOLS = Action.of("no_tools")
STARVE = Action.of("starve")
FACE_GAIN = {1: "wood", 2: "brick", 3: "stone", 4: "gold", 5: "tool", 6: "agriculture"}


# --------------------------------------------------------------------------- helpers


def ev(kind: str, actor: int | None = None, /, **data) -> Event:
    return Event(kind, actor, data)


def secret(kind: str, actor: int, /, **data) -> Event:
    """An event only ``actor`` may read."""
    return Event(kind, actor, data, visible_to=(actor,))


def place(at: str, count: int = 1) -> Action:
    return Action.of("place", at=at, count=count)


def order(*places: str) -> Action:
    return Action.of("order", places=places)


def take(*pay: str) -> Action:
    return Action.of("take", pay=pay)


def build_(*pay: str) -> Action:
    return Action.of("build", pay=pay)


def feed(*pay: str) -> Action:
    return Action.of("feed", pay=pay)


def tools(*use_: str) -> Action:
    return Action.of("tools", use=use_)


def pick(face: int) -> Action:
    return Action.of("pick", face=face)


def names(players: int) -> list[str]:
    return [f"p{i}" for i in range(players)]


def kinds(events: list[Event]) -> list[str]:
    return [e.kind for e in events]


def play(state, seat: int, *actions: Action):
    """Apply several actions of one seat; the events of all of them."""
    out: list[Event] = []
    for action in actions:
        state, events = apply(state, seat, action)
        out += events
    return state, out


def counts_at(state, seat: int, at: str) -> list[int]:
    return [a.get("count") for a in legal_actions(state, seat) if a.get("at") == at]


def places_of(state, seat: int) -> set[str]:
    return {a.get("at") for a in legal_actions(state, seat)}


def pays(state, seat: int) -> list[tuple[str, ...]]:
    return [a.get("pay") for a in legal_actions(state, seat) if a.get("pay") is not None]


def at_card(spec, slot: int = 1, *others, **kw):
    """Seat 0 (the start player) is about to resolve its one person on card ``slot``."""
    state = build(spec, *(others or (board(),)), spots=[(f"card{slot}", 0, 1)], phase="use",
                  turn=0, **kw)
    return apply(state, 0, order(f"card{slot}"))


def at_building(spec, tiles, **kw):
    """Seat 0 (the start player) is about to resolve its one person on building stack 1
    (tiles top first)."""
    state = build(spec, board(), stacks=(tiles, None), spots=[("building1", 0, 1)],
                  phase="use", turn=0, **kw)
    return apply(state, 0, order("building1"))


def rolled(place_: str, count: int, faces, spec, **kw):
    """Seat 1, the last to use, rolls ``faces`` for ``count`` people on ``place_``."""
    state = last_use(board(), spec, place=place_, count=count, rng=rolling(tuple(faces)),
                     **kw)
    return apply(state, 1, order(place_))


def ending(*specs, **kw):
    """The last placement of a round at whose end the game ends (building stack 1 is
    empty): the last seat resolves an unaffordable card, then everybody is fed."""
    stacks = ((), *(None,) * (len(specs) - 1))
    return last_use(*specs, place="card4", stacks=stacks, **kw)


# --------------------------------------------------------------------------- components


FIXED_BUILDINGS = Counter({
    ((2, 1, 0, 0), 10): 1, ((2, 0, 1, 0), 11): 1, ((1, 2, 0, 0), 11): 1,
    ((2, 0, 0, 1), 12): 1, ((1, 0, 2, 0), 13): 1, ((0, 2, 1, 0), 13): 1,
    ((1, 1, 1, 0), 12): 2, ((0, 2, 0, 1), 14): 1, ((0, 1, 2, 0), 14): 1,
    ((1, 1, 0, 1), 13): 2, ((1, 0, 1, 1), 14): 2, ((0, 1, 1, 1), 15): 2,
    ((0, 0, 2, 1), 16): 1,
})

CARD_TABLE = {
    "G01": ("food 5", "medicine"), "G02": ("any 2", "medicine"),
    "G03": ("tool_step", "art"), "G04": ("dice gold", "art"),
    "G05": ("extra_card", "writing"), "G06": ("dice_for_all", "writing"),
    "G07": ("food 7", "pottery"), "G08": ("dice_for_all", "pottery"),
    "G09": ("agriculture", "time"), "G10": ("dice_for_all", "time"),
    "G11": ("resource stone 2", "transport"), "G12": ("dice_for_all", "transport"),
    "G13": ("points 3", "music"), "G14": ("points 3", "music"),
    "G15": ("food 3", "weaving"), "G16": ("food 1", "weaving"),
    "S01": ("agriculture", "1 farmer"), "S02": ("resource stone 1", "1 farmer"),
    "S03": ("dice_for_all", "1 farmer"), "S04": ("food 3", "2 farmer"),
    "S05": ("dice_for_all", "2 farmer"), "S06": ("one_time_tool 4", "1 toolmaker"),
    "S07": ("one_time_tool 3", "1 toolmaker"), "S08": ("one_time_tool 2", "2 toolmaker"),
    "S09": ("dice_for_all", "2 toolmaker"), "S10": ("dice_for_all", "2 toolmaker"),
    "S11": ("food 4", "1 hutbuilder"), "S12": ("dice_for_all", "1 hutbuilder"),
    "S13": ("food 2", "2 hutbuilder"), "S14": ("dice_for_all", "2 hutbuilder"),
    "S15": ("points 3", "3 hutbuilder"), "S16": ("resource stone 1", "1 shaman"),
    "S17": ("resource gold 1", "1 shaman"), "S18": ("dice stone", "1 shaman"),
    "S19": ("resource brick 1", "2 shaman"), "S20": ("dice wood", "2 shaman"),
}


def test_resources_are_worth_food_2_wood_3_brick_4_stone_5_gold_6():
    assert dict(DATA.values) == VALUE


def test_there_are_seventeen_fixed_cost_buildings_worth_their_resources():
    fixed = Counter((b.cost, b.points) for b in DATA.buildings.values() if b.kind == "fixed")
    assert fixed == FIXED_BUILDINGS
    assert sum(fixed.values()) == 17


def test_there_are_eight_n_of_k_kinds_buildings_and_three_one_to_seven_buildings():
    kinds_ = sorted((b.count, b.kinds) for b in DATA.buildings.values() if b.kind == "kinds")
    assert kinds_ == [(n, k) for n in (4, 5) for k in (1, 2, 3, 4)]
    assert [b.max for b in DATA.buildings.values() if b.kind == "any"] == [7, 7, 7]
    assert len(BUILDING_IDS) == 28


def test_the_thirty_six_civilization_cards_match_the_table():
    def top(card) -> str:
        return " ".join([card.top, *(str(getattr(card, f)) for f in TOP_KINDS[card.top])])

    def bottom(card) -> str:
        return card.culture or f"{card.count} {card.figure}"

    assert {c: (top(DATA.cards[c]), bottom(DATA.cards[c])) for c in CARD_IDS} == CARD_TABLE


# --------------------------------------------------------------------------- setup


@pytest.mark.parametrize("players", [2, 3, 4])
def test_setup_gives_each_player_five_people_twelve_food_and_nothing_else(players):
    state = setup(names(players), seed=4)
    assert state.boards == (Board(5, 12, (0, 0, 0, 0), 0, 0, (), (), (), (), (), 0, 0),
                            ) * players
    check_invariants(state)


@pytest.mark.parametrize("players", [2, 3, 4])
def test_setup_uses_one_stack_of_seven_buildings_per_player_with_the_top_tile_open(players):
    state = setup(names(players), seed=4)
    assert [len(s) for s in state.stacks] == [7] * players
    tiles = [t for s in state.stacks for t in s]
    assert len(set(tiles)) == 7 * players and set(tiles) <= set(BUILDING_IDS)
    seen = view(state, None)["buildings"]
    assert [b["top"]["id"] for b in seen] == [s[0] for s in state.stacks]
    assert [b["left"] for b in seen] == [7] * players


def test_setup_shuffles_the_buildings_and_the_cards_with_the_seed():
    one, two = setup(names(4), seed=1), setup(names(4), seed=2)
    assert one.stacks != two.stacks and one.civ != two.civ
    assert setup(names(4), seed=1) == one


@pytest.mark.parametrize("players", [2, 4])
def test_setup_lays_out_four_open_cards_and_piles_the_other_thirty_two(players):
    state = setup(names(players), seed=9)
    assert len(state.civ) == 4 and None not in state.civ
    assert len(state.pile) == 32
    assert sorted((*state.civ, *state.pile)) == sorted(CARD_IDS)
    assert [c["cost"] for c in view(state, 0)["cards"]] == [1, 2, 3, 4]


def test_start_player_is_random_and_varies_with_the_seed():
    starts = set()
    for seed in range(40):
        state, events = setup_with_events(names(4), seed)
        starts.add(state.start)
        assert events[0] == ev("game_started", players=4, start=state.start, stacks=4)
        assert events[1] == ev("round_started", round=1, start=state.start)
        assert pending(state) == [Decision(state.start, "place", (("home", 5),))]
    assert starts == {0, 1, 2, 3}


@pytest.mark.parametrize("players", [1, 5])
def test_setup_refuses_fewer_than_two_or_more_than_four_players(players):
    with pytest.raises(SetupError) as err:
        setup(names(players), seed=1)
    assert err.value.code == "setup/invalid"


def test_setup_takes_no_options():
    with pytest.raises(SetupError):
        setup(names(2), seed=1, options={"variant": "x"})


# --------------------------------------------------------------------------- placement


def test_placement_goes_clockwise_from_the_start_player():
    state = build(board(), board(), board(), start=1)
    order = []
    for at in ("hunt", "hunt", "hunt", "forest"):
        seat = pending(state)[0].seat
        order.append(seat)
        state, _ = apply(state, seat, place(at, 1))
    assert order == [1, 2, 0, 1]


def test_a_player_places_one_or_more_people_on_one_place():
    state = build(board(), board())
    state, events = apply(state, 0, place("forest", 3))
    assert events == [ev("people_placed", 0, place="forest", count=3)]
    assert pending(state) == [Decision(1, "place", (("home", 5),))]
    assert view(state, 1)["boards"][0]["home"] == 2


def test_players_with_no_people_left_are_skipped():
    state = build(board(), board(), spots=[("hunt", 0, 5)], turn=1)
    state, _ = apply(state, 1, place("forest", 2))
    assert pending(state) == [Decision(1, "place", (("home", 3),))]
    state, _ = apply(state, 1, place("clay", 2))
    assert pending(state) == [Decision(1, "place", (("home", 1),))]


def test_placement_ends_when_nobody_can_place_and_the_use_phase_begins():
    state = build(board(), board(), spots=[("hunt", 0, 5), ("forest", 1, 2),
                                           ("clay", 1, 2)], turn=1, start=1)
    state, events = apply(state, 1, place("card1"))
    assert events[:2] == [ev("people_placed", 1, place="card1", count=1),
                          ev("placement_over", round=2)]
    assert state.phase == "use"
    # the rolls may bring what pays for the card: seat 1 chooses what to use first
    assert kinds(events)[2:] == []
    assert pending(state) == [Decision(1, "order", (("places", ("forest", "clay",
                                                                "card1")),))]
    assert default_action(state, 1) == order("clay", "forest", "card1")


def test_hunting_grounds_take_any_number_of_people_of_every_player():
    state = build(board(), board(), board(), board(people=10),
                  spots=[("hunt", 0, 5), ("hunt", 1, 5), ("hunt", 2, 5)], turn=3)
    assert counts_at(state, 3, "hunt") == list(range(1, 11))


@pytest.mark.parametrize("at", RESOURCE_PLACES)
def test_forest_clay_pit_quarry_and_river_take_up_to_seven_of_one_player(at):
    state = build(board(people=10), board())
    assert counts_at(state, 0, at) == [1, 2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize("at", RESOURCE_PLACES)
def test_forest_clay_pit_quarry_and_river_hold_at_most_seven_people(at):
    state = build(board(), board(people=10), board(), board(), spots=[(at, 0, 5)], turn=1)
    assert counts_at(state, 1, at) == [1, 2]
    state, _ = apply(state, 1, place(at, 2))
    assert counts_at(state, 2, at) == []
    with pytest.raises(IllegalAction):
        apply(state, 2, place(at, 1))


def test_tool_maker_and_field_take_one_person():
    state = build(board(), board(), board(), board())
    assert counts_at(state, 0, "toolmaker") == [1]
    assert counts_at(state, 0, "field") == [1]
    with pytest.raises(IllegalAction):
        apply(state, 0, place("field", 2))
    state, _ = apply(state, 0, place("toolmaker"))
    state, _ = apply(state, 1, place("field"))
    assert "toolmaker" not in places_of(state, 2)
    assert "field" not in places_of(state, 2)


def test_hut_needs_exactly_two_people_of_one_player():
    state = build(board(), board(), board(), board(), turn=1)
    assert counts_at(state, 1, "hut") == [2]
    for count in (1, 3):
        with pytest.raises(IllegalAction):
            apply(state, 1, place("hut", count))
    state, _ = apply(state, 1, place("hut", 2))
    assert counts_at(state, 2, "hut") == []  # taken by another player


def test_hut_is_not_offered_to_a_player_with_one_person_left():
    state = build(board(), board(), board(), board(), spots=[("forest", 0, 4)])
    assert counts_at(state, 0, "hut") == []
    assert counts_at(state, 0, "field") == [1]


def test_each_open_card_takes_one_person():
    state = build(board(), board(), board(), board(), civ=("G01", None, "G07", "G09"))
    assert {a.get("at"): a.get("count") for a in legal_actions(state, 0)
            if a.get("at", "").startswith("card")} == {"card1": 1, "card3": 1, "card4": 1}
    state, _ = apply(state, 0, place("card3"))
    assert "card3" not in places_of(state, 1)
    assert {"card1", "card4"} <= places_of(state, 1)


def test_each_building_stack_takes_one_person_and_an_empty_stack_none():
    state = build(board(), board(), board(), board(), stacks=(7, 0, 7, 7))
    assert {a.get("at"): a.get("count") for a in legal_actions(state, 0)
            if a.get("at", "").startswith("building")} == {
        "building1": 1, "building3": 1, "building4": 1}
    state, _ = apply(state, 0, place("building4"))
    assert "building4" not in places_of(state, 1)


@pytest.mark.parametrize("at", ["hunt", "forest", "clay", "toolmaker", "card1", "building1"])
def test_never_adding_people_to_a_place_where_the_seat_already_stands(at):
    state = build(board(), board(), board(), board(), spots=[(at, 0, 1)])
    assert at not in places_of(state, 0)
    with pytest.raises(IllegalAction):
        apply(state, 0, place(at, 1))


@pytest.mark.parametrize("at", RESOURCE_PLACES)
def test_with_two_players_one_colour_on_each_of_forest_clay_pit_quarry_and_river(at):
    state = build(board(), board(), spots=[(at, 0, 1)], turn=1)
    assert counts_at(state, 1, at) == []
    assert set(RESOURCE_PLACES) - {at} <= places_of(state, 1)


def test_with_two_players_both_colours_may_hunt():
    state = build(board(), board(), spots=[("hunt", 0, 3)], turn=1)
    assert counts_at(state, 1, "hunt") == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("at", RESOURCE_PLACES)
def test_with_three_players_two_colours_on_each_of_forest_clay_pit_quarry_and_river(at):
    state = build(board(), board(), board(), spots=[(at, 0, 1)], turn=1)
    assert counts_at(state, 1, at) == [1, 2, 3, 4, 5]
    state, _ = apply(state, 1, place(at, 1))
    assert counts_at(state, 2, at) == []
    assert counts_at(state, 2, "hunt") == [1, 2, 3, 4, 5]


def test_with_three_players_all_colours_may_hunt():
    state = build(board(), board(), board(), spots=[("hunt", 0, 1), ("hunt", 1, 1)], turn=2)
    assert counts_at(state, 2, "hunt") == [1, 2, 3, 4, 5]


def test_with_four_players_four_colours_share_a_resource_place():
    state = build(board(), board(), board(), board(),
                  spots=[("forest", 0, 1), ("forest", 1, 1), ("forest", 2, 1)], turn=3)
    assert counts_at(state, 3, "forest") == [1, 2, 3, 4]


@pytest.mark.parametrize("players", [2, 3])
@pytest.mark.parametrize("used", [("toolmaker", "hut"), ("toolmaker", "field"),
                                  ("hut", "field")])
def test_with_two_or_three_players_only_two_of_the_three_village_places(players, used):
    spots = [(used[0], 0, 1 if used[0] != "hut" else 2)]
    state = build(*(board() for _ in range(players)), spots=spots, turn=1)
    assert set(VILLAGE) - {used[0]} <= places_of(state, 1)
    state, _ = apply(state, 1, place(used[1], 2 if used[1] == "hut" else 1))
    third = (set(VILLAGE) - set(used)).pop()
    assert third not in places_of(state, pending(state)[0].seat)


def test_with_four_players_all_three_village_places():
    state = build(board(), board(), board(), board(),
                  spots=[("toolmaker", 0, 1), ("hut", 1, 2)], turn=2)
    assert counts_at(state, 2, "field") == [1]


def test_a_player_with_people_but_no_legal_place_stays_home():
    """Ruling: seat 0 stands on the Hunting grounds, all cards and buildings; seat 1
    holds every resource place (one colour each) and two village places."""
    state = build(
        board(people=8), board(people=6), start=0, turn=1,
        spots=[("hunt", 0, 1), ("card1", 0, 1), ("card2", 0, 1), ("card3", 0, 1),
               ("card4", 0, 1), ("building1", 0, 1), ("building2", 0, 1),
               ("toolmaker", 1, 1), ("field", 1, 1), ("forest", 1, 1), ("clay", 1, 1),
               ("quarry", 1, 1)])
    state, events = apply(state, 1, place("river"))
    assert events[:3] == [ev("people_placed", 1, place="river", count=1),
                          ev("no_place_left", 0, home=1),
                          ev("placement_over", round=2)]
    assert state.phase == "use"
    assert view(state, 0)["boards"][0]["home"] == 1
    assert pending(state)[0].seat == 0 and pending(state)[0].kind == "order"


# --------------------------------------------------------------------------- use phase


def test_use_phase_runs_from_the_start_player_clockwise():
    state = build(board(), board(), board(), start=2, turn=2, phase="use",
                  spots=[("toolmaker", 2, 1), ("field", 0, 1), ("card1", 1, 1)])
    state, events = apply(state, 2, order("toolmaker"))
    assert events[:3] == [ev("tool_made", 2, tools=[1]),
                          ev("agriculture_raised", 0, agriculture=1),
                          ev("card_unaffordable", 1, slot=1, cost=1)]
    assert [e.actor for e in events if e.kind == "people_fed"] == [2, 0, 1]


def test_the_player_chooses_the_order_of_his_placements():
    """With a tool at hand, seeing one roll first may change where it goes."""
    state = build(board(tools=(1,)), board(), phase="use", turn=0,
                  spots=[("forest", 0, 2), ("hunt", 0, 1)], rng=rolling((3,), (6, 6)))
    assert pending(state) == [Decision(0, "order", (("places", ("forest", "hunt")),))]
    assert legal_actions(state, 0) == [order("forest", "hunt"), Action.of("use", at="forest"),
                                       Action.of("use", at="hunt"), order("hunt", "forest")]
    state, events = apply(state, 0, order("hunt", "forest"))
    assert events == [ev("dice_rolled", 0, place="hunt", dice=[3], total=3)]
    state, events = apply(state, 0, NO_TOOLS)
    assert events[:3] == [ev("resources_gained", 0, resource="food", amount=1, place="hunt"),
                          ev("dice_rolled", 0, place="forest", dice=[6, 6], total=12),
                          ev("resources_gained", 0, resource="wood", amount=4,
                             place="forest")]


def test_village_places_are_resolved_first_automatically():
    state = build(board(), board(), start=0, turn=1, civ=("G03",),
                  spots=[("forest", 0, 3), ("toolmaker", 0, 1), ("card1", 0, 1),
                         ("hunt", 1, 4)])
    state, events = apply(state, 1, place("field"))
    assert events == [ev("people_placed", 1, place="field", count=1),
                      ev("placement_over", round=2),
                      ev("tool_made", 0, tools=[1])]
    # the new tool could raise the Forest's roll or (G03) take a tool step first
    assert pending(state) == [Decision(0, "order", (("places", ("forest", "card1")),))]


@pytest.mark.parametrize(("at", "resource", "amount"),
                         [("hunt", "food", 7), ("forest", "wood", 5), ("clay", "brick", 3),
                          ("quarry", "stone", 3), ("river", "gold", 2)])
def test_a_resource_place_rolls_a_die_per_person_and_yields_total_over_value(
        at, resource, amount):
    state = last_use(board(), board(), place=at, count=3, rng=rolling((6, 5, 4)))
    assert state.rng.dice(3)[0] == (6, 5, 4)
    after, events = apply(state, 1, order(at))
    assert events[:2] == [ev("dice_rolled", 1, place=at, dice=[6, 5, 4], total=15),
                          ev("resources_gained", 1, resource=resource, amount=amount,
                             place=at)]
    assert after.rng == state.rng.dice(3)[1]  # the state's RNG, one draw
    got = after.boards[1]
    if resource == "food":
        assert got.food == 12 + 7 - 5
    else:
        assert got.res[KINDS.index(resource)] == amount


def test_a_roll_below_the_value_yields_nothing():
    _, events = rolled("river", 1, (5,), board())
    assert events[:2] == [ev("dice_rolled", 1, place="river", dice=[5], total=5),
                          ev("resources_gained", 1, resource="gold", amount=0,
                             place="river")]


@pytest.mark.parametrize(("spec", "asked"), [
    (board(), False),
    (board(tools=(1,)), False),  # 16 // 3 = 5, as without
    (board(tools=(3,)), True),  # 18 // 3 = 6
    (board(spent=(3,)), False),  # used this round already
    (board(one_time=("S07",)), True),
    (board(tools=(1,), spent=(2, 2)), False),
])
def test_tools_are_asked_for_only_when_an_unused_tool_could_raise_the_yield(spec, asked):
    state, events = rolled("forest", 3, (6, 5, 4), spec)
    if asked:
        assert pending(state) == [Decision(1, "tools", (("place", "forest"),
                                                         ("resource", "wood"),
                                                         ("dice", (6, 5, 4))))]
        assert events == [ev("dice_rolled", 1, place="forest", dice=[6, 5, 4], total=15)]
    else:
        assert events[1] == ev("resources_gained", 1, resource="wood", amount=5,
                               place="forest")
        assert state.phase == "place"


def test_tools_may_be_any_set_of_the_unused_tools():
    state, _ = rolled("forest", 3, (6, 5, 3), board(tools=(2, 1), spent=(1,),
                                                    one_time=("S07",)))
    assert set(legal_actions(state, 1)) == {
        NO_TOOLS, tools("t2"), tools("t1"), tools("S07"), tools("t2", "t1"),
        tools("t2", "S07"), tools("t1", "S07"), tools("t2", "t1", "S07")}


def test_declining_tools_gains_the_plain_roll():
    state, _ = rolled("forest", 3, (6, 5, 3), board(tools=(2,)))
    state, events = apply(state, 1, NO_TOOLS)
    assert events[0] == ev("resources_gained", 1, resource="wood", amount=4, place="forest")
    assert state.boards[1].tools == (2,)


def test_a_tool_tile_is_used_whole_and_only_once_per_round():
    state = build(board(tools=(1,)), board(tools=(2, 2)), phase="use", start=1, turn=1,
                  spots=[("forest", 1, 3), ("clay", 1, 2), ("hunt", 0, 1), ("quarry", 0, 1)],
                  rng=rolling((6, 5, 3), (1, 2)))
    state, _ = apply(state, 1, order("forest", "clay"))
    state, events = apply(state, 1, tools("t2"))
    assert events[:3] == [
        ev("tools_added", 1, tiles=[2], one_time=[], added=2),
        ev("resources_gained", 1, resource="wood", amount=5, place="forest"),  # 16 // 3
        ev("dice_rolled", 1, place="clay", dice=[1, 2], total=3)]
    assert (state.boards[1].tools, state.boards[1].spent) == ((2,), (2,))
    assert set(legal_actions(state, 1)) == {NO_TOOLS, tools("t2")}
    state, events = apply(state, 1, tools("t2"))
    assert events[1] == ev("resources_gained", 1, resource="brick", amount=1, place="clay")
    assert (state.boards[1].tools, state.boards[1].spent) == ((), (2, 2))
    assert pending(state)[0] == Decision(0, "order", (("places", ("hunt", "quarry")),))


def test_tool_tiles_are_usable_again_next_round():
    state = last_use(board(), board(tools=(1,), spent=(2, 1)), place="card4")
    state, events = apply(state, 1, order("card4"))
    assert events[-1] == ev("round_started", round=3, start=1)
    assert (state.boards[1].tools, state.boards[1].spent) == ((2, 1, 1), ())


def test_a_one_time_tool_is_used_once_ever_and_its_card_kept():
    state, _ = rolled("forest", 3, (6, 5, 3), board(one_time=("S07",)))
    state, events = apply(state, 1, tools("S07"))
    assert events[:2] == [ev("tools_added", 1, tiles=[], one_time=[3], added=3),
                          ev("resources_gained", 1, resource="wood", amount=5,
                             place="forest")]  # 17 // 3
    assert state.phase == "place"  # next round
    assert state.boards[1].one_time == () and state.boards[1].cards == ("S07",)


def test_one_time_tools_and_tiles_add_up():
    state, _ = rolled("river", 2, (1, 1), board(tools=(4,), one_time=("S07", "S08")))
    state, events = apply(state, 1, tools("S08", "t4", "S07"))  # any order
    assert events[:2] == [ev("tools_added", 1, tiles=[4], one_time=[3, 2], added=9),
                          ev("resources_gained", 1, resource="gold", amount=1,
                             place="river")]  # 11 // 6


# --------------------------------------------------------------------------- village


STEPS = [((), (1,)), ((1,), (1, 1)), ((1, 1), (1, 1, 1)), ((1, 1, 1), (2, 1, 1)),
         ((2, 1, 1), (2, 2, 1)), ((2, 2, 1), (2, 2, 2)), ((2, 2, 2), (3, 2, 2)),
         ((3, 2, 2), (3, 3, 2)), ((3, 3, 2), (3, 3, 3)), ((3, 3, 3), (4, 3, 3)),
         ((4, 3, 3), (4, 4, 3)), ((4, 4, 3), (4, 4, 4))]


@pytest.mark.parametrize(("before", "after"), STEPS)
def test_the_tool_maker_gives_one_step_of_twelve(before, after):
    state = last_use(board(), board(tools=before))
    state, events = apply(state, 1, order("toolmaker"))
    assert events[0] == ev("tool_made", 1, tools=list(after))
    assert state.boards[1].tools == after


def test_twelve_tool_maker_steps_lead_from_nothing_to_three_tiles_of_four():
    tiles: tuple[int, ...] = ()
    for _ in range(12):
        state = last_use(board(), board(tools=tiles))
        state, _ = apply(state, 1, order("toolmaker"))
        tiles = state.boards[1].tools
    assert tiles == (4, 4, 4) and sum(tiles) == 12


def test_the_tool_maker_gives_nothing_beyond_three_tiles_of_four():
    state = last_use(board(), board(tools=(4, 4, 4)))
    state, events = apply(state, 1, order("toolmaker"))
    assert events[0] == ev("nothing_gained", 1, place="toolmaker", why="cap")
    assert state.boards[1].tools == (4, 4, 4)


def test_a_tool_step_raises_an_unused_tile_first():
    """Reading: with three tiles the lowest is raised, an unused one first."""
    state = build(board(wood=1, tools=(1,), spent=(2, 1)), board(), phase="use", turn=0,
                  civ=("G03",), spots=[("card1", 0, 1), ("forest", 0, 1)],
                  rng=rolling((1,)))
    state, _ = play(state, 0, order("card1", "forest"), take("wood"))
    assert (state.boards[0].tools, state.boards[0].spent) == ((2,), (2, 1))
    assert pending(state)[0].kind == "tools"  # 1 + 2 = 3 makes a Wood


def test_the_hut_adds_one_person():
    state = last_use(board(), board(), place="hut", count=2)
    state, events = apply(state, 1, order("hut"))
    assert events[0] == ev("person_born", 1, people=6)
    assert state.boards[1].people == 6
    assert state.boards[1].food == 12 - 6  # the new person eats at once


def test_the_hut_adds_nobody_beyond_ten_people():
    state = last_use(board(), board(people=10), place="hut", count=2)
    state, events = apply(state, 1, order("hut"))
    assert events[0] == ev("nothing_gained", 1, place="hut", why="cap")
    assert state.boards[1].people == 10


def test_the_field_raises_agriculture_by_one():
    state = last_use(board(), board(agriculture=4), place="field")
    state, events = apply(state, 1, order("field"))
    assert events[0] == ev("agriculture_raised", 1, agriculture=5)
    assert state.boards[1].agriculture == 5


def test_the_field_gives_nothing_beyond_agriculture_ten():
    state = last_use(board(), board(agriculture=10), place="field")
    state, events = apply(state, 1, order("field"))
    assert events[0] == ev("nothing_gained", 1, place="field", why="cap")
    assert state.boards[1].agriculture == 10


# --------------------------------------------------------------------------- cards


@pytest.mark.parametrize(("slot", "ways"), [(1, 4), (2, 10), (3, 20), (4, 35)])
def test_a_civilization_card_costs_its_position_in_resources_of_any_kinds(slot, ways):
    state, _ = at_card(board(wood=4, brick=4, stone=4, gold=4), slot)
    assert pending(state) == [Decision(0, "card", (("place", f"card{slot}"),))]
    found = pays(state, 0)
    assert sorted(found) == sorted(combinations_with_replacement(KINDS, slot))
    assert len(found) == ways
    assert legal_actions(state, 0)[-1] == DECLINE


def test_a_card_is_paid_with_building_resources_never_food():
    state, _ = at_card(board(food=20, wood=1, gold=1), 2)
    assert legal_actions(state, 0) == [take("wood", "gold"), DECLINE]


def test_a_card_the_player_cannot_pay_is_declined_without_asking():
    state = build(board(food=20, wood=1), board(), civ=("G01", "G07"), phase="use",
                  turn=0, spots=[("card2", 0, 1)])
    state, events = apply(state, 0, order("card2"))
    assert events[0] == ev("card_unaffordable", 0, slot=2, cost=2)
    assert state.civ[:2] == ("G01", "G07") and state.boards[0].food == 20 - 5


def test_taking_a_card_pays_its_cost_and_keeps_it_hidden():
    state, _ = at_card(board(wood=3, stone=1), 3, civ=("G01", "G02", "G07"))
    state, events = apply(state, 0, take("wood", "wood", "stone"))
    assert events[:3] == [ev("card_taken", 0, slot=3, paid=["wood", "wood", "stone"],
                             top="food"),
                          secret("card_kept", 0, card="G07"),
                          ev("resources_gained", 0, resource="food", amount=7,
                             place="card3")]
    got = state.boards[0]
    assert (got.res, got.cards, got.food) == ((1, 0, 0, 0), ("G07",), 12 + 7 - 5)


def test_declining_a_card_leaves_it_where_it_is():
    state, _ = at_card(board(wood=2), 2, civ=("G01", "G07"))
    pile = state.pile
    state, events = apply(state, 0, DECLINE)
    assert events[0] == ev("card_declined", 0, slot=2)
    assert state.civ[:2] == ("G01", "G07") and state.pile == pile
    assert state.boards[0].res == (2, 0, 0, 0) and state.boards[0].cards == ()


@pytest.mark.parametrize(("card", "effect", "changed"), [
    ("G07", ev("resources_gained", 0, resource="food", amount=7, place="card1"),
     {"food": 12 + 7 - 5}),
    ("G16", ev("resources_gained", 0, resource="food", amount=1, place="card1"),
     {"food": 12 + 1 - 5}),
    ("G11", ev("resources_gained", 0, resource="stone", amount=2, place="card1"),
     {"res": (0, 0, 2, 0)}),
    ("S17", ev("resources_gained", 0, resource="gold", amount=1, place="card1"),
     {"res": (0, 0, 0, 1)}),
    ("S19", ev("resources_gained", 0, resource="brick", amount=1, place="card1"),
     {"res": (0, 1, 0, 0)}),
    ("G13", ev("points_scored", 0, points=3), {"score": 3}),
    ("S15", ev("points_scored", 0, points=3), {"score": 3}),
    ("G09", ev("agriculture_raised", 0, agriculture=1), {"agriculture": 1, "food": 8}),
    ("S01", ev("agriculture_raised", 0, agriculture=1), {"agriculture": 1}),
    ("G03", ev("tool_made", 0, tools=[1]), {"tools": (1,)}),
    ("S06", secret("one_time_tool", 0, value=4), {"one_time": ("S06",)}),
    ("S07", secret("one_time_tool", 0, value=3), {"one_time": ("S07",)}),
    ("S08", secret("one_time_tool", 0, value=2), {"one_time": ("S08",)}),
    ("G02", ev("resources_of_choice", 0, amount=2), {"wild": 2}),
])
def test_a_card_gives_its_top_effect_at_once(card, effect, changed):
    state, _ = at_card(board(wood=1), 1, civ=(card,))
    state, events = apply(state, 0, take("wood"))
    assert events[:3] == [ev("card_taken", 0, slot=1, paid=["wood"],
                             top=DATA.cards[card].top),
                          secret("card_kept", 0, card=card), effect]
    got = state.boards[0]
    assert got.cards == (card,)
    for name, value in changed.items():
        assert getattr(got, name) == value, name


def test_two_dice_card_rolls_two_dice_for_its_resource():
    state, _ = at_card(board(wood=1), 1, civ=("G04",), rng=rolling((6, 5)))
    state, events = apply(state, 0, take("wood"))
    assert events[2:4] == [ev("dice_rolled", 0, place="card1", dice=[6, 5], total=11),
                           ev("resources_gained", 0, resource="gold", amount=1,
                              place="card1")]
    assert state.boards[0].res == (0, 0, 0, 1)


def test_two_dice_card_may_take_tools_after_the_roll():
    state, _ = at_card(board(wood=1, tools=(1,)), 1, civ=("G04",), rng=rolling((6, 5)))
    state, _ = apply(state, 0, take("wood"))
    assert pending(state) == [Decision(0, "tools", (("place", "card1"), ("resource", "gold"),
                                                    ("dice", (6, 5))))]
    state, events = apply(state, 0, tools("t1"))
    assert events[1] == ev("resources_gained", 0, resource="gold", amount=2, place="card1")
    assert state.boards[0].res == (0, 0, 0, 2)


def test_one_time_tools_may_be_added_to_the_two_dice_cards():
    state, _ = at_card(board(wood=1, one_time=("S07",)), 1, civ=("S20",),
                       rng=rolling((1, 1)))
    state, _ = apply(state, 0, take("wood"))
    assert tools("S07") in legal_actions(state, 0)
    state, events = apply(state, 0, tools("S07"))
    assert events[1] == ev("resources_gained", 0, resource="wood", amount=1, place="card1")
    assert state.boards[0].one_time == ()


def test_dice_for_all_is_picked_from_the_taker_clockwise():
    state = build(board(), board(wood=1, tools=(1, 1)), board(), civ=("G06",), start=1,
                  turn=1, phase="use", spots=[("card1", 1, 1)], rng=rolling((6, 5, 1)))
    state, events = play(state, 1, order("card1"), take("wood"))
    assert events[2] == ev("dice_for_all", 1, dice=[6, 5, 1])
    assert "dice_rolled" not in kinds(events)
    assert pending(state) == [Decision(1, "pick", (("dice", (6, 5, 1)),))]  # no tools
    assert legal_actions(state, 1) == [pick(1), pick(5), pick(6)]
    state, events = apply(state, 1, pick(5))
    assert events == [ev("die_picked", 1, face=5, gain="tool"), ev("tool_made", 1, tools=[1, 1, 1])]
    assert pending(state) == [Decision(2, "pick", (("dice", (6, 1)),))]
    state, events = apply(state, 2, pick(1))
    assert events[:3] == [ev("die_picked", 2, face=1, gain="wood"),
                          ev("die_picked", 0, face=6, gain="agriculture"),
                          ev("agriculture_raised", 0, agriculture=1)]
    assert state.boards[2].res == (1, 0, 0, 0)
    assert state.boards[0].agriculture == 1


@pytest.mark.parametrize(("face", "changed"), [
    (1, {"res": (1, 0, 0, 0)}), (2, {"res": (0, 1, 0, 0)}), (3, {"res": (0, 0, 1, 0)}),
    (4, {"res": (0, 0, 0, 1)}), (5, {"tools": (1,)}), (6, {"agriculture": 1})])
def test_dice_for_all_faces_give_wood_brick_stone_gold_a_tool_step_or_agriculture(
        face, changed):
    state, _ = at_card(board(wood=1), 1, civ=("S03",), rng=rolling((face, face)))
    state, events = apply(state, 0, take("wood"))
    assert [e for e in events if e.kind == "die_picked"] == [
        ev("die_picked", 0, face=face, gain=FACE_GAIN[face]),
        ev("die_picked", 1, face=face, gain=FACE_GAIN[face])]
    for seat in (0, 1):
        for name, value in changed.items():
            assert getattr(state.boards[seat], name) == value


def test_dice_for_all_with_equal_dice_left_is_given_out_without_asking():
    state, _ = at_card(board(wood=1), 1, board(), board(), civ=("G10",),
                       rng=rolling((2, 3, 3)))
    state, _ = apply(state, 0, take("wood"))
    assert legal_actions(state, 0) == [pick(2), pick(3)]
    state, events = apply(state, 0, pick(2))
    assert kinds(events)[:3] == ["die_picked"] * 3
    assert state.phase == "place"


def test_the_extra_card_is_drawn_face_down_and_only_its_bottom_scores():
    state, _ = at_card(board(wood=1), 1, civ=("G05",), pile=("G13", "G14"))
    state, events = apply(state, 0, take("wood"))
    assert events[:4] == [ev("card_taken", 0, slot=1, paid=["wood"], top="extra_card"),
                          secret("card_kept", 0, card="G05"),
                          ev("extra_card_drawn", 0, pile=31),
                          secret("card_kept", 0, card="G13", extra=True)]
    got = state.boards[0]
    assert got.cards == ("G05", "G13") and got.score == 0  # no 3 points from G13's top
    assert final_scores(state, 0)["culture"] == 4  # writing + music
    assert state.civ[3] == "G14"  # the pile's next card refills the space


def test_the_extra_card_from_an_empty_pile_gives_nothing():
    state, _ = at_card(board(wood=1), 1, civ=("G05",), rest=1)
    assert state.pile == ()
    state, events = apply(state, 0, take("wood"))
    assert events[2] == ev("nothing_gained", 0, place="card1", why="pile")
    assert state.boards[0].cards == ("G05",)


def test_resources_of_choice_pay_a_card_as_any_resource():
    state, _ = at_card(board(wood=1, wild=1), 2, civ=("G01", "G07"))
    assert set(pays(state, 0)) == {("wood", "wood"), ("wood", "brick"), ("wood", "stone"),
                                   ("wood", "gold")}
    state, _ = apply(state, 0, take("wood", "gold"))
    assert (state.boards[0].res, state.boards[0].wild) == ((0, 0, 0, 0), 0)


def test_resources_of_choice_pay_a_building():
    state, _ = at_building(board(wood=1, brick=1, wild=1), ("B07", "B01"))
    assert legal_actions(state, 0) == [build_("wood", "brick", "stone"), DECLINE]
    state, events = apply(state, 0, build_("wood", "brick", "stone"))
    assert events[0].data["points"] == 12
    assert (state.boards[0].res, state.boards[0].wild) == ((0, 0, 0, 0), 0)


def test_resources_of_choice_may_be_kept_for_later():
    state, _ = at_card(board(wood=1), 1, civ=("G02",))
    state, _ = apply(state, 0, take("wood"))
    assert state.phase == "place" and state.boards[0].wild == 2


def test_resources_of_choice_feed_people():
    state = last_use(board(), board(food=3, wild=2))
    state, _ = apply(state, 1, order("toolmaker"))
    assert pending(state) == [Decision(1, "feed", (("short", 2),))]
    state, events = apply(state, 1, feed("gold", "wood"))
    assert events[0] == ev("people_fed_with_resources", 1, paid=["wood", "gold"])
    assert state.boards[1].wild == 0 and state.boards[1].score == 0


def test_resources_of_choice_score_one_point_each_at_the_end():
    state = build(board(wild=2, wood=1), board())
    assert final_scores(state, 0)["resources"] == 3
    assert final_scores(state, 0)["total"] == 3


# --------------------------------------------------------------------------- buildings


def test_a_fixed_cost_building_is_paid_exactly_and_scored_at_once():
    state, _ = at_building(board(wood=2, brick=2, stone=2, gold=1), ("B07", "B01"))
    assert pending(state) == [Decision(0, "build", (("place", "building1"),))]
    assert legal_actions(state, 0) == [build_("wood", "brick", "stone"), DECLINE]
    state, events = apply(state, 0, build_("stone", "wood", "brick"))
    assert events[0] == ev("building_built", 0, stack=1, tile="B07",
                           paid=["wood", "brick", "stone"], points=12, left=1)
    got = state.boards[0]
    assert (got.score, got.res, got.buildings) == (12, (1, 1, 1, 1), ("B07",))


def test_the_next_building_tile_turns_up():
    state, _ = at_building(board(wood=1, brick=1, stone=1), ("B07", "B01", "B02"))
    state, _ = apply(state, 0, build_("wood", "brick", "stone"))
    assert state.stacks[0] == ("B01", "B02")
    assert view(state, 1)["buildings"][0] == {
        "stack": 1, "left": 2,
        "top": {"id": "B01", "kind": "fixed", "points": 10,
                "cost": {"wood": 2, "brick": 1, "stone": 0, "gold": 0}}}


def test_a_building_the_player_cannot_pay_is_declined_without_asking():
    state, events = at_building(board(wood=1, brick=1, gold=3), ("B07", "B01"))
    assert events[0] == ev("building_unaffordable", 0, stack=1, tile="B07")
    assert state.stacks[0] == ("B07", "B01") and state.boards[0].score == 0


def test_declining_a_building_keeps_the_tile_on_top():
    state, _ = at_building(board(wood=1, brick=1, stone=1), ("B07", "B01"))
    state, events = apply(state, 0, DECLINE)
    assert events[0] == ev("building_declined", 0, stack=1, tile="B07")
    assert state.stacks[0] == ("B07", "B01") and state.boards[0].res == (1, 1, 1, 0)


def test_n_resources_of_exactly_k_kinds_offers_only_k_kinds():
    state, _ = at_building(board(wood=3, brick=2, stone=2, gold=2), ("B19",))
    found = pays(state, 0)
    assert found and all(len(p) == 4 and len(set(p)) == 2 for p in found)
    assert ("wood", "wood", "wood", "brick") in found
    assert ("wood", "brick", "stone", "gold") not in found
    state, events = apply(state, 0, build_("brick", "wood", "wood", "wood"))
    assert events[0].data["points"] == 3 * 3 + 4
    assert state.boards[0].score == 13


@pytest.mark.parametrize(("tile", "spec"), [
    ("B19", board(wood=5)),  # 4 of 2 kinds with 1 kind
    ("B20", board(wood=2, brick=2)),  # 4 of 3 kinds with 2 kinds
    ("B21", board(wood=2, brick=2, stone=2)),  # 4 of 4 kinds with 3 kinds
    ("B24", board(wood=3, gold=3)),  # 5 of 3 kinds with 2 kinds
    ("B25", board(wood=2, brick=2, gold=2)),  # 5 of 4 kinds with 3 kinds
])
def test_n_resources_of_exactly_k_kinds_is_refused_with_k_minus_one_kinds(tile, spec):
    state, events = at_building(spec, (tile,))
    assert events[0] == ev("building_unaffordable", 0, stack=1, tile=tile)
    assert state.boards[0].buildings == ()


def test_n_resources_of_one_kind_takes_n_of_the_same():
    state, _ = at_building(board(wood=2, gold=5), ("B22",))
    assert legal_actions(state, 0) == [build_("gold", "gold", "gold", "gold", "gold"),
                                       DECLINE]
    state, events = apply(state, 0, build_(*["gold"] * 5))
    assert events[0].data["points"] == 30


def test_one_to_seven_resources_of_any_kinds_scores_the_values_paid():
    state, _ = at_building(board(wood=1, stone=1, gold=2), ("B26",))
    assert len(pays(state, 0)) == 2 * 2 * 3 - 1  # every non-empty part of what he has
    state, events = apply(state, 0, build_("gold", "stone", "gold"))
    assert events[0] == ev("building_built", 0, stack=1, tile="B26",
                           paid=["stone", "gold", "gold"], points=17, left=0)
    assert state.boards[0].score == 17 and state.boards[0].res == (1, 0, 0, 0)


def test_one_to_seven_resources_takes_at_most_seven():
    state, _ = at_building(board(wood=9), ("B27",))
    assert [len(p) for p in pays(state, 0)] == [1, 2, 3, 4, 5, 6, 7]


# --------------------------------------------------------------------------- feeding


def test_feeding_adds_agriculture_to_food_first():
    state = last_use(board(food=2, agriculture=3), board(), place="card4")
    state, events = apply(state, 1, order("card4"))
    assert events[1:3] == [ev("harvest", 0, food=3), ev("people_fed", 0, food=5)]
    assert state.boards[0].food == 0 and state.boards[0].score == 0


def test_each_person_eats_one_food():
    state = last_use(board(people=7), board(food=20), place="card4")
    state, _ = apply(state, 1, order("card4"))
    assert (state.boards[0].food, state.boards[1].food) == (12 - 7, 20 - 5)


def test_food_short_spends_all_food_then_resources_of_the_players_choice():
    state = last_use(board(food=3, wood=1, brick=1, gold=1), board(), place="card4")
    state, events = apply(state, 1, order("card4"))
    assert ev("food_short", 0, food=3, short=2) in events
    assert pending(state) == [Decision(0, "feed", (("short", 2),))]
    assert legal_actions(state, 0) == [feed("wood", "brick"), feed("wood", "gold"),
                                       feed("brick", "gold"), STARVE]
    state, events = apply(state, 0, feed("gold", "wood"))
    assert events[0] == ev("people_fed_with_resources", 0, paid=["wood", "gold"])
    got = state.boards[0]
    assert (got.food, got.res, got.score) == (0, (0, 1, 0, 0), 0)


def test_no_feed_decision_when_food_is_enough():
    state = last_use(board(food=5, wood=3), board(), place="card4")
    state, events = apply(state, 1, order("card4"))
    assert "food_short" not in kinds(events) and state.phase == "place"
    assert state.boards[0].res == (3, 0, 0, 0)


@pytest.mark.parametrize(("score", "after"), [(0, -10), (3, -7), (25, 15)])
def test_a_player_who_will_not_pay_loses_ten_points_even_below_zero(score, after):
    state = last_use(board(food=3, wood=4, score=score), board(), place="card4")
    state, _ = apply(state, 1, order("card4"))
    state, events = apply(state, 0, STARVE)
    assert events[0] == ev("people_starved", 0, short=2, points=-10)
    assert state.boards[0].score == after and state.boards[0].res == (4, 0, 0, 0)


def test_food_short_without_enough_resources_loses_ten_points_and_keeps_the_resources():
    state = last_use(board(food=1, wood=2, wild=1, score=4), board(), place="card4")
    state, events = apply(state, 1, order("card4"))
    assert events[1:3] == [ev("food_short", 0, food=1, short=4),
                           ev("people_starved", 0, short=4, points=-10)]
    got = state.boards[0]
    assert (got.score, got.food, got.res, got.wild) == (-6, 0, (2, 0, 0, 0), 1)
    assert state.phase == "place"


def test_several_players_are_asked_to_feed_at_once():
    state = last_use(board(food=4, stone=1), board(food=0, gold=5), board(), place="card4")
    state, _ = apply(state, 2, order("card4"))
    assert pending(state) == [Decision(0, "feed", (("short", 1),)),
                              Decision(1, "feed", (("short", 5),))]
    state, _ = apply(state, 1, feed(*["gold"] * 5))
    assert pending(state) == [Decision(0, "feed", (("short", 1),))]
    state, events = apply(state, 0, feed("stone"))
    assert events[-1] == ev("round_started", round=3, start=1)


# --------------------------------------------------------------------------- round end


@pytest.mark.parametrize(("players", "start", "after"), [(2, 0, 1), (2, 1, 0), (3, 2, 0),
                                                         (4, 1, 2), (4, 3, 0)])
def test_the_start_player_passes_clockwise(players, start, after):
    specs = [board() for _ in range(players)]
    state = last_use(*specs, start=start, place="card4")
    state, events = apply(state, (start - 1) % players, order("card4"))
    assert events[-1] == ev("round_started", round=3, start=after)
    assert (state.start, state.round, state.phase) == (after, 3, "place")
    assert pending(state) == [Decision(after, "place", (("home", 5),))]


def test_remaining_cards_slide_toward_the_cheap_end_and_are_refilled():
    state = last_use(board(), board(), place="card4", civ=(None, "G01", None, "G02"),
                     pile=("S01", "S02", "S03"))
    state, events = apply(state, 1, order("card4"))
    assert state.civ == ("G01", "G02", "S01", "S02")
    assert state.pile[0] == "S03" and len(state.pile) == 32
    assert ev("cards_refilled", new=2, pile=32) in events


def test_no_refill_when_no_card_was_taken():
    state = last_use(board(), board(), place="card4", civ=("G01", "G02", "G03", "G04"))
    pile = state.pile
    state, events = apply(state, 1, order("card4"))
    assert "cards_refilled" not in kinds(events)
    assert state.civ == ("G01", "G02", "G03", "G04") and state.pile == pile


def test_the_game_goes_on_while_the_card_spaces_can_just_be_refilled():
    state = last_use(board(), board(), place="card4", civ=("G01", None, "G03", "G04"),
                     pile=("S01",), rest=0)
    state, _ = apply(state, 1, order("card4"))
    assert state.civ == ("G01", "G03", "G04", "S01") and state.pile == ()
    assert state.phase == "place" and result(state) is None


def test_the_game_ends_when_the_card_spaces_cannot_all_be_refilled():
    state = last_use(board(), board(), place="card4", civ=("G01", None, None, "G04"),
                     pile=("S01",), rest=0)
    state, events = apply(state, 1, order("card4"))
    assert events[-1].kind == "game_ended" and events[-1].data["why"] == "cards"
    assert state.phase == "over" and result(state) is not None
    assert result(state).reason == "cards"
    assert pending(state) == []


def test_a_building_stack_running_empty_ends_the_game_after_that_rounds_feeding():
    state = build(board(wood=1, brick=1, stone=1), board(food=0, gold=5), phase="use",
                  turn=0, stacks=(("B07",), None),
                  spots=[("building1", 0, 1), ("toolmaker", 1, 1)])
    state, _ = apply(state, 0, order("building1"))
    state, events = apply(state, 0, build_("wood", "brick", "stone"))
    assert state.stacks[0] == ()
    assert events[1] == ev("tool_made", 1, tools=[1])  # the round goes on
    assert state.phase == "feed" and result(state) is None
    assert pending(state) == [Decision(1, "feed", (("short", 5),))]
    state, events = apply(state, 1, feed(*["gold"] * 5))
    assert events[-1].kind == "game_ended" and events[-1].data["why"] == "buildings"
    assert events[-1].data["round"] == 2
    assert result(state) == Result((0,), "buildings")


def test_nothing_can_be_played_once_the_game_is_over():
    state = ending(board(), board())
    state, _ = apply(state, 1, order("card4"))
    assert pending(state) == []
    with pytest.raises(GameOver):
        apply(state, 0, place("hunt", 5))
    with pytest.raises(GameOver):
        legal_actions(state, 0)


def test_a_seat_without_an_open_decision_is_refused():
    state = build(board(), board())
    with pytest.raises(NotYourTurn):
        apply(state, 1, place("hunt", 5))


# --------------------------------------------------------------------------- scoring


@pytest.mark.parametrize(("cards", "sets", "culture"), [
    ((), [], 0),
    (("G01",), [1], 1),
    (("G01", "G03", "G05"), [3], 9),
    (("G01", "G02"), [1, 1], 2),
    (("G01", "G02", "G03", "G05"), [3, 1], 10),
    (("G13", "G14", "G15", "G16", "G09"), [3, 2], 13),
    (tuple(c for c in CARD_IDS if c.startswith("G")), [8, 8], 128),
])
def test_culture_cards_score_each_set_of_different_symbols_squared(cards, sets, culture):
    state = build(board(cards=cards), board())
    got = final_scores(state, 0)
    assert (sorted(got["culture_sets"], reverse=True), got["culture"]) == (sets, culture)
    assert got["total"] == culture


@pytest.mark.parametrize(("cards", "spec", "figure", "points"), [
    (("S04",), {"agriculture": 3}, "farmer", 6),
    (("S01", "S04"), {"agriculture": 5}, "farmer", 15),
    (("S09",), {"tools": (2,), "spent": (2, 1)}, "toolmaker", 10),
    (("S15",), {"buildings": ("B01", "B02")}, "hutbuilder", 6),
    (("S19",), {"people": 7}, "shaman", 14),
])
def test_figures_multiply_agriculture_tool_value_buildings_and_people(cards, spec, figure,
                                                                     points):
    state = build(board(cards=cards, **spec), board())
    got = final_scores(state, 0)
    assert got["multipliers"][figure]["points"] == points
    assert got["total"] == points


def test_one_time_tools_do_not_count_as_tool_value():
    state = build(board(cards=("S09",), one_time=("S06",)), board())
    assert final_scores(state, 0)["multipliers"]["toolmaker"]["points"] == 0


def test_each_resource_left_scores_one_point_and_food_none():
    state = build(board(food=9, wood=1, brick=2, stone=3, gold=4, score=5), board())
    got = final_scores(state, 0)
    assert (got["points"], got["resources"], got["total"]) == (5, 10, 15)


def test_the_worked_example_of_the_manual():
    """Six different culture symbols with two doubled score 36 + 4 = 40; 1 farmer x
    agriculture 6 = 6; 5 shamans x 7 people = 35; 5 hut builders x 5 buildings = 25;
    2 tool makers x 4 tool value = 8."""
    culture = ("G01", "G02", "G03", "G04", "G05", "G07", "G09", "G11")
    figures = ("S02", "S16", "S17", "S18", "S19", "S13", "S15", "S08")
    state = build(board(people=7, agriculture=6, tools=(2, 1, 1), cards=culture + figures,
                        buildings=("B01", "B02", "B03", "B04", "B05")), board())
    got = final_scores(state, 0)
    assert sorted(got["culture_sets"], reverse=True) == [6, 2]
    assert got["culture"] == 40
    assert {k: (v["figures"], v["times"], v["points"]) for k, v in got["multipliers"].items()
            } == {"farmer": (1, 6, 6), "shaman": (5, 7, 35), "hutbuilder": (5, 5, 25),
                  "toolmaker": (2, 4, 8)}
    assert got["total"] == 40 + 6 + 35 + 25 + 8


def test_final_scores_are_given_when_the_game_ends():
    state = ending(board(score=30, wood=2, cards=("G01", "G03")), board(score=31))
    state, events = apply(state, 1, order("card4"))
    end = events[-1]
    assert end.kind == "game_ended" and end.data["winners"] == [0]
    assert [(s["seat"], s["total"]) for s in end.data["scores"]] == [(0, 30 + 4 + 2), (1, 31)]
    assert result(state) == Result((0,), "buildings")


def test_a_tie_is_broken_by_agriculture_plus_tool_value_plus_people():
    state = ending(board(score=20, agriculture=2), board(score=20, tools=(1, 1, 1)))
    state, events = apply(state, 1, order("card4"))
    assert [s["tiebreak"] for s in events[-1].data["scores"]] == [2 + 0 + 5, 0 + 3 + 5]
    assert result(state) == Result((1,), "buildings")


def test_a_tie_after_the_tie_break_is_a_shared_win():
    state = ending(board(score=20, agriculture=1), board(score=20, people=6))
    state, _ = apply(state, 1, order("card4"))
    assert result(state) == Result((0, 1), "buildings")
    assert state.winners == (0, 1)


# --------------------------------------------------------------------------- hidden info


def test_a_seats_cards_and_one_time_tools_appear_only_in_its_own_view():
    state = build(board(cards=("G01",), one_time=("S07",)), board(cards=("G13",)))
    mine = view(state, 0)["boards"][0]
    assert [c["id"] for c in mine["cards"]] == ["G01", "S07"]
    assert mine["one_time"] == [{"card": "S07", "value": 3}]
    for seat in (1, None):
        theirs = view(state, seat)["boards"][0]
        assert "cards" not in theirs and "one_time" not in theirs
        assert theirs["cards_held"] == 2
        text = json.dumps(view(state, seat))
        assert "G01" not in text and "S07" not in text


def test_the_card_pile_is_hidden_from_everybody():
    state = build(board(), board(), civ=("G01", "G02", "G03", "G04"))
    for seat in (0, 1, None):
        seen = view(state, seat)
        assert seen["card_pile"] == 32
        text = json.dumps(seen)
        assert not any(f'"{c}"' in text for c in state.pile)


def test_every_card_is_shown_at_the_end():
    state = ending(board(cards=("G01",), one_time=("S07",)), board())
    state, _ = apply(state, 1, order("card4"))
    theirs = view(state, 1)["boards"][0]
    assert [c["id"] for c in theirs["cards"]] == ["G01", "S07"]
    assert view(state, None)["boards"][0]["one_time"] == [{"card": "S07", "value": 3}]


def test_events_naming_a_taken_card_are_told_only_to_its_owner():
    state, _ = at_card(board(wood=1), 1, civ=("S07",))
    _, events = apply(state, 0, take("wood"))
    private = [e for e in events if not e.is_visible_to(1)]
    assert private == [secret("card_kept", 0, card="S07"), secret("one_time_tool", 0, value=3)]
    assert all("S07" not in json.dumps(e.to_json()) for e in events if e.is_visible_to(1))


def test_the_extra_card_is_told_only_to_its_owner():
    state, _ = at_card(board(wood=1), 1, civ=("G05",), pile=("G13",))
    _, events = apply(state, 0, take("wood"))
    assert [e for e in events if "G13" in json.dumps(e.to_json())] == [
        secret("card_kept", 0, card="G13", extra=True)]


# --------------------------------------------------------------------------- caps


@pytest.mark.parametrize(("card", "spec", "field", "value"), [
    ("G03", board(wood=1, tools=(4, 4, 4)), "tools", (4, 4, 4)),
    ("G09", board(wood=1, agriculture=10), "agriculture", 10),
    ("S01", board(wood=1, agriculture=10), "agriculture", 10),
])
def test_a_card_effect_beyond_a_cap_is_lost(card, spec, field, value):
    state, _ = at_card(spec, 1, civ=(card,))
    state, events = apply(state, 0, take("wood"))
    assert events[2].kind == "nothing_gained" and events[2].data["why"] == "cap"
    assert getattr(state.boards[0], field) == value


@pytest.mark.parametrize(("face", "spec", "field", "value"), [
    (6, board(wood=1, agriculture=10), "agriculture", 10),
    (5, board(wood=1, tools=(4, 4, 4)), "tools", (4, 4, 4)),
])
def test_a_dice_for_all_gain_beyond_a_cap_is_lost(face, spec, field, value):
    state, _ = at_card(spec, 1, civ=("G08",), rng=rolling((face, face)))
    state, events = apply(state, 0, take("wood"))
    assert ev("die_picked", 0, face=face, gain=FACE_GAIN[face]) in events
    assert [e.data["why"] for e in events if e.kind == "nothing_gained"] == ["cap"]
    assert getattr(state.boards[0], field) == value


AT_LIMIT = [("hut", 2, board(people=10)), ("field", 1, board(agriculture=10)),
            ("toolmaker", 1, board(tools=(4, 4, 4)))]


@pytest.mark.parametrize(("at", "count", "spec"), AT_LIMIT)
def test_a_player_at_a_limit_may_still_place_on_that_village_place(at, count, spec):
    """Ruling: the manual limits how many people a place takes, not who may stand where
    nothing can be gained; the people gain nothing there."""
    state = build(spec, board())
    assert counts_at(state, 0, at) == [count]
    state, events = apply(state, 0, place(at, count))
    assert events[0] == ev("people_placed", 0, place=at, count=count)
    state, events = apply(last_use(board(), spec, place=at, count=count), 1, order(at))
    assert events[0] == ev("nothing_gained", 1, place=at, why="cap")


@pytest.mark.parametrize(("at", "count", "spec"), AT_LIMIT)
@pytest.mark.parametrize("players", [2, 4])
def test_people_at_a_limit_still_keep_the_village_place_from_the_others(at, count, spec,
                                                                        players):
    state = build(spec, *(board() for _ in range(players - 1)))
    state, _ = apply(state, 0, place(at, count))
    assert at not in places_of(state, 1)


@pytest.mark.parametrize(("at", "count", "spec"), AT_LIMIT)
def test_the_choice_of_a_village_place_at_the_limit_says_it_brings_nothing(at, count, spec):
    state = build(spec, board())
    assert choice_effect(state, 0, place(at, count)) == {"gain": "nothing"}
    gain = {"hut": "people", "field": "agriculture", "toolmaker": "tool"}[at]
    assert choice_effect(state._replace(turn=1), 1, place(at, count)) == {"gain": gain}


def test_the_heuristic_bot_at_every_limit_sends_nobody_to_the_village():
    state = build(board(people=10, agriculture=10, tools=(4, 4, 4)), board())
    chosen = []
    while state.phase == "place":
        seat = pending(state)[0].seat
        action = (BOTS["heuristic"](state, 0, random.Random(len(chosen))) if seat == 0
                  else default_action(state, 1))
        chosen += [action.get("at")] if seat == 0 else []
        state, _ = apply(state, seat, action)
    assert chosen and not set(chosen) & set(VILLAGE)


# --------------------------------------------------------------------------- timeouts


def test_default_placement_sends_half_the_people_at_home_to_the_hunting_grounds():
    state = build(board(), board())  # 12 Food feed the 5 people: nothing is short
    assert default_action(state, 0) == place("hunt", 3)


def test_default_placement_sends_the_hunters_the_coming_feeding_lacks():
    # 7 people, 1 Food and agriculture 1 leave 5 Food missing: 3 dice catch about 5
    state = build(board(people=7, food=1, agriculture=1), board())
    assert default_action(state, 0) == place("hunt", 3)


def test_default_placement_for_a_large_shortfall_hunts_with_everyone_at_home():
    state = build(board(people=7, food=0), board(), spots=[("forest", 0, 4)], turn=0)
    assert default_action(state, 0) == place("hunt", 3)


def test_default_placement_after_hunting_sends_half_to_the_first_open_resource_place():
    state = build(board(), board(), spots=[("hunt", 0, 2), ("forest", 1, 3)], turn=0)
    assert default_action(state, 0) == place("clay", 2)


def test_default_placement_never_sends_more_than_fit():
    state = build(board(people=10), board(), board(), board(), turn=0,
                  spots=[("hunt", 0, 1), ("forest", 1, 3), ("forest", 2, 3)])
    assert default_action(state, 0) == place("forest", 1)


def test_default_placement_with_one_person_at_home_places_that_person():
    state = build(board(), board(), spots=[("hunt", 0, 4)], turn=0)
    assert default_action(state, 0) == place("forest", 1)


def test_default_placements_spread_a_tribe_over_several_places():
    state = build(board(), board())
    places = []
    while state.phase == "place" and state.round == 2:
        seat = state.turn
        action = default_action(state, seat)
        if seat == 0:
            places.append((action.get("at"), action.get("count")))
        state, _ = apply(state, seat, action)
    # with 2 players one colour per resource place: the other seat took the Clay pit
    assert places == [("hunt", 3), ("forest", 1), ("quarry", 1)]


def test_default_placement_with_every_resource_place_closed_takes_the_first_legal_place():
    state = build(board(people=6), board(), turn=0,
                  spots=[("hunt", 0, 1), ("forest", 1, 1), ("clay", 1, 1), ("quarry", 1, 1),
                         ("river", 1, 1)])
    assert default_action(state, 0) == legal_actions(state, 0)[0] == place("toolmaker")


def _village_and_card1_taken(wood: int):
    """Two players; seat 0 with 3 people at home, every resource place and two village
    places (all that two players may use) and card 1 taken, the first building tile
    "1 to 7 resources of any kinds"."""
    return build(board(people=6, wood=wood), board(), turn=0, stacks=[("B26",), None],
                 spots=[("hunt", 0, 1), ("forest", 1, 1), ("clay", 1, 1), ("quarry", 1, 1),
                        ("river", 1, 1), ("toolmaker", 1, 1), ("field", 0, 1),
                        ("card1", 0, 1)])


def test_default_placement_passes_over_cards_the_seat_cannot_pay_for():
    state = _village_and_card1_taken(wood=1)
    assert legal_actions(state, 0)[0] == place("card2")
    assert default_action(state, 0) == place("building1")  # one Wood pays it


def test_default_placement_with_nothing_payable_takes_the_first_legal_place():
    state = _village_and_card1_taken(wood=0)
    assert default_action(state, 0) == legal_actions(state, 0)[0] == place("card2")


def test_default_order_rolls_the_most_valuable_resource_first():
    state = build(board(tools=(1,)), board(), phase="use", turn=0,
                  spots=[("hunt", 0, 1), ("forest", 0, 2), ("river", 0, 1)])
    assert default_action(state, 0) == order("river", "forest", "hunt")


@pytest.mark.parametrize(("at", "faces", "spec", "chosen"), [
    # 14 + 1 makes 5 Wood, as 14 + 2 and 14 + 3 would
    ("forest", (6, 5, 3), board(tools=(2, 1)), tools("t1")),
    # 14 + 4 makes 6 Wood, as 14 + 5 would
    ("forest", (6, 5, 3), board(tools=(2, 2, 1)), tools("t2", "t2")),
    # 13 + 2 makes 5 Wood either way: the tile, keeping the one-time tool
    ("forest", (6, 5, 2), board(tools=(2,), one_time=("S08",)), tools("t2")),
    # 15 + 3 makes 3 Gold, as 15 + 5 would; 15 + 2 only 2
    ("river", (6, 5, 4), board(one_time=("S07", "S08")), tools("S07")),
    # 16 + 2 makes 3 Gold, as 16 + 3 would: the least tool value comes first
    ("river", (6, 6, 4), board(tools=(3,), one_time=("S08",)), tools("S08")),
])
def test_default_tools_are_the_smallest_set_reaching_the_highest_yield(at, faces, spec,
                                                                       chosen):
    state, _ = rolled(at, 3, faces, spec)
    assert default_action(state, 1) == chosen
    assert chosen in legal_actions(state, 1)


def test_default_card_payment_uses_the_least_valuable_resources():
    state, _ = at_card(board(wood=1, brick=1, gold=2), 2)
    assert default_action(state, 0) == take("wood", "brick")


def test_default_building_payment_is_worth_the_most_points():
    state, _ = at_building(board(wood=1, stone=1, gold=2), ("B26",))
    assert default_action(state, 0) == build_("wood", "stone", "gold", "gold")


@pytest.mark.parametrize(("spec", "face"), [
    (board(wood=1), 6),
    (board(wood=1, agriculture=10), 5),
    (board(wood=1, agriculture=10, tools=(4, 4, 4)), 1),
])
def test_default_pick_is_the_first_die_that_still_helps(spec, face):
    state, _ = at_card(spec, 1, board(), board(), civ=("S05",), rng=rolling((6, 5, 1)))
    state, _ = apply(state, 0, take("wood"))
    assert default_action(state, 0) == pick(face)


def test_default_feeding_pays_with_the_least_valuable_resources():
    state = last_use(board(food=3, brick=1, wood=1, gold=1), board(), place="card4")
    state, _ = apply(state, 1, order("card4"))
    assert default_action(state, 0) == feed("wood", "brick")


def test_default_actions_are_legal_throughout_random_games():
    seen: Counter[str] = Counter()
    for seed in range(2):
        chooser = random.Random(seed)
        state = setup(names(3), seed)
        for _ in range(5000):
            decisions = pending(state)
            if not decisions:
                break
            d = decisions[0]
            legal = legal_actions(state, d.seat)
            assert default_action(state, d.seat) in legal
            seen[d.kind] += 1
            state, _ = apply(state, d.seat, chooser.choice(legal))
            check_invariants(state)
        assert result(state) is not None
    assert {"place", "order", "card", "build"} <= set(seen)


# --------------------------------------------------------------------------- notation


def _decision_states():
    """One state per decision kind."""
    place_state = build(board(), board())
    order_state = build(board(tools=(1,)), board(), phase="use", turn=0,
                        spots=[("forest", 0, 2), ("hunt", 0, 1)])
    tools_state, _ = rolled("forest", 3, (6, 5, 3), board(tools=(2, 1), one_time=("S07",)))
    card_state, _ = at_card(board(wood=2, brick=1, gold=1), 3)
    build_state, _ = at_building(board(wood=1, stone=1, gold=2), ("B26",))
    pick_state, _ = at_card(board(wood=1), 1, board(), board(), civ=("S05",),
                            rng=rolling((6, 5, 1)))
    pick_state, _ = apply(pick_state, 0, take("wood"))
    feed_state = last_use(board(food=2, brick=2, wood=1, gold=1), board(), place="card4")
    feed_state, _ = apply(feed_state, 1, order("card4"))
    return {"place": (place_state, 0), "order": (order_state, 0), "tools": (tools_state, 1),
            "card": (card_state, 0), "build": (build_state, 0), "pick": (pick_state, 0),
            "feed": (feed_state, 0)}


DECISION_STATES = _decision_states()


@pytest.mark.parametrize("kind", list(DECISION_STATES))
def test_every_default_action_kind_is_legal(kind):
    state, seat = DECISION_STATES[kind]
    assert pending(state)[0].kind == kind
    assert default_action(state, seat) in legal_actions(state, seat)


@pytest.mark.parametrize("kind", list(DECISION_STATES))
def test_every_action_reads_back_from_its_notation(kind):
    state, seat = DECISION_STATES[kind]
    legal = legal_actions(state, seat)
    for action in legal:
        assert parse_action(format_action(action), legal) == action
        assert parse_action(format_action(action).upper(), legal) == action


def test_the_notation_of_each_action_kind():
    formatted = {format_action(a) for kind in DECISION_STATES
                 for a in legal_actions(*DECISION_STATES[kind])}
    assert {"place hunt 5", "place toolmaker 1", "order hunt forest", "no_tools", "tools t2 S07",
            "take wood brick gold", "decline", "build wood stone gold gold", "pick 6",
            "feed wood brick brick", "starve"} <= formatted


@pytest.mark.parametrize(("kind", "typed", "meant"), [
    ("card", ("gold", "brick", "wood"), ("wood", "brick", "gold")),
    ("build", ("gold", "wood", "gold", "stone"), ("wood", "stone", "gold", "gold")),
    ("feed", ("brick", "gold", "brick"), ("brick", "brick", "gold")),
])
def test_payments_in_any_order_are_accepted_by_apply(kind, typed, meant):
    state, seat = DECISION_STATES[kind]
    name = {"card": "take", "build": "build", "feed": "feed"}[kind]
    one, e1 = apply(state, seat, Action.of(name, pay=typed))
    two, e2 = apply(state, seat, Action.of(name, pay=meant))
    assert one == two and e1 == e2


def test_tools_in_any_order_are_accepted_by_apply():
    state, seat = DECISION_STATES["tools"]
    assert apply(state, seat, tools("S07", "t1")) == apply(state, seat, tools("t1", "S07"))


@pytest.mark.parametrize(("kind", "text", "meant"), [
    ("card", "take gold brick wood", take("wood", "brick", "gold")),
    ("build", "build gold wood gold stone", build_("wood", "stone", "gold", "gold")),
    ("feed", "feed gold brick brick", feed("brick", "brick", "gold")),
    ("tools", "tools S07 t2", tools("t2", "S07")),
])
def test_payments_typed_in_any_order_are_read(kind, text, meant):
    state, seat = DECISION_STATES[kind]
    assert parse_action(text, legal_actions(state, seat)) == meant


def test_a_mid_game_state_survives_json():
    state, seat = DECISION_STATES["pick"]
    assert from_json(json.loads(json.dumps(to_json(state)))) == state


# --------------------------------------------------------------------------- words of a choice


def test_a_resource_place_names_its_dice_and_average_yield():
    state = build(board(), board())
    assert choice_effect(state, 0, place("hunt", 3)) == {
        "dice": 3, "resource": "food", "per": 2, "about": 5}
    assert choice_effect(state, 0, place("river", 5))["about"] == 2


@pytest.mark.parametrize(("wood", "affordable"), [(1, False), (2, True)])
def test_a_card_place_says_whether_the_seat_can_pay_for_it_now(wood, affordable):
    state = build(board(wood=wood), board(), civ=("G07", "G13", "G09", "G11"))
    assert choice_effect(state, 0, place("card2")) == {
        "card": "G13", "cost": 2, "have": wood, "affordable": affordable}


def test_resources_of_choice_count_towards_paying_for_a_card():
    state = build(board(wood=1, wild=2), board(), civ=("G07", "G13", "G09", "G11"))
    assert choice_effect(state, 0, place("card3"))["affordable"] is True


@pytest.mark.parametrize(("res", "affordable"), [
    ({"wood": 2, "brick": 1}, True), ({"wood": 1, "brick": 1, "stone": 3}, False)])
def test_a_building_place_says_whether_the_seat_can_pay_its_cost_now(res, affordable):
    state = build(board(**res), board(), stacks=[("B01",), None])
    assert choice_effect(state, 0, place("building1")) == {
        "building": "B01", "have": sum(res.values()), "affordable": affordable}


def test_a_placement_link_offers_each_number_of_people_the_place_takes():
    state = build(board(), board(), board(), spots=[("forest", 1, 5)], turn=0)
    counts = [a.get("count") for a in choice_variants(state, 0, place("forest", 2))]
    assert counts == [1, 2]  # 7 places, 5 taken
    assert [a.get("count") for a in choice_variants(state, 0, place("hunt", 5))] == [
        1, 2, 3, 4, 5]


@pytest.mark.parametrize("action", [place("toolmaker"), place("hut", 2), place("card1"),
                                    place("building1"), place("forest", 9), DECLINE])
def test_a_place_that_takes_one_number_of_people_or_an_illegal_action_offers_no_variants(
        action):
    state = build(board(), board())
    assert choice_variants(state, 0, action) == []


def test_with_one_person_at_home_a_resource_place_offers_no_variants():
    state = build(board(), board(), spots=[("hunt", 0, 4)], turn=0)
    assert choice_variants(state, 0, place("forest")) == []


def test_the_email_offers_every_number_of_people_each_place_takes_now():
    state = build(board(), board(), board(), spots=[("forest", 1, 5), ("toolmaker", 2, 1)],
                  turn=0)
    offered = email_choices(state, 0)
    counts: dict[str, list[int]] = {}
    for a in offered:
        counts.setdefault(a.get("at"), []).append(a.get("count"))
    assert counts["hunt"] == [1, 2, 3, 4, 5]
    assert counts["forest"] == [1, 2]  # 7 spaces, 5 taken
    assert counts["hut"] == [2] and counts["card1"] == [1]
    assert "toolmaker" not in counts
    assert offered == legal_actions(state, 0)


def test_the_view_forecasts_the_coming_feeding():
    state = build(board(people=7, food=2, agriculture=1, wood=1, wild=1), board())
    assert view(state, 1)["boards"][0]["feeding"] == {
        "need": 7, "born": 0, "food": 2, "harvest": 1, "grown": 0, "short": 4,
        "catch": 0, "resources": 2}


def test_the_feeding_forecast_names_the_average_catch_of_hunters_not_back_yet():
    state = build(board(people=7, food=2), board(), spots=[("hunt", 0, 3)], turn=1)
    fed = view(state, 0)["boards"][0]["feeding"]
    assert (fed["short"], fed["catch"]) == (5, 5)


def test_the_feeding_forecast_counts_the_hut_and_field_placed_this_round():
    state = build(board(people=5, food=3), board(), spots=[("hut", 0, 2), ("field", 0, 1)],
                  turn=1)
    fed = view(state, 0)["boards"][0]["feeding"]
    assert (fed["need"], fed["born"], fed["harvest"], fed["grown"], fed["short"]) == (
        6, 1, 1, 1, 2)


def test_the_feeding_forecast_ends_when_the_feeding_begins():
    state = build(board(food=0, wood=5, short=5), board(), phase="feed", feeding=(0,))
    assert [b["feeding"] for b in view(state, 0)["boards"]] == [None, None]


def test_an_order_has_no_effect_of_its_own_to_describe():
    state = build(board(wood=1, tools=(1,)), board(), phase="use", turn=0,
                  spots=[("hunt", 0, 1), ("forest", 0, 2)])
    assert choice_effect(state, 0, order("forest", "hunt")) == {}
    assert choice_effect(state, 0, order("quarry", "hunt")) == {}  # not legal
