"""Typed commands (a reply by email) in the game's notation, with printed names.

The engine's notation names things by id (``recruit H03 teeth``, ``place forest 3``).
A player reads names (the Wise Woman, the Forest, in their language), so a typed
command may name a thing by its printed name, in English or the reader's language, or
by a unique run of words of it, each shortened to a prefix (``hunt mammoth`` for the
Woolly Mammoth, ``place 3 wald``). ``read_command`` puts the ids back for those names
and hands the words to the engine's ``parse_action``, which matches them against the
legal actions (case-insensitive, unique prefixes, any order after the first word) and
never completes a move: a payment, a count or a card the player did not name is
refused (IncompleteAction), never guessed. ``command_list`` says the commands a player
may type now, in the same words. Nothing here writes anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from engine.core import (
    Action,
    AmbiguousAction,
    EngineError,
    IllegalAction,
    InvalidAction,
    parse_action,
)
from engine.core import Game as EngineGame
from pbem import localize

MAX_LISTED = 16  # a decision with more commands than this lists them in short
MAX_LINE = 200  # longer lines are not read as commands
_CODE_RE = re.compile(r"[0-9A-Z-]")  # an id that reads as a code (H06, SH-snake)


def _words(name: str) -> list[str]:
    """A printed name as the words a player types (``Sabre-tooth Cat``: two)."""
    return name.lower().split()


def _ids_of(action: Action) -> list[str]:
    """The words of an action that may be ids of printed things (strings, not numbers)."""
    out: list[str] = []
    for _, value in action.args:
        for word in value if isinstance(value, tuple) else (value,):
            if isinstance(word, str) and not word.isdigit():
                out.append(word)
    return out


def _names(mod: EngineGame, state: Any, lang: str) -> list[Callable[[str], dict[str, Any]]]:
    """Card lookups in the reader's language and in English (the data file's)."""
    found = [localize.lookup(mod, state, localize.translation_for(mod, state, lang))]
    if lang != "en":
        found.append(localize.lookup(mod, state, None))
    return found


def read_command(mod: EngineGame, state: Any, seat: int, text: str,
                 lang: str = "en") -> Action:
    """The one legal action of ``seat`` that the typed ``text`` names, or the engine's
    error (InvalidAction, IllegalAction, AmbiguousAction, IncompleteAction; the last two
    carry the ``candidates``). Printed names are read as their ids first."""
    legal = mod.legal_actions(state, seat)
    if len(text) > MAX_LINE:
        raise InvalidAction("the line is too long to be a command", text=text[:40])
    try:
        return parse_action(text, legal)
    except (IllegalAction, InvalidAction):
        named = _with_ids(mod, state, legal, text, lang)
        if named is None:
            raise
    return parse_action(named, legal)


def _with_ids(mod: EngineGame, state: Any, legal: Sequence[Action], text: str,
              lang: str) -> str | None:
    """``text`` with the printed names in it replaced by the ids they name among the
    legal actions whose kind its first word begins (None: no name found). A run of
    words names a thing when each is a prefix of the next word of its name, starting at
    any word of it; the longest run that names exactly one thing wins. A run that names
    several raises AmbiguousAction."""
    words = text.strip().lower().split()
    if len(words) < 2:
        return None
    kinds = {a.kind for a in legal if a.kind.startswith(words[0])}
    ids = {i for a in legal if a.kind in kinds for i in _ids_of(a)}
    if not ids:
        return None
    spoken: dict[str, list[list[str]]] = {i: [] for i in ids}
    for lookup in _names(mod, state, lang):
        for i in ids:
            name = _words(str(lookup(i).get("name", i)))
            if name and name not in spoken[i]:
                spoken[i].append(name)
    out, pos, changed = [words[0]], 1, False
    while pos < len(words):
        found = _longest_name(words, pos, spoken)
        if found is None:
            out.append(words[pos])
            pos += 1
            continue
        length, cid = found
        out.append(cid.lower())
        pos += length
        changed = True
    return " ".join(out) if changed else None


def _longest_name(words: list[str], pos: int,
                  spoken: dict[str, list[list[str]]]) -> tuple[int, str] | None:
    """The longest run of ``words`` from ``pos`` that names one thing: (its length, the
    thing's id); None when the word there is an id as it is, or names nothing."""
    for length in range(len(words) - pos, 0, -1):
        run = words[pos:pos + length]
        if length == 1 and run[0] in spoken:  # an id as it is
            return None
        hits = sorted(i for i, names in spoken.items()
                      if any(_names_run(name, run) for name in names))
        if len(hits) > 1:  # a whole name typed out wins over names it begins
            hits = [h for h in hits if run in spoken[h]] or hits
        if len(hits) == 1:
            return length, hits[0]
        if len(hits) > 1 and length == 1:
            raise AmbiguousAction(f"{run[0]!r} names several things", text=" ".join(words),
                                  candidates=hits[:10])
    return None


def _names_run(name: list[str], run: list[str]) -> bool:
    """Whether each word of ``run`` is a prefix of the next word of ``name``, from some
    word of it on."""
    return any(all(name[start + k].startswith(part) for k, part in enumerate(run))
               for start in range(len(name) - len(run) + 1))


def spoken_action(action: Action, card: Callable[[str], dict[str, Any]]) -> str:
    """``action`` as a player may type it: ids that read as codes (``H06``) replaced by
    their printed names, plain words (``forest``) and numbers as they are."""
    words = [action.kind]
    for _, value in action.args:
        for word in value if isinstance(value, tuple) else (value,):
            words.append(_spoken_word(word, card))
    return " ".join(words)


def _spoken_word(word: Any, card: Callable[[str], dict[str, Any]]) -> str:
    if not isinstance(word, str) or not _CODE_RE.search(word) or word.isdigit():
        return str(word)
    return str(card(word).get("name", word))


def command_list(mod: EngineGame, state: Any, seat: int, lang: str = "en") -> list[str]:
    """The commands ``seat`` may type now, in the reader's names: each legal action, or,
    for a kind with more than a few, one line that says its words (``place (hunt |
    forest) (1 | 2 | 3)``; ``discard 2 × (A | B | C)`` for a choice of several things)."""
    try:
        legal = mod.legal_actions(state, seat)
    except EngineError:
        return []
    card = _names(mod, state, lang)[0]
    if len(legal) <= MAX_LISTED:
        return [spoken_action(a, card) for a in legal]
    kinds: dict[str, list[Action]] = {}
    for a in legal:
        kinds.setdefault(a.kind, []).append(a)
    lines: list[str] = []
    for kind, actions in kinds.items():
        if len(actions) <= 4:
            lines.extend(spoken_action(a, card) for a in actions)
        else:
            lines.append(_in_short(kind, actions, card))
    return lines


def _in_short(kind: str, actions: list[Action],
              card: Callable[[str], dict[str, Any]]) -> str:
    first = actions[0]
    if len(first.args) == 1 and isinstance(first.args[0][1], tuple):  # n things of a set
        pool: list[str] = []
        for a in actions:
            for w in a.args[0][1]:
                if w not in pool:
                    pool.append(w)
        size = len(first.args[0][1])
        return f"{kind} {size} × ({' | '.join(_spoken_word(w, card) for w in pool)})"
    columns: list[list[str]] = []
    for a in actions:
        parts = [_spoken_word(w, card) for _, v in a.args
                 for w in (v if isinstance(v, tuple) else (v,))]
        for i, part in enumerate(parts):
            if i == len(columns):
                columns.append([])
            if part not in columns[i]:
                columns[i].append(part)
    return " ".join([kind, *(c[0] if len(c) == 1 else f"({' | '.join(c)})" for c in columns)])
