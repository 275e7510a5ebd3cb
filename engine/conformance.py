"""Each game module offers the contract of ``engine.core``: checked by mypy, not at run time.

Assigning a module to a variable typed with a Protocol makes mypy check that the module
has every member of it with compatible types (``make typecheck``). Each game states here
the contract (``Game`` over its own State type, its ``stats`` module) and the optional
hooks it offers; a missing member or a signature that drifts is then a type error. A
new game adds its lines here (README, "Adding a game"). Nothing imports this module.
"""

from __future__ import annotations

from engine import cavemen, stoneage
from engine.core import (
    DescribesCards,
    Explains,
    Game,
    HasCatalog,
    HasRounds,
    NamesMoves,
    OffersVariants,
    OrdersCommands,
    Plans,
    Ranks,
    Reveals,
    Searches,
    SpeaksCommands,
    Standing,
    Stats,
    Translates,
    TranslatesViews,
    Worlds,
)

CAVEMEN: Game[cavemen.State] = cavemen
_cavemen_stats: Stats[cavemen.State] = cavemen.stats
_cavemen_cards: DescribesCards[cavemen.State] = cavemen
_cavemen_catalog: HasCatalog[cavemen.State] = cavemen
_cavemen_names: Translates[cavemen.State] = cavemen
_cavemen_views: TranslatesViews = cavemen
_cavemen_rounds: HasRounds = cavemen
_cavemen_places: Ranks[cavemen.State] = cavemen
_cavemen_reveals: Reveals[cavemen.State] = cavemen
_cavemen_search: Searches = cavemen
_cavemen_worlds: Worlds[cavemen.State] = cavemen
_cavemen_words: SpeaksCommands[cavemen.State] = cavemen
_cavemen_moves: NamesMoves = cavemen

STONEAGE: Game[stoneage.State] = stoneage
_stoneage_stats: Stats[stoneage.State] = stoneage.stats
_stoneage_explains: Explains[stoneage.State] = stoneage
_stoneage_variants: OffersVariants[stoneage.State] = stoneage
_stoneage_cards: DescribesCards[stoneage.State] = stoneage
_stoneage_catalog: HasCatalog[stoneage.State] = stoneage
_stoneage_names: Translates[stoneage.State] = stoneage
_stoneage_rounds: HasRounds = stoneage
_stoneage_plans: Plans[stoneage.State] = stoneage
_stoneage_standing: Standing[stoneage.State] = stoneage
_stoneage_places: Ranks[stoneage.State] = stoneage
_stoneage_reveals: Reveals[stoneage.State] = stoneage
_stoneage_search: Searches = stoneage
_stoneage_worlds: Worlds[stoneage.State] = stoneage
_stoneage_words: SpeaksCommands[stoneage.State] = stoneage
_stoneage_moves: NamesMoves = stoneage
_stoneage_commands: OrdersCommands[stoneage.State] = stoneage
