"""Typed commands (a reply by email) in the game's notation, in the reader's words.

The engine's notation names things by id, in English words (``recruit H03 teeth``,
``place forest 3``). A player reads names (the Wise Woman, the Forest, in their
language) and, from a game that gives them (``command_words``), verbs and fixed words of
their language (``setze wald 3``). A typed command may use any of these: the notation's
words, the reader's words or English ones, a printed name in the reader's language or in
English, or a unique run of words of a name, each shortened to a prefix (``hunt
mammoth`` for the Woolly Mammoth, ``place 3 wald``); a verb of a language other than the
notation's is read in full or from its first MIN_VERB_PREFIX letters (so that "Wir ..."
is table talk, not ``wirb``), and a letter with an umlaut may be written without it
(``huette``, ``hutte``). ``read_command`` puts the notation back and hands the words to
the engine's ``parse_action``, which matches them against the legal actions
(case-insensitive, unique prefixes, any order after the first word) and never completes
a move: a payment, a count or a card the player did not name is refused
(IncompleteAction), never guessed. ``looks_like_a_command`` tells a command from table
talk: a line whose first word names a kind of move the game has, whether or not anyone
may make it now, is a command.

``listed_commands`` says the commands a player may type now, in the reader's words, every
line exactly legal: one command, or, for moves that differ only in their last number, one
line offering each of those numbers (``place forest 1 | 2 | 3``: ``expand_line``); the
most useful first (the game's ``command_order``), at most MAX_LISTED lines, and how many
moves are left for the game page. ``nearest_commands`` gives the legal commands closest
to one that was refused. Nothing here writes anything.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from engine.core import (
    Action,
    AmbiguousAction,
    EngineError,
    IllegalAction,
    InvalidAction,
    format_action,
    parse_action,
)
from engine.core import Game as EngineGame
from pbem import localize

MAX_LISTED = 16  # lines an email lists; the other moves are on the game page
MAX_NEAREST = 5  # commands a refusal offers instead
ENGINE_CANDIDATES = 10  # the most moves parse_action names as an ambiguous command's
MAX_LINE = 200  # longer lines are not read as commands
MIN_VERB_PREFIX = 4  # letters that begin a command's first word ("to", "in", "wir" are
# words of talk, not tools, invent, wirb)
_CODE_RE = re.compile(r"[0-9A-Z-]")  # an id that reads as a code (H06, SH-snake)
_ALTERNATIVES = " | "  # between the numbers a listed line offers
_UMLAUTS = (str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"}),
            str.maketrans({"ä": "a", "ö": "o", "ü": "u", "ß": "ss"}))


# --------------------------------------------------------------------------- words


def _words(name: str) -> list[str]:
    """A printed name as the words a player types (``Sabre-tooth Cat``: two)."""
    return name.lower().split()


def _spellings(words: list[str]) -> list[list[str]]:
    """``words`` as they are and as a keyboard without umlauts writes them."""
    out = [words]
    for table in _UMLAUTS:
        other = [w.translate(table) for w in words]
        if other not in out:
            out.append(other)
    return out


def _ids_of(action: Action) -> list[str]:
    """The words of an action that may be ids of printed things (strings, not numbers)."""
    return [w for w in _flat(action) if isinstance(w, str) and not w.isdigit()]


def _flat(action: Action) -> list[Any]:
    """The values of an action's parameters, in the order the notation writes them."""
    return [w for _, value in action.args
            for w in (value if isinstance(value, tuple) else (value,))]


def _names(mod: EngineGame, state: Any, lang: str) -> list[Callable[[str], dict[str, Any]]]:
    """Card lookups in the reader's language and in English (the data file's)."""
    found = [localize.lookup(mod, state, localize.translation_for(mod, state, lang))]
    if lang != "en":
        found.append(localize.lookup(mod, state, None))
    return found


def _lowered(words: Mapping[str, Sequence[str]] | None) -> dict[str, tuple[str, ...]]:
    return {k.lower(): tuple(v) for k, v in (words or {}).items() if v}


class Speech:
    """How one reader speaks a game's commands now: the word an email lists for each word
    of the notation (``say``), and the names read for it beside the notation's own
    (``read_names``): the game's words in the reader's language and English
    (``command_words``) and printed names in both, each also without umlauts."""

    def __init__(self, mod: EngineGame, state: Any, lang: str) -> None:
        hook = getattr(mod, "command_words", None) if state is not None else None
        self.own = _lowered(hook(state, lang)) if hook else {}
        self.english = self.own if lang == "en" or not hook else _lowered(hook(state, "en"))
        self.cards = _names(mod, state, lang)
        self._read: dict[str, list[list[str]]] = {}

    def say(self, word: Any) -> str:
        """The word an email lists for a word of the notation (a kind or a value)."""
        if not isinstance(word, str) or word.isdigit():
            return str(word)
        key = word.lower()
        for table in (self.own, self.english):
            if key in table:
                return table[key][0]
        if not _CODE_RE.search(word):
            return word
        return str(self.cards[0](word).get("name", word))

    def say_action(self, action: Action) -> str:
        """``action`` as the reader may type it."""
        return " ".join([self.say(action.kind), *(self.say(w) for w in _flat(action))])

    def read_names(self, word: str) -> list[list[str]]:
        """Every name read for the notation word ``word`` (each a list of words): the
        game's words for it in the reader's language and English, its printed names."""
        found = self._read.get(word)
        if found is None:
            names = [[w] for w in self._words_for(word)]
            for lookup in self.cards:
                names.append(_words(str(lookup(word).get("name", word))))
            found = self._read[word] = _spelt(names)
        return found

    def verbs(self, kind: str) -> list[str]:
        """The game's words for ``kind`` in the reader's language and English."""
        return [name[0] for name in _spelt([[w] for w in self._words_for(kind)])]

    def _words_for(self, word: str) -> list[str]:
        key = word.lower()
        return [w for table in (self.own, self.english) for w in table.get(key, ())]


def _spelt(names: list[list[str]]) -> list[list[str]]:
    """Each name once, as it is and as a keyboard without umlauts writes it."""
    found: list[list[str]] = []
    for name in names:
        for spelled in _spellings(name):
            if spelled and spelled not in found:
                found.append(spelled)
    return found


def _names_kind(speech: Speech, kind: str, word: str, shortest: int = 2) -> bool:
    """Whether ``word`` (lower case) may name the kind of move ``kind``: the kind itself
    or a prefix of it (``shortest`` letters or more), a word of it in full, or a prefix
    of one from MIN_VERB_PREFIX letters."""
    if word == kind or (len(word) >= shortest and kind.startswith(word)):
        return True
    return any(word == v or (len(word) >= MIN_VERB_PREFIX and v.startswith(word))
               for v in speech.verbs(kind))


def _kind_of(speech: Speech, kinds: Iterable[str], word: str) -> str | None:
    """The one kind of ``kinds`` that ``word`` names (a whole word wins), or None."""
    kinds = sorted(set(kinds))
    whole = [k for k in kinds if word == k or word in speech.verbs(k)]
    if whole:
        return whole[0] if len(whole) == 1 else None
    begun = [k for k in kinds if _names_kind(speech, k, word)]
    return begun[0] if len(begun) == 1 else None


def looks_like_a_command(mod: EngineGame, state: Any, line: str, lang: str = "en") -> bool:
    """Whether ``line`` reads as a move of the game, whether or not anyone may make it
    now (else it is table talk): its first word names a kind of move the game has
    (``ACTION_KINDS``; a game without them: a kind some seat may make now), in the
    notation's words or the game's words in the reader's language or English, in full
    or by its first MIN_VERB_PREFIX letters or more ("to be fair", "in my view", "Wir
    ..." are talk, not ``tools``, ``invent``, ``wirb``)."""
    words = _clean(line).split()
    if not words:
        return False
    speech = Speech(mod, state, lang)
    kinds = getattr(mod, "ACTION_KINDS", None)
    if kinds is None:
        kinds = {a.kind for d in mod.pending(state) for a in mod.legal_actions(state, d.seat)}
    return any(_names_kind(speech, kind, words[0], MIN_VERB_PREFIX) for kind in kinds)


def _clean(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip().lower()


# --------------------------------------------------------------------------- reading


def read_command(mod: EngineGame, state: Any, seat: int, text: str,
                 lang: str = "en") -> Action:
    """The one legal action of ``seat`` that the typed ``text`` names, or the engine's
    error (InvalidAction, IllegalAction, AmbiguousAction, IncompleteAction; the last two
    carry the ``candidates``, in the notation). The reader's words and printed names are
    read as the notation's words first. A listed line that offers several numbers, typed
    as it is, names each of them: AmbiguousAction."""
    legal = mod.legal_actions(state, seat)
    if len(text) > MAX_LINE:
        raise InvalidAction("the line is too long to be a command", text=text[:40])
    text = _clean(text)
    options = expand_line(text)
    if len(options) > 1:
        return _one_of(mod, state, seat, text, options, lang)
    try:
        return parse_action(text, legal)
    except (IllegalAction, InvalidAction):
        named = _in_notation(Speech(mod, state, lang), legal, text)
        if named is None:
            raise
    return parse_action(named, legal)


def _one_of(mod: EngineGame, state: Any, seat: int, text: str, options: list[str],
            lang: str) -> Action:
    found: list[Action] = []
    for option in options:
        try:
            action = read_command(mod, state, seat, option, lang)
        except EngineError:
            continue
        if action not in found:
            found.append(action)
    if not found:
        raise IllegalAction(f"{text!r} offers no legal action now", text=text)
    raise AmbiguousAction(f"{text!r} offers {len(found)} moves: write one", text=text,
                          candidates=[format_action(a) for a in found[:10]])


def _in_notation(speech: Speech, legal: Sequence[Action], text: str) -> str | None:
    """``text`` in the notation: its first word as the kind it names among the legal
    actions, and the names in the rest as the ids they name among the legal actions of
    that kind (None: nothing to put back). A run of words names a thing when each is a
    prefix of the next word of one of its names, starting at any word of it; the longest
    run that names exactly one thing wins. A run that names several raises
    AmbiguousAction."""
    words = _clean(text).split()
    if not words:
        return None
    kind = _kind_of(speech, {a.kind for a in legal}, words[0])
    changed = kind is not None and kind != words[0]
    if kind is not None:
        words[0] = kind
    kinds = {kind} if kind else {a.kind for a in legal if a.kind.startswith(words[0])}
    ids = {i for a in legal if a.kind in kinds for i in _ids_of(a)}
    spoken = {i: speech.read_names(i) for i in ids}
    out, pos = [words[0]], 1
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
        if length == 1 and any(run[0] == i.lower() for i in spoken):  # an id as it is
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


def expand_line(line: str) -> list[str]:
    """The commands a listed line stands for: itself, or, for a line that offers several
    numbers (``place forest 1 | 2 | 3``), each of them (``place forest 1``, ...)."""
    parts = [p.strip() for p in line.split("|")]
    head = parts[0].rsplit(None, 1)
    if len(parts) < 2 or len(head) < 2 or any(not p or " " in p for p in parts[1:]):
        return [line.strip()]
    return [f"{head[0]} {choice}" for choice in (head[1], *parts[1:])]


# --------------------------------------------------------------------------- listing


@dataclass(frozen=True)
class Listing:
    """The commands an email lists: ``lines`` (each a command, or a command offering
    several numbers, see ``expand_line``), ``more`` (the legal moves no line names: on
    the game page), ``example`` (a command of the first line that offers several
    numbers, to show how to write one; None without such a line) and ``moves`` (the
    moves each line names)."""

    lines: tuple[str, ...] = ()
    more: int = 0
    example: str | None = None
    moves: tuple[tuple[Action, ...], ...] = ()  # each line's moves, as expand_line reads it


def spoken_action(action: Action, card: Callable[[str], dict[str, Any]]) -> str:
    """``action`` in the notation's words, with ids that read as codes (``H06``) replaced
    by their printed names (``card``); plain words (``forest``) and numbers as they are.
    (An email lists commands in the reader's words: ``Speech.say_action``.)"""
    words = [action.kind]
    for word in _flat(action):
        if isinstance(word, str) and _CODE_RE.search(word) and not word.isdigit():
            words.append(str(card(word).get("name", word)))
        else:
            words.append(str(word))
    return " ".join(words)


def ranked_actions(mod: EngineGame, state: Any, seat: int) -> list[Action]:
    """Every legal action of ``seat``, most useful first: the game's ``command_order``;
    without it what a timeout plays, the email's one-click choices, then the legal
    order. Raises the engine's error for a seat with no decision."""
    legal = mod.legal_actions(state, seat)
    order = getattr(mod, "command_order", None)
    if order is not None:
        first = list(order(state, seat))
    else:
        first = [mod.default_action(state, seat), *mod.email_choices(state, seat)]
    allowed = set(legal)
    return list(dict.fromkeys([*(a for a in first if a in allowed), *legal]))


def listed_commands(mod: EngineGame, state: Any, seat: int, lang: str = "en",
                    most: int = MAX_LISTED) -> Listing:
    """The commands ``seat`` may type now (see ``Listing``), in the reader's words."""
    try:
        ranked = ranked_actions(mod, state, seat)
    except EngineError:
        return Listing()
    speech = Speech(mod, state, lang)
    groups: dict[Any, list[Action]] = {}
    for action in ranked:
        groups.setdefault(_group_key(action), []).append(action)
    shown = list(groups.values())[:most]
    example = next((speech.say_action(g[0]) for g in shown if len(g) > 1), None)
    moves = tuple(tuple(sorted(g, key=lambda a: a.args[-1][1])) if len(g) > 1 else (g[0],)
                  for g in shown)
    lines = [_line(speech.say_action, g) for g in moves]
    twice = {line for line in lines if lines.count(line) > 1}  # two things of one name
    lines = [_line(format_action, g) if line in twice else line
             for line, g in zip(lines, moves, strict=True)]
    return Listing(tuple(lines), len(ranked) - sum(len(g) for g in shown), example, moves)


def command_list(mod: EngineGame, state: Any, seat: int, lang: str = "en") -> list[str]:
    """The lines of ``listed_commands``."""
    return list(listed_commands(mod, state, seat, lang).lines)


def _group_key(action: Action) -> Any:
    """Moves that differ only in a last parameter that is a number share a line."""
    if action.args and type(action.args[-1][1]) is int:
        return action.kind, action.args[:-1], action.args[-1][0]
    return action


def _line(say: Callable[[Action], str], group: Sequence[Action]) -> str:
    if len(group) == 1:
        return say(group[0])
    head = say(Action(group[0].kind, group[0].args[:-1]))
    return f"{head} {_ALTERNATIVES.join(str(a.args[-1][1]) for a in group)}"


# --------------------------------------------------------------------------- refusals


def nearest_commands(mod: EngineGame, state: Any, seat: int, text: str, lang: str = "en",
                     most: int = MAX_NEAREST) -> list[str]:
    """The legal commands closest to the refused ``text``, in the reader's words,
    closest first (then the most useful): of the kind it names, those whose words differ
    least from its words (a name misspelt counts less than another name, a number near
    it less than one far from it); the most useful commands when it names no kind of
    move open now."""
    try:
        ranked = ranked_actions(mod, state, seat)
    except EngineError:
        return []
    speech = Speech(mod, state, lang)
    words = _clean(text[:MAX_LINE]).split()
    if words:
        with suppress(EngineError):  # a name of several things: the words as typed
            words = (_in_notation(speech, ranked, " ".join(words)) or " ".join(words)).split()
        kind = _kind_of(speech, {a.kind for a in ranked}, words[0])
        pool = [a for a in ranked if a.kind == kind]
        if pool:
            known = {i.lower() for a in pool for i in _ids_of(a)}
            scored = sorted((_distance(speech, words[1:], a, known), i)
                            for i, a in enumerate(pool))
            ranked = [pool[i] for d, i in scored if d <= scored[0][0] + 0.3]
    return [speech.say_action(a) for a in ranked[:most]]


def refusal_candidates(mod: EngineGame, state: Any, seat: int, text: str,
                       error: EngineError, lang: str = "en") -> tuple[str, ...]:
    """The commands a refusal of ``text`` offers, in the reader's words: the moves the
    words could mean (an ambiguous or incomplete command), else (or when they are too
    many to name) the nearest legal commands."""
    said = [str(c).lower() for c in error.data.get("candidates", ())]
    if 0 < len(said) < ENGINE_CANDIDATES:  # all of them (the engine names at most 10)
        try:
            legal = {format_action(a).lower(): a for a in mod.legal_actions(state, seat)}
        except EngineError:
            return ()
        if all(c in legal for c in said):
            speech = Speech(mod, state, lang)
            return tuple(speech.say_action(legal[c]) for c in said)
    return tuple(nearest_commands(mod, state, seat, text, lang))


def _distance(speech: Speech, typed: list[str], action: Action, known: set[str]) -> float:
    """How far the typed words (after the kind, in the notation where they could be put
    back) are from ``action``'s: 1 for each word left over on either side, less for a
    word like one of the other side's names (not for a word that is the id of another
    thing, one of ``known``), under 1 for a number off by any amount."""
    own = [str(w) for w in _flat(action)]
    typed_words = Counter(w for w in typed if not w.isdigit())
    action_words = Counter(w.lower() for w in own if not w.isdigit())
    common = typed_words & action_words
    left = list((action_words - common).elements())
    original = {w.lower(): w for w in own}
    matched: set[int] = set()
    cost = 0.0
    for word in (typed_words - common).elements():
        best, which = 0.0, -1
        for j, other in enumerate(left if word not in known else ()):
            names = [[other], *speech.read_names(original[other])]
            like = max(_likeness(word, n) for name in names for n in name)
            if like > best:
                best, which = like, j
        if best >= 0.6:
            cost += 1 - best
            matched.add(which)
        else:
            cost += 1
    cost += len(left) - len(matched)
    mine = sorted(int(w) for w in typed if w.isdigit())
    theirs = sorted(int(w) for w in own if w.isdigit())
    cost += sum(0.9 * (1 - 1 / (1 + abs(x - y))) for x, y in zip(mine, theirs, strict=False))
    return cost + abs(len(mine) - len(theirs)) / 2


def _likeness(typed: str, word: str) -> float:
    """How alike a typed word and a word of a name are (1: the same; a prefix: 0.9;
    ``card1`` and ``card2``, other numbers: not alike)."""
    if typed == word:
        return 1.0
    digits = re.sub(r"\D", "", typed)
    if digits and digits != re.sub(r"\D", "", word):
        return 0.0
    if len(typed) > 1 and word.startswith(typed):
        return 0.9
    return SequenceMatcher(None, typed, word).ratio()


# --------------------------------------------------------------------------- standing choices

STANDING_VERB = "standing"  # the notation's word for a line that sets a standing choice


def standing_commands(mod: EngineGame, state: Any, seat: int, lang: str = "en",
                      key: str | None = None) -> list[str]:
    """The lines that set ``seat``'s standing choices (a game with the ``Standing``
    hook), in the reader's words: ``standing KEY VALUE`` for each value of each key (of
    ``key`` only, if given), the one in force left out. Empty for a game without
    standing choices, or once none may be set."""
    form = _standing_form(mod, state, seat)
    speech = Speech(mod, state, lang)
    return [" ".join(speech.say(w) for w in (STANDING_VERB, c["key"], option))
            for c in form if key is None or c["key"] == key
            for option in c["options"] if option != c["value"]]


def _standing_form(mod: EngineGame, state: Any, seat: int) -> list[dict[str, Any]]:
    hook = getattr(mod, "standing_form", None)
    if hook is None or state is None:
        return []
    return list(hook(state, seat) or [])


def read_standing(mod: EngineGame, state: Any, seat: int, text: str,
                  lang: str = "en") -> tuple[str, str] | None:
    """The standing choice a line sets (``standing tools all``; the key and value in the
    notation, in the reader's words or English, each word whole), or None for a line
    that does not begin with the standing verb (in full: it is read before any move, so
    a sentence must never be taken for one). Raises InvalidAction for a line that
    begins with it but names no key and value the game offers the seat now."""
    words = _clean(text[:MAX_LINE]).split()
    speech = Speech(mod, state, lang)
    if not words or not _names_word(speech, STANDING_VERB, words[0]):
        return None
    form = _standing_form(mod, state, seat)
    if len(words) == 3:
        for choice in form:
            if _names_word(speech, choice["key"], words[1]):
                for option in choice["options"]:
                    if _names_word(speech, option, words[2]):
                        return choice["key"], option
    raise InvalidAction("no such standing choice", text=text[:40])


def _names_word(speech: Speech, word: str, typed: str) -> bool:
    """Whether ``typed`` is the notation word ``word`` or one of its words, in full."""
    return [typed] in [[word], *speech.read_names(word)]
