"""pbem: a play-by-email turn server. ``create_app`` is the Flask app factory."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path
from typing import Any

from flask import Flask

PACKAGE = Path(__file__).resolve().parent


def _shared(name: str) -> Path:
    """``templates/`` or ``migrations/``: at the top of the checkout, or inside the
    package when it was installed from a wheel (setup.py puts them there)."""
    inside = PACKAGE / name
    return inside if inside.is_dir() else PACKAGE.parent / name


TEMPLATES = _shared("templates")
MIGRATIONS = _shared("migrations")


class DefaultConfig:
    """Embedded defaults: SQLite in instance/ and a local base URL. Mail has no default:
    ``make run`` opts into the dev mailbox; anything else must configure SMTP."""

    DATABASE_URL = None  # default: sqlite:///<instance>/pbem.sqlite3
    PG_BINDIR = None  # pg_dump, pg_restore, psql for backups; default: found (pbem/backup.py)
    BASE_URL = "http://127.0.0.1:5000"
    MAIL_BACKEND = None  # smtp | dev | memory; unset: smtp if SMTP_HOST is set, else refuse
    MAIL_FROM = None  # required for smtp, e.g. "Friday games <games@example.org>"
    MAIL_DOMAIN = None  # Message-ID domain; default: the domain of MAIL_FROM
    MAIL_MAX_ATTEMPTS = 25  # sending attempts before an email is undeliverable (~19 h)
    # Seconds an email being sent stays claimed; if its sender dies (a killed clock), it is
    # sent again once this runs out. Keep it well above SMTP_TIMEOUT.
    MAIL_LEASE_SECONDS = 120
    MAIL_POLL_INTERVAL = 0.5  # seconds between outbox polls of the clock (SQLite)
    SMTP_HOST = None
    SMTP_PORT = 25
    SMTP_USER = None
    SMTP_PASSWORD = None
    SMTP_STARTTLS = False
    SMTP_TIMEOUT = 10
    # `pbem doctor` only: the DKIM selector to look up (<selector>._domainkey.<domain>),
    # and a DNS server to ask ("ip:port") instead of the system's resolver.
    DKIM_SELECTOR = None
    DNS_SERVER = None
    MAILBOX_DIR = None  # default: <instance>/mailbox
    # Replies by email (``flask --app pbem pbem inbound``): every email to a player has a
    # Reply-To of its own (``pbem.mail.inbound.Addresses``). INBOUND_ADDRESSES "mailbox":
    # made from MAIL_FROM by plus addressing, games+r.<token>@example.org for
    # games@example.org, so the one mailbox of MAIL_FROM gets every reply and bounce and
    # ``inbound --imap`` polls it (IMAP_*). "domain": play+<token>@INBOUND_DOMAIN, whose
    # mail server hands it to the receiver (SMTP or LMTP on INBOUND_HOST:INBOUND_PORT).
    # Unset: "domain" when INBOUND_DOMAIN is set to another domain than MAIL_FROM's, else
    # "mailbox". Both forms, with either separator, are read at all times.
    # REPLIES = False: no Reply-To at all.
    REPLIES = True
    INBOUND_ADDRESSES = None  # mailbox | domain; default: see above
    INBOUND_SEPARATOR = "+"  # or "-", for a mail server whose recipient_delimiter it is
    INBOUND_DOMAIN = None  # default: MAIL_DOMAIN
    INBOUND_HOST = "127.0.0.1"
    INBOUND_PORT = 2525
    INBOUND_LMTP = False  # speak LMTP instead of SMTP (a Postfix lmtp: transport)
    INBOUND_MAX_BYTES = 25 * 1024 * 1024  # larger messages are refused by the receiver
    # Only the Authentication-Results headers of this server (its authserv-id) are read;
    # None: all of them (a forged header can only make its own message fail).
    INBOUND_AUTHSERV_ID = None
    REPLY_ANSWERS_PER_HOUR = 60  # answers to one seat's replies in an hour, at most
    # Every email's return path is its own (VERP: games+b.<id>.<tag>@ the mailbox, or
    # bounce+<id>-<tag>@INBOUND_DOMAIN), so a delivery report marks that email
    # undeliverable; after BOUNCE_LIMIT hard bounces in BOUNCE_DAYS an address gets no
    # more mail and the host is told. False: From.
    BOUNCES = True
    BOUNCE_LIMIT = 3
    BOUNCE_DAYS = 30
    TALK_MAX_CHARS = 1000  # one message to the table, at most
    API_WAIT_SECONDS = 25.0  # the JSON API's wait for a change holds at most this long
    # how many of those waits may hold at once on one machine: each holds a web worker
    # (keep it below the workers, PBEM_WEB_WORKERS, so that pages are always answered)
    API_WAIT_SLOTS = 1
    API_WAIT_DIR = ""  # the slots' lock files ("": the instance folder's api-wait)
    TALK_PER_HOUR = 20  # messages to the table from one seat in an hour, at most
    IMAP_HOST = None
    IMAP_PORT = 993
    IMAP_SSL = True  # False: plain IMAP (with STARTTLS if IMAP_STARTTLS)
    IMAP_STARTTLS = False
    IMAP_USER = None
    IMAP_PASSWORD = None
    IMAP_FOLDER = "INBOX"
    IMAP_POLL_SECONDS = 30.0
    CREATE_LIMIT_PER_HOUR = 10
    # Emails that are not turn emails: at most this many per address and per game in
    # an hour; the rest is held and summarised in the recipient's next turn email.
    NOTICE_LIMIT_PER_ADDRESS = 6
    NOTICE_LIMIT_PER_GAME = 30
    # Invitations (to join, to take over a seat, to confirm a new game): at most this
    # many per address in a day, and hand-over invitations per game in a day.
    INVITE_LIMIT_PER_ADDRESS = 5
    # Emails with a link to one's games asked for without one (the list of one's games,
    # from the home page; a game's page link, from an event of one's calendar feed): at
    # most this many of each per address in a day.
    MY_GAMES_LIMIT_PER_ADDRESS = 3
    HANDOVER_LIMIT_PER_GAME = 5
    PROXY_HOPS = 0  # reverse proxies in front of the app whose X-Forwarded-For to trust
    SESSION_COOKIE_HTTPONLY = True
    SESSION_COOKIE_SAMESITE = "Lax"
    SESSION_COOKIE_SECURE = None  # default: True when BASE_URL is https
    CLOCK_INTERVAL = 5.0
    # Seconds a PostgreSQL connection may take to open (libpq's connect_timeout, at least
    # 2): a database host that drops packets fails a request instead of holding it.
    DATABASE_CONNECT_TIMEOUT = 10
    # Health (pbem/health.py, the README's "Health and metrics"): /healthz?deep=1 answers
    # 503 when no clock swept for CLOCK_SILENT_SECONDS, an email due to be sent waited
    # OUTBOX_STUCK_SECONDS, or an inbound process wrote no heartbeat for
    # INBOUND_SILENT_SECONDS (the receiver writes one every INBOUND_BEAT_SECONDS while it
    # waits). Heartbeats of processes gone for HEARTBEAT_KEEP_DAYS are deleted.
    CLOCK_SILENT_SECONDS = 300.0
    OUTBOX_STUCK_SECONDS = 600.0
    # ... or a bot's move has been due, claimed by no bot worker, for this long (a bot
    # waits BOT_PAUSE_SECONDS, then a worker plays it within a moment).
    BOTS_BEHIND_SECONDS = 120.0
    INBOUND_SILENT_SECONDS = 300.0
    INBOUND_BEAT_SECONDS = 60.0
    HEARTBEAT_KEEP_DAYS = 1.0
    # /metrics in the Prometheus text format: off (404) unless METRICS is set; with
    # METRICS_TOKEN only for "Authorization: Bearer <METRICS_TOKEN>".
    METRICS = False
    METRICS_TOKEN = None
    WEB_WORKERS = 2  # gunicorn workers that ``pbem serve`` starts
    # Minutes a decision email waits when the same player decides again at once: the
    # page of their move already shows it; the email goes out only if they leave it open.
    FOLLOW_UP_MINUTES = 10.0
    # Seconds a move's email to the next player waits while the move may be taken back
    # (the game allows take-backs and the move showed nothing hidden): taken back in
    # that time, the email is withdrawn and nobody hears of the move. 0: no wait.
    TAKEBACK_GRACE_SECONDS = 90.0
    # Take-backs one seat may make in one turn (until someone else moves); 0: none.
    TAKEBACKS_PER_TURN = 2
    # Vacations one seat may take in 24 hours (each is told to the whole table).
    VACATIONS_PER_DAY = 2
    # Seconds between a live game page's questions "has anything changed?" (static/live.js;
    # each answered 304 at almost no cost while nothing did).
    LIVE_POLL_SECONDS = 5.0
    # Seconds between a seat's open game page telling the server it is there: a decision
    # opened for a seat seen within twice this time waits FOLLOW_UP_MINUTES to be emailed.
    LIVE_HERE_SECONDS = 60.0
    # Seconds a bot (seated at creation, or standing in for a player) waits before its
    # move (half to one and a half of it; the clock plays it at its next sweep after
    # that, see CLOCK_INTERVAL).
    BOT_PAUSE_SECONDS = 4.0
    # Bot workers (pbem/bots.py, ``pbem bots``): a worker's claim on a decision lasts
    # BOT_LEASE_SECONDS, renewed three times a lease while the worker thinks (a worker
    # killed or hung mid-thought leaves it to another after that, however long bots
    # think). A worker with nothing to do waits until the next bot decision is due, woken
    # when one is opened (pbem/wake.py), and looks at least every BOT_POLL_SECONDS; it
    # writes its heartbeat every BOT_BEAT_SECONDS. The clock plays
    # no bot while a worker's heartbeat is fresher than BOT_SILENT_SECONDS, or ever if
    # BOT_WORKERS is above 0 (the workers run elsewhere); else it plays them itself.
    BOT_LEASE_SECONDS = 30.0
    BOT_POLL_SECONDS = 2.0
    BOT_BEAT_SECONDS = 5.0
    BOT_SILENT_SECONDS = 20.0
    BOT_WORKERS = 0
    # Seconds a sweep of the clock may spend on bots' moves while no bot worker is alive
    # (after the move under way; the next sweep goes on).
    CLOCK_BOT_SECONDS = 2.0
    # ... and none in the clock's first seconds (bot workers started with it come up).
    CLOCK_BOT_GRACE_SECONDS = 15.0
    # The niceness bot workers add to their own (os.nice): under any bot load the clock
    # and the web keep the CPU they need.
    BOT_NICE = 10
    # The bots' CPU allowance (pbem/services/allowance.py): the CPU seconds a game's
    # bots may think in a UTC day, and a host's bots in all of the host's games (the
    # host seat's address). Beyond either, strong bots think at the default budget
    # (engine.search.DEFAULT_BUDGET_MS, 100 ms) until 00:00 UTC; within both, the host's
    # choice of milliseconds per move stands. A whole Stone Age game of a person and
    # three strong bots is 220 to 290 bot decisions (two games measured), 22 to 29
    # CPU-seconds at the default budget (a normal game never meets 600 in a day, nor a
    # host's ten games 1,800), and 18 to 24 CPU-minutes at the most a host may choose
    # (5,000 ms: 600 seconds are 120 such decisions a day, a lively game's day). A
    # host's 1,800 seconds are 2 % of one core's day: ten keen hosts take a fifth of a
    # core, not the machine.
    BOT_CPU_GAME_SECONDS = 600.0
    BOT_CPU_HOST_SECONDS = 1800.0
    # A game in which no person played for this many full rounds in a row (every decision
    # timed out or played by a bot standing in) ends as abandoned; a game without rounds
    # counts this many moves per seat.
    IDLE_ROUNDS = 3
    # A table's chat webhooks (pbem/channels/webhook.py): at most this many per game,
    # test messages per game and hour, the ports a webhook's URL may name, seconds for
    # one whole post (connect, TLS, request, the answer's status).
    WEBHOOKS_PER_GAME = 3
    WEBHOOK_TESTS_PER_HOUR = 5
    WEBHOOK_PORTS = (443,)
    WEBHOOK_TIMEOUT = 3.0
    # For tests only: host:port pairs let through despite the address and port rules (a
    # receiver on 127.0.0.1), and the certificates trusted instead of the system's.
    WEBHOOK_ALLOW_HOSTS: tuple[str, ...] = ()
    WEBHOOK_CA_FILE = None
    # Browser notifications by Web Push (pbem/channels/push.py, docs/push.md). Offered
    # when the pages are a secure context (BASE_URL https, or this machine); PUSH = False:
    # never, True: always. The server's VAPID key: VAPID_PRIVATE_KEY (base64url, raw or
    # DER; the same on every machine of one server), else made once and kept in
    # <instance>/vapid_private_key. VAPID_SUBJECT: how push services reach the host
    # (mailto: or https:), default MAIL_FROM's address.
    PUSH = None
    VAPID_PRIVATE_KEY = None
    VAPID_SUBJECT = None
    # Minutes the email of a decision waits when the seat's browsers were notified: a
    # player who answers on the page meanwhile gets no email. 0: no wait.
    PUSH_EMAIL_DELAY_MINUTES = 10.0
    PUSH_TTL_SECONDS = 12 * 3600  # a push service keeps a notification this long
    PUSH_TIMEOUT = 5.0  # seconds a push service may take to answer
    PUSH_DEVICES_PER_SEAT = 10
    # The tests' push service only: plain http://127.0.0.1 endpoints (never in production).
    PUSH_ALLOW_HTTP_LOOPBACK = False
    BABEL_DEFAULT_LOCALE = "en"


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Defaults, then ``PBEM_*`` environment variables, then ``config`` (tests).

    The instance folder (the default SQLite file and secret key) is Flask's: ``instance/``
    in a checkout, ``<virtualenv>/var/pbem-instance/`` when installed from a wheel."""
    app = Flask(__name__, template_folder=str(TEMPLATES), instance_relative_config=True)
    from pbem.narrate import TemplateEnvironment

    app.jinja_environment = TemplateEnvironment  # before anything makes app.jinja_env
    app.config.from_object(DefaultConfig)
    app.config.from_prefixed_env("PBEM")
    if config:
        app.config.update(config)
    _check_settings(app)
    _fill_defaults(app)
    from pbem import cli, db, i18n, mail, ui, web

    if int(app.config["PROXY_HOPS"]) > 0:
        from werkzeug.middleware.proxy_fix import ProxyFix

        hops = int(app.config["PROXY_HOPS"])
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops)  # type: ignore

    app.logger.addFilter(_redact_tokens)  # "Exception on /g/<token>" names the path
    db.init_app(app)
    mail.init_app(app, required=not cli.mail_can_wait())
    i18n.init_app(app)
    web.init_app(app)
    ui.init_app(app)
    cli.init_app(app)
    return app


def _check_settings(app: Flask) -> None:
    """Every numeric setting a number in its range (``pbem.settings``), or no app: a
    ``flask`` command then says which setting and why, with no traceback."""
    from pbem import settings

    try:
        settings.check_numbers(app.config, DefaultConfig)
    except settings.SettingsError as exc:
        import click
        from flask.cli import NoAppException

        if click.get_current_context(silent=True) is not None:
            raise NoAppException(str(exc)) from None
        raise


def _fill_defaults(app: Flask) -> None:
    inst = Path(app.instance_path)
    if not app.config.get("DATABASE_URL"):
        app.config["DATABASE_URL"] = f"sqlite:///{inst / 'pbem.sqlite3'}"
    if not app.config.get("MAILBOX_DIR"):
        app.config["MAILBOX_DIR"] = str(inst / "mailbox")
    if not app.config.get("API_WAIT_DIR"):
        app.config["API_WAIT_DIR"] = str(inst / "api-wait")
    if app.config.get("SESSION_COOKIE_SECURE") is None:
        app.config["SESSION_COOKIE_SECURE"] = app.config["BASE_URL"].startswith("https:")
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


def _redact_tokens(record: logging.LogRecord) -> bool:
    """A logging filter: link tokens in a log line become ``<token>``."""
    from pbem.tokens import redact

    record.msg = redact(str(record.msg))
    if isinstance(record.args, tuple):
        record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
    return True
