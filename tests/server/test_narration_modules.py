"""The narration modules emails share (``pbem.narrate.narration_module``): one per template
and language in the process, never one made for another language or for a template whose
macros may read more of their context."""

from __future__ import annotations

import functools
from typing import Any

from flask import Flask
from flask_babel import force_locale
from jinja2 import ChoiceLoader, DictLoader, pass_context, pass_environment, pass_eval_context
from jinja2.runtime import Context

from pbem import narrate, ui

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


def test_a_template_calling_memo_is_kept_per_value_of_the_names_memo_reads(app: Flask):
    """``memo`` reads the context it is called from (``memo_scope``, ``inline_css``): a
    module kept from one email must not draw the next one's cards in the other style,
    so those values are part of its key."""
    narrate._MODULES.clear()
    name = "games/stoneage/choices.html"
    assert "memo" in narrate.context_reads(
        app.jinja_env, app.jinja_env.loader.get_source(app.jinja_env, name)[0])
    text = module(app, name, "en")[0]
    assert module(app, name, "en")[0] is text
    with app.test_request_context(), force_locale("en"):
        variables: dict[str, Any] = {"inline_css": True}
        app.update_template_context(variables)
        html = narrate.narration_module(app.jinja_env, name, variables)
    assert html is not text


def test_a_function_reading_its_context_unsaid_makes_the_module_each_time(app: Flask,
                                                                         monkeypatch):
    """A function that takes the context and does not say which of its names it reads
    (``jinja_context_reads``) may read anything: no module that calls it is kept."""
    narrate._MODULES.clear()
    monkeypatch.delattr(ui.memo, "jinja_context_reads")
    name = "games/stoneage/choices.html"
    assert module(app, name, "en")[0] is not module(app, name, "en")[0]


# --------------------------------------------------------------------------- imports


BUTTON = '{% import "emails/_ui.html" as u with context %}{{ u.button("/x", "Go") }}'


def render(app: Flask, source: str, lang: str = "en", **variables: Any) -> str:
    with app.test_request_context(), force_locale(lang):
        return app.jinja_env.from_string(source).render(**variables)


def kept_imports() -> list[Any]:
    return [k for k in narrate._MODULES if k[0] is narrate.kept_import]


def test_an_import_with_context_is_kept_and_shared_by_renders_alike(app: Flask):
    narrate._MODULES.clear()
    first = render(app, BUTTON, inline_css=True, ui=ui.ui_inline)
    assert render(app, BUTTON, inline_css=True, ui=ui.ui_inline) == first
    assert len(kept_imports()) == 1
    assert 'style="' in first


def test_a_kept_import_never_draws_another_renders_styles(app: Flask):
    """The same import in an email (inline styles) and a page (classes): each its own."""
    narrate._MODULES.clear()
    email = render(app, BUTTON, inline_css=True, ui=ui.ui_inline)
    page = render(app, BUTTON)
    assert render(app, BUTTON, inline_css=True, ui=ui.ui_inline) == email
    assert 'style="' in email and 'class="btn btn-block"' in page
    assert len(kept_imports()) == 2


def test_a_kept_import_sees_the_importing_templates_own_variables(app: Flask):
    """A variable of the importing template where it imports (Jinja passes it on as a
    local: here ``with``'s) is the module's, not the render's."""
    narrate._MODULES.clear()
    source = "{% with ui = ui_inline %}" + BUTTON + "{% endwith %}"
    email = render(app, source, inline_css=True, ui_inline=ui.ui_inline)
    page = render(app, BUTTON, inline_css=True)  # the page's ui, reading inline_css
    assert email == page  # both inline: the same style either way
    assert render(app, source, ui_inline=ui.ui_inline) != render(app, BUTTON)


def test_an_import_of_a_template_passing_its_context_on_is_made_each_time(app: Flask,
                                                                          monkeypatch):
    """What a template included by the imported one reads is not in the key: such an
    import is made as Jinja makes it, every time; so is one reading a page's objects."""
    narrate._MODULES.clear()
    loader = app.jinja_env.loader
    extra = DictLoader({
        "t/outer.jinja": '{% macro m() %}{% include "t/inner.jinja" %}{% endmacro %}',
        "t/inner.jinja": "{{ who }}",
        "t/reads.jinja": "{% macro m() %}{{ data.who }}{% endmacro %}"})
    monkeypatch.setattr(app.jinja_env, "loader", ChoiceLoader([extra, loader]))
    outer = '{% import "t/outer.jinja" as o with context %}{{ o.m() }}'
    assert render(app, outer, who="Ann") == "Ann"
    assert render(app, outer, who="Bob") == "Bob"
    reads = '{% import "t/reads.jinja" as o with context %}{{ o.m() }}'
    assert render(app, reads, data={"who": "Ann"}) == "Ann"
    assert render(app, reads, data={"who": "Bob"}) == "Bob"
    assert kept_imports() == []


# --------------------------------------------------------------------------- calls


def test_template_context_calls_every_callable_kind_as_jinjas_context_does(app: Flask):
    """``TemplateContext.call`` skips Jinja's look at ``__call__`` for the callables of
    ``_PLAIN_CALLABLES`` and macros: each kind, marked to take the context, the eval
    context, the environment or nothing, gets the same arguments as ``Context.call``
    gives it."""
    template = app.jinja_env.from_string("{% macro m(x, y=0) %}{{ x }}/{{ y }}{% endmacro %}")
    context = template.new_context({})
    assert isinstance(context, narrate.TemplateContext)

    def seen(*args: Any, **kwargs: Any) -> tuple[Any, ...]:
        first = args[0] if args else None
        kind = ("context" if first is context else "eval" if first is context.eval_ctx
                else "env" if first is app.jinja_env else "value")
        return (kind, args[1:] if kind != "value" else args, tuple(sorted(kwargs.items())))

    class Holder:
        def method(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
            return seen(*args, **kwargs)

    callables: list[Any] = [len, Holder().method, functools.partial(seen, "p")]
    for mark in (None, pass_context, pass_eval_context, pass_environment):
        def plain(*args: Any, **kwargs: Any) -> tuple[Any, ...]:
            return seen(*args, **kwargs)
        fn = mark(plain) if mark else plain
        callables += [fn, functools.lru_cache(maxsize=None)(fn)]
    assert {type(c) for c in callables} >= narrate._PLAIN_CALLABLES
    for obj in callables:
        args = ("ab",) if obj is len else (1,)
        kwargs = {} if obj is len else {"y": 2}
        assert (narrate.TemplateContext.call(context, obj, *args, **kwargs)
                == Context.call(context, obj, *args, **kwargs)), obj
    macro = template.module.m
    assert narrate.TemplateContext.call(context, macro, "<b>", y=1) == Context.call(
        context, macro, "<b>", y=1)
