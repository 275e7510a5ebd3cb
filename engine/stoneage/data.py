"""Stone Age components from a TOML file (``standard.toml``): resources, places, culture
symbols, figures, the 28 building tiles and the 36 civilization cards, with their English
and German names.

``load_data(path)`` validates everything on load and raises :class:`DataError` naming the
entry and the problem ("buildings[3] (B04): cost names 'iron', not a resource"). The
rules (rules.py) read only the validated :class:`Data`.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core import EngineError

STANDARD_DATA = Path(__file__).with_name("standard.toml")
LANGUAGES = ("en", "de")
RESOURCES = ("food", "wood", "brick", "stone", "gold")
PAYABLE = ("wood", "brick", "stone", "gold")  # what buildings, cards and feeding take
# The board is fixed (the rules are written for it): each place's kind, capacity (0 =
# unlimited) and yield. The data file gives their names and must agree with this.
BOARD: dict[str, tuple[str, int, str | None]] = {
    "hunt": ("resource", 0, "food"), "forest": ("resource", 7, "wood"),
    "clay": ("resource", 7, "brick"), "quarry": ("resource", 7, "stone"),
    "river": ("resource", 7, "gold"), "toolmaker": ("village", 1, None),
    "hut": ("village", 2, None), "field": ("village", 1, None),
    "card": ("card", 1, None), "building": ("building", 1, None),
}
PLACES = tuple(BOARD)
FIGURES = ("farmer", "toolmaker", "hutbuilder", "shaman")
# Top effects of civilization cards and the fields each one needs.
TOP_KINDS: dict[str, tuple[str, ...]] = {
    "food": ("amount",),  # gain Food
    "resource": ("resource", "amount"),  # gain a building resource
    "points": ("amount",),  # score points at once
    "any": ("amount",),  # resources of the player's choice, named when spent
    "agriculture": (),  # agriculture +1
    "tool_step": (),  # one step on the tool maker's track
    "one_time_tool": ("value",),  # a tool used once ever
    "dice": ("resource",),  # roll 2 dice (tools may be added) for that resource
    "dice_for_all": (),  # one die per player, each picks one in turn
    "extra_card": (),  # the top card of the pile, face down, only its bottom counts
}
CARD_SLOTS = 4


class DataError(EngineError):
    """The component file is missing, unreadable or inconsistent."""

    code = "data/invalid"


@dataclass(frozen=True, slots=True)
class Building:
    """A building tile. Exactly one of: ``cost`` (fixed, wood/brick/stone/gold counts),
    ``count`` + ``kinds`` (N resources of exactly K kinds), ``max`` (1 to max of any)."""

    id: str
    cost: tuple[int, int, int, int] | None = None
    count: int = 0
    kinds: int = 0
    max: int = 0

    @property
    def kind(self) -> str:
        if self.cost is not None:
            return "fixed"
        return "kinds" if self.count else "any"

    @property
    def points(self) -> int | None:
        """The points of a fixed-cost tile; None for a variable one (the payment counts)."""
        if self.cost is None:
            return None
        return sum(n * RESOURCE_VALUE[r] for n, r in zip(self.cost, PAYABLE, strict=True))

    def to_view(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind}
        if self.cost is not None:
            out["cost"] = dict(zip(PAYABLE, self.cost, strict=True))
            out["points"] = self.points
        elif self.count:
            out.update(count=self.count, kinds=self.kinds)
        else:
            out["max"] = self.max
        return out


@dataclass(frozen=True, slots=True)
class Card:
    """A civilization card: its top effect (kind + fields) and its bottom (a culture
    symbol, or a figure with a count)."""

    id: str
    top: str
    amount: int = 0
    resource: str | None = None
    value: int = 0
    culture: str | None = None
    figure: str | None = None
    count: int = 0

    def to_view(self) -> dict[str, Any]:
        top: dict[str, Any] = {"kind": self.top}
        for name in TOP_KINDS[self.top]:
            top[name] = getattr(self, name)
        bottom = ({"culture": self.culture} if self.culture
                  else {"figure": self.figure, "count": self.count})
        return {"id": self.id, "top": top, "bottom": bottom}

    @property
    def top_resource(self) -> str:
        """The resource of a ``resource`` or ``dice`` top (the data file names one there)."""
        if self.resource is None:
            raise DataError(f"card {self.id}: its top names no resource", entry=self.id)
        return self.resource


RESOURCE_VALUE = {"food": 2, "wood": 3, "brick": 4, "stone": 5, "gold": 6}


@dataclass(frozen=True)
class Data:
    """The validated components. ``names[lang]`` maps ``resource.X``, ``place.X``,
    ``culture.X``, ``figure.X``, ``figures.X`` (plural) and ``counts.X`` to display text."""

    digest: str
    values: Mapping[str, int]
    places: Mapping[str, Mapping[str, Any]]
    culture: tuple[str, ...]
    buildings: Mapping[str, Building]
    cards: Mapping[str, Card]
    building_ids: tuple[str, ...]
    card_ids: tuple[str, ...]
    names: Mapping[str, Mapping[str, str]]

    def name(self, key: str, lang: str = "en") -> str:
        table = self.names.get(lang) or self.names["en"]
        return table.get(key) or self.names["en"][key]

    def label(self, key: str, lang: str = "en") -> str:
        """The printed name of any id: a card ("Medicine"), a resource ("Wood"), a place
        ("Forest"), a culture symbol or a figure; an unknown id is shown as it is."""
        if key in self.cards:
            return self.card_name(key, lang)
        for prefix in ("resource", "place", "culture", "figure"):
            if f"{prefix}.{key}" in self.names["en"]:
                return self.name(f"{prefix}.{key}", lang)
        return key

    def card_name(self, card_id: str, lang: str = "en") -> str:
        """A card is called after its bottom: "Medicine", "2 Farmers"."""
        card = self.cards[card_id]
        if card.culture:
            return self.name(f"culture.{card.culture}", lang)
        if card.count == 1:
            return self.name(f"figure.{card.figure}", lang)
        return f"{card.count} {self.name(f'figures.{card.figure}', lang)}"


def load_data(path: Path | str = STANDARD_DATA) -> Data:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read {path.name}: {exc.strerror}", file=str(path)) from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise DataError(f"{path.name} is not valid TOML: {exc}", file=str(path)) from None
    return parse_data(doc, hashlib.sha256(raw).hexdigest()[:16])


def _fail(where: str, problem: str) -> DataError:
    return DataError(f"{where}: {problem}", entry=where)


def _table(doc: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = doc.get(key)
    if not isinstance(value, Mapping):
        raise _fail(where, f"'{key}' is missing or not a table")
    return value


def _entry(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(where, "is not a table")
    return value


def _only(entry: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = set(entry) - allowed
    if extra:
        raise _fail(where, f"has fields it does not use: {sorted(extra)}")


def _int(entry: Mapping[str, Any], key: str, where: str, low: int, high: int) -> int:
    value = entry.get(key)
    if type(value) is not int or not low <= value <= high:
        raise _fail(where, f"'{key}' must be a whole number from {low} to {high}, "
                           f"not {value!r}")
    return value


def _names(entry: Any, where: str) -> dict[str, str]:
    if not isinstance(entry, Mapping):
        raise _fail(where, "needs a table of names by language (en, de)")
    for lang in LANGUAGES:
        text = entry.get(lang)
        if not isinstance(text, str) or not text.strip():
            raise _fail(where, f"has no {lang} name")
    extra = set(entry) - set(LANGUAGES)
    if extra:
        raise _fail(where, f"names a language this product does not speak: {sorted(extra)}")
    return dict(entry)


def parse_data(doc: Mapping[str, Any], digest: str = "") -> Data:
    """Validate a parsed component document (see the module docstring)."""
    names: dict[str, dict[str, str]] = {lang: {} for lang in LANGUAGES}

    def named(key: str, entry: Any, where: str) -> None:
        for lang, text in _names(entry, where).items():
            names[lang][key] = text

    resources = _table(doc, "resources", "file")
    if tuple(resources) != RESOURCES:
        raise _fail("resources", f"must be exactly {', '.join(RESOURCES)} in that order")
    values = {}
    for key, entry in resources.items():
        where = f"resources.{key}"
        entry = _entry(entry, where)
        values[key] = _int(entry, "value", where, 1, 20)
        named(f"resource.{key}", entry.get("name"), f"{where}.name")
    if values != RESOURCE_VALUE:
        raise _fail("resources", f"values must be {RESOURCE_VALUE} (the board's dice maths)")

    places = _table(doc, "places", "file")
    if tuple(places) != PLACES:
        raise _fail("places", f"must be exactly {', '.join(PLACES)} in that order")
    for key, entry in places.items():
        where = f"places.{key}"
        entry = _entry(entry, where)
        if entry.get("kind") not in ("resource", "village", "card", "building"):
            raise _fail(where, f"kind must be resource, village, card or building, "
                               f"not {entry.get('kind')!r}")
        _int(entry, "capacity", where, 0, 7)
        if entry["kind"] == "resource" and entry.get("resource") not in RESOURCES:
            raise _fail(where, f"yields {entry.get('resource')!r}, not a resource")
        kind, capacity, resource = BOARD[key]
        if (entry["kind"], entry["capacity"], entry.get("resource")) != (kind, capacity, resource):
            raise _fail(where, f"must be {kind}, capacity {capacity}"
                               + (f", yielding {resource}" if resource else "")
                               + " (the board the rules are written for)")
        named(f"place.{key}", entry.get("name"), f"{where}.name")

    culture_table = _table(doc, "culture", "file")
    if len(culture_table) != 8:
        raise _fail("culture", f"needs 8 culture symbols, not {len(culture_table)}")
    for key, entry in culture_table.items():
        named(f"culture.{key}", entry, f"culture.{key}")
    figures = _table(doc, "figures", "file")
    if tuple(sorted(figures)) != tuple(sorted(FIGURES)):
        raise _fail("figures", f"must be exactly {', '.join(FIGURES)}")
    for key, entry in figures.items():
        entry = _entry(entry, f"figures.{key}")
        for part, prefix in (("name", "figure"), ("plural", "figures"), ("counts", "counts")):
            named(f"{prefix}.{key}", entry.get(part), f"figures.{key}.{part}")

    buildings = {b.id: b for b in _buildings(doc.get("buildings"))}
    cards = {c.id: c for c in _cards(doc.get("cards"), tuple(culture_table))}
    return Data(digest, values, {k: dict(v) for k, v in places.items()},
                tuple(culture_table), buildings, cards, tuple(buildings), tuple(cards), names)


def _entries(value: Any, what: str, count: int) -> list[tuple[str, Mapping[str, Any]]]:
    if not isinstance(value, list) or len(value) != count:
        got = len(value) if isinstance(value, list) else "none"
        raise _fail(what, f"needs exactly {count} entries, found {got}")
    seen: set[str] = set()
    out = []
    for i, entry in enumerate(value):
        if not isinstance(entry, Mapping):
            raise _fail(f"{what}[{i}]", "is not a table")
        ident = entry.get("id")
        where = f"{what}[{i}] ({ident})"
        if not isinstance(ident, str) or not ident.isalnum():
            raise _fail(f"{what}[{i}]", f"needs a short id of letters and digits, "
                                        f"not {ident!r}")
        if ident in seen:
            raise _fail(where, "repeats an id")
        seen.add(ident)
        out.append((where, entry))
    return out


def _buildings(value: Any) -> list[Building]:
    out = []
    for where, entry in _entries(value, "buildings", 28):
        _only(entry, {"id", "cost", "count", "kinds", "max"}, where)
        shapes = [k for k in ("cost", "count", "max") if k in entry]
        if len(shapes) != 1:
            raise _fail(where, "needs exactly one of cost, count (with kinds) or max")
        if "cost" in entry:
            _only(entry, {"id", "cost"}, where)
            cost = entry["cost"]
            if not isinstance(cost, Mapping) or not cost:
                raise _fail(where, "cost must be a table of resource counts")
            for kind, n in cost.items():
                if kind not in PAYABLE:
                    raise _fail(where, f"cost names {kind!r}, not a building resource")
                if type(n) is not int or not 1 <= n <= 7:
                    raise _fail(where, f"cost of {kind} must be 1 to 7, not {n!r}")
            out.append(Building(entry["id"], tuple(cost.get(k, 0) for k in PAYABLE)))
        elif "count" in entry:
            _only(entry, {"id", "count", "kinds"}, where)
            count = _int(entry, "count", where, 1, 7)
            kinds = _int(entry, "kinds", where, 1, 4)
            if kinds > count:
                raise _fail(where, f"cannot pay {count} resources in {kinds} kinds")
            out.append(Building(entry["id"], count=count, kinds=kinds))
        else:
            _only(entry, {"id", "max"}, where)
            out.append(Building(entry["id"], max=_int(entry, "max", where, 1, 7)))
    return out


def _cards(value: Any, culture: tuple[str, ...]) -> list[Card]:
    out = []
    for where, entry in _entries(value, "cards", 36):
        top = entry.get("top")
        if not isinstance(top, Mapping) or not isinstance(top.get("kind"), str) or (
                top["kind"] not in TOP_KINDS):
            raise _fail(where, f"top must be a table whose kind is one of "
                               f"{', '.join(TOP_KINDS)}")
        kind = top["kind"]
        fields: dict[str, Any] = {}
        for name in TOP_KINDS[kind]:
            if name == "resource":
                allowed = PAYABLE
                if top.get(name) not in allowed:
                    raise _fail(where, f"top resource {top.get(name)!r} is not one of "
                                       f"{', '.join(allowed)}")
                fields[name] = top[name]
            else:
                fields[name] = _int(top, name, f"{where} top", 1, 7)
        extra = set(top) - {"kind", *TOP_KINDS[kind]}
        if extra:
            raise _fail(where, f"top {kind} does not take {sorted(extra)}")
        if ("culture" in entry) == ("figure" in entry):
            raise _fail(where, "needs exactly one of culture or figure")
        if "culture" in entry:
            _only(entry, {"id", "top", "culture"}, where)
            if entry["culture"] not in culture:
                raise _fail(where, f"culture {entry['culture']!r} is not a culture symbol")
            out.append(Card(entry["id"], kind, culture=entry["culture"], **fields))
        else:
            _only(entry, {"id", "top", "figure", "count"}, where)
            if entry["figure"] not in FIGURES:
                raise _fail(where, f"figure {entry['figure']!r} is not one of "
                                   f"{', '.join(FIGURES)}")
            count = _int(entry, "count", where, 1, 5)
            out.append(Card(entry["id"], kind, figure=entry["figure"], count=count, **fields))
    return out
