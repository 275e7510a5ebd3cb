"""Template helpers for narration (deadlines). The words themselves live
in templates (``templates/narration/<game>.jinja``) and the translation catalogs."""

from __future__ import annotations

from flask import Flask

from pbem.mail import format_deadline


def register_filters(app: Flask) -> None:
    app.jinja_env.globals["format_deadline"] = format_deadline
