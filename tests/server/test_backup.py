"""``flask --app pbem pbem backup FILE`` and ``restore FILE``, on SQLite and PostgreSQL.

A game backed up mid-game is restored into a fresh instance (a new database, the same
secret key) and played on there from the links of the emails the players already had.
A backup taken while a writer commits is one moment of the database. Whatever is not a
backup of this database, and a database that is not empty, are refused with a message,
changing nothing; a failed backup leaves no file.
"""

from __future__ import annotations

import itertools
import re
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import func, insert, select, text, update

from pbem import services
from pbem.db import get_engine
from pbem.kinds import Inbound
from pbem.migrate import alembic_config, upgrade
from pbem.models import EventLog, Game, table_of
from tests.server.conftest import start_game
from tests.server.helpers import (
    Inbox,
    Mail,
    only_form,
    outbox,
    path_of,
    snapshot,
)

ANOTHER_KEY = "another-secret-key"


@pytest.fixture
def new_database(request, db_url, tmp_path) -> Callable[[], str]:
    """Makes new, empty databases (no tables at all) of the same kind as ``db_url``."""
    names = itertools.count(1)

    def make() -> str:
        if db_url.startswith("sqlite"):
            return f"sqlite:///{tmp_path / f'new{next(names)}' / 'pbem.sqlite3'}"
        cluster = request.getfixturevalue("pg_cluster")
        return cluster.url(cluster.create_database())

    return make


@pytest.fixture
def fresh_url(new_database) -> str:
    """A new, empty database (no tables at all) of the same kind as ``db_url``."""
    return new_database()


def run(app, *args: str):
    return app.test_cli_runner().invoke(args=["pbem", *args])


def head() -> str:
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head() or ""


def kind_of(url: str) -> str:
    return "SQLite" if url.startswith("sqlite") else "PostgreSQL"


def back_up(app, file: Path) -> str:
    """Run ``pbem backup FILE``; its output line (checked)."""
    result = run(app, "backup", str(file))
    assert result.exit_code == 0, result.output
    assert re.fullmatch(
        rf"backup of the {kind_of(app.config['DATABASE_URL'])} database written to "
        rf"{re.escape(str(file))}: [\d.]+ (?:kB|MB) \([\d,]+ bytes\), \d+ games? "
        r"\(\d+ running\), taken \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC in (?:\d+ ms|\d+\.\d s)\n",
        result.output), result.output
    return result.output


def confirm(client, url: str) -> str:
    """Open an email's link (the confirmation page) and press its button; the answer."""
    page = client.get(path_of(url))
    assert page.status_code == 200, page.get_data(as_text=True)
    resp = client.post(path_of(url), data=only_form(page.get_data(as_text=True)).data())
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp.get_data(as_text=True)


def latest_turn_email(inbox: Inbox) -> Mail:
    """The newest decision email, as its recipient finds it, with its one-click links."""
    mail = inbox.of("decision")[-1]
    assert mail.action_links(), mail.text
    return mail


def moves(app) -> int:
    with get_engine(app).connect() as conn:
        return conn.execute(text("SELECT count(*) FROM move")).scalar_one()


# --------------------------------------------------------------------------- restore


def test_a_game_backed_up_mid_game_plays_on_in_a_fresh_instance_from_its_emails_links(
        app, client, inbox, make_app, fresh_url, tmp_path):
    start_game(app)
    first = latest_turn_email(inbox)
    assert "Recorded" in confirm(client, first.action_links()[0])
    second = latest_turn_email(inbox)  # the next player's email, sent before the backup
    assert second.to_addr != first.to_addr

    file = tmp_path / "pbem.backup"
    assert ", 1 game (1 running), " in back_up(app, file)
    taken = snapshot(app)
    # The original server goes on after the backup: the next player moves there.
    assert "Recorded" in confirm(client, second.action_links()[0])
    after_backup = latest_turn_email(inbox)
    original = snapshot(app)

    restored = make_app(DATABASE_URL=fresh_url)  # a new instance with the same secret key
    result = run(restored, "restore", str(file))
    assert result.exit_code == 0, result.output
    assert re.fullmatch(
        rf"restored {re.escape(str(file))} into the {kind_of(fresh_url)} database "
        rf"{re.escape(fresh_url)}: 1 game, in (?:\d+ ms|\d+\.\d s)\n"
        rf"schema at the migrations' head \({head()}\)\n", result.output), result.output
    assert snapshot(restored) == taken

    # The restored server is at the moment of the backup: the link of the email sent
    # after it is unknown there, and the next player plays again from the email they had.
    there, there_inbox = restored.test_client(), Inbox(restored)
    assert there.get(path_of(after_backup.action_links()[0])).status_code == 404
    assert "Recorded" in confirm(there, second.action_links()[0])
    # ... and the game goes on there: the email it sends next works too.
    third = latest_turn_email(there_inbox)
    assert third.to_addr != second.to_addr
    assert "Recorded" in confirm(there, third.action_links()[0])
    assert (moves(app), moves(restored)) == (2, 3)
    assert snapshot(app) == original  # the original was only read


def test_restored_under_another_secret_key_the_links_still_work_but_forms_opened_and_return_paths_given_before_do_not(  # noqa: E501
        app, client, inbox, make_app, fresh_url, tmp_path):
    """What the key does (README, "Backups"): link tokens are stored as plain SHA-256
    hashes, so the emails' links open and act under any key; the key signs the forms of
    the pages (HMAC of the link's token) and the return path of each email (HMAC of its
    row), so a page opened before and a bounce of an email sent before fail under a new
    key, and work under the same one."""
    start_game(app)
    mail = latest_turn_email(inbox)
    link = mail.action_links()[0]
    opened_before = only_form(client.get(path_of(link)).get_data(as_text=True)).data()
    return_path = inbox.backend.sent[-1].sender
    file = tmp_path / "pbem.backup"
    back_up(app, file)

    restored = make_app(DATABASE_URL=fresh_url, SECRET_KEY=ANOTHER_KEY)
    assert run(restored, "restore", str(file)).exit_code == 0
    there = restored.test_client()
    before = snapshot(restored)
    stale = there.post(path_of(link), data=opened_before)
    assert stale.status_code == 400
    assert "open the link again" in stale.get_data(as_text=True)
    assert snapshot(restored) == before
    with restored.app_context():  # a bounce of an email sent before is not recognised
        got = services.receive_reply(bounce_report(return_path), [return_path], "")
    assert got.outcome is not Inbound.BOUNCE
    assert "undeliverable" not in [r.status for r in outbox(restored)]
    assert "Recorded" in confirm(there, link)  # the link itself: opened anew, it acts
    assert moves(restored) == 1

    # Under the same key the form opened before and the return path both work.
    same = make_app(DATABASE_URL=fresh_url)
    get_engine(restored).dispose()
    assert run(same, "restore", "--force", str(file)).exit_code == 0
    assert same.test_client().post(path_of(link), data=opened_before).status_code == 200
    with same.app_context():
        got = services.receive_reply(bounce_report(return_path), [return_path], "")
    assert (got.outcome, got.extra) == (Inbound.BOUNCE, {"marked": True})
    assert [r.status for r in outbox(same)].count("undeliverable") == 1


def bounce_report(to: str) -> bytes:
    """A delivery report (RFC 3464) as a mail server writes it: the email failed for good."""
    return (
        f"From: Mail Delivery System <MAILER-DAEMON@mx.example.com>\r\n"
        f"To: {to}\r\nSubject: Undelivered Mail Returned to Sender\r\n"
        "Auto-Submitted: auto-replied\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="B"\r\n\r\n'
        "--B\r\nContent-Type: text/plain\r\n\r\nThis is the mail system.\r\n"
        "--B\r\nContent-Type: message/delivery-status\r\n\r\n"
        "Reporting-MTA: dns; mx.example.com\r\n\r\n"
        "Final-Recipient: rfc822; someone@example.com\r\n"
        "Action: failed\r\nStatus: 5.1.1\r\n"
        "Diagnostic-Code: smtp; 550 5.1.1 user unknown\r\n\r\n--B--\r\n").encode()


# --------------------------------------------------------------------------- consistency


def test_a_backup_taken_while_a_writer_commits_is_one_moment_of_the_database(
        app, make_app, fresh_url, tmp_path):
    """A writer adds a log row and bumps the game's version in each transaction, without
    pause, while the backup runs; the restored copy has exactly as many rows as bumps,
    as many as were committed when the backup began (a copy of pages read at different
    moments would not), and SQLite's integrity check passes on the file."""
    game_id = start_game(app).game_id
    engine, log, games = get_engine(app), table_of(EventLog), table_of(Game)
    now = datetime.now(UTC)
    with engine.begin() as conn:  # about 10 MB, so that the copy takes a while
        conn.execute(insert(log), [{"game_id": game_id, "seq": 10_000 + i, "kind": "padding",
                                    "data": {"pad": "x" * 4000}, "created_at": now}
                                   for i in range(2500)])
        start_version = conn.execute(select(games.c.version)).scalar_one()
    committed, stop = [0], threading.Event()

    def write() -> None:
        while not stop.is_set():
            with engine.begin() as conn:
                conn.execute(insert(log).values(game_id=game_id, seq=20_000 + committed[0],
                                                kind="tick", data={}, created_at=now))
                conn.execute(update(games).values(version=games.c.version + 1))
            committed[0] += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        while committed[0] < 20:  # the writer is well under way
            threading.Event().wait(0.01)
        began = committed[0]
        file = tmp_path / "pbem.backup"
        back_up(app, file)
        ended = committed[0]
    finally:
        stop.set()
        writer.join(30)
    assert ended > began  # the writer went on committing while the backup ran

    if file.read_bytes().startswith(b"SQLite format 3"):
        with sqlite3.connect(file) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    restored = make_app(DATABASE_URL=fresh_url)
    assert run(restored, "restore", str(file)).exit_code == 0
    with get_engine(restored).connect() as conn:
        ticks = conn.execute(select(func.count()).select_from(log)
                             .where(log.c.kind == "tick")).scalar_one()
        version = conn.execute(select(games.c.version)).scalar_one()
        padding = conn.execute(select(func.count()).select_from(log)
                               .where(log.c.kind == "padding")).scalar_one()
    assert padding == 2500
    assert ticks == version - start_version
    assert began <= ticks <= ended


# --------------------------------------------------------------------------- refusals


def refused(result, message: str) -> None:
    """The command stopped with a one-line error naming ``message``, no traceback."""
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: ") and message in result.output, result.output
    assert "Traceback" not in result.output


def not_pbem_sqlite(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE note (body TEXT)")
        conn.execute("INSERT INTO note VALUES ('shopping list')")
    conn.close()


BAD_FILES = {  # how to make it, what a SQLite server says, what a PostgreSQL one says
    "a text file": (lambda p, good: p.write_text("game 1: Ann to play\n"),
                    *["is not a pbem backup: neither a SQLite file nor a pg_dump archive; "
                      "nothing was changed"] * 2),
    "an empty file": (lambda p, good: p.write_bytes(b""),
                      *["is not a pbem backup: an empty file; nothing was changed"] * 2),
    "a backup cut off halfway": (
        lambda p, good: p.write_bytes(good.read_bytes()[:len(good.read_bytes()) // 2]),
        "as a database (database disk image is malformed); nothing was changed",
        "is not a readable pg_dump archive: pg_restore: error: could not read from input "
        "file: end of file; nothing was changed"),
}


@pytest.mark.parametrize("case", [*BAD_FILES, "a SQLite file of something else",
                                  "a backup of the other kind of database",
                                  "a backup from a newer pbem"])
def test_what_is_not_a_backup_of_this_database_is_refused_and_changes_nothing(
        app, case, tmp_path):
    """Even with --force: the checks come before anything is written."""
    start_game(app)
    good = tmp_path / "good.backup"
    back_up(app, good)
    bad = tmp_path / "bad.backup"
    sqlite = app.config["DATABASE_URL"].startswith("sqlite")
    if case in BAD_FILES:
        make, on_sqlite, on_postgres = BAD_FILES[case]
        make(bad, good)
        message = on_sqlite if sqlite else on_postgres
    elif case == "a SQLite file of something else":
        not_pbem_sqlite(bad)
        message = ("is not a pbem database (no table alembic_version, game)" if sqlite
                   else "is a SQLite backup; this server's database is PostgreSQL")
    elif case == "a backup of the other kind of database":
        bad.write_bytes((b"PGDMP" if sqlite else b"SQLite format 3\x00") + bytes(200))
        message = ("is a PostgreSQL backup; this server's database is SQLite" if sqlite
                   else "is a SQLite backup; this server's database is PostgreSQL")
    else:
        with get_engine(app).begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
        try:
            back_up(app, bad)
        finally:  # the suite's database keeps its schema revision
            with get_engine(app).begin() as conn:
                conn.execute(text("UPDATE alembic_version SET version_num = :v"),
                             {"v": head()})
        message = "has schema revision 9999, which this pbem does not know"
    before = snapshot(app)
    result = run(app, "restore", "--force", str(bad))
    refused(result, message)
    assert snapshot(app) == before


def test_a_database_that_is_not_empty_is_replaced_only_with_force(
        app, client, inbox, make_app, fresh_url, tmp_path):
    start_game(app)
    file = tmp_path / "pbem.backup"
    back_up(app, file)
    taken = snapshot(app)
    there = make_app(DATABASE_URL=fresh_url)
    upgrade(fresh_url)  # a migrated database with no rows is empty: the restore goes on
    assert run(there, "restore", str(file)).exit_code == 0
    confirm(there.test_client(), latest_turn_email(inbox).action_links()[0])
    played = snapshot(there)
    assert played != taken

    refused(run(there, "restore", str(file)), f"the database {fresh_url} is not empty "
            "(rows in decision, eventlog, game, move, outbox, seat, token); restore into "
            "an empty database, or --force to replace everything in it")
    assert snapshot(there) == played
    result = run(there, "restore", "--force", str(file))
    assert result.exit_code == 0, result.output
    assert snapshot(there) == taken


def test_a_backup_older_than_the_migrations_is_restored_and_the_host_told_to_migrate(
        make_app, new_database, tmp_path):
    scripts = ScriptDirectory.from_config(alembic_config("sqlite://"))
    previous = scripts.get_revision(head()).down_revision
    old_url = new_database()
    upgrade(old_url, previous)
    file = tmp_path / "old.backup"
    back_up(make_app(DATABASE_URL=old_url), file)
    target = new_database()
    result = run(make_app(DATABASE_URL=target), "restore", str(file))
    assert result.exit_code == 0, result.output
    assert result.output.endswith(
        f"schema at revision {previous}, older than head {head()}: run "
        f"`flask --app pbem pbem migrate` before starting the server\n"), result.output
    upgrade(target)  # and migrate brings it to head
    result = run(make_app(DATABASE_URL=target), "restore", "--force", str(file))
    assert f"schema at revision {previous}, older" in result.output  # put back as it was


# --------------------------------------------------------------------------- backup files


def test_an_existing_file_is_replaced_only_with_force(app, tmp_path):
    start_game(app)
    file = tmp_path / "pbem.backup"
    file.write_text("last week's notes\n")
    refused(run(app, "backup", str(file)),
            f"{file} exists; choose another name, or --force to replace it")
    assert file.read_text() == "last week's notes\n"
    result = run(app, "backup", "--force", str(file))
    assert result.exit_code == 0, result.output
    assert file.read_bytes()[:5] in (b"SQLit", b"PGDMP")
    assert [p.name for p in tmp_path.iterdir() if "backup" in p.name] == ["pbem.backup"]


def test_a_backup_that_fails_leaves_no_file(app, make_app, tmp_path):
    """SQLite: a database that is not pbem's; PostgreSQL: a pg_dump that dies halfway,
    having written half an archive."""
    folder = tmp_path / "backups"
    folder.mkdir()
    if app.config["DATABASE_URL"].startswith("sqlite"):
        other = tmp_path / "other.sqlite3"
        not_pbem_sqlite(other)
        source = make_app(DATABASE_URL=f"sqlite:///{other}")
        message = f"the database at {other} is not a pbem database"
    else:
        start_game(app)
        bindir = tmp_path / "bin"
        bindir.mkdir()
        dies = bindir / "pg_dump"
        dies.write_text('#!/bin/sh\n'
                        'case "$1" in --version) echo "pg_dump (PostgreSQL) 99.0"; exit 0;; '
                        'esac\n'
                        'for a; do case "$a" in --file=*) printf PGDMP-half > "${a#--file=}";;'
                        ' esac; done\n'
                        'echo "pg_dump: error: connection to server lost" >&2; exit 1\n')
        dies.chmod(0o755)
        source = make_app(PG_BINDIR=str(bindir))
        message = "pg_dump failed: pg_dump: error: connection to server lost"
    refused(run(source, "backup", str(folder / "pbem.backup")), message)
    assert list(folder.iterdir()) == []


# (on SQLite the backup API writes the whole database in one transaction of its own)
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_postgresql_restore_that_fails_midway_leaves_the_database_as_it_was(
        app, make_app, fresh_url, tmp_path):
    """The old content is dropped and the archive's tables made in one transaction: an
    object the restore does not clear (a standalone composite type named like one of the
    archive's tables) stops the script after several tables were made, and every step
    is undone."""
    start_game(app)
    file = tmp_path / "pbem.backup"
    back_up(app, file)
    there = make_app(DATABASE_URL=fresh_url)
    with get_engine(there).begin() as conn:
        conn.execute(text("CREATE TABLE note (body text)"))
        conn.execute(text("INSERT INTO note VALUES ('shopping list')"))
        conn.execute(text("CREATE TYPE move AS (x integer)"))
    result = run(there, "restore", "--force", str(file))
    refused(result, "the restore failed; the database is as it was: ")
    assert 'ERROR:  relation "move" already exists' in result.output
    with get_engine(there).connect() as conn:
        assert conn.execute(text("SELECT body FROM note")).scalars().all() == ["shopping list"]
        assert conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = "
                                 "'public'")).scalars().all() == ["note"]
