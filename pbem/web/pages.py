"""Pages for everyone: the home page (its new-game form is the host's, see ``host``), the
language switch of pages shown to no seat (the health check is ``health``'s)."""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import (
    Blueprint,
    current_app,
    redirect,
    request,
)
from flask.typing import ResponseReturnValue

from pbem import i18n
from pbem.web.host import home_page

bp = Blueprint("pages", __name__)


@bp.get("/")
def home() -> ResponseReturnValue:
    return home_page({})


@bp.post("/language")
def choose_language() -> ResponseReturnValue:
    """The language switch of pages shown to no seat: a cookie, then back to the page."""
    lang = request.form.get("lang", "")
    resp = redirect(_local_path(request.form.get("next", "")), code=303)
    if lang in i18n.LANGUAGES:
        resp.set_cookie(i18n.COOKIE, lang, max_age=3600 * 24 * 365, samesite="Lax",
                        httponly=True, secure=current_app.config["SESSION_COOKIE_SECURE"])
    return resp


def _local_path(text: str) -> str:
    """``text`` if it is a path on this site (no scheme, no host, no backslash, no
    control character or blank that a browser might drop), else ``/``."""
    if (not text.startswith("/") or text.startswith("//") or "\\" in text
            or any(c <= " " or c == "\x7f" for c in text)):
        return "/"
    parts = urlsplit(text)
    return text if not parts.scheme and not parts.netloc else "/"
