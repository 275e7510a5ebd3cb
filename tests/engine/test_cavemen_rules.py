"""Scenario tests: every rule and ruling of docs/games/cavemen.md, one idea per test.

Each test builds a position with the builders (tests/engine/builders.py), plays actions
through ``engine.cavemen.apply`` and checks the resulting state and the exact events.
Card numbers used below come from the standard deck (engine/cavemen/standard.toml):
Wolf = Leader (stone 3, 1/1/1) + starting Hunter (stone 1, hunting 2, foraging 1) +
Home Cave (population 4): Hunting 3, Inventing 1, Foraging 2; Tiger's cavemen carry
stones 4 (Leader) and 2 (Hunter).
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest

from engine.cavemen import (
    abandon,
    apply,
    check_invariants,
    default_action,
    legal_actions,
    pending,
    result,
    scores,
    setup,
    setup_with_events,
)
from engine.cavemen.deck import EFFECT_KINDS, STANDARD_DECK, TRIBES
from engine.core import (
    Action,
    Decision,
    Event,
    GameOver,
    IllegalAction,
    NotYourTurn,
    Result,
    SetupError,
)
from tests.engine.builders import DECK, FIRE, Auction, build, last_action, last_pass, tribe

PASS = Action.of("pass")
FORAGE = Action.of("forage")
POOL5 = ("B01", "B02", "B03", "B04", "B05")
TOP = ("H01", "H02", "H03", "H04", "H05", "H06", "H07")
FIRE_COSTS = [(2, 10), (3, 9), (4, 7), (5, 7)]
# Wolf tableau additions giving an exact Inventing score (Leader 1 + thinkers + inventions);
# C03 adds room so the tribe stays within its Population.
INVENTING = {
    6: ("C03", "T06", "I09", "I10"),
    7: ("C03", "T06", "T01", "I09", "I10"),
    8: ("C03", "T06", "T07", "I09", "I10"),
    9: ("C03", "T06", "T07", "T01", "I09", "I10"),
    10: ("C03", "T06", "T07", "T10", "I09", "I10"),
}


# --------------------------------------------------------------------------- helpers


def ev(kind: str, actor: int | None = None, /, **data) -> Event:
    return Event(kind, actor, data)


def act(kind: str, **args) -> Action:
    return Action.of(kind, **args)


def play(state, seat: int, kind: str, **args):
    return apply(state, seat, Action.of(kind, **args))


def names(players: int) -> list[str]:
    return [f"p{i}" for i in range(players)]


def tribes(players: int, **kw) -> list:
    return [tribe(name, **kw) for name in TRIBES[:players]]


def inventor(name: str, inventing: int, **kw):
    return tribe(name, *INVENTING[inventing], **kw)


def act_decision(seat: int, second: bool = False) -> Decision:
    return Decision(seat, "act", (("second", second),))


def bid_decision(seat: int, high: int, most: int) -> Decision:
    return Decision(seat, "bid", (("high", high), ("max", most)))


def variant_deck(tmp_path: Path, old: str, new: str) -> str:
    """The standard deck file with one line changed, written under tmp_path."""
    text = STANDARD_DECK.read_text(encoding="utf-8")
    assert text.count(old) == 1
    path = tmp_path / "variant.toml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return str(path)


# --------------------------------------------------------------------------- components


def test_deck_has_the_published_card_counts():
    counts = Counter(DECK.card(c).type for c in DECK.deck_ids)
    assert counts == {"hunter": 10, "thinker": 10, "elder": 5, "explorer": 5, "beast": 27,
                      "invention": 20, "fire": 1, "cave": 8}
    assert len(DECK.deck_ids) == 86


def test_every_card_carries_a_stone_marker_from_one_to_five():
    assert {card.stone for card in DECK.cards.values()} <= {1, 2, 3, 4, 5}


def test_stone_markers_are_spread_evenly_over_the_deck():
    stones = Counter(DECK.card(c).stone for c in DECK.deck_ids)
    assert sorted(stones) == [1, 2, 3, 4, 5]
    assert all(16 <= count <= 18 for count in stones.values())


@pytest.mark.parametrize("name", TRIBES)
def test_each_tribe_has_a_leader_a_starting_hunter_and_a_home_cave(name):
    leader, hunter, cave = (DECK.card(c) for c in DECK.starting[name])
    assert (leader.type, hunter.type, cave.type) == ("leader", "hunter", "cave")
    assert leader.tribe == hunter.tribe == cave.tribe == name


@pytest.mark.parametrize(("name", "stone"), list(zip(TRIBES, [1, 2, 3, 4, 5], strict=True)))
def test_starting_hunters_carry_distinct_stone_markers(name, stone):
    assert DECK.card(DECK.starting[name][1]).stone == stone


@pytest.mark.parametrize("name", TRIBES)
def test_home_cave_holds_four(name):
    assert DECK.card(DECK.starting[name][2]).population == 4


def test_deck_caves_hold_two_to_four_and_cost_teeth():
    caves = [DECK.card(c) for c in DECK.deck_ids if DECK.card(c).type == "cave"]
    assert all(c.population in (2, 3, 4) and c.cost_teeth > 0 and c.cost_food == 0
               for c in caves)


def test_deck_cavemen_print_three_scores_and_both_costs():
    cavemen = [DECK.card(c) for c in DECK.deck_ids if DECK.card(c).is_caveman]
    assert len(cavemen) == 30
    assert all(c.ability > 0 and c.cost_food > 0 and c.cost_teeth > 0 for c in cavemen)


def test_thinkers_carry_inventing_one_or_two():
    thinkers = [DECK.card(c) for c in DECK.deck_ids if DECK.card(c).type == "thinker"]
    assert {c.inventing for c in thinkers} == {1, 2}


def test_explorers_can_hunt():
    explorers = [DECK.card(c) for c in DECK.deck_ids if DECK.card(c).type == "explorer"]
    assert all(c.hunting >= 1 for c in explorers)


def test_beasts_have_a_requirement_and_a_reward():
    beasts = [DECK.card(c) for c in DECK.deck_ids if DECK.card(c).type == "beast"]
    assert all(b.requirement >= 1 and b.reward_food + b.reward_teeth > 0 for b in beasts)


def test_styracosaurus_gives_six_food_and_one_tooth_and_a_tyrannosaurus_exists():
    by_name = {DECK.card(c).name: DECK.card(c) for c in DECK.deck_ids}
    styraco = by_name["Styracosaurus"]
    assert (styraco.type, styraco.reward_food, styraco.reward_teeth) == ("beast", 6, 1)
    assert by_name["Tyrannosaurus"].type == "beast"


def test_inventions_have_a_requirement_and_a_benefit():
    inventions = [DECK.card(c) for c in DECK.deck_ids if DECK.card(c).type == "invention"]
    assert all(i.requirement >= 1 and i.effects for i in inventions)


def test_tribal_council_pays_a_tooth_per_elder_and_an_invention_prevents_casualties():
    effects = {DECK.card(c).name: [(e.kind, dict(e.params)) for e in DECK.card(c).effects]
               for c in DECK.deck_ids}
    assert ("income", {"resource": "teeth", "amount": 1, "per": "elder", "when": "feed"}) \
        in effects["Tribal Council"]
    assert any(("protection", {"against": "casualties"}) in e for e in effects.values())


def test_food_and_teeth_have_no_supply_limit():
    state = build(tribe("Wolf", "E04", food=500, teeth=300), tribe("Tiger"))
    state, events = play(state, 0, "forage")
    assert events == [ev("foraged", 0, food=5)]
    assert state.tribes[0].food == 505


# --------------------------------------------------------------------------- setup


@pytest.mark.parametrize(("players", "food", "teeth"),
                         [(2, 9, 4), (3, 8, 4), (4, 7, 4), (5, 7, 4)])
def test_starting_food_and_teeth_depend_on_the_player_count(players, food, teeth):
    state = setup(names(players), seed=1)
    assert [(t.food, t.teeth) for t in state.tribes] == [(food, teeth)] * players


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_each_tribe_starts_with_its_leader_starting_hunter_and_home_cave(players):
    state = setup(names(players), seed=3)
    assert [(t.name, t.cards) for t in state.tribes] == [
        (name, DECK.starting[name]) for name in TRIBES[:players]]


@pytest.mark.parametrize("players", [0, 1, 6])
def test_setup_refuses_fewer_than_two_or_more_than_five_players(players):
    with pytest.raises(SetupError) as err:
        setup(names(players), seed=1)
    assert err.value.code == "setup/invalid"


@pytest.mark.parametrize("players", [2, 3, 4, 5])
@pytest.mark.parametrize("seed", range(12))
def test_first_conch_holder_owns_the_starting_hunter_whose_stone_is_revealed_first(
        players, seed):
    state, events = setup_with_events(names(players), seed)
    started = events[0]
    hunter_stone = {DECK.card(DECK.starting[t][1]).stone: seat
                    for seat, t in enumerate(TRIBES[:players])}
    stones = [DECK.card(c).stone for c in started.data["revealed"]]
    assert started.kind == "game_started"
    assert all(s not in hunter_stone for s in stones[:-1])
    assert started.data["conch"] == hunter_stone[stones[-1]] == state.conch


@pytest.mark.parametrize("chosen", [("Bear", "Owl"), ("Snake", "Wolf", "Owl")])
def test_stone_marker_draw_looks_only_at_the_playing_tribes_hunters(chosen):
    for seed in range(12):
        state, events = setup_with_events(names(len(chosen)), seed, {"tribes": chosen})
        hunter_stone = {DECK.card(DECK.starting[t][1]).stone: seat
                        for seat, t in enumerate(chosen)}
        stones = [DECK.card(c).stone for c in events[0].data["revealed"]]
        assert all(s not in hunter_stone for s in stones[:-1])
        assert state.conch == hunter_stone[stones[-1]]


def test_revealed_cards_are_reshuffled_into_the_deck_before_the_first_draw():
    state, events = setup_with_events(names(2), seed=11)
    assert len(events[0].data["revealed"]) > 1
    assert sorted((*state.draw, *state.pool)) == sorted(DECK.deck_ids)
    assert state.discard == () and state.box == ()


# --------------------------------------------------------------------------- draw phase


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_round_one_draws_players_plus_five_cards(players):
    state, events = setup_with_events(names(players), seed=7)
    assert len(state.pool) == players + 5
    assert events[1:] == [ev("round_started", round=1),
                          ev("cards_drawn", cards=list(state.pool))]


@pytest.mark.parametrize("seed", range(5))
def test_conch_does_not_pass_in_round_one(seed):
    state, events = setup_with_events(names(3), seed)
    assert "conch_passed" not in [e.kind for e in events]
    assert state.conch == events[0].data["conch"]


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_later_rounds_draw_players_plus_two_cards(players):
    state = last_action(*tribes(players), draw=TOP)
    state, events = play(state, 0, "forage")
    assert events == [ev("foraged", 0, food=2), ev("round_started", round=3),
                      ev("conch_passed", 0, to=1),
                      ev("cards_drawn", cards=list(TOP[:players + 2]))]
    assert state.pool == TOP[:players + 2]


@pytest.mark.parametrize(("players", "conch", "left"),
                         [(2, 0, 1), (2, 1, 0), (3, 2, 0), (4, 1, 2), (5, 4, 0)])
def test_conch_passes_to_the_left_neighbour_from_round_two(players, conch, left):
    state = last_action(*tribes(players), conch=conch)
    state, events = play(state, conch, "forage")
    assert ev("conch_passed", conch, to=left) in events
    assert state.conch == left


@pytest.mark.parametrize(("players", "conch", "left"), [(2, 1, 0), (3, 0, 1), (5, 4, 0)])
def test_auction_starts_with_the_conch_holder(players, conch, left):
    state = last_action(*tribes(players), conch=conch)
    state, _ = play(state, conch, "forage")
    assert pending(state) == [bid_decision(left, 0, 3)]


@pytest.mark.parametrize("seed", range(5))
def test_auction_of_round_one_starts_with_the_first_conch_holder(seed):
    state = setup(names(4), seed)
    assert pending(state) == [bid_decision(state.conch, 0, 4)]


# --------------------------------------------------------------------------- auction


def test_bid_above_own_teeth_is_refused():
    state = build(tribe("Wolf", teeth=3), tribe("Tiger"), phase="auction")
    with pytest.raises(IllegalAction) as err:
        play(state, 0, "bid", amount=4)
    assert err.value.code == "action/illegal"


def test_bid_of_all_own_teeth_is_accepted():
    state = build(tribe("Wolf", teeth=3), tribe("Tiger", teeth=5), phase="auction")
    state, events = play(state, 0, "bid", amount=3)
    assert events == [ev("bid_placed", 0, amount=3)]
    assert state.auction == Auction(turn=1, high=3, bidder=0, passes=0)


@pytest.mark.parametrize("amount", [1, 2])
def test_bid_not_above_the_high_bid_is_refused(amount):
    state = build(tribe("Wolf"), tribe("Tiger", teeth=5), phase="auction",
                  auction=Auction(turn=1, high=2, bidder=0))
    with pytest.raises(IllegalAction) as err:
        play(state, 1, "bid", amount=amount)
    assert err.value.code == "action/illegal"


def test_bid_choices_are_pass_or_any_amount_above_the_high_bid_up_to_own_teeth():
    state = build(tribe("Wolf"), tribe("Tiger", teeth=5), phase="auction",
                  auction=Auction(turn=1, high=2, bidder=0))
    assert legal_actions(state, 1) == [PASS, *(act("bid", amount=n) for n in (3, 4, 5))]


def test_player_who_passed_may_bid_again_when_the_turn_comes_back():
    state = build(tribe("Wolf"), tribe("Tiger"), tribe("Snake"), phase="auction")
    state, _ = play(state, 0, "pass")
    state, _ = play(state, 1, "bid", amount=1)
    state, _ = play(state, 2, "pass")
    assert pending(state) == [bid_decision(0, 1, 3)]
    state, events = play(state, 0, "bid", amount=2)
    assert events == [ev("bid_placed", 0, amount=2)]
    assert state.auction == Auction(turn=1, high=2, bidder=0, passes=0)


def test_nobody_bidding_lets_the_conch_holder_keep_the_conch_for_free():
    state = build(tribe("Wolf"), tribe("Tiger"), phase="auction")
    state, first = play(state, 0, "pass")
    state, events = play(state, 1, "pass")
    assert first == [ev("bid_passed", 0, forced=False)]
    assert events == [ev("bid_passed", 1, forced=False), ev("conch_kept", 0, price=0),
                      ev("tribe_fed", 0, food=2), ev("tribe_fed", 1, food=1)]
    assert state.conch == 0
    assert [t.teeth for t in state.tribes] == [3, 3]


def test_conch_holder_winning_his_own_auction_pays_his_bid():
    state = build(tribe("Wolf", teeth=3), tribe("Tiger"), phase="auction")
    state, _ = play(state, 0, "bid", amount=2)
    state, events = play(state, 1, "pass")
    assert events == [ev("bid_passed", 1, forced=False),
                      ev("conch_won", 0, price=2, **{"from": 0}),
                      ev("tribe_fed", 0, food=2), ev("tribe_fed", 1, food=1)]
    assert state.conch == 0
    assert [t.teeth for t in state.tribes] == [1, 3]


def test_highest_bidder_pays_and_takes_the_conch():
    state = build(tribe("Wolf"), tribe("Tiger", teeth=4), phase="auction")
    state, _ = play(state, 0, "pass")
    state, _ = play(state, 1, "bid", amount=2)
    state, events = play(state, 0, "pass")
    assert events == [ev("bid_passed", 0, forced=False),
                      ev("conch_won", 1, price=2, **{"from": 0}),
                      ev("tribe_fed", 0, food=1), ev("tribe_fed", 1, food=2)]
    assert state.conch == 1
    assert [t.teeth for t in state.tribes] == [3, 2]


def test_auction_goes_on_until_every_other_player_passed_since_the_last_bid():
    state = build(tribe("Wolf"), tribe("Tiger"), tribe("Snake"), phase="auction")
    for seat, action in [(0, act("bid", amount=1)), (1, PASS), (2, act("bid", amount=2)),
                         (0, PASS)]:
        state, events = apply(state, seat, action)
    assert events == [ev("bid_passed", 0, forced=False)]
    assert pending(state) == [bid_decision(1, 2, 3)]


def test_auction_ends_when_every_other_player_passed_after_the_last_bid():
    state = build(tribe("Wolf"), tribe("Tiger"), tribe("Snake"), phase="auction")
    for seat, action in [(0, act("bid", amount=1)), (1, PASS), (2, act("bid", amount=2)),
                         (0, PASS)]:
        state, _ = apply(state, seat, action)
    state, events = play(state, 1, "pass")
    assert events[:2] == [ev("bid_passed", 1, forced=False),
                          ev("conch_won", 2, price=2, **{"from": 0})]
    assert state.conch == 2
    assert [t.teeth for t in state.tribes] == [3, 3, 1]


def test_bidder_who_cannot_outbid_is_passed_automatically():
    state = build(tribe("Wolf"), tribe("Tiger", teeth=1), tribe("Snake"), phase="auction")
    state, events = play(state, 0, "bid", amount=1)
    assert events == [ev("bid_placed", 0, amount=1), ev("bid_passed", 1, forced=True)]
    assert pending(state) == [bid_decision(2, 1, 3)]


def test_bidder_without_teeth_is_passed_automatically_before_any_bid():
    state = build(tribe("Wolf"), tribe("Tiger", teeth=0), tribe("Snake"), phase="auction")
    state, events = play(state, 0, "pass")
    assert events == [ev("bid_passed", 0, forced=False), ev("bid_passed", 1, forced=True)]
    assert pending(state) == [bid_decision(2, 0, 3)]


def test_conch_holder_without_teeth_is_passed_automatically_when_the_auction_opens():
    state = last_action(tribe("Wolf"), tribe("Tiger", teeth=0), draw=TOP)
    state, events = play(state, 0, "forage")
    assert events == [ev("foraged", 0, food=2), ev("round_started", round=3),
                      ev("conch_passed", 0, to=1), ev("cards_drawn", cards=list(TOP[:4])),
                      ev("bid_passed", 1, forced=True)]
    assert pending(state) == [bid_decision(0, 0, 3)]


# --------------------------------------------------------------------------- feed


def test_conch_holder_pays_one_food_per_caveman_leader_included():
    state = last_pass(tribe("Wolf", "H01", "T01", food=10), tribe("Tiger", food=5))
    state, events = play(state, 1, "pass")
    assert events[2:] == [ev("tribe_fed", 0, food=4), ev("tribe_fed", 1, food=1)]
    assert [t.food for t in state.tribes] == [6, 4]


def test_other_players_pay_exactly_one_food_whatever_their_tribe_size():
    state = last_pass(tribe("Wolf", food=5), tribe("Tiger", "H01", "T01", food=5),
                      tribe("Snake", "H02", food=5))
    state, events = play(state, 2, "pass")
    assert events[2:] == [ev("tribe_fed", 0, food=2), ev("tribe_fed", 1, food=1),
                          ev("tribe_fed", 2, food=1)]
    assert [t.food for t in state.tribes] == [3, 4, 4]


def test_starving_player_with_a_choice_pays_nothing_and_is_asked_which_caveman_to_lose():
    state = last_pass(tribe("Wolf", "H01", food=2), tribe("Tiger"))
    state, events = play(state, 1, "pass")
    assert events[2:] == [ev("tribe_starved", 0, due=3, loss="choice"),
                          ev("tribe_fed", 1, food=1)]
    assert state.tribes[0].food == 2
    assert pending(state) == [Decision(0, "starve")]
    assert legal_actions(state, 0) == [act("lose", card="SH-wolf"), act("lose", card="H01")]


def test_starvation_choice_discards_the_chosen_caveman_then_actions_begin():
    state = build(tribe("Wolf", "H01", food=2), tribe("Tiger"), phase="starve",
                  starving=(0,))
    state, events = play(state, 0, "lose", card="H01")
    assert events == [ev("caveman_lost", 0, card="H01", reason="starvation", to="discard")]
    assert state.tribes[0].cards == ("L-wolf", "SH-wolf", "HC-wolf")
    assert state.discard == ("H01",)
    assert pending(state) == [act_decision(0)]


def test_leader_cannot_be_lost_to_starvation():
    state = build(tribe("Wolf", "H01", food=2), tribe("Tiger"), phase="starve",
                  starving=(0,))
    with pytest.raises(IllegalAction):
        play(state, 0, "lose", card="L-wolf")


def test_starvation_with_one_candidate_is_automatic():
    state = last_pass(tribe("Wolf"), tribe("Tiger", food=0))
    state, events = play(state, 1, "pass")
    assert events[2:] == [ev("tribe_fed", 0, food=2),
                          ev("tribe_starved", 1, due=1, loss="SH-tiger"),
                          ev("caveman_lost", 1, card="SH-tiger", reason="starvation",
                             to="box")]
    assert state.tribes[1].cards == ("L-tiger", "HC-tiger")
    assert pending(state) == [act_decision(0)]


def test_starvation_with_only_the_leader_and_no_food_does_nothing():
    state = last_pass(tribe("Wolf"), tribe("Tiger", food=0, hunter=False))
    state, events = play(state, 1, "pass")
    assert events[2:] == [ev("tribe_fed", 0, food=2),
                          ev("tribe_starved", 1, due=1, loss=None, why="leader_only")]
    assert state.tribes[1].cards == ("L-tiger", "HC-tiger")
    assert state.tribes[1].food == 0
    assert pending(state) == [act_decision(0)]


def test_all_starving_players_choose_their_loss_before_the_action_phase():
    state = last_pass(tribe("Wolf", "H01", food=0), tribe("Tiger", "H02", food=0))
    state, _ = play(state, 1, "pass")
    assert pending(state) == [Decision(0, "starve"), Decision(1, "starve")]
    state, _ = play(state, 1, "lose", card="H02")
    assert pending(state) == [Decision(0, "starve")]
    state, _ = play(state, 0, "lose", card="SH-wolf")
    assert pending(state) == [act_decision(0)]
    assert state.box == ("SH-wolf",) and state.discard == ("H02",)


# --------------------------------------------------------------------------- action order


@pytest.mark.parametrize(("players", "conch", "order"),
                         [(2, 0, [0, 1, 0]), (3, 1, [1, 2, 0, 1]), (4, 3, [3, 0, 1, 2, 3])])
def test_conch_holder_acts_first_then_clockwise_and_again_last(players, conch, order):
    state = build(*tribes(players), conch=conch)
    seen = []
    while pending(state)[0].kind == "act":
        decision = pending(state)[0]
        seen.append((decision.seat, decision.get("second")))
        state, _ = apply(state, decision.seat, FORAGE)
    assert seen == [(seat, i == len(order) - 1) for i, seat in enumerate(order)]


def test_forage_is_legal_when_nothing_else_is():
    state = build(tribe("Wolf", food=0, teeth=0), tribe("Tiger"),
                  pool=("B27", "C07", "T10", "I10"))
    assert legal_actions(state, 0) == [FORAGE]


@pytest.mark.parametrize("action", [PASS, act("skip"), act("forage", card="B01")])
def test_an_acting_player_may_not_skip(action):
    state = build(tribe("Wolf", food=0, teeth=0), tribe("Tiger"), pool=("B27",))
    with pytest.raises(IllegalAction):
        apply(state, 0, action)


def test_a_seat_without_an_open_decision_is_refused():
    state = build(tribe("Wolf"), tribe("Tiger"))
    with pytest.raises(NotYourTurn) as err:
        play(state, 1, "forage")
    assert err.value.code == "turn/not_yours"


@pytest.mark.parametrize(("add", "food"), [((), 2), (("E04",), 5), (("E04", "E01"), 7)])
def test_forage_gains_food_equal_to_the_foraging_score(add, food):
    state = build(tribe("Wolf", *add, food=1), tribe("Tiger"))
    state, events = play(state, 0, "forage")
    assert events == [ev("foraged", 0, food=food)]
    assert state.tribes[0].food == 1 + food
    assert pending(state) == [act_decision(1)]


# --------------------------------------------------------------------------- recruit


@pytest.mark.parametrize(("pay", "cost", "food", "teeth"),
                         [("food", 4, 6, 5), ("teeth", 2, 10, 3)])
def test_recruit_pays_either_the_food_or_the_teeth_cost(pay, cost, food, teeth):
    state = build(tribe("Wolf", food=10, teeth=5), tribe("Tiger"), pool=("H01", "B01"))
    state, events = play(state, 0, "recruit", card="H01", pay=pay)
    assert events == [ev("caveman_recruited", 0, card="H01", pay=pay, cost=cost,
                         replaced=None)]
    assert (state.tribes[0].food, state.tribes[0].teeth) == (food, teeth)
    assert state.tribes[0].cards == ("L-wolf", "SH-wolf", "HC-wolf", "H01")
    assert state.pool == ("B01",)


def test_recruit_offers_each_affordable_way_to_pay():
    state = build(tribe("Wolf", food=10, teeth=1), tribe("Tiger"), pool=("H01",))
    assert legal_actions(state, 0) == [FORAGE, act("recruit", card="H01", pay="food")]


@pytest.mark.parametrize("pay", ["food", "teeth", "both", "mixed"])
def test_recruit_cannot_mix_food_and_teeth(pay):
    # H01 costs 4 Food or 2 Teeth; 3 Food + 1 Tooth would pay neither alone.
    state = build(tribe("Wolf", food=3, teeth=1), tribe("Tiger"), pool=("H01",))
    assert legal_actions(state, 0) == [FORAGE]
    with pytest.raises(IllegalAction):
        play(state, 0, "recruit", card="H01", pay=pay)


def test_recruit_without_replacement_is_refused_at_the_population_limit():
    state = build(tribe("Wolf", "H01", "T01", food=10), tribe("Tiger"), pool=("H02",))
    with pytest.raises(IllegalAction):
        play(state, 0, "recruit", card="H02", pay="food")


def test_replacement_is_offered_at_the_population_limit_for_every_caveman_but_the_leader():
    state = build(tribe("Wolf", "H01", "T01", food=10, teeth=0), tribe("Tiger"),
                  pool=("H02",))
    assert legal_actions(state, 0) == [FORAGE, *(
        act("recruit", card="H02", pay="food", replace=r) for r in ("SH-wolf", "H01", "T01"))]


def test_leader_cannot_be_replaced():
    state = build(tribe("Wolf", "H01", "T01", food=10), tribe("Tiger"), pool=("H02",))
    with pytest.raises(IllegalAction):
        play(state, 0, "recruit", card="H02", pay="food", replace="L-wolf")


def test_recruit_at_the_limit_with_replacement_discards_the_replaced_and_pays_full_cost():
    state = build(tribe("Wolf", "H01", "T01", food=10), tribe("Tiger"), pool=("H02",))
    state, events = play(state, 0, "recruit", card="H02", pay="food", replace="T01")
    assert events == [ev("caveman_lost", 0, card="T01", reason="replaced", to="discard"),
                      ev("caveman_recruited", 0, card="H02", pay="food", cost=4,
                         replaced="T01")]
    assert state.tribes[0].cards == ("L-wolf", "SH-wolf", "HC-wolf", "H01", "H02")
    assert state.tribes[0].food == 6
    assert state.discard == ("T01",)


def test_replaced_starting_hunter_leaves_the_game_to_the_box():
    state = build(tribe("Wolf", "H01", "T01", food=10), tribe("Tiger"), pool=("H02",))
    state, events = play(state, 0, "recruit", card="H02", pay="teeth", replace="SH-wolf")
    assert events[0] == ev("caveman_lost", 0, card="SH-wolf", reason="replaced", to="box")
    assert state.box == ("SH-wolf",)
    assert "SH-wolf" not in state.discard


def test_replacement_is_not_offered_below_the_population_limit():
    state = build(tribe("Wolf", "H01", food=10), tribe("Tiger"), pool=("H02",))
    assert legal_actions(state, 0) == [FORAGE, act("recruit", card="H02", pay="food"),
                                       act("recruit", card="H02", pay="teeth")]
    with pytest.raises(IllegalAction):
        play(state, 0, "recruit", card="H02", pay="food", replace="H01")


def test_population_is_the_sum_of_the_tribes_caves():
    state = build(tribe("Wolf", "C03", "H01", "T01", food=10), tribe("Tiger"),
                  pool=("H02",))
    state, events = play(state, 0, "recruit", card="H02", pay="food")
    assert events == [ev("caveman_recruited", 0, card="H02", pay="food", cost=4,
                         replaced=None)]
    assert scores(state, 0).cavemen == 5
    assert scores(state, 0).population == 6


# --------------------------------------------------------------------------- explore


def test_explore_without_an_explorer_pays_the_caves_teeth_cost():
    state = build(tribe("Wolf", teeth=4), tribe("Tiger"), pool=("C04",))
    state, events = play(state, 0, "explore", card="C04")
    assert events == [ev("cave_explored", 0, card="C04", teeth=3)]
    assert state.tribes[0].teeth == 1
    assert state.tribes[0].cards[-1] == "C04" and state.pool == ()
    assert scores(state, 0).population == 7


def test_explore_is_free_with_an_explorer():
    state = build(tribe("Wolf", "X01", teeth=0), tribe("Tiger"), pool=("C07",))
    state, events = play(state, 0, "explore", card="C07")
    assert events == [ev("cave_explored", 0, card="C07", teeth=0)]
    assert state.tribes[0].teeth == 0
    assert state.tribes[0].cards[-1] == "C07"


def test_explore_is_refused_without_an_explorer_or_enough_teeth():
    state = build(tribe("Wolf", teeth=2), tribe("Tiger"), pool=("C04",))
    assert act("explore", card="C04") not in legal_actions(state, 0)
    with pytest.raises(IllegalAction):
        play(state, 0, "explore", card="C04")


# --------------------------------------------------------------------------- hunt


@pytest.mark.parametrize(("beast", "allowed"),
                         [("B01", True), ("B06", True), ("B09", True), ("B10", False),
                          ("B27", False)])
def test_hunt_needs_a_hunting_score_at_least_the_beasts_requirement(beast, allowed):
    state = build(tribe("Wolf"), tribe("Tiger"), pool=(beast,))
    assert (act("hunt", card=beast) in legal_actions(state, 0)) is allowed


def test_hunt_above_the_hunting_score_is_refused():
    state = build(tribe("Wolf"), tribe("Tiger"), pool=("B10",))
    with pytest.raises(IllegalAction) as err:
        play(state, 0, "hunt", card="B10")
    assert err.value.code == "action/illegal"


@pytest.mark.parametrize(("add", "beast", "food", "teeth"),
                         [((), "B07", 1, 3), (("H08",), "B15", 6, 1)])
def test_hunt_gains_the_beasts_reward_and_discards_the_beast(add, beast, food, teeth):
    state = build(tribe("Wolf", *add, food=5, teeth=3), tribe("Tiger"), pool=(beast,),
                  draw=("B02",))
    state, events = play(state, 0, "hunt", card=beast)
    assert events == [ev("beast_hunted", 0, card=beast, food=food, teeth=teeth),
                      ev("casualty_drawn", 0, card="B02", match=False, protected=False)]
    assert (state.tribes[0].food, state.tribes[0].teeth) == (5 + food, 3 + teeth)
    assert state.discard == (beast, "B02")
    assert state.pool == ()
    assert pending(state) == [act_decision(1)]


# --------------------------------------------------------------------------- casualties


@pytest.mark.parametrize("drawn", ["B06", "B03", "B12"], ids=["hunter", "leader", "recruit"])
def test_casualty_draw_matches_the_stone_of_any_caveman_leader_included(drawn):
    # Wolf cavemen: Leader stone 3, starting Hunter stone 1, H02 stone 2.
    state = build(tribe("Wolf", "H02"), tribe("Tiger"), pool=("B07",), draw=(drawn,))
    state, events = play(state, 0, "hunt", card="B07")
    assert events == [ev("beast_hunted", 0, card="B07", food=1, teeth=3),
                      ev("casualty_drawn", 0, card=drawn, match=True, protected=False)]
    assert pending(state) == [Decision(0, "casualty")]
    assert legal_actions(state, 0) == [act("lose", card="SH-wolf"), act("lose", card="H02")]


def test_casualty_draw_ignores_other_tribes_and_caves_and_inventions():
    # B04 has stone 4, like C01, I07 and the Tiger Leader, but like no Wolf caveman.
    state = build(tribe("Wolf", "C01", "I07"), tribe("Tiger"), pool=("B07",),
                  draw=("B04",))
    state, events = play(state, 0, "hunt", card="B07")
    assert events == [ev("beast_hunted", 0, card="B07", food=1, teeth=3),
                      ev("casualty_drawn", 0, card="B04", match=False, protected=False)]
    assert state.tribes[0].cards == ("L-wolf", "SH-wolf", "HC-wolf", "C01", "I07")


def test_casualty_victim_is_the_hunters_choice_not_necessarily_the_matching_card():
    state = build(tribe("Wolf", "H02"), tribe("Tiger"), pool=("B07",), draw=("B06",))
    state, _ = play(state, 0, "hunt", card="B07")
    state, events = play(state, 0, "lose", card="H02")
    assert events == [ev("caveman_lost", 0, card="H02", reason="casualty", to="discard")]
    assert state.tribes[0].cards == ("L-wolf", "SH-wolf", "HC-wolf")
    assert state.discard == ("B07", "B06", "H02")
    assert pending(state) == [act_decision(1)]


def test_leader_cannot_be_lost_as_a_casualty():
    state = build(tribe("Wolf", "H02"), tribe("Tiger"), phase="casualty", hunter=0)
    with pytest.raises(IllegalAction):
        play(state, 0, "lose", card="L-wolf")


def test_casualty_match_with_only_the_leader_has_no_effect():
    state = build(tribe("Wolf", hunter=False), tribe("Tiger"), pool=("B01",),
                  draw=("B03",))
    state, events = play(state, 0, "hunt", card="B01")
    assert events == [ev("beast_hunted", 0, card="B01", food=2, teeth=0),
                      ev("casualty_drawn", 0, card="B03", match=True, protected=False)]
    assert state.tribes[0].cards == ("L-wolf", "HC-wolf")
    assert pending(state) == [act_decision(1)]


@pytest.mark.parametrize(("wolf", "victim", "to"),
                         [(tribe("Wolf"), "SH-wolf", "box"),
                          (tribe("Wolf", "H01", hunter=False), "H01", "discard")])
def test_casualty_with_one_candidate_is_automatic(wolf, victim, to):
    state = build(wolf, tribe("Tiger"), pool=("B07",), draw=("B06",))
    state, events = play(state, 0, "hunt", card="B07")
    assert events == [ev("beast_hunted", 0, card="B07", food=1, teeth=3),
                      ev("casualty_drawn", 0, card="B06", match=True, protected=False),
                      ev("caveman_lost", 0, card=victim, reason="casualty", to=to)]
    assert state.tribes[0].cards == ("L-wolf", "HC-wolf")
    assert pending(state) == [act_decision(1)]


def test_starting_hunter_lost_as_a_casualty_goes_to_the_box_not_the_discard_pile():
    state = build(tribe("Wolf"), tribe("Tiger"), pool=("B07",), draw=("B06",))
    state, _ = play(state, 0, "hunt", card="B07")
    assert state.box == ("SH-wolf",)
    assert state.discard == ("B07", "B06")


def test_fire_drawn_for_casualties_is_set_aside_and_shuffled_back_into_the_draw_pile():
    state = build(tribe("Wolf"), tribe("Tiger"), pool=("B07",), draw=(FIRE, "B02"))
    before = len(state.draw)
    state, events = play(state, 0, "hunt", card="B07")
    assert events == [ev("beast_hunted", 0, card="B07", food=1, teeth=3),
                      ev("fire_set_aside", 0, card=FIRE),
                      ev("casualty_drawn", 0, card="B02", match=False, protected=False),
                      ev("fire_shuffled_back", card=FIRE)]
    assert FIRE in state.draw and len(state.draw) == before - 1
    assert state.discard == ("B07", "B02")
    assert FIRE not in state.pool and not state.fire_locked


def test_card_drawn_after_fire_decides_the_casualty():
    state = build(tribe("Wolf"), tribe("Tiger"), pool=("B07",), draw=(FIRE, "B06"))
    state, events = play(state, 0, "hunt", card="B07")
    assert events == [ev("beast_hunted", 0, card="B07", food=1, teeth=3),
                      ev("fire_set_aside", 0, card=FIRE),
                      ev("casualty_drawn", 0, card="B06", match=True, protected=False),
                      ev("fire_shuffled_back", card=FIRE),
                      ev("caveman_lost", 0, card="SH-wolf", reason="casualty", to="box")]
    assert FIRE in state.draw


# --------------------------------------------------------------------------- exhaustion


def test_deck_running_out_in_a_casualty_draw_reshuffles_the_discard_pile_and_locks_fire():
    state = build(tribe("Wolf"), tribe("Tiger"), pool=("B07",), draw=(FIRE, "B02"),
                  rest="discard")
    old_discard = state.discard
    state, events = play(state, 0, "hunt", card="B07")
    assert events == [ev("beast_hunted", 0, card="B07", food=1, teeth=3),
                      ev("fire_set_aside", 0, card=FIRE),
                      ev("deck_exhausted", reshuffled=len(old_discard) + 1, fire_locked=True),
                      ev("casualty_drawn", 0, card="B02", match=False, protected=False),
                      ev("fire_to_pool", card=FIRE)]
    assert sorted(state.draw) == sorted((*old_discard, "B07"))
    assert state.discard == ("B02",)
    assert state.fire_locked and state.pool == (FIRE,)


def test_fire_as_the_last_card_of_the_deck_in_a_casualty_draw_is_locked_into_the_pool():
    state = build(tribe("Wolf", hunter=False), tribe("Tiger"), pool=("B01",), draw=(FIRE,),
                  rest="discard")
    reshuffled = (*state.discard, "B01")
    state, events = play(state, 0, "hunt", card="B01")
    drawn = events[3].data["card"]
    assert events == [ev("beast_hunted", 0, card="B01", food=2, teeth=0),
                      ev("deck_exhausted", reshuffled=len(reshuffled), fire_locked=True),
                      ev("fire_set_aside", 0, card=FIRE),
                      ev("casualty_drawn", 0, card=drawn, match=DECK.card(drawn).stone == 3,
                         protected=False),
                      ev("fire_to_pool", card=FIRE)]
    assert sorted((*state.draw, drawn)) == sorted(reshuffled)
    assert state.discard == (drawn,)
    assert state.fire_locked and state.pool == (FIRE,)


def test_deck_running_out_in_the_draw_phase_reshuffles_the_discard_pile_and_locks_fire():
    state = last_action(tribe("Wolf"), tribe("Tiger"), draw=("B01", FIRE), rest="discard")
    old_discard = state.discard
    state, events = play(state, 0, "forage")
    new = list(state.pool[2:])
    assert events == [ev("foraged", 0, food=2), ev("round_started", round=3),
                      ev("conch_passed", 0, to=1),
                      ev("deck_exhausted", reshuffled=len(old_discard), fire_locked=True),
                      ev("cards_drawn", cards=["B01", FIRE, *new])]
    assert len(new) == 2
    assert sorted((*state.draw, *new)) == sorted(old_discard)
    assert state.discard == ()
    assert state.fire_locked


def test_deck_and_discard_pile_both_empty_means_the_pool_gets_fewer_cards():
    state = last_action(tribe("Wolf"), tribe("Tiger"), pool=(FIRE,), fire_locked=True,
                        draw=("B01",), rest="box")
    state, events = play(state, 0, "forage")
    assert events == [ev("foraged", 0, food=2), ev("round_started", round=3),
                      ev("conch_passed", 0, to=1),
                      ev("deck_exhausted", reshuffled=0, fire_locked=False),
                      ev("cards_drawn", cards=["B01"])]
    assert state.pool == (FIRE, "B01")
    assert state.draw == () and state.discard == ()


def test_no_cards_are_drawn_while_deck_and_discard_pile_are_empty():
    state = last_action(tribe("Wolf"), tribe("Tiger"), pool=(FIRE,), fire_locked=True,
                        rest="box")
    state, events = play(state, 0, "forage")
    assert events == [ev("foraged", 0, food=2), ev("round_started", round=3),
                      ev("conch_passed", 0, to=1), ev("cards_drawn", cards=[])]
    assert state.pool == (FIRE,)
    assert pending(state) == [bid_decision(1, 0, 3)]


# --------------------------------------------------------------------------- discard phase


@pytest.mark.parametrize(("players", "conch", "right"),
                         [(2, 0, 1), (3, 0, 2), (4, 2, 1), (5, 1, 0)])
def test_discard_phase_is_played_by_the_conch_holders_right_neighbour(players, conch, right):
    state = last_action(*tribes(players), conch=conch, pool=POOL5)
    state, events = play(state, conch, "forage")
    assert events == [ev("foraged", conch, food=2)]
    assert pending(state) == [Decision(right, "discard", (("keep", 3),))]


def test_discard_phase_discards_the_pool_down_to_three_cards():
    state = last_action(tribe("Wolf"), tribe("Tiger"), tribe("Snake"), pool=POOL5, draw=TOP)
    state, _ = play(state, 0, "forage")
    assert legal_actions(state, 2) == [act("discard", cards=c) for c in combinations(POOL5, 2)]
    state, events = play(state, 2, "discard", cards=("B02", "B04"))
    assert events == [ev("pool_discarded", 2, cards=["B02", "B04"]),
                      ev("round_started", round=3), ev("conch_passed", 0, to=1),
                      ev("cards_drawn", cards=list(TOP[:5]))]
    assert state.pool == ("B01", "B03", "B05", *TOP[:5])
    assert state.discard == ("B02", "B04")


@pytest.mark.parametrize("cards", [("B01",), ("B01", "B02", "B03"), ()])
def test_discarding_other_than_down_to_three_cards_is_refused(cards):
    state = build(tribe("Wolf"), tribe("Tiger"), phase="discard", pool=POOL5)
    with pytest.raises(IllegalAction):
        play(state, 1, "discard", cards=cards)


def test_no_discard_decision_when_three_cards_or_fewer_remain():
    state = last_action(tribe("Wolf"), tribe("Tiger"), pool=("B01", "B02", "B03"), draw=TOP)
    state, events = play(state, 0, "forage")
    assert events == [ev("foraged", 0, food=2), ev("round_started", round=3),
                      ev("conch_passed", 0, to=1), ev("cards_drawn", cards=list(TOP[:4]))]
    assert state.pool == ("B01", "B02", "B03", *TOP[:4])


def test_discard_phase_first_shuffles_unlocked_fire_back_into_the_deck():
    state = last_action(tribe("Wolf"), tribe("Tiger"), pool=("B01", FIRE, "B02", "B03", "B04"))
    before = len(state.draw)
    state, events = play(state, 0, "forage")
    assert events == [ev("foraged", 0, food=2), ev("fire_shuffled_back", card=FIRE)]
    assert state.pool == ("B01", "B02", "B03", "B04")
    assert FIRE in state.draw and len(state.draw) == before + 1
    assert legal_actions(state, 1) == [act("discard", cards=(c,))
                                       for c in ("B01", "B02", "B03", "B04")]


def test_unlocked_fire_does_not_count_toward_the_three_kept_cards():
    state = last_action(tribe("Wolf"), tribe("Tiger"), pool=("B01", FIRE, "B02", "B03"))
    state, events = play(state, 0, "forage")
    assert [e.kind for e in events] == ["foraged", "fire_shuffled_back", "round_started",
                                        "conch_passed", "cards_drawn"]
    assert state.pool[:3] == ("B01", "B02", "B03") and len(state.pool) == 7
    assert state.phase == "auction"


def test_locked_fire_stays_in_the_pool_and_may_not_be_discarded():
    pool = ("B01", FIRE, "B02", "B03", "B04")
    state = last_action(tribe("Wolf"), tribe("Tiger"), pool=pool, fire_locked=True)
    state, events = play(state, 0, "forage")
    assert events == [ev("foraged", 0, food=2)]
    assert state.pool == pool
    assert legal_actions(state, 1) == [act("discard", cards=c) for c in
                                       combinations(("B01", "B02", "B03", "B04"), 2)]
    with pytest.raises(IllegalAction):
        play(state, 1, "discard", cards=("B01", FIRE))


# --------------------------------------------------------------------------- invent, Fire


@pytest.mark.parametrize(("card", "allowed"),
                         [("I01", True), ("I11", True), ("I09", False), ("I10", False)])
def test_invent_needs_an_inventing_score_at_least_the_requirement(card, allowed):
    state = build(tribe("Wolf"), tribe("Tiger"), pool=(card,))
    assert (act("invent", card=card) in legal_actions(state, 0)) is allowed


def test_invent_above_the_inventing_score_is_refused():
    state = build(tribe("Wolf"), tribe("Tiger"), pool=("I10",))
    with pytest.raises(IllegalAction):
        play(state, 0, "invent", card="I10")


def test_invention_goes_to_the_tableau_and_its_benefit_is_permanent():
    state = build(tribe("Wolf"), tribe("Tiger"), pool=("I11",))
    state, events = play(state, 0, "invent", card="I11")
    assert events == [ev("invention_made", 0, card="I11")]
    assert state.tribes[0].cards[-1] == "I11" and state.pool == ()
    state, _ = play(state, 1, "forage")
    state, events = play(state, 0, "forage")
    assert events[0] == ev("foraged", 0, food=4)


@pytest.mark.parametrize(("players", "cost"), FIRE_COSTS)
def test_conch_holder_may_invent_fire_with_inventing_equal_to_its_cost(players, cost):
    state = build(inventor("Wolf", cost), *tribes(players)[1:], pool=(FIRE,))
    assert scores(state, 0).inventing == cost
    assert act("invent", card=FIRE) in legal_actions(state, 0)


@pytest.mark.parametrize(("players", "cost"), FIRE_COSTS)
def test_fire_is_refused_with_inventing_below_its_cost(players, cost):
    state = build(inventor("Wolf", cost - 1), *tribes(players)[1:], pool=(FIRE,))
    assert scores(state, 0).inventing == cost - 1
    assert act("invent", card=FIRE) not in legal_actions(state, 0)
    with pytest.raises(IllegalAction):
        play(state, 0, "invent", card=FIRE)


def test_fire_is_refused_to_a_player_without_the_conch_even_with_enough_inventing():
    state = build(tribe("Wolf"), inventor("Tiger", 10), pool=(FIRE,), acted=1)
    assert pending(state) == [act_decision(1)]
    assert act("invent", card=FIRE) not in legal_actions(state, 1)
    with pytest.raises(IllegalAction) as err:
        play(state, 1, "invent", card=FIRE)
    assert err.value.code == "action/illegal"


def test_inventing_fire_wins_the_game_at_once():
    state = build(inventor("Wolf", 10), tribe("Tiger"), pool=(FIRE, "B01"))
    state, events = play(state, 0, "invent", card=FIRE)
    assert events == [ev("fire_invented", 0, card=FIRE)]
    assert result(state) == Result((0,), "fire")
    assert pending(state) == []
    assert state.tribes[0].cards[-1] == FIRE


def test_conch_holder_may_invent_fire_as_his_second_action():
    state = build(inventor("Wolf", 10), tribe("Tiger"), pool=(FIRE,), acted=2)
    state, events = play(state, 0, "invent", card=FIRE)
    assert events == [ev("fire_invented", 0, card=FIRE)]
    assert result(state) == Result((0,), "fire")


def test_no_action_is_accepted_once_fire_is_invented():
    state = build(inventor("Wolf", 10), tribe("Tiger"), pool=(FIRE,))
    state, _ = play(state, 0, "invent", card=FIRE)
    with pytest.raises(GameOver) as err:
        play(state, 1, "forage")
    assert err.value.code == "game/over"


def test_host_may_abandon_a_game_with_no_winner():
    state, events = abandon(build(tribe("Wolf"), tribe("Tiger")))
    assert events == [Event("game_abandoned")]
    assert result(state) == Result((), "abandoned")
    assert pending(state) == []


# --------------------------------------------------------------------------- effect kinds


def test_flat_bonus_raises_a_score():
    state = build(tribe("Wolf", "I01"), tribe("Tiger"), pool=("B10",))
    state, events = play(state, 0, "hunt", card="B10")
    assert events[0] == ev("beast_hunted", 0, card="B10", food=5, teeth=1)


@pytest.mark.parametrize(("add", "beast", "allowed"),
                         [(("I02",), "B10", True), (("I02",), "B13", False),
                          (("H01", "I02"), "B25", True)])
def test_bonus_per_card_counts_the_tribes_cards_of_that_kind(add, beast, allowed):
    # Bow: +1 Hunting per Hunter. Wolf alone has Hunting 3 and one Hunter.
    state = build(tribe("Wolf", *add), tribe("Tiger"), pool=(beast,))
    assert (act("hunt", card=beast) in legal_actions(state, 0)) is allowed


def test_bonus_per_elder_raises_foraging():
    state = build(tribe("Wolf", "E01", "E02", "I12", food=0), tribe("Tiger"))
    state, events = play(state, 0, "forage")
    assert events == [ev("foraged", 0, food=8)]


@pytest.mark.parametrize(("add", "hunting"),
                         [(("I03",), 3), (("H03", "I03"), 8), (("H03", "H09", "I03"), 9)])
def test_bonus_with_a_minimum_is_flat_and_needs_enough_cards(add, hunting):
    # Pit Trap: +3 Hunting if the tribe has at least 2 Hunters.
    state = build(tribe("Wolf", *add), tribe("Tiger"), pool=("B27",))
    assert scores(state, 0).hunting == hunting
    assert (act("hunt", card="B27") in legal_actions(state, 0)) is (hunting >= 8)


@pytest.mark.parametrize(("add", "allowed"),
                         [(("T01", "I08"), False), (("T01", "T03", "I08"), True)])
def test_inventing_bonus_with_a_minimum_unlocks_an_invention(add, allowed):
    # Cave Painting: +1 Inventing with 2 Thinkers; Counting Sticks needs Inventing 4.
    state = build(tribe("Wolf", "C03", *add), tribe("Tiger"), pool=("I10",))
    assert (act("invent", card="I10") in legal_actions(state, 0)) is allowed


def test_population_bonus_makes_room_for_a_recruit():
    state = build(tribe("Wolf", "H01", "T01", "I18", food=10), tribe("Tiger"), pool=("H02",))
    state, events = play(state, 0, "recruit", card="H02", pay="food")
    assert events == [ev("caveman_recruited", 0, card="H02", pay="food", cost=4,
                         replaced=None)]
    assert scores(state, 0).cavemen == 5


def test_recruit_discount_lowers_both_costs():
    # Drums: 1 less. H01 costs 4 Food or 2 Teeth.
    state = build(tribe("Wolf", "I16", food=3, teeth=1), tribe("Tiger"), pool=("H01",))
    assert legal_actions(state, 0) == [FORAGE, act("recruit", card="H01", pay="food"),
                                       act("recruit", card="H01", pay="teeth")]
    state, events = play(state, 0, "recruit", card="H01", pay="teeth")
    assert events == [ev("caveman_recruited", 0, card="H01", pay="teeth", cost=1,
                         replaced=None)]
    assert state.tribes[0].teeth == 0


def test_recruit_discount_for_a_role_applies_only_to_that_role():
    # Storytelling: Thinkers 2 less. T01 costs 3 Food or 2 Teeth, H01 4 Food or 2 Teeth.
    state = build(tribe("Wolf", "I17", food=1, teeth=0), tribe("Tiger"), pool=("T01", "H01"))
    assert legal_actions(state, 0) == [FORAGE, act("recruit", card="T01", pay="food"),
                                       act("recruit", card="T01", pay="teeth")]
    state, events = play(state, 0, "recruit", card="T01", pay="food")
    assert events == [ev("caveman_recruited", 0, card="T01", pay="food", cost=1,
                         replaced=None)]
    assert state.tribes[0].food == 0


def test_discounts_add_up_but_never_below_zero():
    state = build(tribe("Wolf", "I16", "I17", food=0, teeth=0), tribe("Tiger"),
                  pool=("T01",))
    state, events = play(state, 0, "recruit", card="T01", pay="teeth")
    assert events == [ev("caveman_recruited", 0, card="T01", pay="teeth", cost=0,
                         replaced=None)]
    assert (state.tribes[0].food, state.tribes[0].teeth) == (0, 0)


def test_explore_discount_lowers_the_caves_teeth_cost():
    # Trail Markers: caves 2 Teeth less. C04 costs 3 Teeth.
    state = build(tribe("Wolf", "I14", teeth=1), tribe("Tiger"), pool=("C04",))
    state, events = play(state, 0, "explore", card="C04")
    assert events == [ev("cave_explored", 0, card="C04", teeth=1)]
    assert state.tribes[0].teeth == 0


def test_explore_effect_makes_exploring_free():
    # Raft: explore as with an Explorer. C07 costs 5 Teeth.
    state = build(tribe("Wolf", "I13", teeth=0), tribe("Tiger"), pool=("C07",))
    state, events = play(state, 0, "explore", card="C07")
    assert events == [ev("cave_explored", 0, card="C07", teeth=0)]


def test_income_at_feed_counts_the_tribes_cards():
    # Tribal Council: 1 Tooth per Elder each feed phase.
    state = last_pass(tribe("Wolf", "I04", "E01", "E02", food=10, teeth=0), tribe("Tiger"))
    state, events = play(state, 1, "pass")
    assert events[2:] == [ev("income_gained", 0, food=0, teeth=2, when="feed"),
                          ev("tribe_fed", 0, food=4), ev("tribe_fed", 1, food=1)]
    assert (state.tribes[0].food, state.tribes[0].teeth) == (6, 2)


def test_income_on_hunt():
    # Bone Necklace: 1 extra Tooth whenever the tribe hunts.
    state = build(tribe("Wolf", "I15", teeth=0), tribe("Tiger"), pool=("B07",),
                  draw=("B02",))
    state, events = play(state, 0, "hunt", card="B07")
    assert events == [ev("beast_hunted", 0, card="B07", food=1, teeth=3),
                      ev("income_gained", 0, food=0, teeth=1, when="hunt"),
                      ev("casualty_drawn", 0, card="B02", match=False, protected=False)]
    assert state.tribes[0].teeth == 4


def test_income_on_forage():
    # Fishing Net: 2 extra Food whenever the tribe forages.
    state = build(tribe("Wolf", "I20", food=0), tribe("Tiger"))
    state, events = play(state, 0, "forage")
    assert events == [ev("foraged", 0, food=2),
                      ev("income_gained", 0, food=2, teeth=0, when="forage")]
    assert state.tribes[0].food == 4


def test_income_on_recruit(tmp_path):
    deck_file = variant_deck(
        tmp_path, '{ kind = "income", resource = "teeth", amount = 1, when = "hunt" }',
        '{ kind = "income", resource = "teeth", amount = 1, when = "recruit" }')
    state = build(tribe("Wolf", "I15", food=10, teeth=0), tribe("Tiger"), pool=("H01",),
                  deck_file=deck_file)
    state, events = play(state, 0, "recruit", card="H01", pay="food")
    assert events == [ev("caveman_recruited", 0, card="H01", pay="food", cost=4,
                         replaced=None),
                      ev("income_gained", 0, food=0, teeth=1, when="recruit")]
    assert (state.tribes[0].food, state.tribes[0].teeth) == (6, 1)


def test_income_on_invent(tmp_path):
    deck_file = variant_deck(
        tmp_path, '{ kind = "income", resource = "food", amount = 2, when = "forage" }',
        '{ kind = "income", resource = "food", amount = 2, when = "invent" }')
    state = build(tribe("Wolf", "I20", food=0), tribe("Tiger"), pool=("I01",),
                  deck_file=deck_file)
    state, events = play(state, 0, "invent", card="I01")
    assert events == [ev("invention_made", 0, card="I01"),
                      ev("income_gained", 0, food=2, teeth=0, when="invent")]
    assert state.tribes[0].food == 2


def test_protection_against_casualties_cancels_a_match():
    # Healing Herbs. B06 (stone 1) matches the starting Hunter.
    state = build(tribe("Wolf", "I05"), tribe("Tiger"), pool=("B07",), draw=("B06",))
    state, events = play(state, 0, "hunt", card="B07")
    assert events == [ev("beast_hunted", 0, card="B07", food=1, teeth=3),
                      ev("casualty_drawn", 0, card="B06", match=True, protected=True)]
    assert state.tribes[0].cards == ("L-wolf", "SH-wolf", "HC-wolf", "I05")
    assert pending(state) == [act_decision(1)]


def test_protection_against_starvation_costs_no_caveman():
    # Clay Pots.
    state = last_pass(tribe("Wolf", "I07", "H01", food=1), tribe("Tiger"))
    state, events = play(state, 1, "pass")
    assert events[2:] == [ev("tribe_starved", 0, due=3, loss=None, why="protected"),
                          ev("tribe_fed", 1, food=1)]
    assert state.tribes[0].cards == ("L-wolf", "SH-wolf", "HC-wolf", "I07", "H01")
    assert state.tribes[0].food == 1
    assert pending(state) == [act_decision(0)]


def test_feeding_relief_lowers_the_food_due():
    # Smoked Meat: 1 Food less. The holder's 3 cavemen cost 2 Food instead of starving.
    state = last_pass(tribe("Wolf", "I06", "H01", food=2), tribe("Tiger"))
    state, events = play(state, 1, "pass")
    assert events[2:] == [ev("tribe_fed", 0, food=2), ev("tribe_fed", 1, food=1)]
    assert state.tribes[0].food == 0


def test_feeding_relief_never_goes_below_zero():
    state = last_pass(tribe("Wolf"), tribe("Tiger", "I06", food=0))
    state, events = play(state, 1, "pass")
    assert events[2:] == [ev("tribe_fed", 0, food=2), ev("tribe_fed", 1, food=0)]
    assert state.tribes[1].food == 0
    assert state.tribes[1].cards == ("L-tiger", "SH-tiger", "HC-tiger", "I06")


BONUS_TESTS = {  # by score
    "hunting": "test_flat_bonus_raises_a_score",
    "inventing": "test_inventing_bonus_with_a_minimum_unlocks_an_invention",
    "foraging": "test_bonus_per_elder_raises_foraging",
    "population": "test_population_bonus_makes_room_for_a_recruit",
}
INCOME_TESTS = {  # by when
    "feed": "test_income_at_feed_counts_the_tribes_cards",
    "hunt": "test_income_on_hunt",
    "forage": "test_income_on_forage",
    "recruit": "test_income_on_recruit",
    "invent": "test_income_on_invent",
}
PROTECTION_TESTS = {  # by against
    "casualties": "test_protection_against_casualties_cancels_a_match",
    "starvation": "test_protection_against_starvation_costs_no_caveman",
}
EFFECT_TESTS = {
    "bonus": [*BONUS_TESTS.values(),
              "test_bonus_per_card_counts_the_tribes_cards_of_that_kind",
              "test_bonus_with_a_minimum_is_flat_and_needs_enough_cards"],
    "discount": ["test_recruit_discount_lowers_both_costs",
                 "test_recruit_discount_for_a_role_applies_only_to_that_role",
                 "test_discounts_add_up_but_never_below_zero",
                 "test_explore_discount_lowers_the_caves_teeth_cost"],
    "income": list(INCOME_TESTS.values()),
    "protection": list(PROTECTION_TESTS.values()),
    "feeding": ["test_feeding_relief_lowers_the_food_due",
                "test_feeding_relief_never_goes_below_zero"],
    "explore": ["test_explore_effect_makes_exploring_free"],
}


def test_every_effect_kind_of_the_deck_schema_has_a_scenario_here():
    assert set(EFFECT_TESTS) == set(EFFECT_KINDS)
    assert set(BONUS_TESTS) == set(EFFECT_KINDS["bonus"]["required"]["score"])
    assert set(INCOME_TESTS) == set(EFFECT_KINDS["income"]["required"]["when"])
    assert set(PROTECTION_TESTS) == set(EFFECT_KINDS["protection"]["required"]["against"])
    named = [name for names in EFFECT_TESTS.values() for name in names]
    assert all(callable(globals().get(name)) for name in named)


# --------------------------------------------------------------------------- defaults


def _bid_position():
    return build(tribe("Wolf"), tribe("Tiger"), phase="auction"), 0


def _act_position():
    return build(tribe("Wolf", food=10), tribe("Tiger"), pool=("H01", "B01", "I01")), 0


def _starve_position():
    return build(tribe("Wolf", "H01", "T01", food=0), tribe("Tiger"), phase="starve",
                 starving=(0,)), 0


def _casualty_position():
    return build(tribe("Wolf", "H02", "H03"), tribe("Tiger"), phase="casualty", hunter=0), 0


def _discard_position():
    return build(tribe("Wolf"), tribe("Tiger"), phase="discard", pool=POOL5), 1


POSITIONS = {"bid": _bid_position, "act": _act_position, "starve": _starve_position,
             "casualty": _casualty_position, "discard": _discard_position}


@pytest.mark.parametrize("kind", list(POSITIONS))
def test_timeout_default_of_every_decision_is_a_legal_action_that_applies(kind):
    state, seat = POSITIONS[kind]()
    assert [d.kind for d in pending(state) if d.seat == seat] == [kind]
    default = default_action(state, seat)
    assert default in legal_actions(state, seat)
    after, events = apply(state, seat, default)
    check_invariants(after)
    assert events


def test_bid_timeout_default_is_pass():
    state, seat = _bid_position()
    assert default_action(state, seat) == PASS


def test_act_timeout_default_is_forage():
    state, seat = _act_position()
    assert default_action(state, seat) == FORAGE


LOSS_CASES = [(("H03", "H09"), "H09"), (("H09", "H03"), "H03"), (("T01", "H01"), "T01"),
              (("H01",), "H01"), (("E04", "T02", "X04"), "X04"), (("T02", "E04", "H01"), "T02")]


@pytest.mark.parametrize("phase", ["starve", "casualty"])
@pytest.mark.parametrize(("add", "weakest"), LOSS_CASES)
def test_forced_loss_default_is_the_lowest_total_ability_newest_on_ties(phase, add, weakest):
    # Total abilities: SH-wolf 3, H01 3, H03 2, H09 2, T01 1, T02 2, X04 2, E04 4.
    state = build(tribe("Wolf", *add, food=0), tribe("Tiger"), phase=phase,
                  starving=(0,) if phase == "starve" else (),
                  hunter=0 if phase == "casualty" else None)
    default = default_action(state, 0)
    assert default == act("lose", card=weakest)
    assert default in legal_actions(state, 0)


def test_discard_default_keeps_the_three_cards_that_entered_the_pool_first():
    state = build(tribe("Wolf"), tribe("Tiger"), phase="discard",
                  pool=("B03", "B01", "B04", "B02", "B05"))
    default = default_action(state, 1)
    assert default == act("discard", cards=("B02", "B05"))
    state, events = apply(state, 1, default)
    assert events[0] == ev("pool_discarded", 1, cards=["B02", "B05"])
    assert state.pool[:3] == ("B03", "B01", "B04")


def test_discard_default_keeps_locked_fire_and_the_earliest_other_cards():
    state = build(tribe("Wolf"), tribe("Tiger"), phase="discard", fire_locked=True,
                  pool=("B01", "B02", "B03", FIRE, "B04"))
    default = default_action(state, 1)
    assert default == act("discard", cards=("B03", "B04"))
    assert default in legal_actions(state, 1)


def test_an_email_offers_each_way_to_discard_when_there_are_at_most_ten():
    """A discard of few outcomes is one click per outcome; many go to the game page."""
    import random

    from engine import cavemen
    from engine.cavemen.bots import BOTS

    seen = set()
    for seed in range(30):
        state = cavemen.setup(["A", "B", "C"], seed)
        rng = random.Random(seed)
        while (pending := cavemen.pending(state)) and len(seen) < 2:
            d = pending[0]
            if d.kind == "discard":
                legal = cavemen.legal_actions(state, d.seat)
                offered = cavemen.email_choices(state, d.seat)
                assert offered == (legal if len(legal) <= 10 else [])
                seen.add(len(legal) <= 10)
            state, _ = cavemen.apply(state, d.seat, BOTS["heuristic"](state, d.seat, rng))
        if seen == {True, False}:
            break
    assert True in seen
