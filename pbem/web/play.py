"""Playing: answering an invitation or a hand-over, the one-click links of the emails and
their confirmation pages, a seat's game page with its decision form, the game log, the
spectators' page, and the in-game controls of a seat (vacation, coming back)."""

from __future__ import annotations

from typing import Any

from flask import (
    Blueprint,
    Response,
    current_app,
    render_template,
    request,
)
from flask.typing import ResponseReturnValue
from flask_babel import LazyString
from flask_babel import gettext as _
from werkzeug.datastructures import MultiDict

from pbem import i18n, services
from pbem.channels import push
from pbem.errors import (
    AlreadyRecorded,
    IllegalMove,
    InvalidInput,
    NotFound,
    RateLimited,
    TurnOver,
    WrongState,
)
from pbem.forms import DB_INT_MAX, parse_int
from pbem.kinds import GameStatus
from pbem.tokens import check_signature
from pbem.web import done, fresh
from pbem.web.common import (
    CSP,
    LOG_FETCH,
    SCRIPTS,
    message_page,
    require_sig,
    see_other,
    speak,
)

bp = Blueprint("play", __name__)


@bp.route("/invite/<raw>", methods=["GET", "POST"])
def invitation(raw: str) -> ResponseReturnValue:
    """An invitation's page. Its POST answers, then redirects to the page, which thanks
    the player (with the game page's link the acceptance made: ``?page=``, checked to be
    this seat's) instead of saying the invitation was answered before."""
    posted = request.method == "POST"
    info = services.describe_invitation(raw, None if posted else request.args.get("page"))
    speak(info["seat"].language)  # the invitation's language, not the browser's
    if not info["answered"] and info["game"].status != GameStatus.INVITING:
        return message_page(_("Game ended"), _("This game no longer waits for players: the "
                                           "host ended it."), 409, element="answered")
    if posted and not info["answered"]:
        require_sig(raw)
        accept = info["answer"] == "accept"
        form = request.form
        try:
            page = services.answer_invitation(raw, accept, form.get("lang") if accept else None,
                                              form.get("tz") if accept else None)[2]
        except InvalidInput as exc:
            return _invitation_form(info, raw, 400, error=exc, entered=form)
        return see_other(f"/invite/{raw}", page=page,
                         done=None if accept else "declined")
    if info["answered"] == "accepted" and info["page"]:
        return render_template("pages/invited.html", info=info, done=True, page=info["page"])
    if info["answered"] == "declined" and info["answer"] == "decline" \
            and request.args.get("done") == "declined":
        return render_template("pages/invited.html", info=info, done=True, page=None)
    if info["answered"]:
        return render_template("pages/invited.html", info=info, done=False), 409
    return _invitation_form(info, raw)


def _invitation_form(info: dict[str, Any], raw: str, status: int = 200,
                     **extra: Any) -> Response:
    """The invitation's page with its form; its one script (static/tz.js) picks the
    browser's time zone."""
    resp = current_app.make_response((render_template(
        "pages/invited.html", info=info, raw=raw, done=False, **extra), status))
    resp.headers["Content-Security-Policy"] = CSP + SCRIPTS
    return resp


@bp.route("/handover/<raw>", methods=["GET", "POST"])
def handover(raw: str) -> ResponseReturnValue:
    """An invitation to take over a seat: a page, and only its POST answers; then it
    redirects to the page, which thanks the person (see ``services.handover_answered``:
    the link is spent by then)."""
    if request.method != "POST" and request.args:
        answered = services.handover_answered(raw, request.args.get("page"))
        if answered is not None:
            return render_template("pages/handover.html", info=answered, raw=raw,
                                   page=answered["page"])
    info = services.describe_handover(raw)
    if request.method == "POST" and info["state"] == "open":
        require_sig(raw)
        answer, page = services.answer_handover(raw, info["answer"] == "accept")
        return see_other(f"/handover/{raw}", page=page,
                         done=None if answer == "accepted" else "declined")
    status = 200 if info["state"] == "open" else 409
    return render_template("pages/handover.html", info=info, raw=raw), status


@bp.route("/a/<raw>", methods=["GET", "POST"])
def one_click(raw: str) -> ResponseReturnValue:
    if request.method != "POST":  # GET and HEAD never act
        info = services.describe_token(raw)
        speak(info["seat"].language)
        if info.get("closed") and request.args.get("done") == "back" \
                and services.came_back(raw):
            return _welcome_back()
        status = 409 if info.get("closed") else 200
        return render_template("pages/action.html", info=info, raw=raw), status
    if not check_signature(current_app.config["SECRET_KEY"], raw, request.form.get("sig")):
        info = services.describe_token(raw)  # a closed turn says so before a bad form does
        if info.get("closed"):
            return render_template("pages/action.html", info=info, raw=raw), 409
        require_sig(raw)
    try:
        outcome = services.act_by_token(raw, request.form.get("choice"))
    except InvalidInput as exc:
        if isinstance(exc, IllegalMove):
            raise
        info = services.describe_token(raw)  # the page again, saying what was wrong
        speak(info["seat"].language)
        return render_template("pages/action.html", info=info, raw=raw,
                               error=exc.data.get("reason", "choice/unknown")), 400
    except (AlreadyRecorded, TurnOver) as exc:
        if isinstance(exc, TurnOver) and services.is_on_bot(raw):
            services.come_back(raw)  # a player on a bot who acts through any link is back
            return see_other(f"/a/{raw}", done="back")
        closed = "recorded" if isinstance(exc, AlreadyRecorded) else "closed"
        return render_template("pages/action.html", info={"closed": closed}, raw=raw), 409
    return _recorded(outcome)


def _welcome_back() -> tuple[str, int]:
    return message_page(_("Welcome back"), _("A bot played your seat while you were away. "
                                             "You play it again from your next decision "
                                             "on; watch for the next email."))


def _recorded(outcome: services.Outcome) -> ResponseReturnValue:
    """A move was recorded: see the page that says so, the seat's game page with
    ``?recorded=<decision>`` (``outcome.page_token``: the link the move made for it)."""
    return see_other(f"/g/{outcome.page_token}", recorded=outcome.decision_id)


@bp.get("/g/<raw>")
def game_page(raw: str) -> ResponseReturnValue:
    """The seat's game page; 304 when the browser's copy is still the page (its ETag:
    see ``fresh``). The page speaks the seat's language, whatever the request asks.
    After a form: ``?recorded=<decision>``, the page that says a move was recorded;
    ``?done=<code>``, the page with what the form did (``done.GAME``)."""
    if "recorded" in request.args:
        return _receipt(raw, request.args["recorded"])
    said = request.args.get("done", "")
    said = said if said in done.GAME else ""
    not_modified = fresh.unchanged(lambda: services.page_stamp(raw), said)
    if not_modified is not None:
        return not_modified
    return show_game_page(raw, tagged=True, said=said)


def _receipt(raw: str, decision: str) -> ResponseReturnValue:
    """A short page: what was recorded (the seat's own move that closed ``decision``,
    read from its Move row), who acts next, and this seat's next decision at once if it
    has one (no board or log: the game page has those). For any other decision (a
    move taken back since, another's, a number that is none) the game page as it is."""
    try:
        decision_id = parse_int(decision, 1, DB_INT_MAX, "")
    except InvalidInput:
        return show_game_page(raw)
    receipt = services.receipt_for_page(raw, decision_id)
    if receipt is None:
        return show_game_page(raw)
    speak(receipt.language)
    return render_template("pages/recorded.html", data=receipt.data, raw=raw,
                           outcome=receipt, take_back=receipt.data["take_back"])


def show_game_page(raw: str, status: int = 200, tagged: bool = False, said: str = "",
                   **extra: Any) -> Response:
    """The game page, with what a form posted to it says (``extra``: a refusal, the form
    as entered) or, after a redirect, what ``done.GAME`` says for the code ``said``;
    ``tagged``: with its ETag (a plain GET)."""
    data = services.game_for_page(raw)
    if data["seat"] is not None:
        speak(data["seat"].language)
    if said:
        if said in done.BY_SEAT:
            data["by_seat"] = services.seat_last_event(raw)
        extra.setdefault("notice", done.say(done.GAME, said, data))
    offer = push_offer(data, raw)
    resp = _with_scripts(data, render_template("pages/game.html", data=data, raw=raw,
                                               push=offer, **extra), status,
                         scripts=offer is not None)
    return fresh.tag(resp, data["stamp"], said, headers=tagged)


def push_offer(data: dict[str, Any], raw: str) -> dict[str, str] | None:
    """What the game page's "notify me on this device" needs (``pages/_push.html``):
    the server's VAPID public key, the tag of the seat's notifications and the page's
    address for its browser to keep; None where the page offers none (push is off, a
    one-click link's page, a seat that left, a game that ended)."""
    seat, game = data["seat"], data["game"]
    if (seat is None or data["readonly"] or seat.left_at is not None
            or game.status not in (GameStatus.ACTIVE, GameStatus.INVITING)
            or not push.enabled(current_app)):
        return None
    return {"key": push.public_key(current_app), "tag": push.page_tag(game.id, seat.position),
            "page": f"{current_app.config['BASE_URL']}/g/{raw}"}


def _with_scripts(data: dict[str, Any], page: str, status: int = 200,
                  scripts: bool = False) -> Response:
    """A game page runs scripts from this server only, and only where it has use for
    them: a log with folded rounds (static/log.js loads one when it is opened), a game
    under way (static/live.js asks every few seconds whether the page changed) or a
    seat's page that offers notifications (static/push.js, with ``scripts``); other
    pages run no script."""
    resp = current_app.make_response((page, status))
    if scripts or data["live"] or any(part.entries is None for part in data["log"]):
        resp.headers["Content-Security-Policy"] = CSP + SCRIPTS + LOG_FETCH
    return resp


@bp.get(f"/g/<raw>/log/<int(max={DB_INT_MAX}):number>")
def game_log_round(raw: str, number: int) -> ResponseReturnValue:
    """One round of the game log from the seat's view: a page of its own, or with
    ``?part=1`` only the round's entries (what the game page's script fetches)."""
    data = services.log_round_for_page(raw, number)
    if data["seat"] is not None:
        speak(data["seat"].language)
    return _log_round(data, f"/g/{raw}")


@bp.get(f"/watch/<key>/log/<int(max={DB_INT_MAX}):number>")
def spectator_log_round(key: str, number: int) -> ResponseReturnValue:
    return _log_round(services.log_round_for_spectator(key, number), f"/watch/{key}")


def _log_round(data: dict[str, Any], back: str) -> str:
    if data["round"] is None:
        raise NotFound(_("this game's log has no such round"))
    if request.args.get("part"):
        return render_template("pages/_log_round.html", data=data)
    return render_template("pages/log_round.html", data=data, back=back)


@bp.post("/g/<raw>")
def game_act(raw: str) -> ResponseReturnValue:
    require_sig(raw)
    form = request.form
    try:
        outcome = services.act_from_page(raw, form.get("decision_id"), form_command(form),
                                         form_plan(form))
    except IllegalMove as exc:  # the page again, the form as entered, and what was wrong
        return show_game_page(raw, 400, refusal=exc, entered=form)
    except (AlreadyRecorded, TurnOver) as exc:  # as a one-click link answers
        closed = "recorded" if isinstance(exc, AlreadyRecorded) else "closed"
        return render_template("pages/action.html", info={"closed": closed}, raw=raw), 409
    return see_other(f"/g/{raw}", recorded=outcome.decision_id)


@bp.post("/g/<raw>/plan")
def plan(raw: str) -> ResponseReturnValue:
    """The seat's standing plan (a game that offers plans): ``how=set`` with the plan's
    rows, or ``how=clear``. The game page, saying what changed; or again, with what was
    wrong (the rows as entered)."""
    require_sig(raw)
    form = request.form
    try:
        if form.get("how") == "clear":
            said = "plan_cleared" if services.set_plan(raw, "") else "no_plan"
        else:
            text = form_plan(form)
            if not text:
                raise IllegalMove("plan/none", "plan")
            services.set_plan(raw, text)
            said = "plan_set"
    except IllegalMove as exc:
        return show_game_page(raw, 400, refusal=exc, entered=form)
    return see_other(f"/g/{raw}", done=said)


@bp.post("/g/<raw>/standing")
def standing(raw: str) -> ResponseReturnValue:
    """The seat's standing choices (a game that offers them): one ``standing.<key>`` field
    a choice, its value (``off``: none). The game page, saying what changed; or again,
    with what was wrong."""
    require_sig(raw)
    form = request.form
    choices = {name.removeprefix("standing."): value for name, value in form.items()
               if name.startswith("standing.")}
    try:
        changed = services.set_standing(raw, choices)
    except IllegalMove as exc:
        return show_game_page(raw, 400, refusal=exc)
    return see_other(f"/g/{raw}", done="standing_saved" if changed else "standing_same")


MAX_PLAN_ROWS = 12  # more rows than any game's plan form has


def form_plan(form: MultiDict[str, str]) -> str | None:
    """The plan rows of a form (``plan.at`` and ``plan.count``, repeated, in row order)
    in the plan notation of the contract (``engine.core.PlanForm``: ``at count, at
    count``); rows without a place are left out. None for a form without plan rows, or
    whose rows are all empty (a decision form then leaves the plan as it is). Raises
    IllegalMove (kind ``plan``) for too many rows or a field that is not one word."""
    places, counts = form.getlist("plan.at"), form.getlist("plan.count")
    if len(places) > MAX_PLAN_ROWS or len(counts) > MAX_PLAN_ROWS:
        raise IllegalMove("form/too_long", "plan")
    steps = []
    for i, at in enumerate(places):
        count = counts[i].strip() if i < len(counts) else ""
        at = at.strip()
        if not at:
            continue
        if any(len(w.split()) > 1 or "," in w or len(w) > 20 for w in (at, count)):
            raise IllegalMove("plan/form", "plan")
        steps.append(f"{at} {count}".strip())
    return ", ".join(steps) or None


MAX_FORM_COUNT = 20  # no count field of any game goes higher


MAX_FORM_WORDS = 40


def form_command(form: MultiDict[str, str]) -> str:
    """The full decision form of any game as a command in the game's notation: ``choice``
    (a radio: a whole action as written, taken as it is; or a verb), else ``kind`` (the
    verb of a form with one); a verb is followed by the fields of that verb only:
    ``<verb>.word`` and ``<verb>.cards`` (words, repeatable), ``<verb>.amount`` (a
    number) and ``<verb>.count.<word>`` (the word N times, e.g. ``take.count.wood=2``). Fields of
    another verb are ignored, so "leave it" is read as itself whatever the pay fields
    hold. Nothing here knows a game or completes anything: the engine matches the words
    against the legal actions in full. Raises IllegalMove for a count that is not a
    number from 0 to MAX_FORM_COUNT."""
    choice = form.get("choice", "").strip() or form.get("kind", "").strip()
    if not choice:
        return ""
    if len(choice.split()) > 1:  # a whole action: nothing of its verb's fields is added
        if len(choice) > MAX_FORM_WORDS * 40:
            raise IllegalMove("form/too_long", choice.split()[0])
        return choice
    verb = choice
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


# The spectators' page speaks the visitor's language (a cookie, else Accept-Language).
SPECTATOR_VARY = "Cookie, Accept-Language"


@bp.get("/watch/<key>")
def spectator(key: str) -> ResponseReturnValue:
    """The spectators' page; 304 as the game page. It depends on the language the visitor
    chose and on its own address (its language switch sends it back)."""
    variant = f"{i18n.select_locale()}|{request.full_path}"
    not_modified = fresh.unchanged(lambda: services.spectator_stamp(key), variant,
                                   SPECTATOR_VARY)
    if not_modified is not None:
        return not_modified
    data = services.game_for_spectator(key)
    resp = _with_scripts(data, render_template("pages/game.html", data=data, raw=None))
    return fresh.tag(resp, data["stamp"], variant, SPECTATOR_VARY)


@bp.post("/g/<raw>/vacation")
def vacation(raw: str) -> ResponseReturnValue:
    """Take whole days of vacation (then the game page says what is left); a refusal
    (the days, or too often) is said at the field, in the player's language, with what
    they typed to correct it."""
    require_sig(raw)
    typed = request.form.get("days", "")
    try:
        services.take_vacation(raw, typed)
    except (InvalidInput, RateLimited) as exc:
        if not str(exc.data.get("reason", "")).startswith("vacation/"):
            raise
        data = exc.data
        why = LazyString(lambda: services.vacation_refusal(data))
        return show_game_page(raw, status=exc.status, error=why, vacation={
            "days": " ".join(str(typed).split())[:20], "error": why})
    return see_other(f"/g/{raw}", done="vacation")


@bp.post("/g/<raw>/say")
def say(raw: str) -> ResponseReturnValue:
    """The talk box: a message to the table, and whether the others' come at once."""
    require_sig(raw)
    form = request.form
    at_once = form.get("at_once") == "1" if form.get("talk_setting") else None
    said = services.say(raw, form.get("text", "")[:10_000], at_once)
    return see_other(f"/g/{raw}", done="said" if said else "talk_saved")


@bp.post("/g/<raw>/here")
def here(raw: str) -> ResponseReturnValue:
    """The seat's game page is open and in view (static/live.js says so every
    LIVE_HERE_SECONDS): a decision opened for the seat meanwhile waits to be emailed.
    No page answers (204): the script posts it, no browser shows it or reloads it."""
    require_sig(raw)
    services.note_presence(raw)
    return "", 204


@bp.post("/g/<raw>/takeback")
def take_back(raw: str) -> ResponseReturnValue:
    """Take back the seat's last move (a button on the game page and on the page that
    says a move was recorded)."""
    require_sig(raw)
    try:
        services.take_back(raw)
    except WrongState as exc:  # it stands: the game page says why
        return show_game_page(raw, status=exc.status, error=exc.message)
    return see_other(f"/g/{raw}", done="taken_back")


@bp.post("/g/<raw>/back")
def come_back(raw: str) -> ResponseReturnValue:
    require_sig(raw)
    services.come_back(raw)
    return see_other(f"/g/{raw}", done="back")

