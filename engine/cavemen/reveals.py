"""What a Cavemen move shows that was hidden (``engine.core.Reveals``): a card drawn from
the face-down draw pile (into the pool, or the pile shuffled again), or anything left to
chance (the state's random numbers moved on). Tableaus, the pool and the discards are
open to everyone."""

from __future__ import annotations

from engine.cavemen.rules import State


def revealed(before: State, after: State) -> bool:
    """Whether ``after`` shows anything ``before`` hid (see the module's text)."""
    return before.rng != after.rng or before.draw != after.draw
