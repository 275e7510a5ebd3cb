"""The public JSON API, version 1 (``/api/v1/...``): a seat's view, its legal actions, a
move, a message to the table, waiting for a change, the host's overview, and the OpenAPI
document of it all (docs/api.md says how to use it).

JSON only, every refusal too (``{"error": {"code", "message"}}``: ``ApiError``); never
an HTML page. A seat is known by its game page link's token and the host by the host
page's, sent as ``Authorization: Bearer <token>`` and nowhere else (a token in an
address lands in logs); cookies are never read, so no CSRF token is asked (a browser
sends no Authorization header to another site on its own). Each route parses the
request, calls one service of ``pbem.services.api`` and answers its value as JSON.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, current_app, request
from pydantic import TypeAdapter, ValidationError
from pydantic.json_schema import JsonSchemaMode
from werkzeug.exceptions import HTTPException

from pbem.errors import AlreadyRecorded, IllegalMove, ServiceError, StaleVersion
from pbem.forms import DB_INT_MAX
from pbem.services import api
from pbem.services.api import (
    ActRequest,
    ApiError,
    Changed,
    ErrorBody,
    TalkRequest,
)

PREFIX = f"/api/{api.API_VERSION}"
bp = Blueprint("api", __name__, url_prefix=PREFIX)

MAX_BODY = 64 * 1024  # bytes of a request's body read at most
BEARER_RE = re.compile(r"[A-Za-z0-9_-]{43}")  # the form of every link's token
WAIT_STEP = 0.1  # seconds between two looks at the game while a wait holds
BUSY_RETRY_AFTER = 2  # seconds: a wait refused for want of a slot says to ask again after


# --------------------------------------------------------------------------- answers


def answer(value: object, status: int = 200) -> Response:
    return Response(api.dump(value), status, mimetype="application/json")


def refusal(status: int, code: str, message: str, **extra: Any) -> Response:
    resp = answer(ApiError(ErrorBody(code, message, **extra)), status)
    if status == 401:
        resp.headers["WWW-Authenticate"] = 'Bearer realm="pbem"'
    return resp


def service_refusal(exc: ServiceError) -> Response:
    """A service's refusal: its status and stable code (the engine's own for a move it
    refused: 422), with the game's version now for a stale or repeated move."""
    if isinstance(exc, IllegalMove):
        return refusal(422, exc.reason, "the game does not take that action now",
                       kind=exc.kind)
    extra: dict[str, Any] = {}
    if isinstance(exc, StaleVersion):
        extra["version"] = exc.data.get("version")
    elif isinstance(exc, AlreadyRecorded) or exc.status == 409:
        extra["version"] = _version_now()
    status = 422 if exc.status == 400 else exc.status
    code = str(exc.data.get("reason") or exc.code)
    return refusal(status, code, str(exc.message), **extra)


def _version_now() -> int | None:
    try:
        return api.changed(bearer()).version
    except ServiceError:
        return None


def http_refusal(exc: HTTPException) -> Response:
    code = exc.code or 400
    messages = {404: ("route/unknown", "there is no such route in this API"),
                405: ("route/method", "this route does not take that method"),
                413: ("request/too_large", "the request's body is too large")}
    found = messages.get(code, ("request/invalid", "the request could not be read"))
    return refusal(code if code < 500 else 500, *found)


def is_api_request() -> bool:
    return request.path == PREFIX or request.path.startswith(PREFIX + "/")


# --------------------------------------------------------------------------- requests


def bearer() -> str | None:
    """The token of the request's ``Authorization: Bearer`` header, or None."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip(" ")
    if scheme.lower() != "bearer" or not BEARER_RE.fullmatch(token):
        return None  # (a line break, a control character, anything not a token's)
    return token


def body(cls: type[api.T]) -> api.T:
    """The request's JSON body read as ``cls`` (ValidationError, ValueError otherwise)."""
    raw = request.stream.read(MAX_BODY + 1)
    if len(raw) > MAX_BODY:
        raise _TooLarge()
    return api.parse(cls, raw)


class _TooLarge(Exception):
    pass


def int_arg(name: str, default: int) -> int:
    value = request.args.get(name)
    if value is None:
        return default
    if not value.isascii() or not value.isdigit() or len(value) > 10 \
            or int(value) > DB_INT_MAX:
        raise ValueError(name)
    return int(value)


def guarded(route: Callable[..., Response]) -> Callable[..., Response]:
    """Refusals as JSON: a body or an argument that cannot be read is 400."""
    @functools.wraps(route)
    def wrapped(*args: Any, **kwargs: Any) -> Response:
        try:
            return route(*args, **kwargs)
        except (ValidationError, ValueError, UnicodeDecodeError):
            return refusal(400, "request/invalid", "the request's JSON or arguments do not "
                           "match this route (see /api/v1/openapi.json)")
        except _TooLarge:
            return refusal(413, "request/too_large", "the request's body is too large")
        except ServiceError as exc:
            return service_refusal(exc)
    return wrapped


# --------------------------------------------------------------------------- routes


@bp.get("/seat")
@guarded
def seat() -> Response:
    """The seat's view; ``?since=SEQ``: the events after that one (default 0: all)."""
    return answer(api.seat_view(bearer(), int_arg("since", 0)))


@bp.get("/seat/legal")
@guarded
def legal() -> Response:
    """The seat's open decision and its legal actions in the game's notation."""
    return answer(api.legal(bearer()))


@bp.get("/seat/world")
@guarded
def world() -> Response:
    """A world the seat cannot tell from its game, for its own search bot."""
    return answer(api.world(bearer()))


@bp.post("/seat/act")
@guarded
def act() -> Response:
    """Play an action: ``{"decision", "version", "action"}``."""
    raw = bearer()
    api.changed(raw)  # who asks, before what they ask is read
    return answer(api.act(raw, body(ActRequest)))


@bp.post("/seat/talk")
@guarded
def talk() -> Response:
    """Post a message to the table: ``{"text"}``."""
    raw = bearer()
    api.changed(raw)
    return answer(api.talk(raw, body(TalkRequest)))


@bp.get("/seat/wait")
@guarded
def wait() -> Response:
    """Hold until the game page's version differs from ``?version=N`` (the view's
    ``game.page_version``), at most ``API_WAIT_SECONDS`` (then 204): the counters
    now. Without ``version``, the counters at once."""
    raw = bearer()
    now = api.changed(raw)
    if "version" not in request.args:
        return answer(now)
    seen = int_arg("version", 0)
    if now.page_version != seen:
        return answer(now)
    with wait_slot() as held:
        if not held:
            resp = refusal(429, "wait/busy", "as many waits as this server holds at once "
                           "are holding; ask again after Retry-After seconds")
            resp.headers["Retry-After"] = str(BUSY_RETRY_AFTER)
            return resp
        until = time.monotonic() + float(current_app.config["API_WAIT_SECONDS"])
        while now.page_version == seen:
            if time.monotonic() >= until:
                return Response(status=204)
            time.sleep(WAIT_STEP)
            now = api.changed(raw)
    return answer(Changed(now.version, now.page_version))


@contextlib.contextmanager
def wait_slot() -> Iterator[bool]:
    """One of the ``API_WAIT_SLOTS`` slots a holding wait takes (True), or none free
    (False). A web worker answers one request at a time: a wait holds its worker, so
    only so many may hold at once on this machine, the other workers left to the pages.
    The slots are files locked with ``flock`` in ``API_WAIT_DIR`` (the instance
    folder's api-wait: shared by every worker process of the machine; a worker that
    dies lets its slot go with it)."""
    folder = Path(current_app.config["API_WAIT_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    for slot in range(max(0, int(current_app.config["API_WAIT_SLOTS"]))):
        fd = os.open(folder / f"{slot}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        try:
            yield True
        finally:
            os.close(fd)  # (closing the file lets the lock go)
        return
    yield False


@bp.get("/host")
@guarded
def host() -> Response:
    """The host's overview (the host page's token)."""
    return answer(api.host_view(bearer()))


@bp.get("/openapi.json")
def openapi() -> Response:
    return Response(json.dumps(document()), mimetype="application/json")


# --------------------------------------------------------------------------- the document


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(name: str) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": _ref(name)}}}


ROUTES: dict[tuple[str, str], dict[str, Any]] = {
    ("get", "/seat"): {"summary": "The seat's view", "answer": "SeatView",
                       "query": {"since": "the events after this one (default 0: all)"}},
    ("get", "/seat/legal"): {"summary": "The seat's open decision and its legal actions",
                             "answer": "Legal"},
    ("get", "/seat/world"): {"summary": "A world the seat cannot tell from its game "
                                        "(all it cannot know drawn anew), for its own bot",
                             "answer": "World"},
    ("post", "/seat/act"): {"summary": "Play an action", "answer": "Acted",
                            "request": "ActRequest"},
    ("post", "/seat/talk"): {"summary": "Post a message to the table", "answer": "Said",
                             "request": "TalkRequest"},
    ("get", "/seat/wait"): {"summary": "Wait until the game page changes",
                            "answer": "Changed",
                            "query": {"version": "the page_version seen (absent: answer "
                                                 "at once)"}},
    ("get", "/host"): {"summary": "The host's overview", "answer": "HostView"},
}


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document, its schemas made from the API's types (``pydantic``)."""
    keys: list[tuple[str, JsonSchemaMode, TypeAdapter[Any]]] = [
        (name, "validation" if name.endswith("Request") else "serialization", adapter)
        for name, adapter in api.ADAPTERS.items()]
    found, defs = TypeAdapter.json_schemas(keys, ref_template="#/components/schemas/{model}")
    schemas = dict(defs.get("$defs", {}))
    for (name, _mode), schema in found.items():
        schemas.setdefault(name, schema)
    paths: dict[str, Any] = {}
    for (method, path), route in ROUTES.items():
        op: dict[str, Any] = {
            "summary": route["summary"], "security": [{"bearer": []}],
            "responses": {"200": {"description": "done", **_json(route["answer"])},
                          "default": {"description": "refused", **_json("ApiError")}},
            "parameters": [{"name": key, "in": "query", "required": False,
                            "description": text,
                            "schema": {"type": "integer", "minimum": 0,
                                       "maximum": DB_INT_MAX}}
                           for key, text in route.get("query", {}).items()]}
        if "request" in route:
            op["requestBody"] = {"required": True, **_json(route["request"])}
        if path == "/seat/wait":
            op["responses"]["204"] = {"description": "nothing changed meanwhile"}
        paths.setdefault(PREFIX + path, {})[method] = op
    return {"openapi": "3.1.0",
            "info": {"title": "pbem", "version": api.API_VERSION,
                     "description": "A seat's game through its game page link's token; "
                                    "the host's overview through the host page's."},
            "paths": paths,
            "components": {"schemas": schemas,
                           "securitySchemes": {"bearer": {"type": "http",
                                                          "scheme": "bearer"}}}}
bp.register_error_handler(HTTPException, http_refusal)
