"""What the simulator reports about Cavemen games beyond the generic figures: how each
game was won, and how often each card was taken."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.core import Event, Record, Summary

if TYPE_CHECKING:
    from engine.cavemen.rules import State

TAKE_EVENTS = {"caveman_recruited": "recruited", "cave_explored": "explored",
               "invention_made": "invented", "beast_hunted": "hunted",
               "fire_invented": "invented"}


def summary(state: State, events: Sequence[Event]) -> Summary:
    """How the game ended (Fire, and how the conch was had) and the cards taken."""
    taken: Counter[str] = Counter()
    conch_how = "kept"
    for ev in events:
        if ev.kind in TAKE_EVENTS:
            taken[ev.data["card"]] += 1
        elif ev.kind == "conch_won":
            conch_how = "bought" if ev.actor != ev.data["from"] else "kept (paid)"
        elif ev.kind == "conch_kept":
            conch_how = "kept"
    how = "unfinished"
    if state.phase == "over":
        locked = "after the deck ran out" if state.fire_locked else "from the deck"
        how = f"Fire, conch {conch_how}, {locked}"
    return {"how": how, "taken": taken, "points": None}


def report(records: Sequence[Record]) -> list[str]:
    from engine.cavemen.rules import setup

    n = len(records)
    taken: Counter[str] = Counter()
    for r in records:
        taken.update(r.taken)
    deck = setup(["a", "b"], 0).deck
    lines = ["cards taken per game (recruited/explored/invented/hunted):"]
    for cid in deck.deck_ids:
        card = deck.card(cid)
        lines.append(f"  {cid:5s} {card.type:9s} {card.name:18s} {taken[cid] / n:5.2f}")
    return lines
