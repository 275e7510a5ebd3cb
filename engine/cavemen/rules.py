"""Cavemen: The Quest for Fire, as a pure engine (see docs/games/cavemen.md).

Module order: constants, state types, the contract functions (setup, pending,
legal_actions, apply, default_action, view, result, JSON), the phase machine
(``_advance``), then helpers. Every rule and ruling of cavemen.md lives here; card
numbers come from the deck file (``deck.py``).

Decisions (kinds) and their actions:
- ``bid``: ``pass`` | ``bid amount=N`` (high bid < N <= own Teeth); timeout: pass.
- ``starve``: ``lose card=ID``, which caveman starvation costs; timeout: weakest, newest.
- ``act``: ``recruit card pay=food|teeth [replace=ID]`` | ``explore card`` | ``hunt card``
  | ``invent card`` | ``forage``; timeout: forage.
- ``casualty``: ``lose card=ID`` after a hunt; timeout: weakest, newest.
- ``discard``: ``discard cards=(ID, ...)`` down to three pool cards; timeout: keep the
  three that entered the pool first.
A bid that cannot outbid and a loss with one candidate are played automatically and
narrated, never asked; an action turn is always asked, even when only Forage is legal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from itertools import combinations
from pathlib import Path
from typing import Any, NamedTuple

from engine.cavemen.deck import (
    STANDARD_DECK,
    TRIBES,
    Deck,
    DeckError,
    Scores,
    Translation,
    load_deck,
    load_translation,
)
from engine.core import (
    Action,
    CardData,
    Decision,
    Effect,
    Event,
    GameOver,
    IllegalAction,
    JSONObject,
    LegalMemo,
    Names,
    NotYourTurn,
    Result,
    Rng,
    SetupError,
    StateCorrupt,
    View,
    listed,
)

NAME = "cavemen"
TITLE = "Cavemen"  # the name in email subjects (a proper name, not translated)
ROUND_EVENT = "round_started"  # begins each round (data: its number); the log groups by it
MIN_PLAYERS, MAX_PLAYERS = 2, 5
START_RESOURCES = {2: (9, 4), 3: (8, 4), 4: (7, 4), 5: (7, 4)}  # players -> (Food, Teeth)
FIRST_DRAW_EXTRA, LATER_DRAW_EXTRA = 5, 2
POOL_KEEP = 3
STANDARD = "standard"
PHASES = ("auction", "starve", "action", "casualty", "discard", "over")

PASS = Action.of("pass")
FORAGE = Action.of("forage")


# --------------------------------------------------------------------------- state


class Tribe(NamedTuple):
    """A player's tribe: tableau cards in the order acquired (Leader first), Food, Teeth."""

    name: str
    cards: tuple[str, ...]
    food: int
    teeth: int


class Auction(NamedTuple):
    """The conch auction: whose turn, the high bid and bidder, passes since the last bid."""

    turn: int
    high: int = 0
    bidder: int | None = None
    passes: int = 0


class State(NamedTuple):
    """The whole game as an immutable value (a NamedTuple: cheap to copy with _replace)."""

    players: tuple[str, ...]
    deck_file: str
    deck_digest: str
    tribes: tuple[Tribe, ...]
    draw: tuple[str, ...]  # draw pile, top card first
    discard: tuple[str, ...]  # discard pile, oldest first
    pool: tuple[str, ...]  # card pool, in order of entry
    box: tuple[str, ...]  # starting Hunters out of the game
    fire_locked: bool
    conch: int
    round: int
    phase: str  # draw | auction | feed | starve | action | casualty | discard | over
    auction: Auction | None
    starving: tuple[int, ...]  # seats choosing a starvation loss
    acted: int  # actions completed in this action phase (the conch holder acts at 0 and n)
    hunter: int | None  # seat choosing a casualty
    rng: Rng
    winner: int | None = None
    end: str | None = None  # "fire" or "abandoned"

    @property
    def n(self) -> int:
        return len(self.players)

    @property
    def deck(self) -> Deck:
        return _deck_of(self.deck_file, self.deck_digest)


# The decks of the states met (a memo of loaded decks, not game state): keyed by the
# whole key, bounded, and safe under threads (functools.lru_cache keeps its data
# coherent under concurrent calls; a deck is immutable but for its own scores memo).
@lru_cache(maxsize=32)
def _deck_of(deck_file: str, digest: str) -> Deck:
    """The validated deck of the states with this deck file and digest."""
    return _checked_deck(deck_file, digest)


def _checked_deck(deck_file: str, digest: str) -> Deck:
    """The deck file read now (``load_deck``: again only if it changed); StateCorrupt
    unless it has that digest."""
    try:
        found = load_deck(STANDARD_DECK if deck_file == STANDARD else Path(deck_file))
    except DeckError as exc:
        raise StateCorrupt(f"the game's deck file cannot be loaded: {exc.message}",
                           deck=deck_file) from None
    if found.digest != digest:
        raise StateCorrupt(f"deck file {deck_file} changed since the game began",
                           deck=deck_file)
    return found


# --------------------------------------------------------------------------- contract


def setup(players: Sequence[str], seed: int, options: Mapping[str, Any] | None = None) -> State:
    """A new game: tribes in seat order (Wolf, Tiger, ... unless options['tribes'] says),
    the stone-marker draw for the first conch holder, then round 1 up to the first bid.

    Options: ``deck`` (path of a deck file; the standard deck by default), ``tribes``.
    """
    return _setup(players, seed, options or {})[0]


def setup_with_events(players: Sequence[str], seed: int,
                      options: Mapping[str, Any] | None = None) -> tuple[State, list[Event]]:
    """Like ``setup``, also returning the events of setup and round 1 up to the first bid."""
    return _setup(players, seed, options or {})


def pending(state: State) -> list[Decision]:
    """The open decisions; empty only when the game is over."""
    phase = state.phase
    if phase == "auction":
        a = auction_of(state)
        return [Decision(a.turn, "bid", (("high", a.high), ("max", _tribe(state, a.turn).teeth)))]
    if phase == "action":
        return [Decision(_actor(state), "act", (("second", state.acted == state.n),))]
    if phase == "starve":
        return [Decision(s, "starve") for s in state.starving]
    if phase == "casualty":
        return [Decision(_hunter(state), "casualty")]
    if phase == "discard":
        return [Decision(_right_of(state, state.conch), "discard",
                         (("keep", POOL_KEEP),))]
    return []


def legal_actions(state: State, seat: int) -> list[Action]:
    """Every action ``seat`` may take now (the only actions ``apply`` accepts)."""
    return list(_legal(state, seat))


# This thread's last listing: a bot lists the actions, then ``apply`` checks its choice
# against that very list (engine.core.LegalMemo: per thread, safe under threads).
_LISTED = LegalMemo()


def _legal(state: State, seat: int) -> tuple[Action, ...]:
    """``legal_actions`` as a tuple, listed once for this thread's last state and seat."""
    return _LISTED.listed(state, seat,
                          lambda: _legal_actions(state, seat, _decision_kind(state, seat)))


def _legal_actions(state: State, seat: int, kind: str) -> list[Action]:
    if kind == "bid":
        teeth = state.tribes[seat].teeth
        return [PASS, *(Action("bid", (("amount", v),))
                        for v in range(auction_of(state).high + 1, teeth + 1))]
    if kind == "act":
        return _act_actions(state, seat)
    if kind in ("starve", "casualty"):
        return [Action.of("lose", card=c) for c in _losable(state, seat)]
    return _discard_actions(state)


def apply(state: State, seat: int, action: Action) -> tuple[State, list[Event]]:
    """Play ``action`` for ``seat``; run everything automatic up to the next decision."""
    kind = _decision_kind(state, seat)
    if kind == "discard" and action.kind == "discard":
        action = _in_pool_order(state, action)
    if action not in _legal_set(state, seat, kind, action):
        raise IllegalAction(f"{action} is not legal for seat {seat} now", seat=seat,
                            action=action.to_json(), decision=kind)
    events: list[Event] = []
    if kind == "bid":
        state = _bid(state, seat, action, events)
    elif kind == "act":
        state = _act(state, seat, action, events)
    elif kind == "starve":
        state = _lose(state, seat, action.get("card"), "starvation", events)
        state = state._replace(starving=tuple(s for s in state.starving if s != seat))
        if not state.starving:
            state = state._replace(phase="action", acted=0)
    elif kind == "casualty":
        state = _lose(state, seat, action.get("card"), "casualty", events)
        state = state._replace(phase="action", hunter=None, acted=state.acted + 1)
    else:
        state = _discard(state, seat, action.get("cards"), events)
    return _advance(state, events), events


def default_action(state: State, seat: int) -> Action:
    """What a timeout plays for ``seat``: pass, forage, the weakest loss, keep the oldest."""
    kind = _decision_kind(state, seat)
    if kind == "bid":
        return PASS
    if kind == "act":
        return FORAGE
    if kind in ("starve", "casualty"):
        return Action.of("lose", card=_weakest(state, seat))
    fire = state.deck.fire_id
    keep = [c for c in state.pool if c == fire][:1]
    keep += [c for c in state.pool if c != fire][: POOL_KEEP - len(keep)]
    return Action.of("discard", cards=tuple(c for c in state.pool if c not in keep))


def result(state: State) -> Result | None:
    if state.phase != "over":
        return None
    winners = () if state.winner is None else (state.winner,)
    return Result(winners, state.end or "over")


def places(state: State) -> list[int]:
    """The place of each seat at the end: the one who invented Fire first, the others by
    their Inventing score (as the result email's standings list them); tied seats share a
    place."""
    if state.phase != "over" or state.winner is None:
        return []
    keys = [(seat == state.winner, scores(state, seat).inventing) for seat in range(state.n)]
    return [1 + sum(other > key for other in keys) for key in keys]


def abandon(state: State) -> tuple[State, list[Event]]:
    """End the game with no winner (a host's decision, not a player's action)."""
    if state.phase == "over":
        raise GameOver("the game is over")
    return state._replace(phase="over", end="abandoned", auction=None, starving=(),
                   hunter=None), [Event("game_abandoned")]


def view(state: State, seat: int | None) -> View:
    """What ``seat`` (None: a spectator) may see. Everything in Cavemen is open but the
    order of the draw pile, so every seat sees the same board; only ``you`` differs."""
    deck, end = state.deck, result(state)
    return {
        "game": NAME,
        "you": seat,
        "round": state.round,
        "phase": state.phase,
        "conch": state.conch,
        "players": list(state.players),
        "tribes": [_tribe_view(state, i) for i in range(state.n)],
        "pool": [deck.card(c).to_view() for c in state.pool],
        "draw_pile": len(state.draw),
        "discard_pile": list(state.discard),
        "box": list(state.box),
        "fire_locked": state.fire_locked,
        "fire_cost": deck.fire_cost[state.n],
        "auction": None if state.auction is None else {
            "turn": state.auction.turn, "high": state.auction.high,
            "bidder": state.auction.bidder},
        "pending": [d.to_json() for d in pending(state)],
        "result": None if end is None else end.to_json(),
        "deck_name": deck.name,
    }


EMAIL_BIDS = 8  # bids an email offers as links above the high bid
EMAIL_DISCARDS = 10  # a discard with at most this many outcomes has one link for each


def email_choices(state: State, seat: int) -> list[Action]:
    """The choices an email offers as one-click links (the game page has them all):
    pass and the lowest few bids; every action but recruiting in place of another
    caveman; every loss; every way to discard when there are at most ten (else the
    discard is chosen on the page)."""
    kind = _decision_kind(state, seat)
    legal = legal_actions(state, seat)
    if kind == "bid":
        return [a for a in legal if a.kind == "pass"] + [
            a for a in legal if a.kind == "bid"][:EMAIL_BIDS]
    if kind == "act":
        return [a for a in legal if a.get("replace") is None]
    if kind in ("starve", "casualty"):
        return legal
    if kind == "discard" and len(legal) <= EMAIL_DISCARDS:
        return legal
    return []


def choice_effect(state: State, seat: int, action: Action) -> Effect:
    """What ``action`` costs and brings ``seat`` now, for the words of a choice: ``pay``
    and ``gain`` map ``food``/``teeth`` to amounts (gains include the income of the
    tribe's inventions), ``casualty`` says a casualty card is drawn after, ``scores`` the
    tribe's scores it adds. Nothing random is looked at: a hunt's casualty stays unknown.
    An action that is not legal now gives ``{}``."""
    if not listed(action, legal_actions(state, seat)):
        return {}
    kind, cid = action.kind, action.get("card")
    out: dict[str, Any] = {}
    if kind == "bid":
        out["pay"] = {"teeth": action.get("amount")}
    elif kind == "forage":
        food, teeth = scores(state, seat).income_for("forage")
        out["gain"] = {"food": scores(state, seat).foraging + food, "teeth": teeth}
    elif kind == "hunt":
        beast = state.deck.card(cid)
        food, teeth = scores(state, seat).income_for("hunt")
        out["gain"] = {"food": beast.reward_food + food, "teeth": beast.reward_teeth + teeth}
        out["casualty"] = True
    elif kind == "recruit":
        pay = action.get("pay")
        out["pay"] = {pay: _recruit_costs(state, seat, cid)[pay]}
        after = _take(state, seat, cid)
        if action.get("replace"):
            after = _with_tribe(after, seat, after.tribes[seat]._replace(
                cards=tuple(c for c in after.tribes[seat].cards if c != action.get("replace"))))
        food, teeth = scores(after, seat).income_for("recruit")
        out["gain"] = {"food": food, "teeth": teeth}
        out["scores"] = _score_change(state, after, seat)
    elif kind == "explore":
        out["pay"] = {"teeth": _explore_cost(state, seat, cid)}
        out["scores"] = _score_change(state, _take(state, seat, cid), seat)
    elif kind == "invent":
        after = _take(state, seat, cid)
        food, teeth = scores(after, seat).income_for("invent")
        out["gain"] = {"food": food, "teeth": teeth}
        out["scores"] = _score_change(state, after, seat)
    elif kind == "lose":
        out["scores"] = _score_change(state, _with_tribe(state, seat, state.tribes[seat]._replace(
            cards=tuple(c for c in state.tribes[seat].cards if c != cid))), seat)
    return out


def _score_change(before: State, after: State, seat: int) -> dict[str, int]:
    old, new = scores(before, seat), scores(after, seat)
    return {name: getattr(new, name) - getattr(old, name)
            for name in ("hunting", "inventing", "foraging", "population")
            if getattr(new, name) != getattr(old, name)}


def card_info(state: State, card_id: str) -> CardData:
    """A card's printed data, for narration; another word of an action (``food``) is
    shown as it is."""
    if card_id not in state.deck.cards:
        return {"id": card_id, "name": card_id}
    return state.deck.card(card_id).to_view()


def catalog(state: State) -> list[CardData]:
    """Every card of the game's deck as ``card_info`` gives it, in the deck file's order
    (the starting cards, then the deck): the rules page's card glossary. Fire also carries
    its cost by player count (``fire_cost``)."""
    deck = state.deck
    out = []
    for card in deck.cards.values():
        info = card.to_view()
        if card.id == deck.fire_id:
            info["fire_cost"] = dict(deck.fire_cost)
        out.append(info)
    return out


def translated_view(data: View, card: Callable[[CardData], CardData], tr: Names) -> View:
    """A view with its cards and tribe names in ``tr``'s language; ``card(info)`` gives a
    card's view translated (the server's lookup)."""
    out = dict(data)
    if "pool" in out:
        out["pool"] = [card(c) for c in out["pool"]]
    if "tribes" in out:
        out["tribes"] = [dict(t, tribe=tr.tribe_name(t["tribe"]),
                              cards=[card(c) for c in t.get("cards", [])])
                         for t in out["tribes"]]
    return out


def translation(state: State, lang: str) -> Translation | None:
    """The card names, card texts and tribe names of the game's deck in ``lang`` (a tag
    such as "de" or "de-AT"; a regional tag falls back to its language), or None when the
    deck has no translation for it: then show the deck's own (English) names. Reads only
    the translation file next to the deck file; the game and its deck stay unchanged.

    Raises DeckError when the translation file is broken, ValueError for a ``lang`` that
    is not a language tag."""
    deck = state.deck
    found = load_translation(deck, lang)
    if found is None:
        base = lang.replace("_", "-").split("-", 1)[0]
        if base != lang:
            found = load_translation(deck, base)
    return found


def scores(state: State, seat: int) -> Scores:
    return state.deck.scores(state.tribes[seat].cards)


# --------------------------------------------------------------------------- JSON

_FIELDS = ("players", "deck_file", "deck_digest", "draw", "discard", "pool", "box",
           "fire_locked", "conch", "round", "phase", "starving", "acted", "hunter",
           "winner", "end")


def to_json(state: State) -> JSONObject:
    out: JSONObject = {"game": NAME, "version": 1}
    for key in _FIELDS:
        value = getattr(state, key)
        out[key] = list(value) if isinstance(value, tuple) else value
    out["tribes"] = [[t.name, list(t.cards), t.food, t.teeth] for t in state.tribes]
    a = state.auction
    out["auction"] = None if a is None else [a.turn, a.high, a.bidder, a.passes]
    out["rng"] = state.rng.to_json()
    return out


def from_json(data: Mapping[str, Any]) -> State:
    """Rebuild a state; raises StateCorrupt on anything malformed or inconsistent."""
    try:
        if data.get("game") != NAME or data.get("version") != 1:
            raise StateCorrupt("not a cavemen state of version 1")
        kw: dict[str, Any] = {k: tuple(data[k]) if isinstance(data[k], list) else data[k]
                              for k in _FIELDS}
        kw["tribes"] = tuple(Tribe(n, tuple(c), f, t) for n, c, f, t in data["tribes"])
        kw["auction"] = None if data["auction"] is None else Auction(*data["auction"])
        kw["rng"] = Rng.from_json(data["rng"])
        state = State(**kw)
    except StateCorrupt:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StateCorrupt(f"cannot read cavemen state: {exc!r}") from None
    _checked_deck(state.deck_file, state.deck_digest)
    check_invariants(state)
    return state


def check_invariants(state: State) -> None:
    """Raise StateCorrupt unless every card is in exactly one place and numbers are sane."""
    deck = state.deck
    if state.phase not in PHASES or not 0 <= state.conch < state.n:
        raise StateCorrupt(f"bad phase {state.phase!r} or conch holder {state.conch!r}")
    if len(state.tribes) != state.n:
        raise StateCorrupt("one tribe per player needed")
    places = [*state.draw, *state.discard, *state.pool, *state.box]
    for t in state.tribes:
        places.extend(t.cards)
        if t.food < 0 or t.teeth < 0:
            raise StateCorrupt(f"tribe {t.name} has negative Food or Teeth")
    expected = set(deck.deck_ids)
    for t in state.tribes:
        expected.update(deck.starting.get(t.name, ()))
    if len(places) != len(set(places)) or set(places) != expected:
        raise StateCorrupt("a card is missing, foreign or in two places",
                           missing=sorted(expected - set(places))[:5],
                           foreign=sorted(set(places) - expected)[:5])


# --------------------------------------------------------------------------- phases


def _setup(players: Sequence[str], seed: int,
           options: Mapping[str, Any]) -> tuple[State, list[Event]]:
    n = len(players)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise SetupError(f"Cavemen is for 2 to 5 players, not {n}", players=n)
    if not isinstance(seed, int):
        raise SetupError("the seed must be a whole number")
    deck_file = str(options.get("deck") or STANDARD)
    deck = load_deck(STANDARD_DECK if deck_file == STANDARD else Path(deck_file))
    tribes = tuple(options.get("tribes") or TRIBES[:n])
    if len(tribes) != n or len(set(tribes)) != n or not set(tribes) <= set(TRIBES):
        raise SetupError(f"tribes must be {n} different of {', '.join(TRIBES)}")
    food, teeth = START_RESOURCES[n]
    rng = Rng(seed)
    shuffled, rng = rng.shuffled(deck.deck_ids)
    stones = {deck.card(deck.starting[t][1]).stone: i for i, t in enumerate(tribes)}
    revealed = []
    for card in shuffled:
        revealed.append(card)
        if deck.card(card).stone in stones:
            break
    conch = stones[deck.card(revealed[-1]).stone]
    draw, rng = rng.shuffled(shuffled)
    state = State(
        players=tuple(players), deck_file=deck_file, deck_digest=deck.digest,
        tribes=tuple(Tribe(t, deck.starting[t], food, teeth) for t in tribes),
        draw=draw, discard=(), pool=(), box=(), fire_locked=False, conch=conch, round=1,
        phase="draw", auction=None, starving=(), acted=0, hunter=None, rng=rng,
    )
    events = [Event("game_started", None, {"tribes": list(tribes), "players": list(players),
                                           "revealed": revealed, "conch": conch})]
    return _advance(state, events), events


def _advance(state: State, events: list[Event]) -> State:
    """Run automatic steps until a decision is needed or the game is over."""
    while True:
        phase = state.phase
        if phase == "draw":
            state = _draw_phase(state, events)
        elif phase == "auction":
            a = auction_of(state)
            if a.bidder is None and a.passes == state.n:
                events.append(Event("conch_kept", state.conch, {"price": 0}))
                state = state._replace(phase="feed", auction=None)
            elif a.bidder is not None and a.passes == state.n - 1:
                state = _conch_won(state, a.bidder, a.high, events)
            elif state.tribes[a.turn].teeth <= a.high:
                events.append(Event("bid_passed", a.turn, {"forced": True}))
                state = state._replace(auction=_next_bidder(state, a, passed=True))
            else:
                return state
        elif phase == "feed":
            state = _feed_phase(state, events)
        elif phase == "action":
            if state.acted > state.n:
                state = state._replace(phase="discard")
            else:
                return state
        elif phase == "discard":
            state = _discard_start(state, events)
            if state.phase == "discard":
                return state
        else:  # starve, casualty, over
            return state


def _draw_phase(state: State, events: list[Event]) -> State:
    events.append(Event(ROUND_EVENT, None, {"round": state.round}))
    if state.round > 1:
        left = (state.conch + 1) % state.n
        events.append(Event("conch_passed", state.conch, {"to": left}))
        state = state._replace(conch=left)
    extra = FIRST_DRAW_EXTRA if state.round == 1 else LATER_DRAW_EXTRA
    drawn = []
    for _ in range(state.n + extra):
        card, state = _draw_card(state, events)
        if card is None:
            break
        drawn.append(card)
        state = state._replace(pool=(*state.pool, card))
    events.append(Event("cards_drawn", None, {"cards": drawn}))
    return state._replace(phase="auction", auction=Auction(turn=state.conch))


def _bid(state: State, seat: int, action: Action, events: list[Event]) -> State:
    a = auction_of(state)
    if action.kind == "pass":
        events.append(Event("bid_passed", seat, {"forced": False}))
        return state._replace(auction=_next_bidder(state, a, passed=True))
    amount = action.get("amount")
    events.append(Event("bid_placed", seat, {"amount": amount}))
    return state._replace(auction=Auction((seat + 1) % state.n, amount, seat, 0))


def _next_bidder(state: State, a: Auction, passed: bool) -> Auction:
    return Auction((a.turn + 1) % state.n, a.high, a.bidder, a.passes + passed)


def _conch_won(state: State, bidder: int, price: int, events: list[Event]) -> State:
    state = _pay(state, bidder, teeth=price)
    events.append(Event("conch_won", bidder, {"price": price, "from": state.conch}))
    return state._replace(conch=bidder, phase="feed", auction=None)


def _feed_phase(state: State, events: list[Event]) -> State:
    starving = []
    for seat in range(state.n):
        state = _income(state, seat, "feed", events)
        sc = scores(state, seat)
        due = sc.cavemen if seat == state.conch else 1
        due = max(0, due - sc.feeding_relief)
        if state.tribes[seat].food >= due:
            state = _pay(state, seat, food=due)
            events.append(Event("tribe_fed", seat, {"food": due}))
            continue
        candidates = _losable(state, seat)
        if sc.protected_starvation or not candidates:
            events.append(Event("tribe_starved", seat, {
                "due": due, "loss": None,
                "why": "protected" if sc.protected_starvation else "leader_only"}))
        elif len(candidates) == 1:
            events.append(Event("tribe_starved", seat, {"due": due, "loss": candidates[0]}))
            state = _lose(state, seat, candidates[0], "starvation", events)
        else:
            events.append(Event("tribe_starved", seat, {"due": due, "loss": "choice"}))
            starving.append(seat)
    if starving:
        return state._replace(phase="starve", starving=tuple(starving))
    return state._replace(phase="action", acted=0)


def _act(state: State, seat: int, action: Action, events: list[Event]) -> State:
    kind, card = action.kind, action.get("card")
    if kind == "forage":
        food = scores(state, seat).foraging
        state = _pay(state, seat, food=-food)
        events.append(Event("foraged", seat, {"food": food}))
        state = _income(state, seat, "forage", events)
    elif kind == "recruit":
        state = _recruit(state, seat, card, action.get("pay"), action.get("replace"), events)
    elif kind == "explore":
        cost = _explore_cost(state, seat, card)
        state = _take(_pay(state, seat, teeth=cost), seat, card)
        events.append(Event("cave_explored", seat, {"card": card, "teeth": cost}))
    elif kind == "invent":
        state = _take(state, seat, card)
        if card == state.deck.fire_id:
            events.append(Event("fire_invented", seat, {"card": card}))
            return state._replace(phase="over", winner=seat, end="fire")
        events.append(Event("invention_made", seat, {"card": card}))
        state = _income(state, seat, "invent", events)
    else:  # hunt
        return _hunt(state, seat, card, events)
    return state._replace(acted=state.acted + 1)


def _recruit(state: State, seat: int, card: str, pay: str, replaced: str | None,
             events: list[Event]) -> State:
    cost = _recruit_costs(state, seat, card)[pay]
    if replaced is not None:
        state = _lose(state, seat, replaced, "replaced", events)
    state = _take(_pay(state, seat, **{pay: cost}), seat, card)
    events.append(Event("caveman_recruited", seat, {"card": card, "pay": pay, "cost": cost,
                                                    "replaced": replaced}))
    return _income(state, seat, "recruit", events)


def _hunt(state: State, seat: int, card: str, events: list[Event]) -> State:
    beast = state.deck.card(card)
    pool = tuple(c for c in state.pool if c != card)
    state = state._replace(pool=pool, discard=(*state.discard, card))
    state = _pay(state, seat, food=-beast.reward_food, teeth=-beast.reward_teeth)
    events.append(Event("beast_hunted", seat, {"card": card, "food": beast.reward_food,
                                               "teeth": beast.reward_teeth}))
    state = _income(state, seat, "hunt", events)
    state, hit = _casualty_draw(state, seat, events)
    candidates = _losable(state, seat) if hit else []
    if len(candidates) > 1:
        return state._replace(phase="casualty", hunter=seat)
    if candidates:
        state = _lose(state, seat, candidates[0], "casualty", events)
    return state._replace(acted=state.acted + 1)


def _casualty_draw(state: State, seat: int, events: list[Event]) -> tuple[State, bool]:
    """Draw for casualties; Fire is set aside and drawn past. Returns (state, matched)."""
    fire = state.deck.fire_id
    card, state = _draw_card(state, events)
    aside = False
    if card == fire:
        events.append(Event("fire_set_aside", seat, {"card": fire}))
        aside = True
        card, state = _draw_card(state, events)
    hit = False
    if card is None:
        events.append(Event("casualty_drawn", seat, {"card": None, "match": False}))
    else:
        stone = state.deck.card(card).stone
        mine = {state.deck.card(c).stone for c in state.tribes[seat].cards
                if state.deck.card(c).is_caveman}
        hit = stone in mine
        protected = hit and scores(state, seat).protected_casualties
        events.append(Event("casualty_drawn", seat, {"card": card, "match": hit,
                                                     "protected": protected}))
        hit = hit and not protected
        state = state._replace(discard=(*state.discard, card))
    if aside:
        state = _return_fire(state, events)
    return state, hit


def _return_fire(state: State, events: list[Event]) -> State:
    """Fire goes back into the draw pile at random, or into the pool once locked."""
    fire = state.deck.fire_id
    if state.fire_locked:
        events.append(Event("fire_to_pool", None, {"card": fire}))
        return state._replace(pool=(*state.pool, fire))
    draw, rng = state.rng.shuffled((*state.draw, fire))
    events.append(Event("fire_shuffled_back", None, {"card": fire}))
    return state._replace(draw=draw, rng=rng)


def _discard_start(state: State, events: list[Event]) -> State:
    fire = state.deck.fire_id
    if fire in state.pool and not state.fire_locked:
        state = state._replace(pool=tuple(c for c in state.pool if c != fire))
        state = _return_fire(state, events)
    if len(state.pool) > POOL_KEEP:
        return state
    return _next_round(state)


def _discard(state: State, seat: int, cards: tuple[str, ...], events: list[Event]) -> State:
    gone = set(cards)
    state = state._replace(pool=tuple(c for c in state.pool if c not in gone),
                    discard=(*state.discard, *cards))
    events.append(Event("pool_discarded", seat, {"cards": list(cards)}))
    return _next_round(state)


def _next_round(state: State) -> State:
    return state._replace(round=state.round + 1, phase="draw", acted=0)


# --------------------------------------------------------------------------- helpers


def _decision_kind(state: State, seat: int) -> str:
    if state.phase == "over":
        raise GameOver("the game is over")
    for d in pending(state):
        if d.seat == seat:
            return d.kind
    raise NotYourTurn(f"seat {seat} has no decision to make now", seat=seat)


def _legal_set(state: State, seat: int, kind: str,
               action: Action) -> Sequence[Action] | set[Action]:
    """The legal actions to check ``action`` against, built cheaply where possible."""
    if kind == "bid":
        if action.kind == "pass":
            return {PASS} if action == PASS else set()
        amount = action.get("amount")
        ok = (action.kind == "bid" and len(action.args) == 1 and type(amount) is int
              and auction_of(state).high < amount <= state.tribes[seat].teeth)
        return {action} if ok else set()
    return _legal(state, seat)  # the same code that lists them


def _in_pool_order(state: State, action: Action) -> Action:
    """The cards of a discard in pool order, so that the order a person lists them in
    does not matter; anything malformed is left for the legality check to refuse."""
    cards = action.get("cards")
    if not isinstance(cards, tuple) or len(action.args) != 1:
        return action
    rank = {c: i for i, c in enumerate(state.pool)}
    if not all(isinstance(c, str) and c in rank for c in cards):
        return action
    return Action("discard", (("cards", tuple(sorted(cards, key=rank.__getitem__))),))


def auction_of(state: State) -> Auction:
    """The conch auction (the phase is ``auction``)."""
    if state.auction is None:
        raise StateCorrupt("the auction phase has no auction")
    return state.auction


def _hunter(state: State) -> int:
    """The seat choosing a casualty (the phase is ``casualty``)."""
    if state.hunter is None:
        raise StateCorrupt("the casualty phase has no hunter")
    return state.hunter


def _tribe(state: State, seat: int) -> Tribe:
    return state.tribes[seat]


def _actor(state: State) -> int:
    return (state.conch + state.acted) % state.n


def _right_of(state: State, seat: int) -> int:
    return (seat - 1) % state.n


def _with_tribe(state: State, seat: int, tribe: Tribe) -> State:
    tribes = list(state.tribes)
    tribes[seat] = tribe
    return state._replace(tribes=tuple(tribes))


def _pay(state: State, seat: int, food: int = 0, teeth: int = 0) -> State:
    """Pay Food/Teeth to the supply (negative amounts gain)."""
    if not food and not teeth:
        return state
    t = state.tribes[seat]
    return _with_tribe(state, seat, Tribe(t.name, t.cards, t.food - food, t.teeth - teeth))


def _take(state: State, seat: int, card: str) -> State:
    """Move a card from the pool into the seat's tableau."""
    t = state.tribes[seat]
    state = state._replace(pool=tuple(c for c in state.pool if c != card))
    return _with_tribe(state, seat, Tribe(t.name, (*t.cards, card), t.food, t.teeth))


def _income(state: State, seat: int, when: str, events: list[Event]) -> State:
    food, teeth = scores(state, seat).income_for(when)
    if food or teeth:
        state = _pay(state, seat, food=-food, teeth=-teeth)
        events.append(Event("income_gained", seat, {"food": food, "teeth": teeth,
                                                    "when": when}))
    return state


def _lose(state: State, seat: int, card: str, reason: str, events: list[Event]) -> State:
    """Discard a caveman: a starting Hunter to the box, anything else to the discard pile."""
    t = state.tribes[seat]
    state = _with_tribe(state, seat, Tribe(t.name, tuple(c for c in t.cards if c != card),
                                           t.food, t.teeth))
    boxed = state.deck.card(card).tribe is not None
    if boxed:
        state = state._replace(box=(*state.box, card))
    else:
        state = state._replace(discard=(*state.discard, card))
    events.append(Event("caveman_lost", seat, {"card": card, "reason": reason,
                                               "to": "box" if boxed else "discard"}))
    return state


def _losable(state: State, seat: int) -> list[str]:
    deck = state.deck
    return [c for c in state.tribes[seat].cards
            if deck.card(c).is_caveman and deck.card(c).type != "leader"]


def _weakest(state: State, seat: int) -> str:
    """The default loss: lowest total ability, ties to the most recently acquired."""
    deck = state.deck
    candidates = _losable(state, seat)
    return min(reversed(candidates), key=lambda c: deck.card(c).ability)


def _draw_card(state: State, events: list[Event]) -> tuple[str | None, State]:
    """Draw the top card. The last card drawn exhausts the deck: the discard pile is
    shuffled into a new draw pile and Fire is locked into play (cavemen.md)."""
    if not state.draw:
        if not state.discard:
            return None, state
        state = _reshuffle(state, events)
    card, rest = state.draw[0], state.draw[1:]
    state = state._replace(draw=rest)
    if not rest:
        state = _reshuffle(state, events)
    return card, state


def _reshuffle(state: State, events: list[Event]) -> State:
    draw, rng = state.rng.shuffled(state.discard)
    events.append(Event("deck_exhausted", None, {"reshuffled": len(draw),
                                                 "fire_locked": not state.fire_locked}))
    return state._replace(draw=draw, discard=(), rng=rng, fire_locked=True)


def _recruit_costs(state: State, seat: int, card: str) -> dict[str, int]:
    c = state.deck.card(card)
    off = scores(state, seat).discount("recruit", c.type)
    return {"food": max(0, c.cost_food - off), "teeth": max(0, c.cost_teeth - off)}


def _explore_cost(state: State, seat: int, card: str) -> int:
    sc = scores(state, seat)
    if sc.can_explore:
        return 0
    return max(0, state.deck.card(card).cost_teeth - sc.discount("explore"))


def _act_actions(state: State, seat: int) -> list[Action]:
    deck, tribe, sc = state.deck, state.tribes[seat], scores(state, seat)
    out = [FORAGE]
    for cid in state.pool:
        card = deck.card(cid)
        ctype = card.type
        if card.is_caveman:
            out.extend(_recruit_actions(state, seat, cid, tribe, sc))
        elif ctype == "cave":
            if _explore_cost(state, seat, cid) <= tribe.teeth:
                out.append(Action("explore", (("card", cid),)))
        elif ctype == "beast":
            if card.requirement <= sc.hunting:
                out.append(Action("hunt", (("card", cid),)))
        elif ctype == "invention":
            if card.requirement <= sc.inventing:
                out.append(Action("invent", (("card", cid),)))
        elif ctype == "fire" and seat == state.conch and (
                sc.inventing >= deck.fire_cost[state.n]):
            out.append(Action.of("invent", card=cid))
    return out


def _recruit_actions(state: State, seat: int, cid: str, tribe: Tribe,
                     sc: Scores) -> list[Action]:
    if sc.cavemen > sc.population:
        return []
    costs = _recruit_costs(state, seat, cid)
    payable = [p for p in ("food", "teeth") if costs[p] <= getattr(tribe, p)]
    if sc.cavemen < sc.population:
        return [Action("recruit", (("card", cid), ("pay", p))) for p in payable]
    return [Action("recruit", (("card", cid), ("pay", p), ("replace", r)))
            for p in payable for r in _losable(state, seat)]


def _discard_actions(state: State) -> list[Action]:
    fire = state.deck.fire_id
    choosable = [c for c in state.pool if c != fire]
    count = len(state.pool) - POOL_KEEP
    return [Action("discard", (("cards", combo),)) for combo in combinations(choosable, count)]


def _tribe_view(state: State, seat: int) -> dict[str, Any]:
    t, sc, deck = state.tribes[seat], scores(state, seat), state.deck
    return {
        "seat": seat, "player": state.players[seat], "tribe": t.name,
        "food": t.food, "teeth": t.teeth, "conch": seat == state.conch,
        "cards": [deck.card(c).to_view() for c in t.cards],
        "scores": {"hunting": sc.hunting, "inventing": sc.inventing,
                   "foraging": sc.foraging, "population": sc.population,
                   "cavemen": sc.cavemen, "explore": sc.can_explore},
    }
