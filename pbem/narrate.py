"""Game templates and narration for both kinds of output.

Everything particular to one game lives in its own template folder (its narration macros,
boards, decision form, rules): ``templates/games/<game>/`` for the games the server ships,
or the folder its registry listing names. The shared templates reach it through
``game_part(game, "board.txt")``, which names ``games/<game>/board.txt``; the loader finds
that in the game's folder, or else in ``templates/games/default/`` (boards and standings
from the narration's ``board`` macro, a form listing the legal moves, a plain rules page),
so a game needs only the parts it wants to do its own way. The words live in templates
and the translation catalogs. The same narration source serves plain-text emails and
HTML: a template named ``games/<game>/narration.jinja@html`` is that source compiled with
autoescaping, so a player called ``Bo&b "x"`` reads as typed in both (text is never
escaped, HTML always).

An email imports its game's narration once per part, as ``n``; the partials it includes
(events, deadlines, board, standings) use that one (``{% if n is not defined %}`` around
their own import, for when they stand alone): every ``import ... with context`` runs the
module again, a few dozen macro definitions each time.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import threading
import types
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from flask import Flask, current_app
from flask.templating import Environment as FlaskEnvironment
from flask_babel import get_locale
from jinja2 import (
    BaseLoader,
    ChoiceLoader,
    Environment,
    FileSystemLoader,
    Template,
    TemplateNotFound,
    Undefined,
    meta,
    nodes,
)
from jinja2.compiler import CodeGenerator, Frame
from jinja2.idtracking import VAR_LOAD_RESOLVE
from jinja2.runtime import Context, Macro
from jinja2.utils import _PassArg, internalcode, missing
from markupsafe import Markup

from engine.registry import Listing, listings
from pbem import TEMPLATES
from pbem.i18n import short_times

HTML_SUFFIX = "@html"
GAME_NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,30}")
NO_GAME = "games/none.jinja"  # an empty template: pages about a link that has no game
DEFAULT = "default"  # templates/games/default/: the parts a game does not provide
LANGUAGE_INFIX_RE = re.compile(r"\.[a-z]{2}\.")  # rules.de.html: the default is rules.html
NARRATION_IMPORT_RE = re.compile(r'''(import\s+"narration/[^"]+\.jinja)(")''')


_DICT_ATTRIBUTES = frozenset(dir(dict))
# Callables whose ``__call__`` is a method-wrapper or a plain method of their class (never
# marked ``pass_context``): whether they take the context is their own mark alone. (Not
# ``Macro``: its ``__call__`` takes the caller's eval context, so that a macro escapes as
# the template that calls it does; ``TemplateContext.call`` passes it.)
# An ``lru_cache`` wrapper (``ui_inline``, a fifth of an email's calls) is one: its
# ``__call__`` is a method-wrapper, and its ``jinja_pass_arg`` the wrapped function's.
_PLAIN_CALLABLES = frozenset({types.FunctionType, types.MethodType,
                              types.BuiltinFunctionType, functools.partial,
                              type(functools.lru_cache(maxsize=None)(len))})


class TemplateContext(Context):
    """Jinja's context, calling a macro or a function without asking twice whether its
    ``__call__`` takes the context (every ``{{ f(x) }}`` and macro call in a template goes
    through ``call``: several hundred an email). The same calls with the same arguments as
    ``Context.call``: for these types only the callable's own ``jinja_pass_arg`` can say
    what it takes."""

    @internalcode
    def call(__self, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        pass_arg: _PassArg | None
        if type(__obj) is Macro:  # Macro.__call__ is pass_eval_context
            pass_arg = _PassArg.eval_context
        elif type(__obj) in _PLAIN_CALLABLES:
            pass_arg = getattr(__obj, "jinja_pass_arg", None)
        else:
            return Context.call(__self, __obj, *args, **kwargs)
        if pass_arg is _PassArg.context:
            if kwargs.get("_loop_vars"):
                __self = __self.derived(kwargs["_loop_vars"])  # type: ignore[assignment]
            if kwargs.get("_block_vars"):
                __self = __self.derived(kwargs["_block_vars"])  # type: ignore[assignment]
            args = (__self, *args)
        elif pass_arg is _PassArg.eval_context:
            args = (__self.eval_ctx, *args)
        elif pass_arg is _PassArg.environment:
            args = (__self.environment, *args)
        if kwargs:
            kwargs.pop("_block_vars", None)
            kwargs.pop("_loop_vars", None)
        try:
            return __obj(*args, **kwargs)
        except StopIteration:
            return __self.environment.undefined(
                "value was undefined because a callable raised a StopIteration exception")


class NotingCodeGenerator(CodeGenerator):
    """Jinja's code generator, noting in its environment's ``context_reads`` the names
    each template it compiles reads from its context (as ``_ContextReads`` finds them),
    and in ``context_passes`` the templates that hand their context on (an include, an
    ``extends``, an import with context); and compiling ``{% import ... with context %}``
    as a call of ``TemplateEnvironment.import_module`` (``kept_import``)."""

    def enter_frame(self, frame: Frame) -> None:
        super().enter_frame(frame)
        reads: dict[str | None, set[str]] = self.environment.context_reads  # type: ignore[attr-defined]
        noted = reads.setdefault(self.name, set())
        for action, param in frame.symbols.loads.values():
            if action == VAR_LOAD_RESOLVE:
                noted.add(param)

    def _passes_context(self) -> None:
        self.environment.context_passes.add(self.name)  # type: ignore[attr-defined]

    def visit_Include(self, node: nodes.Include, frame: Frame) -> None:
        self._passes_context()
        super().visit_Include(node, frame)

    def visit_Extends(self, node: nodes.Extends, frame: Frame) -> None:
        self._passes_context()
        super().visit_Extends(node, frame)

    def _import_common(self, node: nodes.Import | nodes.FromImport, frame: Frame) -> None:
        if not node.with_context or self.environment.is_async:
            super()._import_common(node, frame)
            return
        self._passes_context()
        self.write("environment.import_module(environment.get_template(")
        self.visit(node.template, frame)
        self.write(f", {self.name!r}), context, {self.dump_local_context(frame)})")


class TemplateEnvironment(FlaskEnvironment):
    """Flask's template environment, with ``x.name`` on a plain dict (a game's view, its
    cards, a link) read as the item first: Jinja asks for the attribute first, and a dict
    has none but its methods', so every such read raised and caught an AttributeError
    (a good part of rendering a board). The same value as before: a name of a dict
    method (``items``...) still gives the method. Its context is ``TemplateContext``."""

    context_class = TemplateContext
    code_generator_class = NotingCodeGenerator

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # template name -> the names it reads from its context (``narration_module``)
        self.context_reads: dict[str | None, set[str]] = {}
        # the templates that hand their context on to another (``kept_import``)
        self.context_passes: set[str | None] = set()

    def import_module(self, template: Template, context: Context,
                      locals: dict[str, Any]) -> Any:  # noqa: A002 - Jinja's name
        """``{% import template as x with context %}`` (its generated code calls this)."""
        return kept_import(self, template, context, locals)

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        return super().getattr(obj, attribute)


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


class GameLoader(BaseLoader):
    """``games/<game>/<part>`` from the game's own folder (its listing's ``templates``, or
    ``games/<game>/`` beside the shared templates), else ``games/default/<part>``; any
    other name from ``inner``, the application's loader."""

    def __init__(self, inner: BaseLoader) -> None:
        self.inner = inner

    def get_source(self, environment: Environment,
                   template: str) -> tuple[str, str | None, Callable[[], bool] | None]:
        listing = _listing_of(template)
        if listing is None:
            return self.inner.get_source(environment, template)
        part = template.split("/", 2)[2]
        if listing.templates is not None:
            try:
                return FileSystemLoader(listing.templates).get_source(environment, part)
            except TemplateNotFound:
                pass
        for name in (template, f"games/{DEFAULT}/{part}",
                     f"games/{DEFAULT}/{LANGUAGE_INFIX_RE.sub('.', part)}"):
            try:
                return self.inner.get_source(environment, name)
            except TemplateNotFound:
                pass
        raise TemplateNotFound(template)

    def list_templates(self) -> list[str]:
        return self.inner.list_templates()


def _listing_of(template: str) -> Listing | None:
    """The registered game a template name ``games/<game>/<part>`` belongs to."""
    parts = template.split("/", 2)
    if len(parts) < 3 or parts[0] != "games":
        return None
    return listings().get(parts[1])


def game_file(game: str, part: str) -> Path | None:
    """The data file ``part`` of a registered game (``rules.toml``, ``ui.toml``): from its
    own folder, else from ``templates/games/default/``; None if neither has it."""
    listing = listings()[game]
    folders = [listing.templates] if listing.templates is not None else []
    folders += [TEMPLATES / "games" / game, TEMPLATES / "games" / DEFAULT]
    return next((f / part for f in folders if (f / part).is_file()), None)


def game_title(game: Any) -> str:
    """A game's title in the current language, from its registry listing (a Game row or an
    engine name; "" for none)."""
    engine = game if isinstance(game, str) else getattr(game, "engine", None)
    listing = listings().get(engine) if isinstance(engine, str) else None
    if listing is None:
        return ""
    locale = get_locale()
    return listing.title(locale.language if locale else "en")


def game_part(game: Any, part: str) -> str:
    """The template ``part`` of a game (a Game row or an engine name), e.g.
    ``games/stoneage/board.txt``; an empty template when there is no game."""
    if isinstance(game, Undefined):
        return NO_GAME
    engine = game if isinstance(game, str) else getattr(game, "engine", None)
    if not isinstance(engine, str) or not GAME_NAME_RE.fullmatch(engine):
        return NO_GAME
    return f"games/{engine}/{part}"


class NarratedLog:
    """The game log's entries as narrated on a page, kept in this process. An entry's
    words follow only from its event (kind, actor, data), the players' names, the
    reader's seat ("You ...") and the page's language (the printed cards a game's
    narration names are fixed for its game). A page at the end of a long game narrates
    its last two rounds, dozens of entries and most of its rendering time, the same words
    at every view. Kept by all of these (the event by its content, not its number: a
    restored database cannot bring back stale words); at most ``limit`` entries, the
    oldest quarter dropped when full. Not kept while templates reload on change
    (development), so an edited template shows at once."""

    def __init__(self, limit: int = 20_000) -> None:
        self.limit = limit
        self._entries: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()

    def __call__(self, event: Callable[..., Any], game: Any, e: Any, names: list[str],
                 card: Any, me: int | None = None) -> Any:
        """The words of the entry of event ``e`` (``event``: the narration's macro)."""
        return self.words(event, game, [e], names, card, me)[0]

    def words(self, event: Callable[..., Any], game: Any, events: list[Any],
              names: list[str], card: Any, me: int | None = None) -> list[Any]:
        """The words of each of ``events``, kept or narrated now."""
        if current_app.jinja_env.auto_reload:
            return [event(e, names, card, me) for e in events]
        language, who, out = str(get_locale()), tuple(names), []
        for e in events:
            raw = getattr(e, "raw", None)  # the data as stored (a LogEvent), else as JSON
            key = (game.id, e.kind, e.actor, raw if raw is not None else json.dumps(
                e.data, sort_keys=True), language, me, who)
            found = self._entries.get(key)
            if found is None:
                found = event(e, names, card, me)
                with self._lock:
                    if len(self._entries) >= self.limit:
                        for old in list(itertools.islice(self._entries, self.limit // 4)):
                            del self._entries[old]
                    self._entries[key] = found
            out.append(found)
        return out

    def lines(self, event: Callable[..., Any], game: Any,
              entries: list[tuple[Any, datetime, bool]], names: list[str], card: Any,
              me: int | None, zone: str) -> list[tuple[str, str, Any]]:
        """A part of the log as a page lists it, from its (event, time in the reader's
        zone, first of its day) entries: each as its time in ISO form (to the minute),
        its time as written (with the day for the first of a day, in ``zone``) and its
        words."""
        words = self.words(event, game, [e for e, _, _ in entries], names, card, me)
        days = iter(short_times([at for _, at, new_day in entries if new_day], zone))
        return [(at.isoformat(timespec="minutes"),
                 next(days) if new_day else at.strftime("%H:%M"), said)
                for (_, at, new_day), said in zip(entries, words, strict=True)]

    def __len__(self) -> int:
        return len(self._entries)


class EmailNarration:
    """A game's narration for the two parts of one email, each part's module made once
    (passed to both templates as ``n``: ``part(html)``), and the narration the two parts
    both say (the macros of ``SHARED``: news, choices, prompts...) said once.

    Text and HTML come from the same source and differ only in escaping: the HTML module
    escapes every value it writes (a name, a number...; its own words and the catalog's
    are written as they are), the text module none. So when a macro's text holds none of
    the characters escaping changes (``& < > " '``), no value it wrote needed escaping and
    its HTML is that text, character for character: the text part says it, and the HTML
    part reuses it; it is said again in HTML only when the text holds one (a player
    called ``O'Neil``, a translation with an apostrophe). The HTML module costs about
    twice the text one (escaping, ``Markup`` formatting). Answers are kept for this one
    email, by the macro and its arguments (strings, numbers and lists of them by value,
    other objects by identity: the same view, event or link of this email, kept alive
    with the answer).

    The modules are made as ``{% import ... with context %}`` at the top of an email's
    template would make them, with the variables of its render (``text_vars`` and
    ``html_vars``), except the HTML part's ``headline``, which the text part writes: a
    narration has no business with it; and shared with the next emails in the same
    language (``narration_module``)."""

    SHARED = frozenset({"event", "choice", "ask", "hint", "action", "prompt", "result"})

    def __init__(self, game: Any, text_vars: dict[str, Any], html_vars: dict[str, Any]) -> None:
        self.name = game_part(game, "narration.jinja")
        self.vars = (text_vars, html_vars)
        self.modules: list[Any] = [None, None]
        self.said: dict[tuple[Any, ...], list[Any]] = {}

    def module(self, html: bool) -> Any:
        found = self.modules[html]
        if found is None:
            env = current_app.jinja_env
            name = self.name + HTML_SUFFIX if html else self.name
            found = self.modules[html] = narration_module(env, name, self.vars[html])
        return found

    def part(self, html: bool) -> NarrationPart:
        return NarrationPart(self, html)

    def say(self, name: str, html: bool, *args: Any, **kwargs: Any) -> Any:
        key = (name, _said_key(args), _said_key(tuple(sorted(kwargs.items()))))
        said = self.said.get(key)
        if said is None:  # the text part says it first, but either may
            plain = getattr(self.module(False), name)(*args, **kwargs)
            marked = None if _ESCAPED.search(plain) else Markup(plain)
            # the arguments kept with the answer: an identity in the key stays theirs
            said = self.said[key] = [plain, marked, args, kwargs]
        if not html:
            return said[0]
        if said[1] is None:
            said[1] = getattr(self.module(True), name)(*args, **kwargs)
        return said[1]


class NarrationPart:
    """``n`` in one part of an email: the macros of that part's narration module, those
    of ``EmailNarration.SHARED`` said once for both parts."""

    def __init__(self, narration: EmailNarration, html: bool) -> None:
        self._narration, self._html = narration, html

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        narration, html = self._narration, self._html
        # a shared macro: the text module tells whether there is one (the same source)
        macro = getattr(narration.module(name not in EmailNarration.SHARED and html),
                        name)  # none: undefined
        if name in EmailNarration.SHARED and isinstance(macro, Macro):

            def shared(*args: Any, **kwargs: Any) -> Any:
                return narration.say(name, html, *args, **kwargs)
            macro = shared
        elif html and name in EmailNarration.SHARED:
            macro = getattr(narration.module(True), name)
        setattr(self, name, macro)
        return macro


_ESCAPED = re.compile(r"[&<>\"']")  # what markupsafe.escape changes

class _ContextReads(meta.TrackingCodeGenerator):
    """Every name a template reads from its context, the globals' too (a page's or an
    email's variables may give a global another value: ``_`` is bound per language)."""

    def enter_frame(self, frame: Frame) -> None:
        CodeGenerator.enter_frame(self, frame)
        for action, param in frame.symbols.loads.values():
            if action == VAR_LOAD_RESOLVE:
                self.undeclared_identifiers.add(param)


def context_reads(env: Environment, source: str) -> tuple[str, ...]:
    """The names template ``source`` reads from its context (sorted)."""
    generator = _ContextReads(env)
    generator.visit(env.parse(source))
    return tuple(sorted(generator.undeclared_identifiers))


# The narration modules made so far, by template and the values of the names it reads
# from its context; and the names each template reads.
_MODULES: dict[tuple[Any, ...], Any] = {}
_MODULES_KEPT = 256
_READS: dict[Any, tuple[str, ...]] = {}
_ABSENT = object()
# Functions that take the context but read no variable of it (only whether it escapes,
# which is the template's): the catalog's words, bound per language (``pbem.i18n``).
_CONTEXT_FREE = frozenset({"_", "gettext", "ngettext"})


# The types of value a module kept by ``kept_import`` may read from its context: the
# words of the catalog, the template's helpers, flags and names; no object of one page or
# email (a module kept holds the context it was made in).
_IMPORT_KEY_TYPES = frozenset({type(None), type(missing), bool, int, str, Markup, type,
                               types.FunctionType, types.BuiltinFunctionType,
                               type(functools.lru_cache(maxsize=None)(len))})


def kept_import(env: Environment, template: Template, context: Context,
                locals: dict[str, Any]) -> Any:  # noqa: A002 - Jinja's name
    """The module of ``{% import template as x with context %}`` in ``context``: Jinja
    makes it anew at every import (the whole module run: every macro defined again, the
    context copied), here kept in the process and shared, as ``narration_module`` keeps
    a narration, by the template, the language and the values of the names it reads from
    its context (its helpers, the words of the catalog, ``inline_css``: the same in every
    email of one language and part; a variable of the importing template, which Jinja
    passes on as ``locals``, in place of the context's). Made as Jinja makes it when the
    template hands its
    context on (an include, an import with context: what that one reads is not in the
    key), when a value read is of another type than ``_IMPORT_KEY_TYPES`` (a page's or an
    email's own objects), when it calls a function that takes the context and does not
    say which names of it it reads (``jinja_context_reads``), while templates reload on
    change (development)."""
    if env.auto_reload or _passes_context(env, template):
        return template.make_module(context.get_all(), True, locals)

    def get(name: str) -> Any:  # as the module's context will resolve it
        value = locals.get(name, missing)
        return value if value is not missing else context.resolve_or_missing(name)
    reads = _reads_of(env, template)
    values = [get(k) for k in reads]
    extra = _context_reads_key(template, reads, values, get)
    if extra is None or not all(map(_plain, values)) or not all(map(_plain, extra)):
        return template.make_module(context.get_all(), True, locals)
    key = (kept_import, template, str(get_locale()), *values, *extra)
    module = _MODULES.get(key)
    if module is None:
        module = template.make_module(context.get_all(), True, locals)
        if len(_MODULES) >= _MODULES_KEPT:
            _MODULES.clear()
        _MODULES[key] = module
    return module


_PASSES: dict[Any, bool] = {}


def _passes_context(env: Environment, template: Template) -> bool:
    """Whether ``template`` hands its context on (an include, ``extends``, an import
    with context): noted as it compiled here, else (loaded from a bytecode cache, as the
    tests' are) read from its source once."""
    passes = _PASSES.get(template)
    if passes is None:
        name = template.name
        if name in getattr(env, "context_reads", {}):
            passes = name in getattr(env, "context_passes", ())
        else:
            assert env.loader is not None and name is not None
            tree = env.parse(env.loader.get_source(env, name)[0])
            passes = (next(tree.find_all((nodes.Include, nodes.Extends)), None) is not None
                      or any(cast(nodes.Import, node).with_context
                             for node in tree.find_all((nodes.Import, nodes.FromImport))))
        _PASSES[template] = passes
    return passes


def _plain(value: Any) -> bool:
    """Whether a value read may key a kept module (``_IMPORT_KEY_TYPES``, or a tuple of
    them: ``memo_scope``)."""
    if type(value) is tuple:
        return all(type(v) in _IMPORT_KEY_TYPES for v in value)
    return type(value) in _IMPORT_KEY_TYPES


def _reads_of(env: Environment, template: Template) -> tuple[str, ...]:
    """The names ``template`` reads from its context (noted as it compiled)."""
    reads = _READS.get(template)
    if reads is None:
        name = template.name
        found = getattr(env, "context_reads", {}).get(name)  # noted as it compiled
        if found is None:  # from elsewhere (a bytecode cache): parsed once more
            assert env.loader is not None and name is not None
            found = context_reads(env, env.loader.get_source(env, name)[0])
        reads = _READS[template] = tuple(sorted(found))
    return reads


def _context_reads_key(template: Template, reads: tuple[str, ...], values: list[Any],
                       get: Callable[[str], Any]) -> list[Any] | None:
    """The values of the names that functions ``template`` calls read from its context
    (those taking the context, but for the catalog's words, say which by
    ``jinja_context_reads``: ``memo``, ``ui``); None if one of them does not say."""
    extra: list[Any] = []
    for read, value in zip(reads, values, strict=True):
        found = template.globals.get(read) if value is _ABSENT or value is missing else value
        if read not in _CONTEXT_FREE and getattr(found, "jinja_pass_arg",
                                                 None) is _PassArg.context:
            names = getattr(found, "jinja_context_reads", None)
            if names is None:
                return None
            extra += [get(k) for k in names]
    return extra


def narration_module(env: Environment, name: str, variables: dict[str, Any]) -> Any:
    """The module of narration template ``name`` as ``{% import name as n with context %}``
    makes it with ``variables``, kept in this process and shared by every email whose
    variables give the same values to the names the template reads from its context (its
    undeclared names: the words of the catalog, bound per language): making it runs the
    whole module (a few dozen macro definitions, twice an email). The language is part
    of the key too: the module's own lines run once, and may ask it (a game that brings
    its own words sets ``de = current_language() == "de"`` there); nothing else that
    changes from one email to the next may be read there. A macro reads nothing else of
    its module's context, unless it calls a function that takes the context
    (``pass_context``) other than the catalog's: a template that names one is made for
    each email, as is one given a value that cannot be a key, and every one while
    templates reload on change (development)."""
    template = env.get_template(name)
    if env.auto_reload:
        return template.make_module(variables)
    reads = _reads_of(env, template)
    values = [variables.get(k, _ABSENT) for k in reads]
    extra = _context_reads_key(template, reads, values,
                               lambda k: variables.get(k, _ABSENT))
    if extra is None:
        return template.make_module(variables)
    key = (template, str(get_locale()), *values, *extra)
    try:
        module = _MODULES.get(key)
    except TypeError:  # a value that is no key (a dict): made for this email alone
        return template.make_module(variables)
    if module is None:
        module = template.make_module(variables)
        if len(_MODULES) >= _MODULES_KEPT:
            _MODULES.clear()
        _MODULES[key] = module
    return module


_SAID_PLAIN = frozenset({str, int, float, type(None)})  # the common types, asked first


def _said_key(value: Any) -> Any:
    kind = type(value)
    if kind in _SAID_PLAIN:
        return (kind, value)
    if kind is list or kind is tuple:
        return (kind, tuple([(type(v), v) if type(v) in _SAID_PLAIN else _said_key(v)
                             for v in value]))
    if value is None or isinstance(value, (str, int, float)):
        return (type(value), value)  # a Markup is not its string, nor True 1
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(_said_key(v) for v in value))
    if isinstance(value, Undefined):
        return (Undefined, type(value))  # every undefined value says the same
    return (object, id(value))


def init_app(app: Flask) -> None:
    env = app.jinja_env
    env.globals["game_part"] = game_part
    env.globals["game_title"] = game_title
    env.globals["narrated"] = app.extensions["pbem.narrated"] = NarratedLog()
    assert env.loader is not None  # Flask's own: templates/ and the blueprints'
    games = GameLoader(env.loader)
    env.loader = ChoiceLoader([HtmlVariantLoader(games), games])
    env.autoescape = lambda name: bool(name and (name.endswith(HTML_SUFFIX)
                                                 or app.select_jinja_autoescape(name)))
