"""Narration templates for both kinds of output.

The words live in templates (``templates/narration/<game>.jinja``) and the translation
catalogs. The same narration source serves plain-text emails and HTML: a template named
``narration/<game>.jinja@html`` is that source compiled with autoescaping, so a player
called ``Bo&b "x"`` reads as typed in both (text is never escaped, HTML always).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from flask import Flask
from jinja2 import BaseLoader, ChoiceLoader, Environment, TemplateNotFound

HTML_SUFFIX = "@html"
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


def init_app(app: Flask) -> None:
    env = app.jinja_env
    env.loader = ChoiceLoader([HtmlVariantLoader(env.loader), env.loader])
    env.autoescape = lambda name: bool(name) and (name.endswith(HTML_SUFFIX)
                                                  or app.select_jinja_autoescape(name))
