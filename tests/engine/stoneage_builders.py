"""Small builders for Stone Age positions (the FEN idea).

A scenario test names only what matters (a player's people, Food, resources, tools and
cards, the open cards, the top of the card pile, the building stacks, who stands where,
the phase) and the builder fills in the rest so that ``engine.stoneage.check_invariants``
passes: every civilization card not placed explicitly goes to the pile (under the given
top cards) or, with ``rest=SEAT``, to that seat's cards (for positions with a short
pile); building tiles not placed explicitly fill the stacks left unspecified, and the
remaining tiles are out of the game (as with fewer than four players).

    state = build(board(wood=2, brick=1), board(), civ=("G07", "G13"),
                  spots=[("card1", 0, 1)], phase="use", turn=0)

The builder never runs the engine's automatic steps: the state is exactly the position
described, and the first ``apply`` plays from there. The dice are fixed with
:func:`rolling`: ``build(..., rng=rolling((6, 5, 4)))`` makes the next roll 6, 5, 4.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache

from engine.core import Rng
from engine.stoneage import Board, Spot, State, Step, check_invariants, data

DATA = data()
CARD_IDS = DATA.card_ids
BUILDING_IDS = DATA.building_ids
SEARCH = 100_000

__all__ = ["BUILDING_IDS", "CARD_IDS", "DATA", "Spot", "Step", "board", "build",
           "last_use", "rolling"]


def board(people: int = 5, food: int = 12, wood: int = 0, brick: int = 0, stone: int = 0,
          gold: int = 0, wild: int = 0, agriculture: int = 0, tools: Iterable[int] = (),
          spent: Iterable[int] = (), one_time: Iterable[str] = (), cards: Iterable[str] = (),
          buildings: Iterable[str] = (), score: int = 0, short: int = 0) -> Board:
    """A board: the starting one (5 people, 12 Food) unless told otherwise. ``tools`` are
    unused tool tiles (values), ``spent`` tiles used this round, ``one_time`` one-time
    tool cards (added to ``cards`` when not listed there), ``wild`` resources of choice
    (G02), ``short`` people still unfed while a feed decision is open."""
    one_time, cards = tuple(one_time), tuple(cards)
    return Board(people, food, (wood, brick, stone, gold), wild, agriculture,
                 tuple(sorted(tools, reverse=True)), tuple(sorted(spent, reverse=True)),
                 one_time, (*cards, *(c for c in one_time if c not in cards)),
                 tuple(buildings), score, short)


def _spot(value: Spot | Sequence) -> Spot:
    return value if isinstance(value, Spot) else Spot(*value)


def build(*boards: Board, civ: Sequence[str | None] | None = None,
          pile: Iterable[str] = (), rest: str | int = "pile",
          stacks: Sequence[Sequence[str] | int | None] | None = None,
          spots: Iterable[Spot | Sequence] = (), phase: str = "place", start: int = 0,
          turn: int | None = None, step: Step | None = None, round: int = 2,
          feeding: Iterable[int] = (), home: Iterable[int] = (), rng: Rng | int = 0,
          players: Sequence[str] | None = None) -> State:
    """A Stone Age state with exactly these boards (seat order).

    ``civ`` lists the open cards, cost 1 first (None = an empty space); fewer than four
    are completed with unplaced cards in data-file order. ``pile`` is the top of the
    card pile; every other card goes under it (``rest="pile"``) or to the cards of seat
    ``rest``. ``stacks`` gives one entry per player: the tiles of that stack (top first),
    or an int (that many unplaced tiles), or None (seven unplaced tiles); without
    ``stacks`` every player has a full stack of seven. ``spots`` are (place, seat,
    count) in order of placement. ``turn`` defaults to the start player, ``round`` to 2.
    ``rng`` is an Rng or a seed (see :func:`rolling`).
    """
    n = len(boards)
    if not 2 <= n <= 4:
        raise ValueError("Stone Age is for 2 to 4 players")
    held = [c for b in boards for c in b.cards]
    civ = list(civ) if civ is not None else []
    if len(civ) > 4:
        raise ValueError("at most four open cards")
    pile = list(pile)
    placed = held + [c for c in civ if c is not None] + pile
    _check_unique("cards", placed, CARD_IDS)
    free = [c for c in CARD_IDS if c not in placed]
    while len(civ) < 4:
        civ.append(free.pop(0))
    extra: dict[int, list[str]] = {}
    if rest == "pile":
        pile += free
    elif isinstance(rest, int) and 0 <= rest < n:
        extra[rest] = free
    else:
        raise ValueError(f"rest must be 'pile' or a seat, not {rest!r}")

    tiles_held = [t for b in boards for t in b.buildings]
    given = [] if stacks is None else [s for s in stacks if isinstance(s, Sequence)]
    _check_unique("building tiles", tiles_held + [t for s in given for t in s], BUILDING_IDS)
    unused = [t for t in BUILDING_IDS if t not in tiles_held and
              all(t not in s for s in given)]
    if stacks is None:
        stacks = [None] * n
    if len(stacks) != n:
        raise ValueError("one building stack per player")
    built = []
    for s in stacks:
        if isinstance(s, Sequence):
            built.append(tuple(s))
            continue
        size = 7 if s is None else s
        if size > len(unused):
            raise ValueError("not enough building tiles left")
        built.append(tuple(unused[:size]))
        unused = unused[size:]

    state = State(
        players=tuple(players or (f"p{i}" for i in range(n))), data=DATA.digest,
        boards=tuple(b._replace(cards=(*b.cards, *extra.get(i, ())))
                     for i, b in enumerate(boards)),
        spots=tuple(_spot(s) for s in spots), civ=tuple(civ), pile=tuple(pile),
        stacks=tuple(built), start=start, round=round, phase=phase,
        turn=start if turn is None else turn, step=step, feeding=tuple(feeding),
        home=tuple(home), rng=rng if isinstance(rng, Rng) else Rng(rng))
    check_invariants(state)
    return state


def last_use(*boards: Board, place: str = "toolmaker", count: int = 1, start: int = 0,
             **kw) -> State:
    """The use phase with one placement left: the seat before the start player (the
    last to use) resolves ``place``; after it the round is fed. The default tool maker
    only adds a tool tile, which changes nothing in feeding."""
    seat = (start - 1) % len(boards)
    return build(*boards, phase="use", start=start, turn=seat,
                 spots=[(place, seat, count)], **kw)


def _check_unique(what: str, placed: list[str], known: Sequence[str]) -> None:
    twice = sorted({c for c in placed if placed.count(c) > 1})
    if twice:
        raise ValueError(f"{what} placed twice: {twice}")
    unknown = sorted(set(placed) - set(known))
    if unknown:
        raise ValueError(f"unknown {what}: {unknown}")


@cache
def rolling(*rolls: tuple[int, ...]) -> Rng:
    """An Rng whose next rolls give exactly these faces, one tuple per roll (a roll of
    N dice for a place with N people, 2 for a "2 dice" card, one per player for "dice
    for all"): ``rolling((6, 5, 4))`` or ``rolling((6, 6), (1, 2, 3))``."""
    if not rolls:
        raise ValueError("name at least one roll")
    for seed in range(SEARCH + 1):
        rng = Rng(seed)
        for faces in rolls:
            got, rng = rng.dice(len(faces))
            if got != tuple(faces):
                break
        else:
            return Rng(seed)
    raise ValueError(f"no seed up to {SEARCH} rolls {rolls}")
