"""Routes: thin handlers that parse input, call one service, and render.

GET and HEAD never change anything (mail scanners open every link); only the POST from a
confirmation page acts. Forms that act through a link carry ``sig`` = HMAC(secret, token);
the new-game form, which has no link, is protected by a session CSRF token.
"""

from __future__ import annotations

import email
import email.policy
import hmac
import secrets
from pathlib import Path
from typing import Any

from flask import Blueprint, Flask, abort, current_app, g, render_template, request, session

from engine.core import Action, EngineError, parse_action
from pbem import mail, services
from pbem.errors import AlreadyRecorded, NotFound, ServiceError, TurnOver
from pbem.narrate import register_filters
from pbem.tokens import check_signature, form_signature

bp = Blueprint("web", __name__)


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
    register_filters(app)
    app.register_error_handler(ServiceError, _service_error)
    app.register_error_handler(404, _not_found)
    app.register_error_handler(405, _http_error)
    app.register_error_handler(400, _http_error)
    app.register_error_handler(500, _server_error)
    app.after_request(_security_headers)
    app.jinja_env.globals["sign"] = lambda raw: form_signature(app.config["SECRET_KEY"], raw)


def _security_headers(resp):
    resp.headers.setdefault("X-Content-Type-Options", "nosniff")
    resp.headers.setdefault("Referrer-Policy", "no-referrer")  # links carry secrets
    resp.headers.setdefault("X-Frame-Options", "DENY")
    resp.headers.setdefault("Cache-Control", "no-store")
    return resp


def _service_error(exc: ServiceError):
    return render_template("pages/error.html", error=exc), exc.status


def _not_found(exc):
    return render_template("pages/error.html", error=NotFound(
        "there is nothing at this address; the link may be mistyped or cut short")), 404


def _http_error(exc):
    return render_template("pages/error.html", error=ServiceError(
        getattr(exc, "description", "bad request"))), getattr(exc, "code", 400)


def _server_error(exc):  # pragma: no cover - a bug if it ever runs
    return render_template("pages/error.html", error=ServiceError(
        "something went wrong on our side; nothing was changed")), 500


def _require_sig(raw: str) -> None:
    if not check_signature(current_app.config["SECRET_KEY"], raw, request.form.get("sig")):
        raise ServiceError("this form is out of date or did not come from this site; "
                           "open the link again")


def _deliver_after_commit() -> None:
    if current_app.config["DELIVER_INLINE"]:
        mail.deliver_due(limit=50)


# --------------------------------------------------------------------------- new games


@bp.get("/")
def home():
    session.setdefault("csrf", secrets.token_urlsafe(16))
    return render_template("pages/home.html", games=sorted(services.GAMES_OFFERED),
                           form={}, csrf=session["csrf"])


@bp.post("/new")
def new_game():
    expected = session.get("csrf")
    if not expected or not hmac.compare_digest(expected, request.form.get("csrf", "")):
        raise ServiceError("the form expired; please fill it in again")
    form = request.form
    players = []
    for i in range(5):
        name, addr = form.get(f"name{i}", "").strip(), form.get(f"email{i}", "").strip()
        if name or addr:
            players.append(services.PlayerIn(name, addr, form.get(f"lang{i}", "en"),
                                             form.get(f"tz{i}", "UTC") or "UTC"))
    try:
        created = services.create_game(
            form.get("game", "cavemen"), players, form.get("hours", "48"),
            title=form.get("title", ""), client=request.remote_addr or "unknown",
            reminders=form.get("reminders") or None, absent_after=form.get("absent_after", 2),
            absent_bot=form.get("absent_bot", "heuristic"),
            vacation_days=form.get("vacation_days", 7))
    except ServiceError as exc:
        return render_template("pages/home.html", games=sorted(services.GAMES_OFFERED),
                               form=form, csrf=expected, error=exc), exc.status
    _deliver_after_commit()
    return render_template("pages/created.html", host=players[0], game_id=created.game_id)


@bp.route("/host/confirm/<raw>", methods=["GET", "POST"])
def host_confirm(raw: str):
    if request.method == "POST":
        _require_sig(raw)
        game_id = services.confirm_host(raw)
        _deliver_after_commit()
        return render_template("pages/message.html", title="Game confirmed",
                               text="Invitations are on their way to the players.",
                               game_id=game_id)
    services.describe_host_confirm(raw)  # an unknown link gets the friendly 404 page
    return render_template("pages/confirm.html", raw=raw, title="Confirm your game",
                           question="Send the invitations to the players now?",
                           button="Send invitations")


@bp.route("/invite/<raw>", methods=["GET", "POST"])
def invitation(raw: str):
    info = services.describe_invitation(raw)
    if request.method == "POST":
        _require_sig(raw)
        services.answer_invitation(raw, info["answer"] == "accept")
        _deliver_after_commit()
        return render_template("pages/invited.html", info=info, done=True)
    return render_template("pages/invited.html", info=info, raw=raw, done=False)


# --------------------------------------------------------------------------- playing


@bp.route("/a/<raw>", methods=["GET", "POST"])
def one_click(raw: str):
    if request.method != "POST":  # GET and HEAD never act
        info = services.describe_token(raw)
        status = 409 if info.get("closed") else 200
        return render_template("pages/action.html", info=info, raw=raw), status
    if not check_signature(current_app.config["SECRET_KEY"], raw, request.form.get("sig")):
        info = services.describe_token(raw)  # a closed turn says so before a bad form does
        if info.get("closed"):
            return render_template("pages/action.html", info=info, raw=raw), 409
        _require_sig(raw)
    try:
        outcome = services.act_by_token(raw)
    except (AlreadyRecorded, TurnOver) as exc:
        if isinstance(exc, TurnOver) and services.is_on_bot(raw):
            services.come_back(raw)  # a player on a bot who acts through any link is back
            _deliver_after_commit()
            return render_template("pages/message.html", title="Welcome back",
                                   text="A bot played your seat while you were away. You "
                                        "play it again from your next decision on; watch "
                                        "for the next email.")
        closed = "recorded" if isinstance(exc, AlreadyRecorded) else "closed"
        return render_template("pages/action.html", info={"closed": closed}, raw=raw), 409
    _deliver_after_commit()
    return _after_move(outcome)


def _after_move(outcome: services.Outcome):
    """A short page: what was recorded, who acts next, and this seat's next decision at
    once if it has one (no board or log: the game page has those)."""
    data = services.game_for_page(outcome.page_token, with_log=False) if outcome.again else None
    if data is not None:
        g.language = data["seat"].language
    return render_template("pages/recorded.html", data=data, raw=outcome.page_token,
                           outcome=outcome)


@bp.get("/g/<raw>")
def game_page(raw: str):
    data = services.game_for_page(raw)
    if data["seat"] is not None:
        g.language = data["seat"].language
    return render_template("pages/game.html", data=data, raw=raw)


@bp.post("/g/<raw>")
def game_act(raw: str):
    _require_sig(raw)
    services.check_page_decision(raw, request.form.get("decision_id"))  # stale form?
    data = services.game_for_page(raw)
    try:
        action = _action_from_form(data, request.form)
    except (EngineError, ValueError) as exc:
        msg = getattr(exc, "message", str(exc))
        return render_template("pages/game.html", data=data, raw=raw, error=msg), 400
    outcome = services.act_from_page(raw, request.form.get("decision_id"), action)
    _deliver_after_commit()
    return _after_move(outcome)


def _action_from_form(data: dict[str, Any], form) -> Action:
    """Read the full decision form: a choice in the game's notation, a bid amount, or the
    pool cards to discard. The engine then checks legality with its own code."""
    legal = data["legal"]
    if "cards" in form or form.get("kind") == "discard":
        pool = [c["id"] for c in data["view"]["pool"]]
        chosen = set(form.getlist("cards"))
        return Action.of("discard", cards=tuple(c for c in pool if c in chosen))
    if form.get("amount"):
        return parse_action(f"bid {int(form['amount'])}", legal)
    choice = form.get("choice", "")
    if not choice:
        raise ValueError("choose one of the options first")
    return parse_action(choice, legal)


@bp.get("/watch/<key>")
def spectator(key: str):
    return render_template("pages/game.html", data=services.game_for_spectator(key), raw=None)


@bp.get("/admin/<raw>")
def admin(raw: str):
    return render_template("pages/admin.html", data=services.admin_data(raw), raw=raw)


@bp.post("/admin/<raw>/replace")
def admin_replace(raw: str):
    _require_sig(raw)
    try:
        position = int(request.form.get("position", ""))
    except ValueError:
        raise ServiceError("choose the seat to re-invite") from None
    services.replace_player(raw, position, services.PlayerIn(
        request.form.get("name", ""), request.form.get("email", ""),
        request.form.get("lang", "en"), request.form.get("tz", "UTC") or "UTC"))
    _deliver_after_commit()
    return render_template("pages/admin.html", data=services.admin_data(raw), raw=raw,
                           notice="Invitation sent.")


ADMIN_ACTIONS = {
    "pause": lambda raw, f: services.pause_game(raw),
    "resume": lambda raw, f: services.resume_game(raw),
    "extend": lambda raw, f: services.extend_deadline(raw, f.get("hours")),
    "abandon": lambda raw, f: services.abandon_game(raw),
    "bot": lambda raw, f: services.set_bot(raw, f.get("position"), f.get("bot") or None),
    "handover": lambda raw, f: services.hand_over(raw, f.get("position"), services.PlayerIn(
        f.get("name", ""), f.get("email", ""), f.get("lang", "en"), f.get("tz", "UTC") or "UTC")),
}


@bp.post("/admin/<raw>/<control>")
def admin_control(raw: str, control: str):
    """The host's controls: pause, resume, extend, abandon, bot on/off, hand a seat over."""
    handler = ADMIN_ACTIONS.get(control)
    if handler is None:
        abort(404)
    _require_sig(raw)
    handler(raw, request.form)
    _deliver_after_commit()
    return render_template("pages/admin.html", data=services.admin_data(raw), raw=raw,
                           notice=f"Done: {control}.")


@bp.post("/g/<raw>/vacation")
def vacation(raw: str):
    _require_sig(raw)
    left = services.take_vacation(raw, request.form.get("days"))
    _deliver_after_commit()
    data = services.game_for_page(raw)
    return render_template("pages/game.html", data=data, raw=raw,
                           notice=f"Your deadlines moved. Vacation left: {left:g} days.")


@bp.post("/g/<raw>/back")
def come_back(raw: str):
    _require_sig(raw)
    services.come_back(raw)
    _deliver_after_commit()
    return render_template("pages/game.html", data=services.game_for_page(raw), raw=raw,
                           notice="Welcome back: you play your seat again.")


@bp.get("/healthz")
def healthz():
    return {"ok": True}


# --------------------------------------------------------------------------- dev mailbox


def _mailbox() -> mail.DevMailbox:
    box = mail.backend()
    if not isinstance(box, mail.DevMailbox):
        abort(404)
    return box


@bp.get("/dev/mail")
def dev_mailbox():
    box = _mailbox()
    items = []
    for path in box.messages()[:500]:
        msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        items.append({"name": path.name, "to": msg["To"], "subject": msg["Subject"],
                      "date": msg["Date"]})
    return render_template("pages/mailbox.html", items=items)


@bp.get("/dev/mail/<name>")
def dev_message(name: str):
    box = _mailbox()
    path = box.dir / Path(name).name
    if not name.endswith(".eml") or not path.is_file():
        abort(404)
    msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    html = msg.get_body(("html",))
    text = msg.get_body(("plain",))
    return render_template("pages/mail_message.html", msg=msg,
                           html=html.get_content() if html else None,
                           text=text.get_content() if text else "")

