"""The words files of reply commands (engine/words.py): each game's file loads, and a
file that breaks a rule is refused with the entry named."""

from __future__ import annotations

import pytest

from engine import cavemen, stoneage
from engine.words import WordsError, load_words, parse_words, words_in


@pytest.mark.parametrize("game", [cavemen, stoneage])
def test_each_games_words_load_and_german_has_a_verb_for_every_kind(game):
    words = load_words(game.commands.WORDS_FILE)
    assert "de" in words
    kinds = {"cavemen": ("bid", "pass", "forage", "recruit", "explore", "hunt", "invent",
                         "lose", "discard"),
             "stoneage": ("place", "order", "use", "tools", "no_tools", "take", "decline",
                          "build", "pick", "feed", "starve")}[game.NAME]
    assert all(kind in words["de"] for kind in kinds)


def test_a_regional_language_falls_back_and_an_unknown_one_has_no_words():
    assert words_in(stoneage.commands.WORDS_FILE, "de-AT")["place"] == ("setze",)
    assert words_in(stoneage.commands.WORDS_FILE, "fr") == {}


@pytest.mark.parametrize(("doc", "entry"), [
    ({"de": {"place": "Setze"}}, "place"),  # not lower case
    ({"de": {"place": "setz dich"}}, "place"),  # two words
    ({"de": {"place": "a|b"}}, "place"),
    ({"de": {"place": []}}, "place"),
    ({"de": {"place": 3}}, "place"),
    ({"de": {"place": "setze", "build": "setze"}}, "build"),  # one word, two meanings
    ({"de": {"hut": "field", "field": "acker"}}, "hut"),  # a word of the notation
    ({"Deutsch": {"place": "setze"}}, "Deutsch"),
    ({"de": "setze"}, "de"),
])
def test_a_broken_words_file_is_refused_naming_the_entry(doc, entry):
    with pytest.raises(WordsError) as caught:
        parse_words(doc)
    assert caught.value.data["entry"] == entry


def test_a_missing_or_broken_file_is_refused(tmp_path):
    with pytest.raises(WordsError):
        load_words(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[de\nplace = 1")
    with pytest.raises(WordsError):
        load_words(bad)
