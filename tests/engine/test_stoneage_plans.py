"""Standing plans for Stone Age's placements (issue 20, 1c): a seat's list of places,
played by the engine on that seat's placement turns without asking, exactly as named and
in order while it can be followed, dropped (with an event for that seat only) the moment
it cannot; the list starts again each round; setting or clearing a plan is no decision.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from engine.core import PLAN_DROPPED, Action, Event, InvalidPlan, PlanClosed
from engine.stoneage import (
    BOTS,
    Plan,
    abandon,
    apply,
    check_invariants,
    from_json,
    legal_actions,
    pending,
    plan_form,
    set_plan,
    setup,
    to_json,
    view,
)
from engine.stoneage.rules import REST, at_home, plan_of
from tests.engine.stoneage_builders import board, build


def place(at: str, count: int) -> Action:
    return Action.of("place", at=at, count=count)


def placed(events, seat=None) -> list[tuple[str, int, bool]]:
    return [(e.data["place"], e.data["count"], bool(e.data.get("plan"))) for e in events
            if e.kind == "people_placed" and (seat is None or e.actor == seat)]


def two_players(start: int = 0, **kw):
    """Round 2 of two players, seat ``start`` to place first, 5 people each."""
    return build(board(), board(), start=start, turn=start, **kw)


# --------------------------------------------------------------------------- following


def test_the_plan_is_played_on_the_seats_next_placement_turns_without_asking():
    state, events = set_plan(two_players(), 0, "forest 2, hut, hunt rest")
    assert events == [Event("plan_set", 0, {"steps": [
        {"at": "forest", "count": 2}, {"at": "hut", "count": 2},
        {"at": "hunt", "count": "rest"}]}, (0,))]
    assert pending(state)[0].seat == 0  # the open decision stays: the player makes it
    state, events = apply(state, 0, place("clay", 1))
    assert placed(events) == [("clay", 1, False)]
    assert [(d.seat, d.kind) for d in pending(state)] == [(1, "place")]
    state, events = apply(state, 1, place("quarry", 1))
    assert placed(events) == [("quarry", 1, False), ("forest", 2, True)]
    assert [(d.seat, d.kind) for d in pending(state)] == [(1, "place")]
    state, events = apply(state, 1, place("river", 1))
    assert placed(events) == [("river", 1, False), ("hut", 2, True)]
    state, events = apply(state, 1, place("hunt", 2))
    assert placed(events) == [("hunt", 2, False)]  # seat 0 has nobody at home left
    assert at_home(state, 0) == 0 and plan_of(state, 0).next == 2


def test_a_place_not_open_is_passed_for_the_next_in_the_list():
    state = build(board(), board(people=8), spots=[("forest", 1, 7)], start=1, turn=1)
    state, _ = set_plan(state, 0, "forest 2, clay 3")
    state, events = apply(state, 1, place("hunt", 1))
    assert placed(events, 0) == [("clay", 3, True)]
    # seat 1 has nobody at home: seat 0 again, its list used up, 2 people at home
    assert [e.data for e in events if e.kind == PLAN_DROPPED] == [
        {"why": "used_up", "steps": [], "home": 2}]
    assert plan_of(state, 0) is None
    assert [(d.seat, d.kind) for d in pending(state)] == [(0, "place")]


def test_the_plan_is_dropped_when_nothing_left_in_it_can_be_followed():
    state = build(board(), board(people=8), board(), board(), spots=[("forest", 1, 6)],
                  start=1, turn=1)
    state, _ = set_plan(state, 2, "forest 2")
    state, events = apply(state, 1, place("hunt", 1))
    assert placed(events, 2) == []
    (dropped,) = [e for e in events if e.kind == PLAN_DROPPED]
    assert dropped == Event(PLAN_DROPPED, 2, {
        "why": "blocked", "home": 5,
        "steps": [{"at": "forest", "count": 2, "why": "count"}]}, (2,))
    assert plan_of(state, 2) is None
    assert [(d.seat, d.kind) for d in pending(state)] == [(2, "place")]


def test_a_plan_used_up_with_people_still_at_home_is_dropped():
    state, _ = set_plan(two_players(start=1), 0, "forest 2")
    state, events = apply(state, 1, place("hunt", 1))
    assert placed(events, 0) == [("forest", 2, True)]
    state, events = apply(state, 1, place("clay", 1))
    (dropped,) = [e for e in events if e.kind == PLAN_DROPPED]
    assert dropped.data == {"why": "used_up", "steps": [], "home": 3}
    assert [(d.seat, d.kind) for d in pending(state)] == [(0, "place")]


def test_a_card_the_seat_cannot_pay_is_not_followed():
    state, _ = set_plan(two_players(start=1), 0, "card4, hunt rest")
    state, events = apply(state, 1, place("forest", 1))
    assert placed(events, 0) == [("hunt", 5, True)]


def test_the_rest_means_every_person_at_home_and_must_fit():
    state = build(board(), board(), board(people=9), board(), spots=[("forest", 1, 1)],
                  start=1, turn=1)
    state, _ = set_plan(state, 2, "forest rest, clay rest")
    state, events = apply(state, 1, place("hunt", 1))
    # 9 at home: the forest has room for 6 and the clay pit for 7: neither takes them all
    assert [e.data for e in events if e.kind == PLAN_DROPPED] == [{
        "why": "blocked", "home": 9, "steps": [
            {"at": "forest", "count": "rest", "why": "count"},
            {"at": "clay", "count": "rest", "why": "count"}]}]


def test_the_list_starts_again_each_round():
    from engine.stoneage.rules import _end_round

    state = build(board(), board(), phase="feed", start=1, turn=1)
    state = state._replace(plans=(Plan((("forest", 2), ("hunt", REST)), next=2), None))
    check_invariants(state)
    events: list[Event] = []
    state = _end_round(state, events)
    # seat 0 starts round 3 (the start player passes): its plan from the top
    assert placed(events, 0) == [("forest", 2, True)]
    assert plan_of(state, 0).next == 1


def test_a_whole_round_without_a_decision_drops_every_plan():
    """Two seats hunting by plan, nothing else to decide: the game does not play on by
    itself (``apply`` ends): the plans drop as the round after the automatic one begins."""
    state = build(board(people=5, food=40), board(people=5, food=40), start=0, turn=0)
    state, _ = set_plan(state, 0, "hunt rest")
    state, _ = set_plan(state, 1, "hunt rest")
    state, events = apply(state, 0, place("hunt", 5))
    rounds = [e.data["round"] for e in events if e.kind == "round_started"]
    assert rounds == [3, 4]  # round 3 played by the plans alone; round 4 asks
    assert [(e.actor, e.data["why"]) for e in events if e.kind == PLAN_DROPPED] == [
        (0, "idle"), (1, "idle")]
    assert [(d.seat, d.kind) for d in pending(state)] == [(0, "place")]  # round 4's start


def test_a_plan_set_while_the_decision_is_open_leaves_it_open():
    state = two_players()
    before = pending(state)
    state2, _ = set_plan(state, 0, "hunt rest")
    assert pending(state2) == before
    assert legal_actions(state2, 0) == legal_actions(state, 0)


# --------------------------------------------------------------------------- setting


@pytest.mark.parametrize(("text", "why"), [
    ("forest 2, , hut", {"why": "plan/empty"}),
    ("meadow 2", {"why": "plan/unknown", "word": "meadow 2"}),
    ("forest 2 3", {"why": "plan/unknown", "word": "forest 2 3"}),
    ("forest", {"why": "plan/count", "at": "forest", "counts": [1, 2, 3, 4, 5, 6, 7],
                "rest": True}),
    ("forest 8", {"why": "plan/count", "at": "forest", "counts": [1, 2, 3, 4, 5, 6, 7],
                  "rest": True}),
    ("hut 1", {"why": "plan/count", "at": "hut", "counts": [2], "rest": False}),
    ("hut rest", {"why": "plan/count", "at": "hut", "counts": [2], "rest": False}),
    ("forest ٣", {"why": "plan/count", "at": "forest", "counts": [1, 2, 3, 4, 5, 6, 7],
                  "rest": True}),
    ("building3", {"why": "plan/unknown", "word": "building3"}),  # 2 players: 2 stacks
    ("hunt 2, hunt 3", {"why": "plan/twice", "at": "hunt"}),
    ("hunt 1, forest 1, clay 1, quarry 1, river 1, field, hut",
     {"why": "plan/long", "most": 6}),
])
def test_a_plan_that_names_no_plan_is_refused_with_the_reason(text, why):
    state = two_players()
    with pytest.raises(InvalidPlan) as refused:
        set_plan(state, 0, text)
    assert refused.value.code == "plan/invalid"
    assert refused.value.data == why


def test_a_plan_reads_any_case_and_the_one_number_of_a_place_may_be_left_out():
    state, _ = set_plan(two_players(), 1, "  Forest 2,HUT,  toolmaker , card1, Hunt REST ")
    assert plan_of(state, 1).steps == (("forest", 2), ("hut", 2), ("toolmaker", 1),
                                       ("card1", 1), ("hunt", REST))


def test_clearing_a_plan_says_so_and_clearing_none_changes_nothing():
    state = two_players()
    assert set_plan(state, 0, "  ") == (state, [])
    state2, _ = set_plan(state, 0, "hunt rest")
    cleared, events = set_plan(state2, 0, "")
    assert cleared == state and events == [Event("plan_cleared", 0, {}, (0,))]


def test_no_plan_once_the_game_is_over():
    over, _ = abandon(two_players())
    assert plan_form(over, 0) is None
    with pytest.raises(PlanClosed):
        set_plan(over, 0, "hunt rest")


def test_the_plan_form_names_every_place_and_its_numbers():
    form = plan_form(two_players(), 0)
    places = {p["at"]: (p["counts"], p["rest"]) for p in form["places"]}
    assert places["hunt"] == (list(range(1, 11)), True)
    assert places["forest"] == (list(range(1, 8)), True)
    assert places["hut"] == ([2], False) and places["card4"] == ([1], False)
    assert "building2" in places and "building3" not in places
    assert form["steps"] == 6 and form["plan"] == []


def test_only_the_seat_sees_its_plan():
    state, _ = set_plan(two_players(), 0, "hunt rest")
    assert view(state, 0)["plan"] == {"steps": [{"at": "hunt", "count": "rest"}], "next": 0}
    assert view(state, 1)["plan"] is None and view(state, None)["plan"] is None


def test_a_state_stored_before_plans_loads_with_none():
    raw = to_json(two_players())
    del raw["plans"]
    assert from_json(raw) == two_players()


def test_a_plan_naming_a_place_twice_is_a_corrupt_state():
    raw = to_json(set_plan(two_players(), 0, "hunt rest")[0])
    raw["plans"][0]["steps"].append(["hunt", 2])
    with pytest.raises(Exception, match="each place once"):
        from_json(raw)


# --------------------------------------------------------------------------- properties


def random_plan(state, seat: int, rng: random.Random) -> str:
    """A plan a player might write: 1 to 6 distinct places of the plan form, each with
    one of its numbers or the rest."""
    form = plan_form(state, seat)
    places = rng.sample(form["places"], rng.randint(1, form["steps"]))
    words = []
    for p in places:
        count = rng.choice(p["counts"] + (["rest"] if p["rest"] else []))
        words.append(f"{p['at']} {count}")
    return ", ".join(words)


def check_step(before, events, plans_before):
    """Plan placements in ``events`` (from ``before``): each is a step of its seat's plan,
    after the steps already tried this round, with the named number (the rest: every
    person at home then); a seat asked to place after having a plan had it dropped."""
    cursor = {s: (p.next if p else 0) for s, p in enumerate(plans_before)}
    plan = dict(enumerate(plans_before))
    for e in events:
        if e.kind == "round_started":
            cursor = dict.fromkeys(cursor, 0)
        if e.kind == "people_placed" and e.data.get("plan"):
            p = plan[e.actor]
            assert p is not None, "a plan placement without a plan"
            names = [at for at, _ in p.steps]
            i = names.index(e.data["place"])
            assert i >= cursor[e.actor], "a step played twice or out of order in a round"
            count = p.steps[i][1]
            assert count == REST or count == e.data["count"]
            cursor[e.actor] = i + 1
        if e.kind == PLAN_DROPPED:
            assert e.visible_to == (e.actor,)
            plan[e.actor] = None


def play_with_plans(players: int, seed: int) -> dict[str, int]:
    """A heuristic game in which the seats set, change and clear plans at random times;
    every step checked."""
    rng = random.Random(seed)
    bot = BOTS["heuristic"]
    state = setup([f"p{i}" for i in range(players)], seed)
    seen = {"plan placements": 0, "dropped": 0, "set": 0}
    for _ in range(3000):
        if not pending(state):
            break
        for seat in range(players):
            if rng.random() < 0.15:
                text = random_plan(state, seat, rng) if rng.random() < 0.85 else ""
                new, events = set_plan(state, seat, text)
                assert pending(new) == pending(state)  # no decision, nothing played
                assert all(e.visible_to == (seat,) for e in events)
                other = (seat + 1) % players  # sees its own plan only, as before
                assert view(new, other)["plan"] == view(state, other)["plan"]
                state = new
                seen["set"] += 1
        decision = pending(state)[rng.randrange(len(pending(state)))]
        plans_before = [plan_of(state, s) for s in range(players)]
        action = bot(state, decision.seat, rng)
        after, events = apply(state, decision.seat, action)
        check_step(state, events, plans_before)
        own = [e for e in events if e.kind == "people_placed" and not e.data.get("plan")]
        if decision.kind == "place":  # the one placement the player chose, as chosen
            assert [(e.actor, e.data["place"], e.data["count"]) for e in own] == [
                (decision.seat, action.get("at"), action.get("count"))]
        else:
            assert own == []
        for d in pending(after):  # a seat with a plan is asked to place only once
            if d.kind == "place" and plans_before[d.seat] is not None:  # it is dropped
                assert plan_of(after, d.seat) is None
                assert any(e.kind == PLAN_DROPPED and e.actor == d.seat for e in events) \
                    or d.seat == decision.seat
        for s in range(players):  # a seat whose plan stands is never asked to place
            if plan_of(after, s) is not None:
                assert not any(d.seat == s and d.kind == "place" for d in pending(after))
        assert from_json(json.loads(json.dumps(to_json(after)))) == after
        check_invariants(after)
        seen["plan placements"] += sum(1 for e in events if e.data.get("plan"))
        seen["dropped"] += sum(1 for e in events if e.kind == PLAN_DROPPED)
        state = after
    return seen


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          phases=(Phase.explicit, Phase.generate))
@given(players=st.integers(2, 4), seed=st.integers(0, 2**32))
def test_plans_play_only_what_they_name_in_order_and_drop_when_they_cannot(players, seed):
    play_with_plans(players, seed)


def test_the_property_games_reach_plan_placements_and_drops():
    seen = play_with_plans(3, 11)
    assert seen["plan placements"] > 20 and seen["dropped"] > 5


def test_a_plan_placement_is_an_action_the_seat_could_have_made():
    """Replaying a game with a seat's plan placements made as its own decisions instead
    gives the same game."""
    rng = random.Random(4)
    state = setup(["a", "b"], 4)
    state, _ = set_plan(state, 1, "hunt 2, forest 1, hut, clay rest")
    moves = []
    while state.round < 3:
        (d,) = pending(state)
        action = BOTS["heuristic"](state, d.seat, rng)
        moves.append((d.seat, action))
        state, events = apply(state, d.seat, action)
        for e in events:
            if e.data.get("plan"):
                moves.append((e.actor, place(e.data["place"], e.data["count"])))
    assert any(e for e in moves if e[0] == 1 and e[1].kind == "place")
    again = setup(["a", "b"], 4)
    for seat, action in moves:
        if again.round >= 3:
            break
        assert action in legal_actions(again, seat)
        again, _ = apply(again, seat, action)
