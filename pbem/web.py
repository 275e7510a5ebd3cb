"""Routes: thin handlers that parse input, call one service, and render.

GET and HEAD never change anything (mail scanners open every link); only the POST from a
confirmation page acts. Forms that act through a link carry ``sig`` = HMAC(secret, token);
the home page's forms (a new game, a link to one's games), which have no link, are
protected by a session CSRF token. Requests only queue email; the clock process sends it.
"""

from __future__ import annotations

import email
import email.policy
import email.utils
import ipaddress
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Flask,
    abort,
    current_app,
    g,
    redirect,
    render_template,
    request,
    session,
)
from flask_babel import LazyString, lazy_gettext, ngettext, refresh
from flask_babel import gettext as _

from pbem import i18n, mail, narrate, services, zones
from pbem.errors import (
    AlreadyRecorded,
    FormInvalid,
    IllegalMove,
    InvalidInput,
    LinkExpired,
    NotFound,
    RateLimited,
    ServiceError,
    TurnOver,
    WrongState,
)
from pbem.forms import DB_INT_MAX, parse_int
from pbem.tokens import check_signature, form_signature, same_secret

bp = Blueprint("web", __name__)
PLAYER_FIELD_RE = re.compile(r"^(?:name|email)(\d{1,4})$")
CSP = ("default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")
# The dev mailbox shows other people's HTML emails, whose styles are inline.
CSP_MAILBOX = CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")
# Pages with a script of ours (static/*.js; never inline): the home page picks the
# browser's time zone, the dev mailbox sizes an email's frame to its content, the game page
# loads the older rounds of its log when opened.
SCRIPTS = "; script-src 'self'"
LOG_FETCH = "; connect-src 'self'"  # the game page's script fetches older rounds of the log


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
    narrate.init_app(app)
    app.register_error_handler(ServiceError, _service_error)
    app.register_error_handler(404, _not_found)
    app.register_error_handler(405, _http_error)
    app.register_error_handler(400, _http_error)
    app.register_error_handler(500, _server_error)
    app.after_request(_security_headers)
    app.jinja_env.globals["sign"] = lambda raw: form_signature(app.config["SECRET_KEY"], raw)
    app.jinja_env.globals.update(timezone_choices=zones.choices,
                                 timezone_listed=zones.is_listed)


def _security_headers(resp):
    resp.headers.setdefault("Content-Security-Policy", CSP)
    resp.headers.setdefault("X-Content-Type-Options", "nosniff")
    resp.headers.setdefault("Referrer-Policy", "no-referrer")  # links carry secrets
    resp.headers.setdefault("X-Frame-Options", "DENY")
    resp.headers.setdefault("Cache-Control", "no-store")
    if current_app.config["BASE_URL"].startswith("https:"):
        resp.headers.setdefault("Strict-Transport-Security", "max-age=31536000")
    return resp


def _service_error(exc: ServiceError):
    return render_template("pages/error.html", error=exc), exc.status


def _not_found(exc):
    return render_template("pages/error.html", error=NotFound(_(
        "there is nothing at this address; the link may be mistyped or cut short"))), 404


def _http_error(exc):
    code = getattr(exc, "code", 400)
    message = (_("this address does not take that kind of request") if code == 405 else
               _("the request could not be read; go back and try again"))
    return render_template("pages/error.html", error=ServiceError(message)), code


def _server_error(exc):  # pragma: no cover - a bug if it ever runs
    return render_template("pages/error.html", error=ServiceError(_(
        "something went wrong on our side; nothing was changed"))), 500


def _speak(language: str) -> None:
    """Speak ``language`` from here on in this request, even if a message was already
    translated (a refusal, a parsed number) and so fixed the language Babel had chosen."""
    g.language = language
    refresh()


def _require_sig(raw: str) -> None:
    if not check_signature(current_app.config["SECRET_KEY"], raw, request.form.get("sig")):
        raise ServiceError(_("this form is out of date or did not come from this site; "
                             "open the link again"))


def _message(title: str, text: str, status: int = 200, element: str = "message",
             onward: list[tuple[str, str]] | None = None):
    """A short page that says one thing, with links onwards (``onward``: address and
    words; the home page and a player's list of games are always offered)."""
    return render_template("pages/message.html", title=title, text=text, element=element,
                           onward=onward or []), status


# --------------------------------------------------------------------------- new games


@bp.post("/language")
def choose_language():
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


@bp.get("/")
def home():
    return _home_page({})


def _home_page(form, errors: list[tuple[str, str]] = (), error: ServiceError | None = None,
               status: int = 200):
    """The home page: the new-game form (with every problem of a refused one, its values
    kept) and the form that asks for a link to one's games."""
    csrf = session.setdefault("csrf", secrets.token_urlsafe(16))
    resp = current_app.make_response((render_template(
        "pages/home.html", games=services.offered_games(), form=form, errors=dict(errors),
        error_list=list(errors), error=error, csrf=csrf), status))
    resp.headers["Content-Security-Policy"] = CSP + SCRIPTS
    return resp


def _check_csrf() -> None:
    expected = session.get("csrf")
    if not expected or not same_secret(expected, request.form.get("csrf", "")):
        raise ServiceError(_("the form expired; please fill it in again"))


@bp.post("/new")
def new_game():
    _check_csrf()
    form = request.form
    try:
        rows = _players_from_form(form)
        policy = {"hours_per_decision": form.get("hours", "48"),
                  "reminder_hours": form.get("reminders") or None,
                  "absent_after": form.get("absent_after", 2),
                  "absent_bot": form.get("absent_bot", "heuristic"),
                  "vacation_days": form.get("vacation_days", 7)}
        created = services.create_game(
            form.get("game") or services.offered_games()[0]["name"], rows, policy,
            title=form.get("title", ""), client=request.remote_addr or "unknown")
    except FormInvalid as exc:
        return _home_page(form, exc.errors, status=exc.status)
    except ServiceError as exc:
        return _home_page(form, error=exc, status=exc.status)
    host = next(p for p in rows if p is not None)
    return render_template("pages/created.html", host=host, game_id=created.game_id)


def _players_from_form(form) -> list[services.PlayerIn | None]:
    """The form's player rows, None for an empty one (it keeps its place, so a problem is
    shown at its row); a row beyond the largest game offered is refused, not dropped (one
    beyond the chosen game's largest number is refused by the service, at its row)."""
    rows = max(g["max"] for g in services.offered_games())
    beyond = [key for key in form if (m := PLAYER_FIELD_RE.match(key))
              and int(m.group(1)) >= rows and form.get(key, "").strip()]
    if beyond:
        raise InvalidInput(_("a game has at most %(n)s players; this form has more: remove "
                             "the extra ones", n=rows))
    players: list[services.PlayerIn | None] = []
    for i in range(rows):
        name, addr = form.get(f"name{i}", "").strip(), form.get(f"email{i}", "").strip()
        players.append(services.PlayerIn(name, addr, form.get(f"lang{i}", "en"),
                                         form.get(f"tz{i}", "UTC") or "UTC")
                       if name or addr else None)
    return players


# --------------------------------------------------------------------------- my games


@bp.route("/my", methods=["GET", "POST"])
def my_games_ask():
    """Ask for a link to one's games. The answer is the same whether the address plays
    here or not; the link goes to the address only."""
    if request.method != "POST":
        return _my_page()
    _check_csrf()
    address = request.form.get("email", "")
    try:
        services.request_my_games(address)
    except FormInvalid as exc:
        return _my_page(address, dict(exc.errors).get("my-email"), status=exc.status)
    return _message(_("Check your email"), _(
        "If this address plays in any game here, a link to the list of its games is on its "
        "way to it. The link works for a week; keep it private."), element="my-games-sent")


def _my_page(address: str = "", error: str | None = None, problem: str | None = None,
             status: int = 200):
    csrf = session.setdefault("csrf", secrets.token_urlsafe(16))
    return render_template("pages/my.html", csrf=csrf, my_email=address, my_error=error,
                           problem=problem), status


@bp.get("/my/<raw>")
def my_games_list(raw: str):
    try:
        data = services.my_games(raw)
    except (NotFound, LinkExpired) as exc:
        return _my_page(problem=exc.message, status=exc.status)
    return render_template("pages/my_games.html", data=data, raw=raw)


@bp.post("/my/<raw>/open")
def my_games_open(raw: str):
    """Open one game of the list: a fresh game-page link for that seat, then its page."""
    _require_sig(raw)
    try:
        page = services.open_my_game(raw, request.form.get("seat", ""))
    except (NotFound, LinkExpired) as exc:
        return _my_page(problem=exc.message, status=exc.status)
    return redirect("/g/" + page, code=303)


@bp.route("/host/confirm/<raw>", methods=["GET", "POST"])
def host_confirm(raw: str):
    if request.method == "POST":
        _require_sig(raw)
        _game_id, fresh, admin_raw = services.confirm_host(raw)
        if fresh:
            return _message(_("Game confirmed"),
                            _("Invitations are on their way to the players. Your host page "
                              "shows who has accepted; the game starts when everyone has."),
                            element="confirmed",
                            onward=[(f"/admin/{admin_raw}", _("Open your host page"))])
        return _already_confirmed()
    info = services.describe_host_confirm(raw)  # an unknown link gets the friendly 404 page
    if info["game"].status == "abandoned":
        return _message(_("Game ended"), _("The host ended this game before it started; "
                                           "nothing was sent to the players."), 409,
                        element="confirmed")
    if info["confirmed"]:
        return _already_confirmed()
    return render_template("pages/confirm.html", raw=raw, title=_("Confirm your game"),
                           question=_("Send the invitations to the players now?"),
                           button=_("Send invitations"))


def _already_confirmed():
    """A used confirmation link, opened or posted again: 409, as every used link answers."""
    return _message(_("Already confirmed"), _("This game is confirmed and the invitations "
                                              "are out. The game starts when everyone has "
                                              "accepted."), 409, element="confirmed")


@bp.route("/invite/<raw>", methods=["GET", "POST"])
def invitation(raw: str):
    info = services.describe_invitation(raw)
    if not info["answered"] and info["game"].status != "inviting":
        return _message(_("Game ended"), _("This game no longer waits for players: the "
                                           "host ended it."), 409, element="answered")
    if request.method == "POST" and not info["answered"]:
        _require_sig(raw)
        page = services.answer_invitation(raw, info["answer"] == "accept")[2]
        return render_template("pages/invited.html", info=info, done=True, page=page)
    if info["answered"]:
        return render_template("pages/invited.html", info=info, done=False), 409
    return render_template("pages/invited.html", info=info, raw=raw, done=False)


@bp.route("/handover/<raw>", methods=["GET", "POST"])
def handover(raw: str):
    """An invitation to take over a seat: a page, and only its POST answers."""
    info = services.describe_handover(raw)
    if request.method == "POST" and info["state"] == "open":
        _require_sig(raw)
        info["done"], page = services.answer_handover(raw, info["answer"] == "accept")
        return render_template("pages/handover.html", info=info, raw=raw, page=page)
    status = 200 if info["state"] == "open" else 409
    return render_template("pages/handover.html", info=info, raw=raw), status


# --------------------------------------------------------------------------- playing


@bp.route("/a/<raw>", methods=["GET", "POST"])
def one_click(raw: str):
    if request.method != "POST":  # GET and HEAD never act
        info = services.describe_token(raw)
        _speak(info["seat"].language)
        status = 409 if info.get("closed") else 200
        return render_template("pages/action.html", info=info, raw=raw), status
    if not check_signature(current_app.config["SECRET_KEY"], raw, request.form.get("sig")):
        info = services.describe_token(raw)  # a closed turn says so before a bad form does
        if info.get("closed"):
            return render_template("pages/action.html", info=info, raw=raw), 409
        _require_sig(raw)
    try:
        outcome = services.act_by_token(raw, request.form.get("choice"))
    except InvalidInput as exc:
        if isinstance(exc, IllegalMove):
            raise
        info = services.describe_token(raw)  # the page again, saying what was wrong
        _speak(info["seat"].language)
        return render_template("pages/action.html", info=info, raw=raw,
                               error=exc.data.get("reason", "choice/unknown")), 400
    except (AlreadyRecorded, TurnOver) as exc:
        if isinstance(exc, TurnOver) and services.is_on_bot(raw):
            services.come_back(raw)  # a player on a bot who acts through any link is back
            return _message(_("Welcome back"), _("A bot played your seat while you were "
                                                 "away. You play it again from your next "
                                                 "decision on; watch for the next email."))
        closed = "recorded" if isinstance(exc, AlreadyRecorded) else "closed"
        return render_template("pages/action.html", info={"closed": closed}, raw=raw), 409
    return _after_move(outcome)


def _after_move(outcome: services.Outcome):
    """A short page: what was recorded, who acts next, and this seat's next decision at
    once if it has one (no board or log: the game page has those)."""
    data = services.game_for_page(outcome.page_token, with_log=False) if outcome.again else None
    _speak(outcome.language)
    return render_template("pages/recorded.html", data=data, raw=outcome.page_token,
                           outcome=outcome)


@bp.get("/g/<raw>")
def game_page(raw: str):
    return _game_page(raw)


def _game_page(raw: str, status: int = 200, **extra: Any):
    data = services.game_for_page(raw)
    if data["seat"] is not None:
        _speak(data["seat"].language)
    return _with_log_script(data, render_template("pages/game.html", data=data, raw=raw,
                                                  **extra), status)


def _with_log_script(data: dict[str, Any], page: str, status: int = 200):
    """A game page whose log has folded rounds carries a script (static/log.js) that
    loads one when it is opened, from this server only; other pages run no script."""
    resp = current_app.make_response((page, status))
    if any(part.entries is None for part in data["log"]):
        resp.headers["Content-Security-Policy"] = CSP + SCRIPTS + LOG_FETCH
    return resp


@bp.get(f"/g/<raw>/log/<int(max={DB_INT_MAX}):number>")
def game_log_round(raw: str, number: int):
    """One round of the game log from the seat's view: a page of its own, or with
    ``?part=1`` only the round's entries (what the game page's script fetches)."""
    data = services.log_round_for_page(raw, number)
    if data["seat"] is not None:
        _speak(data["seat"].language)
    return _log_round(data, f"/g/{raw}")


@bp.get(f"/watch/<key>/log/<int(max={DB_INT_MAX}):number>")
def spectator_log_round(key: str, number: int):
    return _log_round(services.log_round_for_spectator(key, number), f"/watch/{key}")


def _log_round(data: dict[str, Any], back: str):
    if data["round"] is None:
        raise NotFound(_("this game's log has no such round"))
    if request.args.get("part"):
        return render_template("pages/_log_round.html", data=data)
    return render_template("pages/log_round.html", data=data, back=back)


@bp.post("/g/<raw>")
def game_act(raw: str):
    _require_sig(raw)
    form = request.form
    try:
        outcome = services.act_from_page(raw, form.get("decision_id"), form_command(form))
    except IllegalMove as exc:  # the page again, the form as entered, and what was wrong
        return _game_page(raw, 400, refusal=exc, entered=form)
    except (AlreadyRecorded, TurnOver) as exc:  # as a one-click link answers
        closed = "recorded" if isinstance(exc, AlreadyRecorded) else "closed"
        return render_template("pages/action.html", info={"closed": closed}, raw=raw), 409
    return _after_move(outcome)


MAX_FORM_COUNT = 20  # no count field of any game goes higher
MAX_FORM_WORDS = 40


def form_command(form) -> str:
    """The full decision form of any game as a command in the game's notation: ``choice``
    (a radio: a whole action as written, or a verb), else ``kind`` (the verb of a form
    with one), followed by the fields of that verb only: ``<verb>.word`` and
    ``<verb>.cards`` (words, repeatable), ``<verb>.amount`` (a number) and
    ``<verb>.count.<word>`` (the word N times, e.g. ``take.count.wood=2``). Fields of
    another verb are ignored, so "leave it" is read as itself whatever the pay fields
    hold. Nothing here knows a game or completes anything: the engine matches the words
    against the legal actions in full. Raises IllegalMove for a count that is not a
    number from 0 to MAX_FORM_COUNT."""
    choice = form.get("choice", "").strip() or form.get("kind", "").strip()
    if not choice:
        return ""
    verb = choice.split()[0]
    words = [choice, *form.getlist(f"{verb}.word"), *form.getlist(f"{verb}.cards")]
    amount = form.get(f"{verb}.amount", "").strip()
    if amount:
        words.append(amount)
    for key, value in form.items(multi=True):
        if key.startswith(f"{verb}.count.") and value.strip():
            words += [key.removeprefix(f"{verb}.count.")] * _count(value, verb)
    words = [w.strip() for w in words if w.strip()]
    if len(words) > MAX_FORM_WORDS:
        raise IllegalMove("form/too_long", verb)
    return " ".join(words)


def _count(value: str, verb: str) -> int:
    """A ``<verb>.count.<word>`` field: a whole number from 0 to MAX_FORM_COUNT, else the
    form again with what to enter."""
    try:
        return parse_int(value, 0, MAX_FORM_COUNT, "bad count")
    except InvalidInput:
        raise IllegalMove("form/count", verb) from None


@bp.get("/watch/<key>")
def spectator(key: str):
    data = services.game_for_spectator(key)
    return _with_log_script(data, render_template("pages/game.html", data=data, raw=None))


@bp.post("/g/<raw>/vacation")
def vacation(raw: str):
    _require_sig(raw)
    left = services.take_vacation(raw, request.form.get("days"))
    return _game_page(raw, notice=LazyString(lambda: ngettext(
        "Your deadlines moved. Vacation left: %(d)s day.",
        "Your deadlines moved. Vacation left: %(d)s days.", 1 if left == 1 else 2,
        d=i18n.number(left))))


@bp.post("/g/<raw>/back")
def come_back(raw: str):
    _require_sig(raw)
    services.come_back(raw)
    return _game_page(raw, notice=lazy_gettext("Welcome back: you play your seat again."))


NOTIFY_DONE = {
    "muted": lazy_gettext("From now on you get an email only when it is your turn (and "
                          "the result)."),
    "unmuted": lazy_gettext("You get every email of this game again."),
    "left": lazy_gettext("You left the game. A bot plays your seat, and the host has been "
                         "told."),
    "suppressed": lazy_gettext("This address will get no more email from this server."),
    "lists": lazy_gettext("This address will get no more lists of its games. The emails "
                          "of your games go on as before."),
    "ended": lazy_gettext("This game has ended, so it sends you nothing more. Your other "
                          "games go on as before."),
}


@bp.post("/g/<raw>/language")
def player_language(raw: str):
    _require_sig(raw)
    services.set_language(raw, request.form.get("lang", ""))
    return _game_page(raw, notice=lazy_gettext("Your language is saved; your next emails "
                                               "use it too."))


@bp.post("/g/<raw>/notifications")
def notifications(raw: str):
    _require_sig(raw)
    done = services.set_notifications(raw, request.form.get("how", ""))
    return _game_page(raw, notice=NOTIFY_DONE[done])


# --------------------------------------------------------------------------- unsubscribe


@bp.route("/u/<raw>", methods=["GET", "POST"])
def unsubscribe(raw: str):
    """One-click unsubscribe (RFC 8058): a mail program POSTs ``List-Unsubscribe=
    One-Click`` without any form of ours; a person gets a page with the choices (and,
    once the address gets no email, one to let a bot play each seat it still holds)."""
    done = None
    if request.method == "POST":
        how, seat = "one-click", None
        if request.form.get("List-Unsubscribe") != "One-Click":
            _require_sig(raw)
            how, seat = request.form.get("how", ""), request.form.get("seat")
        done = str(NOTIFY_DONE[services.unsubscribe(raw, how, seat)])
    return render_template("pages/unsubscribe.html", info=services.describe_unsubscribe(raw),
                           raw=raw, done=done)


# --------------------------------------------------------------------------- the host


@bp.get("/admin/<raw>")
def admin(raw: str):
    return _admin_page(raw)


def _as_host(raw: str) -> None:
    """Speak the host's language from here on (their messages and page)."""
    _speak(services.host_language(raw))


def _admin_page(raw: str, notice: str | None = None, error: str | None = None,
                status: int = 200):
    _as_host(raw)
    data = services.admin_data(raw)
    return render_template("pages/admin.html", data=data, raw=raw, notice=notice,
                           error=error), status


@bp.post("/admin/<raw>/remind")
def admin_remind(raw: str):
    """The host's "remind now" for one open decision (at most once per decision)."""
    _require_sig(raw)
    _as_host(raw)
    try:
        name, _when = services.remind_now(raw, request.form.get("decision"))
    except (AlreadyRecorded, WrongState, InvalidInput) as exc:
        return _admin_page(raw, error=exc.message, status=exc.status)
    return _admin_page(raw, _("Done: a reminder is on its way to %(name)s.", name=name))


@bp.post("/admin/<raw>/again")
def admin_play_again(raw: str):
    """Play again with the same players: a new game, and its host page (a second press
    opens the same new game)."""
    _require_sig(raw)
    _as_host(raw)
    try:
        created, _fresh = services.play_again(raw, client=request.remote_addr or "unknown")
    except (WrongState, InvalidInput, RateLimited) as exc:
        return _admin_page(raw, error=exc.message, status=exc.status)
    return redirect(f"/admin/{created.admin_token}", code=303)


@bp.post("/admin/<raw>/replace")
def admin_replace(raw: str):
    _require_sig(raw)
    _as_host(raw)
    position = parse_int(request.form.get("position", ""), 0, DB_INT_MAX,
                         _("choose the seat to re-invite"))
    services.replace_player(raw, position, _player_fields(request.form))
    return _admin_page(raw, _("Invitation sent."))


def _player_fields(f) -> services.PlayerIn:
    return services.PlayerIn(f.get("name", ""), f.get("email", ""), f.get("lang", "en"),
                             f.get("tz", "UTC") or "UTC")


def _hand_over(raw: str, f) -> str:
    done = services.hand_over(raw, f.get("position"), _player_fields(f))
    if done == "updated":
        return _("Done: the seat's name, language and time zone are updated.")
    return _("Invitation sent: the seat changes hands when they accept. Until then the "
             "seat stays as it is, and nothing else is sent to that address.")


def _abandon(raw: str, f) -> str:
    if f.get("sure") != "yes":
        raise ServiceError(_("tick the box to confirm that the game ends for everyone"))
    services.abandon_game(raw)
    return _("Done: the game is over for everyone.")


def _set_bot(raw: str, f) -> None:
    """Who plays a seat: a bot (``heuristic``, ``default``) or its player (empty). The
    form names no choice until the host makes one, so a press without one changes
    nothing."""
    if "bot" not in f:
        raise InvalidInput(_("choose who plays the seat: a bot or its player"))
    services.set_bot(raw, f.get("position"), f.get("bot") or None)


CONTROL_DONE = {
    "pause": lazy_gettext("Done: the game is paused."),
    "resume": lazy_gettext("Done: the game goes on."),
    "extend": lazy_gettext("Done: the deadline is extended."),
    "bot": lazy_gettext("Done: the seat is played as you chose."),
    "withdraw": lazy_gettext("Done: the offer is withdrawn."),
}

ADMIN_ACTIONS = {
    "pause": lambda raw, f: services.pause_game(raw),
    "resume": lambda raw, f: services.resume_game(raw),
    "extend": lambda raw, f: services.extend_deadline(raw, f.get("hours")),
    "abandon": _abandon,
    "bot": _set_bot,
    "handover": _hand_over,
    "withdraw": lambda raw, f: services.withdraw_handover(raw, f.get("position")),
}


@bp.post("/admin/<raw>/<control>")
def admin_control(raw: str, control: str):
    """The host's controls: pause, resume, extend, abandon, bot on/off, hand a seat over
    (or withdraw a hand-over not yet accepted)."""
    handler = ADMIN_ACTIONS.get(control)
    if handler is None:
        abort(404)
    _require_sig(raw)
    _as_host(raw)
    notice = handler(raw, request.form)
    return _admin_page(raw, notice if isinstance(notice, str) else str(CONTROL_DONE[control]))


@bp.get("/healthz")
def healthz():
    return {"ok": True}


# --------------------------------------------------------------------------- dev mailbox


def _mailbox() -> mail.DevMailbox:
    """The dev mailbox, only with the dev backend and only for this machine's browser."""
    box = mail.backend()
    if not isinstance(box, mail.DevMailbox) or not _from_loopback():
        abort(404)
    return box


def _from_loopback() -> bool:
    try:
        return ipaddress.ip_address(request.remote_addr or "").is_loopback
    except ValueError:
        return False


@bp.get("/dev/mail")
def dev_mailbox():
    box = _mailbox()
    items = []
    for path in box.messages()[:500]:
        msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        items.append({"name": path.name, "to": msg["To"], "subject": msg["Subject"],
                      "date": _sent_at(msg), "preview": _preview(msg)})
    return render_template("pages/mailbox.html", items=items)


def _sent_at(msg) -> datetime | None:
    """When the email was sent (its Date header), in UTC; None if unreadable."""
    try:
        return email.utils.parsedate_to_datetime(str(msg["Date"])).astimezone(UTC)
    except (TypeError, ValueError, IndexError):
        return None


def _preview(msg) -> str:
    text = msg.get_body(("plain",))
    return text.get_content().strip().split("\n", 1)[0] if text else ""


@bp.get("/dev/mail/<name>")
def dev_message(name: str):
    box = _mailbox()
    path = box.dir / Path(name).name
    if not name.endswith(".eml") or not path.is_file():
        abort(404)
    msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    html = msg.get_body(("html",))
    text = msg.get_body(("plain",))
    resp = current_app.make_response(render_template(
        "pages/mail_message.html", msg=msg, html=html.get_content() if html else None,
        text=text.get_content() if text else "", date=_sent_at(msg)))
    resp.headers["Content-Security-Policy"] = CSP_MAILBOX + SCRIPTS
    return resp
