"""Backups that restore: a consistent snapshot of the database while the server runs, and
putting one back.

SQLite: the online backup API copies the database in one step inside one read
transaction, so the copy is the database as it was at one moment even while the web and
the clock write (WAL lets them go on meanwhile); the copy is a single file in rollback
journal mode, checked with ``quick_check``. PostgreSQL: ``pg_dump --format=custom`` of a
server version at least the server's, on a snapshot exported by a transaction that
also counts the games, so the figures printed are those of the archive.

Either way the backup is written to a temporary file next to ``FILE`` and renamed into
place only when complete, so a failed backup leaves no half file, and an existing
``FILE`` is replaced only with ``force``.

A restore checks first that the file is a backup of this database's kind made by pbem
(its tables, a revision the migrations know), and that the target database is empty
(no rows in any table) unless ``force``; only then does it write, in one transaction:
SQLite's backup API into the database (the old content or the new, never half);
PostgreSQL's archive as a script run by ``psql --single-transaction`` after dropping
what the database held. Then it reads the schema's revision against the migrations'
head.

Nothing here needs the app: the CLI (``flask --app pbem pbem backup``) passes the
database URL.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from glob import glob
from pathlib import Path
from typing import Any
from urllib.parse import quote

from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy.engine import URL, make_url

SQLITE_MAGIC = b"SQLite format 3\x00"
PG_MAGIC = b"PGDMP"  # the first bytes of a pg_dump archive in custom format
# The tables that make a database (or an archive) pbem's: the migrations' bookkeeping and
# the games. A backup from an older release may lack newer tables; it is upgraded later.
MARK_TABLES = ("alembic_version", "game")
PG_BIN_GLOB = "/usr/lib/postgresql/*/bin"  # Debian's and Ubuntu's server packages


class BackupError(Exception):
    """A backup or restore refused or failed, with a message for the host; nothing was
    changed (no file written, no database touched)."""


@dataclass(frozen=True)
class Written:
    """What ``backup`` wrote."""

    path: Path
    kind: str  # "SQLite" or "PostgreSQL"
    size: int  # bytes
    games: int
    running: int  # games in play
    taken_at: datetime
    seconds: float


@dataclass(frozen=True)
class Restored:
    """What ``restore`` put back, and where the schema stands."""

    kind: str
    games: int
    revision: str
    head: str
    seconds: float

    @property
    def at_head(self) -> bool:
        return self.revision == self.head


# --------------------------------------------------------------------------- backup


def backup(url: str, dest: str | os.PathLike[str], force: bool = False,
           pg_bindir: str | None = None) -> Written:
    """Write a consistent snapshot of the database at ``url`` to ``dest`` (refused if
    ``dest`` exists, unless ``force``)."""
    target = Path(dest)
    _check_destination(target, force)
    started, taken_at = time.monotonic(), datetime.now(UTC)
    with _partial_file(target) as tmp:
        if _is_sqlite(url):
            games, running = _sqlite_backup(_sqlite_path(url), tmp)
            kind = "SQLite"
        else:
            games, running = _pg_backup(make_url(url), tmp, pg_bindir)
            kind = "PostgreSQL"
        size = tmp.stat().st_size
        _put_in_place(tmp, target, force)
    return Written(target, kind, size, games, running, taken_at,
                   time.monotonic() - started)


def _check_destination(target: Path, force: bool) -> None:
    if target.is_dir():
        raise BackupError(f"{target} is a folder; name the backup file to write")
    if not target.parent.is_dir():
        raise BackupError(f"the folder {target.parent} does not exist")
    if target.exists() and not force:
        raise BackupError(f"{target} exists; choose another name, or --force to replace it")


@contextlib.contextmanager
def _partial_file(target: Path) -> Iterator[Path]:
    """A new empty file next to ``target`` (readable by its owner alone: a backup holds
    everyone's email address), removed on the way out unless it was put in place."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                suffix=".partial")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
    finally:
        tmp.unlink(missing_ok=True)
        for extra in ("-journal", "-wal", "-shm"):  # SQLite's, if it left any
            Path(name + extra).unlink(missing_ok=True)


def _put_in_place(tmp: Path, target: Path, force: bool) -> None:
    """Rename the finished ``tmp`` to ``target`` (a hard link when not forced, which
    fails rather than replace a file that appeared meanwhile)."""
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    if force:
        os.replace(tmp, target)
    else:
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise BackupError(f"{target} exists; choose another name, or --force to "
                              f"replace it") from None
        except OSError:  # a file system without hard links
            if target.exists():
                raise BackupError(f"{target} exists; choose another name, or --force "
                                  f"to replace it") from None
            os.replace(tmp, target)
    with contextlib.suppress(OSError):  # the rename itself on disk
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _sqlite_backup(path: Path, tmp: Path) -> tuple[int, int]:
    if not path.is_file():
        raise BackupError(f"there is no database at {path}")
    with (contextlib.closing(sqlite3.connect(path, timeout=30)) as src,
          contextlib.closing(sqlite3.connect(tmp)) as dst):
        _require_pbem_tables(_sqlite_tables(src), f"the database at {path}")
        src.backup(dst)  # all pages in one step: one read transaction, one moment
        dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
        (check,) = dst.execute("PRAGMA quick_check").fetchone()
        if check != "ok":
            raise BackupError(f"the copy failed its check ({check}); nothing was written")
        return _sqlite_games(dst)


def _pg_backup(url: URL, tmp: Path, bindir: str | None) -> tuple[int, int]:
    import psycopg

    with psycopg.connect(_conninfo(url, with_password=True)) as conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        major = _pg_major(conn)
        tables = {name for (name,) in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        _require_pbem_tables(tables, f"the database {url.database}")
        (snapshot,) = _one(conn, "SELECT pg_export_snapshot()")
        games, running = _one(
            conn, "SELECT count(*), count(*) FILTER (WHERE status = 'active') FROM game")
        # pg_dump reads in the snapshot of this transaction, which stays open meanwhile
        _run([_pg_tool("pg_dump", major, bindir), "--format=custom", "--no-password",
              f"--snapshot={snapshot}", f"--file={tmp}", f"--dbname={_conninfo(url)}"],
             url, "pg_dump")
    _run([_pg_tool("pg_restore", major, bindir), "--list", str(tmp)], url,
         "pg_restore --list")  # the archive reads back
    return int(games), int(running)


# --------------------------------------------------------------------------- restore


def restore(url: str, src: str | os.PathLike[str], force: bool = False,
            pg_bindir: str | None = None) -> Restored:
    """Put the backup ``src`` back into the database at ``url`` (refused if the database
    holds any row, unless ``force``; then everything it held is replaced)."""
    source = Path(src)
    kind = _kind_of_file(source)
    started = time.monotonic()
    if _is_sqlite(url):
        if kind != "SQLite":
            raise BackupError(f"{source} is a {kind} backup; this server's database is "
                              f"SQLite (a backup restores into a database of its own kind); "
                              f"nothing was changed")
        games = _sqlite_restore(source, _sqlite_path(url), force, shown_url(url))
    else:
        if kind != "PostgreSQL":
            raise BackupError(f"{source} is a {kind} backup; this server's database is "
                              f"PostgreSQL (a backup restores into a database of its "
                              f"own kind); nothing was changed")
        games = _pg_restore(source, make_url(url), force, pg_bindir, shown_url(url))
    return Restored(kind, games, _schema_revision(url),
                    _scripts(url).get_current_head() or "", time.monotonic() - started)


def _kind_of_file(source: Path) -> str:
    if not source.is_file():
        raise BackupError(f"there is no file {source}")
    with open(source, "rb") as f:
        start = f.read(len(SQLITE_MAGIC))
    if start.startswith(SQLITE_MAGIC):
        return "SQLite"
    if start.startswith(PG_MAGIC):
        return "PostgreSQL"
    what = "an empty file" if not start else "neither a SQLite file nor a pg_dump archive"
    raise BackupError(f"{source} is not a pbem backup: {what}; nothing was changed")


def _sqlite_restore(source: Path, target: Path, force: bool, shown: str) -> int:
    uri = f"file:{quote(str(source.resolve()))}?mode=ro"
    try:
        src = sqlite3.connect(uri, uri=True, timeout=30)
    except sqlite3.Error as exc:
        raise BackupError(f"cannot read {source}: {exc}; nothing was changed") from None
    with contextlib.closing(src):
        try:
            (check,) = src.execute("PRAGMA quick_check").fetchone()
            tables = _sqlite_tables(src)
        except sqlite3.Error as exc:
            raise BackupError(f"cannot read {source} as a database ({exc}); nothing was "
                              f"changed") from None
        if check != "ok":
            raise BackupError(f"{source} is damaged ({check}); nothing was changed")
        _require_pbem_tables(tables, str(source))
        _known_revision(_sqlite_revision(src), source)
        games, _ = _sqlite_games(src)
        created = not target.exists()
        if not created and not force:
            _refuse_if_holding_rows(_sqlite_rows(target), shown)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with contextlib.closing(sqlite3.connect(target, timeout=30)) as dst:
                src.backup(dst)  # one write transaction: the old content or the new
                dst.execute("PRAGMA journal_mode=WAL")  # as the server runs it
        except sqlite3.Error as exc:
            if created:
                target.unlink(missing_ok=True)
            raise BackupError(f"the restore failed ({exc}); the database is as it was") \
                from None
    return games


def _sqlite_rows(target: Path) -> dict[str, bool]:
    """Whether each table of the database at ``target`` has a row (no tables: {})."""
    with contextlib.closing(sqlite3.connect(f"file:{quote(str(target.resolve()))}?mode=ro",
                                            uri=True, timeout=30)) as conn:
        try:
            names = _sqlite_tables(conn)
        except sqlite3.DatabaseError as exc:
            raise BackupError(f"{target} is there but is no database ({exc}); move it "
                              f"away first") from None
        return {name: conn.execute(f'SELECT EXISTS (SELECT 1 FROM "{name}")').fetchone()[0]
                == 1 for name in names}


def _pg_restore(source: Path, url: URL, force: bool, bindir: str | None,
                shown: str) -> int:
    import psycopg
    from psycopg import sql

    try:
        conn = psycopg.connect(_conninfo(url, with_password=True), autocommit=True)
    except psycopg.OperationalError as exc:
        raise BackupError(f"cannot connect to the database {url.database}: "
                          f"{str(exc).strip()} (create it first, e.g. createdb)") from None
    with conn:
        major = _pg_major(conn)
        pg_restore = _pg_tool("pg_restore", major, bindir)
        try:
            listing = _run([pg_restore, "--list", str(source)], url, "pg_restore --list",
                           refusal=f"{source} is not a readable pg_dump archive")
        except BackupError as exc:
            raise BackupError(f"{exc}; nothing was changed") from None
        tables = set(re.findall(r"^\d+; \d+ \d+ TABLE public (\S+) ", listing, re.M))
        _require_pbem_tables(tables, str(source))
        _known_revision(_archive_revision(pg_restore, source, url), source)
        games = _archive_games(pg_restore, source, url)
        held = _pg_objects(conn)
        if not force:
            _refuse_if_holding_rows(
                {t: _one(conn, sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(
                    sql.Identifier("public", t)))[0] for t in held["TABLE"]},
                shown)
        drops = [sql.SQL("DROP {} IF EXISTS {} CASCADE;").format(
                     sql.SQL(what), sql.Identifier("public", name)).as_string(conn)
                 for what in ("VIEW", "TABLE", "SEQUENCE", "TYPE") for name in held[what]]
    with tempfile.TemporaryDirectory(prefix="pbem-restore-") as folder:
        clear, script = Path(folder) / "clear.sql", Path(folder) / "restore.sql"
        clear.write_text("\n".join(drops) + "\n")
        _run([pg_restore, "--no-owner", "--no-privileges", f"--file={script}", str(source)],
             url, "pg_restore")  # the whole script first: a cut one never runs
        # one transaction: the old content is dropped and the archive's created, or neither
        _run([_pg_tool("psql", major, bindir), "-X", "--quiet", "--no-password",
              "--single-transaction", "--set=ON_ERROR_STOP=1", f"--dbname={_conninfo(url)}",
              f"--file={clear}", f"--file={script}"], url, "psql",
             refusal="the restore failed; the database is as it was")
    return games


def _pg_objects(conn: Any) -> dict[str, list[str]]:
    """The names of what the database holds in its public schema, by kind."""
    queries = {
        "VIEW": "SELECT viewname FROM pg_views WHERE schemaname = 'public'",
        "TABLE": "SELECT tablename FROM pg_tables WHERE schemaname = 'public'",
        "SEQUENCE": "SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'",
        "TYPE": "SELECT t.typname FROM pg_type t JOIN pg_namespace n ON n.oid = "
                "t.typnamespace WHERE n.nspname = 'public' AND t.typtype IN ('e', 'd')",
    }
    return {kind: sorted(name for (name,) in conn.execute(q)) for kind, q in queries.items()}


def _archive_rows(pg_restore: str, source: Path, url: URL, table: str) -> list[str]:
    """The rows of one table of the archive, as COPY's text lines."""
    out = _run([pg_restore, "--data-only", f"--table={table}", "--file=-", str(source)],
               url, "pg_restore")
    m = re.search(rf"^COPY public\.{table} \(.*?\) FROM stdin;\n(.*?)^\\\.$", out,
                  re.M | re.S)
    return m.group(1).splitlines() if m else []


def _archive_revision(pg_restore: str, source: Path, url: URL) -> str:
    rows = _archive_rows(pg_restore, source, url, "alembic_version")
    if len(rows) != 1:
        raise BackupError(f"{source} has no schema revision; it is no pbem backup")
    return rows[0].strip()


def _archive_games(pg_restore: str, source: Path, url: URL) -> int:
    return len(_archive_rows(pg_restore, source, url, "game"))


# --------------------------------------------------------------------------- shared


def shown_url(url: str) -> str:
    """The database URL as it may be shown (without its password)."""
    return make_url(url).render_as_string(hide_password=True)


def _is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def _sqlite_path(url: str) -> Path:
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        raise BackupError(f"back up and restore need a SQLite database in a file, not "
                          f"{url}")
    return Path(database)


def _sqlite_tables(conn: sqlite3.Connection) -> set[str]:
    return {name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}


def _sqlite_games(conn: sqlite3.Connection) -> tuple[int, int]:
    games, running = conn.execute(
        "SELECT count(*), coalesce(sum(status = 'active'), 0) FROM game").fetchone()
    return int(games), int(running)


def _sqlite_revision(conn: sqlite3.Connection) -> str | None:
    rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    return rows[0][0] if len(rows) == 1 else None


def _require_pbem_tables(tables: set[str], what: str) -> None:
    missing = [t for t in MARK_TABLES if t not in tables]
    if missing:
        raise BackupError(f"{what} is not a pbem database (no table {', '.join(missing)}); "
                          f"nothing was changed")


def _refuse_if_holding_rows(rows: dict[str, bool], shown: str) -> None:
    full = sorted(t for t, has in rows.items() if has and t != "alembic_version")
    if full:
        raise BackupError(f"the database {shown} is not empty (rows in {', '.join(full)}); "
                          f"restore into an empty database, or --force to replace "
                          f"everything in it")


def _scripts(url: str) -> ScriptDirectory:
    from pbem.migrate import alembic_config

    return ScriptDirectory.from_config(alembic_config(url))


def _known_revision(revision: str | None, source: Path) -> None:
    """Refuse a backup whose revision the migrations do not know (from a newer pbem)."""
    if revision is None:
        raise BackupError(f"{source} has no schema revision; it is no pbem backup")
    try:
        found = _scripts("sqlite://").get_revision(revision)
    except CommandError:
        found = None
    if found is None:
        raise BackupError(f"{source} has schema revision {revision}, which this pbem does "
                          f"not know: it comes from a newer pbem; install that (or newer) "
                          f"to restore it. Nothing was changed")


def _schema_revision(url: str) -> str:
    """The revision the database at ``url`` says its schema is at."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return str(conn.execute(text("SELECT version_num FROM alembic_version"))
                       .scalar_one())
    finally:
        engine.dispose()


def _conninfo(url: URL, with_password: bool = False) -> str:
    """libpq's connection string for ``url`` (the password only for our own connection;
    the tools get it in their environment, never on a command line)."""
    from psycopg.conninfo import make_conninfo

    params: dict[str, str | int | None] = {k: v for k, v in url.query.items()
                                           if isinstance(v, str)}
    params |= {"host": url.host, "port": url.port, "user": url.username,
               "dbname": url.database}
    if with_password:
        params["password"] = url.password
    return make_conninfo("", **{k: v for k, v in params.items() if v is not None})


def _one(conn: Any, query: Any) -> tuple[Any, ...]:
    """The one row of a query on a psycopg connection."""
    row = conn.execute(query).fetchone()
    assert row is not None, query
    return tuple(row)


def _pg_major(conn: Any) -> int:
    return int(_one(conn, "SHOW server_version_num")[0]) // 10000


def _tool_major(path: str) -> int | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except OSError:
        return None
    m = re.search(r"\(PostgreSQL\) (\d+)", out)
    return int(m.group(1)) if m else None


def _pg_tool(name: str, major: int, bindir: str | None) -> str:
    """``name`` (pg_dump, pg_restore, psql) of the server's major version or newer: from
    ``bindir`` (PBEM_PG_BINDIR) if given, else Debian's folder of that version, else the
    newest of the others, else the PATH's."""
    if bindir:
        candidates = [os.path.join(bindir, name)]
    else:
        folders = sorted(glob(PG_BIN_GLOB), key=_version_of_folder, reverse=True)
        exact = [f for f in folders if _version_of_folder(f) == major]
        candidates = [os.path.join(f, name) for f in exact + folders]
        candidates += [found] if (found := shutil.which(name)) else []
    for path in candidates:
        if os.access(path, os.X_OK) and (_tool_major(path) or 0) >= major:
            return path
    raise BackupError(f"no {name} of PostgreSQL {major} or newer found (install the "
                      f"postgresql-client-{major} package, or set PBEM_PG_BINDIR to the "
                      f"folder that holds it)")


def _version_of_folder(folder: str) -> int:
    m = re.search(r"/(\d+)/bin$", folder)
    return int(m.group(1)) if m else 0


def _run(cmd: list[str], url: URL, what: str, refusal: str | None = None) -> str:
    """Run a PostgreSQL tool with the URL's password in its environment; its output, or
    a BackupError with its complaint."""
    env = {**os.environ, "PGCONNECT_TIMEOUT": "30"}
    if url.password:
        env["PGPASSWORD"] = url.password
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise BackupError(f"{refusal or what + ' failed'}: " + " / ".join(said))
    return done.stdout
