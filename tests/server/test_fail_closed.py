"""Fail closed (issue 7, item 3): no mail configuration means no start, the dev mailbox is
an explicit opt-in for this machine only, cookies and pages are locked down, and secret
link tokens never reach the access log."""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from pbem import create_app, mail
from pbem.cli import pbem_cli
from pbem.migrate import upgrade
from tests.pgcluster import free_port
from tests.server.helpers import (
    BASE_URL,
    MAIL_FROM,
    SECRET,
    forms,
    path_of,
    poll_until,
    wait_for,
)

ROOT = Path(__file__).resolve().parents[2]


def bare_config(tmp_path, **extra) -> dict:
    return {"DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite3'}", "SECRET_KEY": SECRET,
            "MAIL_BACKEND": None, "SMTP_HOST": None, "MAIL_FROM": None, **extra}


def test_no_mail_configuration_refuses_to_start(tmp_path, monkeypatch):
    for key in [k for k in os.environ if k.startswith("PBEM_")]:
        monkeypatch.delenv(key)
    with pytest.raises(mail.ConfigError, match="no mail server is configured"):
        create_app(bare_config(tmp_path))


def test_smtp_without_a_sender_refuses_to_start(tmp_path):
    with pytest.raises(mail.ConfigError, match="PBEM_MAIL_FROM must be set"):
        create_app(bare_config(tmp_path, SMTP_HOST="smtp.example.org"))


def test_an_smtp_host_alone_selects_smtp(tmp_path):
    app = create_app(bare_config(tmp_path, SMTP_HOST="smtp.example.org",
                                 MAIL_FROM="Games <games@example.org>"))
    assert isinstance(app.extensions["pbem.mail"], mail.SMTPBackend)


def bare_env(tmp_path) -> dict[str, str]:
    """This process's environment with no ``PBEM_*`` setting but a database and a
    secret: no mail configuration at all."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    return {**env, "PBEM_DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite3'}",
            "PBEM_SECRET_KEY": SECRET}


def flask(tmp_path, *args: str) -> subprocess.CompletedProcess:
    """``flask --app pbem ARGS`` run from ``tmp_path`` with no mail configuration."""
    command = [str(Path(sys.executable).with_name("flask")), "--app", "pbem", *args]
    return subprocess.run(command, env=bare_env(tmp_path), cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)


NEW_GAME = ["new-game", "--player", "Ann <ann@example.com>", "--player",
            "Bob <bob@example.com>", "--start"]


@pytest.mark.parametrize("command", [["deliver"], ["clock"], NEW_GAME])
def test_a_command_that_sends_mail_refuses_saying_what_to_set(tmp_path, command):
    assert flask(tmp_path, "pbem", "migrate").returncode == 0
    done = flask(tmp_path, "pbem", *command)
    assert done.returncode != 0
    assert "Error: no mail server is configured" in done.stderr
    assert "PBEM_MAIL_BACKEND=dev" in done.stderr and "Traceback" not in done.stderr
    with sqlite3.connect(tmp_path / "x.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM game").fetchone() == (0,)


@pytest.mark.parametrize("command", [[], *([name] for name in sorted(pbem_cli.commands))])
def test_every_command_explains_itself_without_a_mail_configuration(tmp_path, command):
    done = flask(tmp_path, "pbem", *command, "--help")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(f"Usage: flask pbem {' '.join(command)}".rstrip())
    assert "Options:" in done.stdout


def test_migrate_needs_no_mail_configuration(tmp_path):
    done = flask(tmp_path, "pbem", "migrate")
    assert (done.returncode, done.stdout) == (0, "database at head\n"), done.stderr
    with sqlite3.connect(tmp_path / "x.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM game").fetchone() == (0,)


def test_the_flask_web_server_refuses_to_start_without_a_mail_configuration(tmp_path):
    done = flask(tmp_path, "run", "--port", str(free_port()))
    assert done.returncode != 0
    assert "no mail server is configured" in done.stderr


def test_make_run_opts_into_the_dev_mailbox_and_the_readme_sets_a_sender():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^run: export PBEM_MAIL_BACKEND \?= dev$", makefile, re.M)
    readme = (ROOT / "README.md").read_text()
    production = readme.split("## Running it for real", 1)[1].split("```")[1]
    assert "PBEM_MAIL_FROM=" in production
    assert "PBEM_MAIL_BACKEND=smtp" in production


# --------------------------------------------------------------------------- dev mailbox


@pytest.fixture
def dev_app(make_app):
    return make_app(MAIL_BACKEND="dev")


def test_the_dev_mailbox_answers_only_to_this_machine(dev_app):
    client = dev_app.test_client()
    for addr in ("127.0.0.1", "::1"):
        assert client.get("/dev/mail", environ_base={"REMOTE_ADDR": addr}).status_code == 200
    for addr in ("10.0.0.7", "192.168.1.20", "2001:db8::1", "", "garbage"):
        resp = client.get("/dev/mail", environ_base={"REMOTE_ADDR": addr})
        assert resp.status_code == 404, addr


def test_a_forwarded_for_header_does_not_open_the_dev_mailbox(dev_app):
    client = dev_app.test_client()
    resp = client.get("/dev/mail", environ_base={"REMOTE_ADDR": "10.0.0.7"},
                      headers={"X-Forwarded-For": "127.0.0.1"})
    assert resp.status_code == 404


def test_without_the_dev_backend_there_is_no_dev_mailbox(client):
    assert client.get("/dev/mail").status_code == 404


# --------------------------------------------------------------------------- cookies, CSP


def test_the_session_cookie_is_httponly_and_samesite_lax(client):
    client.get("/")
    cookie = client.get_cookie("session")
    assert cookie is not None
    assert cookie.http_only and cookie.same_site == "Lax" and not cookie.secure


def test_the_session_cookie_is_secure_when_the_site_is_https(make_app):
    client = make_app(BASE_URL="https://games.example.org").test_client()
    resp = client.get("/")
    header = resp.headers["Set-Cookie"]
    assert "Secure" in header and "HttpOnly" in header and "SameSite=Lax" in header


def pages_of(app, client, table) -> list[str]:
    page = path_of(table.mail(table.open()).link("/g/"))
    return ["/", page, f"/admin/{table.admin}", path_of(table.mail(table.open())
                                                        .action_links()[0]),
            "/u/" + table.mail(table.open()).unsubscribe_token, "/nowhere", "/my"]


def test_every_page_has_a_csp_without_inline_script_and_no_inline_script(app, client,
                                                                         table):
    for url in pages_of(app, client, table):
        resp = client.get(url)
        csp = resp.headers["Content-Security-Policy"]
        assert "default-src 'none'" in csp and "unsafe-inline" not in csp, url
        html = resp.get_data(as_text=True)
        scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", html, re.I | re.S)
        path = urlsplit(url).path
        if path == "/":  # the home page: its time zone script, a file
            assert "script-src 'self'" in csp
            (tag,) = re.findall(r"<script\b[^>]*>", html)
            assert re.fullmatch(r'<script src="/static/tz.js\?v=[0-9a-f]{12}" defer>', tag)
            assert scripts == [""], url
        elif re.fullmatch(r"/(g|watch)/[^/]+", path) and "<script" in html:
            # a game page under way (static/live.js, clock.js) or with folded rounds
            # (log.js): files
            assert "script-src 'self'" in csp, url
            tags = re.findall(r"<script\b[^>]*>", html)
            assert tags and all(re.fullmatch(
                r'<script src="/static/(live|log|clock).js\?v=[0-9a-f]{12}" defer>', t)
                for t in tags), (url, tags)
            assert set(scripts) == {""}, url
        else:  # no script at all: default-src 'none' applies
            assert "script-src" not in csp and "<script" not in html.lower(), url
        assert not re.search(r"\son[a-z]+\s*=", html, re.I), url  # no onclick=, onsubmit=
        assert "<style" not in html.lower() and ' style="' not in html, url


def test_abandoning_needs_a_ticked_box_instead_of_a_script(app, client, table):
    html = client.get(f"/admin/{table.admin}").get_data(as_text=True)
    (form,) = [f for f in forms(html) if f.attrs.get("id") == "abandon"]
    assert form.checkboxes == {"sure": ["yes"]}
    assert "onsubmit" not in form.attrs


def test_the_stylesheet_is_served_from_the_site(client):
    with client.get("/static/pbem.css") as resp:
        assert resp.status_code == 200 and "font-family" in resp.get_data(as_text=True)


def test_static_files_are_named_by_their_content_and_kept_for_a_year(client):
    """A page names its stylesheet with a hash of its content: a browser keeps that for a
    year and asks for nothing on the next page; any other address is asked about again."""
    html = client.get("/").get_data(as_text=True)
    (href,) = re.findall(r'href="(/static/pbem\.css\?v=[0-9a-f]{12})"', html)
    with client.get(href) as resp:
        body = resp.get_data()
        assert resp.status_code == 200 and b"font-family" in body
        cache = resp.headers["Cache-Control"]
        assert "max-age=31536000" in cache and "immutable" in cache and "public" in cache
        assert "no-cache" not in cache and "no-store" not in cache
    assert href.endswith(hashlib.sha256(body).hexdigest()[:12])
    for other in ("/static/pbem.css", "/static/pbem.css?v=000000000000",
                  "/static/pbem.css?v=" + "a" * 5000):
        with client.get(other) as resp:
            assert resp.status_code == 200
            assert "max-age=31536000" not in resp.headers["Cache-Control"], other
    for bad in ("/static/../pbem/__init__.py?v=1", "/static/nothing.css?v=1",
                "/static/%2e%2e/pyproject.toml"):
        with client.get(bad) as resp:
            assert resp.status_code == 404, bad


# --------------------------------------------------------------------------- the access log


@pytest.mark.parametrize("started", ["in the checkout, no flag", "elsewhere, --config"])
def test_gunicorn_access_log_never_holds_a_link_token(tmp_path, started):
    """Gunicorn reads the checkout's gunicorn.conf.py by itself; from any other folder
    ``--config python:pbem.gunicorn_conf`` gives the same settings."""
    flag, cwd = ([], ROOT) if started.endswith("no flag") else (
        ["--config", "python:pbem.gunicorn_conf"], tmp_path)
    db = f"sqlite:///{tmp_path / 'pbem.sqlite3'}"
    upgrade(db)
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PBEM_")},
           "PBEM_DATABASE_URL": db, "PBEM_MAIL_BACKEND": "memory", "PBEM_SECRET_KEY": SECRET,
           "PBEM_BASE_URL": BASE_URL, "PBEM_MAIL_FROM": MAIL_FROM}
    log, errors = tmp_path / "access.log", tmp_path / "errors.log"
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    with open(errors, "wb") as err:
        proc = subprocess.Popen([gunicorn, "--workers", "1", "--bind", f"127.0.0.1:{port}",
                                 *flag, "--access-logfile", str(log), "pbem:create_app()"],
                                env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(base, proc, errors)
        secrets = ["A" * 43, "b9Zx-_" * 7 + "q", "x" * 32]
        for raw in secrets:
            for path in (f"/a/{raw}", f"/g/{raw}", f"/admin/{raw}/pause",
                         f"/host/confirm/{raw}?again={raw}"):
                requests.get(base + path, timeout=5)
                requests.post(base + path, data={"sig": raw}, timeout=5)
        # the worker writes each request's line once it has answered: wait for the last
        poll_until(lambda: log.read_text().count('"POST /host/confirm/') == len(secrets),
                   10, "the access log has every request")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    text = log.read_text()
    assert text.count('"GET /a/<token>') == len(secrets), text[:2000]
    for raw in secrets:
        assert raw not in text


def test_tokens_are_redacted_even_when_percent_encoded_and_in_error_logs(app, caplog):
    from pbem.tokens import redact

    raw = "tzoC8" + "Q" * 38
    assert redact(f"GET /admin/%74{raw[1:]}%2D HTTP/1.1") == "GET /admin/<token> HTTP/1.1"
    with caplog.at_level("ERROR"):
        app.logger.error("Exception on /invite/%s [POST]", raw)
        app.logger.error(f"Exception on /g/{raw} [GET]")
    assert raw not in caplog.text and caplog.text.count("<token>") == 2
