"""Reply commands of Stone Age (hooks of ``engine.core``): their words in each language
(``commands.toml``, ``SpeaksCommands``), every kind of move (``NamesMoves``) and the
order an email lists them in
(``OrdersCommands``): what a timeout plays first, then each placement that may be
resolved next (``use``), the email's one-click choices;
then, for a payment, leaving it (decline, starve) and every other way to pay, the
cheapest first (for a building, the most points first); else the legal order (the
places as the board has them)."""

from __future__ import annotations

from pathlib import Path

from engine.core import Action
from engine.stoneage.rules import (
    State,
    default_action,
    email_choices,
    legal_actions,
    pay_value,
)
from engine.words import Words, words_in

WORDS_FILE = Path(__file__).with_name("commands.toml")

# Every kind of move (engine.core.NamesMoves), as rules.py's docstring lists them.
ACTION_KINDS = ("place", "use", "order", "tools", "no_tools", "take", "build", "decline",
                "pick", "feed", "starve")


def command_words(state: State, lang: str) -> Words:
    """The words of the notation in ``lang`` (``engine.words``)."""
    return words_in(WORDS_FILE, lang)


def command_order(state: State, seat: int) -> list[Action]:
    """Every legal action of ``seat``, most useful first (see the module's text)."""
    legal = legal_actions(state, seat)
    payments = [a for a in legal if a.get("pay") is not None]
    if payments:
        most_first = any(a.kind == "build" for a in payments)
        rest = [*(a for a in legal if a.get("pay") is None),
                *sorted(payments, key=pay_value, reverse=most_first)]
    else:
        rest = legal
    nexts = [a for a in legal if a.kind == "use"]  # each placement that may come next
    return list(dict.fromkeys([default_action(state, seat), *nexts,
                               *email_choices(state, seat), *rest]))
