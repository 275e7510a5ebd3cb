"""Generic engine conformance: random playouts with many seeds, every step checked.

``play_and_check(spec, players, seed, bot)`` plays one game with bots and checks the
engine contract (engine/core.py, DESIGN.md) at every decision:

- ``pending`` is empty exactly when ``result`` is set;
- every pending seat has a non-empty list of distinct legal actions, its default action
  is among them, and each listed action survives the Action JSON and typed-command round
  trips;
- several listed actions per step apply (on the same immutable state, which must not
  change), and unlisted ones are refused with IllegalAction; seats without a decision get
  NotYourTurn; a finished game answers GameOver;
- ``choice_effect`` describes every email choice as JSON data (and an illegal action as
  ``{}``) without touching any random state; the optional ``choice_variants`` of an
  email choice (what its confirmation page lets the player pick instead) are legal
  actions, the choice among them;
- a game with standing plans (the optional ``Plans`` hook): its plan form is JSON data;
  a plan of random steps from it, set at any decision point for any seat, changes no
  open decision, tells only that seat, round-trips through JSON, keeps the invariants,
  shows in no other seat's view, and the game plays on from it; words that name no
  step are refused with InvalidPlan; a finished game refuses plans with PlanClosed;
- a game with standing choices (the optional ``Standing`` hook): its form is JSON data,
  every value ``off`` to begin with; a random value of each, set at any decision point
  for any seat, changes no open decision, tells only that seat, round-trips through
  JSON, keeps the invariants, shows in no other seat's view, and the game plays on from
  it; a key or value not offered is refused with InvalidStanding;
- the game-specific invariants hold (for Cavemen: every card in one place, no negative
  Food or Teeth, no tribe above its population, ...);
- state JSON round-trips exactly both ways, also through ``json.dumps``/``json.loads``;
- every view (each seat and a spectator) is JSON data that reveals no hidden order and
  no RNG state;
- the engine never touches the global ``random`` (its state is compared around every
  call, and the game is replayed under a different global seed);
- replaying the same seed and actions rebuilds the same state and the same events.

A game joins by adding a :class:`GameSpec` to ``SPECS``.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from engine import cavemen, stoneage
from engine.cavemen.bots import BOTS as CAVEMEN_BOTS
from engine.core import (
    STANDING_OFF,
    Action,
    Decision,
    EngineError,
    Event,
    GameOver,
    IllegalAction,
    InvalidPlan,
    InvalidStanding,
    NotYourTurn,
    PlanClosed,
    Result,
    SetupError,
    format_action,
    parse_action,
)
from engine.registry import listings
from engine.stoneage.bots import BOTS as STONEAGE_BOTS

Bot = Callable[[Any, int, random.Random], Action]
ROOT = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------- the spec


@dataclass(frozen=True)
class GameSpec:
    """What the generic checks need to know about one game.

    ``check_state(state)`` asserts the game's own invariants; ``illegal_actions(state,
    seat)`` proposes actions that must be refused (the checker drops any that happen to
    be listed); ``equivalent(state, seat, action)`` names the listed action an unlisted
    spelling stands for, if the game accepts it (it must then act exactly the same);
    ``hidden_orders(state)`` gives the sequences of ids no view may show in order (draw
    piles); ``check_view(state, seat, view, tokens)`` adds game-specific view checks
    (``tokens``: the view's strings in order); ``end_early(state)`` ends a game without
    a winner (a host abandoning it), if the game offers that.
    """

    game: Any
    bots: Mapping[str, Bot]
    check_state: Callable[[Any], None]
    illegal_actions: Callable[[Any, int], Iterable[Action]]
    hidden_orders: Callable[[Any], Iterable[Sequence[str]]]
    check_view: Callable[[Any, int | None, dict[str, Any], list[str]], None] = (
        lambda state, seat, view, tokens: None)
    end_early: Callable[[Any], tuple[Any, list[Event]]] | None = None
    equivalent: Callable[[Any, int, Action], Action | None] = (
        lambda state, seat, action: None)


@dataclass
class Playout:
    """What one checked playout saw."""

    state: Any
    actions: list[tuple[int, Action]]
    events: list[Event]
    decisions: int = 0
    kinds: Counter = field(default_factory=Counter)
    event_kinds: Counter = field(default_factory=Counter)
    refused: Counter = field(default_factory=Counter)
    finished: bool = False


# --------------------------------------------------------------------------- helpers


def strict_key(value: Any) -> Any:
    """A comparison key that tells ``1``, ``1.0`` and ``True`` apart (``==`` does not)."""
    if isinstance(value, Action):
        return ("Action", value.kind, strict_key(value.args))
    if isinstance(value, tuple | list):
        return (type(value).__name__, tuple(strict_key(v) for v in value))
    return (type(value).__name__, value)


def string_tokens(text: str) -> list[str]:
    """Every string in a JSON text (keys and values) in document order, still escaped
    (ids are plain words, so they compare equal as they are)."""
    return _STRING.findall(text)


_STRING = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"')
_RNG_KEY = re.compile(r'"(rng|seed)"\s*:', re.IGNORECASE)


def mangled(action: Action) -> Iterator[Action]:
    """Generic near-misses of a legal action: unknown kind, extra, dropped, retyped or
    reordered parameters."""
    yield Action.of("no_such_action")
    yield Action(action.kind.upper() + "_", action.args)
    yield Action(action.kind, tuple(sorted((*action.args, ("zz_bogus", 1)))))
    for i, (name, value) in enumerate(action.args):
        rest = action.args[:i] + action.args[i + 1:]
        yield Action(action.kind, rest)
        for bad in ("\u00a7garbage", -1, 10**9, (), float("nan")):
            yield Action(action.kind, (*rest[:i], (name, bad), *rest[i:]))
        if isinstance(value, int) and not isinstance(value, bool):
            for retyped in (float(value), str(value), value == 1):
                yield Action(action.kind, (*rest[:i], (name, retyped), *rest[i:]))
        if isinstance(value, tuple) and len(value) > 1:
            yield Action(action.kind, (*rest[:i], (name, value[::-1]), *rest[i:]))
            yield Action(action.kind, (*rest[:i], (name, value[:-1]), *rest[i:]))
            yield Action(action.kind, (*rest[:i], (name, (*value, value[0])), *rest[i:]))
            yield Action(action.kind, (*rest[:i], (name, list(value)), *rest[i:]))


def assert_refused(game: Any, state: Any, seat: int, action: Action,
                   error: type[EngineError], code: str) -> None:
    try:
        game.apply(state, seat, action)
    except error as exc:
        assert exc.code == code, (action, exc)
        assert exc.message, action
    else:
        raise AssertionError(f"seat {seat} was allowed {action!r}; expected {error.__name__}")


def assert_json_round_trip(game: Any, state: Any) -> None:
    data = game.to_json(state)
    wire = json.loads(json.dumps(data))
    assert wire == data, "to_json must produce plain JSON data (lists, not tuples)"
    kept = copy.deepcopy(data)
    back = game.from_json(data)
    assert data == kept, "from_json must not change its input"
    assert back == state
    assert game.to_json(back) == data
    assert game.from_json(wire) == state
    assert game.to_json(game.from_json(wire)) == wire
    assert json.dumps(game.to_json(game.from_json(wire)), sort_keys=True) == json.dumps(
        data, sort_keys=True)


def assert_views_hide_secrets(spec: GameSpec, state: Any) -> None:
    game = spec.game
    orders = [tuple(o) for o in spec.hidden_orders(state)]
    for seat in (None, *_seats(state)):
        view = game.view(state, seat)
        assert isinstance(view, dict)
        text = json.dumps(view, ensure_ascii=False)
        assert not _RNG_KEY.search(text), f"view for {seat} shows the RNG state"
        tokens = string_tokens(text)
        for order in orders:
            assert not shows_in_order(tokens, order), f"view for {seat} shows a hidden order"
        spec.check_view(state, seat, view, tokens)


def shows_in_order(tokens: Sequence[str], order: Sequence[str]) -> bool:
    """Whether two ids adjacent in ``order`` also appear adjacent, in order, in ``tokens``."""
    present = set(tokens).intersection(order)
    if len(present) < 2:
        return False
    pairs = set(zip(tokens, tokens[1:], strict=False))
    return any(pair in pairs for pair in zip(order, order[1:], strict=False))


def _seats(state: Any) -> range:
    return range(len(state.players))


def check_events(events: Sequence[Event], n: int) -> None:
    assert isinstance(events, list)
    for ev in events:
        assert isinstance(ev, Event)
        assert isinstance(ev.kind, str) and ev.kind
        assert ev.actor is None or 0 <= ev.actor < n, ev
        assert ev.visible_to is None or all(0 <= s < n for s in ev.visible_to), ev
        json.dumps(ev.to_json())


# --------------------------------------------------------------------------- checks


def check_decision_point(spec: GameSpec, state: Any, rng: random.Random, sample: int,
                         refused: Counter) -> None:
    """Every per-step check on a state that still has decisions open."""
    game = spec.game
    n = len(state.players)
    decisions = game.pending(state)
    assert decisions, "pending is empty but the game has no result"
    seats = {d.seat for d in decisions}
    for d in decisions:
        assert isinstance(d, Decision) and isinstance(d.kind, str) and d.kind
        assert 0 <= d.seat < n
        json.dumps(d.to_json())
    snapshot = game.to_json(state)
    for seat in sorted(seats):
        check_seat(spec, state, seat, rng, sample, refused)
    if hasattr(game, "set_plan"):
        check_plans(spec, state, rng.randrange(n), rng, refused)
    if hasattr(game, "set_standing"):
        check_standing(spec, state, rng.randrange(n), rng, refused)
    assert game.to_json(state) == snapshot, "apply changed the state it was given"
    for seat in [*(s for s in range(n) if s not in seats), -1, n]:
        action = game.default_action(state, decisions[0].seat)
        assert_refused(game, state, seat, action, NotYourTurn, "turn/not_yours")
        refused["not_your_turn"] += 1


def check_seat(spec: GameSpec, state: Any, seat: int, rng: random.Random, sample: int,
               refused: Counter) -> None:
    game = spec.game
    before = random.getstate()
    legal = game.legal_actions(state, seat)
    default = game.default_action(state, seat)
    assert random.getstate() == before, "legal_actions/default_action used global random"
    assert legal, f"seat {seat} has a decision but no legal action"
    assert all(isinstance(a, Action) for a in legal)
    assert len(set(legal)) == len(legal), "legal actions repeat"
    assert default in legal, f"default {default} is not legal"
    chosen = rng.sample(legal, min(sample, len(legal)))
    for action in {default, *chosen}:
        assert Action.from_json(json.loads(json.dumps(action.to_json()))) == action
        assert parse_action(format_action(action), legal) == action
        assert parse_action(format_action(action).upper(), legal) == action
        before = random.getstate()
        new, events = game.apply(state, seat, action)
        assert random.getstate() == before, f"apply({action}) used global random"
        assert type(new) is type(state)
        check_events(events, len(state.players))
        spec.check_state(new)
    legal_keys = {strict_key(a) for a in legal}
    candidates = [*spec.illegal_actions(state, seat)]
    candidates.extend(mangled(rng.choice(legal)))
    for action in candidates:
        if strict_key(action) in legal_keys:
            continue
        same = spec.equivalent(state, seat, action)
        if same is not None and strict_key(same) in legal_keys:
            # another spelling of a listed action: it must act exactly the same
            assert game.apply(state, seat, action) == game.apply(state, seat, same)
            refused["equivalent"] += 1
            continue
        assert_refused(game, state, seat, action, IllegalAction, "action/illegal")
        assert game.choice_effect(state, seat, action) == {}, action
        refused["illegal"] += 1
    for action in game.email_choices(state, seat):
        # the words of a choice: JSON data, nothing random drawn, the state untouched
        before = random.getstate()
        effect = game.choice_effect(state, seat, action)
        assert random.getstate() == before, f"choice_effect({action}) used global random"
        assert isinstance(effect, dict) and json.loads(json.dumps(effect)) == effect
        variants = getattr(game, "choice_variants", lambda *_: [])(state, seat, action)
        assert not variants or (action in variants and set(variants) <= set(legal))
    if hasattr(game, "command_order"):  # every legal action once, nothing else
        ordered = game.command_order(state, seat)
        assert sorted(map(strict_key, ordered)) == sorted(map(strict_key, legal))
    if hasattr(game, "ACTION_KINDS"):  # every kind of move the game says it has
        assert {a.kind for a in legal} <= set(game.ACTION_KINDS), legal


def random_plan_text(form: Mapping[str, Any], rng: random.Random) -> str:
    """A plan in the contract's notation (``PlanForm``): 1 to ``steps`` distinct places
    of the form, each with one of its numbers or ``rest`` where it takes the rest."""
    places = rng.sample(form["places"], rng.randint(1, min(form["steps"],
                                                            len(form["places"]))))
    return ", ".join(f"{p['at']} {rng.choice(p['counts'] + (['rest'] if p['rest'] else []))}"
                     for p in places)


def check_plans(spec: GameSpec, state: Any, seat: int, rng: random.Random,
                refused: Counter) -> None:
    """The ``Plans`` hook at a decision point, for ``seat`` (see the module docstring)."""
    game = spec.game
    form = game.plan_form(state, seat)
    assert form is not None and json.loads(json.dumps(form)) == form
    before = random.getstate()
    new, events = game.set_plan(state, seat, random_plan_text(form, rng))
    assert random.getstate() == before, "set_plan used global random"
    assert game.pending(new) == game.pending(state), "setting a plan opened or closed a decision"
    assert events and all(e.visible_to == (seat,) for e in events)
    check_events(events, len(state.players))
    spec.check_state(new)
    assert_json_round_trip(game, new)
    for other in (*(s for s in _seats(state) if s != seat), None):
        assert game.view(new, other) == game.view(state, other), "a plan shows to another"
    decision = game.pending(new)[0]
    played, _ = game.apply(new, decision.seat, game.default_action(new, decision.seat))
    spec.check_state(played)
    assert_json_round_trip(game, played)
    with pytest.raises(InvalidPlan) as bad:
        game.set_plan(state, seat, "no_such_place 1")
    assert bad.value.code == "plan/invalid"
    refused["plan"] += 1


def check_standing(spec: GameSpec, state: Any, seat: int, rng: random.Random,
                   refused: Counter) -> None:
    """The ``Standing`` hook at a decision point, for ``seat`` (see the module
    docstring)."""
    game = spec.game
    form = game.standing_form(state, seat)
    assert form is not None and json.loads(json.dumps(form)) == form
    assert all(c["options"][0] == STANDING_OFF and c["value"] in c["options"] for c in form)
    new = state
    for choice in form:
        before = random.getstate()
        new, events = game.set_standing(new, seat, choice["key"],
                                        rng.choice(choice["options"]))
        assert random.getstate() == before, "set_standing used global random"
        assert all(e.visible_to == (seat,) for e in events)
        check_events(events, len(state.players))
    assert game.pending(new) == game.pending(state), "a standing choice opened or closed a decision"
    spec.check_state(new)
    assert_json_round_trip(game, new)
    for other in (*(s for s in _seats(state) if s != seat), None):
        assert game.view(new, other) == game.view(state, other), "a choice shows to another"
    decision = game.pending(new)[0]
    played, _ = game.apply(new, decision.seat, game.default_action(new, decision.seat))
    spec.check_state(played)
    assert_json_round_trip(game, played)
    with pytest.raises(InvalidStanding) as bad:
        game.set_standing(state, seat, form[0]["key"], "no_such_value")
    assert bad.value.code == "standing/invalid"
    refused["standing"] += 1


def check_game_over(spec: GameSpec, state: Any, last_legal: Sequence[Action]) -> None:
    game = spec.game
    res = game.result(state)
    assert isinstance(res, Result)
    assert all(0 <= w < len(state.players) for w in res.winners)
    json.dumps(res.to_json())
    assert game.pending(state) == []
    for seat in (*_seats(state), -1):
        for action in (*last_legal[:3], Action.of("no_such_action")):
            assert_refused(game, state, seat, action, GameOver, "game/over")
    assert_json_round_trip(game, state)
    assert_views_hide_secrets(spec, state)
    spec.check_state(state)
    if hasattr(game, "set_plan"):
        for seat in _seats(state):
            assert game.plan_form(state, seat) is None
            with pytest.raises(PlanClosed):
                game.set_plan(state, seat, "")


def play_and_check(spec: GameSpec, players: int, seed: int, bot: str | Sequence[str], *,
                   sample: int = 3, max_decisions: int = 2000, checked: bool = True) -> Playout:
    """Play one game with bots (one name, or one per seat), checking every step.

    The bots and the choice among simultaneous decisions draw from one RNG, the checks
    from another, so ``checked=False`` plays exactly the same game, only faster.
    """
    game = spec.game
    bots = [spec.bots[bot]] * players if isinstance(bot, str) else [spec.bots[b] for b in bot]
    rng, check_rng = random.Random(seed), random.Random(f"checks {seed}")
    saved = random.getstate()
    try:
        random.seed(seed)
        state = game.setup([f"P{i + 1}" for i in range(players)], seed, None)
        assert random.getstate() == random.Random(seed).getstate(), "setup used global random"
        out = Playout(state, [], [])
        last_legal: list[Action] = []
        while game.result(state) is None and out.decisions < max_decisions:
            if checked:
                before = random.getstate()
                spec.check_state(state)
                assert_json_round_trip(game, state)
                assert_views_hide_secrets(spec, state)
                check_decision_point(spec, state, check_rng, sample, out.refused)
                assert random.getstate() == before, "the engine used global random"
            decisions = game.pending(state)
            decision = decisions[rng.randrange(len(decisions))]
            last_legal = game.legal_actions(state, decision.seat)
            action = bots[decision.seat](state, decision.seat, rng)
            assert action in last_legal, f"bot chose an unlisted action {action}"
            random.seed(out.decisions)  # the replay runs under other global seeds
            state, events = game.apply(state, decision.seat, action)
            out.actions.append((decision.seat, action))
            out.events.extend(events)
            out.decisions += 1
            out.kinds[decision.kind] += 1
            out.kinds[f"{decision.kind} x{len(decisions)}"] += 1
            out.event_kinds.update(ev.kind for ev in events)
        out.state = state
        out.finished = game.result(state) is not None
        if checked:
            if out.finished:
                check_game_over(spec, state, last_legal)
            else:
                assert game.pending(state), "no result but nothing pending"
            check_replay(spec, players, seed, out)
        return out
    finally:
        random.setstate(saved)


def check_replay(spec: GameSpec, players: int, seed: int, out: Playout) -> None:
    """Same seed, same actions, another global random seed: same state, same events."""
    game = spec.game
    random.seed(seed + 7919)
    state = game.setup([f"P{i + 1}" for i in range(players)], seed, None)
    events: list[Event] = []
    for i, (seat, action) in enumerate(out.actions):
        random.seed(-i - 1)
        state, new = game.apply(state, seat, Action.from_json(action.to_json()))
        events.extend(new)
    assert state == out.state
    assert game.to_json(state) == game.to_json(out.state)
    assert [e.to_json() for e in events] == [e.to_json() for e in out.events]


# --------------------------------------------------------------------------- Cavemen


def cavemen_check_state(state: cavemen.State) -> None:
    """Cavemen invariants beyond the engine's own ``check_invariants``."""
    cavemen.check_invariants(state)
    deck = state.deck
    for seat, tribe in enumerate(state.tribes):
        assert tribe.food >= 0 and tribe.teeth >= 0, tribe
        sc = cavemen.scores(state, seat)
        assert sc.cavemen <= sc.population, (tribe, sc)
        assert tribe.cards[0] == deck.starting[tribe.name][0], "the Leader is never lost"
    assert all(deck.card(c).type == "hunter" and deck.card(c).tribe for c in state.box)
    assert deck.fire_id not in state.discard and deck.fire_id not in state.box
    assert state.round >= 1
    over = state.phase == "over"
    assert over == (cavemen.result(state) is not None)
    if state.end == "fire":
        assert deck.fire_id in state.tribes[state.winner].cards
    elif not over and state.fire_locked:
        assert deck.fire_id in state.pool, "locked Fire must be in the pool"


def cavemen_illegal_actions(state: cavemen.State, seat: int) -> Iterator[Action]:
    """Actions a Cavemen seat must never be allowed: wrong bids, cards not in the pool,
    losses it may not take, wrong discards."""
    kind = next(d.kind for d in cavemen.pending(state) if d.seat == seat)
    deck, tribe = state.deck, state.tribes[seat]
    if kind == "bid":
        high, teeth = state.auction.high, tribe.teeth
        for amount in (high, teeth + 1, 0, -1, high + 100):
            yield Action.of("bid", amount=amount)
        yield Action.of("bid", amount=True)
        yield Action.of("bid", amount=float(teeth))
        yield Action.of("bid", amount=str(teeth))
        yield Action.of("bid")
        yield Action.of("pass", amount=0)
        yield Action.of("forage")
    elif kind == "act":
        elsewhere = [*state.draw[:3], *state.discard[-2:], *state.box, *tribe.cards[:2]]
        other = state.tribes[(seat + 1) % state.n].cards
        for card in [*elsewhere, *other[-1:], "NO-SUCH-CARD"]:
            yield Action.of("explore", card=card)
            yield Action.of("hunt", card=card)
            yield Action.of("invent", card=card)
            yield Action.of("recruit", card=card, pay="food")
            yield Action.of("recruit", card=card, pay="teeth")
        for card in state.pool:
            yield Action.of("recruit", card=card, pay="gold")
            yield Action.of("recruit", card=card, pay="food", replace=tribe.cards[0])
            yield Action.of("hunt", card=card)
            yield Action.of("invent", card=card)
            yield Action.of("explore", card=card)
        yield Action.of("invent", card=deck.fire_id)
        yield Action.of("pass")
    elif kind in ("starve", "casualty"):
        yield Action.of("lose", card=tribe.cards[0])  # the Leader
        yield Action.of("lose", card=deck.starting[tribe.name][2])  # the Home Cave
        for card in [*state.pool[:2], *state.draw[:1], "NO-SUCH-CARD"]:
            yield Action.of("lose", card=card)
        yield Action.of("lose")
    else:  # discard
        pool = state.pool
        keep = 3
        yield Action.of("discard", cards=pool[: len(pool) - keep - 1])
        yield Action.of("discard", cards=pool[: len(pool) - keep + 1])
        yield Action.of("discard", cards=pool)
        yield Action.of("discard", cards=())
        yield Action.of("discard", cards=(*pool[: len(pool) - keep - 1], state.draw[0]))
        if deck.fire_id in pool:
            rest = [c for c in pool if c != deck.fire_id]
            yield Action.of("discard", cards=(deck.fire_id, *rest[: len(pool) - keep - 1]))
        yield Action.of("discard", cards=(pool[0],) * (len(pool) - keep))


def cavemen_equivalent(state: cavemen.State, seat: int, action: Action) -> Action | None:
    """Cavemen accepts a discard's cards in any order (rules.py, ``_in_pool_order``):
    the listed spelling has them in pool order."""
    cards = action.get("cards")
    if (state.phase != "discard" or action.kind != "discard" or len(action.args) != 1
            or type(cards) is not tuple or len(set(cards)) != len(cards)
            or not all(isinstance(c, str) and c in state.pool for c in cards)):
        return None
    return Action.of("discard", cards=tuple(c for c in state.pool if c in cards))


def cavemen_hidden_orders(state: cavemen.State) -> list[Sequence[str]]:
    return [state.draw]


def cavemen_check_view(state: cavemen.State, seat: int | None, view: dict[str, Any],
                       tokens: list[str]) -> None:
    """Only a count of the draw pile; no face-down card named (Fire may be, it is public)."""
    assert view["draw_pile"] == len(state.draw)
    assert type(view["draw_pile"]) is int
    face_down = set(state.draw) - {state.deck.fire_id}
    shown = face_down.intersection(tokens)
    assert not shown, f"view for seat {seat} names face-down cards {sorted(shown)[:5]}"


CAVEMEN = GameSpec(
    game=cavemen,
    bots=CAVEMEN_BOTS,
    check_state=cavemen_check_state,
    illegal_actions=cavemen_illegal_actions,
    hidden_orders=cavemen_hidden_orders,
    check_view=cavemen_check_view,
    end_early=cavemen.abandon,
    equivalent=cavemen_equivalent,
)


# --------------------------------------------------------------------------- Stone Age


def stoneage_check_state(state: stoneage.State) -> None:
    """Stone Age invariants beyond the engine's own ``check_invariants``: every person in
    exactly one place, resources never negative, at most 3 tool tiles and 12 in all."""
    stoneage.check_invariants(state)
    for seat, board in enumerate(state.boards):
        placed = sum(s.count for s in state.spots if s.seat == seat)
        assert placed <= board.people, (seat, board, state.spots)
        assert min(board.res) >= 0 and board.food >= 0 and board.wild >= 0, board
        tiles = (*board.tools, *board.spent)
        assert len(tiles) <= 3 and sum(tiles) <= 12, board
        assert 0 <= board.agriculture <= 10 and 5 <= board.people <= 10, board
    counts: Counter = Counter(s.place for s in state.spots)
    for spot in state.spots:
        if spot.place.startswith(("card", "building")) or spot.place in ("toolmaker", "field"):
            assert spot.count == 1 and counts[spot.place] == 1, spot
        elif spot.place == "hut":
            assert spot.count == 2 and counts["hut"] == 1, spot
        elif spot.place != "hunt":
            on = [s for s in state.spots if s.place == spot.place]
            assert sum(s.count for s in on) <= 7, on
            assert len(on) <= {2: 1, 3: 2, 4: 4}[state.n], on
    if state.n < 4 and state.phase == "place":
        assert sum(1 for p in ("toolmaker", "hut", "field") if counts[p]) <= 2
    over = state.phase == "over"
    assert over == (stoneage.result(state) is not None)
    if over and state.end != "abandoned":
        assert state.winners


def stoneage_illegal_actions(state: stoneage.State, seat: int) -> Iterator[Action]:
    """Actions a Stone Age seat must never be allowed."""
    kind = next(d.kind for d in stoneage.pending(state) if d.seat == seat)
    board = state.boards[seat]
    home = board.people - sum(s.count for s in state.spots if s.seat == seat)
    if kind == "place":
        for place in ("hunt", "forest", "river", "toolmaker", "hut", "field", "card1",
                      "card4", "building1", f"building{state.n + 1}", "card5", "nowhere"):
            for count in (0, -1, home + 1, 8, 2 if place != "hut" else 1):
                yield Action.of("place", at=place, count=count)
        for spot in state.spots:
            yield Action.of("place", at=spot.place, count=1)
        yield Action.of("place", at="hunt")
        yield Action.of("use", at="hunt")
        yield Action.of("order", places=("hunt",))
    elif kind == "order":
        mine = tuple(s.place for s in state.spots if s.seat == seat)
        legal = {a.get("places") for a in stoneage.legal_actions(state, seat)}
        for place in ("hunt", "forest", "clay", "quarry", "river", "toolmaker", "hut",
                      "field", "card1", "card2", "building1", "nowhere"):
            if place not in mine:
                yield Action.of("order", places=(*mine, place))  # one more
                yield Action.of("order", places=(*mine[1:], place))  # one instead
        yield Action.of("order", places=mine[:-1])  # one missing
        yield Action.of("order", places=(*mine, mine[0]))  # one twice
        yield Action.of("order", places=(*mine[1:], mine[1]))
        for order in itertools.islice(itertools.permutations(mine), 200):
            if order not in legal:  # an order that can do no more than a listed one
                yield Action.of("order", places=order)
        yield Action.of("order", places=())
        yield Action.of("order")
        yield Action.of("use", at=mine[0])  # the kind this decision had before
        yield Action.of("decline")
    elif kind == "tools":
        owned = [f"t{v}" for v in board.tools] + list(board.one_time)
        for tool in ("t1", "t2", "t3", "t4", "t5", "S06", "S07", "S08", "G01"):
            if owned.count(tool) == 0:
                yield Action.of("tools", use=(tool,))
            yield Action.of("tools", use=(tool,) * (owned.count(tool) + 1))
        yield Action.of("tools", use=())
        yield Action.of("tools")
        for spent in board.spent:
            if f"t{spent}" not in owned:
                yield Action.of("tools", use=(f"t{spent}",))
    elif kind in ("card", "build", "feed"):
        verb = {"card": "take", "build": "build", "feed": "feed"}[kind]
        res = dict(zip(("wood", "brick", "stone", "gold"), board.res, strict=True))
        for name, have in res.items():
            yield Action.of(verb, pay=(name,) * (have + board.wild + 1))
        yield Action.of(verb, pay=("food",))
        yield Action.of(verb, pay=("iron",))
        yield Action.of(verb, pay=())
        yield Action.of(verb)
        if kind == "feed":
            yield Action.of("feed", pay=("wood",) * (board.short + 1))
            if board.short > 1:
                yield Action.of("feed", pay=("wood",) * (board.short - 1))
            yield Action.of("decline")
        else:
            yield Action.of("starve")
    else:  # pick
        for face in (0, 7, -1, *(f for f in range(1, 7) if f not in state.step.dice)):
            yield Action.of("pick", face=face)
        yield Action.of("pick", face="6")
        yield Action.of("pick")


def stoneage_equivalent(state: stoneage.State, seat: int, action: Action) -> Action | None:
    """Stone Age accepts payments and tools in any order (rules.py, ``_normalised``)."""
    if len(action.args) != 1 or type(action.args[0][1]) is not tuple:
        return None
    name, value = action.args[0]
    if not all(type(v) is str for v in value):
        return None
    order = ("wood", "brick", "stone", "gold")
    if name == "pay" and action.kind in ("take", "build", "feed") and set(value) <= set(order):
        return Action.of(action.kind, pay=tuple(sorted(value, key=order.index)))
    if name == "use" and action.kind == "tools":
        tiles = sorted((v for v in value if v.startswith("t") and v[1:].isdigit()),
                       key=lambda t: -int(t[1:]))
        rest = sorted(v for v in value if not (v.startswith("t") and v[1:].isdigit()))
        return Action.of("tools", use=(*tiles, *rest))
    return None


def stoneage_hidden_orders(state: stoneage.State) -> list[Sequence[str]]:
    return [state.pile, *(stack[1:] for stack in state.stacks)]


def stoneage_check_view(state: stoneage.State, seat: int | None, view: dict[str, Any],
                        tokens: list[str]) -> None:
    """Held civilization cards (and one-time tools) only in their owner's view until the
    end; the face-down pile and the tiles under the tops never named."""
    over = state.phase == "over"
    assert view["card_pile"] == len(state.pile) and type(view["card_pile"]) is int
    hidden = set(state.pile) | {t for stack in state.stacks for t in stack[1:]}
    for other, board in enumerate(state.boards):
        entry = view["boards"][other]
        assert entry["cards_held"] == len(board.cards)
        if over or other == seat:
            assert [c["id"] for c in entry["cards"]] == list(board.cards)
        else:
            assert "cards" not in entry and "one_time" not in entry and "final" not in entry
            hidden |= set(board.cards)
    shown = hidden.intersection(tokens)
    assert not shown, f"view for seat {seat} names hidden cards or tiles {sorted(shown)[:5]}"


STONEAGE = GameSpec(
    game=stoneage,
    bots=STONEAGE_BOTS,
    check_state=stoneage_check_state,
    illegal_actions=stoneage_illegal_actions,
    hidden_orders=stoneage_hidden_orders,
    check_view=stoneage_check_view,
    end_early=stoneage.abandon,
    equivalent=stoneage_equivalent,
)

SPECS = {"cavemen": CAVEMEN, "stoneage": STONEAGE}


def test_every_registered_game_has_a_spec_here() -> None:
    """The registry is the list of games; each one is checked by this suite."""
    assert set(SPECS) == set(listings())
    for name, listing in listings().items():
        assert SPECS[name].game is listing.game and name == listing.game.NAME
        assert listing.bots and set(listing.bots) <= set(listing.game.BOTS), "bot levels"
        listing.game.setup([f"p{i}" for i in range(listing.min_players)], 1,
                           dict(listing.options))  # the default options set a game up


GAME_PLAYERS = [(name, n) for name in sorted(SPECS)
                for n in range(SPECS[name].game.MIN_PLAYERS, SPECS[name].game.MAX_PLAYERS + 1)]

# --------------------------------------------------------------------------- tests

SEEDS = st.integers(min_value=0, max_value=2**63)
BOT_MIXES = {
    "random": lambda n: "random",
    "heuristic": lambda n: "heuristic",
    "mixed": lambda n: ["heuristic" if i % 2 else "random" for i in range(n)],
}


def conformance_settings(examples: int):
    """Fixed example seeds (derandomized: the suite is reproducible), no shrinking (a
    failing seed is reported as it is; shrinking replays whole games)."""
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    phases=(Phase.explicit, Phase.generate))


@pytest.mark.parametrize(("name", "players"), GAME_PLAYERS)
@conformance_settings(examples=4)
@given(seed=SEEDS)
def test_random_bot_playouts_conform(name: str, players: int, seed: int) -> None:
    out = play_and_check(SPECS[name], players, seed, "random", sample=2, max_decisions=400)
    assert out.decisions > 0


@pytest.mark.parametrize(("name", "players"), GAME_PLAYERS)
@conformance_settings(examples=3)
@given(seed=SEEDS)
def test_heuristic_bot_playouts_conform_and_finish(name: str, players: int,
                                                  seed: int) -> None:
    out = play_and_check(SPECS[name], players, seed, "heuristic", max_decisions=3000)
    assert out.finished, f"a heuristic game with seed {seed} did not finish"


@pytest.mark.parametrize(("name", "players"), GAME_PLAYERS)
@conformance_settings(examples=2)
@given(seed=SEEDS)
def test_mixed_bot_playouts_conform(name: str, players: int, seed: int) -> None:
    play_and_check(SPECS[name], players, seed, BOT_MIXES["mixed"](players),
                   max_decisions=1500)


def test_cavemen_playouts_reach_every_decision_kind_and_the_end() -> None:
    """The checks are only as good as what the playouts reach: the same drivers (bots,
    choice among simultaneous decisions) reach every Cavemen decision kind, simultaneous
    starvation choices, deck exhaustion, Fire set aside and locked, and the end."""
    kinds: Counter = Counter()
    event_kinds: Counter = Counter()
    finished = 0
    for players in (2, 3, 4, 5):
        for seed in range(6):
            mix = list(BOT_MIXES)[seed % 3]
            out = play_and_check(CAVEMEN, players, seed, BOT_MIXES[mix](players),
                                 max_decisions=400, checked=False)
            kinds.update(out.kinds)
            event_kinds.update(out.event_kinds)
            finished += out.finished
    assert {"bid", "act", "starve", "casualty", "discard"} <= set(kinds), kinds
    assert kinds["starve x2"] + kinds["starve x3"], "no simultaneous decisions reached"
    assert finished >= 12
    for kind in ("deck_exhausted", "fire_invented", "fire_set_aside", "fire_to_pool",
                 "fire_shuffled_back", "bid_placed", "conch_won", "conch_kept", "caveman_lost",
                 "tribe_starved", "beast_hunted", "caveman_recruited", "cave_explored",
                 "invention_made", "foraged", "income_gained", "pool_discarded"):
        assert event_kinds[kind], f"no playout produced {kind}"


def test_checked_playouts_refuse_many_unlisted_actions() -> None:
    out = play_and_check(CAVEMEN, 3, 77, "heuristic", sample=1)
    assert out.refused["illegal"] > 20 * out.decisions
    assert out.refused["not_your_turn"] >= 3 * out.decisions
    assert out.refused["equivalent"], "no reordered discard was tried"


def test_stoneage_playouts_reach_every_decision_kind_and_the_end() -> None:
    """The same drivers reach every Stone Age decision kind, simultaneous feeding, both
    end conditions' machinery, every top effect and the end."""
    kinds: Counter = Counter()
    event_kinds: Counter = Counter()
    finished = 0
    for players in (2, 3, 4):
        for seed in range(8):
            mix = list(BOT_MIXES)[seed % 3]
            out = play_and_check(STONEAGE, players, seed, BOT_MIXES[mix](players),
                                 max_decisions=3000, checked=False)
            kinds.update(out.kinds)
            event_kinds.update(out.event_kinds)
            finished += out.finished
    assert {"place", "order", "tools", "card", "build", "pick", "feed"} <= set(kinds), kinds
    assert kinds["feed x2"] + kinds["feed x3"] + kinds["feed x4"], "no simultaneous feeding"
    assert finished >= 16, finished
    for kind in ("people_placed", "placement_over", "dice_rolled",
                 "tools_added", "resources_gained", "tool_made", "person_born",
                 "agriculture_raised", "card_taken", "card_kept", "card_declined",
                 "card_unaffordable", "points_scored", "resources_of_choice",
                 "one_time_tool", "dice_for_all", "die_picked", "extra_card_drawn",
                 "building_built", "building_declined", "building_unaffordable", "harvest",
                 "people_fed", "food_short", "people_fed_with_resources", "people_starved",
                 "cards_refilled", "round_started", "game_ended", "nothing_gained"):
        assert event_kinds[kind], f"no playout produced {kind}"


def test_checked_stoneage_playouts_refuse_many_unlisted_actions() -> None:
    out = play_and_check(STONEAGE, 3, 77, "heuristic", sample=1)
    assert out.finished
    assert out.refused["illegal"] > 20 * out.decisions
    assert out.refused["not_your_turn"] >= 3 * out.decisions
    assert out.refused["equivalent"], "no reordered payment was tried"


@pytest.mark.parametrize(("name", "players"), GAME_PLAYERS)
def test_abandoned_games_conform(name: str, players: int) -> None:
    spec = SPECS[name]
    rng = random.Random(players)
    game = spec.game
    state = game.setup([f"P{i}" for i in range(players)], players, None)
    for _ in range(rng.randrange(5, 60)):
        seat = game.pending(state)[0].seat
        state, _ = game.apply(state, seat, spec.bots["random"](state, seat, rng))
    last = game.legal_actions(state, game.pending(state)[0].seat)
    state, events = spec.end_early(state)
    check_events(events, players)
    assert game.result(state).winners == ()
    check_game_over(spec, state, last)
    with pytest.raises(GameOver):
        spec.end_early(state)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_setup_refuses_player_counts_out_of_range(name: str) -> None:
    game = SPECS[name].game
    for n in (0, 1, game.MIN_PLAYERS - 1, game.MAX_PLAYERS + 1):
        if game.MIN_PLAYERS <= n <= game.MAX_PLAYERS:
            continue
        with pytest.raises(SetupError) as info:
            game.setup([f"P{i}" for i in range(n)], 1, None)
        assert info.value.code == "setup/invalid"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_engine_never_calls_module_level_random(name: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Belt and braces to the getstate() comparisons: the global functions explode."""
    def explode(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the engine used the global random module")

    for fn in ("random", "randint", "randrange", "choice", "choices", "shuffle", "sample",
               "uniform", "getrandbits", "seed"):
        monkeypatch.setattr(random, fn, explode)
    spec = SPECS[name]
    game = spec.game
    rng = random.Random(5)
    state = game.setup(["a", "b", "c"], 5, None)
    for _ in range(400):
        if game.result(state) is not None:
            break
        seat = game.pending(state)[0].seat
        state, _ = game.apply(state, seat, spec.bots["random"](state, seat, rng))
        game.view(state, seat)
    assert game.to_json(state)


REPLAY_SCRIPT = """
import json, sys
from engine.core import Action
from engine.registry import get_game
spec = json.load(open(sys.argv[1]))
game = get_game(spec["game"])
state = game.setup(spec["players"], spec["seed"], None)
for seat, action in spec["actions"]:
    state, _ = game.apply(state, seat, Action.from_json(action))
print(json.dumps(game.to_json(state), sort_keys=True))
"""


@pytest.mark.parametrize("name", sorted(SPECS))
def test_replay_is_identical_under_other_hash_seeds(name: str, tmp_path: Path) -> None:
    """Set iteration order of strings changes with PYTHONHASHSEED; results must not."""
    spec = SPECS[name]
    game = spec.game
    rng = random.Random(11)
    players = ["a", "b", "c", "d"]
    state = game.setup(players, 11, None)
    actions = []
    while game.result(state) is None and len(actions) < 400:
        seat = game.pending(state)[0].seat
        action = spec.bots["heuristic"](state, seat, rng)
        actions.append([seat, action.to_json()])
        state, _ = game.apply(state, seat, action)
    script = tmp_path / "replay.json"
    script.write_text(json.dumps({"game": name, "players": players, "seed": 11,
                                  "actions": actions}))
    expected = json.dumps(game.to_json(state), sort_keys=True)
    for hash_seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", REPLAY_SCRIPT, str(script)], env=env,
                              cwd=ROOT, capture_output=True, text=True, timeout=60,
                              check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == expected, f"PYTHONHASHSEED={hash_seed} differs"


def test_checker_catches_a_view_that_leaks_the_draw_order() -> None:
    """The checker itself must be able to fail."""
    leaky = GameSpec(**{**CAVEMEN.__dict__, "game": _LeakyCavemen()})
    state = cavemen.setup(["a", "b"], 3)
    with pytest.raises(AssertionError, match="hidden order|face-down"):
        assert_views_hide_secrets(leaky, state)


def test_checker_catches_an_engine_that_accepts_unlisted_actions() -> None:
    lax = GameSpec(**{**CAVEMEN.__dict__, "game": _LaxCavemen()})
    state = cavemen.setup(["a", "b"], 3)
    seat = cavemen.pending(state)[0].seat
    with pytest.raises(AssertionError, match="was allowed"):
        check_seat(lax, state, seat, random.Random(1), 1, Counter())


class _LeakyCavemen:
    def __getattr__(self, name: str) -> Any:
        return getattr(cavemen, name)

    def view(self, state: cavemen.State, seat: int | None) -> dict[str, Any]:
        return {**cavemen.view(state, seat), "peek": list(state.draw[:2])}


class _LaxCavemen:
    def __getattr__(self, name: str) -> Any:
        return getattr(cavemen, name)

    def apply(self, state: cavemen.State, seat: int, action: Action):
        legal = cavemen.legal_actions(state, seat)
        if action not in legal:
            return cavemen.apply(state, seat, legal[0])
        return cavemen.apply(state, seat, action)


@pytest.mark.slow
def test_stoneage_thousands_of_playouts_keep_the_invariants() -> None:
    """1,500 playouts (500 each at 2, 3 and 4 players; random, random-or-default and
    heuristic-against-random seats), up to 200 decisions each, with the cheap checks at
    every step: the invariants, the default among the legal actions, the chosen action
    applied; the JSON round trip and the views every 25 steps and at the end."""
    spec = STONEAGE
    game = spec.game
    finished = decisions = 0
    for players in (2, 3, 4):
        for seed in range(500):
            rng = random.Random(seed * 10 + players)
            style = seed % 3
            state = game.setup([f"P{i + 1}" for i in range(players)], seed, None)
            for step in range(200):
                if game.result(state) is not None:
                    break
                pending = game.pending(state)
                decision = pending[rng.randrange(len(pending))]
                legal = game.legal_actions(state, decision.seat)
                default = game.default_action(state, decision.seat)
                assert default in legal
                if style == 0:
                    action = rng.choice(legal)
                elif style == 1:
                    action = default if rng.random() < 0.5 else rng.choice(legal)
                else:
                    bot = "heuristic" if decision.seat % 2 else "random"
                    action = spec.bots[bot](state, decision.seat, rng)
                state, events = game.apply(state, decision.seat, action)
                check_events(events, players)
                spec.check_state(state)
                decisions += 1
                if step % 25 == 0:
                    assert_json_round_trip(game, state)
            assert_json_round_trip(game, state)
            assert_views_hide_secrets(spec, state)
            finished += game.result(state) is not None
    assert decisions > 1500 * 100
    assert finished >= 10, finished  # random play is long; the end is reached too
