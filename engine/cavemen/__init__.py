"""Cavemen: The Quest for Fire. The module itself is the game (see engine.core.Game)."""

from engine.cavemen.deck import (
    Card,
    Deck,
    DeckError,
    Translation,
    load_deck,
    load_translation,
    parse_deck,
)
from engine.cavemen.rules import (
    MAX_PLAYERS,
    MIN_PLAYERS,
    NAME,
    ROUND_EVENT,
    TITLE,
    State,
    abandon,
    apply,
    card_info,
    catalog,
    check_invariants,
    choice_effect,
    default_action,
    email_choices,
    from_json,
    legal_actions,
    pending,
    places,
    result,
    scores,
    setup,
    setup_with_events,
    to_json,
    translated_view,
    translation,
    view,
)

__all__ = [
    "MAX_PLAYERS", "MIN_PLAYERS", "NAME", "ROUND_EVENT", "TITLE",
    "Card", "Deck", "DeckError", "State", "abandon",
    "apply", "card_info", "catalog", "check_invariants", "choice_effect", "default_action",
    "email_choices",
    "from_json", "legal_actions", "Translation", "load_deck", "load_translation",
    "parse_deck", "pending", "places", "result", "scores", "setup", "setup_with_events", "to_json",
    "translated_view", "translation", "view",
]

from engine.cavemen import stats  # noqa: E402  (the simulator's figures)
from engine.cavemen.bots import BOTS  # noqa: E402  (after the rules: the bots use them)

__all__ += ["BOTS", "stats"]
from engine.cavemen.reveals import revealed  # noqa: E402  (a hook: engine.core.Reveals)

__all__ += ["revealed"]
from engine.cavemen.bots import make_strong  # noqa: E402  (a hook: engine.core.Searches)

__all__ += ["make_strong"]
from engine.cavemen.search import determinise  # noqa: E402  (a hook: engine.core.Worlds)

__all__ += ["determinise"]
# hooks: engine.core.SpeaksCommands, NamesMoves
from engine.cavemen.commands import ACTION_KINDS, command_words  # noqa: E402

__all__ += ["ACTION_KINDS", "command_words"]
