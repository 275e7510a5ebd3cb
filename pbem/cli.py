"""``flask --app pbem pbem ...``: commands for hosts, scripts and operators."""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
from collections.abc import Callable
from typing import Any, cast

import click
from flask import Flask, current_app
from flask.cli import AppGroup
from werkzeug.local import LocalProxy

from engine.registry import listings
from engine.search import DEFAULT_BUDGET_MS
from pbem import clock as clock_mod
from pbem import health, mail, services
from pbem.errors import ServiceError
from pbem.kinds import Process, SeatBot
from pbem.policy import ABSENT_BOTS

pbem_cli = AppGroup("pbem", help="pbem: games by email.")
MAX_PROCESSES = 256  # workers a command starts at most: a typo must not fork thousands


def init_app(app: Flask) -> None:
    app.cli.add_command(pbem_cli)


def mail_can_wait() -> bool:
    """True when the ``flask`` command loads the app for a command other than ``run``:
    help, ``migrate`` and the commands that only read need no mail configuration, and
    those that send mail check it first (``sends_mail``). A web server (gunicorn, or
    ``flask run``) refuses to start without one."""
    ctx = click.get_current_context(silent=True)
    return ctx is not None and ctx.command.name != "run"


def sends_mail(command: Callable[..., Any]) -> Callable[..., Any]:
    """Refuse the command before it does anything, saying what to set, when the mail
    configuration is missing or wrong."""

    @functools.wraps(command)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            mail.require()
        except mail.ConfigError as exc:
            raise click.ClickException(str(exc)) from None
        return command(*args, **kwargs)

    return checked


@pbem_cli.command("new-game")
@click.option("--game", type=click.Choice(tuple(listings())),
              default=next(iter(listings())), show_default=True, help="The game to play.")
@click.option("--player", "players", multiple=True, required=True,
              help='"Name <email>" optionally followed by language and time zone, '
                   'e.g. "Ann <ann@example.com> de Europe/Berlin". The first is the host.')
@click.option("--hours-per-decision", default=48.0, show_default=True, type=float)
@click.option("--seed", type=int, default=None)
@click.option("--title", default="")
@click.option("--start", is_flag=True, help="Start at once, without invitations.")
@click.option("--reminders", default=None,
              help="Hours before each deadline to remind, e.g. '24,2' "
                   "(default: half time and 2 hours before).")
@click.option("--absent-after", default=2, show_default=True,
              help="Timeouts in a row after which a bot plays the seat.")
@click.option("--bot", "bots", multiple=True,
              help="A bot at this level in the next seat after the players ('easy', or "
                   "'strong' where the game has one); repeatable.")
@click.option("--absent-bot", type=click.Choice([str(b) for b in ABSENT_BOTS]),
              default=SeatBot.HEURISTIC.value, show_default=True)
@click.option("--vacation-days", default=7.0, show_default=True)
@click.option("--pause-quiet", is_flag=True,
              help="Each player's clock stands still during their quiet hours.")
@click.option("--pause-weekends", is_flag=True,
              help="Each player's clock stands still at weekends (in their zone).")
@click.option("--bot-ms", default=DEFAULT_BUDGET_MS, show_default=True,
              help="The CPU milliseconds a strong bot may think per decision (10 to 5000).")
@click.option("--no-take-backs", is_flag=True,
              help="Players may not take back a move (by default they may, until another "
                   "person acts or the move showed anything hidden).")
@click.option("--bank", "bank_days", default=None, metavar="DAYS",
              help="A time bank instead of fixed hours per decision: the days on each "
                   "player's clock at the start (e.g. 3).")
@click.option("--increment", "increment_hours", default=None, metavar="HOURS",
              help="With --bank: the hours added to a clock after each move "
                   "(default 24).")
@click.option("--cap", "cap_days", default=None, metavar="DAYS",
              help="With --bank: the most days a clock holds (default 7).")
@sends_mail
def new_game(game: str, players: tuple[str, ...], bots: tuple[str, ...],
             hours_per_decision: float,
             seed: int | None, title: str, start: bool, reminders: str | None,
             absent_after: int, absent_bot: str, vacation_days: float, pause_quiet: bool,
             pause_weekends: bool, bot_ms: float, no_take_backs: bool, bank_days: str | None,
             increment_hours: str | None, cap_days: str | None) -> None:
    """Create a game; prints its id and the host's admin link."""
    try:
        if bank_days is None and (increment_hours is not None or cap_days is not None):
            raise click.UsageError("--increment and --cap go with --bank DAYS")
        parsed = [services.parse_player(p) for p in players]
        parsed += [services.PlayerIn("", "", parsed[0].language if parsed else "en",
                                     bot=level) for level in bots]
        policy = {"hours_per_decision": hours_per_decision, "reminder_hours": reminders,
                  "absent_after": absent_after, "absent_bot": absent_bot,
                  "vacation_days": vacation_days, "pause_quiet": pause_quiet,
                  "pause_weekends": pause_weekends, "take_backs": not no_take_backs,
                  "bot_ms": bot_ms}
        if bank_days is not None:
            policy |= {"time_control": "bank", "bank_days": bank_days,
                       **({"increment_hours": increment_hours} if increment_hours else {}),
                       **({"cap_days": cap_days} if cap_days else {})}
        created = services.create_game(game, parsed, policy, seed=seed,
                                       title=title, confirm_by_email=False, start=start)
    except ServiceError as exc:
        raise click.ClickException(exc.message) from None
    counts = mail.deliver_due()
    base = current_app.config["BASE_URL"].rstrip("/")
    click.echo(f"game {created.game_id}")
    click.echo(f"admin {base}/admin/{created.admin_token}")
    click.echo(f"mail sent {counts['sent']}, failed {counts['failed']}")


@pbem_cli.command("deliver")
@click.option("--limit", default=500, show_default=True)
@sends_mail
def deliver(limit: int) -> None:
    """Deliver the emails that are due (retrying failed ones with backoff)."""
    counts = mail.deliver_due(limit=limit)
    click.echo(f"sent {counts['sent']}, failed {counts['failed']}, "
               f"skipped {counts['skipped']}")


@pbem_cli.command("clock")
@sends_mail
def clock() -> None:
    """Run the clock process: delivers queued email as soon as it is queued, and sweeps
    for due reminders and deadlines every few seconds."""
    _log_lines()
    logging.getLogger("apscheduler").setLevel(logging.WARNING)  # a line per sweep is noise
    gc.collect()  # what lives as long as the process is kept out of every collection's
    gc.freeze()  # walk (see gunicorn_conf.post_worker_init)
    # the app itself, not the proxy of this thread's context: the clock runs threads
    clock_mod.run(cast("LocalProxy[Flask]", current_app)._get_current_object())


@pbem_cli.command("inbound")
@click.option("--imap", is_flag=True,
              help="Poll the IMAP mailbox of PBEM_IMAP_* instead of receiving by SMTP.")
@click.option("--lmtp", is_flag=True, default=None,
              help="Speak LMTP instead of SMTP (default: PBEM_INBOUND_LMTP).")
@sends_mail
def inbound(imap: bool, lmtp: bool | None) -> None:
    """Receive replies to the emails: an SMTP (or LMTP) receiver on PBEM_INBOUND_HOST and
    PBEM_INBOUND_PORT that the mail server of PBEM_INBOUND_DOMAIN forwards to, or with
    --imap a poller of an ordinary mailbox. Each reply plays its commands for the seat
    whose reply address it went to, and is answered in its thread."""
    import signal
    import threading
    import time

    from pbem.mail import receive

    _log_lines()
    # aiosmtpd's lines for every connection (a normal QUIT among them reads "Connection
    # lost during _handle_client()"); each reply is logged by pbem.services.replies
    logging.getLogger("mail.log").setLevel(logging.WARNING)
    app = cast("LocalProxy[Flask]", current_app)._get_current_object()
    config = app.config
    if threading.current_thread() is threading.main_thread():  # a stop, not a crash
        # (under a supervisor): ``finally`` blocks run and the heartbeat goes
        signal.signal(signal.SIGTERM, clock_mod.exit_on_sigterm)
    if imap:
        if not config.get("IMAP_HOST") or not config.get("IMAP_USER"):
            raise click.ClickException("set PBEM_IMAP_HOST, PBEM_IMAP_USER and "
                                       "PBEM_IMAP_PASSWORD to poll a mailbox")
        click.echo(f"polling {config['IMAP_USER']} at {config['IMAP_HOST']} every "
                   f"{config['IMAP_POLL_SECONDS']} s")
        with contextlib.suppress(KeyboardInterrupt, SystemExit), \
                health.running(Process.INBOUND, forget_at_end=True):
            receive.poll_imap(app, services.receive_reply, threading.Event())
        return
    try:
        controller = receive.smtp_receiver(app, services.receive_reply, lmtp=lmtp)
    except OSError as exc:  # the port taken (another pbem?), or not ours to take
        raise click.ClickException(
            f"cannot receive on {config['INBOUND_HOST']}:{config['INBOUND_PORT']}: "
            f"{exc.strerror or exc}; set PBEM_INBOUND_PORT (or, under `pbem serve`, "
            f"PORT) to another port") from None
    click.echo(f"receiving replies for {receive.describe(config)} on "
               f"{config['INBOUND_HOST']}:{config['INBOUND_PORT']}"
               f"{' (LMTP)' if lmtp or (lmtp is None and config['INBOUND_LMTP']) else ''}")
    try:
        with contextlib.suppress(KeyboardInterrupt, SystemExit), \
                health.running(Process.INBOUND, forget_at_end=True):
            while True:  # waiting for mail: alive (pbem.health)
                time.sleep(float(config["INBOUND_BEAT_SECONDS"]))
                health.beat(Process.INBOUND)
    finally:
        controller.stop()


@pbem_cli.command("bots")
@click.option("--workers", type=click.IntRange(1, MAX_PROCESSES), default=None,
              help="Bot worker processes (default: the cores less one, at least 1).")
def bots(workers: int | None) -> None:
    """Run the bot workers: each claims one due bot move at a time, thinks, and records
    it (the clock then plays no bot). Stopped by SIGTERM or Ctrl-C."""
    import sys

    from pbem import bots as bots_mod

    _log_lines()
    app = cast("LocalProxy[Flask]", current_app)._get_current_object()
    workers = workers or bots_mod.default_workers()
    if workers <= 1:  # a worker: a full collection walks only what was made since (as
        gc.collect()  # in the clock; bench/gc_pause.py: a search runs none in 5 s, but
        gc.freeze()  # one costs some 70 ms while the lifelong objects are walked)
    sys.exit(bots_mod.run(app, workers))


@pbem_cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address the web server listens on.")
@click.option("--port", envvar="PORT", default=5000, show_default=True, type=int,
              help="The web server's port (env PORT); the receiver's moves with it "
                   "(2525 for 5000, 2625 for 5100) unless PBEM_INBOUND_PORT is set.")
@click.option("--workers", type=click.IntRange(1, MAX_PROCESSES), default=None,
              help="gunicorn workers (default: PBEM_WEB_WORKERS, 2).")
@click.option("--inbound", "inbound_mode", default="auto", show_default=True,
              type=click.Choice(["auto", "smtp", "imap", "off"]),
              help="Replies by email: auto is imap when PBEM_IMAP_HOST is set, else the "
                   "SMTP receiver (off when PBEM_REPLIES and PBEM_BOUNCES are both false).")
@click.option("--stop-seconds", default=10.0, show_default=True,
              help="On SIGTERM, how long the children have to stop before SIGKILL.")
@click.option("--bot-workers", type=click.IntRange(0, MAX_PROCESSES), default=None,
              help="Bot worker processes (default: the cores less one, at least 1; "
                   "0: none, the clock plays the bots).")
@sends_mail
def serve(host: str, port: int, workers: int | None, inbound_mode: str,
          stop_seconds: float, bot_workers: int | None) -> None:
    """Run the whole server: the web server (gunicorn), the clock and the inbound
    receiver as child processes, restarted when one dies, all stopped on SIGTERM or
    Ctrl-C; their output as one stream."""
    import os
    import sys

    from pbem import supervise
    from pbem.bots import default_workers

    config = current_app.config
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.setdefault("PBEM_BASE_URL", f"http://{_local(host)}:{port}")
    env.setdefault("PBEM_INBOUND_PORT", str(supervise.inbound_port(port)))
    if inbound_mode == "auto":
        inbound_mode = ("imap" if config.get("IMAP_HOST") else
                        "smtp" if config["REPLIES"] or config["BOUNCES"] else "off")
    inbound = None if inbound_mode == "off" else inbound_mode
    children = supervise.specs(host=host, port=port, stop_seconds=stop_seconds,
                               workers=workers or int(config["WEB_WORKERS"]),
                               inbound=inbound,
                               bots=default_workers() if bot_workers is None else bot_workers)
    supervisor = supervise.Supervisor(children, env, stop_seconds=stop_seconds)
    supervisor.announce_when_listening(_local(host), port,
                                       _banner(f"http://{_local(host)}:{port}", env, inbound))
    sys.exit(supervisor.run())


def _banner(local: str, env: dict[str, str], inbound: str | None) -> list[str]:
    """What ``serve`` says once the web server listens: where everything is."""
    config = current_app.config
    lines = [f"pbem is running at {local}/"]
    if config.get("MAIL_BACKEND") == "dev":
        lines.append(f"dev mailbox:       {local}/dev/mail")
    if env["PBEM_BASE_URL"].rstrip("/") != local:
        lines.append(f"links in emails:   {env['PBEM_BASE_URL']}")
    if inbound == "smtp":
        lines.append(f"replies by email:  SMTP on {config['INBOUND_HOST']}:"
                     f"{env['PBEM_INBOUND_PORT']}")
    elif inbound == "imap":
        lines.append(f"replies by email:  the IMAP mailbox {config['IMAP_USER']} at "
                     f"{config['IMAP_HOST']}")
    return [*lines, "Ctrl-C (or SIGTERM) stops it all"]


def _log_lines() -> None:
    """A process's log as lines on stderr, each once: the root logger's handler, and not
    also Flask's own handler on the app's logger ("pbem"), which printed every line of
    ``pbem.clock`` and ``pbem.inbound`` twice."""
    from flask.logging import default_handler

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    current_app.logger.removeHandler(default_handler)


def _local(host: str) -> str:
    """The address to reach a server bound to ``host`` from this machine."""
    return {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "[::1]"}.get(
        host, f"[{host}]" if ":" in host else host)


@pbem_cli.command("doctor")
@click.option("--send-to", metavar="ADDRESS",
              help="Also send a test email to ADDRESS, directly through the mail server "
                   "(not the outbox), and with replies on wait for its answer.")
@click.option("--wait", default=300.0, show_default=True, metavar="SECONDS",
              help="With --send-to: how long to wait for the reply to come back (0: do "
                   "not wait).")
def doctor(send_to: str | None, wait: float) -> None:
    """Check the configuration, database, SMTP, reply path, DNS (SPF, DKIM, DMARC, MX)
    and outbox; print a line for each, with the fix for each failure (exit status 1)."""
    from pbem import doctor as checks

    app = cast("LocalProxy[Flask]", current_app)._get_current_object()
    ok = checks.run(app)
    if send_to:
        ok = checks.run_send_test(app, send_to, wait) and ok
    if not ok:
        raise SystemExit(1)


@pbem_cli.command("migrate")
def migrate() -> None:
    """Upgrade the database to the newest schema (Alembic ``upgrade head``)."""
    from pbem.migrate import upgrade

    upgrade(current_app.config["DATABASE_URL"])
    click.echo("database at head")


@pbem_cli.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, writable=True))
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
def backup(file: str, force: bool) -> None:
    """Write a consistent snapshot of the database to FILE while the server runs (SQLite:
    its online backup; PostgreSQL: pg_dump in custom format). Keep the secret key with
    it (see the README's "Backups")."""
    from pbem.backup import BackupError
    from pbem.backup import backup as write_backup

    try:
        done = write_backup(current_app.config["DATABASE_URL"], file, force=force,
                            pg_bindir=current_app.config.get("PG_BINDIR"))
    except BackupError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"backup of the {done.kind} database written to {done.path}: "
               f"{_size(done.size)}, {_games(done.games, done.running)}, "
               f"taken {done.taken_at:%Y-%m-%d %H:%M:%S} UTC in {_duration(done.seconds)}")


@pbem_cli.command("restore")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True,
              help="Replace everything in a database that is not empty.")
def restore(file: str, force: bool) -> None:
    """Put the backup FILE back into the database (which must be empty, unless --force).
    Stop the server first; start it with the secret key it had when FILE was taken."""
    from pbem.backup import BackupError, shown_url
    from pbem.backup import restore as put_back

    url = current_app.config["DATABASE_URL"]
    try:
        done = put_back(url, file, force=force, pg_bindir=current_app.config.get("PG_BINDIR"))
    except BackupError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"restored {file} into the {done.kind} database "
               f"{shown_url(url)}: {_games(done.games)}, in {_duration(done.seconds)}")
    if done.at_head:
        click.echo(f"schema at the migrations' head ({done.head})")
    else:
        click.echo(f"schema at revision {done.revision}, older than head {done.head}: run "
                   f"`flask --app pbem pbem migrate` before starting the server")


def _size(size: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit} ({size:,} bytes)"
    return f"{size} bytes"


def _games(games: int, running: int | None = None) -> str:
    text = f"{games} game{'' if games == 1 else 's'}"
    return text if running is None else f"{text} ({running} running)"



def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"
