"""Stone Age as a pure engine (see docs/games/stoneage.md).

Module order: constants, state types, the contract functions (setup, pending,
legal_actions, apply, default_action, view, result, JSON), the round machine
(``_advance``), then helpers. Components come from the data file (``data.py``).

Decisions (kinds), their actions, and what a timeout plays:
- ``place``: ``place at=PLACE count=N`` (PLACE: hunt, forest, clay, quarry, river,
  toolmaker, hut, field, card1..card4, building1..building4). Timeout: a part of the
  people at home, as a player placing one group a turn would: if the coming feeding
  lacks Food and the seat does not hunt yet, the fewest hunters whose average catch
  covers it; else half of the people at home (rounded up, as many as fit) on the first
  open place of the Hunting grounds, Forest, Clay pit, Quarry, River; else the first
  legal place the seat can pay for (the first legal place if none).
- ``order``: what to resolve next in the use turn (the rules: "Die Reihenfolge des
  Handelns darf der Spieler frei wählen"; village places are resolved first, at the
  start of the turn, as doing them first can never take anything away). Actions: ``use
  at=PLACE``, resolve that placement next and be asked again after it (after its roll,
  its payment) where the order of the rest can still matter; or ``order places=(P1,
  P2, ...)``, a whole order, played out without asking again, stopping only for the
  follow-up decisions (tools, card, build, pick). Every order is legal: every ``use``,
  and every whole order of up to ORDERS_LISTED placements (more: the suggested one,
  the rest one ``use`` at a time). Asked only when the order can change what the seat
  may do or know (``order_matters``: some two of its placements depend on each other,
  ``_depends``: one brings what the other pays with or a tool for its dice, or one
  shows dice or a card before the other asks something); else the placements are
  resolved in the sensible order without asking. Timeout, and the first choice: the
  sensible order (``sensible_order``, a suggestion): a tool card the seat can pay now
  before the rolls, the rolls with the most valuable resource first, then cards that
  bring resources, buildings, the other cards. The standing choice ``order``
  (``sensible``) plays it without asking.
- ``tools``: after a roll, ``tools use=(t2, t1, S07, ...)`` (tiles by value, one-time
  tools by card) or ``no_tools``; asked only when some unused tool would raise the
  yield. Timeout: the tools of least total value that reach the highest yield (on a tie,
  permanent tiles before one-time tools, then the fewest).
- ``card``: ``take pay=(wood, ...)`` (the card's position cost in any building
  resources) or ``decline``; asked only when the seat can pay. Timeout: take, paying the
  least valuable resources.
- ``build``: ``build pay=(...)`` (exactly the cost; variable tiles: the resources paid)
  or ``decline``; asked only when the seat can pay. Timeout: build, paying the
  combination worth the most points.
- ``pick``: ``pick face=N``, a die of "dice for all" (1 Wood, 2 Brick, 3 Stone, 4 Gold,
  5 a tool step, 6 agriculture), asked of each player in turn from the taker; asked only
  while the remaining dice differ. Timeout: agriculture, tool step, Gold, Stone, Brick,
  Wood, the first of these that still helps.
- ``feed``: ``feed pay=(...)``, resources paying the people Food did not cover, or
  ``starve`` (lose 10 points); asked only when Food is short and the resources could pay
  all of the rest (several seats at once). Timeout: pay with the least valuable.

Readings of the rules (marked "Reading" where they are applied):
- G02's two resources of choice are held as "resources of choice" (``wild``) and named
  when spent: any payment or feeding may use them for any missing resource; at the end
  each one still held scores 1 point like a resource.
- Food short and resources not enough for all of the rest: nothing more is paid, the
  10 points are lost, the resources are kept.
- A tool step when the seat has three tiles raises a lowest tile, an unused one first.
- A placement that cannot be resolved (a card or building the seat cannot pay) is
  resolved automatically as declined, and narrated.

Standing plans (the ``Plans`` hook: ``plan_form``, ``set_plan``; docs/games/stoneage.md):
a seat may leave a list of up to PLAN_STEPS placements (``forest 2, hut, hunt rest``;
``rest``: every person still at home, on a resource place), kept in ``State.plans``.
On each of its placement turns (``_next_placer``, inside the move before) the engine
places the first step from ``Plan.next`` on that can be followed now, exactly as named
(``_follow_plan``; event ``people_placed`` with ``plan``), passing the steps before it
for the round; a step cannot be followed when the place is not open to the seat, does
not take that number now, or is a card or building the seat cannot pay for now. When
no step left can be followed, the plan is dropped (``plan_dropped``, visible to the seat
only, with each step tried and why) and the ``place`` decision opens. The plan stands
until changed, cleared or dropped; each round its list starts again (``next`` = 0).
Ruling: when a whole round goes by inside one move with nobody asked anything, every
plan is dropped as the next round begins (``_drop_plans``): a game never plays itself.
Setting or clearing one plays nothing and opens no decision.

Ruling (placement where it brings nothing): a seat may put people on the Hut with 10
people, on the Field at agriculture 10 and on the Tool maker with three tools of 4. The
manual's placement rules ("Für das Einsetzen der Personen gelten folgende Regeln") limit
only how many people and colours a place takes; the limits of 10 people, agriculture 10
and three 4-tools are stated with what a place gives ("Ein Spieler kann insgesamt über
maximal zehn Personen verfügen"), not with who may stand there. Such people gain nothing
(``nothing_gained``, ``why`` ``cap``) and keep the place from the others for the round
(with 2 or 3 players also one of the two village places that may be used). The choice
says so (``choice_effect`` gives ``gain`` ``nothing``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import combinations, combinations_with_replacement, permutations
from typing import Any, NamedTuple

from engine.core import (
    PLAN_DROPPED,
    STANDING_OFF,
    Action,
    CardData,
    Decision,
    Effect,
    EngineError,
    Event,
    Explanation,
    GameOver,
    IllegalAction,
    InvalidPlan,
    InvalidStanding,
    JSONObject,
    LegalMemo,
    NotYourTurn,
    PlanClosed,
    PlanForm,
    Result,
    Rng,
    SetupError,
    StandingChoice,
    StateCorrupt,
    View,
)
from engine.stoneage.data import (
    BOARD,
    CARD_SLOTS,
    PAYABLE,
    RESOURCE_VALUE,
    Building,
    Data,
    DataError,
    load_data,
)

NAME = "stoneage"
TITLE = "Stone Age"  # the name in email subjects (a proper name, not translated)
ROUND_EVENT = "round_started"  # begins each round (data: its number); the log groups by it
MIN_PLAYERS, MAX_PLAYERS = 2, 4
START_PEOPLE, MAX_PEOPLE, START_FOOD = 5, 10, 12
MAX_AGRICULTURE, MAX_TILES, MAX_TILE_VALUE = 10, 3, 4
STACK_SIZE, STACKS = 7, 4
YIELD = {p: r for p, (kind, _, r) in BOARD.items() if kind == "resource" and r}
RESOURCE_PLACES = tuple(YIELD)
VILLAGE = tuple(p for p, (kind, _, _) in BOARD.items() if kind == "village")
VILLAGE_GAIN = {"hut": "people", "field": "agriculture", "toolmaker": "tool"}
CAPACITY = BOARD["forest"][1]  # each resource place but the unlimited Hunting grounds
COLOURS = {2: 1, 3: 2, 4: 4}  # players -> colours allowed on forest, clay, quarry, river
STARVE_POINTS = 10
FACES = {1: "wood", 2: "brick", 3: "stone", 4: "gold", 5: "tool", 6: "agriculture"}
PHASES = ("place", "use", "feed", "over")

DECLINE = Action.of("decline")
NO_TOOLS = Action.of("no_tools")
STARVE = Action.of("starve")


# --------------------------------------------------------------------------- state


class Board(NamedTuple):
    """A player's board. ``res`` counts wood, brick, stone, gold; ``tools`` are unused
    tiles and ``spent`` tiles used this round (values); ``one_time`` the unused one-time
    tool cards; ``cards`` the civilization cards held (hidden from the others)."""

    people: int = START_PEOPLE
    food: int = START_FOOD
    res: tuple[int, int, int, int] = (0, 0, 0, 0)
    wild: int = 0
    agriculture: int = 0
    tools: tuple[int, ...] = ()
    spent: tuple[int, ...] = ()
    one_time: tuple[str, ...] = ()
    cards: tuple[str, ...] = ()
    buildings: tuple[str, ...] = ()
    score: int = 0
    short: int = 0  # people still unfed while a feed decision is open


class Spot(NamedTuple):
    """People of one seat on one place."""

    place: str
    seat: int
    count: int  # type: ignore[assignment]  # shadows tuple.count, which nothing here uses


class Step(NamedTuple):
    """A decision inside the use phase: ``tools`` after a roll (``dice``), ``card`` or
    ``build`` payment, or ``pick`` of "dice for all" (``dice`` = the dice left)."""

    kind: str
    seat: int
    place: str
    resource: str | None = None
    dice: tuple[int, ...] = ()
    taker: int | None = None


class Plan(NamedTuple):
    """A seat's standing plan for its placements: ``steps`` (place, count; REST: all the
    people still at home) in the order to try them, and ``next``, the first step not yet
    tried this round (see "Standing plans" in the module docstring)."""

    steps: tuple[tuple[str, int], ...]
    next: int = 0


class State(NamedTuple):
    """The whole game as an immutable value."""

    players: tuple[str, ...]
    data: str  # the component file's digest
    boards: tuple[Board, ...]
    spots: tuple[Spot, ...]  # in order of placement
    civ: tuple[str | None, ...]  # the open cards, cost 1 first
    pile: tuple[str, ...]  # civilization cards face down, top first
    stacks: tuple[tuple[str, ...], ...]  # building stacks, top first
    start: int
    round: int
    phase: str
    turn: int
    step: Step | None
    feeding: tuple[int, ...]
    home: tuple[int, ...]  # seats told this round that they have no place left
    rng: Rng
    winners: tuple[int, ...] = ()
    end: str | None = None  # buildings | cards | abandoned
    order: tuple[str, ...] = ()  # the use turn's placements still to resolve, in order
    plans: tuple[Plan | None, ...] = ()  # each seat's standing plan or None; () when none has one
    standing: tuple[tuple[tuple[str, str], ...], ...] = ()  # each seat's standing choices
    # that are on, as (key, value) pairs by key; () when no seat has one

    @property
    def n(self) -> int:
        return len(self.players)


# The standard components, read on first use. Safe under threads: ``load_data`` reads
# the same file to equal immutable values every time, and one assignment of the module
# name is atomic, so two threads that both find None each load it and one wins.
_DATA: Data | None = None


def data() -> Data:
    """The standard components (loaded once)."""
    global _DATA
    if _DATA is None:
        _DATA = load_data()
    return _DATA


# --------------------------------------------------------------------------- contract


def setup(players: Sequence[str], seed: int, options: Mapping[str, Any] | None = None) -> State:
    """A new game: boards in seat order, one stack of 7 buildings per player, 4 open
    cards, a random start player; round 1 begins with the start player's placement."""
    return setup_with_events(players, seed, options)[0]


def setup_with_events(players: Sequence[str], seed: int,
                      options: Mapping[str, Any] | None = None) -> tuple[State, list[Event]]:
    if options:
        raise SetupError(f"Stone Age takes no options, not {sorted(options)}")
    players = tuple(players)
    if not MIN_PLAYERS <= len(players) <= MAX_PLAYERS:
        raise SetupError(f"Stone Age is for {MIN_PLAYERS} to {MAX_PLAYERS} players, "
                         f"not {len(players)}", players=len(players))
    try:
        d = data()
    except DataError as exc:
        raise SetupError(exc.message) from None
    n = len(players)
    rng = Rng(seed)
    tiles, rng = rng.shuffled(d.building_ids)
    cards, rng = rng.shuffled(d.card_ids)
    start, rng = rng.randint(0, n - 1)
    stacks = tuple(tiles[i * STACK_SIZE:(i + 1) * STACK_SIZE] for i in range(n))
    state = State(players, d.digest, tuple(Board() for _ in players), (),
                  cards[:CARD_SLOTS], cards[CARD_SLOTS:], stacks, start, 1, "place", start,
                  None, (), (), rng)
    events = [Event("game_started", None, {"players": n, "start": start,
                                           "stacks": len(stacks)})]
    events.append(Event(ROUND_EVENT, None, {"round": 1, "start": start}))
    return _next_placer(state, start, events), events


def pending(state: State) -> list[Decision]:
    """The open decisions; empty only when the game is over."""
    phase = state.phase
    if phase == "place":
        home = at_home(state, state.turn)
        return [Decision(state.turn, "place", (("home", home),))]
    if phase == "use":
        step = state.step
        if step is None:
            places = tuple(s.place for s in _spots_of(state, state.turn))
            return [Decision(state.turn, "order", (("places", places),))]
        if step.kind == "tools":
            return [Decision(step.seat, "tools", (("place", step.place),
                                                  ("resource", step.resource),
                                                  ("dice", step.dice)))]
        if step.kind == "pick":
            return [Decision(step.seat, "pick", (("dice", step.dice),))]
        return [Decision(step.seat, step.kind, (("place", step.place),))]
    if phase == "feed":
        return [Decision(s, "feed", (("short", state.boards[s].short),))
                for s in state.feeding]
    return []


def decision_kind(state: State, seat: int) -> str:
    for d in pending(state):
        if d.seat == seat:
            return d.kind
    if state.phase == "over":
        raise GameOver("the game is over")
    raise NotYourTurn(f"seat {seat} has no decision to make now", seat=seat)


def legal_actions(state: State, seat: int) -> list[Action]:
    """Every action ``seat`` may take now (the only actions ``apply`` accepts)."""
    return list(_legal(state, seat))


# This thread's last listing: a bot lists the actions, then ``apply`` checks its choice
# against that very list (engine.core.LegalMemo: per thread, safe under threads).
_LISTED = LegalMemo()


def _legal(state: State, seat: int) -> tuple[Action, ...]:
    """``legal_actions`` as a tuple, listed once for this thread's last state and seat."""
    return _LISTED.listed(state, seat,
                          lambda: _legal_actions(state, seat, decision_kind(state, seat)))


def _legal_actions(state: State, seat: int, kind: str) -> list[Action]:
    if kind == "place":
        return _place_actions(state, seat)
    if kind == "order":
        return _order_actions(state, seat)
    board = state.boards[seat]
    if kind == "tools":
        return [NO_TOOLS, *(Action("tools", (("use", combo),))
                            for combo in _tool_sets(board))]
    if kind == "card":
        cost = _slot(open_step(state).place) + 1
        return [*(Action("take", (("pay", p),)) for p in payments_of_size(board, cost)),
                DECLINE]
    if kind == "build":
        tile = data().buildings[state.stacks[_slot(open_step(state).place)][0]]
        return [*(Action("build", (("pay", p),)) for p in building_payments(board, tile)),
                DECLINE]
    if kind == "pick":
        return [Action("pick", (("face", f),)) for f in sorted(set(open_step(state).dice))]
    # feed
    return [*(Action("feed", (("pay", p),)) for p in payments_of_size(board, board.short)),
            STARVE]


def apply(state: State, seat: int, action: Action) -> tuple[State, list[Event]]:
    """Play ``action`` for ``seat`` and everything automatic after it."""
    if state.phase == "over":
        raise GameOver("the game is over")
    kind = decision_kind(state, seat)
    action = _normalised(action)
    if not _well_typed(action) or action not in _legal(state, seat):
        raise IllegalAction(f"{action} is not a legal {kind} action now", seat=seat,
                            action=action.to_json(), decision=kind)
    events: list[Event] = []
    if kind == "place":
        state = _place(state, seat, action.get("at"), action.get("count"), events)
    elif kind == "order":  # a whole order, or (``use``) only the placement to use next
        state = state._replace(order=action.get("places") or (action.get("at"),))
    elif kind == "tools":
        state = _finish_roll(state, seat, action.get("use", ()), events)
    elif kind == "card":
        state = _take_card(state, seat, action, events)
    elif kind == "build":
        state = _build(state, seat, action, events)
    elif kind == "pick":
        state = _pick(state, seat, action.get("face"), events)
    else:
        state = _feed(state, seat, action, events)
    return _advance(state, events), events


def default_action(state: State, seat: int) -> Action:
    """What a timeout plays (see the module docstring); always legal."""
    kind = decision_kind(state, seat)
    legal = legal_actions(state, seat)
    board = state.boards[seat]
    if kind == "place":
        return _default_place(state, seat, legal)
    if kind == "order":
        return Action("order", (("places", sensible_order(state, seat)),))
    if kind == "tools":
        return _best_tools(state, legal)
    if kind in ("card", "feed"):
        return min(legal[:-1], key=pay_value)
    if kind == "build":
        return max(legal[:-1], key=pay_value)
    faces = [a.get("face") for a in legal]
    for face in (6, 5, 4, 3, 2, 1):
        if face in faces and _face_helps(board, face):
            return Action("pick", (("face", face),))
    return legal[0]


EMAIL_PAYMENTS = 4  # payment choices an email offers as links; the rest on the game page


def email_choices(state: State, seat: int) -> list[Action]:
    """The choices an email offers as one-click links (the game page has them all): every
    legal placement (each place with each number of people it takes now, fewest first:
    the email shows a place as one row of count links), the sensible order of the use
    phase and each placement to use next (with two left: the two whole orders), no tools
    or the timeout's tools, the dice-for-all pick, and leaving a card or building (or
    losing 10 points) beside the first few ways to pay (cheapest first; for a building,
    the most points first)."""
    kind = decision_kind(state, seat)
    legal = legal_actions(state, seat)
    if kind == "place":
        return legal
    if kind == "tools":
        best = default_action(state, seat)
        return [NO_TOOLS] if best == NO_TOOLS else [best, NO_TOOLS]
    if kind in ("card", "build", "feed"):
        payments = sorted(legal[:-1], key=pay_value, reverse=kind == "build")
        return [*payments[:EMAIL_PAYMENTS], legal[-1]]
    if kind == "order":  # the sensible order, then each placement to use next
        if len(legal[0].get("places")) == 2:  # with two, "use X next" is a whole order
            return [legal[0], legal[-1]]
        return [a for a in legal if a.kind == "use" or a == legal[0]]
    return legal


def _inversions(order: Sequence[str], model: Sequence[str]) -> int:
    """How many pairs of ``order`` come the other way round in ``model``."""
    pos = {p: i for i, p in enumerate(model)}
    ranks = [pos.get(p, len(pos)) for p in order]
    return sum(1 for i, a in enumerate(ranks) for b in ranks[i + 1:] if a > b)


def choice_variants(state: State, seat: int, action: Action) -> list[Action]:
    """The legal actions the confirmation page of a one-click link for ``action`` lets
    the player pick from instead (``action`` among them): for a placement on a place that
    takes several numbers of people now, each of those numbers, fewest first. Empty when
    there is nothing to choose (or ``action`` is not legal now)."""
    action = _normalised(action)
    if action.kind != "place" or not _is_legal(state, seat, action):
        return []
    at = action.get("at")
    same = [a for a in legal_actions(state, seat) if a.get("at") == at]
    return same if len(same) > 1 else []


def choice_effect(state: State, seat: int, action: Action) -> Effect:
    """What ``action`` costs and brings ``seat`` now, for the words of a choice (JSON
    values only; nothing hidden: a roll still to come is given as its average):

    - ``place`` on a resource place: ``dice`` and ``resource``, ``per`` pips for one, and
      ``about`` (the average yield without tools); on the hut, field or tool maker:
      ``gain`` (``people``/``agriculture``/``tool`` +1, or ``nothing`` for a seat already
      at that limit: see the ruling in the module docstring); on a card or building: its
      ``card`` / ``building`` id, ``cost`` (a card's number of resources), and
      ``affordable`` (false when the seat cannot pay for it with what it has now;
      ``have``: its resources, counting resources of choice);
    - ``tools``: ``total`` of the roll with them and the ``yield`` it gives;
    - ``take``: the card's ``card`` id; ``build``: ``points``; ``pick``: nothing more;
      ``starve``: ``points`` -10.
    An action that is not legal now gives ``{}``."""
    action = _normalised(action)
    if not _is_legal(state, seat, action):
        return {}
    kind = action.kind
    if kind in ("place", "use"):
        at = action.get("at")
        count = action.get("count") if kind == "place" else next(
            s.count for s in _spots_of(state, seat) if s.place == at)
        resource = YIELD.get(at)
        if resource is not None:
            return {"dice": count, "resource": resource, "per": RESOURCE_VALUE[resource],
                    "about": _average_yield(count, resource)}
        if at in VILLAGE_GAIN:
            board = state.boards[seat]
            return {"gain": "nothing" if _at_limit(board, at) else VILLAGE_GAIN[at]}
        return _claim_effect(state, seat, at)
    step = state.step
    if kind in ("tools", "no_tools") and step is not None and step.resource:
        total = sum(step.dice) + sum(_tool_value(t) for t in action.get("use", ()))
        return {"total": total, "resource": step.resource,
                "yield": total // RESOURCE_VALUE[step.resource]}
    if kind == "take" and step is not None:
        return {"card": state.civ[_slot(step.place)]}
    if kind == "build" and step is not None:
        tile = data().buildings[state.stacks[_slot(step.place)][0]]
        pay = action.get("pay", ())
        return {"points": tile.points if tile.points is not None else
                sum(RESOURCE_VALUE[r] for r in pay)}
    if kind == "starve":
        return {"points": -10}
    return {}


def explain(state: State, seat: int, text: str) -> Explanation:
    """Why the command ``text`` is not a legal move of ``seat`` now, as data for the
    refusal's words (``why`` and what it needs), or ``{}`` when there is nothing more
    to say than "not allowed". Payments: ``pay/none``, ``pay/unknown`` (``word``),
    ``pay/size`` (``given``, ``need``), ``pay/size_max`` (``given``, ``max``),
    ``pay/owned`` (``resource``, ``have``, ``given``, ``wild``), ``pay/mix`` (``cost``),
    ``pay/kinds`` (``kinds``, ``given``); tools: ``tools/none``, ``tools/unknown``;
    placements: ``place/closed`` (``at``), ``place/count`` (``at``, ``counts``)."""
    try:
        kind = decision_kind(state, seat)
    except EngineError:
        return {}
    words = text.strip().lower().split()
    if not words:
        return {}
    verb, rest = words[0], words[1:]
    if kind in PAY_VERBS and verb == PAY_VERBS[kind]:
        return _explain_payment(state, seat, kind, rest)
    if kind == "tools" and verb == "tools":
        if not rest:
            return {"why": "tools/none"}
        owned = [t.lower() for t in _tool_ids(state.boards[seat])]
        for t in rest:
            if rest.count(t) > owned.count(t):
                return {"why": "tools/unknown", "tool": t}
        return {}
    if kind == "place" and verb == "place":
        return _explain_place(state, seat, rest)
    if kind == "order" and verb in ("order", "use"):
        return _explain_order(state, seat, verb, rest)
    return {}


PAY_VERBS = {"card": "take", "build": "build", "feed": "feed"}


def _explain_payment(state: State, seat: int, kind: str, pay: list[str]) -> Explanation:
    board = state.boards[seat]
    if not pay:
        return {"why": "pay/none"}
    unknown = [w for w in pay if w not in PAYABLE]
    if unknown:
        return {"why": "pay/unknown", "word": unknown[0]}
    tile = None
    if kind == "card":
        need = _slot(open_step(state).place) + 1
    elif kind == "feed":
        need = board.short
    else:
        tile = data().buildings[state.stacks[_slot(open_step(state).place)][0]]
        need = sum(tile.cost) if tile.cost is not None else tile.count
    if tile is not None and tile.kind == "any":
        if len(pay) > tile.max:
            return {"why": "pay/size_max", "given": len(pay), "max": tile.max}
    elif len(pay) != need:
        return {"why": "pay/size", "given": len(pay), "need": need}
    if tile is not None and tile.cost is not None and tuple(
            pay.count(r) for r in PAYABLE) != tile.cost:
        return {"why": "pay/mix", "cost": dict(zip(PAYABLE, tile.cost, strict=True))}
    if tile is not None and tile.kind == "kinds" and len(set(pay)) != tile.kinds:
        return {"why": "pay/kinds", "kinds": tile.kinds, "given": len(set(pay))}
    if not _payable(board, tuple(pay)):
        short = next(i for i, r in enumerate(PAYABLE) if pay.count(r) > board.res[i])
        r = PAYABLE[short]
        return {"why": "pay/owned", "resource": r, "have": board.res[short],
                "given": pay.count(r), "wild": board.wild}
    return {}


def _explain_place(state: State, seat: int, words: list[str]) -> Explanation:
    at = next((w for w in words if not w.isdigit()), None)
    if at is None:
        return {}
    counts = [a.get("count") for a in _place_actions(state, seat) if a.get("at") == at]
    if not counts:
        return {"why": "place/closed", "at": at}
    return {"why": "place/count", "at": at, "counts": counts}


def _explain_order(state: State, seat: int, verb: str, words: list[str]) -> Explanation:
    """Why ``order P1 P2 ...`` or ``use P`` is refused: ``order/none`` (no place named),
    ``order/unknown`` (``word``: not a placement left), ``order/twice`` (``place``),
    ``order/missing`` (``places`` left out of a whole order), ``order/long`` (a whole
    order other than the suggested one with more than ``most`` placements: name them one
    at a time). ``places``: the placements left."""
    left = list(sensible_order(state, seat))
    if not words or (verb == "use" and len(words) > 1):
        return {"why": "order/none", "places": left}
    unknown = next((w for w in words if w not in left), None)
    if unknown is not None:
        return {"why": "order/unknown", "word": unknown, "places": left}
    twice = next((w for w in words if words.count(w) > 1), None)
    if twice is not None:
        return {"why": "order/twice", "place": twice}
    missing = [p for p in left if p not in words]
    if missing and verb == "order":
        return {"why": "order/missing", "places": missing}
    if len(left) > ORDERS_LISTED:
        return {"why": "order/long", "most": ORDERS_LISTED, "places": left}
    return {}


def _is_legal(state: State, seat: int, action: Action) -> bool:
    """``action`` (normalised) is one of the seat's legal actions now, types included
    (as ``apply`` checks it: ``True`` is not ``1``); False when the seat has no decision."""
    try:
        legal = _legal(state, seat)
    except EngineError:
        return False
    return _well_typed(action) and action in legal


def _claim_effect(state: State, seat: int, place: str) -> dict[str, Any]:
    """A card or building place: what it names, and whether the seat can pay it now."""
    board = state.boards[seat]
    have = sum(board.res) + board.wild
    slot = _slot(place)
    if place.startswith("card"):
        return {"card": state.civ[slot], "cost": slot + 1, "have": have,
                "affordable": bool(payments_of_size(board, slot + 1))}
    tile = state.stacks[slot][0]
    return {"building": tile, "have": have,
            "affordable": bool(building_payments(board, data().buildings[tile]))}


def _average_yield(count: int, resource: str) -> int:
    """What ``count`` dice bring on average without tools (3.5 pips a die)."""
    return int(3.5 * count // RESOURCE_VALUE[resource])


def feeding_forecast(state: State, seat: int) -> dict[str, int]:
    """The coming feeding as it stands: ``need`` (one Food a person, ``born``: 1 if the
    seat's Hut placement still brings a person), ``food``, ``harvest`` (agriculture,
    ``grown``: 1 if its Field placement still raises it), ``short`` (Food missing after
    the harvest), ``catch`` (the average yield of its hunters not back yet, without
    tools) and ``resources`` (which may pay the rest, one each)."""
    b = state.boards[seat]
    placed = {s.place: s.count for s in _spots_of(state, seat)}
    born = int("hut" in placed and b.people < MAX_PEOPLE)
    grown = int("field" in placed and b.agriculture < MAX_AGRICULTURE)
    need, harvest = b.people + born, b.agriculture + grown
    return {"need": need, "born": born, "food": b.food, "harvest": harvest,
            "grown": grown, "short": max(0, need - b.food - harvest),
            "catch": _average_yield(placed.get("hunt", 0), "food"),
            "resources": sum(b.res) + b.wild}


def view(state: State, seat: int | None) -> View:
    """What ``seat`` (or a spectator, None) may see: everything public, and the seat's
    own civilization cards and one-time tools. At the end every card is shown. Each board
    has its ``feeding`` forecast (see ``feeding_forecast``) until the round's feeding
    begins (None from then on). ``order``: the placements the seat whose use turn it is
    has left in the order it chose, for that seat only (empty for the others)."""
    d = data()
    over = state.phase == "over"
    boards = []
    for s, b in enumerate(state.boards):
        mine = over or s == seat
        entry: dict[str, Any] = {
            "seat": s, "player": state.players[s], "start": s == state.start,
            "people": b.people, "home": at_home(state, s), "food": b.food,
            "resources": dict(zip(PAYABLE, b.res, strict=True)), "wild": b.wild,
            "agriculture": b.agriculture, "tools": list(b.tools), "spent": list(b.spent),
            "tool_value": sum(b.tools) + sum(b.spent),
            "buildings": [d.buildings[t].to_view() for t in b.buildings],
            "score": b.score, "cards_held": len(b.cards),
            "short": b.short,  # people still unfed while a feed decision is open
            "feeding": feeding_forecast(state, s) if state.phase in ("place", "use")
            else None,
        }
        if mine:
            entry["cards"] = [d.cards[c].to_view() for c in b.cards]
            entry["one_time"] = [{"card": c, "value": d.cards[c].value} for c in b.one_time]
            entry["final"] = final_scores(state, s)
        boards.append(entry)
    step, end = state.step, result(state)
    return {
        "game": NAME, "you": seat, "round": state.round, "phase": state.phase,
        "start": state.start, "turn": state.turn,
        "placements": [{"place": p.place, "seat": p.seat, "count": p.count}
                       for p in state.spots],
        "cards": [None if c is None else {**d.cards[c].to_view(), "cost": i + 1}
                  for i, c in enumerate(state.civ)],
        "card_pile": len(state.pile),
        "buildings": [{"stack": i + 1, "left": len(st),
                       "top": d.buildings[st[0]].to_view() if st else None}
                      for i, st in enumerate(state.stacks)],
        "step": None if step is None else {
            "kind": step.kind, "seat": step.seat, "place": step.place,
            "resource": step.resource, "dice": list(step.dice), "taker": step.taker},
        "feeding": list(state.feeding),
        "order": list(state.order) if seat is not None and seat == state.turn else [],
        "plan": _plan_view(state, seat),
        "standing": ({} if seat is None or not 0 <= seat < state.n else
                     {k: standing_of(state, seat, k) for k in STANDING}),
        "boards": boards,
        "winners": list(state.winners), "end": state.end,
        "result": None if end is None else end.to_json(),
    }


def result(state: State) -> Result | None:
    if state.phase != "over":
        return None
    return Result(state.winners, state.end or "")


def places(state: State) -> list[int]:
    """The place of each seat at the end: by points, then the tie-break figure (as the
    winners were found); tied seats share a place."""
    if state.phase != "over" or not state.winners:
        return []
    keys = [(f["total"], f["tiebreak"]) for f in (final_scores(state, s)
                                                  for s in range(state.n))]
    return [1 + sum(other > key for other in keys) for key in keys]


def abandon(state: State) -> tuple[State, list[Event]]:
    """End the game without a winner (the host abandons it)."""
    if state.phase == "over":
        raise GameOver("the game is over")
    state = state._replace(phase="over", step=None, feeding=(), winners=(), end="abandoned",
                           order=())
    return state, [Event("game_abandoned", None, {"round": state.round})]


def card_info(state: State, key: str) -> CardData:
    """The printed data of a card or tile, or the name of any other id (a resource, a
    place, a culture symbol, a figure), for narration."""
    d = data()
    if key in d.cards:
        return {**d.cards[key].to_view(), "name": d.card_name(key)}
    if key in d.buildings:
        return {**d.buildings[key].to_view(), "name": d.name("place.building")}
    return {"id": key, "name": d.label(key)}


def catalog(state: State) -> list[CardData]:
    """Every civilization card, then every building tile, as ``card_info`` gives them, in
    the data file's order: the rules page's card glossary."""
    d = data()
    return [card_info(state, key) for key in (*d.card_ids, *d.building_ids)]


class Names(NamedTuple):
    """The printed names in one language (the server's ``translation`` hook)."""

    lang: str

    def card_name(self, key: str) -> str:
        if key in data().buildings:
            return data().name("place.building", self.lang)
        return data().label(key, self.lang)

    def card_text(self, key: str) -> str:
        return ""

    def tribe_name(self, name: str) -> str:
        return name


def translation(state: State, lang: str) -> Names | None:
    """Names in ``lang`` ("de", "de-AT" falls back to "de"); None for a language the
    data file has no names in (then the English names are shown)."""
    base = lang.replace("_", "-").split("-", 1)[0]
    return Names(base) if base in data().names else None


# --------------------------------------------------------------------------- scoring


def final_scores(state: State, seat: int) -> dict[str, Any]:
    """The end scoring of a seat as it would be now: points so far, culture sets, the
    four figure multipliers, resources left; plus the tie-break figure."""
    d = data()
    b = state.boards[seat]
    symbols: dict[str, int] = {}
    figures = {"farmer": 0, "toolmaker": 0, "hutbuilder": 0, "shaman": 0}
    for cid in b.cards:
        card = d.cards[cid]
        if card.culture:
            symbols[card.culture] = symbols.get(card.culture, 0) + 1
        elif card.figure:  # a card without a culture symbol has a figure (data.py)
            figures[card.figure] += card.count
    sets = []
    counts = dict(symbols)
    while counts:
        sets.append(len(counts))
        counts = {k: v - 1 for k, v in counts.items() if v > 1}
    culture = sum(s * s for s in sets)
    tool_value = sum(b.tools) + sum(b.spent)
    multipliers = {
        "farmer": (figures["farmer"], b.agriculture),
        "toolmaker": (figures["toolmaker"], tool_value),
        "hutbuilder": (figures["hutbuilder"], len(b.buildings)),
        "shaman": (figures["shaman"], b.people),
    }
    resources = sum(b.res) + b.wild
    total = (b.score + culture + sum(a * m for a, m in multipliers.values()) + resources)
    return {
        "points": b.score, "culture_sets": sets, "culture": culture,
        "multipliers": {k: {"figures": a, "times": m, "points": a * m}
                        for k, (a, m) in multipliers.items()},
        "resources": resources, "total": total,
        "tiebreak": b.agriculture + tool_value + b.people,
    }


# --------------------------------------------------------------------------- JSON


def to_json(state: State) -> JSONObject:
    return {
        "game": NAME, "players": list(state.players), "data": state.data,
        "boards": [{"people": b.people, "food": b.food, "res": list(b.res), "wild": b.wild,
                    "agriculture": b.agriculture, "tools": list(b.tools),
                    "spent": list(b.spent), "one_time": list(b.one_time),
                    "cards": list(b.cards), "buildings": list(b.buildings),
                    "score": b.score, "short": b.short} for b in state.boards],
        "spots": [list(s) for s in state.spots],
        "civ": list(state.civ), "pile": list(state.pile),
        "stacks": [list(s) for s in state.stacks],
        "start": state.start, "round": state.round, "phase": state.phase,
        "turn": state.turn,
        "step": None if state.step is None else {
            "kind": state.step.kind, "seat": state.step.seat, "place": state.step.place,
            "resource": state.step.resource, "dice": list(state.step.dice),
            "taker": state.step.taker},
        "feeding": list(state.feeding), "home": list(state.home),
        "rng": state.rng.to_json(), "winners": list(state.winners), "end": state.end,
        "order": list(state.order),
        "plans": [None if p is None else {
            "steps": [[at, PLAN_REST if count == REST else count] for at, count in p.steps],
            "next": p.next} for p in state.plans],
        **({"standing": _standing_json(state)} if state.standing else {}),
    }


def from_json(raw: Mapping[str, Any]) -> State:
    """Read a stored state back; raises StateCorrupt on anything that does not fit. A
    state stored before the order decision (no ``order``) reads with no order chosen:
    the seat is asked the order of its placements left (``pending``)."""
    try:
        if raw.get("game") != NAME:
            raise StateCorrupt(f"not a {NAME} state")
        if raw["data"] != data().digest:
            raise StateCorrupt("the Stone Age component file changed since the game began")
        boards = tuple(Board(
            b["people"], b["food"], tuple(b["res"]), b["wild"], b["agriculture"],
            tuple(b["tools"]), tuple(b["spent"]), tuple(b["one_time"]), tuple(b["cards"]),
            tuple(b["buildings"]), b["score"], b["short"]) for b in raw["boards"])
        step = raw["step"]
        state = State(
            tuple(raw["players"]), raw["data"], boards,
            tuple(Spot(*s) for s in raw["spots"]), tuple(raw["civ"]), tuple(raw["pile"]),
            tuple(tuple(s) for s in raw["stacks"]), raw["start"], raw["round"],
            raw["phase"], raw["turn"],
            None if step is None else Step(step["kind"], step["seat"], step["place"],
                                           step["resource"], tuple(step["dice"]),
                                           step["taker"]),
            tuple(raw["feeding"]), tuple(raw["home"]), Rng.from_json(raw["rng"]),
            tuple(raw["winners"]), raw["end"],
            tuple(raw.get("order", ())),  # absent in states stored before the order
            _plans_from_json(raw.get("plans"), len(raw["players"])),
            _standing_from_json(raw.get("standing"), len(raw["players"])))
    except StateCorrupt:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StateCorrupt(f"unreadable Stone Age state: {exc!r}") from None
    check_invariants(state)
    return state


def _plans_from_json(raw: Any, n: int) -> tuple[Plan | None, ...]:
    """The stored plans (absent in states stored before plans: none); () when no seat
    has one."""
    if not raw or all(p is None for p in raw):
        return ()
    if len(raw) != n:
        raise StateCorrupt("a plan or none for each seat")
    return tuple(None if p is None else Plan(
        tuple((at, REST if count == PLAN_REST else count) for at, count in p["steps"]),
        p["next"]) for p in raw)


def check_invariants(state: State) -> None:
    """Raise StateCorrupt if the state breaks a rule that always holds."""
    d = data()

    def need(ok: bool, what: str) -> None:
        if not ok:
            raise StateCorrupt(f"invariant broken: {what}")

    n = state.n
    need(MIN_PLAYERS <= n <= MAX_PLAYERS, "player count")
    need(state.phase in PHASES, "phase")
    need(0 <= state.start < n and 0 <= state.turn < n, "seats")
    need(len(state.civ) == CARD_SLOTS and len(state.stacks) == n, "table layout")
    cards = [c for c in state.civ if c is not None] + list(state.pile)
    for b in state.boards:
        need(START_PEOPLE <= b.people <= MAX_PEOPLE, "people 5 to 10")
        need(b.food >= 0 and b.wild >= 0 and len(b.res) == 4 and min(b.res) >= 0,
             "resources never negative")
        need(0 <= b.agriculture <= MAX_AGRICULTURE, "agriculture 0 to 10")
        tiles = (*b.tools, *b.spent)
        need(len(tiles) <= MAX_TILES and all(1 <= t <= MAX_TILE_VALUE for t in tiles),
             "at most 3 tool tiles of 1 to 4")
        need(not tiles or max(tiles) - min(tiles) <= 1, "tool tiles raised evenly")
        need(set(b.one_time) <= set(b.cards), "one-time tools are held cards")
        cards.extend(b.cards)
    for s in range(n):
        need(at_home(state, s) >= 0, "every person in exactly one place")
    need(sorted(cards) == sorted(d.card_ids), "every civilization card in one place")
    tiles_seen = [t for st in state.stacks for t in st]
    tiles_seen += [t for b in state.boards for t in b.buildings]
    need(len(set(tiles_seen)) == len(tiles_seen) and set(tiles_seen) <= set(d.building_ids),
         "every building tile in one place")
    places = [(s.place, s.seat) for s in state.spots]
    need(len(set(places)) == len(places), "one group per seat and place")
    if state.order:
        need(state.phase == "use" and sorted(state.order) == sorted(
            s.place for s in _spots_of(state, state.turn)),
            "the chosen order names the placements left, each once")
    need(len(state.plans) in (0, n) and (not state.plans or any(state.plans)),
         "a plan or none for each seat, () when none has one")
    need(len(state.standing) in (0, n) and (not state.standing or any(state.standing)),
         "standing choices for each seat, () when none has one")
    for row in state.standing:
        need(all(k in STANDING and v in STANDING[k] and v != STANDING_OFF for k, v in row)
             and list(row) == sorted(set(row)) and len({k for k, _ in row}) == len(row),
             "standing choices the game offers, each key once")
    plan_places = _plan_places(state)
    for plan in state.plans:
        if plan is None:
            continue
        need(0 < len(plan.steps) <= PLAN_STEPS and 0 <= plan.next <= len(plan.steps)
             and type(plan.next) is int, "a plan of 1 to PLAN_STEPS steps")
        named = [at for at, _ in plan.steps]
        need(len(set(named)) == len(named), "a plan names each place once")
        for at, count in plan.steps:
            counts, rest = plan_places.get(at, ((), False))
            need(type(count) is int and (count in counts or (rest and count == REST)),
                 "a plan step names a place and a number it takes")


# --------------------------------------------------------------------------- the round


def _advance(state: State, events: list[Event]) -> State:
    """Run everything automatic until a decision is open or the game is over."""
    while True:
        if state.phase == "place":
            return state
        if state.phase == "use":
            if state.step is not None:
                return state
            if state.order:  # the order chosen: resolve the next placement
                place, rest = state.order[0], state.order[1:]
                state = _resolve(state._replace(order=rest), state.turn, place, events)
                continue
            if _spots_of(state, state.turn):
                best = sensible_order(state, state.turn)
                if order_matters(state, state.turn):
                    if standing_of(state, state.turn, "order") != "sensible":
                        return state  # the seat chooses what to use next, or a whole order
                    events.append(Event("order_chosen", state.turn, {
                        "places": list(best), "standing": True}, visible_to=(state.turn,)))
                state = state._replace(order=best)
                continue
            nxt = (state.turn + 1) % state.n
            if nxt == state.start:
                state = _begin_feeding(state, events)
                continue
            state = _begin_use(state, nxt, events)
            continue
        if state.phase == "feed":
            if state.feeding:
                return state
            state = _end_round(state, events)
            continue
        return state


def _next_placer(state: State, seat: int, events: list[Event]) -> State:
    """The first seat from ``seat`` clockwise that can still place, whose standing plan
    (if any) the engine follows for it, placement after placement, until a seat must
    decide (its plan dropped if it had one: ``_follow_plan``); the use phase when nobody
    can place. Ruling: a seat with people at home but no legal place keeps them home."""
    while True:
        placer = None
        for i in range(state.n):
            s = (seat + i) % state.n
            if at_home(state, s) == 0:
                continue
            if _place_actions(state, s):
                placer = s
                break
            if s not in state.home:
                events.append(Event("no_place_left", s, {"home": at_home(state, s)}))
                state = state._replace(home=(*state.home, s))
        if placer is None:
            events.append(Event("placement_over", None, {"round": state.round}))
            return _begin_use(state._replace(phase="use"), state.start, events)
        if plan_of(state, placer) is None:
            return state._replace(turn=placer)
        state, placed = _follow_plan(state, placer, events)
        if not placed:
            return state._replace(turn=placer)
        seat = (placer + 1) % state.n


def _place(state: State, seat: int, place: str, count: int, events: list[Event]) -> State:
    state = state._replace(spots=(*state.spots, Spot(place, seat, count)))
    events.append(Event("people_placed", seat, {"place": place, "count": count}))
    return _next_placer(state, (seat + 1) % state.n, events)


def _begin_use(state: State, seat: int, events: list[Event]) -> State:
    """A seat's use turn: its village places first (never worse first), then its
    choice of the rest."""
    state = state._replace(turn=seat, step=None, order=())
    for place in VILLAGE:
        if any(s.place == place for s in _spots_of(state, seat)):
            state = _resolve(state, seat, place, events)
    return state


def _resolve(state: State, seat: int, place: str, events: list[Event]) -> State:
    spot = next(s for s in state.spots if s.seat == seat and s.place == place)
    state = state._replace(spots=tuple(s for s in state.spots if s != spot))
    board = state.boards[seat]
    if place in YIELD:
        dice, rng = state.rng.dice(spot.count)
        state = state._replace(rng=rng)
        events.append(Event("dice_rolled", seat, {"place": place, "dice": list(dice),
                                                  "total": sum(dice)}))
        return _roll_result(state, seat, place, YIELD[place], dice, events)
    if place == "toolmaker":
        return _tool_step(state, seat, events)
    if place == "hut":
        if board.people >= MAX_PEOPLE:
            events.append(Event("nothing_gained", seat, {"place": place, "why": "cap"}))
            return state
        events.append(Event("person_born", seat, {"people": board.people + 1}))
        return _with(state, seat, people=board.people + 1)
    if place == "field":
        return _agriculture(state, seat, events)
    slot = _slot(place)
    if place.startswith("card"):
        if not payments_of_size(board, slot + 1):
            events.append(Event("card_unaffordable", seat, {"slot": slot + 1,
                                                            "cost": slot + 1}))
            return state
        return state._replace(step=Step("card", seat, place))
    tile = data().buildings[state.stacks[slot][0]]
    if not building_payments(board, tile):
        events.append(Event("building_unaffordable", seat, {"stack": slot + 1,
                                                            "tile": tile.id}))
        return state
    return state._replace(step=Step("build", seat, place))


def _roll_result(state: State, seat: int, place: str, resource: str,
                 dice: tuple[int, ...], events: list[Event]) -> State:
    """After a roll: ask for tools if any could raise the yield, else gain."""
    board = state.boards[seat]
    value = RESOURCE_VALUE[resource]
    total = sum(dice)
    extra = sum(_tool_value(t) for t in _tool_ids(board))
    if extra and (total + extra) // value > total // value:
        state = state._replace(step=Step("tools", seat, place, resource, dice))
        use = _standing_tools(state, seat)
        if use is None:
            return state  # the seat decides
        return _finish_roll(state, seat, use, events, standing=True)
    return _gain(state, seat, resource, total // value, place, events)


def _finish_roll(state: State, seat: int, use: tuple[str, ...],
                 events: list[Event], standing: bool = False) -> State:
    step, resource = _roll(state)
    board = state.boards[seat]
    tools, spent, one_time = list(board.tools), list(board.spent), list(board.one_time)
    tiles = [int(t[1:]) for t in use if t.startswith("t")]
    cards = [t for t in use if not t.startswith("t")]
    for value in tiles:
        tools.remove(value)
        spent.append(value)
    for card in cards:
        one_time.remove(card)
    added = sum(_tool_value(t) for t in use)
    if use:
        events.append(Event("tools_added", seat, {
            "tiles": tiles, "one_time": [_tool_value(c) for c in cards], "added": added,
            **({"standing": True} if standing else {})}))
    state = _with(state, seat, tools=tuple(sorted(tools, reverse=True)),
                  spent=tuple(sorted(spent, reverse=True)), one_time=tuple(one_time))
    state = state._replace(step=None)
    total = sum(step.dice) + added
    return _gain(state, seat, resource, total // RESOURCE_VALUE[resource], step.place, events)


def _gain(state: State, seat: int, resource: str, amount: int, place: str,
          events: list[Event]) -> State:
    events.append(Event("resources_gained", seat, {"resource": resource, "amount": amount,
                                                   "place": place}))
    return _add(state, seat, resource, amount)


def _add(state: State, seat: int, resource: str, amount: int) -> State:
    board = state.boards[seat]
    if resource == "food":
        return _with(state, seat, food=board.food + amount)
    res = list(board.res)
    res[PAYABLE.index(resource)] += amount
    return _with(state, seat, res=tuple(res))


def _tool_step(state: State, seat: int, events: list[Event]) -> State:
    board = state.boards[seat]
    tools, spent = list(board.tools), list(board.spent)
    if len(tools) + len(spent) < MAX_TILES:
        tools.append(1)
    else:
        low = min((*tools, *spent))
        if low >= MAX_TILE_VALUE:
            events.append(Event("nothing_gained", seat, {"place": "toolmaker", "why": "cap"}))
            return state
        # Reading: an unused tile is raised first (it can be used at once).
        if low in tools:
            tools[tools.index(low)] += 1
        else:
            spent[spent.index(low)] += 1
    tools.sort(reverse=True)
    spent.sort(reverse=True)
    events.append(Event("tool_made", seat, {"tools": sorted((*tools, *spent),
                                                            reverse=True)}))
    return _with(state, seat, tools=tuple(tools), spent=tuple(spent))


def _agriculture(state: State, seat: int, events: list[Event]) -> State:
    board = state.boards[seat]
    if board.agriculture >= MAX_AGRICULTURE:
        events.append(Event("nothing_gained", seat, {"place": "field", "why": "cap"}))
        return state
    events.append(Event("agriculture_raised", seat, {"agriculture": board.agriculture + 1}))
    return _with(state, seat, agriculture=board.agriculture + 1)


def _take_card(state: State, seat: int, action: Action, events: list[Event]) -> State:
    step = open_step(state)
    slot = _slot(step.place)
    card_id = card_in_slot(state, slot)
    state = state._replace(step=None)
    if action.kind == "decline":
        events.append(Event("card_declined", seat, {"slot": slot + 1}))
        return state
    pay = action.get("pay")
    state = _pay(state, seat, pay)
    civ = list(state.civ)
    civ[slot] = None
    board = state.boards[seat]
    state = state._replace(civ=tuple(civ))
    state = _with(state, seat, cards=(*board.cards, card_id))
    card = data().cards[card_id]
    events.append(Event("card_taken", seat, {"slot": slot + 1, "paid": list(pay),
                                             "top": card.top}))
    events.append(Event("card_kept", seat, {"card": card_id}, visible_to=(seat,)))
    return _top_effect(state, seat, card_id, step.place, events)


def _top_effect(state: State, seat: int, card_id: str, place: str,
                events: list[Event]) -> State:
    card = data().cards[card_id]
    board = state.boards[seat]
    top = card.top
    if top == "food":
        return _gain(state, seat, "food", card.amount, place, events)
    if top == "resource":
        return _gain(state, seat, card.top_resource, card.amount, place, events)
    if top == "points":
        events.append(Event("points_scored", seat, {"points": card.amount}))
        return _with(state, seat, score=board.score + card.amount)
    if top == "any":
        events.append(Event("resources_of_choice", seat, {"amount": card.amount}))
        return _with(state, seat, wild=board.wild + card.amount)
    if top == "agriculture":
        return _agriculture(state, seat, events)
    if top == "tool_step":
        return _tool_step(state, seat, events)
    if top == "one_time_tool":
        events.append(Event("one_time_tool", seat, {"value": card.value},
                            visible_to=(seat,)))
        return _with(state, seat, one_time=(*board.one_time, card_id))
    if top == "dice":
        dice, rng = state.rng.dice(2)
        state = state._replace(rng=rng)
        events.append(Event("dice_rolled", seat, {"place": place, "dice": list(dice),
                                                  "total": sum(dice)}))
        return _roll_result(state, seat, place, card.top_resource, dice, events)
    if top == "dice_for_all":
        dice, rng = state.rng.dice(state.n)
        state = state._replace(rng=rng)
        events.append(Event("dice_for_all", seat, {"dice": list(dice)}))
        return _next_pick(state._replace(step=Step("pick", seat, place, None, dice, seat)),
                          events)
    # extra_card
    if not state.pile:
        events.append(Event("nothing_gained", seat, {"place": place, "why": "pile"}))
        return state
    extra, pile = state.pile[0], state.pile[1:]
    state = state._replace(pile=pile)
    events.append(Event("extra_card_drawn", seat, {"pile": len(pile)}))
    events.append(Event("card_kept", seat, {"card": extra, "extra": True},
                        visible_to=(seat,)))
    return _with(state, seat, cards=(*state.boards[seat].cards, extra))


def _next_pick(state: State, events: list[Event]) -> State:
    """Dice for all: the picker picks while the dice left differ; the rest is automatic."""
    step = open_step(state)
    while step.dice and len(set(step.dice)) == 1:
        state = _apply_face(state, step.seat, step.dice[0], events)
        step = step._replace(seat=(step.seat + 1) % state.n, dice=step.dice[1:])
    if not step.dice:
        return state._replace(step=None)
    return state._replace(step=step)


def _pick(state: State, seat: int, face: int, events: list[Event]) -> State:
    step = open_step(state)
    dice = list(step.dice)
    dice.remove(face)
    state = _apply_face(state, seat, face, events)
    step = step._replace(seat=(seat + 1) % state.n, dice=tuple(dice))
    return _next_pick(state._replace(step=step), events)


def _apply_face(state: State, seat: int, face: int, events: list[Event]) -> State:
    events.append(Event("die_picked", seat, {"face": face, "gain": FACES[face]}))
    gain = FACES[face]
    if gain == "tool":
        return _tool_step(state, seat, events)
    if gain == "agriculture":
        return _agriculture(state, seat, events)
    return _add(state, seat, gain, 1)


def _build(state: State, seat: int, action: Action, events: list[Event]) -> State:
    slot = _slot(open_step(state).place)
    state = state._replace(step=None)
    stack = state.stacks[slot]
    if action.kind == "decline":
        events.append(Event("building_declined", seat, {"stack": slot + 1,
                                                        "tile": stack[0]}))
        return state
    pay = action.get("pay")
    tile = data().buildings[stack[0]]
    points = tile.points if tile.points is not None else sum(RESOURCE_VALUE[r] for r in pay)
    state = _pay(state, seat, pay)
    stacks = list(state.stacks)
    stacks[slot] = stack[1:]
    state = state._replace(stacks=tuple(stacks))
    board = state.boards[seat]
    state = _with(state, seat, buildings=(*board.buildings, tile.id),
                  score=board.score + points)
    events.append(Event("building_built", seat, {"stack": slot + 1, "tile": tile.id,
                                                 "paid": list(pay), "points": points,
                                                 "left": len(stack) - 1}))
    return state


def _pay(state: State, seat: int, pay: tuple[str, ...]) -> State:
    """Pay resources: what the seat owns first, resources of choice for the rest."""
    board = state.boards[seat]
    res = list(board.res)
    wild = board.wild
    for r in pay:
        i = PAYABLE.index(r)
        if res[i]:
            res[i] -= 1
        else:
            wild -= 1
    return _with(state, seat, res=tuple(res), wild=wild)


def _begin_feeding(state: State, events: list[Event]) -> State:
    state = state._replace(phase="feed", step=None, turn=state.start)
    asked = []
    for i in range(state.n):
        seat = (state.start + i) % state.n
        board = state.boards[seat]
        food = board.food + board.agriculture
        if board.agriculture:
            events.append(Event("harvest", seat, {"food": board.agriculture}))
        if food >= board.people:
            events.append(Event("people_fed", seat, {"food": board.people}))
            state = _with(state, seat, food=food - board.people)
            continue
        short = board.people - food
        state = _with(state, seat, food=0, short=short)
        events.append(Event("food_short", seat, {"food": food, "short": short}))
        how = standing_of(state, seat, "feed")
        if sum(board.res) + board.wild < short:
            state = _starve(state, seat, events)
        elif how == "pay":
            pay = _cheapest_pay(state.boards[seat], short)
            events.append(Event("people_fed_with_resources", seat, {"paid": list(pay),
                                                                   "standing": True}))
            state = _with(_pay(state, seat, pay), seat, short=0)
        elif how == "starve":
            state = _starve(state, seat, events, standing=True)
        else:
            asked.append(seat)
    return state._replace(feeding=tuple(asked))


def _feed(state: State, seat: int, action: Action, events: list[Event]) -> State:
    state = state._replace(feeding=tuple(s for s in state.feeding if s != seat))
    if action.kind == "starve":
        return _starve(state, seat, events)
    pay = action.get("pay")
    events.append(Event("people_fed_with_resources", seat, {"paid": list(pay)}))
    state = _pay(state, seat, pay)
    return _with(state, seat, short=0)


def _starve(state: State, seat: int, events: list[Event], standing: bool = False) -> State:
    board = state.boards[seat]
    events.append(Event("people_starved", seat, {"short": board.short,
                                                 "points": -STARVE_POINTS,
                                                 **({"standing": True} if standing else {})}))
    return _with(state, seat, score=board.score - STARVE_POINTS, short=0)


def _end_round(state: State, events: list[Event]) -> State:
    """After feeding: the end conditions, else the next round (start player passes,
    cards slide to the cheap end and are refilled, tools turn back)."""
    ended = [i + 1 for i, st in enumerate(state.stacks) if not st]
    left = [c for c in state.civ if c is not None]
    missing = CARD_SLOTS - len(left)
    if ended:
        return _game_over(state, "buildings", events)
    if missing > len(state.pile):
        return _game_over(state, "cards", events)
    civ = (*left, *state.pile[:missing])
    state = state._replace(civ=civ, pile=state.pile[missing:])
    if missing:
        events.append(Event("cards_refilled", None, {"new": missing, "pile": len(state.pile)}))
    boards = tuple(b._replace(tools=tuple(sorted((*b.tools, *b.spent), reverse=True)),
                              spent=()) for b in state.boards)
    start = (state.start + 1) % state.n
    plans = tuple(None if p is None else p._replace(next=0) for p in state.plans)
    state = state._replace(boards=boards, start=start, round=state.round + 1,
                           phase="place", home=(), feeding=(), plans=plans)
    events.append(Event(ROUND_EVENT, None, {"round": state.round, "start": start}))
    if any(e.kind == ROUND_EVENT for e in events[:-1]):
        state = _drop_plans(state, events)  # a whole round went by in this move
    return _next_placer(state, start, events)


def _game_over(state: State, why: str, events: list[Event]) -> State:
    finals = [final_scores(state, s) for s in range(state.n)]
    best = max((f["total"], f["tiebreak"]) for f in finals)
    winners = tuple(s for s, f in enumerate(finals) if (f["total"], f["tiebreak"]) == best)
    events.append(Event("game_ended", None, {
        "why": why, "round": state.round, "winners": list(winners),
        "scores": [{"seat": s, **f} for s, f in enumerate(finals)]}))
    return state._replace(phase="over", step=None, feeding=(), winners=winners, end=why,
                          order=())


# --------------------------------------------------------------------------- use order


class _Use(NamedTuple):
    """A placement still to resolve, as the order of the use phase sees it: what its
    resolution may show, ask, cost and bring (village places are resolved first, at the
    start of the use turn, and never reach here)."""

    place: str
    group: int  # the sensible order's group (``sensible_order``), then ``rank``
    rank: int
    rolls: bool  # dice to which the seat may add tools: a resource place, a "2 dice" card
    reveals: bool  # shows what nobody knew: dice (rolls, dice for all), a card drawn (G05)
    asks: bool  # asks the seat something besides tools: pay or leave (a card or building
    # it can pay for now), a die to pick (dice for all)
    pays: bool  # may cost resources: a civilization card or a building
    brings_pay: bool  # may bring resources that pay: Wood to Gold, resources of choice
    brings_tool: bool  # may bring a tool for a roll: a tool step, a one-time tool


ROLL_RANK = ("river", "quarry", "clay", "forest", "hunt")  # the most valuable first
ORDERS_LISTED = 6  # up to this many placements left, every whole order is a legal action


def _uses(state: State, seat: int) -> list[_Use]:
    """The seat's placements still to resolve, with what each may show, ask, cost and
    bring."""
    board = state.boards[seat]
    can_step = not _at_limit(board, "toolmaker")
    spots = _spots_of(state, seat)
    rolling = any(s.place in YIELD for s in spots)
    incoming = any(YIELD.get(s.place, "food") != "food" or (
        s.place.startswith("card") and data().cards[card_in_slot(state, _slot(s.place))].top
        in ("resource", "any", "dice", "dice_for_all")) for s in spots)
    out = []
    for spot in spots:
        place = spot.place
        if place in VILLAGE:  # (only in a position built by hand: inert, first)
            out.append(_Use(place, 0, VILLAGE.index(place), *(False,) * 6))
            continue
        if place in YIELD:
            out.append(_Use(place, 2, ROLL_RANK.index(place), True, True, False, False,
                            YIELD[place] != "food", False))
            continue
        slot = _slot(place)
        if place.startswith("building"):
            tile = data().buildings[state.stacks[slot][0]]
            out.append(_Use(place, 4, slot, False, False,
                            bool(building_payments(board, tile)), True, False, False))
            continue
        top = data().cards[card_in_slot(state, slot)].top
        payable = bool(payments_of_size(board, slot + 1))
        tool = top == "one_time_tool" or (can_step and top in ("tool_step", "dice_for_all"))
        brings = top in ("resource", "any", "dice", "dice_for_all")
        group = 1 if tool and payable and rolling and top != "dice_for_all" else (
            3 if brings else 5)
        live = payable or incoming  # else it is left unpaid, whenever it comes
        out.append(_Use(place, group, slot, top == "dice",
                        live and top in ("dice", "dice_for_all", "extra_card"),
                        payable, True, brings, tool))
    return out


def _depends(a: _Use, b: _Use, tools: bool) -> bool:
    """Whether resolving ``a`` before ``b`` or after it can change what the seat may do
    or know (``tools``: a tool may be at hand for a roll this turn): one may bring what
    the other pays with or adds to its dice; or one shows something new (dice, a card)
    before the other asks the seat something (to pay or leave, which die, which tools).
    Placements that only cost resources (two cards, a card and a building) do not
    depend on each other: in either order the seat may take either, or both if it can
    pay for both, with the same resources."""
    def feeds(x: _Use, y: _Use) -> bool:
        return (x.brings_pay and y.pays) or (x.brings_tool and y.rolls)

    def informs(x: _Use, y: _Use) -> bool:
        return x.reveals and (y.asks or (y.rolls and tools))

    return feeds(a, b) or feeds(b, a) or informs(a, b) or informs(b, a)


def order_matters(state: State, seat: int) -> bool:
    """Whether the order in which ``seat`` resolves its placements left can change what
    it may do or know (``_depends`` for some two of them): only then is it asked."""
    uses = _uses(state, seat)
    board = state.boards[seat]
    tools = _has_tools(board) or any(u.brings_tool for u in uses)
    return any(_depends(a, b, tools) for i, a in enumerate(uses) for b in uses[i + 1:])


def _has_tools(board: Board) -> bool:
    return bool(board.tools or board.one_time)


def sensible_order(state: State, seat: int) -> tuple[str, ...]:
    """The order offered first and played at a timeout (a suggestion: any order is
    legal): a tool card the seat can pay now before the rolls it may raise, then the
    rolls (the most valuable resource first), the cards that bring resources, the
    buildings, the other cards."""
    return tuple(u.place for u in sorted(_uses(state, seat), key=lambda u: (u.group, u.rank)))


def _order_actions(state: State, seat: int) -> list[Action]:
    """The ``order`` decision's actions: the sensible whole order first; then ``use`` of
    each placement left (resolve it next and be asked again after it, where the order
    of the rest can still matter), in the sensible order; then every other whole order
    (up to ORDERS_LISTED placements; with more, any order is played one ``use`` at a
    time), nearest to the sensible one first."""
    best = sensible_order(state, seat)
    out = [Action("order", (("places", best),))]
    out += [Action("use", (("at", p),)) for p in best]
    if len(best) <= ORDERS_LISTED:
        others = sorted((o for o in permutations(best) if o != best),
                        key=lambda o: _inversions(o, best))
        out += [Action("order", (("places", o),)) for o in others]
    return out


# --------------------------------------------------------------------------- plans

REST = 0  # a plan step's count meaning "all the people still at home"
PLAN_STEPS = 6  # the most steps a plan lists
PLAN_REST = "rest"  # the word for REST in the plan notation


def plan_of(state: State, seat: int) -> Plan | None:
    """``seat``'s standing plan, or None (also in a state stored before plans)."""
    return state.plans[seat] if state.plans else None


def _with_plan(state: State, seat: int, plan: Plan | None) -> State:
    """``state`` with ``seat``'s plan replaced; ``plans`` is () when no seat has one (one
    form for one game, as ``to_json`` and ``from_json`` keep it)."""
    plans = list(state.plans or (None,) * state.n)
    plans[seat] = plan
    return state._replace(plans=() if all(p is None for p in plans) else tuple(plans))


def _plan_places(state: State) -> dict[str, tuple[tuple[int, ...], bool]]:
    """Every place a plan may name, with the numbers of people a step may name there and
    whether it may name "the rest": the resource places any number they hold (the
    Hunting grounds any), the Hut 2, the other places 1. The card places name whichever
    card lies there when the step is played, the building places the top tile of that
    stack."""
    out: dict[str, tuple[tuple[int, ...], bool]] = {}
    for place in RESOURCE_PLACES:
        most = MAX_PEOPLE if place == "hunt" else CAPACITY
        out[place] = (tuple(range(1, most + 1)), True)
    for place in VILLAGE:
        out[place] = ((2,) if place == "hut" else (1,), False)
    for i in range(CARD_SLOTS):
        out[f"card{i + 1}"] = ((1,), False)
    for i in range(state.n):
        out[f"building{i + 1}"] = ((1,), False)
    return out


def plan_form(state: State, seat: int) -> PlanForm | None:
    """What ``seat``'s standing plan may name (the ``Plans`` hook): up to PLAN_STEPS
    steps, each a place of ``_plan_places`` with one of its numbers (or the rest); the
    seat's plan as it stands (``plan``) and the step it tries next this round
    (``next``). None once the game is over (or for a seat that is not in the game)."""
    if state.phase == "over" or not 0 <= seat < state.n:
        return None
    plan = plan_of(state, seat)
    return {"kind": "place", "steps": PLAN_STEPS,
            "places": [{"at": at, "counts": list(counts), "rest": rest}
                       for at, (counts, rest) in _plan_places(state).items()],
            "plan": _plan_json(plan), "next": plan.next if plan else 0}


def _plan_view(state: State, seat: int | None) -> dict[str, Any] | None:
    """The reader's own standing plan for the view (nobody else's): its steps and the
    step it tries next this round; None for none."""
    plan = None if seat is None or not 0 <= seat < state.n else plan_of(state, seat)
    return None if plan is None else {"steps": _plan_json(plan), "next": plan.next}


def _plan_json(plan: Plan | None) -> list[dict[str, Any]]:
    if plan is None:
        return []
    return [{"at": at, "count": PLAN_REST if count == REST else count}
            for at, count in plan.steps]


def set_plan(state: State, seat: int, text: str) -> tuple[State, list[Event]]:
    """Set ``seat``'s standing plan from ``text`` (the ``Plans`` hook): steps separated by
    commas, each a place and a number of people or ``rest`` (the number may be left out
    where a place takes only one: ``forest 2, hut, hunt rest``); blank text clears the
    plan. The plan replaces any plan the seat had and starts from its first step with
    the seat's next placement turn (an open placement decision stays open: the player
    makes it). Events ``plan_set`` (``steps``) or ``plan_cleared``, visible to the seat
    only; none when there was no plan to clear. Raises PlanClosed once the game is
    over, InvalidPlan with ``why``: ``plan/long`` (``most``), ``plan/empty`` (a step with
    no words), ``plan/unknown`` (``word``: not a place, or more than a place and a
    number), ``plan/count`` (``at``, ``counts``, ``rest``: a number that place does not
    take, or none where it takes several), ``plan/twice`` (``at``)."""
    if plan_form(state, seat) is None:
        raise PlanClosed("no plan can be set now", seat=seat)
    if not isinstance(text, str):
        raise InvalidPlan("a plan is text", why="plan/unknown", word=repr(text)[:40])
    steps = _parse_plan(state, text)
    if not steps:
        if plan_of(state, seat) is None:
            return state, []
        return (_with_plan(state, seat, None),
                [Event("plan_cleared", seat, {}, visible_to=(seat,))])
    plan = Plan(steps)
    return (_with_plan(state, seat, plan),
            [Event("plan_set", seat, {"steps": _plan_json(plan)}, visible_to=(seat,))])


def _parse_plan(state: State, text: str) -> tuple[tuple[str, int], ...]:
    """The steps ``text`` names (see ``set_plan``), each read in full: nothing is
    completed but the one number of a place that takes only one."""
    if not text.strip():
        return ()
    parts = text.lower().split(",")
    if len(parts) > PLAN_STEPS:
        raise InvalidPlan(f"a plan lists at most {PLAN_STEPS} steps", why="plan/long",
                          most=PLAN_STEPS)
    places = _plan_places(state)
    steps: list[tuple[str, int]] = []
    for part in parts:
        words = part.split()
        if not words:
            raise InvalidPlan("a step of the plan is empty", why="plan/empty")
        if words[0] not in places or len(words) > 2:
            raise InvalidPlan(f"{part.strip()!r} is no step", why="plan/unknown",
                              word=part.strip()[:40])
        at = words[0]
        counts, rest = places[at]
        count = _plan_count(words[1] if len(words) == 2 else None, counts, rest)
        if count is None:
            raise InvalidPlan(f"{at} takes {counts}", why="plan/count", at=at,
                              counts=list(counts), rest=rest)
        if any(at == done for done, _ in steps):
            raise InvalidPlan(f"{at} is named twice", why="plan/twice", at=at)
        steps.append((at, count))
    return tuple(steps)


def _plan_count(word: str | None, counts: tuple[int, ...], rest: bool) -> int | None:
    if word is None:
        return counts[0] if len(counts) == 1 else None
    if word == PLAN_REST:
        return REST if rest else None
    if word.isascii() and word.isdigit() and len(word) <= 2 and int(word) in counts:
        return int(word)
    return None


def _follow_plan(state: State, seat: int, events: list[Event]) -> tuple[State, bool]:
    """``seat``'s placement turn, played by its plan: the first step from ``next`` on that
    can be followed now is placed (event ``people_placed`` with ``plan``), the steps
    before it are passed for this round; when none can be followed the plan is dropped
    (``plan_dropped``, visible to the seat: ``why`` ``used_up`` when no step was left,
    else ``blocked`` with each step tried and why it could not be followed, ``home``:
    the people at home) and the seat decides. True when a step was placed."""
    plan = plan_of(state, seat)
    if plan is None:
        return state, False
    legal = _place_actions(state, seat)
    home = at_home(state, seat)
    tried = []
    for i in range(plan.next, len(plan.steps)):
        at, count = plan.steps[i]
        people = home if count == REST else count
        why = _step_blocked(state, seat, legal, at, people)
        if why is None:
            state = _with_plan(state, seat, plan._replace(next=i + 1))
            state = state._replace(spots=(*state.spots, Spot(at, seat, people)))
            events.append(Event("people_placed", seat, {"place": at, "count": people,
                                                        "plan": True}))
            return state, True
        tried.append({"at": at, "count": PLAN_REST if count == REST else count,
                      "why": why})
    events.append(Event(PLAN_DROPPED, seat, {"why": "blocked" if tried else "used_up",
                                             "steps": tried, "home": home},
                        visible_to=(seat,)))
    return _with_plan(state, seat, None), False


def _drop_plans(state: State, events: list[Event]) -> State:
    """Ruling: a whole round went by inside one move without anyone being asked anything
    (the standing plans placed everyone and the rest was automatic): every plan is
    dropped (``plan_dropped``, ``why`` ``idle``) as the next round begins, so that a
    game never plays on by itself (and ``apply`` always ends)."""
    for seat in range(state.n):
        if plan_of(state, seat) is not None:
            events.append(Event(PLAN_DROPPED, seat, {"why": "idle", "steps": [],
                                                     "home": at_home(state, seat)},
                                visible_to=(seat,)))
            state = _with_plan(state, seat, None)
    return state


def _step_blocked(state: State, seat: int, legal: list[Action], at: str,
                  people: int) -> str | None:
    """Why a plan step (``people`` on ``at``) cannot be followed now, or None when it
    can: ``closed`` (the place is not open to the seat: full, taken, one of its people
    there already, the village rule of 2 and 3 players), ``count`` (the place does not
    take that many now, or the seat has not that many at home), ``unaffordable`` (a card
    or building the seat cannot pay for now: it would be left, the person wasted)."""
    counts = [a.get("count") for a in legal if a.get("at") == at]
    if not counts:
        return "closed"
    if people not in counts:
        return "count"
    if at.startswith(("card", "building")) and not _claim_effect(state, seat, at)["affordable"]:
        return "unaffordable"
    return None


# --------------------------------------------------------------------------- standing choices

STANDING: dict[str, tuple[str, ...]] = {
    "tools": (STANDING_OFF, "tiles", "all"),
    "feed": (STANDING_OFF, "pay", "starve"),
    "order": (STANDING_OFF, "sensible"),
}
"""The standing choices (the ``Standing`` hook) and their values, none on at the start:

- ``tools`` after a roll that some unused tool would raise: ``all``, the tools that
  reach the highest yield with the fewest pips wasted (as the timeout does: tiles before
  one-time tools on a tie); ``tiles``, the same among the permanent tiles only, and only
  where no one-time tool could bring more (else the seat is asked).
- ``feed`` when Food is short and resources could pay the rest: ``pay``, with the
  fewest resources of choice, then the least valuable (Wood, Brick, Stone, Gold);
  ``starve``, keep the resources and lose 10 points.
- ``order`` where the order of the use turn can matter: ``sensible``, the sensible
  order (``sensible_order``) as a whole.

Each decides where it applies: the move is played inside ``apply`` with ``standing`` in
its event's data (``tools_added``, ``people_fed_with_resources``, ``people_starved``;
``order_chosen``, visible to the seat only), and no decision opens."""


def standing_of(state: State, seat: int, key: str) -> str:
    """``seat``'s standing choice ``key``, STANDING_OFF for none."""
    if not state.standing:
        return STANDING_OFF
    return dict(state.standing[seat]).get(key, STANDING_OFF)


def standing_form(state: State, seat: int) -> list[StandingChoice] | None:
    """The standing choices ``seat`` may set, with its values (the ``Standing`` hook);
    None once the game is over or for a seat not in the game."""
    if state.phase == "over" or not 0 <= seat < state.n:
        return None
    return [{"key": key, "options": list(options), "value": standing_of(state, seat, key)}
            for key, options in STANDING.items()]


def set_standing(state: State, seat: int, key: str, value: str) -> tuple[State, list[Event]]:
    """Set ``seat``'s standing choice ``key`` to ``value`` (the ``Standing`` hook); event
    ``standing_set`` (``key``, ``value``), visible to the seat only; none when it had that
    value already. Plays nothing. Raises GameOver once the game is over,
    InvalidStanding for a seat, key or value not offered."""
    if state.phase == "over":
        raise GameOver("the game is over")
    if not isinstance(key, str) or key not in STANDING or not 0 <= seat < state.n:
        raise InvalidStanding(f"no standing choice {key!r}", key=str(key)[:40],
                              value=str(value)[:40])
    if not isinstance(value, str) or value not in STANDING[key]:
        raise InvalidStanding(f"{key} takes {STANDING[key]}", key=key,
                              value=str(value)[:40], options=list(STANDING[key]))
    if standing_of(state, seat, key) == value:
        return state, []
    mine = dict(state.standing[seat]) if state.standing else {}
    mine[key] = value
    rows = list(state.standing or ((),) * state.n)
    rows[seat] = tuple(sorted((k, v) for k, v in mine.items() if v != STANDING_OFF))
    standing = () if not any(rows) else tuple(rows)
    return (state._replace(standing=standing),
            [Event("standing_set", seat, {"key": key, "value": value}, visible_to=(seat,))])


def _standing_tools(state: State, seat: int) -> tuple[str, ...] | None:
    """The tools ``seat``'s standing choice adds to the open roll (``STANDING``), or None
    when it has none or it cannot decide (``tiles``, where a one-time tool could bring
    more)."""
    how = standing_of(state, seat, "tools")
    if how == STANDING_OFF:
        return None
    step, resource = _roll(state)
    value = RESOURCE_VALUE[resource]
    key = _tools_key(sum(step.dice), value)
    sets = [(), *_tool_sets(state.boards[seat])]
    best = min(sets, key=key)
    if how == "all":
        return best
    tiles = min((c for c in sets if all(t.startswith("t") for t in c)), key=key)
    return tiles if key(tiles)[0] == key(best)[0] and tiles else None


def _standing_json(state: State) -> list[dict[str, str]] | None:
    return [dict(row) for row in state.standing] if state.standing else None


def _standing_from_json(raw: Any, n: int) -> tuple[tuple[tuple[str, str], ...], ...]:
    """The stored standing choices (absent in states stored before them: none)."""
    if not raw:
        return ()
    if not isinstance(raw, list) or len(raw) != n or not all(
            isinstance(row, dict) for row in raw):
        raise StateCorrupt("standing choices: a mapping for each seat")
    return tuple(tuple(sorted(row.items())) for row in raw)


# --------------------------------------------------------------------------- helpers


def _with(state: State, seat: int, **changes: Any) -> State:
    boards = list(state.boards)
    boards[seat] = boards[seat]._replace(**changes)
    return state._replace(boards=tuple(boards))


def _spots_of(state: State, seat: int) -> list[Spot]:
    return [s for s in state.spots if s.seat == seat]


def at_home(state: State, seat: int) -> int:
    """People of a seat not standing on a place (not placed yet, or back home)."""
    return state.boards[seat].people - sum(s.count for s in state.spots if s.seat == seat)


def _slot(place: str) -> int:
    return int(place[-1]) - 1


def open_step(state: State) -> Step:
    """The open step of the use phase (every decision of it but ``use`` has one)."""
    if state.step is None:
        raise StateCorrupt("the use phase has no open step")
    return state.step


def _roll(state: State) -> tuple[Step, str]:
    """The open ``tools`` step and the resource its roll is for."""
    step = open_step(state)
    if step.resource is None:
        raise StateCorrupt("the roll names no resource")
    return step, step.resource


def card_in_slot(state: State, slot: int) -> str:
    """The civilization card open in ``slot`` (0: cost 1), which a card placed on names."""
    card_id = state.civ[slot]
    if card_id is None:
        raise StateCorrupt(f"no card is open in slot {slot + 1}")
    return card_id


_PLACE_ROWS = {place: tuple(Action("place", (("at", place), ("count", c)))
                           for c in range(MAX_PEOPLE + 1))
               for place in (*RESOURCE_PLACES, *VILLAGE, *(f"card{i}" for i in range(1, 5)),
                             *(f"building{i}" for i in range(1, 5)))}


def _place_actions(state: State, seat: int) -> list[Action]:
    home = at_home(state, seat)
    if not home:
        return []
    taken: dict[str, list[Spot]] = {}
    for s in state.spots:
        taken.setdefault(s.place, []).append(s)
    out: list[Action] = []
    for place in RESOURCE_PLACES:
        here = taken.get(place, ())
        if any(s.seat == seat for s in here):
            continue
        if place == "hunt":
            room = home
        else:
            if len(here) >= COLOURS[state.n]:
                continue
            room = min(home, CAPACITY - sum(s.count for s in here))
        out.extend(_PLACE_ROWS[place][1:room + 1])
    village_used = sum(1 for p in VILLAGE if p in taken)
    if state.n == 4 or village_used < 2:
        for place in VILLAGE:  # Ruling: also where it brings nothing (_at_limit)
            if place in taken:
                continue
            need = 2 if place == "hut" else 1
            if home >= need:
                out.append(_PLACE_ROWS[place][need])
    for i, card in enumerate(state.civ):
        place = f"card{i + 1}"
        if card is not None and place not in taken:
            out.append(_PLACE_ROWS[place][1])
    for i, stack in enumerate(state.stacks):
        place = f"building{i + 1}"
        if stack and place not in taken:
            out.append(_PLACE_ROWS[place][1])
    return out


@lru_cache(maxsize=64)
def _multisets(size: int) -> tuple[tuple[str, ...], ...]:
    return tuple(combinations_with_replacement(PAYABLE, size))


def _payable(board: Board, pay: tuple[str, ...]) -> bool:
    missing = 0
    for i, r in enumerate(PAYABLE):
        n = pay.count(r)
        if n > board.res[i]:
            missing += n - board.res[i]
    return missing <= board.wild


def payments_of_size(board: Board, size: int) -> list[tuple[str, ...]]:
    if size <= 0 or sum(board.res) + board.wild < size:
        return []
    return [p for p in _multisets(size) if _payable(board, p)]


def building_payments(board: Board, tile: Building) -> list[tuple[str, ...]]:
    if tile.cost is not None:
        pay = tuple(r for r, n in zip(PAYABLE, tile.cost, strict=True) for _ in range(n))
        return [pay] if _payable(board, pay) else []
    if tile.count:
        return [p for p in payments_of_size(board, tile.count) if len(set(p)) == tile.kinds]
    out = []
    for size in range(1, tile.max + 1):
        found = payments_of_size(board, size)
        if not found:
            break
        out.extend(found)
    return out


def _tool_ids(board: Board) -> list[str]:
    return [*(f"t{v}" for v in board.tools), *board.one_time]


def _tool_sets(board: Board) -> list[tuple[str, ...]]:
    """Every distinct non-empty set of unused tools (tiles of equal value are alike)."""
    ids = _tool_ids(board)
    seen: dict[tuple[str, ...], None] = {}
    for size in range(1, len(ids) + 1):
        for combo in combinations(ids, size):
            seen.setdefault(_tool_order(combo), None)
    return list(seen)


def _tool_order(tools: Sequence[str]) -> tuple[str, ...]:
    """Tiles by value, highest first, then one-time tools by card id."""
    return tuple(sorted(tools, key=lambda t: (0, -int(t[1:])) if t.startswith("t")
                        else (1, t)))


def _tool_value(tool: str) -> int:
    return int(tool[1:]) if tool.startswith("t") else data().cards[tool].value


def _best_tools(state: State, legal: list[Action]) -> Action:
    """The fewest tools reaching the highest yield: the least tool value, permanent
    tiles before one-time tools."""
    step, resource = _roll(state)
    key = _tools_key(sum(step.dice), RESOURCE_VALUE[resource])
    return min(legal, key=lambda a: key(a.get("use", ())))


def _tools_key(total: int, value: int) -> Any:
    """The order of tool sets for a roll of ``total`` pips of a resource worth ``value``:
    the highest yield, then the fewest pips wasted (the least tool value), then
    permanent tiles before one-time tools, then the fewest tools."""
    def key(tools: Sequence[str]) -> tuple[int, int, int, int]:
        added = sum(_tool_value(t) for t in tools)
        one_time = sum(1 for t in tools if not t.startswith("t"))
        return (-((total + added) // value), added, one_time, len(tools))

    return key


def _cheapest_pay(board: Board, size: int) -> tuple[str, ...]:
    """The payment of ``size`` resources that spends the fewest resources of choice,
    then the least valuable (Wood first, then Brick, Stone, Gold)."""
    def key(pay: tuple[str, ...]) -> tuple[int, int]:
        wild = sum(max(0, pay.count(r) - board.res[i]) for i, r in enumerate(PAYABLE))
        return (wild, sum(RESOURCE_VALUE[r] for r in pay))

    return min(payments_of_size(board, size), key=key)


def pay_value(action: Action) -> int:
    return sum(RESOURCE_VALUE[r] for r in action.get("pay", ()))


def _default_place(state: State, seat: int, legal: list[Action]) -> Action:
    """A part of the people at home (see the module docstring): hunters for the Food the
    coming feeding lacks, else half of them on the first open resource place."""
    by_place: dict[str, list[Action]] = {}
    for a in legal:
        by_place.setdefault(a.get("at"), []).append(a)  # counts ascend from 1
    home = at_home(state, seat)
    short = feeding_forecast(state, seat)["short"]
    if short and "hunt" in by_place:
        hunters = next((c for c in range(1, home + 1) if _average_yield(c, "food") >= short),
                       home)
        return by_place["hunt"][hunters - 1]
    for place in RESOURCE_PLACES:
        if place in by_place:
            rows = by_place[place]
            return rows[min(len(rows), (home + 1) // 2) - 1]
    return next((a for a in legal if choice_effect(state, seat, a).get("affordable", True)),
                legal[0])


def _face_helps(board: Board, face: int) -> bool:
    if face == 6:
        return not _at_limit(board, "field")
    if face == 5:
        return not _at_limit(board, "toolmaker")
    return True


def _at_limit(board: Board, place: str) -> bool:
    """Whether the village ``place`` can bring ``board`` nothing any more: 10 people
    (Hut), agriculture 10 (Field), three tools of 4 (Tool maker)."""
    if place == "hut":
        return board.people >= MAX_PEOPLE
    if place == "field":
        return board.agriculture >= MAX_AGRICULTURE
    return sum(board.tools) + sum(board.spent) >= MAX_TILES * MAX_TILE_VALUE


def _well_typed(action: Action) -> bool:
    for _, value in action.args:
        kind = type(value)
        if kind is tuple:
            if not all(type(v) is str for v in value):
                return False
        elif kind is not str and kind is not int:
            return False
    return True


def _normalised(action: Action) -> Action:
    """Payments and tools in any order mean the same: put them in the listed order."""
    if len(action.args) != 1:
        return action
    name, value = action.args[0]
    if type(value) is not tuple or not all(type(v) is str for v in value):
        return action
    if name == "pay" and action.kind in ("take", "build", "feed") and all(
            v in PAYABLE for v in value):
        return Action(action.kind, (("pay", tuple(sorted(value, key=PAYABLE.index))),))
    if name == "use" and action.kind == "tools" and all(
            (v.startswith("t") and v[1:].isdigit()) or v.isalnum() for v in value):
        return Action("tools", (("use", _tool_order(value)),))
    return action
