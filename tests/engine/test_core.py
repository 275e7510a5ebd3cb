"""engine.core: actions and their notation, the seeded RNG, events, errors, the registry."""

from __future__ import annotations

import inspect
import json
import random
import re
import sys
from pathlib import Path

import pytest

from engine import cavemen
from engine.cavemen import DeckError
from engine.core import (
    Action,
    AmbiguousAction,
    Decision,
    EngineError,
    Event,
    Game,
    GameOver,
    IllegalAction,
    IncompleteAction,
    InvalidAction,
    NotYourTurn,
    Result,
    Rng,
    SetupError,
    StateCorrupt,
    check_turn,
    format_action,
    parse_action,
)
from engine.registry import games, get_game

if sys.version_info >= (3, 13):
    from typing import get_protocol_members
else:
    from typing_extensions import get_protocol_members

ROOT = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------- Action


def test_action_of_drops_none_and_sorts_parameters_by_name() -> None:
    action = Action.of("recruit", pay="food", card="H03", replace=None)
    assert action == Action("recruit", (("card", "H03"), ("pay", "food")))
    assert action.get("card") == "H03"
    assert action.get("replace") is None
    assert action.get("replace", "none") == "none"


def test_action_of_freezes_lists_into_tuples_so_actions_hash() -> None:
    action = Action.of("discard", cards=["B01", "C02"])
    assert action.get("cards") == ("B01", "C02")
    assert action == Action.of("discard", cards=("B01", "C02"))
    assert len({action, Action.of("discard", cards=("B01", "C02"))}) == 1


def test_action_of_refuses_mapping_parameters() -> None:
    with pytest.raises(InvalidAction) as info:
        Action.of("bid", amount={"value": 3})
    assert info.value.code == "action/invalid"


def test_actions_are_immutable() -> None:
    action = Action.of("bid", amount=3)
    with pytest.raises(AttributeError):
        action.kind = "pass"  # type: ignore[misc]


@pytest.mark.parametrize("action", [
    Action.of("pass"),
    Action.of("bid", amount=3),
    Action.of("recruit", card="H03", pay="teeth", replace="SH-wolf"),
    Action.of("discard", cards=("B01", "C02", "I03")),
    Action.of("discard", cards=()),
    Action.of("flag", on=True),
])
def test_action_json_round_trips_through_text(action: Action) -> None:
    data = action.to_json()
    assert data["kind"] == action.kind
    assert json.loads(json.dumps(data)) == data
    assert Action.from_json(json.loads(json.dumps(data))) == action


def test_action_to_json_gives_lists_for_tuples() -> None:
    assert Action.of("discard", cards=("B01", "C02")).to_json() == {
        "kind": "discard", "cards": ["B01", "C02"]}


def test_action_from_json_drops_null_parameters() -> None:
    assert Action.from_json({"kind": "recruit", "card": "H03", "replace": None}) == (
        Action.of("recruit", card="H03"))


@pytest.mark.parametrize("garbage", [
    None, 3, "bid 3", ["bid", 3], {}, {"amount": 3}, {"kind": 3}, {"kind": None},
    {"kind": ["bid"]}, {"kind": "bid", "amount": 1.5}, {"kind": "bid", "amount": {"x": 1}},
    {"kind": "discard", "cards": [["B01"]]}, {"kind": "discard", "cards": [1.5]},
    {"kind": "discard", "cards": [None]}, {"kind": "bid", 3: 3},
])
def test_action_from_json_refuses_garbage_with_invalid_action(garbage: object) -> None:
    with pytest.raises(InvalidAction) as info:
        Action.from_json(garbage)
    assert info.value.code == "action/invalid"
    assert info.value.message


# --------------------------------------------------------------------------- notation


@pytest.mark.parametrize(("action", "text"), [
    (Action.of("pass"), "pass"),
    (Action.of("bid", amount=3), "bid 3"),
    (Action.of("recruit", card="H03", pay="teeth"), "recruit H03 teeth"),
    (Action.of("recruit", pay="food", card="H03", replace="SH-wolf"),
     "recruit H03 food SH-wolf"),
    (Action.of("discard", cards=("B01", "C02")), "discard B01 C02"),
])
def test_format_action_writes_kind_then_values_in_parameter_name_order(action: Action,
                                                                      text: str) -> None:
    assert format_action(action) == text
    assert str(action) == text


LEGAL = [
    Action.of("pass"),
    Action.of("bid", amount=1),
    Action.of("bid", amount=10),
    Action.of("recruit", card="H03", pay="food"),
    Action.of("recruit", card="H04", pay="food"),
    Action.of("recruit", card="H04", pay="teeth"),
    Action.of("discard", cards=("B01", "C02")),
]


@pytest.mark.parametrize("action", LEGAL)
def test_parse_action_reads_back_every_formatted_action(action: Action) -> None:
    assert parse_action(format_action(action), LEGAL) == action


@pytest.mark.parametrize(("text", "expected"), [
    ("bid 1", Action.of("bid", amount=1)),
    ("  BID   10 ", Action.of("bid", amount=10)),
    ("Pass", Action.of("pass")),
    ("p", Action.of("pass")),
    ("rec h03 f", Action.of("recruit", card="H03", pay="food")),
    ("recruit h04 t", Action.of("recruit", card="H04", pay="teeth")),
])
def test_parse_action_matches_exactly_or_by_a_unique_shortening_of_every_word(
        text: str, expected: Action) -> None:
    assert parse_action(text, LEGAL) == expected


@pytest.mark.parametrize(("text", "candidates"), [
    ("recruit h03", ["recruit H03 food"]),
    ("recruit H04", ["recruit H04 food", "recruit H04 teeth"]),
    ("discard b01", ["discard B01 C02"]),
    ("recruit", ["recruit H03 food", "recruit H04 food", "recruit H04 teeth"]),
    ("bid", ["bid 1", "bid 10"]),
])
def test_parse_action_never_fills_in_a_word_the_player_left_out(
        text: str, candidates: list[str]) -> None:
    with pytest.raises(IncompleteAction) as info:
        parse_action(text, LEGAL)
    assert info.value.code == "action/incomplete"
    assert info.value.data["text"] == text
    assert info.value.data["candidates"] == candidates


@pytest.mark.parametrize("text", ["bid 1", "Pass", "discard c02 b01"])
def test_a_form_command_matches_its_words_in_full(text: str) -> None:
    assert format_action(parse_action(text, LEGAL, exact=True)).lower().split() in (
        text.lower().split(), ["discard", "b01", "c02"])


@pytest.mark.parametrize("text", ["p", "rec h03 f", "recruit h03"])
def test_a_form_command_is_never_shortened_or_completed(text: str) -> None:
    with pytest.raises((IllegalAction, IncompleteAction)):
        parse_action(text, LEGAL, exact=True)


def test_a_shortening_that_fits_two_actions_is_ambiguous() -> None:
    with pytest.raises(AmbiguousAction) as info:
        parse_action("recruit h0 food", LEGAL)
    assert info.value.code == "action/ambiguous"
    assert info.value.data["candidates"] == ["recruit H03 food", "recruit H04 food"]


@pytest.mark.parametrize("text", ["bid 99", "bid 1 2", "recruit H05", "dance", "forage",
                                  "discard C02 C02", "pass now"])
def test_parse_action_refuses_an_illegal_command(text: str) -> None:
    with pytest.raises(IllegalAction) as info:
        parse_action(text, LEGAL)
    assert info.value.code == "action/illegal"
    assert info.value.data["text"] == text


def test_parse_action_reads_the_same_words_in_another_order() -> None:
    assert parse_action("discard C02 B01", LEGAL) == parse_action("discard B01 C02", LEGAL)
    assert format_action(parse_action("DISCARD c02 b01", LEGAL)) == "discard B01 C02"


def test_parse_action_names_an_unavailable_kind() -> None:
    with pytest.raises(IllegalAction, match="dance"):
        parse_action("dance", LEGAL)


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_parse_action_refuses_an_empty_command_as_invalid(text: str) -> None:
    with pytest.raises(InvalidAction) as info:
        parse_action(text, LEGAL)
    assert info.value.code == "action/invalid"


def test_parse_action_with_nothing_legal_is_illegal() -> None:
    with pytest.raises(IllegalAction):
        parse_action("pass", [])


def test_parse_action_round_trips_the_legal_actions_of_a_real_game() -> None:
    state = cavemen.setup(["a", "b", "c"], 8)
    rng = random.Random(8)
    for _ in range(60):
        seat = cavemen.pending(state)[0].seat
        legal = cavemen.legal_actions(state, seat)
        for action in legal:
            assert parse_action(format_action(action), legal) == action
        state, _ = cavemen.apply(state, seat, rng.choice(legal))


# --------------------------------------------------------------------------- Rng

ITEMS = tuple(range(52))


def test_rng_same_seed_and_counter_give_the_same_results() -> None:
    assert Rng(7).shuffled(ITEMS) == Rng(7).shuffled(ITEMS)
    assert Rng(7, 3).dice(10) == Rng(7, 3).dice(10)
    assert Rng(7, 3).randint(1, 10**9) == Rng(7, 3).randint(1, 10**9)


def test_rng_advances_its_counter_and_never_changes_itself() -> None:
    rng = Rng(7)
    first, after = rng.shuffled(ITEMS)
    assert rng == Rng(7, 0)
    assert after == Rng(7, 1)
    second, _ = after.shuffled(ITEMS)
    assert first != second
    assert sorted(first) == list(ITEMS)
    with pytest.raises(AttributeError):
        rng.counter = 5  # type: ignore[misc]


def test_rng_shuffled_returns_a_tuple_and_leaves_its_input_alone() -> None:
    items = list(ITEMS)
    out, _ = Rng(1).shuffled(items)
    assert isinstance(out, tuple) and items == list(ITEMS)


def test_different_seeds_give_different_shuffles() -> None:
    shuffles = {Rng(seed).shuffled(ITEMS)[0] for seed in range(200)}
    assert len(shuffles) == 200


def test_rng_is_unaffected_by_the_global_random_seed() -> None:
    saved = random.getstate()
    try:
        random.seed(1)
        a = Rng(5, 2).shuffled(ITEMS), Rng(5).dice(20), Rng(5).randint(0, 10**9)
        random.seed(2)
        random.random()
        b = Rng(5, 2).shuffled(ITEMS), Rng(5).dice(20), Rng(5).randint(0, 10**9)
        assert a == b
        random.seed(3)
        before = random.getstate()
        Rng(5).shuffled(ITEMS)
        assert random.getstate() == before
    finally:
        random.setstate(saved)


def test_rng_dice_and_randint_stay_in_range() -> None:
    rolls, rng = Rng(3).dice(500, sides=6)
    assert len(rolls) == 500 and set(rolls) == {1, 2, 3, 4, 5, 6}
    assert rng == Rng(3, 1)
    values = {Rng(3, c).randint(2, 4)[0] for c in range(100)}
    assert values == {2, 3, 4}


def test_rng_json_round_trip() -> None:
    rng = Rng(123456789012, 42)
    assert rng.to_json() == [123456789012, 42]
    assert Rng.from_json(json.loads(json.dumps(rng.to_json()))) == rng


@pytest.mark.parametrize("garbage", [None, "1,2", [1], [1, 2, 3], [1, True], [1.0, 2],
                                     ["1", 2], (1, 2), {"seed": 1, "counter": 2}])
def test_rng_from_json_refuses_garbage_as_corrupt_state(garbage: object) -> None:
    with pytest.raises(StateCorrupt) as info:
        Rng.from_json(garbage)
    assert info.value.code == "state/corrupt"


# --------------------------------------------------------------------------- values


def test_a_public_event_is_visible_to_every_seat_and_spectators() -> None:
    event = Event("beast_hunted", 1, {"card": "B01"})
    assert all(event.is_visible_to(seat) for seat in (None, 0, 1, 2, 3, 4))


def test_a_private_event_is_visible_only_to_its_seats() -> None:
    event = Event("card_drawn", 2, {"card": "C01"}, visible_to=(2, 4))
    assert event.is_visible_to(2) and event.is_visible_to(4)
    assert not event.is_visible_to(0)
    assert not event.is_visible_to(None)


def test_an_event_for_nobody_is_visible_to_nobody() -> None:
    event = Event("secret", None, {}, visible_to=())
    assert not any(event.is_visible_to(seat) for seat in (None, 0, 1))


def test_event_to_json() -> None:
    assert Event("foraged", 0, {"food": 3}).to_json() == {
        "kind": "foraged", "actor": 0, "data": {"food": 3}, "visible_to": None}
    assert Event("x", visible_to=(1,)).to_json() == {
        "kind": "x", "actor": None, "data": {}, "visible_to": [1]}


def test_decision_and_result_to_json() -> None:
    decision = Decision(2, "bid", (("high", 3), ("max", 5)))
    assert decision.get("high") == 3 and decision.get("nope", 0) == 0
    assert decision.to_json() == {"seat": 2, "kind": "bid", "data": {"high": 3, "max": 5}}
    assert Result((1,), "fire").to_json() == {"winners": [1], "reason": "fire"}


# --------------------------------------------------------------------------- errors

CODES = {
    EngineError: "engine/error",
    NotYourTurn: "turn/not_yours",
    IllegalAction: "action/illegal",
    InvalidAction: "action/invalid",
    AmbiguousAction: "action/ambiguous",
    GameOver: "game/over",
    StateCorrupt: "state/corrupt",
    SetupError: "setup/invalid",
    DeckError: "deck/invalid",
}


@pytest.mark.parametrize(("error", "code"), list(CODES.items()))
def test_every_engine_error_has_its_stable_code(error: type[EngineError], code: str) -> None:
    assert issubclass(error, EngineError)
    assert error.code == code
    assert re.fullmatch(r"[a-z]+/[a-z_]+", code)
    exc = error("something is wrong", seat=3, text="bid 9")
    assert exc.code == code and exc.message == "something is wrong" == str(exc)
    assert exc.data == {"seat": 3, "text": "bid 9"}
    assert code in repr(exc) and error.__name__ in repr(exc)


def test_error_codes_are_distinct() -> None:
    assert len(set(CODES.values())) == len(CODES)


def test_engine_errors_are_ordinary_exceptions() -> None:
    with pytest.raises(Exception, match="late"):
        raise GameOver("too late")


# --------------------------------------------------------------------------- registry


def test_get_game_finds_both_games() -> None:
    from engine import stoneage

    assert get_game("cavemen") is cavemen and get_game("stoneage") is stoneage
    assert games() == {"cavemen": cavemen, "stoneage": stoneage}


def test_nothing_in_the_engine_imports_the_registry() -> None:
    """The registry names the games; no game (nor the core) imports it back."""
    engine = ROOT / "engine"
    for path in engine.rglob("*.py"):
        if path.name in ("registry.py", "__main__.py", "sim.py"):
            continue  # the tools that look games up by name
        assert "engine.registry" not in path.read_text(), path


@pytest.mark.parametrize("name", ["chess", "", "Cavemen", "stoneage "])
def test_get_game_refuses_an_unknown_name_with_setup_error(name: str) -> None:
    with pytest.raises(SetupError) as info:
        get_game(name)
    assert info.value.code == "setup/invalid"
    assert info.value.data == {"game": name}


@pytest.mark.parametrize("name", sorted(games()))
def test_every_registered_game_offers_the_contract(name: str) -> None:
    game = games()[name]
    assert name == game.NAME
    assert 1 <= game.MIN_PLAYERS <= game.MAX_PLAYERS
    assert isinstance(game.TITLE, str) and game.TITLE
    for member in sorted(get_protocol_members(Game)):  # the contract, engine/core.py
        assert hasattr(game, member), member
        if inspect.isfunction(getattr(Game, member)):
            assert callable(getattr(game, member)), member
    # the server's stand-in (heuristic), and the levels a host may seat (easy, strong)
    assert set(game.BOTS) == {"random", "heuristic", "easy", "strong"}
    assert callable(game.stats.summary) and callable(game.stats.report)


def test_check_turn_says_whose_turn_it_is() -> None:
    state = cavemen.setup(["a", "b", "c"], 4)
    seat = cavemen.pending(state)[0].seat
    check_turn(cavemen, state, seat)
    with pytest.raises(NotYourTurn) as info:
        check_turn(cavemen, state, (seat + 1) % 3)
    assert info.value.data == {"seat": (seat + 1) % 3}
    over, _ = cavemen.abandon(state)
    with pytest.raises(GameOver):
        check_turn(cavemen, over, seat)
