"""The game-agnostic engine contract, shared value types, errors and the seeded RNG.

A game is a module that offers :class:`Game`, the one statement of the contract: each
member with its types and meaning. The optional hooks after it (:class:`Explains`,
:class:`OffersVariants`, :class:`DescribesCards`, :class:`HasCatalog`,
:class:`Translates`, :class:`TranslatesViews`, :class:`HasRounds`, :class:`Plans`,
:class:`Standing`, :class:`SpeaksCommands`, :class:`NamesMoves`,
:class:`OrdersCommands`) are members a game may add; the server finds each with
``getattr(mod, name, None)``. ``engine/conformance.py`` has mypy check every game module
against them; ``tests/engine/test_conformance.py`` plays them.

Nothing here knows a clock, a database or I/O.
"""

from __future__ import annotations

import json
import random
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, TypedDict

if sys.version_info >= (3, 13):
    from typing import TypeVar
else:  # a type variable's default (PEP 696, for a bare ``Game``) came to typing in 3.13
    from typing_extensions import TypeVar

# --------------------------------------------------------------------------- errors


class EngineError(Exception):
    """Root of all engine errors. ``code`` is stable (``area/reason``); ``data`` names the input."""

    code = "engine/error"

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class NotYourTurn(EngineError):
    """The seat has no open decision."""

    code = "turn/not_yours"


class IllegalAction(EngineError):
    """The action is not among the legal actions of the seat's open decision."""

    code = "action/illegal"


class InvalidAction(EngineError):
    """The action could not be read at all (bad syntax, unknown kind, bad parameter types)."""

    code = "action/invalid"


class AmbiguousAction(EngineError):
    """A typed command matches more than one legal action."""

    code = "action/ambiguous"


class IncompleteAction(AmbiguousAction):
    """A command names the start of one or more legal actions but leaves out a word the
    player must name (a payment, a count, a card); ``candidates`` are the full moves."""

    code = "action/incomplete"


class GameOver(EngineError):
    """The game has ended; nothing more can be played."""

    code = "game/over"


class StateCorrupt(EngineError):
    """A serialised state cannot be read back, or breaks an invariant."""

    code = "state/corrupt"


class SetupError(EngineError):
    """A game cannot be set up with the given players or options."""

    code = "setup/invalid"


class InvalidPlan(EngineError):
    """A standing plan (``Plans.set_plan``) could not be read, or names what a plan may
    not; ``why`` (the game's reason, ``plan/...``) and what the words need are in
    ``data``. Nothing is set."""

    code = "plan/invalid"


class InvalidStanding(EngineError):
    """A standing choice (``Standing.set_standing``) names a key or a value the game does
    not offer (``data``: ``key``, ``value``, and ``options`` for a known key). Nothing is
    set."""

    code = "standing/invalid"


class PlanClosed(EngineError):
    """The seat may not set a plan now (``Plans.plan_form`` gives None)."""

    code = "plan/closed"


# --------------------------------------------------------------------------- values


def _freeze(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, Mapping):
        raise InvalidAction("action parameters may not be mappings")
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class Action:
    """A move: a kind and named parameters (scalars or tuples of scalars), hashable."""

    kind: str
    args: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, kind: str, **args: Any) -> Action:
        """Build an action, dropping parameters whose value is None."""
        items = []
        for key in sorted(args):
            value = args[key]
            if value is None:
                continue
            if type(value) is list or type(value) is tuple or isinstance(value, Mapping):
                value = _freeze(value)
            items.append((key, value))
        return cls(kind, tuple(items))

    def get(self, name: str, default: Any = None) -> Any:
        for key, value in self.args:
            if key == name:
                return value
        return default

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **{k: _thaw(v) for k, v in self.args}}

    @classmethod
    def from_json(cls, data: Any) -> Action:
        """Read an action back; raises InvalidAction on anything malformed."""
        if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str):
            raise InvalidAction("an action needs a 'kind'", value=repr(data)[:200])
        args = {k: v for k, v in data.items() if k != "kind"}
        for key, value in args.items():
            if not isinstance(key, str) or not _is_scalar_or_list(value):
                raise InvalidAction(f"bad parameter {key!r}", value=repr(value)[:200])
        return cls.of(data["kind"], **args)

    def __str__(self) -> str:
        return format_action(self)


def _is_scalar_or_list(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return all(isinstance(v, str | int | bool) for v in value)
    return value is None or isinstance(value, str | int | bool)


def format_action(action: Action) -> str:
    """The action in the notation ``parse_action`` accepts: ``kind value value ...``.

    Parameters appear in name order; tuples expand to their items. Examples: ``pass``,
    ``bid 3``, ``recruit H03 teeth``, ``discard B01 C02``.
    """
    words = [action.kind]
    for _, value in action.args:
        if isinstance(value, tuple):
            words.extend(str(v) for v in value)
        else:
            words.append(str(value))
    return " ".join(words)


def parse_action(text: str, legal: Sequence[Action], *, exact: bool = False) -> Action:
    """Match a command against the legal actions, like a chess SAN parser.

    Syntax first (words separated by blanks, case-insensitive), then an exact match on the
    formatted legal actions, then a unique match of the same words in any order after the
    first (``take brick wood`` for ``take wood brick``). A typed command (``exact`` False)
    may also shorten each of its words to a unique prefix (``hun mam`` for ``hunt
    mammoth``), but never leave a word out: nothing the player did not name (a resource,
    a count, a card, a target) is ever filled in. A form (``exact`` True) names every
    word in full. Raises InvalidAction, IllegalAction, IncompleteAction (the words begin
    one or more legal actions but leave something out) or AmbiguousAction.
    """
    words = text.strip().lower().split()
    if not words:
        raise InvalidAction("empty command", text=text)
    formatted = [(format_action(a).lower().split(), a) for a in legal]
    exact_match = [a for w, a in formatted if w == words]
    if exact_match:
        return exact_match[0]
    key = (words[0], sorted(words[1:]))
    same = [a for w, a in formatted if (w[0], sorted(w[1:])) == key]
    if len(same) == 1:
        return same[0]
    if not exact:
        shortened = [a for w, a in formatted if len(w) == len(words)
                     and all(full.startswith(part) for full, part in zip(w, words, strict=True))]
        if len(shortened) == 1:
            return shortened[0]
        if len(shortened) > 1:
            raise AmbiguousAction(
                f"{text!r} matches {len(shortened)} actions", text=text,
                candidates=[format_action(a) for a in shortened[:10]])
    if len(same) > 1:
        raise AmbiguousAction(f"{text!r} matches {len(same)} actions", text=text,
                              candidates=[format_action(a) for a in same[:10]])
    longer = [a for w, a in formatted if len(w) > len(words) and w[: len(words)] == words]
    if longer:
        raise IncompleteAction(
            f"{text!r} leaves out part of the move", text=text,
            candidates=[format_action(a) for a in longer[:10]])
    if not any(w[0] == words[0] for w, _ in formatted):
        raise IllegalAction(f"no legal action of kind {words[0]!r} now", text=text)
    raise IllegalAction(f"{text!r} is not a legal action now", text=text)


@dataclass(frozen=True, slots=True)
class Decision:
    """An open decision: which seat, what kind (``bid``, ``act``, ...), and prompt data."""

    seat: int
    kind: str
    data: tuple[tuple[str, Any], ...] = ()

    def get(self, name: str, default: Any = None) -> Any:
        for key, value in self.data:
            if key == name:
                return value
        return default

    def to_json(self) -> dict[str, Any]:
        return {"seat": self.seat, "kind": self.kind, "data": {k: _thaw(v) for k, v in self.data}}


@dataclass(frozen=True, slots=True)
class Event:
    """A fact for the log. ``visible_to`` None means everyone; else the seats that may read it."""

    kind: str
    actor: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    visible_to: tuple[int, ...] | None = None

    def is_visible_to(self, seat: int | None) -> bool:
        return self.visible_to is None or (seat is not None and seat in self.visible_to)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "actor": self.actor, "data": dict(self.data),
            "visible_to": None if self.visible_to is None else list(self.visible_to),
        }


@dataclass(frozen=True, slots=True)
class Result:
    """The end of a game: the winning seats (empty when abandoned) and how it ended."""

    winners: tuple[int, ...]
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"winners": list(self.winners), "reason": self.reason}


# --------------------------------------------------------------------------- RNG


@dataclass(frozen=True, slots=True)
class Rng:
    """A seeded random source that lives inside the state: a seed and a draw counter.

    Each use derives a fresh ``random.Random`` from (seed, counter) and returns the
    advanced Rng, so a state never shares mutable random state with anything.
    """

    seed: int
    counter: int = 0

    def _random(self) -> random.Random:
        key = self.seed * 1_000_003 + self.counter
        # random.Random seeds with abs(); keep negative seeds apart from positive ones.
        return random.Random(key if key >= 0 else (1 << 128) - key)

    def shuffled(self, items: Iterable[Any]) -> tuple[tuple[Any, ...], Rng]:
        out = list(items)
        self._random().shuffle(out)
        return tuple(out), Rng(self.seed, self.counter + 1)

    def randint(self, low: int, high: int) -> tuple[int, Rng]:
        return self._random().randint(low, high), Rng(self.seed, self.counter + 1)

    def dice(self, count: int, sides: int = 6) -> tuple[tuple[int, ...], Rng]:
        r = self._random()
        return tuple(r.randint(1, sides) for _ in range(count)), Rng(self.seed, self.counter + 1)

    def to_json(self) -> list[int]:
        return [self.seed, self.counter]

    @classmethod
    def from_json(cls, data: Any) -> Rng:
        if (not isinstance(data, list) or len(data) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in data)):
            raise StateCorrupt("rng must be [seed, counter]", value=repr(data)[:100])
        return cls(data[0], data[1])


# --------------------------------------------------------------------------- contract


S = TypeVar("S", default=Any)
"""A game's state type: an immutable value holding its own RNG. A bare ``Game`` is any game."""
S_contra = TypeVar("S_contra", contravariant=True, default=Any)

JSONObject: TypeAlias = dict[str, Any]
"""JSON data: str keys; str, int, bool, None, lists and such objects as values, so that
``json.loads(json.dumps(x)) == x``."""
Options: TypeAlias = Mapping[str, Any]
"""A game's setup options (``deck``, ``tribes``, ...); each game names its own."""
View: TypeAlias = JSONObject
"""What one reader may see of a game (JSON data, no secret and no RNG state). It always
has ``you`` (the reader's seat, None for a spectator) and ``result`` (``Result.to_json()``
or None); the rest is the game's, read by its own templates."""
Effect: TypeAlias = JSONObject
"""What a legal action costs and brings now, in the game's words (``{"pay": {"teeth":
3}}``); never anything still hidden; ``{}`` for an action that is not legal now."""
Explanation: TypeAlias = JSONObject
"""Why a command is not a legal move now, as data for the refusal's words (``{"why":
"pay/size", "given": 4, "need": 5}``); ``{}`` when there is no more to say."""
CardData: TypeAlias = JSONObject
"""The printed data of a card or other named thing: at least ``id`` and ``name``; a card
may add ``text`` and ``tribe`` (the words a translation replaces) and its numbers."""
Bot: TypeAlias = Callable[[S, int, random.Random], Action]
"""``choose(state, seat, rng)``: a legal action for ``seat``'s open decision. A bot's
only randomness is ``rng``; it never changes the state."""


class Summary(TypedDict):
    """One simulated game in the game's own terms (``Stats.summary``)."""

    how: str  # how it ended ("Fire, conch kept, from the deck"), or "unfinished"
    taken: Counter[str]  # how often each card or tile was taken
    points: list[int] | None  # final scores by seat, for a game that scores


class Record(Protocol):
    """What ``Stats.report`` may read of each simulated game (``engine.sim.GameRecord``)."""

    @property
    def taken(self) -> Counter[str]: ...
    @property
    def points(self) -> list[int] | None: ...


class Stats(Protocol[S_contra]):
    """A game's figures for the simulator (``python -m engine simulate``), beside the
    generic ones of ``engine.sim``."""

    def summary(self, state: S_contra, events: Sequence[Event]) -> Summary:
        """A played (or capped) game: how it ended, the cards taken, the final scores."""

    def report(self, records: Sequence[Record]) -> list[str]:
        """The game's lines of the simulator's printout over ``records``."""


class Names(Protocol):
    """A game's printed names in one language (what ``Translates.translation`` gives)."""

    def card_name(self, card_id: str, /) -> str:
        """The name of a card (an id that is no card: as it is, or its name)."""

    def card_text(self, card_id: str, /) -> str:
        """The text printed on a card; "" for a card without one."""

    def tribe_name(self, tribe: str, /) -> str:
        """The name of a player's colour or tribe."""


class Game(Protocol[S]):
    """What a game module offers: the whole engine contract.

    States are immutable values; the same seed, options and actions rebuild the same
    game and the same events. Seats are 0-based. ``legal_actions``, ``apply``,
    ``default_action`` and ``email_choices`` raise NotYourTurn for a seat with no open
    decision and GameOver once the game is over; the server asks ``choice_effect`` and
    the hooks only about a seat's open decision. The server (``pbem/services``) is the
    only caller; it looks a game up by NAME in the registry.
    """

    @property
    def NAME(self) -> str:
        """The game's key: in the registry, in the server's games table, and as
        ``game`` in its state JSON. Never changes once games are stored."""

    @property
    def TITLE(self) -> str:
        """Its name in email subjects and pages: a proper name, not translated."""

    @property
    def MIN_PLAYERS(self) -> int:
        """The fewest players ``setup`` accepts."""

    @property
    def MAX_PLAYERS(self) -> int:
        """The most players ``setup`` accepts."""

    @property
    def BOTS(self) -> Mapping[str, Bot[S]]:
        """The game's bots by name, at least ``random`` and ``heuristic`` (the one the
        server lets play an absent or bot seat)."""

    @property
    def stats(self) -> Stats[S]:
        """The simulator's figures for this game (its ``stats`` module)."""

    def setup(self, players: Sequence[str], seed: int,
              options: Options | None = None) -> S:
        """A new game for ``players`` (names, in seat order), run up to its first
        decision. Raises SetupError for a number of players outside MIN..MAX, a seed that
        is not an int, or options it cannot use."""

    def setup_with_events(self, players: Sequence[str], seed: int,
                          options: Options | None = None) -> tuple[S, list[Event]]:
        """As ``setup``, with the events of setup up to the first decision (the draws,
        who begins), for the game log."""

    def pending(self, state: S) -> list[Decision]:
        """Who must decide what now. Several seats may be asked at once (simultaneous
        decisions), one seat several times in a row. Empty exactly when ``result`` is
        not None."""

    def legal_actions(self, state: S, seat: int) -> list[Action]:
        """Every action ``seat`` may play now, distinct, never empty for a pending seat:
        the single source of truth (``apply`` accepts exactly these, ``listed``)."""

    def apply(self, state: S, seat: int, action: Action) -> tuple[S, list[Event]]:
        """Play ``action`` for ``seat`` and everything automatic after it (draws,
        shuffles, dice, payments) up to the next decision; the new state and what
        happened. ``state`` is unchanged. Raises GameOver, NotYourTurn, or IllegalAction
        for an action not listed by ``legal_actions``."""

    def default_action(self, state: S, seat: int) -> Action:
        """What a timeout plays for ``seat``: always one of its legal actions."""

    def email_choices(self, state: S, seat: int) -> list[Action]:
        """The legal actions a decision email offers as one-click links (the game page
        offers them all); may be empty (then the email links only to the page)."""

    def choice_effect(self, state: S, seat: int, action: Action) -> Effect:
        """What ``action`` would cost and bring ``seat`` now, for the words of a choice
        ("Hunt Mammoth: +6 Food, +2 Teeth, then a casualty draw"); ``{}`` for an action
        that is not legal. Touches nothing random."""

    def view(self, state: S, seat: int | None) -> View:
        """What ``seat`` (None: a spectator) may see: no hidden order, no RNG state."""

    def result(self, state: S) -> Result | None:
        """How the game ended, or None while it runs."""

    def abandon(self, state: S) -> tuple[S, list[Event]]:
        """End a running game with no winner (the host's decision, or a game nobody
        plays): a state whose ``result`` has reason ``abandoned``, and its events.
        Raises GameOver for a game already over."""

    def to_json(self, state: S) -> JSONObject:
        """The state as JSON data with ``game`` (NAME) in it: exactly what ``from_json``
        reads back, the same bytes for the same game."""

    def from_json(self, data: Mapping[str, Any], /) -> S:
        """The state ``to_json`` wrote, checked. Raises StateCorrupt on anything
        malformed, inconsistent, of another game, or whose data file changed since the
        game began."""


# Optional hooks: a game offers any of these members as well. The server asks
# ``getattr(mod, "<member>", None)`` (``hasattr`` for ``card_info``) and does without.


class Explains(Protocol[S_contra]):
    """``explain``: the words of a refused command. Without it a refusal says only
    that the move is not allowed now (``pbem/services/playing.py``)."""

    def explain(self, state: S_contra, seat: int, text: str) -> Explanation:
        """Why the command ``text`` (the game's notation) is not a legal move for
        ``seat`` now, as data for the refusal's words."""


class Ranks(Protocol[S_contra]):
    """``places``: where each player finished, for the first line of the result email
    ("you came second"). Without it the email names the winners only
    (``pbem/mail/compose.py``)."""

    def places(self, state: S_contra) -> list[int]:
        """The place of each seat at the end, by seat: 1 for a winner, tied seats share a
        place and the places after them move down (1, 2, 2, 4); empty before the end
        and for a game that ended without a winner."""


class OffersVariants(Protocol[S_contra]):
    """``choice_variants``: a one-click link whose confirmation page lets the player
    change a number. Without it the page confirms the link's action as it is
    (``pbem/services/reading.py``)."""

    def choice_variants(self, state: S_contra, seat: int, action: Action) -> list[Action]:
        """The legal actions the confirmation page of the email choice ``action`` lets
        the player pick instead (the same move with another number), ``action`` among
        them; empty for none."""


class DescribesCards(Protocol[S_contra]):
    """``card_info``: the printed data behind the ids in events and views, for
    narration. Without it an id is shown as it is (``pbem/localize.py``)."""

    def card_info(self, state: S_contra, card_id: str, /) -> CardData:
        """The printed data of ``card_id`` in the language of the game's data file; any
        other word (a resource, a place) as ``{"id": ..., "name": ...}``."""


class HasCatalog(Protocol[S_contra]):
    """``catalog``: the card glossary of the rules page (``pbem/web/rules.py``); without
    it the page has none."""

    def catalog(self, state: S_contra) -> list[CardData]:
        """Every card of the game (as ``card_info`` gives them), in the data file's order."""


class Translates(Protocol[S_contra]):
    """``translation``: printed names in the reader's language (``pbem/localize.py``).
    Without it, or for a language it lacks, the data file's own words are shown."""

    def translation(self, state: S_contra, lang: str) -> Names | None:
        """The names in ``lang`` (a tag; "de-AT" falls back to "de"), or None for a
        language the game has no names in. May raise ValueError for a ``lang`` that is
        not a language tag."""


class TranslatesViews(Protocol):
    """``translated_view``: a view with its printed names in the reader's language
    (``pbem/localize.py``). Without it a view stays as ``view`` gave it and the templates
    look names up by id."""

    def translated_view(self, view: View, card: Callable[[CardData], CardData],
                        names: Names, /) -> View:
        """A new view: each card's data passed through ``card`` (the server's
        translated lookup), other printed names (tribes) from ``names``."""


PlanForm: TypeAlias = JSONObject
"""What a seat's standing plan may name now (``Plans.plan_form``), in the game's words:
at least ``kind`` (the kind of the decisions a plan plays), ``steps`` (the most a plan
may list), ``places`` (each ``{"at": PLACE,
"counts": [...], "rest": bool}``: the place, the numbers a step may name there, and
whether "the rest" may be named) and ``plan`` (the seat's plan as it stands, as a list
of ``{"at": ..., "count": ...}``, ``count`` "rest" for the rest; empty for none). A plan
is written as its steps separated by commas, each ``PLACE COUNT`` or ``PLACE rest``
(``forest 2, hut 2, hunt rest``): what a form of these places sends, for every game."""

PLAN_DROPPED = "plan_dropped"
"""The kind of the event a game with plans logs, visible to the plan's seat only, when
it drops a plan that cannot be followed (its data says why, in the game's words). The
decision email that follows puts it first."""


class Plans(Protocol[S]):
    """``plan_form``, ``set_plan``: a seat may leave a standing plan for decisions of one
    kind (Stone Age: its placements), which the game then plays by itself, inside
    ``apply`` of the move before, whenever that seat's decision of that kind comes and
    the plan can be followed: ``pending`` never asks it then. A step is played only as
    the plan names it (nothing is completed or guessed); the moment the plan cannot be
    followed the game drops it with a ``PLAN_DROPPED`` event and asks the decision as
    usual. Setting or clearing a plan is no decision and plays nothing: ``pending`` is
    the same before and after. The plan lives in the state (``to_json``). Without this
    hook the server offers no plans (``pbem/services/playing.py``)."""

    def plan_form(self, state: S, seat: int) -> PlanForm | None:
        """What ``seat``'s plan may name now (see ``PlanForm``), or None when the seat may
        not set a plan now (the game is over)."""

    def set_plan(self, state: S, seat: int, text: str) -> tuple[S, list[Event]]:
        """Set ``seat``'s standing plan from ``text`` (the game's plan notation; blank:
        clear it), replacing any plan it had; the new state and what happened (events
        visible to that seat only). ``state`` is unchanged. Raises InvalidPlan (with
        ``why``) for words that name no plan, PlanClosed when ``plan_form`` gives None."""


StandingChoice: TypeAlias = JSONObject
"""One standing choice a seat may leave (``Standing.standing_form``): ``key`` (what it
decides, in the game's words: ``tools``, ``feed``), ``options`` (the values it may take,
STANDING_OFF first) and ``value`` (the seat's, STANDING_OFF for none)."""

STANDING_OFF = "off"
"""The value of a standing choice that decides nothing: the seat is asked as usual."""


class Standing(Protocol[S]):
    """``standing_form``, ``set_standing``: a seat may leave standing choices for small
    decisions (Stone Age: the tools after a roll, paying for feeding, the order of its
    use turn). Where a standing choice decides, the game plays it inside ``apply`` of
    the move before and no decision opens (its events say so with ``"standing": true``
    in their data); where it cannot decide (the choice does not cover the case), the
    decision opens as usual. Nothing is played that the seat did not choose, none is on
    at the start, and setting one plays nothing: ``pending`` is the same before and
    after (an open decision stays open). They live in the state (``to_json``). Without
    this hook the server offers none (``pbem/services/playing.py``)."""

    def standing_form(self, state: S, seat: int) -> list[StandingChoice] | None:
        """The standing choices ``seat`` may set, with its values now; None when it may
        set none now (the game is over, or no such seat)."""

    def set_standing(self, state: S, seat: int, key: str,
                     value: str) -> tuple[S, list[Event]]:
        """Set ``seat``'s standing choice ``key`` to ``value`` (STANDING_OFF: none); the
        new state and its events (visible to that seat only; none when nothing
        changed). ``state`` is unchanged. Raises InvalidStanding for a key or value the
        game does not offer, GameOver once the game is over."""


class Searches(Protocol):
    """``make_strong``: the game's search bot built with a CPU budget per decision. The
    server seats a ``strong`` bot with the budget of the game's policy
    (``GamePolicy.bot_ms``); without this hook ``BOTS["strong"]`` plays as it is."""

    def make_strong(self, budget_ms: float | None = None, rollouts: int | None = None,
                    **options: Any) -> Bot[Any]:
        """The search bot with ``budget_ms`` of CPU per decision, or exactly ``rollouts``
        rollouts (reproducible)."""


class Worlds(Protocol[S]):
    """``determinise``: a world ``seat`` cannot tell from the game: ``state`` with all
    the seat cannot know drawn anew from ``rng`` (a card pile's order, hidden tiles,
    other seats' face-down cards and private choices, the dice to come: a fresh random
    source). The strong bot searches such worlds only; the server's API hands one to a
    seat's own client (``GET /api/v1/seat/world``), so it must hold nothing the seat may
    not see. Pure; nothing of the hidden truth may reach ``rng``'s draws."""

    def determinise(self, state: S, seat: int, rng: random.Random) -> S:
        """The world, a new state; ``state`` is unchanged."""


class Reveals(Protocol[S_contra]):
    """``revealed``: whether a move showed anything hidden. The server lets a player take
    back their last move only while nothing it (or the bots' moves after it) revealed
    (``pbem/services/takeback.py``); without this hook, no move can be taken back."""

    def revealed(self, before: S_contra, after: S_contra) -> bool:
        """Whether going from ``before`` to ``after`` (one or more moves) showed a seat
        something that was hidden from it: a die rolled, a card drawn or turned up, a
        card shown. Deterministic, pure."""


class HasRounds(Protocol):
    """``ROUND_EVENT``: the game plays in rounds. The server groups the game log by it
    and counts rounds nobody played (``pbem/services/playing.py``, ``reading.py``);
    without it, moves."""

    @property
    def ROUND_EVENT(self) -> str:
        """The kind of the event that begins a round, with its number in its data
        (``{"round": 3}``)."""


class SpeaksCommands(Protocol[S_contra]):
    """``command_words``: the words of reply commands in the reader's language
    (``pbem/commands.py``; a game keeps them in a words file, ``engine/words.py``).
    Without it, commands are listed in the notation's words (printed names for ids that
    read as codes) in every language."""

    def command_words(self, state: S_contra, lang: str) -> Mapping[str, tuple[str, ...]]:
        """Each word of the notation (a kind of move, or a fixed word a move names) that
        has words in ``lang``: its words there, the first the one an email lists; each
        one lower-case word, none standing for two notation words. Empty for a language
        without words. The notation's own words are read in every language."""


class NamesMoves(Protocol):
    """``ACTION_KINDS``: every kind of move the game has, open now or not. A line of a
    reply by email whose first word names one is a command (played, or refused with an
    answer: the turn is over, the move is not legal now), never table talk
    (``pbem/commands.py``). Without it, only a kind some seat may make now is read as
    a command, and a command of another kind is posted to the table as talk."""

    @property
    def ACTION_KINDS(self) -> tuple[str, ...]:
        """The ``kind`` of every action ``legal_actions`` may ever give (the first word
        of the notation), each once."""


class OrdersCommands(Protocol[S_contra]):
    """``command_order``: the order of an email's list of reply commands, which shows
    the first ones only when there are many (``pbem/commands.py``). Without it: what a
    timeout plays, the email's one-click choices, then the legal order."""

    def command_order(self, state: S_contra, seat: int) -> list[Action]:
        """Every legal action of ``seat``'s open decision, each once, most useful first."""


def listed(action: Action, legal: Iterable[Action]) -> bool:
    """``action`` is one of ``legal`` exactly, types included (``True`` is not ``1``)."""
    key = json.dumps(action.to_json(), sort_keys=True)
    return any(json.dumps(a.to_json(), sort_keys=True) == key for a in legal)


def check_turn(game: Game[S], state: S, seat: int) -> None:
    """Raise GameOver or NotYourTurn unless ``seat`` has an open decision."""
    if game.result(state) is not None:
        raise GameOver("the game is over")
    if not any(d.seat == seat for d in game.pending(state)):
        raise NotYourTurn(f"seat {seat} has no decision to make now", seat=seat)




class LegalMemo(threading.local):
    """A thread's memo of the legal actions it listed last (one entry): ``last`` is
    (state, seat, actions), so that a bot that lists a seat's actions and then has
    ``apply`` check its choice pays for one listing, not two. A game keeps one for its
    ``legal_actions`` and ``apply`` and asks it through ``listed``.

    Safe under threads, as the engine must be (the clock plays bots and sends mail in
    threads): each thread has its own entry (``threading.local``), so another thread's
    call never replaces it; a call reads the entry once and uses the actions it read or
    listed itself, never a second look; a hit needs the very state object (``is``),
    which the entry holds, so no other state can take its identity while remembered;
    and states are immutable, so the list stays right for it.
    """

    last: tuple[Any, int, tuple[Action, ...]] = (None, -1, ())

    def listed(self, state: Any, seat: int,
               listing: Callable[[], Iterable[Action]]) -> tuple[Action, ...]:
        """The actions of ``seat`` in ``state``: this thread's last listing if it was of
        that very state and seat, else ``listing()``, remembered."""
        last = self.last  # one read; use only ``last`` and what is listed now
        if last[0] is state and last[1] == seat:
            return last[2]
        actions = tuple(listing())
        self.last = (state, seat, actions)
        return actions
