"""Every URL the server answers, pinned: links in emails sent long ago keep working
whatever happens to the code behind them (the blueprints of ``pbem.web``)."""

from __future__ import annotations

from pbem.web import BLUEPRINTS

URLS = [
    ("/", "GET"), ("/a/<raw>", "GET,POST"), ("/admin/<raw>", "GET"),
    ("/admin/<raw>/<control>", "POST"), ("/admin/<raw>/again", "POST"),
    ("/admin/<raw>/remind", "POST"), ("/admin/<raw>/replace", "POST"),
    ("/admin/<raw>/webhooks", "POST"),
    ("/api/v1/host", "GET"), ("/api/v1/openapi.json", "GET"), ("/api/v1/seat", "GET"),
    ("/api/v1/seat/act", "POST"), ("/api/v1/seat/legal", "GET"),
    ("/api/v1/seat/talk", "POST"), ("/api/v1/seat/wait", "GET"),
    ("/api/v1/seat/world", "GET"),
    ("/cal/<raw>.ics", "GET"), ("/cal/<raw>/open/<int(max=2147483647):seat_id>", "GET,POST"),
    ("/dev/mail", "GET"), ("/dev/mail/<name>", "GET"), ("/dev/mail/<name>/reply", "POST"),
    ("/g/<raw>", "GET"),
    ("/g/<raw>", "POST"), ("/g/<raw>/back", "POST"), ("/g/<raw>/calendar", "GET,POST"),
    ("/g/<raw>/deadline.ics", "GET"), ("/g/<raw>/here", "POST"), ("/g/<raw>/language", "POST"),
    ("/g/<raw>/log/<int(max=2147483647):number>", "GET"),
    ("/g/<raw>/notifications", "POST"), ("/g/<raw>/plan", "POST"), ("/g/<raw>/push", "POST"),
    ("/g/<raw>/push/remove", "POST"), ("/g/<raw>/say", "POST"),
    ("/g/<raw>/standing", "POST"), ("/g/<raw>/takeback", "POST"), ("/g/<raw>/vacation", "POST"),
    ("/handover/<raw>", "GET,POST"), ("/healthz", "GET"), ("/host/confirm/<raw>", "GET,POST"),
    ("/invite/<raw>", "GET,POST"), ("/language", "POST"), ("/metrics", "GET"),
    ("/my", "GET,POST"),
    ("/my/<raw>", "GET"), ("/my/<raw>/host", "POST"), ("/my/<raw>/open", "POST"),
    ("/my/<raw>/stop", "POST"), ("/new", "GET"), ("/new", "POST"), ("/rules", "GET"),
    ("/rules/<game>", "GET"), ("/static/<path:filename>", "GET"), ("/sw.js", "GET"),
    ("/u/<raw>", "GET,POST"),
    ("/ui.css", "GET"), ("/watch/<key>", "GET"),
    ("/watch/<key>/log/<int(max=2147483647):number>", "GET"),
]


def test_the_server_answers_exactly_the_urls_it_always_did(app):
    rules = sorted((r.rule, ",".join(sorted(r.methods - {"HEAD", "OPTIONS"})))
                   for r in app.url_map.iter_rules())
    assert rules == URLS


def test_each_blueprint_holds_its_own_visitors_urls(app):
    """Who uses a URL says where it lives (see pbem/web/__init__.py)."""
    owner = {r.rule: r.endpoint.split(".")[0] for r in app.url_map.iter_rules()}
    assert {b.name for b in BLUEPRINTS} == {
        "pages", "health", "rules", "host", "play", "settings", "calendar", "devmail", "api"}
    expected = {"/": "pages", "/healthz": "health", "/metrics": "health",
                "/rules/<game>": "rules",
                "/new": "host", "/admin/<raw>/<control>": "host", "/a/<raw>": "play",
                "/watch/<key>": "play", "/my/<raw>": "settings", "/u/<raw>": "settings",
                "/g/<raw>/notifications": "settings", "/g/<raw>/push": "settings",
                "/sw.js": "settings", "/dev/mail": "devmail",
                "/cal/<raw>.ics": "calendar", "/g/<raw>/calendar": "calendar",
                "/api/v1/seat": "api", "/api/v1/host": "api"}
    assert {rule: owner[rule] for rule in expected} == expected
