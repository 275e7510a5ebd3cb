"""What the blueprints share: the security headers and error pages, speaking a
seat's language, the checks of a form (the signature of a link's form, the session's
CSRF token), and a short page that says one thing."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from flask import (
    Flask,
    Request,
    current_app,
    g,
    redirect,
    render_template,
    request,
    session,
)
from flask.sessions import SecureCookieSession, SecureCookieSessionInterface
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_babel import refresh
from werkzeug.exceptions import HTTPException
from werkzeug.wrappers import Response

from pbem.errors import (
    NotFound,
    ServiceError,
)
from pbem.tokens import check_signature, same_secret

CSP = ("default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")


CSP_MAILBOX = CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")


SCRIPTS = "; script-src 'self'"


LOG_FETCH = "; connect-src 'self'"  # the game page's script fetches older rounds of the log


class CookieSessions(SecureCookieSessionInterface):
    """Flask's signed-cookie sessions, except that a request without a session cookie
    (nearly every one: only the home page's forms keep a CSRF token there) gets its empty
    session without the cookie's signer being built first, which Flask does on every
    request (about 15 µs, a good part of a 304's answer)."""

    def open_session(self, app: Flask, request: Request) -> SecureCookieSession | None:
        if app.secret_key and not request.cookies.get(self.get_cookie_name(app)):
            return self.session_class()
        return super().open_session(app, request)


def security_headers(resp: Response) -> Response:
    resp.headers.setdefault("Content-Security-Policy", CSP)
    resp.headers.setdefault("X-Content-Type-Options", "nosniff")
    resp.headers.setdefault("Referrer-Policy", "no-referrer")  # links carry secrets
    resp.headers.setdefault("X-Frame-Options", "DENY")
    resp.headers.setdefault("Cache-Control", "no-store")
    if current_app.config["BASE_URL"].startswith("https:"):
        resp.headers.setdefault("Strict-Transport-Security", "max-age=31536000")
    return resp


YEAR = 365 * 24 * 3600


def static_version(endpoint: str, values: dict[str, Any]) -> None:
    """A static file's address carries a hash of its content (``?v=``), so a browser keeps
    it for a year without asking again, and fetches a changed file at once."""
    if endpoint == "static" and "filename" in values and "v" not in values:
        values["v"] = _static_hash(str(values["filename"]))


def cache_static(resp: Response) -> Response:
    """A static file asked for by its current hash may be kept for a year."""
    version = request.args.get("v")
    if (request.endpoint == "static" and resp.status_code == 200 and version
            and version == _static_hash(str((request.view_args or {}).get("filename")))):
        resp.cache_control.no_cache = None
        resp.cache_control.public = True
        resp.cache_control.max_age = YEAR
        resp.cache_control.immutable = True
    return resp


def _static_hash(filename: str) -> str:
    """The hash of a static file's content ("" for no such file). Kept per file once the
    app runs for real (static files change with a new release, which restarts it); looked
    at again each time in debug mode, where they are being edited."""
    folder = current_app.static_folder or ""
    if current_app.debug:
        return _hash_now(folder, filename)
    return _kept_hash(folder, filename)


@lru_cache(maxsize=256)
def _kept_hash(folder: str, filename: str) -> str:
    return _hash_now(folder, filename)


def _hash_now(static_folder: str, filename: str) -> str:
    folder = Path(static_folder)
    path = (folder / filename).resolve()
    if not path.is_relative_to(folder.resolve()) or not path.is_file():
        return ""
    stat = path.stat()
    return _content_hash(str(path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=64)
def _content_hash(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def service_error(exc: ServiceError) -> tuple[str, int]:
    return render_template("pages/error.html", error=exc), exc.status


def _api_refusal(exc: HTTPException) -> ResponseReturnValue | None:
    """The JSON API's answer to an error the app handles (a route it does not have, a
    method it does not take): JSON, never a page."""
    from pbem.web import api

    return api.http_refusal(exc) if api.is_api_request() else None


def not_found(exc: HTTPException) -> ResponseReturnValue:
    if (resp := _api_refusal(exc)) is not None:
        return resp
    return render_template("pages/error.html", error=NotFound(_(
        "there is nothing at this address; the link may be mistyped or cut short"))), 404


def http_error(exc: HTTPException) -> ResponseReturnValue:
    if (resp := _api_refusal(exc)) is not None:
        return resp
    code = getattr(exc, "code", 400)
    message = (_("this address does not take that kind of request") if code == 405 else
               _("the request could not be read; go back and try again"))
    return render_template("pages/error.html", error=ServiceError(message)), code


def server_error(exc: HTTPException) -> ResponseReturnValue:  # pragma: no cover - a bug
    if (resp := _api_refusal(exc)) is not None:
        return resp
    return render_template("pages/error.html", error=ServiceError(_(
        "something went wrong on our side; nothing was changed"))), 500


def speak(language: str) -> None:
    """Speak ``language`` from here on in this request, even if a message was already
    translated (a refusal, a parsed number) and so fixed the language Babel had chosen."""
    g.language = language
    refresh()


def require_sig(raw: str) -> None:
    if not check_signature(current_app.config["SECRET_KEY"], raw, request.form.get("sig")):
        raise ServiceError(_("this form is out of date or did not come from this site; "
                             "open the link again"))


def check_csrf() -> None:
    expected = session.get("csrf")
    if not expected or not same_secret(expected, request.form.get("csrf", "")):
        raise ServiceError(_("the form expired; please fill it in again"))


def message_page(title: str, text: str, status: int = 200, element: str = "message",
             onward: list[tuple[str, str]] | None = None) -> tuple[str, int]:
    """A short page that says one thing, with links onwards (``onward``: address and
    words; the home page and a player's list of games are always offered)."""
    return render_template("pages/message.html", title=title, text=text, element=element,
                           onward=onward or []), status



def see_other(path: str, **query: str | int | None) -> Response:
    """Post/Redirect/Get: the answer of a POST that changed something, ``303 See Other``
    to a page of this site that says what happened, so that reloading it asks for that
    page again and never acts twice. ``path`` is built by the handler from the request's
    own link (never taken from a form: no open redirect); ``query`` (None: left out)
    holds only what the page checks before it says anything: a code from the page's
    fixed list of sentences (``pbem.web.done``), or the id of a row or a link made by
    the POST, read back from the database (a link can forge no message)."""
    if not path.startswith("/") or path.startswith("//") or "\\" in path:
        raise ValueError(f"not a path of this site: {path!r}")
    pairs = {key: str(value) for key, value in query.items() if value is not None}
    return redirect(f"{path}?{urlencode(pairs)}" if pairs else path, code=303)
