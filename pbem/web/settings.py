"""What a player sets, by address or by seat: asking for the list of one's games and
opening one from it, a seat's language and notifications (emails, and the browsers
notified by Web Push, with their service worker), and unsubscribing (RFC 8058 one-click,
or a page with the choices)."""

from __future__ import annotations

import secrets
from pathlib import Path

from flask import (
    Blueprint,
    current_app,
    render_template,
    request,
    session,
)
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _

from pbem import services
from pbem.errors import (
    FormInvalid,
    InvalidInput,
    LinkExpired,
    NotFound,
)
from pbem.web import done
from pbem.web.common import (
    check_csrf,
    message_page,
    require_sig,
    see_other,
)

bp = Blueprint("settings", __name__)


@bp.route("/my", methods=["GET", "POST"])
def my_games_ask() -> ResponseReturnValue:
    """Ask for a link to one's games. The answer is the same whether the address plays
    here or not (``?done=sent``); the link goes to the address only."""
    if request.method != "POST":
        if request.args.get("done") == "sent":
            return _my_games_sent()
        return _my_page()
    check_csrf()
    address = request.form.get("email", "")
    try:
        services.request_my_games(address)
    except FormInvalid as exc:
        return _my_page(address, dict(exc.errors).get("my-email"), status=exc.status)
    return see_other("/my", done="sent")


def _my_games_sent() -> tuple[str, int]:
    return message_page(_("Check your email"), _(
        "If this address plays in any game here, a link to the list of its games is on its "
        "way to it. The link works for a week; keep it private."), element="my-games-sent")


def _my_page(address: str = "", error: str | None = None, problem: str | None = None,
             status: int = 200) -> tuple[str, int]:
    csrf = session.setdefault("csrf", secrets.token_urlsafe(16))
    return render_template("pages/my.html", csrf=csrf, my_email=address, my_error=error,
                           problem=problem), status


@bp.get("/my/<raw>")
def my_games_list(raw: str) -> ResponseReturnValue:
    """The list of one's games; after its links were stopped (``?done=stopped``, and the
    link is indeed one of those stopped) the page that says so."""
    try:
        data = services.my_games(raw)
    except (NotFound, LinkExpired) as exc:
        if request.args.get("done") == "stopped" and services.my_links_stopped(raw):
            return _links_stopped()
        return _my_page(problem=exc.message, status=exc.status)
    return render_template("pages/my_games.html", data=data, raw=raw)


@bp.post("/my/<raw>/open")
def my_games_open(raw: str) -> ResponseReturnValue:
    """Open one game of the list: a fresh game-page link for that seat, then its page."""
    require_sig(raw)
    try:
        page = services.open_my_game(raw, request.form.get("seat", ""))
    except (NotFound, LinkExpired) as exc:
        return _my_page(problem=exc.message, status=exc.status)
    return see_other(f"/g/{page}")


@bp.post("/my/<raw>/host")
def my_games_host(raw: str) -> ResponseReturnValue:
    """Open the host page of a game of the list that the address hosts: a fresh host
    link, then its page."""
    require_sig(raw)
    try:
        admin = services.open_my_host_page(raw, request.form.get("game", ""))
    except (NotFound, LinkExpired) as exc:
        return _my_page(problem=exc.message, status=exc.status)
    return see_other(f"/admin/{admin}")


@bp.post("/my/<raw>/stop")
def my_games_stop(raw: str) -> ResponseReturnValue:
    """Revoke every link to the list of this address (this one too)."""
    require_sig(raw)
    try:
        services.stop_my_links(raw)
    except (NotFound, LinkExpired) as exc:
        return _my_page(problem=exc.message, status=exc.status)
    return see_other(f"/my/{raw}", done="stopped")


def _links_stopped() -> tuple[str, int]:
    return message_page(_("Links stopped"), _(
        "Every link to your games has stopped working, this one too. Your next email of a "
        "game brings a new one; or ask for one on this page."), element="my-links-stopped")


@bp.post("/g/<raw>/language")
def player_language(raw: str) -> ResponseReturnValue:
    require_sig(raw)
    services.set_language(raw, request.form.get("lang", ""))
    return see_other(f"/g/{raw}", done="language")


@bp.post("/g/<raw>/notifications")
def notifications(raw: str) -> ResponseReturnValue:
    require_sig(raw)
    return see_other(f"/g/{raw}",
                     done=services.set_notifications(raw, request.form.get("how", "")))


# A browser's subscription is a few hundred bytes; anything much larger is not one.
MAX_PUSH_FORM = 8 * 1024


@bp.post("/g/<raw>/push")
def push_add(raw: str) -> ResponseReturnValue:
    """Notify this browser of the seat's turns and news: the page's script posts the
    subscription its browser made (``static/push.js``). Then the game page, saying so;
    or the error page with what was wrong (the script says it on the game page)."""
    require_sig(raw)
    if (request.content_length or 0) > MAX_PUSH_FORM:
        raise InvalidInput(_("this is too long to be a browser's subscription"))
    services.add_push_device(raw, request.form)
    return see_other(f"/g/{raw}", done="push_added")


@bp.post("/g/<raw>/push/remove")
def push_remove(raw: str) -> ResponseReturnValue:
    """Stop notifying one of the seat's browsers: ``device`` (the page's list) or
    ``endpoint`` (the page's script, for its own browser)."""
    require_sig(raw)
    if (request.content_length or 0) > MAX_PUSH_FORM:
        raise InvalidInput(_("choose a device to remove"))
    services.remove_push_device(raw, request.form.get("device"), request.form.get("endpoint"))
    return see_other(f"/g/{raw}", done="push_removed")


@bp.get("/sw.js")
def service_worker() -> ResponseReturnValue:
    """The service worker of the seat's browsers that asked to be notified: it shows a
    notification and opens the game page its browser kept. Its scope is the game pages
    (``/g/``); asked for again at least daily by browsers (``no-cache``)."""
    script = Path(current_app.static_folder or "", "sw.js").read_bytes()
    return script, {"Content-Type": "text/javascript; charset=utf-8",
                    "Cache-Control": "no-cache"}


@bp.route("/u/<raw>", methods=["GET", "POST"])
def unsubscribe(raw: str) -> ResponseReturnValue:
    """One-click unsubscribe (RFC 8058): a mail program POSTs ``List-Unsubscribe=
    One-Click`` without any form of ours, and gets the page that says what stopped (no
    browser shows it, so none reloads it); a person gets a page with the choices (and,
    once the address gets no email, one to let a bot play each seat it still holds),
    whose POST redirects to the page saying what was done (``?done=``,
    ``done.UNSUBSCRIBE``)."""
    if request.method == "POST":
        if request.form.get("List-Unsubscribe") == "One-Click":
            said = services.unsubscribe(raw, "one-click")
            return _unsubscribe_page(raw, str(done.NOTIFY_TEXT[said]))
        require_sig(raw)
        how = request.form.get("how", "")
        if how == "settings":
            return _address_settings(raw)
        return see_other(f"/u/{raw}", done=services.unsubscribe(raw, how,
                                                                request.form.get("seat")))
    return _unsubscribe_page(raw, said=request.args.get("done"))


def _unsubscribe_page(raw: str, text: str | None = None, said: str | None = None) -> str:
    info = services.describe_unsubscribe(raw)
    if said:
        text = done.say(done.UNSUBSCRIBE, said, info)
    return render_template("pages/unsubscribe.html", info=info, raw=raw, done=text)


def _address_settings(raw: str) -> ResponseReturnValue:
    """The address's settings for all of its games, saved (then the page says so); or
    the page again with what was wrong and the form as it was filled in."""
    try:
        services.save_address_settings(raw, request.form)
    except FormInvalid as exc:
        return render_template("pages/unsubscribe.html", raw=raw, errors=dict(exc.errors),
                               info=services.describe_unsubscribe(raw),
                               entered=request.form), exc.status
    return see_other(f"/u/{raw}", done="saved")

