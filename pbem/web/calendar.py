"""A player's deadlines in their calendar (``services.calendar``): the calendar page of a
seat (make, replace or stop the address's private feed), the feed itself, the page an
event of the feed opens (which emails the game's link to the seat's address), and one
deadline as a file to add."""

from __future__ import annotations

from flask import Blueprint, Response, current_app, render_template, request
from flask.typing import ResponseReturnValue

from pbem import services
from pbem.errors import RateLimited
from pbem.forms import DB_INT_MAX
from pbem.web.common import require_sig, see_other, speak

bp = Blueprint("calendar", __name__)
CALENDAR_TYPE = "text/calendar; charset=utf-8"


@bp.route("/g/<raw>/calendar", methods=["GET", "POST"])
def calendar_page(raw: str) -> ResponseReturnValue:
    """The seat's calendar page; its POST makes (or replaces) the feed, or stops it,
    then redirects to the page, which shows the new feed's address (``?feed=``: shown
    only while it is the address's feed) or says the feed is stopped (``?done=stop``,
    while the address has none)."""
    if request.method == "POST":
        require_sig(raw)
        how = request.form.get("how", "")
        feed = services.set_calendar(raw, how)
        return see_other(f"/g/{raw}/calendar", feed=feed,
                         done="stop" if how == "stop" else None)
    info = services.calendar_settings(raw, request.args.get("feed"))
    speak(info["seat"].language)
    feed = info["feed"]
    url = f"{current_app.config['BASE_URL']}/cal/{feed}.ics" if feed else None
    stopped = request.args.get("done") == "stop" and info["since"] is None
    return render_template("pages/calendar.html", info=info, raw=raw, feed_url=url,
                           done="stop" if stopped else None)


@bp.get("/cal/<raw>.ics")
def feed(raw: str) -> ResponseReturnValue:
    resp = Response(services.calendar_feed(raw), content_type=CALENDAR_TYPE)
    resp.headers["Cache-Control"] = "private, no-cache"
    return resp


@bp.route(f"/cal/<raw>/open/<int(max={DB_INT_MAX}):seat_id>", methods=["GET", "POST"])
def open_game(raw: str, seat_id: int) -> ResponseReturnValue:
    """An event's link: a page naming the game and its deadline, whose button emails the
    game's page link to the seat's own address (the feed's address reads deadlines and
    nothing more: it never gives a link that acts for the seat). The POST answers with
    a redirect to the page, which then says when the link was emailed."""
    refused = None
    if request.method == "POST":
        require_sig(raw)
        try:
            services.mail_game_link(raw, seat_id)
        except RateLimited as exc:
            refused = exc
        else:
            return see_other(f"/cal/{raw}/open/{seat_id}")
    info = services.calendar_game(raw, seat_id)
    speak(info["seat"].language)
    page = render_template("pages/calendar_open.html", info=info, raw=raw,
                           refused=refused.data if refused is not None else None)
    return page, 429 if refused is not None else 200


@bp.get("/g/<raw>/deadline.ics")
def deadline(raw: str) -> ResponseReturnValue:
    resp = Response(services.deadline_file(raw), content_type=CALENDAR_TYPE)
    resp.headers["Content-Disposition"] = "attachment; filename=deadline.ics"
    resp.headers["Cache-Control"] = "private, no-cache"
    return resp
