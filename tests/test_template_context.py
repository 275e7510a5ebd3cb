"""``pbem.narrate.TemplateContext.call`` makes the same calls as Jinja's own
``Context.call``, for every kind of callable a template may call: the same arguments
(the context, the eval context or the environment where the callable asks for it), the
same escaping of a macro called from a template that escapes otherwise, the same result
of a callable that raises StopIteration. Each template here renders once in an
environment with Jinja's context and once with ours; the outputs must be the same."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from jinja2 import DictLoader, Environment, pass_context, pass_environment, pass_eval_context
from markupsafe import Markup

from pbem.narrate import TemplateContext


def plain(x: Any = "") -> str:
    return f"<plain {x}>"


@pass_context
def with_context(ctx: Any, x: Any = "") -> str:
    return f"<ctx {ctx.get('who')} {ctx.get('item', '-')} {x}>"


@pass_eval_context
def with_eval_context(ev: Any, x: Any = "") -> str:
    return f"<eval autoescape={ev.autoescape} {x}>"


@pass_environment
def with_environment(env: Any, x: Any = "") -> str:
    return f"<env {type(env).__name__ == 'Environment'} {x}>"


def stops(x: Any = "") -> str:
    raise StopIteration


def markup(x: Any = "") -> Markup:
    return Markup("<b>{}</b>").format(x)


class Obj:
    def method(self, x: Any = "") -> str:
        return f"<method {x}>"

    @pass_context
    def __call__(self, ctx: Any, x: Any = "") -> str:  # a callable object: Jinja's path
        return f"<object {ctx.get('who')} {x}>"


CALLABLES: dict[str, Any] = {
    "plain": plain, "with_context": with_context, "with_eval_context": with_eval_context,
    "with_environment": with_environment, "stops": stops, "markup": markup,
    "method": Obj().method, "obj": Obj(), "builtin": len,
    "partial": functools.partial(plain, "p"),
    "partial_context": functools.partial(with_context, x="p"),
    "cls": str,
}

TEMPLATES = {
    "macros.txt": "{% macro m(x) %}<m {{ x }} {{ caller() if caller else '' }}>{% endmacro %}",
    "macros.html": "{% macro m(x) %}<m {{ x }}>{% endmacro %}",
    "calls.html": (
        "{% from 'macros.txt' import m as mt %}{% from 'macros.html' import m as mh %}"
        "{% macro local(x) %}[{{ x }}]{% endmacro %}"
        "{{ f('<a>') }}|{{ f() }}|{{ f(x='<k>') }}|"
        "{% for item in ['i1', '<i2>'] %}{{ f(item) }}{% endfor %}|"
        "{{ mt('<t>') }}|{{ mh('<h>') }}|{{ local('<l>') }}|"
        "{% call mt('<c>') %}<inner>{% endcall %}|{{ mt }}|"
        "{% set item = 'set' %}{{ f(item) }}"),
    "calls.txt": (
        "{% from 'macros.html' import m as mh %}{% from 'macros.txt' import m as mt %}"
        "{{ f('<a>') }}|{% for item in ['i1'] %}{{ f(item) }}{% endfor %}|"
        "{{ mh('<h>') }}|{{ mt('<t>') }}"),
}


def environment(context_class: type | None) -> Environment:
    env = Environment(loader=DictLoader(TEMPLATES),
                      autoescape=lambda name: bool(name and name.endswith(".html")))
    if context_class is not None:
        env.context_class = context_class
    return env


def render(env: Environment, name: str, f: Any) -> str:
    return env.get_template(name).render(f=f, who="<ann>")


def outcome(context_class: type | None, name: str, f: Any) -> tuple[str, str]:
    """What rendering ``name`` with ``f`` gives: its text, or the error it raises."""
    try:
        return "text", render(environment(context_class), name, f)
    except Exception as exc:  # noqa: BLE001 - compared, not hidden
        return type(exc).__name__, str(exc)


# the kinds a template here may call without an error (the others fail, in both, the
# same way: a partial hides what its function takes, so neither passes the context)
SUCCEED = {"plain", "with_context", "with_eval_context", "with_environment", "stops",
           "markup", "method", "obj"}


@pytest.mark.parametrize("kind", sorted(CALLABLES))
@pytest.mark.parametrize("name", ["calls.html", "calls.txt"])
def test_our_context_calls_every_kind_of_callable_as_jinjas_does(kind: str, name: str):
    f = CALLABLES[kind]
    theirs = outcome(None, name, f)
    assert outcome(TemplateContext, name, f) == theirs
    if kind in SUCCEED:
        assert theirs[0] == "text" and ("<m " in theirs[1] or "&lt;m " in theirs[1])
