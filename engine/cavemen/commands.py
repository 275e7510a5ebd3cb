"""Reply commands of Cavemen (a hook of ``engine.core``, ``SpeaksCommands``): the words
of its verbs and payments in each language (``commands.toml``). Cards are named by their
printed names, in the reader's language when the deck has a translation."""

from __future__ import annotations

from pathlib import Path

from engine.cavemen.rules import State
from engine.words import Words, words_in

WORDS_FILE = Path(__file__).with_name("commands.toml")


def command_words(state: State, lang: str) -> Words:
    """The words of the notation in ``lang`` (``engine.words``)."""
    return words_in(WORDS_FILE, lang)
