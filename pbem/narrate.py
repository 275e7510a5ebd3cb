"""Game templates and narration for both kinds of output.

Everything particular to one game lives in ``templates/games/<game>/`` (its narration
macros, boards, decision form, rules); the shared templates reach it through
``game_part(game, "board.txt")``. The words live in templates and the translation
catalogs. The same narration source serves plain-text emails and HTML: a template named
``games/<game>/narration.jinja@html`` is that source compiled with autoescaping, so a
player called ``Bo&b "x"`` reads as typed in both (text is never escaped, HTML always).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flask import Flask
from jinja2 import BaseLoader, ChoiceLoader, Environment, TemplateNotFound, Undefined

HTML_SUFFIX = "@html"
GAME_NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,30}")
NO_GAME = "games/none.jinja"  # an empty template: pages about a link that has no game
NARRATION_IMPORT_RE = re.compile(r'''(import\s+"narration/[^"]+\.jinja)(")''')


class HtmlVariantLoader(BaseLoader):
    """``<name>@html`` loads ``<name>`` (its narration imports get ``@html`` too)."""

    def __init__(self, inner: BaseLoader) -> None:
        self.inner = inner

    def get_source(self, environment: Environment,
                   template: str) -> tuple[str, str | None, Callable[[], bool] | None]:
        if not template.endswith(HTML_SUFFIX):
            raise TemplateNotFound(template)
        source, filename, uptodate = self.inner.get_source(
            environment, template.removesuffix(HTML_SUFFIX))
        return NARRATION_IMPORT_RE.sub(rf"\g<1>{HTML_SUFFIX}\g<2>", source), filename, uptodate


def game_part(game: Any, part: str) -> str:
    """The template ``part`` of a game (a Game row or an engine name), e.g.
    ``games/stoneage/board.txt``; an empty template when there is no game."""
    if isinstance(game, Undefined):
        return NO_GAME
    engine = game if isinstance(game, str) else getattr(game, "engine", None)
    if not isinstance(engine, str) or not GAME_NAME_RE.fullmatch(engine):
        return NO_GAME
    return f"games/{engine}/{part}"


def init_app(app: Flask) -> None:
    env = app.jinja_env
    env.globals["game_part"] = game_part
    env.loader = ChoiceLoader([HtmlVariantLoader(env.loader), env.loader])
    env.autoescape = lambda name: bool(name) and (name.endswith(HTML_SUFFIX)
                                                  or app.select_jinja_autoescape(name))
