"""Stone Age's standing choices (issue 31, 2; the ``Standing`` hook of engine.core): for
the tools after a roll, for feeding and for the order of the use turn. None is on at the
start; where one decides, no decision opens and its events say ``standing``; where it
cannot decide, the seat is asked as before; setting one plays nothing.

Components used below: G01 5 Food, S07 one-time tool 3.
"""

from __future__ import annotations

import json
import random

import pytest

from engine.core import STANDING_OFF, Action, Decision, Event, GameOver, InvalidStanding
from engine.stoneage import (
    BOTS,
    apply,
    check_invariants,
    from_json,
    pending,
    set_standing,
    setup,
    standing_form,
    to_json,
    view,
)
from engine.stoneage.search import determinise
from tests.engine.stoneage_builders import board, build, last_use, rolling


def standing(state, seat: int = 0, **choices: str):
    for key, value in choices.items():
        state, _ = set_standing(state, seat, key, value)
    return state


def kinds(events) -> list[str]:
    return [e.kind for e in events]


# --------------------------------------------------------------------------- setting


def test_no_standing_choice_is_on_at_the_start():
    state = setup(["a", "b"], 1)
    assert standing_form(state, 0) == [
        {"key": "tools", "options": ["off", "tiles", "all"], "value": "off"},
        {"key": "feed", "options": ["off", "pay", "starve"], "value": "off"},
        {"key": "order", "options": ["off", "sensible"], "value": "off"}]
    assert state.standing == ()


def test_setting_a_standing_choice_plays_nothing_and_only_its_seat_is_told():
    state = setup(["a", "b"], 1)
    new, events = set_standing(state, 1, "tools", "all")
    assert events == [Event("standing_set", 1, {"key": "tools", "value": "all"},
                            visible_to=(1,))]
    assert pending(new) == pending(state)
    assert view(new, 1)["standing"] == {"tools": "all", "feed": "off", "order": "off"}
    assert view(new, 0)["standing"] == {"tools": "off", "feed": "off", "order": "off"}
    assert view(new, None)["standing"] == {}
    assert set_standing(new, 1, "tools", "all") == (new, [])  # no change, no event


def test_standing_choices_are_stored_and_read_back_and_cleared_to_nothing():
    state = standing(setup(["a", "b", "c"], 2), 2, feed="starve", order="sensible")
    raw = json.loads(json.dumps(to_json(state)))
    assert raw["standing"] == [{}, {}, {"feed": "starve", "order": "sensible"}]
    assert from_json(raw) == state
    cleared = standing(state, 2, feed=STANDING_OFF, order=STANDING_OFF)
    assert cleared.standing == () and "standing" not in to_json(cleared)


@pytest.mark.parametrize(("key", "value"), [("tool", "all"), ("tools", "some"),
                                            ("tools", 1), (None, "off"), ("feed", "")])
def test_a_standing_choice_the_game_does_not_offer_is_refused(key, value):
    state = setup(["a", "b"], 1)
    with pytest.raises(InvalidStanding):
        set_standing(state, 0, key, value)


def test_no_standing_choice_for_a_seat_not_in_the_game_nor_after_the_end():
    state = setup(["a", "b"], 1)
    with pytest.raises(InvalidStanding):
        set_standing(state, 2, "tools", "all")
    over = state._replace(phase="over", winners=(0,), end="buildings")
    assert standing_form(over, 0) is None
    with pytest.raises(GameOver):
        set_standing(over, 0, "tools", "all")


def test_a_stored_standing_choice_the_game_does_not_offer_is_a_corrupt_state():
    raw = to_json(standing(setup(["a", "b"], 1), 0, tools="all"))
    raw["standing"] = [{"tools": "sometimes"}, {}]
    with pytest.raises(Exception, match="standing"):
        from_json(raw)


# --------------------------------------------------------------------------- tools


def roll_with(spec, faces=(2,), place="forest"):
    """Seat 1 (the last to use) resolves ``place`` with ``len(faces)`` people."""
    return last_use(board(), spec, place=place, count=len(faces), rng=rolling(tuple(faces)))


def test_without_a_standing_choice_the_tools_are_asked():
    state = roll_with(board(tools=(2, 1)))
    state, _ = apply(state, 1, Action.of("order", places=("forest",)))
    assert pending(state)[0].kind == "tools"


def test_tools_all_adds_the_fewest_pips_that_reach_the_best_yield():
    """Forest (3 pips a Wood), a roll of 2: tiles 2 and 1 and a one-time 3 may add 6 =
    8 pips, 2 Wood; 2 + 1 or the one-time 3 reach 5 pips = 1 Wood... the best yield is
    2 Wood (needs 4 more pips): 3 + 1, the least wasted."""
    state = standing(roll_with(board(tools=(2, 1), one_time=("S07",))), 1, tools="all")
    state, events = apply(state, 1, Action.of("order", places=("forest",)))
    assert pending(state)[0].kind != "tools"
    added = next(e for e in events if e.kind == "tools_added")
    assert added.data == {"tiles": [1], "one_time": [3], "added": 4, "standing": True}
    assert Event("resources_gained", 1, {"resource": "wood", "amount": 2,
                                         "place": "forest"}) in events


def test_tools_tiles_uses_only_tiles_when_a_one_time_tool_could_bring_no_more():
    """The River (6 pips a Gold), a roll of 5: tile 1 makes 6, 1 Gold; all the tools
    (11 pips) bring no more."""
    state = standing(roll_with(board(tools=(2, 1), one_time=("S07",)), faces=(5,),
                               place="river"), 1, tools="tiles")
    state, events = apply(state, 1, Action.of("order", places=("river",)))
    added = next(e for e in events if e.kind == "tools_added")
    assert added.data == {"tiles": [1], "one_time": [], "added": 1, "standing": True}


def test_tools_tiles_asks_where_a_one_time_tool_could_bring_more():
    state = standing(roll_with(board(tools=(1,), one_time=("S07",))), 1, tools="tiles")
    state, events = apply(state, 1, Action.of("order", places=("forest",)))
    assert pending(state)[0].kind == "tools"
    assert "tools_added" not in kinds(events)


def test_a_standing_choice_set_while_the_tools_are_asked_leaves_that_decision_open():
    state = roll_with(board(tools=(2, 1)))
    state, _ = apply(state, 1, Action.of("order", places=("forest",)))
    asked = pending(state)
    state = standing(state, 1, tools="all")
    assert pending(state) == asked


# --------------------------------------------------------------------------- feeding


def short_of_food(spec, **choices):
    """Seat 1 resolves the Tool maker, the round's last placement; then feeding."""
    state = last_use(board(), spec)
    return standing(state, 1, **choices) if choices else state


def test_without_a_standing_choice_feeding_is_asked():
    state, _ = apply(short_of_food(board(food=2, wood=1, gold=2)), 1,
                     Action.of("order", places=("toolmaker",)))
    assert pending(state) == [Decision(1, "feed", (("short", 3),))]


def test_feed_pay_pays_with_the_least_valuable_resources_keeping_those_of_choice():
    spec = board(food=2, wood=1, stone=1, gold=2, wild=1)
    state, events = apply(short_of_food(spec, feed="pay"), 1,
                          Action.of("order", places=("toolmaker",)))
    assert Event("people_fed_with_resources", 1, {"paid": ["wood", "stone", "gold"],
                                                  "standing": True}) in events
    assert state.boards[1].res == (0, 0, 0, 1) and state.boards[1].wild == 1
    assert all(d.kind != "feed" for d in pending(state))


def test_feed_starve_keeps_the_resources_and_loses_ten_points():
    spec = board(food=2, wood=3, score=4)
    state, events = apply(short_of_food(spec, feed="starve"), 1,
                          Action.of("order", places=("toolmaker",)))
    assert Event("people_starved", 1, {"short": 3, "points": -10, "standing": True}) in events
    assert state.boards[1].res == (3, 0, 0, 0) and state.boards[1].score == -6


def test_feed_pay_cannot_pay_what_the_resources_cannot_and_the_points_are_lost_as_before():
    state, events = apply(short_of_food(board(food=2, wood=1), feed="pay"), 1,
                          Action.of("order", places=("toolmaker",)))
    starved = next(e for e in events if e.kind == "people_starved")
    assert "standing" not in starved.data  # the rules, not the choice


# --------------------------------------------------------------------------- order


def last_placement(**choices):
    """Seat 0 (with a tool) places its last person on the River; then the use phase:
    seat 1's hunt, then seat 0's River, Quarry and Hunting grounds."""
    state = build(board(tools=(1,)), board(), start=1, turn=0,
                  spots=[("hunt", 1, 5), ("hunt", 0, 2), ("quarry", 0, 2)])
    return standing(state, 0, **choices) if choices else state


def test_without_a_standing_choice_the_order_is_asked():
    state, events = apply(last_placement(), 0, Action.of("place", at="river", count=1))
    assert pending(state)[0] == Decision(0, "order", (("places", ("hunt", "quarry",
                                                                  "river")),))


def test_order_sensible_plays_the_sensible_order_without_asking_and_tells_only_the_seat():
    state, events = apply(last_placement(order="sensible"), 0,
                          Action.of("place", at="river", count=1))
    assert [e for e in events if e.kind == "order_chosen"] == [
        Event("order_chosen", 0, {"places": ["river", "quarry", "hunt"], "standing": True},
              visible_to=(0,))]
    assert [e.data["place"] for e in events if e.kind == "dice_rolled"][:2] == [
        "hunt", "river"]  # seat 1's, then the River (a tools decision may follow)
    assert all(d.kind != "order" for d in pending(state))


# --------------------------------------------------------------------------- whole games


def test_a_bot_deciding_for_another_seat_does_not_see_its_standing_choices():
    state = standing(setup(["a", "b"], 3), 1, tools="all", feed="pay")
    state = standing(state, 0, order="sensible")
    world = determinise(state, 0, random.Random(1))
    assert world.standing == ((("order", "sensible"),), ())


@pytest.mark.parametrize("players", [2, 4])
def test_whole_games_with_every_standing_choice_end_and_ask_less(players):
    """Random standing choices for every seat: the games end, every state is sound, and
    the decisions the choices cover are asked less often than without them."""
    asked = {}
    for with_choices in (False, True):
        count = {"tools": 0, "feed": 0, "order": 0}
        for seed in range(6):
            rng = random.Random(seed)
            state = setup([f"p{i}" for i in range(players)], seed)
            if with_choices:
                for seat in range(players):
                    state = standing(state, seat, tools=rng.choice(["tiles", "all"]),
                                     feed=rng.choice(["pay", "starve"]), order="sensible")
            while pending(state):
                d = pending(state)[0]
                if d.kind in count:
                    count[d.kind] += 1
                state, _ = apply(state, d.seat, BOTS["heuristic"](state, d.seat, rng))
            check_invariants(state)
        asked[with_choices] = count
    assert asked[True]["feed"] == 0 and asked[True]["order"] == 0
    assert asked[True]["tools"] < asked[False]["tools"]
