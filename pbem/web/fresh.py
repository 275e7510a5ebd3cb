"""Conditional GETs of the game pages: an ETag that names what the page shows, and
``304 Not Modified`` without building the page when the browser's copy is current (a page
left open that asks every few seconds whether anything changed).

The ETag of a game page is ``"<digest>.<until>.<csp>"``:

- ``digest``: SHA-256 of the code's version (``build_id``: the package version and the
  content of the code, templates, catalogs and static files, hashed once per process),
  the app's secret key (the page's forms carry signatures made with it) and base URL, the
  page's stamp (``services.PageStamp``: who reads, and the game's counters that move with
  every change a page shows), and what else the page depends on (``variant``: for the
  spectators' page the language the visitor chose and the address it was asked by);
- ``until``: the Unix time from which the page reads otherwise with the clock alone (a
  time of the log written with its weekday that will need its date:
  ``i18n.changes_at``), 0 for never;
- ``csp``: which Content-Security-Policy the page carries (``CSPS``), so that a 304
  carries the same headers as the page it confirms.

A request whose ``If-None-Match`` holds the current digest, before its ``until``, is
answered 304 from the stamp alone: one indexed read, no state, no log, no template. Any
doubt (a link that opens no page, a tag of another form, a debug server that reloads its
templates) gets the whole page, which says what is wrong.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from flask import Response, current_app, request

import engine
from pbem import PACKAGE, TEMPLATES, i18n
from pbem.services import PageStamp
from pbem.web.common import CSP, LOG_FETCH, SCRIPTS

# The security policies a game page may carry, by their letter in the ETag.
CSPS = {"p": CSP, "s": CSP + SCRIPTS + LOG_FETCH}
# A browser keeps the page but asks before showing it again (never a stale board); only
# the player's own browser keeps it (the address is a secret link).
CACHE_CONTROL = "private, no-cache"


@functools.cache
def build_id() -> str:
    """A hash of the code that renders pages: the package version and every file of the
    server package (code, catalogs, static files), the engine package and the templates,
    by their path and content (the same on every machine a deploy puts them on)."""
    digest = hashlib.sha256()
    with contextlib.suppress(metadata.PackageNotFoundError):  # a checkout never installed
        digest.update(metadata.version("pbem").encode())
    for root in (PACKAGE, Path(engine.__file__).resolve().parent, TEMPLATES):
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(f"\0{root.name}/{path.relative_to(root).as_posix()}\0".encode())
                with contextlib.suppress(OSError):  # unreadable: its name must do
                    digest.update(path.read_bytes())
    return digest.hexdigest()


def _digest(stamp: PageStamp, variant: str) -> str:
    config = current_app.config
    text = (f"{build_id()}|{config['SECRET_KEY']}|{config['BASE_URL']}|{stamp.text()}|"
            f"{variant}")
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def unchanged(stamp_of: Callable[[], PageStamp | None], variant: str = "",
              vary: str | None = None) -> Response | None:
    """A 304 for a request whose ``If-None-Match`` names the page as it is now (the stamp
    from ``stamp_of``, read only when there is a tag to compare), else None: build the
    page. ``vary``: the request headers the page depends on (a ``Vary`` header)."""
    tags = request.if_none_match
    if not tags or current_app.jinja_env.auto_reload:
        return None
    stamp = stamp_of()
    if stamp is None:
        return None
    digest, now = _digest(stamp, variant), datetime.now(UTC).timestamp()
    for tag in tags.as_set(include_weak=True):
        mine, _, rest = str(tag or "").partition(".")  # an empty tag is parsed as None
        until, _, csp = rest.partition(".")
        if mine == digest and csp in CSPS and until.isdigit() and (
                until == "0" or now < int(until)):
            resp = current_app.response_class(status=304)
            _headers(resp, tag, CSPS[csp], vary)
            return resp
    return None


# Where a live game page writes its own ETag, for its script to ask with (``tag``).
LIVE_TAG = b"@@pbem-etag@@"


def tag(resp: Response, stamp: PageStamp, variant: str = "", vary: str | None = None,
        headers: bool = True) -> Response:
    """``resp``, the page of ``stamp`` just rendered in this request, with its ETag (see
    the module's description) and the cache headers of a page that is asked for again
    (``headers``: a plain GET); the ETag also where the page's live script reads it
    (``LIVE_TAG``), to ask whether the game moved on since."""
    etag = etag_of(resp, stamp, variant)
    body = resp.get_data()
    if LIVE_TAG in body:
        resp.set_data(body.replace(LIVE_TAG, (etag or "").encode()))
    if not headers or resp.status_code != 200 or etag is None:
        return resp  # not a page a 304 could stand for
    _headers(resp, etag, CSPS[etag.rpartition(".")[2]], vary)
    return resp


def etag_of(resp: Response, stamp: PageStamp, variant: str = "") -> str | None:
    """The ETag of the page ``resp`` of ``stamp`` just rendered (None: a page no tag can
    name, its security policy being none of ``CSPS``)."""
    policy = resp.headers.get("Content-Security-Policy", CSP)
    csp = next((letter for letter, text in CSPS.items() if text == policy), None)
    if csp is None:
        return None
    when = i18n.changes_at()
    until = int(when.timestamp()) if when is not None else 0
    return f"{_digest(stamp, variant)}.{until}.{csp}"


def _headers(resp: Response, etag: str, policy: str, vary: str | None) -> None:
    resp.set_etag(etag)
    resp.headers["Cache-Control"] = CACHE_CONTROL
    resp.headers["Content-Security-Policy"] = policy
    if vary:
        resp.vary.update(part.strip() for part in vary.split(","))
