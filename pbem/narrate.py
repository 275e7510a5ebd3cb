"""Template helpers for narration: names, cards and deadlines. The words themselves live
in templates (``templates/narration/<game>.jinja``) and the translation catalogs."""

from __future__ import annotations

from typing import Any

from flask import Flask

from pbem.mail import format_deadline


def register_filters(app: Flask) -> None:
    app.jinja_env.globals["format_deadline"] = format_deadline
    app.jinja_env.filters["plus_join"] = _plus_join


def _plus_join(items: list[Any], sep: str = ", ") -> str:
    return sep.join(str(i) for i in items)
