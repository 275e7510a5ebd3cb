"""The Cavemen deck file: the standard deck meets cavemen.md, broken files are refused
with a DeckError naming the card and the problem, other valid files can be played."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import cavemen
from engine.cavemen.bots import BOTS
from engine.cavemen.deck import (
    CAVEMAN_ROLES,
    EFFECT_KINDS,
    STANDARD_DECK,
    TRIBES,
    Deck,
    DeckError,
    load_deck,
    parse_deck,
)
from engine.core import EngineError, StateCorrupt
from engine.sim import play_game

ROOT = Path(__file__).resolve().parents[2]
STANDARD_TEXT = STANDARD_DECK.read_text(encoding="utf-8")
SEPARATOR = "\n[[card]]\n"

# --------------------------------------------------------------------------- text edits


def split_cards(text: str) -> tuple[str, list[str]]:
    head, *cards = text.split(SEPARATOR)
    return head, cards


def join_cards(head: str, cards: list[str]) -> str:
    return SEPARATOR.join([head, *cards])


def card_index(cards: list[str], card_id: str) -> int:
    found = [i for i, c in enumerate(cards) if c.startswith(f'id = "{card_id}"\n')]
    assert len(found) == 1, f"card {card_id} not found once in the standard deck"
    return found[0]


def edit_card(card_id: str, old: str, new: str, text: str = STANDARD_TEXT) -> str:
    """Replace ``old`` (which must occur exactly once) inside one card's block."""
    head, cards = split_cards(text)
    i = card_index(cards, card_id)
    assert cards[i].count(old) == 1, f"{old!r} not exactly once in card {card_id}"
    cards[i] = cards[i].replace(old, new)
    return join_cards(head, cards)


def drop_card(card_id: str, text: str = STANDARD_TEXT) -> str:
    head, cards = split_cards(text)
    del cards[card_index(cards, card_id)]
    return join_cards(head, cards)


def copy_card(card_id: str, new_id: str, text: str = STANDARD_TEXT) -> str:
    head, cards = split_cards(text)
    block = cards[card_index(cards, card_id)]
    copy = block.replace(f'id = "{card_id}"', f'id = "{new_id}"', 1)
    return join_cards(head, [*cards, copy.rstrip("\n") + "\n"])


def edit_head(old: str, new: str, text: str = STANDARD_TEXT) -> str:
    head, cards = split_cards(text)
    assert head.count(old) == 1, old
    return join_cards(head.replace(old, new), cards)


@pytest.fixture
def write_deck(tmp_path: Path) -> Callable[[str | bytes], Path]:
    """Write deck text to a fresh file (a fresh path each time: loading caches by path)."""
    count = iter(range(1000))

    def write(content: str | bytes) -> Path:
        path = tmp_path / f"deck{next(count)}.toml"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return write


# --------------------------------------------------------------------------- standard deck


@pytest.fixture(scope="module")
def deck() -> Deck:
    return load_deck()


def deck_cards(deck: Deck, ctype: str | None = None):
    return [deck.card(c) for c in deck.deck_ids if ctype is None or deck.card(c).type == ctype]


def test_the_standard_deck_is_the_default(deck: Deck) -> None:
    assert load_deck(STANDARD_DECK) == deck
    assert load_deck(STANDARD_DECK).digest == deck.digest
    assert cavemen.setup(["a", "b"], 1).deck == deck


def test_the_standard_deck_is_marked_as_a_reconstruction(deck: Deck) -> None:
    assert "reconstruction" in deck.name.lower()


def test_the_deck_has_86_cards(deck: Deck) -> None:
    assert len(deck.deck_ids) == 86
    assert len(set(deck.deck_ids)) == 86


@pytest.mark.parametrize(("ctype", "count"), [
    ("hunter", 10), ("thinker", 10), ("elder", 5), ("explorer", 5), ("beast", 27),
    ("invention", 20), ("fire", 1), ("cave", 8), ("leader", 0),
])
def test_the_deck_has_the_rulebook_count_of_each_type(deck: Deck, ctype: str,
                                                        count: int) -> None:
    assert len(deck_cards(deck, ctype)) == count


def test_the_deck_has_30_cavemen_and_21_inventions_counting_fire(deck: Deck) -> None:
    types = Counter(c.type for c in deck_cards(deck))
    assert sum(types[r] for r in CAVEMAN_ROLES) == 30
    assert types["invention"] + types["fire"] == 21


def test_there_are_15_starting_cards_a_leader_hunter_and_home_cave_per_tribe(
        deck: Deck) -> None:
    starting = [c for c in deck.cards.values() if c.tribe is not None]
    assert len(starting) == 15
    assert len(deck.cards) == 101
    assert set(deck.starting) == set(TRIBES)
    for tribe, (leader, hunter, cave) in deck.starting.items():
        assert [deck.card(c).type for c in (leader, hunter, cave)] == ["leader", "hunter",
                                                                        "cave"]
        assert {deck.card(c).tribe for c in (leader, hunter, cave)} == {tribe}
        assert not {leader, hunter, cave} & set(deck.deck_ids)


def test_every_card_has_a_stone_marker_from_1_to_5(deck: Deck) -> None:
    assert all(1 <= c.stone <= 5 for c in deck.cards.values())


def test_each_stone_value_is_on_16_to_18_deck_cards(deck: Deck) -> None:
    stones = Counter(c.stone for c in deck_cards(deck))
    assert set(stones) == {1, 2, 3, 4, 5}
    assert all(16 <= n <= 18 for n in stones.values()), stones


def test_home_caves_hold_4(deck: Deck) -> None:
    for _, _, cave in deck.starting.values():
        assert deck.card(cave).population == 4


def test_deck_caves_hold_2_to_4_and_cost_teeth(deck: Deck) -> None:
    for cave in deck_cards(deck, "cave"):
        assert cave.population in (2, 3, 4), cave
        assert cave.cost_teeth > 0, cave


def test_thinkers_invent_1_or_2(deck: Deck) -> None:
    assert {c.inventing for c in deck_cards(deck, "thinker")} <= {1, 2}


def test_deck_cavemen_print_a_food_and_a_teeth_cost(deck: Deck) -> None:
    for role in CAVEMAN_ROLES:
        for card in deck_cards(deck, role):
            assert card.cost_food > 0 and card.cost_teeth > 0, card
            assert card.ability > 0, card


def test_explorers_can_hunt(deck: Deck) -> None:
    assert all(c.hunting >= 1 for c in deck_cards(deck, "explorer"))


def test_beasts_have_a_requirement_and_a_reward(deck: Deck) -> None:
    for beast in deck_cards(deck, "beast"):
        assert beast.requirement >= 1, beast
        assert beast.reward_food + beast.reward_teeth > 0, beast


def test_the_styracosaurus_gives_6_food_and_1_tooth(deck: Deck) -> None:
    [styracosaurus] = [c for c in deck_cards(deck, "beast") if c.name == "Styracosaurus"]
    assert (styracosaurus.reward_food, styracosaurus.reward_teeth) == (6, 1)


def test_there_is_a_tyrannosaurus(deck: Deck) -> None:
    assert [c.name for c in deck_cards(deck, "beast")].count("Tyrannosaurus") == 1


def test_tribal_council_gives_a_tooth_per_elder(deck: Deck) -> None:
    [council] = [c for c in deck_cards(deck, "invention") if c.name == "Tribal Council"]
    [effect] = council.effects
    assert effect.kind == "income"
    assert (effect.get("resource"), effect.get("per"), effect.get("amount")) == (
        "teeth", "elder", 1)


def test_one_invention_prevents_hunting_casualties(deck: Deck) -> None:
    protecting = [c for c in deck_cards(deck, "invention")
                  if any(e.kind == "protection" and e.get("against") == "casualties"
                         for e in c.effects)]
    assert len(protecting) == 1


def test_inventions_have_a_requirement_and_known_effects(deck: Deck) -> None:
    for card in deck_cards(deck, "invention"):
        assert card.requirement >= 1 and card.effects, card
        assert all(e.kind in EFFECT_KINDS for e in card.effects), card


def test_starting_hunters_carry_stones_1_to_5_in_tribe_order(deck: Deck) -> None:
    stones = [deck.card(deck.starting[t][1]).stone for t in TRIBES]
    assert stones == [1, 2, 3, 4, 5]


def test_fire_costs_10_9_7_7(deck: Deck) -> None:
    assert dict(deck.fire_cost) == {2: 10, 3: 9, 4: 7, 5: 7}
    assert deck.card(deck.fire_id).type == "fire"


def test_the_digest_is_stable_and_follows_the_bytes(deck: Deck) -> None:
    raw = STANDARD_DECK.read_bytes()
    assert parse_deck(raw).digest == deck.digest
    assert parse_deck(raw + b"\n# a comment\n").digest != deck.digest


# --------------------------------------------------------------------------- broken files

BROKEN: dict[str, tuple[Callable[[], str | bytes], list[str]]] = {
    "a hunter missing": (lambda: drop_card("H10"), ["hunter", "9", "10"]),
    "a beast too many": (lambda: copy_card("B01", "B28"), ["beast", "28", "27"]),
    "a hunter turned thinker": (
        lambda: edit_card("H10", 'type = "hunter"', 'type = "thinker"'), ["hunter", "9"]),
    "fire missing": (lambda: drop_card("FIRE"), ["fire", "0", "1"]),
    "unknown effect kind": (
        lambda: edit_card("I06", 'kind = "feeding"', 'kind = "teleport"'),
        ["I06", "teleport", "effect kind"]),
    "stone marker 6": (lambda: edit_card("H01", "stone = 1\n", "stone = 6\n"),
                       ["H01", "stone", "6", "1-5"]),
    "stone marker 0": (lambda: edit_card("B01", "stone = 1\n", "stone = 0\n"),
                       ["B01", "stone", "0"]),
    "stone spread": (lambda: edit_card("H02", "stone = 2\n", "stone = 1\n"),
                     ["stone marker 1", "19", "16", "18"]),
    "missing name": (lambda: edit_card("H01", 'name = "Spear Thrower"\n', ""),
                     ["H01", "missing", "name"]),
    "missing stone": (lambda: edit_card("T03", "stone = 3\n", ""),
                      ["T03", "missing", "stone"]),
    "missing beast requirement": (lambda: edit_card("B05", "requirement = 2\n", ""),
                                  ["B05", "missing", "requirement"]),
    "missing caveman cost": (lambda: edit_card("E02", "cost_teeth = 2\n", ""),
                             ["E02", "missing", "cost_teeth"]),
    "missing cave population": (lambda: edit_card("C01", "population = 2\n", ""),
                                ["C01", "missing", "population"]),
    "missing invention effects": (
        lambda: edit_card("I09", 'effects = [\n  { kind = "bonus", score = "inventing", '
                                 'amount = 1 },\n]\n', ""), ["I09", "missing", "effects"]),
    "missing id": (lambda: edit_card("H01", 'id = "H01"\n', ""), ["missing", "id"]),
    "duplicate id": (lambda: edit_card("H02", 'id = "H02"', 'id = "H01"'),
                     ["H01", "duplicate"]),
    "unknown type": (lambda: edit_card("H01", 'type = "hunter"', 'type = "wizard"'),
                     ["H01", "wizard", "type"]),
    "unknown field": (lambda: edit_card("H01", "stone = 1\n", "stone = 1\nmagic = 3\n"),
                      ["H01", "magic"]),
    "unknown tribe": (lambda: edit_card("SH-wolf", 'tribe = "Wolf"', 'tribe = "Fox"'),
                      ["SH-wolf", "Fox"]),
    "negative cost": (lambda: edit_card("H01", "cost_food = 4", "cost_food = -1"),
                      ["H01", "cost_food"]),
    "boolean score": (lambda: edit_card("H01", "hunting = 2", "hunting = true"),
                      ["H01", "hunting"]),
    "fractional reward": (lambda: edit_card("B01", "reward_food = 2", "reward_food = 2.5"),
                          ["B01", "reward_food"]),
    "effect score unknown": (
        lambda: edit_card("I01", 'score = "hunting"', 'score = "luck"'),
        ["I01", "score", "luck"]),
    "effect counts an unknown thing": (
        lambda: edit_card("I02", 'per = "hunter"', 'per = "dragon"'),
        ["I02", "per", "dragon"]),
    "effect amount zero": (
        lambda: edit_card("I09", "amount = 1 }", "amount = 0 }"), ["I09", "amount", "0"]),
    "effect amount text": (
        lambda: edit_card("I09", "amount = 1 }", 'amount = "1" }'), ["I09", "amount"]),
    "effect parameter unknown": (
        lambda: edit_card("I13", '{ kind = "explore" }', '{ kind = "explore", speed = 2 }'),
        ["I13", "speed"]),
    "effect parameter missing": (
        lambda: edit_card("I05", ', against = "casualties"', ""), ["I05", "against"]),
    "effect min without per": (
        lambda: edit_card("I09", "amount = 1 }", "amount = 1, min = 2 }"),
        ["I09", "min", "per"]),
    "effect without kind": (
        lambda: edit_card("I06", 'kind = "feeding", ', ""), ["I06", "kind"]),
    "effect not a table": (
        lambda: edit_card("I13", '{ kind = "explore" }', '"explore"'), ["I13", "kind"]),
    "invention without effects": (
        lambda: edit_card("I13", '  { kind = "explore" },\n', ""), ["I13", "effect"]),
    "home cave empty": (lambda: edit_card("HC-owl", "population = 4", "population = 0"),
                        ["HC-owl", "population"]),
    "leader without tribe": (lambda: edit_card("L-wolf", 'tribe = "Wolf"\n', ""),
                             ["L-wolf", "leader", "tribe"]),
    "starting hunters share a stone": (
        lambda: edit_card("SH-tiger", "stone = 2", "stone = 1"), ["starting hunter", "stone"]),
    "a home cave in the wrong tribe": (
        lambda: edit_card("HC-bear", 'tribe = "Bear"', 'tribe = "Owl"'),
        ["tribe Owl", "HC-bear"]),
    "fire cost missing for 5": (lambda: edit_head('"5" = 7\n', ""), ["fire_cost", "5"]),
    "fire cost zero": (lambda: edit_head('"2" = 10', '"2" = 0'), ["fire_cost", "2"]),
    "fire cost table missing": (
        lambda: edit_head('[fire_cost]\n"2" = 10\n"3" = 9\n"4" = 7\n"5" = 7\n', ""),
        ["fire_cost"]),
    "deck name missing": (
        lambda: edit_head('name = "pbem standard (reconstruction)"\n', ""), ["[deck]", "name"]),
    "no cards": (lambda: split_cards(STANDARD_TEXT)[0], ["no [[card]]"]),
    "not TOML": (lambda: "this is [[[ not TOML at all\n", ["not a TOML file"]),
    "truncated TOML": (lambda: STANDARD_TEXT[: len(STANDARD_TEXT) // 2] + '"',
                       ["not a TOML file"]),
    "not UTF-8": (lambda: b"\xff\xfe\x00garbage", ["not a TOML file"]),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_deck_file_is_refused_naming_the_card_and_problem(
        case: str, write_deck: Callable[[str | bytes], Path]) -> None:
    make, expected = BROKEN[case]
    path = write_deck(make())
    with pytest.raises(DeckError) as info:
        load_deck(path)
    error = info.value
    assert error.code == "deck/invalid"
    assert isinstance(error, EngineError)
    for fragment in expected:
        assert fragment in error.message, f"{fragment!r} not in {error.message!r}"


@pytest.mark.parametrize("case", ["a hunter missing", "unknown effect kind", "not TOML"])
def test_setup_with_a_broken_deck_file_raises_deck_error(
        case: str, write_deck: Callable[[str | bytes], Path]) -> None:
    path = write_deck(BROKEN[case][0]())
    with pytest.raises(DeckError) as info:
        cavemen.setup(["a", "b"], 1, {"deck": str(path)})
    assert info.value.code == "deck/invalid"


def test_the_text_edits_themselves_leave_a_valid_deck(
        write_deck: Callable[[str | bytes], Path]) -> None:
    """The helpers only break what each case breaks: a harmless edit still loads."""
    text = edit_card("H01", 'name = "Spear Thrower"', 'name = "Spear Chucker"')
    text = edit_head("[fire_cost]", "[fire_cost]", text)
    assert load_deck(write_deck(text)).card("H01").name == "Spear Chucker"
    assert load_deck(write_deck(join_cards(*split_cards(STANDARD_TEXT)))).digest == (
        load_deck().digest)


def test_a_missing_file_is_refused_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.toml"
    with pytest.raises(DeckError) as info:
        load_deck(path)
    assert info.value.code == "deck/invalid"
    assert "cannot read" in info.value.message and "nowhere.toml" in info.value.message


def test_a_directory_is_refused_as_unreadable(tmp_path: Path) -> None:
    with pytest.raises(DeckError, match="cannot read"):
        load_deck(tmp_path)


def test_setup_with_a_missing_deck_file_raises_deck_error(tmp_path: Path) -> None:
    with pytest.raises(DeckError, match="cannot read"):
        cavemen.setup(["a", "b"], 1, {"deck": str(tmp_path / "gone.toml")})


# --------------------------------------------------------------------------- other decks

QUICK_FIRE = '[fire_cost]\n"2" = 4\n"3" = 4\n"4" = 4\n"5" = 4\n'


def quick_deck_text() -> str:
    """A valid variant: another name, a renamed beast, Fire within easy reach."""
    text = edit_head('name = "pbem standard (reconstruction)"', 'name = "Quick test deck"')
    text = edit_head('[fire_cost]\n"2" = 10\n"3" = 9\n"4" = 7\n"5" = 7\n', QUICK_FIRE, text)
    return edit_card("B01", 'name = "Rabbit"', 'name = "Hare"', text)


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_a_game_with_another_deck_file_plays_to_the_end(
        players: int, write_deck: Callable[[str | bytes], Path]) -> None:
    path = write_deck(quick_deck_text())
    rng = random.Random(players)
    state = cavemen.setup([f"P{i}" for i in range(players)], players, {"deck": str(path)})
    assert state.deck.name == "Quick test deck"
    assert cavemen.card_info(state, "B01")["name"] == "Hare"
    view = cavemen.view(state, 0)
    assert view["deck_name"] == "Quick test deck" and view["fire_cost"] == 4
    for _ in range(3000):
        if cavemen.result(state) is not None:
            break
        seat = cavemen.pending(state)[0].seat
        state, _ = cavemen.apply(state, seat, BOTS["heuristic"](state, seat, rng))
    assert cavemen.result(state) is not None
    assert cavemen.result(state).reason == "fire"
    assert cavemen.from_json(json.loads(json.dumps(cavemen.to_json(state)))) == state


def test_the_simulator_plays_another_deck_file(
        write_deck: Callable[[str | bytes], Path]) -> None:
    path = write_deck(quick_deck_text())
    record = play_game(cavemen, 3, 9, "random", options={"deck": path})
    assert record.finished


def test_a_deck_path_may_be_given_as_a_path_object(
        write_deck: Callable[[str | bytes], Path]) -> None:
    path = write_deck(quick_deck_text())
    state = cavemen.setup(["a", "b"], 1, {"deck": path})
    assert cavemen.from_json(cavemen.to_json(state)).deck.name == "Quick test deck"


def test_a_state_whose_deck_file_changed_is_refused_on_from_json(
        write_deck: Callable[[str | bytes], Path]) -> None:
    path = write_deck(quick_deck_text())
    data = cavemen.to_json(cavemen.setup(["a", "b"], 1, {"deck": str(path)}))
    path.write_text(edit_card("B01", 'name = "Hare"', 'name = "Jackrabbit"',
                              quick_deck_text()), encoding="utf-8")
    with pytest.raises(StateCorrupt) as info:
        cavemen.from_json(data)
    assert info.value.code == "state/corrupt"
    assert str(path) in info.value.message


def test_a_new_game_uses_the_deck_file_as_it_is_now(
        write_deck: Callable[[str | bytes], Path]) -> None:
    path = write_deck(quick_deck_text())
    cavemen.setup(["a", "b"], 1, {"deck": str(path)})
    path.write_text(edit_card("B01", 'name = "Hare"', 'name = "Jackrabbit"',
                              quick_deck_text()), encoding="utf-8")
    state = cavemen.setup(["a", "b"], 1, {"deck": str(path)})
    assert cavemen.card_info(state, "B01")["name"] == "Jackrabbit"


FROM_JSON_SCRIPT = """
import json, sys
from engine import cavemen
from engine.core import StateCorrupt
try:
    cavemen.from_json(json.load(open(sys.argv[1])))
except StateCorrupt as exc:
    print(exc.code)
else:
    print("accepted")
"""


def test_a_state_whose_deck_file_changed_is_refused_in_a_fresh_process(
        write_deck: Callable[[str | bytes], Path], tmp_path: Path) -> None:
    path = write_deck(quick_deck_text())
    saved = tmp_path / "state.json"
    saved.write_text(json.dumps(cavemen.to_json(cavemen.setup(["a", "b"], 1,
                                                              {"deck": str(path)}))))

    def load_in_fresh_process() -> str:
        done = subprocess.run([sys.executable, "-c", FROM_JSON_SCRIPT, str(saved)], cwd=ROOT,
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert load_in_fresh_process() == "accepted"
    path.write_text(quick_deck_text() + "\n# edited\n", encoding="utf-8")
    assert load_in_fresh_process() == "state/corrupt"


def test_the_scores_cache_stays_bounded_and_right() -> None:
    """A deck's cache of tableau scores starts again when full (the search's rollouts
    meet tens of thousands of tableaux a game; kept for good they slowed the garbage
    collector by seconds), and a score computed again is the same."""
    from itertools import combinations

    from engine.cavemen.deck import SCORES_CACHED

    deck = load_deck()
    first = deck.scores(tuple(deck.deck_ids[:3]))
    seen = 0
    for tableau in combinations(deck.deck_ids[:40], 3):
        deck.scores(tableau)
        seen += 1
        assert len(deck._scores) <= SCORES_CACHED
    assert seen > SCORES_CACHED
    assert deck.scores(tuple(deck.deck_ids[:3])) == first
