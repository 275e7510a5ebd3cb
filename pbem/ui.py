"""One set of styles for pages and emails.

Pages may not carry inline styles (the Content-Security-Policy allows style sheets from
this server only), and mail programs ignore most style sheets, so a board drawn for both
names its styles through ``ui(...)``:

    <div{{ ui("card", "cm-hunter") }}>

In a page that writes ``class="card cm-hunter"`` (the rules come from ``/ui.css``, built
from the same table); in an email (a template rendered with ``inline_css=True``) it writes
the rules themselves, ``style="…"``. The shared styles are below; a game adds its own
(card colours, ...) in ``templates/games/<game>/ui.toml``, a table of class name to CSS
declarations, with class names that start with the game's own prefix.

Each combination of names is joined once per process (a cache), so an email pays a
dictionary lookup per styled element, not a string build.
"""

from __future__ import annotations

import functools
import hashlib
import tomllib
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, current_app, request
from flask_babel import get_locale
from jinja2 import pass_context
from jinja2.runtime import Context
from markupsafe import Markup, escape

from engine.registry import listings
from pbem.narrate import game_file

# Colours keep a contrast of at least 4.5:1 with their background (WCAG AA).
STYLES: dict[str, str] = {
    # buttons: at least 44 px tall, the size of a fingertip
    "btn": ("display:inline-block;box-sizing:border-box;min-height:44px;padding:11px 16px;"
            "margin:0 0 8px 0;background:#1b5e8c;color:#ffffff;border:2px solid #1b5e8c;"
            "border-radius:8px;text-decoration:none;font-weight:bold;line-height:20px;"
            "font-size:16px"),
    "btn-block": "display:block;text-align:left",
    "btn-alt": "background:#ffffff;color:#1b5e8c",
    "btn-note": "display:block;font-weight:normal;font-size:14px",
    # a turn email's choices as short rows: a list, one row a choice (or a place with its
    # count links, each a fingertip: 44 x 40 px); a row the reader cannot take is greyed
    "ch-rows": "list-style:none;margin:0 0 10px 0;padding:0",
    "ch-row": ("margin:0;padding:5px 0 4px 0;border-top:1px solid #d6d6d6;line-height:1.35;"
            "font-size:15px"),
    "ch-row-off": "color:#595959;background:#f4f4f4;padding-left:6px;padding-right:6px",
    "ch-row-name": ("display:inline-block;min-width:104px;margin:0 4px 4px 0;font-weight:bold;"
                 "font-size:16px;vertical-align:middle"),
    "ch-row-tag": ("display:inline-block;padding:0 6px;border-radius:8px;background:#e9edf1;"
                "color:#1f1f1f;font-size:12px;font-weight:normal;vertical-align:middle"),
    "ch-row-note": "font-size:14px;color:#3d3d3d;vertical-align:middle",
    "ch-row-why": "font-size:14px;color:#5c3d00;font-style:italic",
    "ch-count": ("display:inline-block;box-sizing:border-box;min-width:40px;height:40px;"
              "margin:0 4px 4px 0;padding:0 6px;border-radius:8px;background:#1b5e8c;"
              "color:#fff;font-weight:bold;font-size:16px;line-height:40px;"
              "text-align:center;text-decoration:none;vertical-align:middle"),
    "ch-count-two": ("display:inline-block;box-sizing:border-box;min-width:40px;height:44px;"
                     "margin:0 4px 4px 0;padding:4px 6px 0 6px;border-radius:8px;"
                     "background:#1b5e8c;color:#fff;font-weight:bold;font-size:16px;"
                     "line-height:20px;text-align:center;text-decoration:none"),
    "ch-count-yield": "display:block;font-size:12px;font-weight:normal;line-height:14px",
    "ch-counts": "margin:4px 0 0 0",
    "ch-intro": "margin:0 0 4px 0;font-size:13px;color:#595959",
    "ch-row-plain": "margin:0 0 6px 0;padding:0",
    "ch-pick": ("display:block;box-sizing:border-box;min-height:44px;padding:8px 12px;"
             "border:2px solid #1b5e8c;border-radius:8px;background:#eef4fa;color:#0f4870;"
             "font-weight:bold;font-size:16px;line-height:1.3;text-decoration:none"),
    "ch-pick-off": "border:1px dashed #8a8a8a;background:#f4f4f4;color:#595959",
    "ch-pick-note": "display:block;font-weight:normal;font-size:14px;color:#3d3d3d",
    # a player's colour on a board picture, by seat (white or black text at 4.5:1 or
    # better); never alone: a token also carries the player's mark (see ``marks``)
    "tok": ("display:inline-block;box-sizing:border-box;min-width:22px;padding:1px 6px;"
            "margin:0 3px 3px 0;border-radius:11px;border:1px solid #1f1f1f;font-weight:bold;"
            "font-size:13px;line-height:18px;text-align:center;white-space:nowrap;"
            "vertical-align:middle"),
    "pc-0": "background:#b3261e;color:#ffffff",
    "pc-1": "background:#1f5a94;color:#ffffff",
    "pc-2": "background:#2e6b2e;color:#ffffff",
    "pc-3": "background:#f2c14e;color:#1f1f1f",
    "pc-4": "background:#6a3d9a;color:#ffffff",
    "panel-pc-0": "border-left:6px solid #b3261e",
    "panel-pc-1": "border-left:6px solid #1f5a94",
    "panel-pc-2": "border-left:6px solid #2e6b2e",
    "panel-pc-3": "border-left:6px solid #d9a21b",
    "panel-pc-4": "border-left:6px solid #6a3d9a",
    "legend": "margin:0 0 8px 0;font-size:14px;line-height:1.6",
    "legend-item": "display:inline-block;margin:0 10px 0 0;white-space:nowrap",
    "ask": "font-size:20px;line-height:1.3;margin:0 0 4px 0",
    "when": "margin:0 0 12px 0;color:#3d3d3d",
    "heads-up": ("margin:0 0 12px 0;padding:6px 10px;border-left:4px solid #8a5a00;"
                 "background:#fff6e0;color:#1f1f1f"),
    "muted": "color:#595959",
    "small": "font-size:13px",
    "h": "font-size:18px;margin:20px 0 8px 0",
    "events": "margin:0 0 8px 0;padding:0 0 0 20px",
    "cards": "margin:0 0 8px 0",
    "card": ("display:inline-block;vertical-align:top;box-sizing:border-box;width:152px;"
             "margin:0 6px 8px 0;border:1px solid #9a9a9a;border-radius:8px;"
             "background:#ffffff;color:#1f1f1f;font-size:13px;line-height:1.35;"
             "overflow:hidden"),
    "card-wide": "width:100%;max-width:316px",
    "card-head": ("overflow:hidden;padding:3px 8px;color:#ffffff;background:#4d4d4d;font-size:12px;"
                  "font-weight:bold;letter-spacing:0.02em"),
    "card-body": "padding:5px 8px 7px 8px",
    "card-name": "font-weight:bold;font-size:14px;margin:0 0 2px 0",
    "stats": "margin:0 0 6px 0",
    "stat": ("display:inline-block;padding:2px 8px;margin:0 4px 4px 0;border-radius:12px;"
             "background:#e9edf1;color:#1f1f1f;font-size:14px"),
    "stat-key": "background:#fff1c2",
    "panel": ("border:1px solid #b5b5b5;border-radius:8px;padding:8px 10px;margin:0 0 10px 0;"
              "background:#ffffff"),
    "panel-you": "border:2px solid #3d7d3d;background:#f3f9f3",
    "panel-title": "font-weight:bold;font-size:16px;margin:0 0 6px 0",
    "badge": ("display:inline-block;padding:1px 7px;border-radius:10px;background:#7a4b00;"
              "color:#ffffff;font-size:12px;font-weight:bold;vertical-align:middle"),
    "meter": "font-family:monospace;letter-spacing:1px;color:#7a3b00",
    "rank": "margin:0 0 12px 0;padding:0 0 0 24px;font-size:16px",
    "winner": "font-size:22px;line-height:1.3;margin:0 0 8px 0",
    "link": "color:#1b5e8c",
    "term": "color:inherit;text-decoration:underline;text-decoration-style:dotted",
    "right": "float:right",
    "line": "margin:0 0 2px 0",
}


def marks(names: list[str]) -> list[str]:
    """A short mark for each player, for the tokens of a board picture (a colour is never
    the only sign): the name's first letter, or as many first letters as tell it from
    the others' (at most three), else its seat's number; letters and digits only (a
    mark is never a piece of punctuation, nor cuts an entity of the name in two). Kept
    per list of names (a board asks once per player panel, in every email)."""
    return list(_marks(tuple(names)))


@functools.lru_cache(maxsize=1024)
def _marks(names: tuple[str, ...]) -> tuple[str, ...]:
    clean = ["".join(c for c in name if c.isalnum()) or "?" for name in names]
    out = []
    for i, name in enumerate(clean):
        for size in (1, 2, 3):
            mark = name[:size].upper() if size == 1 else name[0].upper() + name[1:size]
            others = [n[:size].lower() for j, n in enumerate(clean) if j != i]
            if name[:size].lower() not in others:
                break
        else:
            mark = str(i + 1)
        out.append(mark)
    return tuple(out)


def runs(items: list[Any], key: str) -> list[tuple[Any, list[Any]]]:
    """Consecutive ``items`` with the same value at ``key`` (a dotted path of dictionary
    keys, ``"action.at"``), in order: ``[(value, [items...]), ...]`` (Jinja's
    ``groupby`` sorts, and a ``selectattr`` per group costs a pass over all)."""
    path = key.split(".")
    out: list[tuple[Any, list[Any]]] = []
    for item in items:
        value = item
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if out and out[-1][0] == value:
            out[-1][1].append(item)
        else:
            out.append((value, [item]))
    return out


@functools.cache
def styles() -> dict[str, str]:
    """The shared styles and every game's own (a game may not redefine a shared one)."""
    table = dict(STYLES)
    for name in listings():
        path = game_file(name, "ui.toml")
        if path is None:
            continue
        with path.open("rb") as fh:
            own = tomllib.load(fh)
        for key, value in own.items():
            if key in table or not isinstance(value, str):
                raise ValueError(f"{path}: style {key!r} is taken or not a string")
            table[key] = value
    return table


@functools.cache
def _attribute(names: tuple[str, ...], inline: bool) -> Markup:
    table = styles()
    unknown = [n for n in names if n not in table]
    if unknown:
        raise KeyError(f"unknown style {unknown}")
    if inline:
        return Markup(' style="%s"') % ";".join(table[n] for n in names)
    return Markup(' class="%s"') % " ".join(names)


@pass_context
def ui(context: Context, *names: str) -> Markup:
    """`` class="…"`` in a page, `` style="…"`` in an email (``inline_css`` set)."""
    return _attribute(tuple(n for n in names if n), bool(context.get("inline_css")))


# The names of its context ``ui`` reads (``pbem.narrate.kept_import``: a module that calls
# it is kept per value of these).
ui.jinja_context_reads = ("inline_css",)  # type: ignore[attr-defined]


@functools.lru_cache(maxsize=4096)
def ui_inline(*names: str) -> Markup:
    """``ui`` of an HTML email (``inline_css``), passed to its render as ``ui``: kept by
    its arguments as written (a few dozen combinations in the templates), without the
    context ``ui`` reads on every call."""
    return _attribute(tuple(n for n in names if n), True)


MEMO_SIZE = 50_000
_memo: dict[tuple[object, ...], Markup] = {}


@pass_context
def memo(context: Context, *key: object, caller: Callable[[], str]) -> Markup:
    """``{% call memo(key...) %}body{% endcall %}``: the body rendered once per process
    for each key (a card drawn the same way in every email: its data, and implicitly the
    language, page or mail styles and the server's address of its links). The key must
    name everything else the body depends on."""
    scope = context.get(MEMO_SCOPE)
    full = (key, *(scope if scope is not None
                   else memo_scope(bool(context.get("inline_css")))))
    hit = _memo.get(full)
    if hit is None:
        hit = Markup(caller())
        if len(_memo) >= MEMO_SIZE:
            _memo.clear()
        _memo[full] = hit
    return hit


# A render that knows the names ``memo`` adds to each of its keys passes them under this
# name, ``memo_scope(inline_css)`` made once (an email's two parts: ``compose``): asking
# the locale and the application anew for every call was a good part of its cost.
MEMO_SCOPE = "memo_scope"


def memo_scope(inline_css: bool) -> tuple[str, bool, object]:
    """What ``memo`` adds to every key: the language, page or mail styles (the
    template's ``inline_css``), the server's address."""
    return (get_locale_name(), inline_css, current_app.config.get("BASE_URL"))


memo.jinja_context_reads = (MEMO_SCOPE, "inline_css")  # type: ignore[attr-defined]


def get_locale_name() -> str:
    locale = get_locale()
    return str(locale) if locale is not None else ""


def data_key(data: object) -> str:
    """A key for ``memo`` naming every field of a card's data: its ``repr`` (the view's
    plain data: strings, numbers, lists and dicts, whose ``repr`` tells any two apart;
    twice as quick as JSON with sorted keys, which a key does not need: the same view
    code builds the same dict in the same order)."""
    return repr(data)


@functools.cache
def stylesheet() -> str:
    return "".join(f".{escape(name)}{{{rules}}}\n" for name, rules in styles().items())


def css_view() -> Response:
    body = stylesheet()
    resp = Response(body, mimetype="text/css")
    resp.set_etag(hashlib.sha256(body.encode()).hexdigest()[:16])
    resp.cache_control.public = True
    resp.cache_control.max_age = 0 if current_app.debug else 3600
    resp.make_conditional(request)  # in place (304 when the browser has it already)
    return resp


def init_app(app: Flask) -> None:
    app.jinja_env.globals["ui"] = ui
    app.jinja_env.globals["memo"] = memo
    app.jinja_env.filters["data_key"] = data_key
    app.jinja_env.filters["marks"] = marks
    app.jinja_env.filters["runs"] = runs
    app.add_url_rule("/ui.css", "ui_css", css_view)
