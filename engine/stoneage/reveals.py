"""What a Stone Age move shows that was hidden (``engine.core.Reveals``): dice (the
state's random numbers moved on), a civilization card turned up from the face-down pile,
a building turned up on a stack (the stacks are face down but for their tops)."""

from __future__ import annotations

from engine.stoneage.rules import State


def revealed(before: State, after: State) -> bool:
    """Whether ``after`` shows anything ``before`` hid (see the module's text)."""
    return (before.rng != after.rng or before.pile != after.pile
            or any(len(a) != len(b) and b[1:2] != () for a, b in
                   zip(after.stacks, before.stacks, strict=True)))
