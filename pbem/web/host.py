"""The host: the new-game form, confirming a new game from the host's email, the host's
page and its controls (pause, resume, extend, abandon, bots, hand-overs, remind now,
play again)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping, Sequence

from flask import (
    Blueprint,
    abort,
    current_app,
    redirect,
    render_template,
    request,
    session,
)
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_babel import ngettext

from pbem import services
from pbem.errors import (
    AlreadyRecorded,
    FormInvalid,
    InvalidInput,
    NotFound,
    RateLimited,
    ServiceError,
    WrongState,
)
from pbem.forms import DB_INT_MAX, parse_int
from pbem.kinds import GameStatus, SeatBot
from pbem.policy import GamePolicy
from pbem.web import done
from pbem.web.common import (
    CSP,
    SCRIPTS,
    check_csrf,
    message_page,
    require_sig,
    see_other,
    speak,
)

bp = Blueprint("host", __name__)


PLAYER_FIELD_RE = re.compile(r"^(?:name|email|bot)(\d{1,4})$")


def home_page(form: Mapping[str, str], errors: Sequence[tuple[str, str]] = (),
              error: ServiceError | None = None, status: int = 200) -> ResponseReturnValue:
    """The home page: the new-game form (with every problem of a refused one, its values
    kept) and the form that asks for a link to one's games."""
    csrf = session.setdefault("csrf", secrets.token_urlsafe(16))
    resp = current_app.make_response((render_template(
        "pages/home.html", games=services.offered_games(), form=form, errors=dict(errors),
        error_list=list(errors), error=error, csrf=csrf,
        bot_ms=f"{GamePolicy().bot_ms:g}"), status))
    resp.headers["Content-Security-Policy"] = CSP + SCRIPTS
    return resp


@bp.post("/new")
def new_game() -> ResponseReturnValue:
    check_csrf()
    form = request.form
    try:
        rows = _players_from_form(form)
        policy = {"hours_per_decision": form.get("hours", "48"),
                  "reminder_hours": form.get("reminders") or None,
                  "absent_after": form.get("absent_after", 2),
                  "absent_bot": form.get("absent_bot", SeatBot.HEURISTIC),
                  "vacation_days": form.get("vacation_days", 7),
                  "pause_quiet": form.get("pause_quiet"),
                  "pause_weekends": form.get("pause_weekends"),
                  "take_backs": form.get("take_backs", ""),  # unticked: sent as nothing
                  "time_control": form.get("time_control"),
                  "bank_days": form.get("bank_days", 3),
                  "increment_hours": form.get("increment_hours", 24),
                  "cap_days": form.get("cap_days", 7),
                  "bot_ms": form.get("bot_ms")}  # empty or absent: the default
        created = services.create_game(
            form.get("game") or services.offered_games()[0]["name"], rows, policy,
            title=form.get("title", ""), client=request.remote_addr or "unknown")
    except FormInvalid as exc:
        return home_page(form, exc.errors, status=exc.status)
    except ServiceError as exc:
        return home_page(form, error=exc, status=exc.status)
    session["created"] = created.game_id  # what the page after it shows (signed)
    return see_other("/new")


@bp.get("/new")
def created_page() -> ResponseReturnValue:
    """The page after the new-game form: check your email. It shows the game the form
    made in this browser (kept in its signed session, never named by the address); any
    other visitor goes to the home page."""
    host = services.created_game(session.get("created"))
    if host is None:
        return redirect("/", code=303)
    return render_template("pages/created.html", host=host)


def _players_from_form(form: Mapping[str, str]) -> list[services.PlayerIn | None]:
    """The form's player rows, None for an empty one (it keeps its place, so a problem is
    shown at its row); a row beyond the largest game offered is refused, not dropped (one
    beyond the chosen game's largest number is refused by the service, at its row)."""
    rows = max(g["max"] for g in services.offered_games())
    beyond = [key for key in form if (m := PLAYER_FIELD_RE.match(key))
              and int(m.group(1)) >= rows and form.get(key, "").strip()]
    if beyond:
        raise InvalidInput(ngettext("a game has at most %(num)s player; this form has more: "
                                    "remove the extra ones", "a game has at most %(num)s "
                                    "players; this form has more: remove the extra ones",
                                    rows))
    players: list[services.PlayerIn | None] = []
    for i in range(rows):
        name, addr = form.get(f"name{i}", "").strip(), form.get(f"email{i}", "").strip()
        level = form.get(f"bot{i}", "").strip() or None  # "": a person
        players.append(services.PlayerIn(name, "" if level else addr,
                                         form.get(f"lang{i}", "en"),
                                         form.get(f"tz{i}", "UTC") or "UTC", bot=level)
                       if name or addr or level else None)
    return players


@bp.route("/host/confirm/<raw>", methods=["GET", "POST"])
def host_confirm(raw: str) -> ResponseReturnValue:
    """The host's confirmation link: a page, and only its POST confirms; then it
    redirects to the page with the host page's link the confirmation made (``?admin=``,
    checked to be a host link of this game), which says the game is confirmed."""
    if request.method == "POST":
        require_sig(raw)
        _game_id, fresh, admin_raw = services.confirm_host(raw)
        if fresh:
            return see_other(f"/host/confirm/{raw}", admin=admin_raw)
        return _already_confirmed()
    # an unknown link gets the friendly 404 page
    info = services.describe_host_confirm(raw, request.args.get("admin"))
    if info["game"].status == GameStatus.ABANDONED:
        return message_page(_("Game ended"), _("The host ended this game before it started; "
                                           "nothing was sent to the players."), 409,
                        element="confirmed")
    if info["host_page"]:
        return message_page(_("Game confirmed"),
                            _("Invitations are on their way to the players. Your host page "
                              "shows who has accepted; the game starts when everyone has."),
                            element="confirmed",
                            onward=[(f"/admin/{info['host_page']}", _("Open your host page"))])
    if info["confirmed"]:
        return _already_confirmed()
    return render_template("pages/confirm.html", raw=raw, title=_("Confirm your game"),
                           question=_("Send the invitations to the players now?"),
                           button=_("Send invitations"))


def _already_confirmed() -> tuple[str, int]:
    """A used confirmation link, opened or posted again: 409, as every used link answers."""
    return message_page(_("Already confirmed"), _("This game is confirmed and the invitations "
                                              "are out. The game starts when everyone has "
                                              "accepted."), 409, element="confirmed")


@bp.get("/admin/<raw>")
def admin(raw: str) -> ResponseReturnValue:
    """The host page; after a control, what it did: ``?done=<code>`` (``done.HOST``), or
    ``?reminded=<decision>`` (whom the host reminded, read from the decision)."""
    if "reminded" in request.args:
        _as_host(raw)
        name = services.host_reminded(raw, request.args["reminded"])
        return _admin_page(raw, None if name is None else _(
            "Done: a reminder is on its way to %(name)s.", name=name))
    return _admin_page(raw, said=request.args.get("done"))


def _as_host(raw: str) -> None:
    """Speak the host's language from here on (their messages and page)."""
    speak(services.host_language(raw))


def _admin_page(raw: str, notice: str | None = None, error: str | None = None,
                status: int = 200, said: str | None = None) -> tuple[str, int]:
    """The host page, with a notice or an error (or what ``done.HOST`` says for the code
    ``said``, if the game bears it out)."""
    _as_host(raw)
    data = services.admin_data(raw)
    data["webhooks"] = services.game_webhooks(raw)
    if said:
        notice = done.say(done.HOST, said, data)
    return render_template("pages/admin.html", data=data, raw=raw, notice=notice,
                           error=error), status


@bp.post("/admin/<raw>/remind")
def admin_remind(raw: str) -> ResponseReturnValue:
    """The host's "remind now" for one open decision (at most once per decision)."""
    require_sig(raw)
    _as_host(raw)
    decision = request.form.get("decision")
    try:
        services.remind_now(raw, decision)
    except (AlreadyRecorded, WrongState, InvalidInput) as exc:
        return _admin_page(raw, error=exc.message, status=exc.status)
    return see_other(f"/admin/{raw}", reminded=decision)


WEBHOOK_OPS = {
    "remove": services.remove_webhook,
    "restart": services.restart_webhook,
    "test": services.send_test_message,
}


@bp.post("/admin/<raw>/webhooks")
def admin_webhooks(raw: str) -> ResponseReturnValue:
    """The host page's chat webhooks: add one (``op`` ``add``: its URL, kind and whether
    the table talk is mirrored), or remove, restart or test the one named ``webhook``;
    a refusal is said on the host page, with the form as it was sent."""
    require_sig(raw)
    _as_host(raw)
    form, op = request.form, request.form.get("op", "")
    try:
        if op == "add":
            services.add_webhook(raw, form.get("url", ""), form.get("kind", "auto"),
                                 form.get("mirror_talk") == "yes")
        elif op in WEBHOOK_OPS:
            WEBHOOK_OPS[op](raw, form.get("webhook", ""))
        else:
            raise InvalidInput(_("choose what to do with the webhook"))
    except (InvalidInput, NotFound, WrongState, RateLimited) as exc:
        return _admin_page(raw, error=exc.message, status=exc.status)
    return see_other(f"/admin/{raw}", done=f"webhook_{op}")


@bp.post("/admin/<raw>/again")
def admin_play_again(raw: str) -> ResponseReturnValue:
    """Play again with the same players: a new game, and its host page, which says so (a
    second press opens the same new game, with a fresh host link)."""
    require_sig(raw)
    _as_host(raw)
    try:
        created, _fresh = services.play_again(raw, client=request.remote_addr or "unknown")
    except (WrongState, InvalidInput, RateLimited) as exc:
        return _admin_page(raw, error=exc.message, status=exc.status)
    return see_other(f"/admin/{created.admin_token}", done="again")


@bp.post("/admin/<raw>/replace")
def admin_replace(raw: str) -> ResponseReturnValue:
    require_sig(raw)
    _as_host(raw)
    position = parse_int(request.form.get("position", ""), 0, DB_INT_MAX,
                         _("choose the seat to re-invite"))
    services.replace_player(raw, position, _player_fields(request.form))
    return see_other(f"/admin/{raw}", done="replaced")


def _player_fields(f: Mapping[str, str]) -> services.PlayerIn:
    return services.PlayerIn(f.get("name", ""), f.get("email", ""), f.get("lang", "en"),
                             f.get("tz", "UTC") or "UTC")


def _hand_over(raw: str, f: Mapping[str, str]) -> str:
    updated = services.hand_over(raw, f.get("position"), _player_fields(f)) == "updated"
    return "handover_updated" if updated else "handover_sent"


def _abandon(raw: str, f: Mapping[str, str]) -> None:
    if f.get("sure") != "yes":
        raise ServiceError(_("tick the box to confirm that the game ends for everyone"))
    services.abandon_game(raw)


def _set_bot(raw: str, f: Mapping[str, str]) -> None:
    """Who plays a seat: a bot (``heuristic``, ``default``) or its player (empty). The
    form names no choice until the host makes one, so a press without one changes
    nothing."""
    if "bot" not in f:
        raise InvalidInput(_("choose who plays the seat: a bot or its player"))
    services.set_bot(raw, f.get("position"), f.get("bot") or None)


ADMIN_ACTIONS: dict[str, Callable[[str, Mapping[str, str]], object]] = {
    "pause": lambda raw, f: services.pause_game(raw),
    "resume": lambda raw, f: services.resume_game(raw),
    "extend": lambda raw, f: services.extend_deadline(raw, f.get("hours")),
    "abandon": _abandon,
    "bot": _set_bot,
    "handover": _hand_over,
    "withdraw": lambda raw, f: services.withdraw_handover(raw, f.get("position")),
}


@bp.post("/admin/<raw>/<control>")
def admin_control(raw: str, control: str) -> ResponseReturnValue:
    """The host's controls: pause, resume, extend, abandon, bot on/off, hand a seat over
    (or withdraw a hand-over not yet accepted); then the host page, saying what was
    done (``done.HOST``: the control's name, or the code its handler returns)."""
    handler = ADMIN_ACTIONS.get(control)
    if handler is None:
        abort(404)
    require_sig(raw)
    _as_host(raw)
    said = handler(raw, request.form)
    return see_other(f"/admin/{raw}", done=said if isinstance(said, str) else control)

