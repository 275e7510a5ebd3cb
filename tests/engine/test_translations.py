"""Deck translations: the German file covers the standard deck, broken translation files
are refused with a DeckError naming the entry and the problem, a deck without a file for
a language has no translation, and the English deck (whose digest games store) is
unchanged."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import cavemen
from engine.cavemen.deck import (
    STANDARD_DECK,
    TRIBES,
    Deck,
    DeckError,
    Translation,
    load_deck,
    load_translation,
    parse_deck,
    translation_path,
)
from engine.core import EngineError

GERMAN = STANDARD_DECK.with_name("standard.de.toml")
GERMAN_TEXT = GERMAN.read_text(encoding="utf-8")
STANDARD_TEXT = STANDARD_DECK.read_text(encoding="utf-8")
# The SHA-256 of standard.toml as running games know it: any byte changed in the English
# deck makes every stored game refuse to load (rules._checked_deck), so it is pinned here.
STANDARD_SHA256 = "8fdb949f3bd2d551893981ca52568a275ba81c2703bbd8c5954dcb6d04e3f9a0"


@pytest.fixture(scope="module")
def deck() -> Deck:
    return load_deck()


@pytest.fixture(scope="module")
def german(deck: Deck) -> Translation:
    found = load_translation(deck, "de")
    assert found is not None
    return found


# --------------------------------------------------------------------------- the German file


def test_the_german_file_sits_next_to_the_standard_deck(deck: Deck) -> None:
    assert translation_path(deck, "de") == GERMAN
    assert GERMAN.is_file()


def test_the_german_file_names_every_card_of_the_standard_deck(
        deck: Deck, german: Translation) -> None:
    assert len(deck.cards) == 101
    assert set(german.names) == set(deck.cards)
    raw = tomllib.loads(GERMAN_TEXT)
    assert list(raw["cards"]) == list(deck.cards)  # same order as standard.toml
    for cid in deck.cards:
        assert german.card_name(cid).strip(), cid


def test_the_german_file_has_a_text_exactly_for_the_cards_with_a_text(
        deck: Deck, german: Translation) -> None:
    with_text = {cid for cid, card in deck.cards.items() if card.text}
    assert len(with_text) == 21  # 20 inventions and Fire
    assert set(german.texts) == with_text
    for cid, card in deck.cards.items():
        assert bool(german.card_text(cid)) == bool(card.text), cid


def test_the_german_file_names_every_tribe(german: Translation) -> None:
    assert tuple(german.tribes) == TRIBES
    assert dict(german.tribes) == {"Wolf": "Wolf", "Tiger": "Tiger", "Snake": "Schlange",
                                   "Owl": "Eule", "Bear": "Bär"}


def test_german_texts_keep_the_numbers_of_the_english_texts(
        deck: Deck, german: Translation) -> None:
    for cid, text in german.texts.items():
        english = deck.card(cid).text
        assert re.findall(r"[+-]?\d+", text) == re.findall(r"[+-]?\d+", english), cid


def test_german_names_use_the_rulebook_vocabulary(deck: Deck, german: Translation) -> None:
    for tribe, (leader, hunter, cave) in deck.starting.items():
        local = german.tribe_name(tribe)
        assert german.card_name(leader).endswith("-Anführer")
        assert german.card_name(hunter).endswith("-Jäger")
        assert german.card_name(cave).endswith("-Heimathöhle")
        stem = german.card_name(leader).removesuffix("-Anführer")
        assert stem[:3] == local[:3], (tribe, stem, local)
    assert german.card_name("L-wolf") == "Wolf-Anführer"
    assert german.card_name(deck.fire_id) == "Feuer"
    assert "Muschel" in german.card_text(deck.fire_id)
    expected = {"B17": "Höhlenlöwe", "B12": "Riesenhirsch", "B23": "Megaloceros",
                "B15": "Styracosaurus", "B18": "Wollhaarmammut", "B27": "Tyrannosaurus"}
    for cid, name in expected.items():
        assert german.card_name(cid) == name
    assert german.card_text("I20") == (
        "Du erhältst 2 zusätzliche Nahrung, wann immer du Nahrung sammelst.")


SCORES = ("Hunting", "Inventing", "Foraging", "Population")
CATALOG = Path(__file__).resolve().parents[2] / "pbem/translations/de/LC_MESSAGES/messages.po"


def board_words() -> dict[str, str]:
    """The German word the boards and emails use for each score (the server's catalog)."""
    from babel.messages.pofile import read_po

    with CATALOG.open("rb") as fh:
        catalog = read_po(fh)
    return {english: catalog[english].string for english in SCORES}


def test_german_boards_name_each_score_with_one_word_of_its_own() -> None:
    assert board_words() == {"Hunting": "Jagd-Wert", "Inventing": "Erfindungs-Wert",
                             "Foraging": "Sammel-Wert", "Population": "Bevölkerung"}


def test_german_texts_use_the_score_names_of_the_boards(deck: Deck,
                                                        german: Translation) -> None:
    words = board_words()
    for cid, text in german.texts.items():
        for english, local in words.items():
            if f" {english}" in deck.card(cid).text:
                assert local in text, (cid, text)
        assert not re.search(r"\b(Hunting|Inventing|Foraging|Population|Food|Teeth)\b",
                             text), (cid, text)


def test_german_names_are_unique(german: Translation) -> None:
    names = list(german.names.values())
    assert len(set(names)) == len(names)


def test_a_translation_is_immutable(german: Translation) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        german.lang = "fr"  # type: ignore[misc]
    for mapping in (german.names, german.texts, german.tribes):
        with pytest.raises(TypeError):
            mapping["H01"] = "x"  # type: ignore[index]


# --------------------------------------------------------------------------- the engine


def test_the_english_deck_is_unchanged_and_its_digest_is_what_a_game_stores() -> None:
    raw = STANDARD_DECK.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == STANDARD_SHA256
    state = cavemen.setup(["a", "b"], 1)
    assert state.deck_digest == hashlib.sha256(raw).hexdigest()[:16]
    assert cavemen.to_json(state)["deck_digest"] == STANDARD_SHA256[:16]
    assert cavemen.translation(state, "de") is not None
    assert state.deck_digest == load_deck().digest == STANDARD_SHA256[:16]


def test_the_game_exposes_the_translation_without_changing_anything() -> None:
    state = cavemen.setup(["a", "b", "c"], 7)
    before = (json.dumps(cavemen.to_json(state)), json.dumps(cavemen.view(state, 0)))
    found = cavemen.translation(state, "de")
    assert isinstance(found, Translation) and found.lang == "de"
    assert found.card_name("H01") == "Speerwerfer"
    assert cavemen.card_info(state, "H01")["name"] == "Spear Thrower"
    assert (json.dumps(cavemen.to_json(state)), json.dumps(cavemen.view(state, 0))) == before


def test_a_regional_language_tag_falls_back_to_the_language() -> None:
    state = cavemen.setup(["a", "b"], 1)
    german = cavemen.translation(state, "de")
    assert cavemen.translation(state, "de-AT") is german
    assert cavemen.translation(state, "de_CH") is german


def test_a_language_without_a_file_has_no_translation(deck: Deck) -> None:
    state = cavemen.setup(["a", "b"], 1)
    assert cavemen.translation(state, "en") is None
    assert cavemen.translation(state, "fr-FR") is None
    assert load_translation(deck, "it") is None


def test_a_deck_without_translation_files_has_none(tmp_path: Path) -> None:
    path = tmp_path / "plain.toml"
    path.write_text(STANDARD_TEXT, encoding="utf-8")
    state = cavemen.setup(["a", "b"], 1, {"deck": str(path)})
    assert cavemen.translation(state, "de") is None
    assert load_translation(load_deck(path), "de") is None


def test_a_deck_not_read_from_a_file_has_no_translation() -> None:
    assert load_translation(parse_deck(STANDARD_DECK.read_bytes()), "de") is None


@pytest.mark.parametrize("lang", ["", "../standard", "de/../x", "DE", "de.toml", "d", None])
def test_a_language_that_is_not_a_tag_is_refused(deck: Deck, lang: object) -> None:
    with pytest.raises(ValueError, match="language tag"):
        load_translation(deck, lang)  # type: ignore[arg-type]


def test_the_translation_is_cached_and_reread_when_the_file_changes(
        tmp_path: Path) -> None:
    deck_path, de_path = write_pair(tmp_path, GERMAN_TEXT)
    state = cavemen.setup(["a", "b"], 1, {"deck": str(deck_path)})
    first = cavemen.translation(state, "de")
    assert first is not None and first.source == str(de_path)
    assert cavemen.translation(state, "de") is first
    de_path.write_text(de_edit('name = "Kaninchen"', 'name = "Langohr-Hase"'),
                       encoding="utf-8")
    second = cavemen.translation(state, "de")
    assert second is not first and second.card_name("B01") == "Langohr-Hase"
    de_path.unlink()
    assert cavemen.translation(state, "de") is None


def test_a_translation_belongs_to_the_deck_next_to_it(tmp_path: Path) -> None:
    deck_text = STANDARD_TEXT.replace('name = "Rabbit"', 'name = "Hare"')
    deck_path, _ = write_pair(tmp_path, de_edit('name = "Kaninchen"', 'name = "Hase"'),
                              deck_text)
    state = cavemen.setup(["a", "b"], 1, {"deck": str(deck_path)})
    assert cavemen.card_info(state, "B01")["name"] == "Hare"
    assert cavemen.translation(state, "de").card_name("B01") == "Hase"
    assert cavemen.translation(cavemen.setup(["a", "b"], 1), "de").card_name(
        "B01") == "Kaninchen"


# --------------------------------------------------------------------------- broken files


def de_edit(old: str, new: str, text: str = GERMAN_TEXT) -> str:
    """Replace ``old``, which must occur exactly once in the German file."""
    assert text.count(old) == 1, f"{old!r} not exactly once in standard.de.toml"
    return text.replace(old, new)


def de_drop_card(card_id: str) -> str:
    """The German file without the ``[cards.<id>]`` table of one card."""
    pattern = re.compile(rf"\n\[cards\.{re.escape(card_id)}\]\n(?:[a-z]+ = .*\n)+")
    text, count = pattern.subn("\n", GERMAN_TEXT)
    assert count == 1, card_id
    return text


def write_pair(tmp_path: Path, translation: str | bytes,
               deck_text: str = STANDARD_TEXT) -> tuple[Path, Path]:
    """A deck and its German translation in a fresh folder (loading caches by path)."""
    folder = tmp_path / f"d{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    deck_path, de_path = folder / "small.toml", folder / "small.de.toml"
    deck_path.write_text(deck_text, encoding="utf-8")
    if isinstance(translation, bytes):
        de_path.write_bytes(translation)
    else:
        de_path.write_text(translation, encoding="utf-8")
    return deck_path, de_path


BROKEN: dict[str, tuple[Callable[[], str | bytes], list[str]]] = {
    "unknown card id": (
        lambda: GERMAN_TEXT + '\n[cards.B99]\nname = "Einhorn"\n', ["B99", "unknown card"]),
    "card missing": (lambda: de_drop_card("H07"), ["H07", "no translation"]),
    "card without a name": (
        lambda: de_edit('[cards.T05]\nname = "Feuerwächter"\n', "[cards.T05]\n"),
        ["T05", "missing", "name"]),
    "invention without a text": (
        lambda: de_edit('text = "+1 Jagd-Wert."\n', ""), ["I01", "missing", "text"]),
    "fire without a text": (
        lambda: de_edit('text = "Nur der Muschel-Spieler darf das Feuer erfinden; '
                        'wer es erfindet, gewinnt das Spiel."\n', ""),
        ["FIRE", "missing", "text"]),
    "text on a card without one": (
        lambda: de_edit('name = "Höhlenlöwe"\n', 'name = "Höhlenlöwe"\ntext = "Brüllt."\n'),
        ["B17", "text", "without a text"]),
    "unknown card field": (
        lambda: de_edit('name = "Höhlenlöwe"\n', 'name = "Höhlenlöwe"\nplural = "x"\n'),
        ["B17", "unknown field", "plural"]),
    "card not a table": (
        lambda: 'cards.C08 = "Kristallhöhle"\n' + de_drop_card("C08"), ["C08", "not a table"]),
    "empty name": (lambda: de_edit('name = "Grotte"', 'name = ""'), ["C06", "name", "empty"]),
    "blank text": (lambda: de_edit('text = "+2 Sammel-Wert."', 'text = "  "'),
                   ["I11", "text", "empty"]),
    "name not a string": (lambda: de_edit('name = "Rohling"', "name = 4"),
                          ["H04", "name", "string", "int"]),
    "text not a string": (lambda: de_edit('text = "+1 Erfindungs-Wert."', 'text = ["+1"]'),
                          ["I09", "text", "string", "list"]),
    "name a table": (lambda: de_edit('name = "Floß"', 'name = { de = "Floß" }'),
                     ["I13", "name", "string"]),
    "unknown tribe": (lambda: de_edit('Bear = "Bär"\n', 'Bear = "Bär"\nFox = "Fuchs"\n'),
                      ["Fox", "unknown tribe"]),
    "tribe missing": (lambda: de_edit('Owl = "Eule"\n', ""), ["tribe Owl", "missing"]),
    "tribe name empty": (lambda: de_edit('Snake = "Schlange"', 'Snake = ""'),
                         ["tribe Snake", "empty"]),
    "tribe name not a string": (lambda: de_edit('Tiger = "Tiger"', "Tiger = true"),
                                ["tribe Tiger", "string", "bool"]),
    "tribes table missing": (
        lambda: de_edit('[tribes]\nWolf = "Wolf"\nTiger = "Tiger"\nSnake = "Schlange"\n'
                        'Owl = "Eule"\nBear = "Bär"\n', ""), ["[tribes]", "missing"]),
    "tribes not a table": (
        lambda: 'tribes = "Wolf"\n' + de_edit(
            '[tribes]\nWolf = "Wolf"\nTiger = "Tiger"\nSnake = "Schlange"\n'
            'Owl = "Eule"\nBear = "Bär"\n', ""), ["[tribes]", "must be a table"]),
    "no cards": (lambda: GERMAN_TEXT.split("\n[cards.")[0], ["[cards.<id>]", "missing"]),
    "unknown table": (lambda: GERMAN_TEXT + '\n[beasts]\nB01 = "Kaninchen"\n',
                      ["[beasts]", "unknown table"]),
    "not TOML": (lambda: "[cards.H01\nname = \n", ["not a TOML file"]),
    "truncated TOML": (lambda: GERMAN_TEXT[: GERMAN_TEXT.index('"Höhlenbär"') + 7],
                       ["not a TOML file"]),
    "not UTF-8": (lambda: GERMAN_TEXT.encode("latin-1"), ["not a TOML file"]),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_translation_file_is_refused_naming_the_entry_and_problem(
        case: str, tmp_path: Path) -> None:
    make, expected = BROKEN[case]
    deck_path, de_path = write_pair(tmp_path, make())
    deck = load_deck(deck_path)
    with pytest.raises(DeckError) as info:
        load_translation(deck, "de")
    error = info.value
    assert error.code == "deck/invalid"
    assert isinstance(error, EngineError)
    assert str(de_path) in error.message
    for fragment in expected:
        assert fragment in error.message, f"{fragment!r} not in {error.message!r}"
    state = cavemen.setup(["a", "b"], 1, {"deck": str(deck_path)})
    with pytest.raises(DeckError):
        cavemen.translation(state, "de")


def test_the_edits_themselves_leave_a_valid_translation(tmp_path: Path) -> None:
    """The helpers only break what each case breaks: harmless edits still load."""
    text = de_edit('name = "Grotte"', 'name = "Tropfsteinhöhle"')
    deck_path, _ = write_pair(tmp_path, text)
    found = load_translation(load_deck(deck_path), "de")
    assert found is not None and found.card_name("C06") == "Tropfsteinhöhle"
    deck_path, _ = write_pair(tmp_path, GERMAN_TEXT.encode("utf-8"))
    copy, german = load_translation(load_deck(deck_path), "de"), load_translation(load_deck(), "de")
    assert (copy.names, copy.texts, copy.tribes) == (german.names, german.texts, german.tribes)


def test_a_translation_of_another_deck_is_refused(tmp_path: Path) -> None:
    """A deck without card B27 cannot use a translation that names it."""
    deck_text = STANDARD_TEXT.replace('id = "B27"', 'id = "B28"')
    deck_path, _ = write_pair(tmp_path, GERMAN_TEXT, deck_text)
    with pytest.raises(DeckError, match="card B27: unknown card id"):
        load_translation(load_deck(deck_path), "de")


def test_an_unreadable_translation_file_is_refused(tmp_path: Path) -> None:
    deck_path, de_path = write_pair(tmp_path, GERMAN_TEXT)
    de_path.unlink()
    de_path.mkdir()
    with pytest.raises(DeckError, match="cannot read translation file"):
        load_translation(load_deck(deck_path), "de")
