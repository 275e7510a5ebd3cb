"""Statements per confirm: what one confirm (``GET /a/<token>`` and its ``POST``) asks of
the database, on SQLite or PostgreSQL, and its CPU time in this process.

Prepares open games as bench/confirm_throughput.py does (``Games``: each token is the
heuristic bot's choice at the first decision of a fresh Cavemen game), then confirms each
through the Flask test client in this process (no sockets, no gunicorn), one after
another. Counted per confirm, apart for the GET and the POST, from SQLAlchemy's events
on the app's engine (the readers' engines share its events):

* ``stmts``: statements sent through a cursor (``before_cursor_execute``; on SQLite that
  includes pbem's own ``BEGIN``/``BEGIN IMMEDIATE`` and ``PRAGMA``s), by their first
  word, and in full with ``--list``;
* ``commit`` / ``rollback``: the DBAPI connection's commits and rollbacks, a pool's
  reset-on-return among them (``reset`` counts those apart);
* ``checkout``: connections taken from a pool;
* on PostgreSQL, ``server``: the statements the server logged for the app's database
  (``log_statement = 'all'`` on that database; psycopg's implicit ``BEGIN`` included),
  read from the cluster's log: the round trips, near enough (a pipeline would send
  several in one).

CPU: this thread's CPU time (``thread_time``) per GET and per POST, medians; on
PostgreSQL the backends' CPU is not in it (the cluster's processes' CPU per confirm is
printed apart, from /proc). ``--profile`` runs the confirms under cProfile and prints the
top entries.

Run it against another checkout's code with that checkout first on ``PYTHONPATH`` and as
the working folder (the script imports ``pbem`` from ``sys.path``):

    .venv/bin/python bench/confirm_statements.py [--db sqlite|postgresql] [--confirms 200]
        [--list] [--profile]
    (cd ../wt-before && PYTHONPATH=. ../wt-after/.venv/bin/python \
        ../wt-after/bench/confirm_statements.py --db postgresql)

Figures (issue 35 point 6; 300 confirms, 3 alternating rounds at load 5-10 on 2 shared
cores, medians; before = ef474a4): statements GET + POST, SQLite 2 + 16 -> 1 + 13,
PostgreSQL 1 + 15 -> 1 + 13 (round trips with the POST's BEGIN and COMMIT: 17 -> 15).
CPU in this process, ms, GET / POST: SQLite 1.11-1.24 / 2.99-3.47 -> 0.90-1.11 /
2.42-2.95; PostgreSQL 1.33-1.54 / 4.24-4.86 -> 1.30-1.44 / 3.81-4.23, and the cluster
1.53-1.67 -> 1.43-1.57 per confirm. The server's own time by statement
(``--pg-stat``): 0.74-0.86 ms a confirm, the writes (INSERT move, outbox, eventlog,
decision, token; UPDATE game, decision) about two thirds of it.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import os
import pstats
import re
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIG_RE = re.compile(r'name="sig" value="([0-9a-f]+)"')


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its descendants (from /proc)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    pids = [pid]
    while pids:
        p = pids.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in Path(f"/proc/{p}/task").iterdir():
                kids = (task / "children").read_text().split()
                pids += [int(k) for k in kids]
        except (OSError, IndexError):
            continue
    return total


class Counter:
    """Statement, commit, rollback and checkout counts from the engine's events."""

    def __init__(self, engine) -> None:
        from sqlalchemy import event

        self.counts: collections.Counter[str] = collections.Counter()
        self.listing: list[str] = []
        self.on = False

        @event.listens_for(engine, "before_cursor_execute")
        def _stmt(_conn, _cursor, statement, _params, _context, _many) -> None:
            if self.on:
                self.counts["stmts"] += 1
                self.counts["  " + statement.split(None, 1)[0].upper()] += 1
                self.listing.append(" ".join(statement.split())[:150])

        pools = [engine.pool]
        from pbem.db import _reader  # the readers' pools (SQLite: a pool of their own)

        reader = _reader(engine)
        if reader.pool is not engine.pool:
            pools.append(reader.pool)
        for pool in pools:
            event.listen(pool, "checkout", self._checkout)
            event.listen(pool, "reset", self._reset)
        self.engine = engine
        self._wrap_dbapi()

    def _checkout(self, *_args) -> None:
        if self.on:
            self.counts["checkout"] += 1

    def _reset(self, *_args) -> None:
        if self.on:
            self.counts["reset"] += 1

    def _wrap_dbapi(self) -> None:
        """Count the DBAPI commits and rollbacks (the dialect's do_commit/do_rollback:
        every one the pool or a connection makes)."""
        dialect = self.engine.dialect
        commit, rollback = dialect.do_commit, dialect.do_rollback

        def do_commit(dbapi_conn) -> None:
            if self.on:
                self.counts["commit"] += 1
                self.listing.append("<commit>")
            commit(dbapi_conn)

        def do_rollback(dbapi_conn) -> None:
            if self.on:
                self.counts["rollback"] += 1
                self.listing.append("<rollback>")
            rollback(dbapi_conn)

        dialect.do_commit, dialect.do_rollback = do_commit, do_rollback

    def take(self) -> tuple[collections.Counter[str], list[str]]:
        counts, listing = self.counts, self.listing
        self.counts, self.listing = collections.Counter(), []
        return counts, listing


def server_lines(log: Path, start: int, db: str) -> tuple[int, list[str], int]:
    """Statements the cluster logged for database ``db`` after byte ``start`` of its log:
    (count, the statements, the log's new end)."""
    with open(log, "rb") as f:
        f.seek(start)
        data = f.read()
    out = []
    for line in data.decode(errors="replace").splitlines():
        if f"db={db} " not in line:
            continue
        found = re.search(r"(?:statement|execute [^:]*): (.*)", line)
        if found:
            out.append(found.group(1)[:150])
    return len(out), out, start + len(data)


def _with_pg_stat(base):
    """``base`` (tests/pgcluster.PostgresCluster) with pg_stat_statements loaded."""

    class Cluster(base):
        def _run(self, *cmd: str) -> None:
            super()._run(*cmd)
            if cmd[0].endswith("/initdb"):
                with open(self.data / "postgresql.auto.conf", "a") as conf:
                    conf.write("shared_preload_libraries = 'pg_stat_statements'\n"
                               "pg_stat_statements.track_planning = on\n")

    return Cluster


def _pg_stat(cluster, dbname: str) -> list[tuple[int, float, float, str]]:
    import psycopg

    with psycopg.connect(cluster.dsn(dbname), autocommit=True) as conn:
        return conn.execute(
            "SELECT calls, total_exec_time, total_plan_time, query FROM pg_stat_statements "
            "JOIN pg_database d ON d.oid = dbid WHERE d.datname = current_database() "
            "ORDER BY total_exec_time + total_plan_time DESC LIMIT 30").fetchall()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--confirms", type=int, default=200)
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--server-log", action="store_true",
                        help="PostgreSQL: count the statements the server logged (sleeps "
                             "between requests to read the log: the CPU figures then run "
                             "on cold caches and come out higher)")
    parser.add_argument("--pg-stat", action="store_true",
                        help="PostgreSQL: load pg_stat_statements and print the server's "
                             "time per statement (execution and planning) per confirm")
    parser.add_argument("--list", action="store_true",
                        help="print the statements of the last confirm")
    parser.add_argument("--profile", nargs="?", const="GET,POST", default="",
                        help="profile (CPU time) the GETs, the POSTs or both (GET,POST)")
    args = parser.parse_args()
    sys.path.insert(1, str(HERE))
    from confirm_throughput import Games  # noqa: E402  (this bench folder)

    import pbem
    from pbem.db import get_engine
    from pbem.migrate import upgrade

    print(f"pbem from {Path(pbem.__file__).resolve().parent.parent}")
    cluster = None
    with tempfile.TemporaryDirectory(prefix="pbem-stmts-") as tmp:
        try:
            if args.db == "sqlite":
                url, dbname = f"sqlite:///{Path(tmp) / 'pbem.sqlite3'}", ""
            else:
                sys.path.insert(1, str(HERE.parent / "tests"))
                import psycopg
                from pgcluster import PostgresCluster

                cluster = (_with_pg_stat(PostgresCluster) if args.pg_stat
                           else PostgresCluster)()
                cluster.start()
                dbname = cluster.create_database()
                url = cluster.url(dbname)
            upgrade(url)
            games = Games(url, "bench-secret", args.players)
            raws = games.tokens(args.confirms + 20)
            app = games.app
            if cluster is not None and args.server_log:
                with psycopg.connect(cluster.dsn("postgres"), autocommit=True) as conn:
                    conn.execute(
                        f"ALTER DATABASE {dbname} SET log_statement = 'all'")
                    conn.execute("ALTER SYSTEM SET log_line_prefix = 'db=%d '")
                    conn.execute("SELECT pg_reload_conf()")
                get_engine(app).dispose()  # new connections take the setting
            if cluster is not None and args.pg_stat:
                with psycopg.connect(cluster.dsn(dbname), autocommit=True) as conn:
                    conn.execute("CREATE EXTENSION pg_stat_statements")
                    conn.execute("SELECT pg_stat_statements_reset()")
            counter = Counter(get_engine(app))
            client = app.test_client()
            per = {"GET": collections.defaultdict(list), "POST": collections.defaultdict(list)}
            listing: dict[str, list[str]] = {}
            server_listing: dict[str, list[str]] = {}
            cpu: dict[str, list[float]] = {"GET": [], "POST": []}
            sys_cpu: dict[str, list[float]] = {"GET": [], "POST": []}
            pg_cpu0 = tree_cpu(cluster.proc.pid) if cluster else 0.0
            logged = cluster is not None and args.server_log
            log_at = cluster.log.stat().st_size if logged else 0
            prof = cProfile.Profile(time.thread_time) if args.profile else None  # CPU, not wall
            done = 0
            for i, raw in enumerate(raws):
                warm = i < 20
                for method in ("GET", "POST"):
                    counter.on = True
                    if logged:
                        time.sleep(0.002)  # the log written so far
                        _n, _l, log_at = server_lines(cluster.log, log_at, dbname)
                    r0 = resource.getrusage(resource.RUSAGE_THREAD)
                    c0 = time.thread_time()
                    if prof is not None and not warm and method in args.profile:
                        prof.enable()
                    if method == "GET":
                        page = client.get(f"/a/{raw}")
                        sig = SIG_RE.search(page.get_data(as_text=True))
                        if page.status_code != 200 or sig is None:
                            raise RuntimeError(f"GET answered {page.status_code}")
                    else:
                        resp = client.post(f"/a/{raw}", data={"sig": sig.group(1)})
                        if resp.status_code != 303:
                            raise RuntimeError(f"POST answered {resp.status_code}: "
                                               f"{resp.get_data(as_text=True)[:300]}")
                    if prof is not None and not warm and method in args.profile:
                        prof.disable()
                    used = time.thread_time() - c0
                    r1 = resource.getrusage(resource.RUSAGE_THREAD)
                    if not warm:
                        sys_cpu[method].append(r1.ru_stime - r0.ru_stime)
                    counter.on = False
                    counts, listing[method] = counter.take()
                    if logged:
                        time.sleep(0.05)  # the server's log flushed
                        n, server_listing[method], log_at = server_lines(
                            cluster.log, log_at, dbname)
                        counts["server"] = n
                    if warm:
                        continue
                    cpu[method].append(used)
                    for key in set(counts) | set(per[method]):
                        per[method][key].append(counts.get(key, 0))
                done += 0 if warm else 1
            pg_cpu = (tree_cpu(cluster.proc.pid) - pg_cpu0) if cluster else 0.0
            if cluster is not None and args.pg_stat:
                stat_rows = _pg_stat(cluster, dbname)
        finally:
            if cluster is not None:
                cluster.stop()

    print(f"{args.db}: {done} confirms (after 20 untimed), {args.players}-player Cavemen, "
          f"first decision of fresh games, Flask test client in one process")
    for method in ("GET", "POST"):
        print(f"\n{method}: CPU median {statistics.median(cpu[method]) * 1000:.2f} ms "
              f"(p90 {sorted(cpu[method])[int(0.9 * len(cpu[method]))] * 1000:.2f}), "
              f"of it system time {statistics.median(sys_cpu[method]) * 1000:.2f} ms")
        for key in sorted(per[method], key=lambda k: (k.startswith(" "), k)):
            values = per[method][key]
            print(f"  {key:12s} median {statistics.median(values):5.1f}  "
                  f"min {min(values):3d}  max {max(values):3d}")
    if cluster is not None:
        print(f"\nthe cluster's processes: {pg_cpu / done * 1000:.2f} ms CPU per confirm "
              "(GET and POST, with the log's writing)")
    if cluster is not None and args.pg_stat:
        print("\nthe server's time per confirm by statement (pg_stat_statements, since the "
              "first confirm, warm-up included: ms per confirm, calls per confirm):")
        n = done + 20
        total = 0.0
        for calls, exec_ms, plan_ms, query in stat_rows:
            total += exec_ms + plan_ms
            print(f"  {(exec_ms + plan_ms) / n:6.3f} ms (plan {plan_ms / n:.3f})  "
                  f"{calls / n:4.1f}  {' '.join(query.split())[:110]}")
        print(f"  {total / n:6.3f} ms in all")
    if args.list:
        for method in ("GET", "POST"):
            print(f"\n{method}, the last confirm's statements (SQLAlchemy's view):")
            for line in listing[method]:
                print("  ", line)
            if logged:
                print(f"{method}, as the server logged them:")
                for line in server_listing[method]:
                    print("  ", line)
    if prof is not None:
        stats = pstats.Stats(prof).strip_dirs()
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(50)


if __name__ == "__main__":
    main()
