"""A player's deadlines in their calendar (``services.calendar``): the calendar page of a
seat (make, replace or stop the address's private feed), the feed itself, the page an
event of the feed opens, and one deadline as a file to add."""

from __future__ import annotations

from flask import Blueprint, Response, current_app, redirect, render_template, request

from pbem import services
from pbem.forms import DB_INT_MAX
from pbem.web.common import require_sig, speak

bp = Blueprint("calendar", __name__)
CALENDAR_TYPE = "text/calendar; charset=utf-8"


@bp.route("/g/<raw>/calendar", methods=["GET", "POST"])
def calendar_page(raw: str):
    """The seat's calendar page; its POST makes (or replaces) the feed, or stops it."""
    feed = None
    done = None
    if request.method == "POST":
        require_sig(raw)
        how = request.form.get("how", "")
        feed = services.set_calendar(raw, how)
        done = how
    info = services.calendar_settings(raw)
    speak(info["seat"].language)
    url = f"{current_app.config['BASE_URL']}/cal/{feed}.ics" if feed else None
    return render_template("pages/calendar.html", info=info, raw=raw, feed_url=url,
                           done=done)


@bp.get("/cal/<raw>.ics")
def feed(raw: str):
    resp = Response(services.calendar_feed(raw), content_type=CALENDAR_TYPE)
    resp.headers["Cache-Control"] = "private, no-cache"
    return resp


@bp.route(f"/cal/<raw>/open/<int(max={DB_INT_MAX}):seat_id>", methods=["GET", "POST"])
def open_game(raw: str, seat_id: int):
    """An event's link: a page naming the game, whose button opens its game page (a new
    game-page link, made only by the POST)."""
    if request.method == "POST":
        require_sig(raw)
        return redirect("/g/" + services.open_from_calendar(raw, seat_id), code=303)
    info = services.calendar_game(raw, seat_id)
    speak(info["seat"].language)
    return render_template("pages/calendar_open.html", info=info, raw=raw)


@bp.get("/g/<raw>/deadline.ics")
def deadline(raw: str):
    resp = Response(services.deadline_file(raw), content_type=CALENDAR_TYPE)
    resp.headers["Content-Disposition"] = "attachment; filename=deadline.ics"
    resp.headers["Cache-Control"] = "private, no-cache"
    return resp
