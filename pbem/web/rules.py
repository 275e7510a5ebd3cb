"""The rules page of each game (``GET /rules/<game>``) and ``rules_url``, the one way to
link to it or to one of its glossary entries.

A game's rules live in its own template folder, ``templates/games/<game>/``:

- ``rules.toml``: the glossary's term slugs (each the anchor ``term-<slug>`` of the
  page), the decision kinds (anchors ``decision-<kind>``) and aliases (the engine's own
  words for a term, e.g. Stone Age's place id ``hunt`` for ``hunting-grounds``);
- ``rules.en.html`` and ``rules.de.html``: the prose, one macro per section (``about``,
  ``server``, ``round``, ``decisions``, ``end``, ``terms``), written per language;
- ``rules_cards.html``: the card glossary (macros ``title()`` and ``cards(catalog)``),
  rendered from the engine's data in the page's language, so it cannot drift from it.

The card data comes from the game module's optional ``catalog(state)`` hook (every card's
printed data, as ``card_info`` gives it), read from a throwaway game set up with a fixed
seed; names and texts go through the same translation as the boards (``localize``).
Nothing here names a game: the games are the registry's.

``rules_url(game, term)`` raises :class:`UnknownTerm` for a term, decision or card the
game does not have, so a link can never point at nothing (the tests render every link).
"""

from __future__ import annotations

import tomllib
from functools import cache
from typing import Any
from urllib.parse import quote

from flask import Blueprint, Flask, current_app, g, render_template, request
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _

from engine.registry import get_game, listings
from pbem import localize
from pbem.errors import NotFound
from pbem.i18n import LANGUAGES, language
from pbem.narrate import GAME_NAME_RE, game_file

bp = Blueprint("rules", __name__)
SECTIONS = ("about", "server", "round", "decisions", "end", "terms")


class UnknownTerm(LookupError):
    """A rules link to a game, term, decision or card that does not exist."""


def init_app(app: Flask) -> None:
    """The ``rules_url`` of templates (the blueprint is registered with the others)."""
    app.jinja_env.globals["rules_url"] = rules_url


# --------------------------------------------------------------------------- data


def games() -> tuple[str, ...]:
    """The games that have a rules page: every registered game."""
    return tuple(listings())


@cache
def glossary(game: str) -> dict[str, Any]:
    """The game's ``rules.toml``: ``terms`` (slug -> what it is), ``decisions`` (kind ->
    what it is), ``aliases`` (engine word -> slug). Raises UnknownTerm for no such game."""
    if game not in listings():
        raise UnknownTerm(f"no game {game!r} (registered: {', '.join(listings())})")
    path = game_file(game, "rules.toml")
    data = tomllib.loads(path.read_text(encoding="utf-8")) if path else {"terms": {}}
    aliases = data.get("aliases", {})
    for word, slug in aliases.items():
        if slug not in data["terms"]:
            raise UnknownTerm(f"{path}: alias {word!r} names no term {slug!r}")
    return {"terms": dict(data["terms"]), "decisions": dict(data.get("decisions", {})),
            "aliases": dict(aliases)}


def term_slug(game: str, term: str) -> str:
    """The glossary slug of ``term`` (a slug, or an engine word listed as an alias)."""
    data = glossary(game)
    slug = term if term in data["terms"] else data["aliases"].get(term)
    if slug is None:
        raise UnknownTerm(f"{game} has no glossary term {term!r} (see "
                          f"templates/games/{game}/rules.toml)")
    return slug


def _specimen(game: str) -> tuple[Any, Any]:
    """The game module and a new game of it (fixed seed): the deck or component file
    the rules page describes."""
    mod = get_game(game)
    players = [f"p{i + 1}" for i in range(mod.MIN_PLAYERS)]
    return mod, mod.setup(players, 0)


def catalog(game: str, lang: str) -> list[dict[str, Any]]:
    """Every card of the game (its ``catalog`` hook), names and texts in ``lang``."""
    return _cards_and_lookup(game, lang)[0]


def _cards_and_lookup(game: str, lang: str) -> tuple[list[dict[str, Any]], localize.CardLookup]:
    """The catalog in ``lang`` and the boards' lookup of any id (a card, a resource, a
    place) to its printed data in ``lang``."""
    mod, state = _specimen(game)
    tr = localize.translation_for(mod, state, lang)
    hook = getattr(mod, "catalog", None)
    cards = [localize.card(info, tr) for info in hook(state)] if hook else []
    return cards, localize.lookup(mod, state, tr)


@cache
def card_ids(game: str) -> frozenset[str]:
    return frozenset(c["id"] for c in catalog(game, "en"))


# --------------------------------------------------------------------------- links


def rules_url(game: str, term: str | None = None, absolute: bool = False, *,
              decision: str | None = None, card: str | None = None,
              lang: str | None = None) -> str:
    """``/rules/<game>``, or with the anchor of a glossary ``term`` (a slug of the
    game's rules.toml or an alias), a ``decision`` kind or a ``card`` id. ``absolute``
    prefixes BASE_URL (emails); ``lang`` ("en", "de") pins the page's language (emails:
    ``lang=current_language()``). Raises UnknownTerm for anything the page lacks."""
    glossary(game)  # the game exists
    anchor = ""
    if term is not None:
        anchor = "#term-" + term_slug(game, term)
    elif decision is not None:
        if decision not in glossary(game)["decisions"]:
            raise UnknownTerm(f"{game} has no decision {decision!r} on its rules page")
        anchor = "#decision-" + decision
    elif card is not None:
        if card not in card_ids(game):
            raise UnknownTerm(f"{game} has no card {card!r}")
        anchor = "#card-" + quote(card)
    query = ""
    if lang is not None:
        if lang not in LANGUAGES:
            raise UnknownTerm(f"no language {lang!r}")
        query = f"?lang={lang}"
    path = f"/rules/{game}{query}{anchor}"
    return current_app.config["BASE_URL"].rstrip("/") + path if absolute else path


# --------------------------------------------------------------------------- routes


@bp.get("/rules")
def index() -> ResponseReturnValue:
    """Every game's rules page."""
    _language_from_query()
    return render_template("pages/rules_index.html", games=games())


@bp.get("/rules/<game>")
def page(game: str) -> ResponseReturnValue:
    """The rules page of ``game`` in the visitor's language (``?lang=`` overrides it)."""
    _language_from_query()
    if not GAME_NAME_RE.fullmatch(game) or game not in listings():
        raise NotFound(_("there is no game called “%(name)s” here; the list of games "
                         "has a rules page for each", name=game[:40]))
    lang = language()
    cards, lookup = _cards_and_lookup(game, lang)
    return render_template("pages/rules.html", game=game, lang=lang, catalog=cards,
                           card=lookup, sections=SECTIONS,
                           other_languages=[c for c in LANGUAGES if c != lang])


def _language_from_query() -> None:
    """``?lang=de`` speaks German on this page (as a seat's own pages do), whatever the
    cookie or browser says; an unknown value is ignored."""
    lang = request.args.get("lang")
    if lang in LANGUAGES:
        g.language = lang
