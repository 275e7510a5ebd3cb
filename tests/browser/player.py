"""A player's head for the browser test: it reads what a person reads (the plain text of a
'Your turn' email, the card lines of the game page) and picks a move by its label.

It plays toward Fire like the engine's heuristic bot, in rough form, so a game where every
seat follows it ends in about as many moves as a game between heuristic bots. It never
looks at the server's state: only at the text the server shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CARD_RE = re.compile(r"^(?P<name>.+?) \[(?P<type>\w+)(?:, [^\]]*)?\](?P<rest>.*)$")
HIF_RE = re.compile(r"Hunting (\d+), Inventing (\d+), Foraging (\d+)")
COST_RE = re.compile(r"(?:cost|recruit for) (\d+) Food or (\d+) (?:Teeth|Tooth)")
BEAST_RE = re.compile(r"needs Hunting (\d+), gives (\d+) Food and (\d+) (?:Teeth|Tooth)")
INVENTION_RE = re.compile(r"needs Inventing (\d+): (.*?)(?: \[stone \d+\])?$")
CAVE_RE = re.compile(r"Population (\d+)(?:, (?:costs|explore for) (\d+) (?:Teeth|Tooth))?")
TRIBE_RE = re.compile(r"^Your tribe: (?P<tribe>.+)$")
CONCH_RE = re.compile(r"The conch: you\.")
STOCK_RE = re.compile(r"Food (\d+) +Teeth (\d+) +Population (\d+)/(\d+)")
SCORES_RE = re.compile(r"Hunting (\d+) +Inventing (\d+)/(\d+) +Foraging (\d+)")
OTHER_RE = re.compile(r"^Inventing (?P<inventing>\d+) of \d+, Hunting \d+")  # a rival tribe
CAVEMEN = ("leader", "hunter", "thinker", "elder", "explorer")


@dataclass
class Card:
    """One printed card line: ``Name [type, stone N] ...numbers...``."""

    name: str
    type: str
    hunting: int = 0
    inventing: int = 0
    foraging: int = 0
    cost_food: int = 0
    cost_teeth: int = 0
    requirement: int = 0
    food: int = 0
    teeth: int = 0
    population: int = 0
    text: str = ""

    @classmethod
    def parse(cls, line: str) -> Card:
        """A card line of the game page (``Name [type, stone N] ...``) or a row of the
        email's aligned card table (``Name   type   ...``)."""
        if m := CARD_RE.match(line.strip()):
            card, rest = cls(m["name"], m["type"]), m["rest"]
        else:
            parts = re.split(r"\s{2,}", line.strip(), maxsplit=2)
            assert len(parts) == 3, f"not a card line: {line!r}"
            card, rest = cls(parts[0], parts[1]), parts[2]
        if hif := HIF_RE.search(rest):
            card.hunting, card.inventing, card.foraging = map(int, hif.groups())
        if cost := COST_RE.search(rest):
            card.cost_food, card.cost_teeth = map(int, cost.groups())
        if beast := BEAST_RE.search(rest):
            card.requirement, card.food, card.teeth = map(int, beast.groups())
        if invention := INVENTION_RE.search(rest):
            card.requirement, card.text = int(invention[1]), invention[2]
        if card.type == "cave" and (cave := CAVE_RE.search(rest)):
            card.population, card.cost_teeth = int(cave[1]), int(cave[2] or 0)
        return card

    @property
    def worth(self) -> float:
        """What a card is worth keeping to a tribe that wants Inventing above all."""
        if self.type == "beast":
            return 0.5 * (self.food + self.teeth)
        if self.type == "fire":
            return 100.0
        if self.type == "cave":
            return 0.5 * self.population
        if self.type == "invention":
            return invention_gain(self.text, hunters=1, thinkers=1)
        return 4 * self.inventing + 1.2 * (self.hunting + self.foraging)


def invention_gain(text: str, hunters: int, thinkers: int, room: int = 2) -> float:
    """The worth of an invention, read from its printed text."""
    m = re.match(r"\+(\d+) (Inventing|Hunting|Foraging|Population)\b(.*)", text)
    if not m:
        return 1.2  # protections, discounts, income: useful, never decisive
    amount, score, cond = int(m[1]), m[2], m[3]
    at_least = re.search(r"at least 2 (Hunters|Thinkers)", cond)
    if "for each Hunter" in cond:
        amount *= hunters
    elif at_least:
        have = hunters if at_least[1] == "Hunters" else thinkers
        amount = amount if have >= 2 else 0
    elif "for each" in cond:
        amount = 0.5
    weight = {"Inventing": 4.0, "Hunting": 1.2, "Foraging": 1.2,
              "Population": 2.5 if room <= 0 else (1.0 if room == 1 else 0.3)}[score]
    return amount * weight


@dataclass
class Board:
    """What a 'Your turn' email tells its reader."""

    conch: bool = False
    food: int = 0
    teeth: int = 0
    hunting: int = 0
    inventing: int = 0
    fire_needs: int = 99
    foraging: int = 0
    cavemen: int = 0
    population: int = 0
    cards: list[Card] = field(default_factory=list)
    pool: list[Card] = field(default_factory=list)
    rivals_inventing: list[int] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)  # the one-click labels, in order

    @classmethod
    def parse(cls, text: str) -> Board:
        board = cls()
        section = None
        for raw in text.splitlines():
            line = raw.strip()
            if not line:
                section = None if section != "choices" else section
                continue
            if CONCH_RE.search(line):
                board.conch = True
            if TRIBE_RE.match(line):
                section = "mine"
            elif line.startswith("Card pool"):
                section = "pool"
            elif line.startswith("Other tribes"):
                section = "others"
            elif line.startswith("Choose with one click"):
                section = "choices"
            elif section == "choices" and line.startswith("* "):
                board.choices.append(line[2:])
            elif section == "choices" and not line.startswith("http"):
                section = None
            elif section == "mine" and (m := STOCK_RE.fullmatch(line)):
                board.food, board.teeth, board.cavemen, board.population = map(int, m.groups())
            elif section == "mine" and (m := SCORES_RE.fullmatch(line)):
                board.hunting, board.inventing, board.fire_needs, board.foraging = map(
                    int, m.groups())
            elif section == "mine":
                board.cards.append(Card.parse(line))
            elif section == "pool":
                board.pool.append(Card.parse(line))
            elif section == "others" and (m := OTHER_RE.match(line)):
                board.rivals_inventing.append(int(m["inventing"]))
        return board

    def card(self, name: str) -> Card | None:
        return next((c for c in [*self.pool, *self.cards] if c.name == name), None)

    def count(self, kind: str) -> int:
        return sum(c.type == kind for c in self.cards)

    # ------------------------------------------------------------------ weights

    def food_weight(self) -> float:
        need = max(1, self.cavemen)
        if self.food < need + 1:
            return 2.5
        if self.food < 2 * need + 2:
            return 1.0
        if self.food < 4 * need:
            return 0.4
        return 0.05

    def teeth_weight(self) -> float:
        if self.inventing >= self.fire_needs:
            return 3.0
        if self.inventing >= self.fire_needs - 2:
            return 1.0
        return 0.5 if self.teeth < 12 else 0.1

    # ------------------------------------------------------------------ choosing

    def value(self, label: str) -> float:
        """The worth of one labelled move (higher is better): the move's words, before
        what the email adds about its cost and effect ("Forage: +4 Food")."""
        label = move_of(label)
        food_w, teeth_w = self.food_weight(), self.teeth_weight()
        room = self.population - self.cavemen
        if label == "Forage":
            return self.foraging * food_w
        if m := re.fullmatch(r"Invent (.+)", label):
            card = self.card(m[1])
            if card is None or card.type == "fire":
                return 1000.0
            return invention_gain(card.text, self.count("hunter"), self.count("thinker"), room)
        if m := re.fullmatch(r"Hunt (.+)", label):
            card = self.card(m[1]) or Card(m[1], "beast")
            risk = 0.3 * sum(c.type in CAVEMEN[1:] for c in self.cards)
            return card.food * food_w + card.teeth * teeth_w - risk
        if m := re.fullmatch(r"Recruit (.+) paying (Food|Teeth)", label):
            card = self.card(m[1]) or Card(m[1], "hunter")
            cost = card.cost_food * food_w if m[2] == "Food" else card.cost_teeth * teeth_w
            gain = 4 * card.inventing + 1.2 * (card.hunting + card.foraging) - 0.8
            return gain - cost
        if m := re.fullmatch(r"Explore (.+)", label):
            card = self.card(m[1]) or Card(m[1], "cave")
            pop_w = 2.5 if room <= 0 else (1.0 if room == 1 else 0.3)
            free = any(c.type == "explorer" for c in self.cards)
            return card.population * pop_w - (0 if free else card.cost_teeth * teeth_w)
        return 0.0

    def choose(self) -> str:
        """The label of the move to click in the email."""
        labels = self.choices
        assert labels, "a 'Your turn' email without one-click choices"
        if "Pass" in labels:  # the conch auction
            bids = [x for x in labels if x.startswith("Bid ")]
            fire = any(c.type == "fire" for c in self.pool)
            if bids and fire and self.inventing >= self.fire_needs:
                return bids[-1]  # Fire is ours if we hold the conch: bid high
            if bids and fire and any(i >= self.fire_needs for i in self.rivals_inventing):
                return bids[0]  # keep a rival from Fire
            return "Pass"
        if all(x.startswith("Give up ") for x in labels):  # starvation or a casualty

            def keep(label: str) -> float:
                name = move_of(label).removeprefix("Give up ")
                card = self.card(name) or Card(name, "hunter")
                return 2 * card.inventing + card.hunting + card.foraging

            return min(reversed(labels), key=keep)
        return max(labels, key=self.value)


def move_of(label: str) -> str:
    """The words of a move in a choice's label: "Hunt Mammoth: +6 Food, ..." -> "Hunt
    Mammoth" (what the confirmation page and the game log say)."""
    return label.split(": ", 1)[0]


def cards_to_discard(pool: list[str], choosable: dict[str, str]) -> list[str]:
    """The checkbox values to tick on the discard form: keep the three best cards.

    ``pool`` is the card lines of the whole pool; ``choosable`` maps each checkbox value to
    its card line (locked Fire has no checkbox and always stays)."""
    count = len(pool) - 3
    ranked = sorted(choosable, key=lambda v: Card.parse(choosable[v]).worth)
    return ranked[:count]
