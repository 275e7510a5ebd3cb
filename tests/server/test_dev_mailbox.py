"""The dev mailbox (issue 11): the list shows when, to whom and what, and a message shows
its HTML part in full (a frame that runs no scripts) with the text part below."""

from __future__ import annotations

import email
import email.policy
import html as html_lib
import re
from pathlib import Path

import pytest

from tests.server.conftest import start_game
from tests.server.helpers import PLAYERS

ANN, BOB, CY = PLAYERS


@pytest.fixture
def dev_app(make_app):
    app = make_app(MAIL_BACKEND="dev")
    start_game(app, title="Bo&b <i>night</i>")  # three emails, one to each player
    return app


def test_the_list_shows_time_recipient_and_subject_of_each_email(dev_app):
    html = dev_app.test_client().get("/dev/mail").get_data(as_text=True)
    rows = re.findall(r'<tr><td class="when"><time datetime="([^"]+)">([^<]+)</time></td>'
                      r'<td class="to">([^<]+)</td><td class="subject"><a href="/dev/mail/'
                      r'([^"]+\.eml)">([^<]+)</a>', html)
    assert len(rows) == 3
    assert sorted(html_lib.unescape(to) for *_, to, _name, _subject in rows) == [
        f"{p.name} <{p.email}>" for p in PLAYERS]
    for iso, shown, *_rest, subject in rows:
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", shown)
        assert iso.startswith(shown[:10]) and iso.endswith("+00:00")
        assert html_lib.unescape(subject) == "Bo&b <i>night</i>"  # escaped, not markup
    assert "<i>night</i>" not in html


def test_a_message_shows_its_html_in_full_in_a_frame_without_scripts(dev_app):
    client = dev_app.test_client()
    name = re.search(r'href="/dev/mail/([^"]+\.eml)"',
                     client.get("/dev/mail").get_data(as_text=True)).group(1)
    resp = client.get(f"/dev/mail/{name}")
    assert resp.status_code == 200
    page = resp.get_data(as_text=True)
    (frame,) = re.findall(r"<iframe[^>]*>", page)
    sandbox = re.search(r'sandbox="([^"]*)"', frame).group(1).split()
    assert "allow-scripts" not in sandbox and "allow-forms" not in sandbox
    assert "allow-popups" not in sandbox
    srcdoc = html_lib.unescape(re.search(r'srcdoc="([^"]*)"', frame).group(1))
    msg = email.message_from_bytes((Path(dev_app.config["MAILBOX_DIR"]) / name).read_bytes(),
                                   policy=email.policy.default)
    assert srcdoc == '<base target="_top">' + msg.get_body(("html",)).get_content()  # in full
    text = re.search(r'<pre class="mail-text">(.*?)</pre>', page, re.S).group(1)
    assert page.index("<iframe") < page.index('<pre class="mail-text">')
    assert "/g/" in text or "/a/" in text
    csp = resp.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp.split("script-src")[1]
    assert re.search(r'<script src="/static/mailbox.js\?v=[0-9a-f]{12}" defer></script>', page)


def test_a_message_name_outside_the_mailbox_is_not_found(dev_app):
    client = dev_app.test_client()
    for name in ("../pbem.sqlite3", "nothing.eml", "x.txt", "%2e%2e%2fsecret.eml"):
        assert client.get(f"/dev/mail/{name}").status_code == 404, name
