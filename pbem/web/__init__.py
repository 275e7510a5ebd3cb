"""The web layer: thin handlers that parse input, call one service, and render.

GET and HEAD never change anything (mail scanners open every link); only the POST from a
confirmation page acts. Forms that act through a link carry ``sig`` = HMAC(secret, token);
the home page's forms (a new game, a link to one's games), which have no link, are
protected by a session CSRF token. Requests only queue email; the clock process sends it.

One blueprint per kind of visitor; the URLs are the same as ever (a link in an email sent
long ago keeps working; ``tests/server/test_url_map.py`` pins them):

- ``pages``: the home page, the language switch;
  ``health``: the health check and the metrics (``/healthz``, ``/metrics``);
  ``rules``: the rules pages of every game (``/rules``, ``/rules/<game>``).
- ``host``: the new-game form, the host's confirmation link, the host page and its
  controls. Bots at the table and a game's options join the new-game form here.
- ``play``: invitations and hand-overs, one-click links and their confirmation pages, a
  seat's game page and its form, the log, spectators, vacation. Table talk's box goes here.
- ``settings``: what a player sets, by address or by seat: the list of their games,
  language, notifications, unsubscribing. Digests, quiet hours and per-address settings
  go here.
- ``calendar``: a player's deadlines in their calendar: a seat's calendar page, the
  address's private feed, the page an event opens, one deadline as a file.
- ``devmail``: the dev mailbox (this machine's browser only, dev backend only).
- ``api``: the public JSON API (``/api/v1/...``): a seat's view and moves by its game
  page's token, the host's overview by the host page's, all of it JSON (docs/api.md).

``common`` holds what they share (security headers, error pages, form checks).
Replies by email are not web: they arrive through ``pbem.mail``.
"""

from __future__ import annotations

from flask import Flask

from pbem import narrate, zones
from pbem.errors import ServiceError
from pbem.tokens import form_signature
from pbem.web import api, calendar, common, devmail, health, host, pages, play, rules, settings

BLUEPRINTS = (pages.bp, health.bp, rules.bp, host.bp, play.bp, settings.bp, calendar.bp,
              devmail.bp, api.bp)


def init_app(app: Flask) -> None:
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
    narrate.init_app(app)
    rules.init_app(app)
    app.register_error_handler(ServiceError, common.service_error)
    app.register_error_handler(404, common.not_found)
    app.register_error_handler(405, common.http_error)
    app.register_error_handler(400, common.http_error)
    app.register_error_handler(500, common.server_error)
    app.session_interface = common.CookieSessions()
    app.after_request(common.security_headers)
    app.url_defaults(common.static_version)
    app.after_request(common.cache_static)
    app.jinja_env.globals["sign"] = lambda raw: form_signature(app.config["SECRET_KEY"], raw)
    app.jinja_env.globals.update(timezone_choices=zones.choices,
                                 timezone_listed=zones.is_listed)
