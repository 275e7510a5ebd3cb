"""The words of a game's reply commands in each language, read from a TOML file that the
game keeps beside its rules (``engine/<game>/commands.toml``).

A game's notation (``place forest 3``, ``take wood brick``, ``recruit H03 teeth``) is
English, and is read in every language. A reader of another language is shown, and may
type, words of their own (``setze wald 3``): a words file gives, for each language, each
word of the notation that has words there (the kind of a move, or a fixed word a move
names: a place, a resource, a tool) and its words, the first the one an email lists::

    [de]
    place = "setze"
    forest = ["wald", "forst"]

Rules checked on load (``WordsError`` names the entry): a language is a tag (``de``,
``pt-BR``); every word is one run of lower-case letters, digits, ``_`` or ``-`` (no
blank, no ``|``); within a language no word stands for two notation words, nor is the
notation word of another entry (``hut`` may not mean ``field``).

The words live in a file of their own, not in the game's component file: a saved game
carries that file's digest, and a better word must never make saved games unreadable.
Nothing here knows a game or the server.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

from engine.core import EngineError

Words = Mapping[str, tuple[str, ...]]
"""One language's words: notation word -> its words there, the listed one first."""

_LANG = re.compile(r"[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*")
_WORD = re.compile(r"[^\W_A-Z][\w-]*")
_NONE: Words = MappingProxyType({})


class WordsError(EngineError):
    """A words file is missing, unreadable, or breaks a rule (see the module docstring)."""

    code = "data/words"


def parse_words(doc: Mapping[str, object], source: str = "<memory>"
                ) -> Mapping[str, Words]:
    """Validate a parsed words document: language -> notation word -> its words."""
    out: dict[str, Words] = {}
    for lang, table in doc.items():
        if not _LANG.fullmatch(lang) or not isinstance(table, Mapping):
            raise WordsError(f"{source}: [{lang}] must be a table named by a language tag",
                             entry=lang)
        out[lang] = MappingProxyType(_language(table, f"{source} [{lang}]"))
    return MappingProxyType(out)


def _language(table: Mapping[str, object], where: str) -> dict[str, tuple[str, ...]]:
    words: dict[str, tuple[str, ...]] = {}
    meaning: dict[str, str] = {}
    for key, value in table.items():
        said = (value,) if isinstance(value, str) else value
        if not isinstance(said, list | tuple) or not said:
            raise WordsError(f"{where} {key}: needs a word or a list of words", entry=key)
        for word in said:
            if not isinstance(word, str) or not _WORD.fullmatch(word) or word != word.lower():
                raise WordsError(f"{where} {key}: {word!r} is not one lower-case word",
                                 entry=key)
            if meaning.setdefault(word, key) != key:
                raise WordsError(f"{where} {key}: {word!r} already means {meaning[word]}",
                                 entry=key)
        words[key] = tuple(said)
    for key in words:
        other = meaning.get(key)
        if other is not None and other != key:
            raise WordsError(f"{where} {other}: {key!r} is a word of the notation itself",
                             entry=other)
    return words


@lru_cache(maxsize=8)
def load_words(path: Path) -> Mapping[str, Words]:
    """The validated words file at ``path`` (read once)."""
    try:
        raw = path.read_bytes()
        doc = tomllib.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise WordsError(f"cannot read {path.name}: {exc.strerror}", file=str(path)) from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise WordsError(f"{path.name} is not valid TOML: {exc}", file=str(path)) from None
    return parse_words(doc, path.name)


def words_in(path: Path, lang: str) -> Words:
    """The words of ``lang`` in the words file at ``path`` ("de-AT" falls back to "de");
    none for a language the file has no words in."""
    table = load_words(path)
    found = table.get(lang)
    if found is None:
        found = table.get(lang.replace("_", "-").split("-", 1)[0])
    return found if found is not None else _NONE
