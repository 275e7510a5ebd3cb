"""The narration modules emails share (``pbem.narrate.narration_module``): one per template
and language in the process, never one made for another language or for a template whose
macros may read more of their context."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask_babel import force_locale

from pbem import narrate

NARRATION = "games/cavemen/narration.jinja"


def module(app: Flask, name: str, lang: str) -> tuple[Any, str]:
    """The module an email in ``lang`` gets, and what its ``prompt`` macro says (when it
    has one)."""
    with app.test_request_context(), force_locale(lang):
        variables: dict[str, Any] = {}
        app.update_template_context(variables)  # as an email's render does
        made = narrate.narration_module(app.jinja_env, name, variables)
        prompt = getattr(made, "prompt", None)
        return made, str(prompt("bid")) if prompt is not None else ""


def test_emails_in_one_language_share_a_narration_module(app: Flask):
    narrate._MODULES.clear()
    first, said = module(app, NARRATION, "en")
    again, said_again = module(app, NARRATION, "en")
    assert again is first
    assert said_again == said


def test_an_email_in_another_language_gets_a_module_of_its_own(app: Flask):
    narrate._MODULES.clear()
    english, said_en = module(app, NARRATION, "en")
    german, said_de = module(app, NARRATION, "de")
    assert german is not english
    assert said_de != said_en
    assert module(app, NARRATION, "de")[0] is german


def test_a_template_that_calls_a_function_reading_its_context_is_made_each_time(app: Flask):
    """``memo`` reads the context it is called from (``inline_css``): a module kept from
    one email could draw the next one's cards in the other style."""
    narrate._MODULES.clear()
    name = "games/stoneage/choices.html"
    assert "memo" in narrate.context_reads(
        app.jinja_env, app.jinja_env.loader.get_source(app.jinja_env, name)[0])
    assert module(app, name, "en")[0] is not module(app, name, "en")[0]
