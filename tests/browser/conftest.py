"""Browser fixtures: the real app served over HTTP on a free loopback port, and Debian's
Chromium driven by Playwright (never a downloaded browser; see STACK-NOTES.md).

Under ``CI=true`` a missing or broken Chromium fails the tests; elsewhere they are skipped
with the reason.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest
from flask import Flask
from werkzeug.serving import make_server

from pbem import clock, create_app
from pbem.db import get_engine
from pbem.migrate import upgrade

CHROMIUM = os.environ.get("PBEM_CHROMIUM", "/usr/bin/chromium")  # Debian's package
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"Chromium is required under CI=true: {reason}")
    pytest.skip(f"Chromium not available (set CI=true to make this fail): {reason}")


@dataclass
class LiveServer:
    url: str
    app: Flask
    mailbox: Path


@pytest.fixture
def live_server(tmp_path) -> Iterator[LiveServer]:
    """The app on a fresh migrated SQLite database with the dev mailbox, served by a
    threaded werkzeug server in a background thread."""
    db_url = f"sqlite:///{tmp_path / 'pbem.sqlite3'}"
    upgrade(db_url)
    holder: dict[str, Flask] = {}

    def wsgi(environ, start_response):  # the app is built once the port is known
        return holder["app"](environ, start_response)

    server = make_server("127.0.0.1", 0, wsgi, threaded=True)
    url = f"http://127.0.0.1:{server.server_port}"
    mailbox = tmp_path / "mailbox"
    app = create_app({"DATABASE_URL": db_url, "SECRET_KEY": secrets.token_hex(16),
                      "BASE_URL": url, "MAIL_BACKEND": "dev", "MAILBOX_DIR": str(mailbox),
                      "MAIL_POLL_INTERVAL": 0.02,
                      # every decision mailed at once: these players answer emails only
                      "FOLLOW_UP_MINUTES": 0, "TAKEBACK_GRACE_SECONDS": 0})
    holder["app"] = app
    werkzeug_log = logging.getLogger("werkzeug")
    level = werkzeug_log.level
    werkzeug_log.setLevel(logging.WARNING)  # one access-log line per request is noise
    thread = threading.Thread(target=server.serve_forever, name="pbem-live-server",
                              daemon=True)
    thread.start()
    mailer, stop = clock.start_mail_thread(app)  # the clock's mail loop delivers
    try:
        yield LiveServer(url, app, mailbox)
    finally:
        stop.set()
        mailer.join(timeout=10)
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()
        get_engine(app).dispose()
        werkzeug_log.setLevel(level)


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        _unavailable(f"{CHROMIUM} does not exist (apt-get install -y chromium)")
    from playwright.sync_api import Error, sync_playwright

    with sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        except Error as exc:
            _unavailable(f"{CHROMIUM} did not start: {exc}")
        try:
            yield browser
        finally:
            browser.close()


class ConsoleError(NamedTuple):
    page: str  # the page's address
    text: str
    about: str  # the address the message is about (a failed resource), if any


@dataclass
class ConsoleLog:
    """Console errors and uncaught page errors, from every page of a browser context."""

    errors: list[ConsoleError]

    def watch(self, page) -> None:
        def on_console(msg) -> None:
            if msg.type == "error":
                self.errors.append(ConsoleError(page.url, msg.text,
                                                msg.location.get("url", "")))

        page.on("console", on_console)
        page.on("pageerror", lambda exc: self.errors.append(
            ConsoleError(page.url, f"uncaught {exc}", "")))


@pytest.fixture
def console() -> ConsoleLog:
    return ConsoleLog([])


@pytest.fixture
def context(browser, console):
    ctx = browser.new_context(viewport={"width": 1100, "height": 900})
    ctx.set_default_timeout(10_000)
    ctx.on("page", console.watch)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def page(context):
    return context.new_page()
