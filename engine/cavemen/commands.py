"""Reply commands of Cavemen (hooks of ``engine.core``): the words of its verbs and
payments in each language (``commands.toml``, ``SpeaksCommands``), and every kind of move
it has (``NamesMoves``). Cards are named by their printed names, in the reader's
language when the deck has a translation."""

from __future__ import annotations

from pathlib import Path

from engine.cavemen.rules import State
from engine.words import Words, words_in

WORDS_FILE = Path(__file__).with_name("commands.toml")

# Every kind of move (engine.core.NamesMoves), as rules.py's docstring lists them.
ACTION_KINDS = ("bid", "pass", "lose", "recruit", "explore", "hunt", "invent", "forage",
                "discard")


def command_words(state: State, lang: str) -> Words:
    """The words of the notation in ``lang`` (``engine.words``)."""
    return words_in(WORDS_FILE, lang)
