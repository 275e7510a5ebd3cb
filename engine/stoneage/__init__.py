"""Stone Age. The module itself is the game (see engine.core.Game)."""

from engine.stoneage.data import Building, Card, Data, DataError, load_data, parse_data
from engine.stoneage.rules import (
    MAX_PLAYERS,
    MIN_PLAYERS,
    NAME,
    ROUND_EVENT,
    TITLE,
    Board,
    Plan,
    Spot,
    State,
    Step,
    abandon,
    apply,
    card_info,
    catalog,
    check_invariants,
    choice_effect,
    choice_variants,
    data,
    default_action,
    email_choices,
    explain,
    feeding_forecast,
    final_scores,
    from_json,
    legal_actions,
    pending,
    places,
    plan_form,
    result,
    set_plan,
    set_standing,
    setup,
    setup_with_events,
    standing_form,
    to_json,
    translation,
    view,
)

__all__ = [
    "MAX_PLAYERS", "MIN_PLAYERS", "NAME", "ROUND_EVENT", "TITLE",
    "Board", "Building", "Plan", "Card", "Data", "DataError",
    "Spot", "State", "Step", "abandon", "apply", "card_info", "catalog", "check_invariants",
    "choice_effect", "choice_variants", "data", "default_action", "email_choices", "explain",
    "feeding_forecast", "final_scores", "from_json", "legal_actions", "load_data",
    "parse_data", "pending", "places", "plan_form", "result", "set_plan", "set_standing",
    "setup", "standing_form",
    "setup_with_events", "to_json", "translation", "view",
]

from engine.stoneage import stats  # noqa: E402  (the simulator's figures)
from engine.stoneage.bots import BOTS  # noqa: E402  (after the rules: the bots use them)

__all__ += ["BOTS", "stats"]
from engine.stoneage.reveals import revealed  # noqa: E402  (a hook: engine.core.Reveals)

__all__ += ["revealed"]
from engine.stoneage.bots import make_strong  # noqa: E402  (a hook: engine.core.Searches)

__all__ += ["make_strong"]
from engine.stoneage.search import determinise  # noqa: E402  (a hook: engine.core.Worlds)

__all__ += ["determinise"]
# hooks: engine.core.OrdersCommands, SpeaksCommands, NamesMoves
from engine.stoneage.commands import ACTION_KINDS, command_order, command_words  # noqa: E402

__all__ += ["ACTION_KINDS", "command_order", "command_words"]
