"""The Stone Age component file: the standard file meets stoneage.md (checked here against
tables copied from it), every name exists in English and German, and broken documents are
refused with a DataError naming the entry and the problem."""

from __future__ import annotations

import copy
import re
import shutil
import tomllib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.core import EngineError
from engine.stoneage.data import (
    STANDARD_DATA,
    Data,
    DataError,
    load_data,
    parse_data,
)

ROOT = Path(__file__).resolve().parents[2]
STANDARD_BYTES = STANDARD_DATA.read_bytes()
STANDARD_TEXT = STANDARD_BYTES.decode("utf-8")
STANDARD_DOC = tomllib.loads(STANDARD_TEXT)

# Values written down here from stoneage.md, independent of data.py.
VALUE = {"food": 2, "wood": 3, "brick": 4, "stone": 5, "gold": 6}
PAYABLE = ("wood", "brick", "stone", "gold")
CULTURE = ("medicine", "art", "writing", "pottery", "time", "transport", "music", "weaving")
FIGURES = ("farmer", "toolmaker", "hutbuilder", "shaman")

# --------------------------------------------------------------------------- stoneage.md
# The two component tables of stoneage.md, copied literally (checked against the file
# when written; the file lives outside the repository).

# wood, brick, stone, gold, points, tiles
FIXED_BUILDINGS: list[tuple[int, int, int, int, int, int]] = [
    (2, 1, 0, 0, 10, 1),
    (2, 0, 1, 0, 11, 1),
    (1, 2, 0, 0, 11, 1),
    (2, 0, 0, 1, 12, 1),
    (1, 0, 2, 0, 13, 1),
    (0, 2, 1, 0, 13, 1),
    (1, 1, 1, 0, 12, 2),
    (0, 2, 0, 1, 14, 1),
    (0, 1, 2, 0, 14, 1),
    (1, 1, 0, 1, 13, 2),
    (1, 0, 1, 1, 14, 2),
    (0, 1, 1, 1, 15, 2),
    (0, 0, 2, 1, 16, 1),
]

# id, top (at once), bottom (end scoring)
CARD_TABLE: list[tuple[str, str, str]] = [
    ("G01", "5 Food", "culture: medicine"),
    ("G02", "2 resources of choice (may be kept and taken later)", "culture: medicine"),
    ("G03", "one tool step (permanent)", "culture: art"),
    ("G04", "2 dice Gold", "culture: art"),
    ("G05", "draw 1 extra card face down (only its bottom scores)", "culture: writing"),
    ("G06", "dice for all", "culture: writing"),
    ("G07", "7 Food", "culture: pottery"),
    ("G08", "dice for all", "culture: pottery"),
    ("G09", "agriculture +1", "culture: time"),
    ("G10", "dice for all", "culture: time"),
    ("G11", "2 Stone", "culture: transport"),
    ("G12", "dice for all", "culture: transport"),
    ("G13", "3 points", "culture: music"),
    ("G14", "3 points", "culture: music"),
    ("G15", "3 Food", "culture: weaving"),
    ("G16", "1 Food", "culture: weaving"),
    ("S01", "agriculture +1", "1 farmer"),
    ("S02", "1 Stone", "1 farmer"),
    ("S03", "dice for all", "1 farmer"),
    ("S04", "3 Food", "2 farmers"),
    ("S05", "dice for all", "2 farmers"),
    ("S06", "one-time tool of value 4", "1 tool maker"),
    ("S07", "one-time tool of value 3", "1 tool maker"),
    ("S08", "one-time tool of value 2", "2 tool makers"),
    ("S09", "dice for all", "2 tool makers"),
    ("S10", "dice for all", "2 tool makers"),
    ("S11", "4 Food", "1 hut builder"),
    ("S12", "dice for all", "1 hut builder"),
    ("S13", "2 Food", "2 hut builders"),
    ("S14", "dice for all", "2 hut builders"),
    ("S15", "3 points", "3 hut builders"),
    ("S16", "1 Stone", "1 shaman"),
    ("S17", "1 Gold", "1 shaman"),
    ("S18", "2 dice Stone", "1 shaman"),
    ("S19", "1 Brick", "2 shamans"),
    ("S20", "2 dice Wood", "2 shamans"),
]

RESOURCE_WORDS = {"Wood": "wood", "Brick": "brick", "Stone": "stone", "Gold": "gold"}
FIGURE_WORDS = {"farmer": "farmer", "tool maker": "toolmaker", "hut builder": "hutbuilder",
                "shaman": "shaman"}


def expected_top(text: str) -> tuple[str, dict[str, Any]]:
    """The top effect in the words of stoneage.md -> (kind, fields)."""
    fixed = {
        "one tool step (permanent)": "tool_step",
        "draw 1 extra card face down (only its bottom scores)": "extra_card",
        "dice for all": "dice_for_all",
        "agriculture +1": "agriculture",
    }
    if text in fixed:
        return fixed[text], {}
    if m := re.fullmatch(r"(\d) Food", text):
        return "food", {"amount": int(m[1])}
    if m := re.fullmatch(r"(\d) points", text):
        return "points", {"amount": int(m[1])}
    if m := re.fullmatch(r"(\d) resources of choice \(may be kept and taken later\)", text):
        return "any", {"amount": int(m[1])}
    if m := re.fullmatch(r"one-time tool of value (\d)", text):
        return "one_time_tool", {"value": int(m[1])}
    if m := re.fullmatch(r"2 dice (Wood|Brick|Stone|Gold)", text):
        return "dice", {"resource": RESOURCE_WORDS[m[1]]}
    if m := re.fullmatch(r"(\d) (Wood|Brick|Stone|Gold)", text):
        return "resource", {"resource": RESOURCE_WORDS[m[2]], "amount": int(m[1])}
    raise AssertionError(f"top effect {text!r} not understood by the test")


def expected_bottom(text: str) -> dict[str, Any]:
    """The bottom in the words of stoneage.md -> culture, or figure + count."""
    if m := re.fullmatch(r"culture: (\w+)", text):
        return {"culture": m[1]}
    if m := re.fullmatch(r"(\d) (farmer|tool maker|hut builder|shaman)s?", text):
        return {"figure": FIGURE_WORDS[m[2]], "count": int(m[1])}
    raise AssertionError(f"bottom {text!r} not understood by the test")


def test_the_building_table_points_are_the_sum_of_resource_values() -> None:
    for *cost, points, _ in FIXED_BUILDINGS:
        assert points == sum(n * VALUE[r] for n, r in zip(cost, PAYABLE, strict=True))
    assert sum(row[-1] for row in FIXED_BUILDINGS) == 17


# --------------------------------------------------------------------------- standard file


@pytest.fixture(scope="module")
def data() -> Data:
    return load_data()


def test_the_standard_file_is_the_default(data: Data) -> None:
    assert load_data(STANDARD_DATA) == data
    assert parse_data(copy.deepcopy(STANDARD_DOC), data.digest) == data


def test_resources_and_their_values(data: Data) -> None:
    assert list(data.values.items()) == list(VALUE.items())


def test_places_capacities_and_yields(data: Data) -> None:
    capacity = {"hunt": 0, "forest": 7, "clay": 7, "quarry": 7, "river": 7,
                "toolmaker": 1, "hut": 2, "field": 1, "card": 1, "building": 1}
    assert {k: p["capacity"] for k, p in data.places.items()} == capacity
    assert list(data.places) == list(capacity)
    yields = {k: p["resource"] for k, p in data.places.items() if p["kind"] == "resource"}
    assert yields == {"hunt": "food", "forest": "wood", "clay": "brick", "quarry": "stone",
                      "river": "gold"}
    assert {k for k, p in data.places.items() if p["kind"] == "village"} == {
        "toolmaker", "hut", "field"}
    assert data.places["card"]["kind"] == "card"
    assert data.places["building"]["kind"] == "building"


def test_there_are_28_buildings_with_unique_ids(data: Data) -> None:
    assert len(data.building_ids) == 28 == len(set(data.building_ids))
    assert list(data.buildings) == list(data.building_ids)


def test_the_17_fixed_cost_tiles_match_the_table(data: Data) -> None:
    fixed = [b for b in data.buildings.values() if b.cost is not None]
    assert all(b.kind == "fixed" for b in fixed)
    got = Counter((*b.cost, b.points) for b in fixed)
    want: Counter[tuple[int, ...]] = Counter()
    for *cost, points, tiles in FIXED_BUILDINGS:
        want[(*cost, points)] += tiles
    assert got == want
    for b in fixed:  # points = sum of the values of the cost, computed here independently
        assert b.points == sum(n * VALUE[r] for n, r in zip(b.cost, PAYABLE, strict=True))
        assert b.to_view()["points"] == b.points
        assert b.to_view()["cost"] == dict(zip(PAYABLE, b.cost, strict=True))


def test_the_8_tiles_of_n_resources_of_k_kinds(data: Data) -> None:
    tiles = [b for b in data.buildings.values() if b.kind == "kinds"]
    assert sorted((b.count, b.kinds) for b in tiles) == [
        (n, k) for n in (4, 5) for k in (1, 2, 3, 4)]
    assert all(b.cost is None and b.points is None and b.max == 0 for b in tiles)


def test_the_3_tiles_of_1_to_7_any(data: Data) -> None:
    tiles = [b for b in data.buildings.values() if b.kind == "any"]
    assert [b.max for b in tiles] == [7, 7, 7]
    assert all(b.cost is None and b.points is None and b.count == 0 for b in tiles)
    assert tiles[0].to_view() == {"id": tiles[0].id, "kind": "any", "max": 7}


def test_the_36_cards_match_the_table(data: Data) -> None:
    assert list(data.card_ids) == [row[0] for row in CARD_TABLE]
    assert list(data.cards) == list(data.card_ids)
    for card_id, top_text, bottom_text in CARD_TABLE:
        card = data.cards[card_id]
        kind, fields = expected_top(top_text)
        view = card.to_view()
        assert view["top"] == {"kind": kind, **fields}, card_id
        assert view["bottom"] == expected_bottom(bottom_text), card_id
        assert card.top == kind
        for name, value in fields.items():
            assert getattr(card, name) == value, (card_id, name)


def test_16_green_cards_two_of_each_culture_symbol(data: Data) -> None:
    assert data.culture == CULTURE
    green = [c for c in data.cards.values() if c.culture]
    assert len(green) == 16
    assert Counter(c.culture for c in green) == dict.fromkeys(CULTURE, 2)
    assert all(c.figure is None and c.count == 0 for c in green)
    assert all(c.id.startswith("G") for c in green)


def test_figure_counts_per_figure(data: Data) -> None:
    sand = [c for c in data.cards.values() if c.figure]
    assert len(sand) == 20 and all(c.id.startswith("S") for c in sand)
    per_figure = {f: sorted(c.count for c in sand if c.figure == f) for f in FIGURES}
    assert per_figure == {
        "farmer": [1, 1, 1, 2, 2],
        "toolmaker": [1, 1, 2, 2, 2],
        "hutbuilder": [1, 1, 2, 2, 3],
        "shaman": [1, 1, 1, 2, 2],
    }
    assert {f: sum(n) for f, n in per_figure.items()} == {
        "farmer": 7, "toolmaker": 8, "hutbuilder": 9, "shaman": 7}


def test_dice_for_all_is_on_ten_cards(data: Data) -> None:
    assert sum(c.top == "dice_for_all" for c in data.cards.values()) == 10


# --------------------------------------------------------------------------- names

NAME_KEYS = (
    [f"resource.{r}" for r in VALUE]
    + [f"place.{p}" for p in ("hunt", "forest", "clay", "quarry", "river", "toolmaker",
                              "hut", "field", "card", "building")]
    + [f"culture.{c}" for c in CULTURE]
    + [f"{prefix}.{f}" for f in FIGURES for prefix in ("figure", "figures", "counts")]
)
SAME_WORD = {"resource.gold", "culture.transport"}  # Gold/Gold, Transport/Transport


def test_every_name_exists_in_english_and_german(data: Data) -> None:
    assert set(data.names) == {"en", "de"}
    for lang in ("en", "de"):
        assert set(data.names[lang]) == set(NAME_KEYS), lang
        for key in NAME_KEYS:
            text = data.name(key, lang)
            assert isinstance(text, str) and text.strip() == text and text, (lang, key)


def test_german_names_differ_where_the_words_differ(data: Data) -> None:
    for key in NAME_KEYS:
        en, de = data.name(key, "en"), data.name(key, "de")
        if key in SAME_WORD:
            assert en == de, key
        else:
            assert en != de, (key, en, de)


@pytest.mark.parametrize(("key", "en", "de"), [
    ("resource.food", "Food", "Nahrung"),
    ("resource.wood", "Wood", "Holz"),
    ("resource.brick", "Brick", "Lehm"),
    ("resource.stone", "Stone", "Stein"),
    ("place.forest", "Forest", "Wald"),
    ("place.hunt", "Hunting grounds", "Jagdgründe"),
    ("place.hut", "Hut", "Hütte"),
    ("place.field", "Field", "Acker"),
    ("culture.medicine", "Medicine", "Heilkunde"),
    ("culture.pottery", "Pottery", "Töpferei"),
    ("figure.farmer", "Farmer", "Bauer"),
    ("figures.farmer", "Farmers", "Bauern"),
    ("figures.shaman", "Shamans", "Schamanen"),
])
def test_some_names(data: Data, key: str, en: str, de: str) -> None:
    assert (data.name(key, "en"), data.name(key, "de")) == (en, de)


@pytest.mark.parametrize(("card_id", "en", "de"), [
    ("G01", "Medicine", "Heilkunde"),
    ("G09", "Time", "Zeitmessung"),
    ("S01", "Farmer", "Bauer"),
    ("S04", "2 Farmers", "2 Bauern"),
    ("S08", "2 Tool makers", "2 Werkzeugmacher"),
    ("S15", "3 Hut builders", "3 Hüttenbauer"),
    ("S16", "Shaman", "Schamane"),
    ("S20", "2 Shamans", "2 Schamanen"),
])
def test_card_names(data: Data, card_id: str, en: str, de: str) -> None:
    assert data.card_name(card_id) == en
    assert data.card_name(card_id, "en") == en
    assert data.card_name(card_id, "de") == de


def test_every_card_has_a_name_in_both_languages(data: Data) -> None:
    for card_id in data.card_ids:
        en, de = data.card_name(card_id, "en"), data.card_name(card_id, "de")
        assert en and de, card_id


def test_an_unknown_language_falls_back_to_english(data: Data) -> None:
    assert data.name("place.forest", "fr") == "Forest"
    assert data.card_name("S04", "fr") == "2 Farmers"


# --------------------------------------------------------------------------- digest


def test_the_digest_is_stable_for_the_same_bytes(data: Data, tmp_path: Path) -> None:
    assert re.fullmatch(r"[0-9a-f]{16}", data.digest)
    assert load_data().digest == data.digest
    one, two = tmp_path / "one.toml", tmp_path / "two.toml"
    shutil.copyfile(STANDARD_DATA, one)
    shutil.copyfile(STANDARD_DATA, two)
    assert load_data(one).digest == load_data(two).digest == data.digest
    assert load_data(str(one)) == data


def test_the_digest_changes_when_the_file_changes(data: Data, tmp_path: Path) -> None:
    path = tmp_path / "standard.toml"
    path.write_bytes(STANDARD_BYTES + b"\n# a comment\n")
    commented = load_data(path)
    assert commented.digest != data.digest
    assert commented.cards == data.cards and commented.buildings == data.buildings
    path.write_text(STANDARD_TEXT.replace('en = "Forest"', 'en = "Woods"'), encoding="utf-8")
    renamed = load_data(path)
    assert renamed.name("place.forest") == "Woods"
    assert renamed.digest not in (data.digest, commented.digest)
    path.write_bytes(STANDARD_BYTES)
    assert load_data(path).digest == data.digest


def test_parse_data_without_a_digest_has_an_empty_one() -> None:
    assert parse_data(copy.deepcopy(STANDARD_DOC)).digest == ""


# --------------------------------------------------------------------------- broken documents

Doc = dict[str, Any]


def building(doc: Doc, ident: str) -> Doc:
    [entry] = [b for b in doc["buildings"] if b["id"] == ident]
    return entry


def card(doc: Doc, ident: str) -> Doc:
    [entry] = [c for c in doc["cards"] if c["id"] == ident]
    return entry


def setting(path: str, value: Any) -> Callable[[Doc], None]:
    """Set ``a.b.c`` in the document (missing tables are not created)."""
    *parents, last = path.split(".")

    def mutate(doc: Doc) -> None:
        target = doc
        for key in parents:
            target = target[key]
        target[last] = value

    return mutate


def deleting(path: str) -> Callable[[Doc], None]:
    *parents, last = path.split(".")

    def mutate(doc: Doc) -> None:
        target = doc
        for key in parents:
            target = target[key]
        del target[last]

    return mutate


def in_building(ident: str, change: Callable[[Doc], None]) -> Callable[[Doc], None]:
    return lambda doc: change(building(doc, ident))


def in_card(ident: str, change: Callable[[Doc], None]) -> Callable[[Doc], None]:
    return lambda doc: change(card(doc, ident))


def swap_resources(doc: Doc) -> None:
    res = doc["resources"]
    doc["resources"] = {k: res[k] for k in ("food", "brick", "wood", "stone", "gold")}


def swap_places(doc: Doc) -> None:
    places = doc["places"]
    order = ["hunt", "forest", "clay", "quarry", "river", "hut", "toolmaker", "field",
             "card", "building"]
    doc["places"] = {k: places[k] for k in order}


def add_building_copy(doc: Doc) -> None:
    doc["buildings"].append({"id": "B29", "max": 7})


def both_culture_and_figure(entry: Doc) -> None:
    entry.update(figure="farmer", count=1)


def neither_culture_nor_figure(entry: Doc) -> None:
    del entry["figure"], entry["count"]


BROKEN: dict[str, tuple[Callable[[Doc], None], list[str]]] = {
    # buildings
    "unknown resource in a cost": (
        in_building("B04", setting("cost", {"wood": 2, "iron": 1})),
        ["buildings[3] (B04)", "'iron'", "not a building resource"]),
    "food in a cost": (
        in_building("B04", setting("cost.food", 1)),
        ["buildings[3] (B04)", "'food'", "not a building resource"]),
    "cost 0": (in_building("B04", setting("cost.gold", 0)),
               ["buildings[3] (B04)", "gold", "1 to 7", "not 0"]),
    "cost 8": (in_building("B17", setting("cost.stone", 8)),
               ["buildings[16] (B17)", "stone", "1 to 7", "not 8"]),
    "cost as text": (in_building("B01", setting("cost.wood", "2")),
                     ["buildings[0] (B01)", "wood", "'2'"]),
    "cost true": (in_building("B01", setting("cost.wood", True)),
                  ["buildings[0] (B01)", "wood", "True"]),
    "empty cost": (in_building("B04", setting("cost", {})),
                   ["buildings[3] (B04)", "cost must be a table"]),
    "cost not a table": (in_building("B04", setting("cost", 12)),
                         ["buildings[3] (B04)", "cost must be a table"]),
    "missing shape": (in_building("B04", deleting("cost")),
                      ["buildings[3] (B04)", "exactly one of cost, count", "max"]),
    "two shapes": (in_building("B04", setting("max", 7)),
                   ["buildings[3] (B04)", "exactly one of cost, count", "max"]),
    "count and max": (in_building("B18", setting("max", 7)),
                      ["buildings[17] (B18)", "exactly one of"]),
    "count without kinds": (in_building("B18", deleting("kinds")),
                            ["buildings[17] (B18)", "'kinds'", "None"]),
    "kinds > count": (in_building("B21", setting("count", 3)),
                      ["buildings[20] (B21)", "3 resources in 4 kinds"]),
    "kinds 0": (in_building("B18", setting("kinds", 0)),
                ["buildings[17] (B18)", "'kinds'", "1 to 4", "not 0"]),
    "kinds 5": (in_building("B25", setting("kinds", 5)),
                ["buildings[24] (B25)", "'kinds'", "not 5"]),
    "count 8": (in_building("B22", setting("count", 8)),
                ["buildings[21] (B22)", "'count'", "not 8"]),
    "max 8": (in_building("B26", setting("max", 8)),
              ["buildings[25] (B26)", "'max'", "1 to 7", "not 8"]),
    "max 0": (in_building("B28", setting("max", 0)), ["buildings[27] (B28)", "'max'"]),
    "27 buildings": (lambda doc: doc["buildings"].pop(),
                     ["buildings", "exactly 28", "found 27"]),
    "29 buildings": (add_building_copy, ["buildings", "exactly 28", "found 29"]),
    "no buildings": (deleting("buildings"), ["buildings", "exactly 28", "found none"]),
    "buildings not a list": (setting("buildings", {"id": "B01"}),
                             ["buildings", "exactly 28", "found none"]),
    "building not a table": (lambda doc: doc["buildings"].__setitem__(3, "B04"),
                             ["buildings[3]", "is not a table"]),
    "duplicate building id": (in_building("B04", setting("id", "B01")),
                              ["buildings[3] (B01)", "repeats an id"]),
    "bad building id": (in_building("B04", setting("id", "B-04")),
                        ["buildings[3]", "'B-04'", "short id"]),
    "empty building id": (in_building("B04", setting("id", "")),
                          ["buildings[3]", "''", "short id"]),
    "missing building id": (in_building("B04", deleting("id")),
                            ["buildings[3]", "None", "short id"]),
    "numeric building id": (in_building("B04", setting("id", 4)),
                            ["buildings[3]", "4", "short id"]),
    # cards
    "35 cards": (lambda doc: doc["cards"].pop(0), ["cards", "exactly 36", "found 35"]),
    "no cards": (deleting("cards"), ["cards", "exactly 36", "found none"]),
    "duplicate card id": (in_card("G02", setting("id", "G01")),
                          ["cards[1] (G01)", "repeats an id"]),
    "bad card id": (in_card("G01", setting("id", "G 01")), ["cards[0]", "'G 01'", "short id"]),
    "unknown top kind": (in_card("G01", setting("top.kind", "teleport")),
                         ["cards[0] (G01)", "top", "kind", "food", "dice_for_all"]),
    "top without kind": (in_card("G01", deleting("top.kind")), ["cards[0] (G01)", "kind"]),
    "top not a table": (in_card("G01", setting("top", "food")),
                        ["cards[0] (G01)", "top must be a table"]),
    "missing top": (in_card("S01", deleting("top")),
                    ["cards[16] (S01)", "top must be a table"]),
    "missing amount": (in_card("G01", deleting("top.amount")),
                       ["cards[0] (G01)", "'amount'", "None"]),
    "amount 0": (in_card("G13", setting("top.amount", 0)),
                 ["cards[12] (G13)", "'amount'", "not 0"]),
    "amount 8": (in_card("G07", setting("top.amount", 8)),
                 ["cards[6] (G07)", "'amount'", "1 to 7", "not 8"]),
    "amount as text": (in_card("G07", setting("top.amount", "7")),
                       ["cards[6] (G07)", "'amount'", "'7'"]),
    "missing resource amount": (in_card("G11", deleting("top.amount")),
                                ["cards[10] (G11)", "'amount'"]),
    "missing one-time tool value": (in_card("S06", deleting("top.value")),
                                    ["cards[21] (S06)", "'value'"]),
    "missing dice resource": (in_card("G04", deleting("top.resource")),
                              ["cards[3] (G04)", "top resource None"]),
    "extra field on top": (in_card("G03", setting("top.amount", 1)),
                           ["cards[2] (G03)", "tool_step", "does not take", "amount"]),
    "extra resource on a food top": (in_card("G01", setting("top.resource", "wood")),
                                     ["cards[0] (G01)", "food", "does not take", "resource"]),
    "amount on dice for all": (in_card("G06", setting("top.amount", 2)),
                               ["cards[5] (G06)", "dice_for_all", "['amount']"]),
    "top resource food": (in_card("G11", setting("top.resource", "food")),
                          ["cards[10] (G11)", "top resource 'food'", "wood, brick"]),
    "dice for food": (in_card("G04", setting("top.resource", "food")),
                      ["cards[3] (G04)", "top resource 'food'"]),
    "top resource unknown": (in_card("S17", setting("top.resource", "silver")),
                             ["cards[32] (S17)", "'silver'"]),
    "unknown culture": (in_card("G01", setting("culture", "magic")),
                        ["cards[0] (G01)", "culture 'magic'", "not a culture symbol"]),
    "unknown figure": (in_card("S01", setting("figure", "wizard")),
                       ["cards[16] (S01)", "figure 'wizard'", "farmer, toolmaker"]),
    "both culture and figure": (in_card("G01", both_culture_and_figure),
                                ["cards[0] (G01)", "exactly one of culture or figure"]),
    "neither culture nor figure": (in_card("S01", neither_culture_nor_figure),
                                   ["cards[16] (S01)", "exactly one of culture or figure"]),
    "figure without count": (in_card("S04", deleting("count")),
                             ["cards[19] (S04)", "'count'", "None"]),
    "figure count 0": (in_card("S04", setting("count", 0)),
                       ["cards[19] (S04)", "'count'", "not 0"]),
    "figure count 6": (in_card("S15", setting("count", 6)),
                       ["cards[30] (S15)", "'count'", "1 to 5", "not 6"]),
    "card not a table": (lambda doc: doc["cards"].__setitem__(0, "G01"),
                         ["cards[0]", "is not a table"]),
    # names
    "missing German resource name": (deleting("resources.wood.name.de"),
                                     ["resources.wood.name", "no de name"]),
    "missing German place name": (deleting("places.forest.name.de"),
                                  ["places.forest.name", "no de name"]),
    "missing German culture name": (deleting("culture.medicine.de"),
                                    ["culture.medicine", "no de name"]),
    "missing German figure name": (deleting("figures.farmer.name.de"),
                                   ["figures.farmer.name", "no de name"]),
    "missing German plural": (deleting("figures.shaman.plural.de"),
                              ["figures.shaman.plural", "no de name"]),
    "missing German counts": (deleting("figures.hutbuilder.counts.de"),
                              ["figures.hutbuilder.counts", "no de name"]),
    "missing English name": (deleting("places.hut.name.en"),
                             ["places.hut.name", "no en name"]),
    "blank German name": (setting("places.hut.name.de", "  "),
                          ["places.hut.name", "no de name"]),
    "German name not text": (setting("culture.art.de", 3), ["culture.art", "no de name"]),
    "missing place name": (deleting("places.hut.name"),
                           ["places.hut.name", "table of names"]),
    "name not a table": (setting("places.hut.name", "Hut"),
                         ["places.hut.name", "table of names"]),
    "missing figure plural": (deleting("figures.farmer.plural"),
                              ["figures.farmer.plural", "table of names"]),
    "unknown language": (setting("places.hut.name.fr", "Hutte"),
                         ["places.hut.name", "language", "['fr']"]),
    "unknown language on culture": (setting("culture.time.fr", "Temps"),
                                    ["culture.time", "language", "['fr']"]),
    # resources
    "no resources": (deleting("resources"), ["'resources'", "missing or not a table"]),
    "wrong resource order": (swap_resources,
                             ["resources", "food, wood, brick, stone, gold", "order"]),
    "missing resource": (deleting("resources.gold"), ["resources", "exactly food"]),
    "extra resource": (setting("resources.iron", {"value": 7,
                                                  "name": {"en": "Iron", "de": "Eisen"}}),
                       ["resources", "exactly food"]),
    "wrong resource value": (setting("resources.wood.value", 4),
                             ["resources", "values must be", "'wood': 3"]),
    "resource value 0": (setting("resources.wood.value", 0),
                         ["resources.wood", "'value'", "not 0"]),
    "resource value missing": (deleting("resources.gold.value"),
                               ["resources.gold", "'value'", "None"]),
    # places
    "no places": (deleting("places"), ["'places'", "missing or not a table"]),
    "missing place": (deleting("places.hut"), ["places", "must be exactly", "hut"]),
    "wrong place order": (swap_places, ["places", "must be exactly", "in that order"]),
    "extra place": (setting("places.market", {"kind": "village", "capacity": 1,
                                              "name": {"en": "Market", "de": "Markt"}}),
                    ["places", "must be exactly"]),
    "unknown place kind": (setting("places.hut.kind", "market"),
                           ["places.hut", "kind must be", "'market'"]),
    "place capacity 8": (setting("places.hut.capacity", 8),
                         ["places.hut", "'capacity'", "0 to 7", "not 8"]),
    "place capacity missing": (deleting("places.field.capacity"),
                               ["places.field", "'capacity'", "None"]),
    "resource place yields nothing": (deleting("places.forest.resource"),
                                      ["places.forest", "yields None", "not a resource"]),
    "resource place yields iron": (setting("places.river.resource", "iron"),
                                   ["places.river", "'iron'", "not a resource"]),
    # culture and figures
    "no culture": (deleting("culture"), ["'culture'", "missing or not a table"]),
    "7 culture symbols": (deleting("culture.weaving"), ["culture", "8", "not 7"]),
    "no figures": (deleting("figures"), ["'figures'", "missing or not a table"]),
    "missing figure": (deleting("figures.shaman"), ["figures", "must be exactly", "shaman"]),
    "extra figure": (setting("figures.chief", copy.deepcopy(STANDARD_DOC["figures"]["farmer"])),
                     ["figures", "must be exactly"]),
}


def broken(mutate: Callable[[Doc], None]) -> Doc:
    doc = copy.deepcopy(STANDARD_DOC)
    mutate(doc)
    return doc


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_document_is_refused_naming_the_entry_and_problem(case: str) -> None:
    mutate, expected = BROKEN[case]
    doc = broken(mutate)
    with pytest.raises(DataError) as info:
        parse_data(doc)
    error = info.value
    assert error.code == "data/invalid"
    assert isinstance(error, EngineError)
    assert str(error) == error.message
    for fragment in expected:
        assert fragment in error.message, f"{fragment!r} not in {error.message!r}"
    # the message starts with the entry, which is also kept as data
    assert error.message.startswith(f"{error.data['entry']}: ")


def test_the_mutations_themselves_leave_a_valid_document(data: Data) -> None:
    """The helpers only break what each case breaks: a harmless edit still parses."""
    def harmless(doc: Doc) -> None:
        in_building("B04", setting("cost", {"wood": 2, "gold": 1}))(doc)
        in_card("G01", setting("top.amount", 5))(doc)
        setting("places.hut.name.en", "Hovel")(doc)

    parsed = parse_data(broken(harmless))
    assert parsed.name("place.hut") == "Hovel"
    assert parsed.buildings == data.buildings and parsed.cards == data.cards
    assert tomllib.loads(STANDARD_TEXT) == STANDARD_DOC  # the shared copy is untouched


def test_a_changed_but_valid_document_is_accepted() -> None:
    def change(doc: Doc) -> None:
        building(doc, "B04")["cost"] = {"gold": 3}
        card(doc, "S15")["count"] = 5
        card(doc, "G16")["top"] = {"kind": "any", "amount": 7}

    parsed = parse_data(broken(change))
    assert parsed.buildings["B04"].cost == (0, 0, 0, 3)
    assert parsed.buildings["B04"].points == 18
    assert parsed.card_name("S15") == "5 Hut builders"
    assert parsed.cards["G16"].to_view()["top"] == {"kind": "any", "amount": 7}


# A broken document always ends in a DataError naming the entry, never in another
# exception or in silent acceptance: entries that are not tables, unhashable kinds, stray
# fields.


@pytest.mark.parametrize(("mutate", "entry"), [
    pytest.param(setting("places.hut", 2), "places.hut", id="place entry not a table"),
    pytest.param(setting("resources.wood", 3), "resources.wood",
                 id="resource entry not a table"),
    pytest.param(setting("figures.farmer", "Farmer"), "figures.farmer",
                 id="figure entry not a table"),
    pytest.param(in_card("G01", setting("top.kind", ["food"])), "cards[0] (G01)",
                 id="top kind a list"),
    pytest.param(in_card("G01", setting("count", 2)), "cards[0] (G01)",
                 id="stray count on a culture card"),
    pytest.param(in_building("B26", setting("kinds", 2)), "buildings[25] (B26)",
                 id="stray kinds on a max building"),
    pytest.param(in_card("S01", setting("colour", "sand")), "cards[16] (S01)",
                 id="unknown field on a card"),
])
def test_odd_shapes_are_refused_naming_the_entry(mutate: Callable[[Doc], None],
                                                 entry: str) -> None:
    with pytest.raises(DataError) as info:
        parse_data(broken(mutate))
    assert info.value.code == "data/invalid"
    assert info.value.message.startswith(f"{entry}: ")


# --------------------------------------------------------------------------- load_data


def test_a_missing_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(DataError) as info:
        load_data(tmp_path / "nowhere.toml")
    assert info.value.code == "data/invalid"
    assert "cannot read" in info.value.message and "nowhere.toml" in info.value.message


def test_a_directory_is_refused_as_unreadable(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="cannot read"):
        load_data(tmp_path)


def test_a_non_utf8_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(STANDARD_TEXT.encode("latin-1"))  # Jagdgründe etc. become invalid UTF-8
    with pytest.raises(DataError) as info:
        load_data(path)
    assert info.value.code == "data/invalid"
    assert "latin1.toml is not valid TOML" in info.value.message


@pytest.mark.parametrize("content", [
    "this is [[[ not TOML at all\n",
    STANDARD_TEXT[: len(STANDARD_TEXT) // 2] + '"',
    STANDARD_TEXT + "\n[resources.food]\nvalue = 2\n",  # a table defined twice
])
def test_invalid_toml_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "broken.toml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_data(path)
    assert info.value.code == "data/invalid"
    assert "broken.toml is not valid TOML" in info.value.message


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.toml"
    path.write_text("", encoding="utf-8")
    with pytest.raises(DataError, match="'resources' is missing"):
        load_data(path)


def test_load_data_validates_the_file(tmp_path: Path) -> None:
    old = 'id = "B04"\ncost = { wood = 2, gold = 1 }'
    assert STANDARD_TEXT.count(old) == 1
    path = tmp_path / "iron.toml"
    path.write_text(STANDARD_TEXT.replace(old, old.replace("gold", "iron")), encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_data(path)
    assert info.value.message == "buildings[3] (B04): cost names 'iron', not a building resource"
    assert info.value.data == {"entry": "buildings[3] (B04)"}


def test_data_error_code() -> None:
    assert DataError.code == "data/invalid"
    assert issubclass(DataError, EngineError)


@pytest.mark.parametrize(("mutate", "problem"), [
    (setting("places.forest.capacity", 5), "capacity 7"),
    (setting("places.hut.capacity", 1), "capacity 2"),
    (setting("places.river.resource", "stone"), "yielding gold"),
])
def test_a_place_that_is_not_the_board_the_rules_know_is_refused(mutate, problem) -> None:
    """The rules are written for the printed board; the file names its places."""
    with pytest.raises(DataError) as info:
        parse_data(broken(mutate))
    assert problem in info.value.message and "the board the rules are written for" in (
        info.value.message)
