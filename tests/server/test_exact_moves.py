"""A move sent from the game page's form is exactly what the player entered: every Stone
Age payment (a building of each kind, a card, tools, feeding) short, exact and over; a
refusal says what was wrong, keeps what was entered and changes nothing; "leave it" is
itself whatever the pay fields hold; and no form input is ever recorded as another action
than its words (a property test over the form's fields, through HTTP)."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlmodel import select

from engine.core import Action, format_action
from engine.stoneage import rules
from pbem.db import session_scope
from pbem.models import Decision, Game, utcnow
from pbem.tokens import form_signature
from tests.engine.stoneage_builders import DATA, board, build, last_use, rolling
from tests.server.conftest import start_game
from tests.server.helpers import (
    PLAYERS,
    SECRET,
    forms,
    open_decisions,
    path_of,
    seats_of,
    snapshot,
    text_of,
)
from tests.server.timekit import moves

# --------------------------------------------------------------------------- positions


def use(state, place: str):
    """Seat 0 resolves its placement on ``place`` (the decision that follows)."""
    return rules.apply(state, 0, Action.of("order", places=(place,)))[0]


def at_building(spec, tile: str):
    return use(build(spec, board(), stacks=((tile, "B01"), None),
                     spots=[("building1", 0, 1)], phase="use", turn=0), "building1")


def at_card(spec, slot: int):
    civ = ("G01", "G03", "G07", "G13")[:slot]
    return use(build(spec, board(), civ=civ, spots=[(f"card{slot}", 0, 1)], phase="use",
                     turn=0), f"card{slot}")


def at_tools(spec, faces):
    state = build(board(), spec, phase="use", start=0, turn=1,
                  spots=[("forest", 1, len(faces))], rng=rolling(tuple(faces)))
    return rules.apply(state, 1, Action.of("order", places=("forest",)))[0]


def at_feeding(spec):
    state = last_use(board(), spec)
    return rules.apply(state, 1, Action.of("order", places=("toolmaker",)))[0]


def tile_of(kind: str) -> str:
    return next(b.id for b in DATA.buildings.values() if b.kind == kind
                and (kind != "kinds" or (b.count, b.kinds) == (4, 2)))


FIXED = "B07"  # Wood, Brick, Stone: 12 points
KINDS = tile_of("kinds")  # 4 resources of exactly 2 kinds
ANY = tile_of("any")  # 1 to 7 resources of any kinds

POSITIONS = {
    "fixed building": lambda: at_building(board(wood=2, brick=2, stone=2, gold=1), FIXED),
    "kinds building": lambda: at_building(board(wood=3, brick=3, stone=1), KINDS),
    "any building": lambda: at_building(board(wood=4, brick=2, stone=2, gold=1), ANY),
    "card": lambda: at_card(board(wood=3, stone=2, gold=1), 3),
    "feeding": lambda: at_feeding(board(food=2, wood=2, brick=1, gold=1)),
    "tools": lambda: at_tools(board(tools=(2, 1), one_time=("S07",)), (3, 2)),
}


@pytest.fixture
def game(app, client, inbox):
    """A 2-player Stone Age game whose position each test sets (``game.put``)."""
    created = start_game(app, players=PLAYERS[:2], game="stoneage")
    return Position(app, client, inbox, created.game_id)


class Position:
    """A started game set to a built position: its open decision follows the state."""

    def __init__(self, app, client, inbox, game_id: str) -> None:
        self.app, self.client, self.game_id = app, client, game_id
        self.seats = seats_of(app, game_id)
        self.pages = [path_of(inbox.to(s.email)[0].link("/g/"))
                      for s in self.seats]

    def put(self, state) -> int:
        """Store ``state`` and point the open decision at its seat and kind; the seat."""
        (pending,) = rules.pending(state)
        seat = self.seats[pending.seat]
        with self.app.app_context(), session_scope() as s:
            row = s.get(Game, self.game_id)
            row.state = json.dumps(rules.to_json(state))
            s.add(row)
            first, *rest = s.exec(select(Decision).where(
                Decision.game_id == self.game_id, Decision.closed_at.is_(None))
                .order_by(Decision.id))
            first.seat_id, first.position, first.kind = seat.id, seat.position, pending.kind
            for other in rest:  # the position asks one seat only
                other.closed_at, other.closed_by = utcnow(), "host"
            s.add_all([first, *rest])
        return pending.seat

    def post(self, seat: int, fields: dict) -> tuple[int, str]:
        (decision,) = open_decisions(self.app, self.game_id)
        page = self.pages[seat]
        data = {"sig": form_signature(SECRET, page.rsplit("/", 1)[1]),
                "decision_id": str(decision.id), **fields}
        resp = self.client.post(page, data=data)
        return resp.status_code, resp.get_data(as_text=True)

    def recorded(self) -> list[dict]:
        return [m.action for m in moves(self.app, self.game_id)]


def pay_fields(verb: str, pay: list[str]) -> dict[str, str]:
    return {"choice": verb, **{f"{verb}.count.{r}": str(pay.count(r)) for r in set(pay)}}


# --------------------------------------------------------------------------- payments

# (position, verb, payment, what the refusal says; None: recorded as entered)
PAYMENTS = [
    ("fixed building", "build", ["wood", "brick"],
     "That is 2 resources; this building takes 3 resources."),
    ("fixed building", "build", ["wood", "brick", "stone"], None),
    ("fixed building", "build", ["wood", "brick", "stone", "gold"],
     "That is 4 resources; this building takes 3 resources."),
    ("fixed building", "build", ["wood", "wood", "brick"],
     "This building takes exactly 1 Wood, 1 Brick, 1 Stone."),
    ("kinds building", "build", ["wood", "wood", "brick"],
     "That is 3 resources; this building takes 4 resources."),
    ("kinds building", "build", ["wood", "wood", "brick", "brick"], None),
    ("kinds building", "build", ["wood", "wood", "brick", "brick", "brick"],
     "That is 5 resources; this building takes 4 resources."),
    ("kinds building", "build", ["wood", "brick", "brick", "stone"],
     "This building takes resources of exactly 2 different kinds; that is 3."),
    ("any building", "build", [], "Enter the resources to pay in the number fields, "
     "or choose another option."),
    ("any building", "build", ["wood", "gold"], None),
    ("any building", "build", ["wood"] * 4 + ["brick"] * 2 + ["stone"] * 2,
     "That is 8 resources; this building takes at most 7 resources."),
    ("card", "take", ["wood", "wood"], "That is 2 resources; this card costs 3 resources."),
    ("card", "take", ["wood", "wood", "stone"], None),
    ("card", "take", ["wood", "wood", "stone", "gold"],
     "That is 4 resources; this card costs 3 resources."),
    ("card", "take", ["gold", "gold", "wood"], "You have 1 Gold, not 2 Gold."),
    ("feeding", "feed", ["wood"],
     "That is 1 resource; you are 3 Food short, so pay that many."),
    ("feeding", "feed", ["wood", "brick", "gold"], None),
    ("feeding", "feed", ["wood", "wood", "brick", "gold"],
     "That is 4 resources; you are 3 Food short, so pay that many."),
]


@pytest.mark.parametrize(("where", "verb", "pay", "refusal"), PAYMENTS,
                         ids=[f"{p[0]}-{len(p[2])}-{bool(p[3])}" for p in PAYMENTS])
def test_a_payment_is_recorded_exactly_as_entered_or_refused_with_the_reason(
        app, game, where, verb, pay, refusal):
    seat = game.put(POSITIONS[where]())
    before = snapshot(app)
    status, html = game.post(seat, pay_fields(verb, pay))
    if refusal is None:
        assert status == 200, text_of(html, "error")
        assert game.recorded()[-1] == Action.of(verb, pay=tuple(pay)).to_json()
        return
    assert status == 400
    assert text_of(html, "error") == refusal
    assert snapshot(app) == before  # nothing written
    (form,) = [f for f in forms(html) if f.attrs.get("id") == "decision"]
    assert form.checked.get("choice") == verb  # the form as it was entered
    for r in ("wood", "brick", "stone", "gold"):
        assert form.inputs[f"{verb}.count.{r}"] == str(pay.count(r))


@pytest.mark.parametrize(("where", "verb", "other"), [
    ("fixed building", "build", "decline"), ("card", "take", "decline"),
    ("feeding", "feed", "starve")])
def test_leaving_it_is_recorded_whatever_the_pay_fields_hold(app, game, where, verb, other):
    seat = game.put(POSITIONS[where]())
    fields = {**pay_fields(verb, ["wood", "brick", "stone"]), "choice": other}
    status, html = game.post(seat, fields)
    assert status == 200, text_of(html, "error")
    assert game.recorded()[-1] == {"kind": other}


@pytest.mark.parametrize(("ticked", "refusal"), [
    ([], "Tick at least one tool, or choose to add no tools."),
    (["t2", "t2"], "Tick only tools you have not used this round, or choose no tools."),
    (["t3"], "Tick only tools you have not used this round, or choose no tools."),
    (["t2"], None),
    (["t2", "t1", "S07"], None),
])
def test_tools_are_exactly_those_ticked(app, game, ticked, refusal):
    seat = game.put(POSITIONS["tools"]())
    before = snapshot(app)
    status, html = game.post(seat, {"choice": "tools", "tools.word": ticked})
    if refusal is None:
        assert status == 200, text_of(html, "error")
        assert sorted(game.recorded()[-1]["use"]) == sorted(ticked)
        return
    assert (status, text_of(html, "error")) == (400, refusal)
    assert snapshot(app) == before
    for tool in set(ticked) & {"t2", "t1", "S07"}:  # still ticked on the form shown again
        assert re.search(rf'name="tools.word" value="{tool}" checked', html)


def test_the_pay_form_says_what_is_asked_and_what_the_player_owns(app, game):
    seat = game.put(POSITIONS["fixed building"]())
    html = game.client.get(game.pages[seat]).get_data(as_text=True)
    assert text_of(html, "asked") == "The building: 1 Wood, 1 Brick, 1 Stone: 12 points."
    assert text_of(html, "owned") == "You have: Wood 2, Brick 2, Stone 2, Gold 1."
    (form,) = [f for f in forms(html) if f.attrs.get("id") == "decision"]
    assert "choice" not in form.checked  # nothing that costs anything is pre-selected
    assert form.radios["choice"] == ["build wood brick stone", "build", "decline"]


def test_the_feeding_form_says_how_much_food_is_missing(app, game):
    seat = game.put(POSITIONS["feeding"]())
    html = game.client.get(game.pages[seat]).get_data(as_text=True)
    assert text_of(html, "asked") == ("You are 3 Food short: pay 3 resources (Wood, Brick, "
                                      "Stone, Gold), or lose 10 points.")
    (form,) = [f for f in forms(html) if f.attrs.get("id") == "decision"]
    assert "choice" not in form.checked


def test_the_card_form_names_the_card_and_its_cost(app, game):
    seat = game.put(POSITIONS["card"]())
    html = game.client.get(game.pages[seat]).get_data(as_text=True)
    asked = text_of(html, "asked")
    name = DATA.card_name("G07")
    assert asked.startswith(f"{name} (now: ") and asked.endswith(
        "costs 3 resources of any kinds (Wood, Brick, Stone, Gold).")


# --------------------------------------------------------------------------- property

WORDS = ["wood", "brick", "stone", "gold", "food", "t1", "t2", "t3", "S07", "hunt",
         "forest", "decline", "starve", "3", "x"]
VERBS = ["build", "take", "feed", "tools", "no_tools", "decline", "starve", "place"]


@st.composite
def form_inputs(draw):
    """Any fields a forged or careless form could send."""
    fields: dict[str, list[str]] = {}
    choice = draw(st.one_of(st.sampled_from(VERBS), st.lists(
        st.sampled_from(WORDS + VERBS), min_size=1, max_size=5).map(" ".join)))
    fields["choice"] = [choice]
    for verb in draw(st.lists(st.sampled_from(VERBS), max_size=3)):
        for r in draw(st.lists(st.sampled_from(WORDS[:5]), max_size=3, unique=True)):
            fields[f"{verb}.count.{r}"] = [str(draw(st.integers(0, 4)))]
        words = draw(st.lists(st.sampled_from(WORDS), max_size=3))
        if words:
            fields[f"{verb}.word"] = words
    return fields


def named_words(fields: dict[str, list[str]]) -> list[str]:
    """The words the fields name for their chosen verb, as a person reads the form."""
    choice = fields["choice"][0]
    verb = choice.split()[0]
    words = [*choice.split(), *fields.get(f"{verb}.word", [])]
    for key, (value,) in ((k, v) for k, v in fields.items()
                          if k.startswith(f"{verb}.count.")):
        words += [key.rsplit(".", 1)[1]] * int(value)
    return words


@pytest.mark.parametrize("where", sorted(POSITIONS))
def test_no_form_input_is_recorded_as_another_action_than_its_words(app, game, where):
    state = POSITIONS[where]()

    @settings(max_examples=60, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(form_inputs())
    def check(fields):
        seat = game.put(state)
        done = len(game.recorded())
        status, html = game.post(seat, fields)
        assert status in (200, 400), html[:500]
        recorded = game.recorded()
        if status == 400:
            assert len(recorded) == done
            return
        (action,) = recorded[done:]
        words = format_action(Action.from_json(action)).lower().split()
        named = [w.lower() for w in named_words(fields)]
        assert (words[0], sorted(words[1:])) == (named[0], sorted(named[1:]))

    check()


# --------------------------------------------------------------------------- emails


@pytest.mark.parametrize(("lang", "asked"), [
    ("en", "You are 3 Food short: pay 3 resources (Wood, Brick, Stone, Gold), or lose "
           "10 points."),
    ("de", "Dir fehlen 3 Nahrung: Zahle 3 Rohstoffe (Holz, Lehm, Stein, Gold) oder "
           "verliere 10 Punkte."),
])
def test_the_feeding_email_says_what_is_asked_as_the_page_does(make_app, lang, asked):
    from tests.server.helpers import Inbox

    app = make_app(FOLLOW_UP_MINUTES=0)
    inbox = Inbox(app)
    players = [PLAYERS[0], dataclasses.replace(PLAYERS[1], language=lang)]
    created = start_game(app, players=players, game="stoneage")
    game = Position(app, app.test_client(), inbox, created.game_id)
    state = last_use(board(), board(food=2, wood=2, brick=1, gold=1))
    seat = game.put(state)
    status, html = game.post(seat, {"choice": "order toolmaker"})
    assert status == 200 and text_of(html, "asked") == asked  # the page of the move
    (decision,) = open_decisions(app, created.game_id)
    assert decision.kind == "feed"
    feed = inbox.for_decision(decision.id)
    assert asked in feed.text
    assert asked in " ".join(text_of(feed.html, "asked").split())
