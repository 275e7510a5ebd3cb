"""Cavemen card data: the deck file schema, its validation, and tribe scores.

A deck file is TOML (see ``standard.toml``): a ``[deck]`` table, a ``[fire_cost]`` table
keyed by player count, and one ``[[card]]`` table per card. Invention benefits are lists
of generic effects (``EFFECT_KINDS``) that the rules apply without knowing the card.
Loading validates everything and raises :class:`DeckError` naming the card and problem.

A deck file may have translations next to it, ``<deck stem>.<lang>.toml`` (see
``standard.de.toml``): card names, card texts and tribe names in one language, validated
against the deck by :func:`load_translation`. They never change the deck or its digest.
"""

from __future__ import annotations

import hashlib
import re
import threading
import tomllib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from engine.core import EngineError

STANDARD_DECK = Path(__file__).with_name("standard.toml")

CAVEMAN_ROLES = ("hunter", "thinker", "elder", "explorer")
TYPES = ("leader", *CAVEMAN_ROLES, "beast", "invention", "fire", "cave")
TRIBES = ("Wolf", "Tiger", "Snake", "Owl", "Bear")
SCORES = ("hunting", "inventing", "foraging", "population")
# What an effect may count: a caveman role, any caveman, caves, inventions.
COUNTABLE = (*CAVEMAN_ROLES, "caveman", "cave", "invention")
DECK_COUNTS = {"hunter": 10, "thinker": 10, "elder": 5, "explorer": 5,
               "beast": 27, "invention": 20, "fire": 1, "cave": 8}
STONE_SPREAD = (16, 18)

# Each effect kind: required keys, optional keys with allowed values (None = positive int).
EFFECT_KINDS: dict[str, dict[str, dict[str, Any]]] = {
    # +amount to a score; with `per`, amount per counted card; with `min`, only if the tribe
    # has at least `min` cards of `per` (then flat).
    "bonus": {"required": {"score": SCORES, "amount": None},
              "optional": {"per": COUNTABLE, "min": None}},
    # Recruiting (optionally only a role) or exploring costs `amount` less of each kind.
    "discount": {"required": {"action": ("recruit", "explore"), "amount": None},
                 "optional": {"role": CAVEMAN_ROLES}},
    # Gain `amount` Food or Teeth (per counted card) when the event happens.
    "income": {"required": {"resource": ("food", "teeth"), "amount": None,
                            "when": ("feed", "hunt", "forage", "recruit", "invent")},
               "optional": {"per": COUNTABLE}},
    # No casualty from hunting, or no caveman lost to starvation.
    "protection": {"required": {"against": ("casualties", "starvation")}, "optional": {}},
    # Pay `amount` less Food in the feed phase (never below zero).
    "feeding": {"required": {"amount": None}, "optional": {}},
    # The tribe may explore for free, as with an Explorer.
    "explore": {"required": {}, "optional": {}},
}


class DeckError(EngineError):
    """A deck file breaks the schema; the message names the card and the problem."""

    code = "deck/invalid"


@dataclass(frozen=True, slots=True)
class Effect:
    kind: str
    params: tuple[tuple[str, Any], ...]

    def get(self, name: str, default: Any = None) -> Any:
        return dict(self.params).get(name, default)


@dataclass(frozen=True, slots=True)
class Card:
    """One card. Unused numbers stay 0 (e.g. a Beast has no cost, a Cave no hunting)."""

    id: str
    type: str
    name: str
    stone: int
    tribe: str | None = None
    hunting: int = 0
    inventing: int = 0
    foraging: int = 0
    population: int = 0
    cost_food: int = 0
    cost_teeth: int = 0
    requirement: int = 0
    reward_food: int = 0
    reward_teeth: int = 0
    effects: tuple[Effect, ...] = ()
    text: str = ""
    is_caveman: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_caveman",
                           self.type == "leader" or self.type in CAVEMAN_ROLES)

    @property
    def ability(self) -> int:
        return self.hunting + self.inventing + self.foraging

    def to_view(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "type": self.type, "name": self.name,
                               "stone": self.stone}
        for key in ("tribe", "hunting", "inventing", "foraging", "population", "cost_food",
                    "cost_teeth", "requirement", "reward_food", "reward_teeth", "text"):
            value = getattr(self, key)
            if value:
                out[key] = value
        if self.effects:
            out["effects"] = [{"kind": e.kind, **dict(e.params)} for e in self.effects]
        return out


@dataclass(frozen=True)
class Deck:
    """A validated deck: deck cards in file order, starting cards by tribe, Fire's cost."""

    name: str
    source: str
    digest: str
    cards: Mapping[str, Card]
    deck_ids: tuple[str, ...]
    starting: Mapping[str, tuple[str, str, str]]  # tribe -> (leader, hunter, home cave)
    fire_cost: Mapping[int, int]
    fire_id: str
    notes: str = ""
    _scores: dict[tuple[str, ...], Scores] = field(default_factory=dict, compare=False,
                                                   repr=False)

    def card(self, card_id: str) -> Card:
        return self.cards[card_id]

    def scores(self, tableau: tuple[str, ...]) -> Scores:
        """The tribe's scores and abilities for these tableau cards (cached: at most
        SCORES_CACHED tableaux, then the cache starts again, so that a process that plays
        many games (the clock's bots, the search's rollouts) does not grow without end)."""
        found = self._scores.get(tableau)
        if found is None:
            found = _compute_scores(self, tableau)
            with _MEMOS:
                if len(self._scores) >= SCORES_CACHED:
                    self._scores.clear()
                self._scores[tableau] = found
        return found


# Tableaux whose scores a deck keeps. The search bot's rollouts meet some 65,000 new ones
# a game: unbounded, the cache held millions after a few hundred games, and the garbage
# collector's full passes over it took seconds (the strong bot's rare 2.7 s decisions).
SCORES_CACHED = 8192

# Held while a memo of this module (a deck's scores, the translations) is changed, so
# that threads (the clock's) never interleave its check for room, clearing and adding.
# Reads take no lock: one dict lookup is atomic, and a value only ever stands for its
# key (the scores of that tableau, the translation of that file as it was then).
_MEMOS = threading.Lock()


@dataclass(frozen=True, slots=True)
class Scores:
    hunting: int
    inventing: int
    foraging: int
    population: int
    cavemen: int
    can_explore: bool
    protected_casualties: bool
    protected_starvation: bool
    feeding_relief: int
    discounts: tuple[tuple[str, str | None, int], ...]  # (action, role, amount)
    income: tuple[tuple[str, str, int], ...]  # (when, resource, amount) already counted

    def discount(self, action: str, role: str | None = None) -> int:
        return sum(a for act, r, a in self.discounts if act == action and r in (None, role))

    def income_for(self, when: str) -> tuple[int, int]:
        food = sum(a for w, res, a in self.income if w == when and res == "food")
        teeth = sum(a for w, res, a in self.income if w == when and res == "teeth")
        return food, teeth


def _count(cards: list[Card], what: str) -> int:
    if what == "caveman":
        return sum(c.is_caveman for c in cards)
    return sum(c.type == what for c in cards)


def _compute_scores(deck: Deck, tableau: tuple[str, ...]) -> Scores:
    cards = [deck.cards[c] for c in tableau]
    totals = {s: sum(getattr(c, s) for c in cards) for s in SCORES}
    explore = any(c.type == "explorer" for c in cards)
    prot_cas = prot_starve = False
    relief = 0
    discounts: list[tuple[str, str | None, int]] = []
    income: list[tuple[str, str, int]] = []
    for card in cards:
        for eff in card.effects:
            p = dict(eff.params)
            if eff.kind == "bonus":
                per, minimum = p.get("per"), p.get("min")
                if per and minimum:
                    gain = p["amount"] if _count(cards, per) >= minimum else 0
                elif per:
                    gain = p["amount"] * _count(cards, per)
                else:
                    gain = p["amount"]
                totals[p["score"]] += gain
            elif eff.kind == "discount":
                discounts.append((p["action"], p.get("role"), p["amount"]))
            elif eff.kind == "income":
                n = _count(cards, p["per"]) if p.get("per") else 1
                if n:
                    income.append((p["when"], p["resource"], p["amount"] * n))
            elif eff.kind == "protection":
                prot_cas |= p["against"] == "casualties"
                prot_starve |= p["against"] == "starvation"
            elif eff.kind == "feeding":
                relief += p["amount"]
            elif eff.kind == "explore":
                explore = True
    return Scores(
        hunting=totals["hunting"], inventing=totals["inventing"], foraging=totals["foraging"],
        population=totals["population"], cavemen=_count(cards, "caveman"), can_explore=explore,
        protected_casualties=prot_cas, protected_starvation=prot_starve, feeding_relief=relief,
        discounts=tuple(discounts), income=tuple(income),
    )


# --------------------------------------------------------------------------- loading

_INT_FIELDS = ("stone", "hunting", "inventing", "foraging", "population", "cost_food",
               "cost_teeth", "requirement", "reward_food", "reward_teeth")
_REQUIRED = {
    "leader": ("hunting", "inventing", "foraging"),
    "hunter": ("hunting", "inventing", "foraging", "cost_food", "cost_teeth"),
    "thinker": ("hunting", "inventing", "foraging", "cost_food", "cost_teeth"),
    "elder": ("hunting", "inventing", "foraging", "cost_food", "cost_teeth"),
    "explorer": ("hunting", "inventing", "foraging", "cost_food", "cost_teeth"),
    "beast": ("requirement",),
    "invention": ("requirement", "effects"),
    "fire": (),
    "cave": ("population",),
}


def load_deck(path: str | Path | None = None) -> Deck:
    """Load and validate a deck file (the standard deck when ``path`` is None).

    The file is looked at every time (one ``stat``), so a changed file is never mistaken
    for the old one; it is read and parsed again only when its size or mtime changed."""
    source = _resolved(str(path or STANDARD_DECK))
    try:
        st = Path(source).stat()
        return _load_cached(source, st.st_mtime_ns, st.st_size)
    except OSError as exc:
        raise DeckError(f"cannot read deck file {source}: {exc.strerror}", path=source) from None


def _resolved(path: str) -> str:
    """``path`` made absolute with its links followed (``Path.resolve``: a system call per
    folder on the way); an absolute path's answer is kept (``_resolved_absolute``), a
    relative one depends on the working folder and is worked out each time."""
    if Path(path).is_absolute():
        return _resolved_absolute(path)
    return str(Path(path).resolve())


@lru_cache(maxsize=64)
def _resolved_absolute(path: str) -> str:
    return str(Path(path).resolve())


@lru_cache(maxsize=16)
def _load_cached(source: str, mtime_ns: int, size: int) -> Deck:
    return parse_deck(Path(source).read_bytes(), source=source)


def parse_deck(raw: bytes, source: str = "<memory>") -> Deck:
    """Validate deck file bytes and build a Deck."""
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise DeckError(f"{source}: not a TOML file: {exc}", path=source) from None
    meta = data.get("deck", {})
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise DeckError(f"{source}: missing [deck] table with a name", path=source)
    cards_raw = data.get("card")
    if not isinstance(cards_raw, list) or not cards_raw:
        raise DeckError(f"{source}: no [[card]] entries", path=source)
    cards: dict[str, Card] = {}
    for index, entry in enumerate(cards_raw):
        card = _parse_card(entry, index)
        if card.id in cards:
            raise DeckError(f"card {card.id}: duplicate id", card=card.id)
        cards[card.id] = card
    fire_cost = _parse_fire_cost(data.get("fire_cost"))
    deck_ids, starting, fire_id = _check_composition(cards)
    return Deck(
        name=meta["name"], source=source, digest=hashlib.sha256(raw).hexdigest()[:16],
        cards=cards, deck_ids=deck_ids, starting=starting, fire_cost=fire_cost,
        fire_id=fire_id, notes=str(meta.get("notes", "")),
    )


def _parse_card(entry: Any, index: int) -> Card:
    if not isinstance(entry, dict):
        raise DeckError(f"card #{index + 1}: not a table", index=index)
    cid = entry.get("id")
    if not isinstance(cid, str) or not cid.strip() or " " in cid:
        raise DeckError(f"card #{index + 1}: missing field 'id' (a word)", index=index)
    where = f"card {cid}"
    ctype = entry.get("type")
    if ctype not in TYPES:
        raise DeckError(f"{where}: unknown type {ctype!r} (one of {', '.join(TYPES)})", card=cid)
    for key in ("name", "stone"):
        if key not in entry:
            raise DeckError(f"{where}: missing field '{key}'", card=cid, field=key)
    for key in _REQUIRED[ctype]:
        if key not in entry:
            raise DeckError(f"{where}: missing field '{key}' for a {ctype}", card=cid, field=key)
    known = {"id", "type", "name", "tribe", "starting", "effects", "text", *_INT_FIELDS}
    unknown = sorted(set(entry) - known)
    if unknown:
        raise DeckError(f"{where}: unknown field '{unknown[0]}'", card=cid, field=unknown[0])
    ints = {}
    for key in _INT_FIELDS:
        value = entry.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise DeckError(f"{where}: '{key}' must be a whole number >= 0", card=cid, field=key)
        ints[key] = value
    if not 1 <= ints["stone"] <= 5:
        raise DeckError(f"{where}: stone marker {ints['stone']} out of range 1-5", card=cid)
    tribe = entry.get("tribe")
    if tribe is not None and tribe not in TRIBES:
        raise DeckError(f"{where}: unknown tribe {tribe!r}", card=cid)
    effects = tuple(_parse_effect(e, where) for e in entry.get("effects", ()))
    if ctype == "invention" and not effects:
        raise DeckError(f"{where}: an invention needs at least one effect", card=cid)
    return Card(id=cid, type=ctype, name=str(entry["name"]), tribe=tribe, effects=effects,
                text=str(entry.get("text", "")), **ints)


def _parse_effect(raw: Any, where: str) -> Effect:
    if not isinstance(raw, dict) or "kind" not in raw:
        raise DeckError(f"{where}: an effect needs a 'kind'")
    kind = raw["kind"]
    spec = EFFECT_KINDS.get(kind)
    if spec is None:
        raise DeckError(f"{where}: unknown effect kind {kind!r} "
                        f"(one of {', '.join(EFFECT_KINDS)})", effect=kind)
    params = {k: v for k, v in raw.items() if k != "kind"}
    allowed = {**spec["required"], **spec["optional"]}
    for key in spec["required"]:
        if key not in params:
            raise DeckError(f"{where}: effect {kind!r} needs '{key}'", effect=kind)
    for key, value in params.items():
        if key not in allowed:
            raise DeckError(f"{where}: effect {kind!r} has unknown parameter '{key}'")
        choices = allowed[key]
        ok = (value in choices) if choices is not None else (
            isinstance(value, int) and not isinstance(value, bool) and value > 0)
        if not ok:
            expect = f"one of {', '.join(choices)}" if choices else "a whole number > 0"
            raise DeckError(f"{where}: effect {kind!r}: '{key}' = {value!r}, expected {expect}")
    if "min" in params and "per" not in params:
        raise DeckError(f"{where}: effect {kind!r}: 'min' needs 'per'")
    return Effect(kind, tuple(sorted(params.items())))


def _parse_fire_cost(raw: Any) -> dict[int, int]:
    if not isinstance(raw, dict):
        raise DeckError("missing [fire_cost] table (players = cost for 2 to 5 players)")
    out = {}
    for players in range(2, 6):
        cost = raw.get(str(players))
        if not isinstance(cost, int) or isinstance(cost, bool) or cost < 1:
            raise DeckError(f"[fire_cost]: missing or bad cost for {players} players")
        out[players] = cost
    return out


def _check_composition(
        cards: Mapping[str, Card]) -> tuple[tuple[str, ...], dict[str, tuple[str, str, str]], str]:
    deck = [c for c in cards.values() if c.tribe is None]
    counts = Counter(c.type for c in deck)
    for ctype, want in DECK_COUNTS.items():
        if counts[ctype] != want:
            raise DeckError(f"deck has {counts[ctype]} cards of type {ctype}, needs {want}",
                            type=ctype)
    for card in deck:
        if card.type == "leader":
            raise DeckError(f"card {card.id}: a leader card must name its tribe", card=card.id)
    stones = Counter(c.stone for c in deck)
    low, high = STONE_SPREAD
    for stone in range(1, 6):
        if not low <= stones[stone] <= high:
            raise DeckError(f"stone marker {stone} is on {stones[stone]} deck cards; "
                            f"each must be on {low} to {high}", stone=stone)
    starting: dict[str, tuple[str, str, str]] = {}
    hunter_stones = {}
    for tribe in TRIBES:
        mine = [c for c in cards.values() if c.tribe == tribe]
        by_type = Counter(c.type for c in mine)
        if (len(mine) != 3 or by_type["leader"] != 1 or by_type["hunter"] != 1
                or by_type["cave"] != 1):
            raise DeckError(f"tribe {tribe} needs exactly a leader, a hunter and a cave "
                            f"(has {', '.join(c.id for c in mine) or 'none'})", tribe=tribe)
        leader, hunter, cave = (next(c for c in mine if c.type == t)
                                for t in ("leader", "hunter", "cave"))
        if cave.population < 1:
            raise DeckError(f"card {cave.id}: a home cave needs population >= 1", card=cave.id)
        starting[tribe] = (leader.id, hunter.id, cave.id)
        hunter_stones[tribe] = hunter.stone
    if len(set(hunter_stones.values())) != len(TRIBES):
        raise DeckError("the starting hunters must carry five different stone markers")
    fire = next(c for c in deck if c.type == "fire")
    return tuple(c.id for c in deck), starting, fire.id


# --------------------------------------------------------------------------- translations

# A language tag as used in file names: "de", "pt-BR", "zh_Hant" (never a path).
_LANG = re.compile(r"[a-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*")
_TRANSLATION_KEYS = ("tribes", "cards")
_CARD_KEYS = ("name", "text")


@dataclass(frozen=True)
class Translation:
    """A deck's card names, card texts and tribe names in one language.

    ``names`` has every card id, ``texts`` every card id whose English card has a text,
    ``tribes`` every tribe of ``TRIBES``. The deck itself (numbers, effects, digest) is
    never changed by a translation."""

    lang: str
    source: str
    names: Mapping[str, str]
    texts: Mapping[str, str]
    tribes: Mapping[str, str]

    def card_name(self, card_id: str) -> str:
        return self.names.get(card_id, card_id)  # another word of an action: as it is

    def card_text(self, card_id: str) -> str:
        """The card's translated text; "" for a card without text."""
        return self.texts.get(card_id, "")

    def tribe_name(self, tribe: str) -> str:
        return self.tribes[tribe]


def translation_path(deck: Deck, lang: str) -> Path | None:
    """Where the ``lang`` translation of ``deck`` lives: ``<deck stem>.<lang>.toml`` next to
    the deck file (None for a deck not read from a file). Raises ValueError for a ``lang``
    that is not a language tag."""
    if not isinstance(lang, str) or not _LANG.fullmatch(lang):
        raise ValueError(f"not a language tag: {lang!r}")
    source = Path(deck.source)
    if not source.is_absolute():
        return None
    return source.with_name(f"{source.stem}.{lang}.toml")


_TRANSLATIONS: dict[tuple[str, str, int, int], Translation] = {}
_TRANSLATIONS_MAX = 32


def load_translation(deck: Deck, lang: str) -> Translation | None:
    """The validated ``lang`` translation of ``deck``, or None when the deck has no
    translation file for that language. Raises DeckError for a broken file.

    Like ``load_deck`` the file is looked at every time (one ``stat``) and read and
    validated again only when its size or mtime (or the deck) changed."""
    path = translation_path(deck, lang)
    if path is None:
        return None
    source = str(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DeckError(f"cannot read translation file {source}: {exc.strerror}",
                        path=source) from None
    key = (source, deck.digest, st.st_mtime_ns, st.st_size)
    found = _TRANSLATIONS.get(key)
    if found is None:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise DeckError(f"cannot read translation file {source}: {exc.strerror}",
                            path=source) from None
        found = parse_translation(raw, deck, lang, source=source)
        with _MEMOS:
            if len(_TRANSLATIONS) >= _TRANSLATIONS_MAX:
                _TRANSLATIONS.clear()
            _TRANSLATIONS[key] = found
    return found


def parse_translation(raw: bytes, deck: Deck, lang: str,
                      source: str = "<memory>") -> Translation:
    """Validate translation file bytes against ``deck`` and build a Translation."""
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise DeckError(f"{source}: not a TOML file: {exc}", path=source) from None
    for key in data:
        if key not in _TRANSLATION_KEYS:
            raise DeckError(f"{source}: unknown table [{key}] "
                            f"(only [tribes] and [cards.<id>])", path=source, field=key)
    tribes = _parse_tribe_names(data.get("tribes"), source)
    cards_raw = data.get("cards")
    if cards_raw is None:
        raise DeckError(f"{source}: missing [cards.<id>] tables", path=source)
    if not isinstance(cards_raw, dict):
        raise DeckError(f"{source}: 'cards' must be [cards.<id>] tables, "
                        f"not {type(cards_raw).__name__}", path=source)
    for cid in cards_raw:
        if cid not in deck.cards:
            raise DeckError(f"{source}: card {cid}: unknown card id (not in the deck)",
                            path=source, card=cid)
    names: dict[str, str] = {}
    texts: dict[str, str] = {}
    for cid, card in deck.cards.items():
        where = f"{source}: card {cid}"
        entry = cards_raw.get(cid)
        if entry is None:
            raise DeckError(f"{where}: no translation (needs a [cards.{cid}] table "
                            f"with a name)", path=source, card=cid)
        if not isinstance(entry, dict):
            raise DeckError(f"{where}: not a table", path=source, card=cid)
        unknown = sorted(set(entry) - set(_CARD_KEYS))
        if unknown:
            raise DeckError(f"{where}: unknown field '{unknown[0]}'", path=source, card=cid,
                            field=unknown[0])
        if "name" not in entry:
            raise DeckError(f"{where}: missing field 'name'", path=source, card=cid,
                            field="name")
        names[cid] = _text_value(entry["name"], f"{where}: 'name'", path=source, card=cid,
                                 field="name")
        if card.text and "text" not in entry:
            raise DeckError(f"{where}: missing field 'text' (the card has a text)",
                            path=source, card=cid, field="text")
        if not card.text and "text" in entry:
            raise DeckError(f"{where}: field 'text' on a card without a text",
                            path=source, card=cid, field="text")
        if card.text:
            texts[cid] = _text_value(entry["text"], f"{where}: 'text'", path=source, card=cid,
                                     field="text")
    return Translation(lang=lang, source=source, names=MappingProxyType(names),
                       texts=MappingProxyType(texts), tribes=MappingProxyType(tribes))


def _parse_tribe_names(raw: Any, source: str) -> dict[str, str]:
    if raw is None:
        raise DeckError(f"{source}: missing [tribes] table (a name for each of "
                        f"{', '.join(TRIBES)})", path=source)
    if not isinstance(raw, dict):
        raise DeckError(f"{source}: [tribes] must be a table, not {type(raw).__name__}",
                        path=source)
    for tribe in raw:
        if tribe not in TRIBES:
            raise DeckError(f"{source}: tribe {tribe}: unknown tribe "
                            f"(one of {', '.join(TRIBES)})", path=source, tribe=tribe)
    out = {}
    for tribe in TRIBES:
        if tribe not in raw:
            raise DeckError(f"{source}: tribe {tribe}: missing name in [tribes]",
                            path=source, tribe=tribe)
        out[tribe] = _text_value(raw[tribe], f"{source}: tribe {tribe}", path=source,
                                 tribe=tribe)
    return out


def _text_value(value: Any, where: str, **data: Any) -> str:
    if not isinstance(value, str):
        raise DeckError(f"{where} must be a string, not {type(value).__name__}", **data)
    if not value.strip():
        raise DeckError(f"{where} is empty", **data)
    return value
