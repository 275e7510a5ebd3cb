"""Small builders for Cavemen positions (the FEN idea).

A scenario test names only what matters (the tribes' cards, Food and Teeth, the pool, the
top of the draw pile, the discard pile, the phase, the conch holder) and the builder fills
in the rest: every deck card not placed explicitly goes to the draw pile (below the given
top cards), the discard pile, the pool or the box, in deck-file order, so every card is
in exactly one place and ``engine.cavemen.check_invariants`` passes.

    state = build(tribe("Wolf", "H01", food=9), tribe("Tiger"), pool=("B01", "C04"))

The builder never runs the engine's automatic steps: the state is exactly the position
described, and the first ``apply`` plays from there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.cavemen import check_invariants, load_deck
from engine.cavemen.deck import STANDARD_DECK, Deck
from engine.cavemen.rules import STANDARD, Auction, State, Tribe
from engine.core import Rng

FIRE = "FIRE"
DECK = load_deck()
REST_PLACES = ("draw", "discard", "pool", "box")

__all__ = ["DECK", "FIRE", "Auction", "TribeSpec", "build", "deck_of", "last_action",
           "last_pass", "tribe"]


@dataclass(frozen=True)
class TribeSpec:
    """A tribe to build: its name, the cards it holds beyond (or instead of) the starting
    three, Food and Teeth. ``hunter=False`` leaves the starting Hunter in the box."""

    name: str
    add: tuple[str, ...] = ()
    food: int = 5
    teeth: int = 3
    hunter: bool = True
    cards: tuple[str, ...] | None = None

    def tableau(self, deck: Deck) -> tuple[str, ...]:
        if self.cards is not None:
            return self.cards
        leader, hunter, cave = deck.starting[self.name]
        start = (leader, hunter, cave) if self.hunter else (leader, cave)
        return (*start, *self.add)


def tribe(name: str, *add: str, food: int = 5, teeth: int = 3, hunter: bool = True,
          cards: Sequence[str] | None = None) -> TribeSpec:
    """A tribe holding its Leader, starting Hunter and Home Cave, then ``add`` in order of
    acquisition. ``cards`` replaces the whole tableau (order = order acquired)."""
    return TribeSpec(name, tuple(add), food, teeth, hunter,
                     None if cards is None else tuple(cards))


def deck_of(deck_file: str) -> Deck:
    return load_deck(STANDARD_DECK if deck_file == STANDARD else deck_file)


def build(*tribes: TribeSpec, phase: str = "action", conch: int = 0, round: int = 2,
          acted: int = 0, auction: Auction | None = None, starving: Iterable[int] = (),
          hunter: int | None = None, pool: Iterable[str] = (), draw: Iterable[str] = (),
          discard: Iterable[str] = (), box: Iterable[str] = (), rest: str = "draw",
          fire_locked: bool = False, seed: int = 0, deck_file: str = STANDARD,
          players: Sequence[str] | None = None) -> State:
    """A Cavemen state with exactly these tribes (seat order) and card places.

    ``draw`` lists the top of the draw pile (top first), ``discard`` the discard pile
    (oldest first), ``pool`` the pool in order of entry. Every other card goes to
    ``rest`` (``draw``: under the given top cards; ``discard``/``pool``: after the given
    cards; ``box``: out of play, for positions where deck and discard must be empty).
    Starting cards of the tribes that no tableau holds go to the box. In the auction
    phase the default auction is the conch holder's turn with no bid.
    """
    if len(tribes) < 2:
        raise ValueError("a game needs at least two tribes")
    if rest not in REST_PLACES:
        raise ValueError(f"rest must be one of {REST_PLACES}")
    deck = deck_of(deck_file)
    tableaux = [spec.tableau(deck) for spec in tribes]
    places = {"draw": list(draw), "discard": list(discard), "pool": list(pool),
              "box": list(box)}
    placed = [c for t in tableaux for c in t] + [c for cs in places.values() for c in cs]
    _check_placed(deck, tribes, placed)
    starting = [c for spec in tribes for c in deck.starting[spec.name]]
    places["box"] += [c for c in starting if c not in placed]
    places[rest] += [c for c in deck.deck_ids if c not in placed]
    if phase == "auction" and auction is None:
        auction = Auction(turn=conch)
    state = State(
        players=tuple(players or (f"p{i}" for i in range(len(tribes)))),
        deck_file=deck_file, deck_digest=deck.digest,
        tribes=tuple(Tribe(spec.name, t, spec.food, spec.teeth)
                     for spec, t in zip(tribes, tableaux, strict=True)),
        draw=tuple(places["draw"]), discard=tuple(places["discard"]),
        pool=tuple(places["pool"]), box=tuple(places["box"]), fire_locked=fire_locked,
        conch=conch, round=round, phase=phase, auction=auction, starving=tuple(starving),
        acted=acted, hunter=hunter, rng=Rng(seed),
    )
    check_invariants(state)
    return state


def _check_placed(deck: Deck, tribes: Sequence[TribeSpec], placed: list[str]) -> None:
    twice = sorted({c for c in placed if placed.count(c) > 1})
    if twice:
        raise ValueError(f"cards placed twice: {twice}")
    unknown = sorted(c for c in placed if c not in deck.cards)
    if unknown:
        raise ValueError(f"unknown cards: {unknown}")
    for spec in tribes:
        leader, _, cave = deck.starting[spec.name]
        held = spec.tableau(deck)
        if leader not in held or cave not in held:
            raise ValueError(f"tribe {spec.name} must keep its Leader and Home Cave")


def last_pass(*tribes: TribeSpec, conch: int = 0, **kw) -> State:
    """The auction with nobody bidding and one pass to go: the seat to the right of the
    conch holder passes next, and then the feed phase runs."""
    n = len(tribes)
    return build(*tribes, phase="auction", conch=conch,
                 auction=Auction(turn=(conch - 1) % n, passes=n - 1), **kw)


def last_action(*tribes: TribeSpec, conch: int = 0, **kw) -> State:
    """The action phase at the conch holder's second (last) action of the round."""
    return build(*tribes, phase="action", conch=conch, acted=len(tribes), **kw)
