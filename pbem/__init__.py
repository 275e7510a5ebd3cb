"""pbem: a play-by-email turn server. ``create_app`` is the Flask app factory."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from flask import Flask, request
from flask_babel import Babel

ROOT = Path(__file__).resolve().parent.parent


class DefaultConfig:
    """Embedded defaults: SQLite in instance/, the dev mailbox, a local base URL."""

    DATABASE_URL = None  # default: sqlite:///<instance>/pbem.sqlite3
    BASE_URL = "http://127.0.0.1:5000"
    MAIL_BACKEND = "dev"  # smtp | dev | memory
    MAIL_FROM = "pbem <pbem@localhost>"
    MAIL_DOMAIN = None  # default: host of BASE_URL
    SMTP_HOST = "localhost"
    SMTP_PORT = 25
    SMTP_USER = None
    SMTP_PASSWORD = None
    SMTP_STARTTLS = False
    SMTP_TIMEOUT = 10
    MAILBOX_DIR = None  # default: <instance>/mailbox
    DELIVER_INLINE = True  # deliver right after the commit of a web request
    CREATE_LIMIT_PER_HOUR = 10
    CLOCK_INTERVAL = 5.0
    BABEL_DEFAULT_LOCALE = "en"
    BABEL_TRANSLATION_DIRECTORIES = str(ROOT / "translations")


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Defaults, then ``PBEM_*`` environment variables, then ``config`` (tests)."""
    app = Flask(__name__, template_folder=str(ROOT / "templates"),
                instance_path=str(ROOT / "instance"), instance_relative_config=True)
    app.config.from_object(DefaultConfig)
    app.config.from_prefixed_env("PBEM")
    if config:
        app.config.update(config)
    _fill_defaults(app)
    from pbem import cli, db, mail, web

    db.init_app(app)
    mail.init_app(app)
    Babel(app, locale_selector=_locale)
    web.init_app(app)
    cli.init_app(app)
    return app


def _fill_defaults(app: Flask) -> None:
    inst = Path(app.instance_path)
    if not app.config.get("DATABASE_URL"):
        app.config["DATABASE_URL"] = f"sqlite:///{inst / 'pbem.sqlite3'}"
    if not app.config.get("MAILBOX_DIR"):
        app.config["MAILBOX_DIR"] = str(inst / "mailbox")
    if not app.config.get("MAIL_DOMAIN"):
        host = app.config["BASE_URL"].split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]
        app.config["MAIL_DOMAIN"] = host or "localhost"
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = _local_secret(inst)


def _local_secret(inst: Path) -> str:
    """For the embedded defaults only: a random key kept in instance/secret_key."""
    path = inst / "secret_key"
    if path.exists():
        return path.read_text().strip()
    inst.mkdir(parents=True, exist_ok=True)
    key = secrets.token_hex(32)
    path.write_text(key)
    path.chmod(0o600)
    return key


def _locale() -> str:
    from flask import g

    lang = getattr(g, "language", None)
    return lang or request.accept_languages.best_match(["en", "de"]) or "en"
