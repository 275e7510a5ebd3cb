"""Health that means something: ``/healthz`` asks the database, ``/healthz?deep=1`` reads
the heartbeats of the clock and inbound and the outbox, ``/metrics`` counts from the
database (pbem/health.py, pbem/metrics.py, pbem/web/health.py)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
import requests
from freezegun import freeze_time
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, text, update
from sqlmodel import select

from pbem import bots, clock, create_app, health, mail, services
from pbem.db import get_engine, session_scope
from pbem.kinds import MoveSource, OutboxStatus, Process
from pbem.models import Heartbeat, InboundMessage, Move, Outbox
from tests.pgcluster import free_port
from tests.server.conftest import app_config, new_table
from tests.server.helpers import MAIL_FROM, PLAYERS, SECRET, Inbox, holding_game, snapshot
from tests.server.replying import Inbound
from tests.server.timekit import T0


def deep(client) -> tuple[int, dict]:
    resp = client.get("/healthz?deep=1")
    assert resp.headers["Cache-Control"] == "no-store"
    return resp.status_code, resp.get_json()


def heartbeats(app, kind: Process | None = None) -> list[Heartbeat]:
    with app.app_context(), session_scope() as s:
        return [r for r in s.exec(select(Heartbeat)) if kind is None or r.kind == kind]


def scrape(client, **headers) -> dict[tuple[str, tuple], float]:
    """Every sample of /metrics, parsed as Prometheus parses it: (name, labels) -> value."""
    resp = client.get("/metrics", headers=headers)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert resp.content_type.startswith("text/plain; version=0.0.4")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(resp.get_data(as_text=True))
            for s in family.samples}


def count(app, model, *where) -> int:
    with app.app_context(), session_scope() as s:
        return s.exec(select(func.count()).select_from(model).where(*where)).one()


# --------------------------------------------------------------------------- /healthz


def test_healthz_answers_ok_when_the_database_answers(client):
    resp = client.get("/healthz")
    assert (resp.status_code, resp.get_json()) == (200, {"ok": True})


def test_healthz_answers_while_a_writer_holds_the_database(app, client, table):
    """A reader's query: no write lock to wait for (on SQLite a plain connection would
    take it, and wait behind the writer until its busy timeout)."""
    with holding_game(app, table.game_id):
        resp = client.get("/healthz")
        assert (resp.status_code, resp.get_json()) == (200, {"ok": True})
        assert client.get("/healthz?deep=1").status_code in (200, 503)


@pytest.fixture
def app_without_database(tmp_path):
    """An app whose database is a PostgreSQL port where nothing listens."""
    url = f"postgresql+psycopg://pbem@127.0.0.1:{free_port()}/pbem"
    app = create_app(app_config(url, tmp_path, METRICS=True))
    yield app
    get_engine(app).dispose()


@pytest.mark.parametrize("path", ["/healthz", "/healthz?deep=1"])
def test_healthz_answers_503_with_a_reason_not_500_when_the_database_is_away(
        app_without_database, path):
    resp = app_without_database.test_client().get(path)
    assert resp.status_code == 503
    assert resp.get_json() == {"ok": False, "database": "unreachable"}


def test_healthz_gives_up_on_a_database_that_never_answers(tmp_path):
    """A PostgreSQL address that takes the connection and never says a word (a host
    that drops packets looks the same to the client): 503 after the connect timeout,
    not a request held for the TCP timeout."""
    silent = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        silent.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                held.append(silent.accept()[0])  # and never answers

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    url = f"postgresql+psycopg://pbem@127.0.0.1:{silent.getsockname()[1]}/pbem"
    app = create_app(app_config(url, tmp_path, DATABASE_CONNECT_TIMEOUT=2))
    answers: list = []
    asking = threading.Thread(target=lambda: answers.append(
        app.test_client().get("/healthz")), daemon=True)
    try:
        asking.start()
        asking.join(60)  # without a connect timeout: held for good (the socket is open)
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        silent.close()
        get_engine(app).dispose()
    assert held, "the client never connected"
    assert answers, "/healthz still waits for a database that never answers"
    assert answers[0].status_code == 503
    assert answers[0].get_json() == {"ok": False, "database": "unreachable"}


def test_metrics_answer_503_not_500_when_the_database_is_away(app_without_database):
    resp = app_without_database.test_client().get("/metrics")
    assert resp.status_code == 503
    assert "database" in resp.get_data(as_text=True)


def test_health_and_metrics_write_nothing(make_app, table):
    app = make_app(METRICS=True)
    clock.sweep(app)
    before = snapshot(app)
    client = app.test_client()
    for path in ("/healthz", "/healthz?deep=1", "/metrics"):
        assert client.get(path).status_code in (200, 503)
    assert snapshot(app) == before


# --------------------------------------------------------------------------- the clock


def test_deep_health_says_the_clock_is_silent_when_no_clock_ever_swept(client):
    status, body = deep(client)
    assert status == 503
    assert body["problems"] == ["clock/silent"]
    assert body["clock_last_sweep_age"] is None and body["clock_processes"] == 0
    assert body["database"] == "ok"


def test_deep_health_is_ok_after_a_sweep_and_503_once_the_clock_is_silent(app, client,
                                                                          frozen):
    clock.sweep(app)
    status, body = deep(client)
    assert status == 200, body
    assert body["ok"] is True and body["problems"] == []
    assert body["clock_last_sweep_age"] == 0 and body["clock_processes"] == 1
    assert body["clock_sweep_seconds"] is not None
    frozen.move_to(T0 + timedelta(seconds=299))
    assert deep(client)[0] == 200
    frozen.move_to(T0 + timedelta(seconds=301))
    status, body = deep(client)
    assert status == 503
    assert body["problems"] == ["clock/silent"]
    assert body["clock_last_sweep_age"] == 301 and body["clock_processes"] == 0


def test_the_silence_limit_is_the_hosts_setting(make_app, frozen):
    app = make_app(CLOCK_SILENT_SECONDS=30)
    clock.sweep(app)
    frozen.move_to(T0 + timedelta(seconds=31))
    assert deep(app.test_client())[1]["problems"] == ["clock/silent"]


@contextlib.contextmanager
def another_clock_sweeping(app):
    """Another clock's hold on the sweep lock (the file lock, or the advisory lock)."""
    done, held = threading.Event(), threading.Event()

    def hold():
        with clock.sweep_guard(app) as mine:
            assert mine
            held.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(10)
    try:
        yield
    finally:
        done.set()
        thread.join()


def test_a_clock_kept_from_sweeping_beats_but_still_counts_as_silent(app, client):
    """A clock that finds another sweeping is alive, but the sweeps are what matter: if
    the other one hangs in its sweep, nothing is swept."""
    with another_clock_sweeping(app):
        assert clock.sweep(app)["busy"] == 1
    (row,) = heartbeats(app)
    assert row.kind == Process.CLOCK and row.swept_at is None and row.sweeps == 0
    status, body = deep(client)
    assert status == 503 and body["problems"] == ["clock/silent"]
    assert body["clock_last_beat_age"] is not None and body["clock_processes"] == 1


def test_each_clock_process_has_one_heartbeat_written_over(app):
    for _ in range(3):
        clock.sweep(app)
    (row,) = heartbeats(app)
    assert row.process == health.process_key(Process.CLOCK) and row.sweeps == 3


def test_the_freshest_of_several_clocks_counts(app, client, frozen):
    clock.sweep(app)
    with app.app_context(), session_scope() as s:  # a second clock, on another machine
        s.add(Heartbeat(process="clock:other:1", kind=Process.CLOCK,
                        started_at=T0 - timedelta(hours=2), beat_at=T0 - timedelta(hours=1),
                        swept_at=T0 - timedelta(hours=1), sweep_seconds=9.0, sweeps=5))
    status, body = deep(client)
    assert status == 200
    assert body["clock_last_sweep_age"] == 0 and body["clock_processes"] == 1
    assert body["clock_sweep_seconds"] != 9.0


def test_a_starting_process_deletes_heartbeats_gone_for_a_day(app, frozen):
    with app.app_context(), session_scope() as s:
        s.add(Heartbeat(process="clock:old:1", kind=Process.CLOCK,
                        started_at=T0 - timedelta(days=3), beat_at=T0 - timedelta(days=2)))
        s.add(Heartbeat(process="clock:recent:1", kind=Process.CLOCK,
                        started_at=T0 - timedelta(days=3), beat_at=T0 - timedelta(hours=2)))
    with app.app_context():
        health.beat(Process.CLOCK, start=True)
    assert sorted(r.process for r in heartbeats(app)) == sorted(
        ["clock:recent:1", health.process_key(Process.CLOCK)])


# --------------------------------------------------------------------------- the outbox


def queue_game(app) -> None:
    """A started game whose first emails are queued, not sent."""
    with app.app_context():
        services.create_game("cavemen", list(PLAYERS), {"hours_per_decision": 48}, seed=7,
                             confirm_by_email=False, start=True)


def test_deep_health_says_the_outbox_is_stuck_when_due_mail_waits(app, client, frozen):
    queue_game(app)
    clock.sweep(app)
    status, body = deep(client)
    assert status == 200, body
    assert (body["outbox_backlog"], body["outbox_due"]) == (3, 3)
    frozen.move_to(T0 + timedelta(seconds=601))
    clock.sweep(app)  # the sweeps go on, the mail does not
    status, body = deep(client)
    assert status == 503
    assert body["problems"] == ["outbox/stuck"]
    assert body["outbox_oldest_due_age"] == 601 and body["outbox_oldest_pending_age"] == 601
    with app.app_context():
        assert mail.deliver_due()["sent"] == 3
    status, body = deep(client)
    assert status == 200 and body["outbox_backlog"] == 0
    assert body["outbox_oldest_due_age"] is None


def test_mail_held_for_later_is_not_stuck(app, client, frozen):
    """Quiet hours, a take-back's grace, a retry's backoff: not due until then."""
    queue_game(app)
    with app.app_context(), session_scope() as s:
        s.execute(update(Outbox).values(next_attempt_at=T0 + timedelta(hours=8)))
    frozen.move_to(T0 + timedelta(hours=2))
    clock.sweep(app)
    status, body = deep(client)
    assert status == 200, body
    assert (body["outbox_backlog"], body["outbox_due"]) == (3, 0)
    assert body["outbox_oldest_pending_age"] == 7200 and body["outbox_oldest_due_age"] is None


def test_deep_health_counts_the_failed_deliveries_of_the_last_hour(make_app, frozen):
    app = make_app(MAIL_BACKEND="smtp", SMTP_HOST="127.0.0.1", SMTP_PORT=free_port(),
                   SMTP_TIMEOUT=2)
    client = app.test_client()
    queue_game(app)
    with app.app_context():
        assert mail.deliver_due() == {"sent": 0, "failed": 1, "skipped": 0}
    clock.sweep(app)
    status, body = deep(client)
    assert status == 200, body  # retried later: not stuck, but counted
    assert (body["failed_last_hour"], body["outbox_retrying"]) == (1, 1)
    frozen.move_to(T0 + timedelta(minutes=61))
    clock.sweep(app)
    assert deep(client)[1]["failed_last_hour"] == 0


# --------------------------------------------------------------------------- inbound


def test_inbound_beats_per_message_and_is_silent_when_it_stops_beating(app, client,
                                                                        table):
    clock.sweep(app)
    status, body = deep(client)
    assert (body["inbound_processes"], body["inbound_last_message_age"]) == (0, None)
    assert body["replies_on"] is True and status == 200
    receiver = Inbound(app)
    try:
        with app.app_context():
            health.beat(Process.INBOUND, start=True)  # what `pbem inbound` does first
        receiver.reply(table.mail(table.open()), "hello, is anyone there?")
    finally:
        receiver.stop()
    (row,) = [r for r in heartbeats(app) if r.kind == Process.INBOUND]
    assert row.messages == 1 and row.message_at is not None
    status, body = deep(client)
    assert status == 200 and body["inbound_processes"] == 1
    assert body["inbound_last_message_age"] < 60
    later = datetime.now(UTC) + timedelta(seconds=301)
    with freeze_time(later):
        clock.sweep(app)
        status, body = deep(client)
    assert status == 503 and body["problems"] == ["inbound/silent"]
    with app.app_context():
        health.forget(Process.INBOUND)  # stopped on purpose: nothing to miss
    with freeze_time(later):
        status, body = deep(client)
    assert status == 200 and body["inbound_processes"] == 0


# --------------------------------------------------------------------------- /metrics


def test_metrics_are_off_unless_the_host_turns_them_on(client):
    assert client.get("/metrics").status_code == 404


def test_metrics_with_a_token_answer_only_that_bearer(make_app):
    client = make_app(METRICS=True, METRICS_TOKEN="s3cret-token").test_client()
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert scrape(client, Authorization="Bearer s3cret-token")


def test_metrics_match_the_database_after_a_move_and_sent_emails(make_app, table):
    app = make_app(METRICS=True)
    client = app.test_client()
    clock.sweep(app)
    before = scrape(client)
    table.step()  # a player's move on the game page
    with app.app_context():
        sent_now = mail.deliver_due()["sent"]
    assert sent_now >= 1
    after = scrape(client)
    players = count(app, Move, Move.source == MoveSource.PLAYER)
    assert players == 1
    assert after[("pbem_moves_total", (("source", "player"),))] == players
    assert before[("pbem_moves_total", (("source", "player"),))] == 0
    sent = count(app, Outbox, Outbox.status == OutboxStatus.SENT)
    assert after[("pbem_emails", (("status", "sent"),))] == sent == 3 + sent_now
    assert after[("pbem_emails", (("status", "pending"),))] == count(
        app, Outbox, Outbox.status == OutboxStatus.PENDING)
    assert after[("pbem_games", (("status", "active"),))] == 1
    assert after[("pbem_clock_processes", ())] == 1
    assert after[("pbem_clock_last_sweep_age_seconds", ())] >= 0
    assert after[("pbem_health_problem", (("problem", "clock/silent"),))] == 0
    assert after[("pbem_emails_bounced", ())] == 0


def test_metrics_count_reply_outcomes_and_bounces(make_app, table):
    app = make_app(METRICS=True)
    receiver = Inbound(app)
    try:
        receiver.reply(table.mail(table.open()), "hello, is anyone there?")
    finally:
        receiver.stop()
    with app.app_context(), session_scope() as s:
        (outcome,) = s.exec(select(InboundMessage.outcome)).all()
        s.execute(text("UPDATE outbox SET status = 'undeliverable', "
                       "last_error = 'bounced: 5.1.1 no such user' WHERE id = "
                       "(SELECT MIN(id) FROM outbox)"))
    samples = scrape(app.test_client())
    assert samples[("pbem_replies", (("outcome", str(outcome)),))] == 1
    assert sum(v for (name, _), v in samples.items() if name == "pbem_replies") == 1
    assert samples[("pbem_emails_bounced", ())] == 1


def test_metrics_time_the_post_that_confirms_a_move(make_app):
    app = make_app(METRICS=True)
    client = app.test_client()
    table = new_table(app, client, Inbox(app))
    table.step()  # a player's move on the game page
    samples = scrape(client)
    assert samples[("pbem_confirm_seconds_count", (("via", "page"),))] == 1
    assert 0 < samples[("pbem_confirm_seconds_sum", (("via", "page"),))] < 30
    assert ("pbem_confirm_seconds_count", (("via", "link"),)) not in samples


def up(base: str, server: subprocess.Popen, errors) -> None:
    """Wait until both workers answer (each loads the app first: seconds on a busy
    machine, while the connection waits in the listen queue)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            assert requests.get(base + "/healthz", timeout=60).status_code == 200
            return
        except requests.ConnectionError:
            assert time.monotonic() < deadline and server.poll() is None, errors.read_text()
            time.sleep(0.1)


def test_the_confirm_times_of_every_gunicorn_worker_add_up(db_url, tmp_path):
    """prometheus-client's multiprocess mode: whichever worker answers the scrape, it
    counts the confirms that every worker timed."""
    port, shared = free_port(), tmp_path / "prometheus"
    shared.mkdir()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    env.update(PBEM_DATABASE_URL=db_url, PBEM_SECRET_KEY=SECRET, PBEM_BASE_URL=base,
               PBEM_MAIL_BACKEND="memory", PBEM_MAIL_FROM=MAIL_FROM, PBEM_METRICS="1",
               PROMETHEUS_MULTIPROC_DIR=str(shared))
    errors = tmp_path / "errors.log"
    with open(errors, "wb") as err:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", "2", "--bind",
             f"127.0.0.1:{port}", "--config", "python:pbem.gunicorn_conf",
             "--access-logfile", "/dev/null", "pbem:create_app()"],
            env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err)
    try:
        up(base, server, errors)

        def confirm(n: int) -> int:  # a confirming POST, of a link that is no more
            return requests.post(f"{base}/a/{'x' * 43}{n}", data={"sig": "x"},
                                 timeout=30).status_code

        with ThreadPoolExecutor(4) as pool:
            assert set(pool.map(confirm, range(40))) == {404}
        for _ in range(6):  # each scrape answered by one worker or the other
            resp = requests.get(base + "/metrics", timeout=30)
            counts = [s.value for f in text_string_to_metric_families(resp.text)
                      for s in f.samples if s.name == "pbem_confirm_seconds_count"]
            assert counts == [40]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_sweep_deletes_heartbeats_silent_for_a_day(app, frozen):
    with app.app_context(), session_scope() as s:
        s.add(Heartbeat(process="inbound:dead:1", kind=Process.INBOUND,
                        started_at=T0 - timedelta(days=3),
                        beat_at=T0 - timedelta(days=1, seconds=1)))
    clock.sweep(app)
    assert [r.process for r in heartbeats(app)] == [health.process_key(Process.CLOCK)]


def inbound_process(db_url: str, tmp_path) -> subprocess.Popen:
    """``flask --app pbem pbem inbound`` on a free port, once its heartbeat is written."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    env.update(PBEM_DATABASE_URL=db_url, PBEM_SECRET_KEY=SECRET, PBEM_MAIL_BACKEND="memory",
               PBEM_MAIL_FROM=MAIL_FROM, PBEM_INBOUND_PORT=str(free_port()))
    return subprocess.Popen([sys.executable, "-m", "flask", "--app", "pbem", "pbem",
                             "inbound"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def wait_for_beat(app, process: subprocess.Popen) -> Heartbeat:
    deadline = time.monotonic() + 60
    while not (rows := heartbeats(app, Process.INBOUND)):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    (row,) = rows
    assert row.process.endswith(f":{process.pid}")
    return row


def test_inbound_stopped_by_sigterm_takes_its_heartbeat_with_it(app, db_url, tmp_path):
    process = inbound_process(db_url, tmp_path)
    try:
        wait_for_beat(app, process)
        process.terminate()
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()
    assert heartbeats(app, Process.INBOUND) == []


def test_inbound_that_is_killed_leaves_its_heartbeat_to_go_stale(app, db_url, tmp_path):
    process = inbound_process(db_url, tmp_path)
    try:
        wait_for_beat(app, process)
    finally:
        process.kill()
        process.wait(timeout=30)
    (row,) = heartbeats(app, Process.INBOUND)
    assert row.beat_at is not None


def test_metrics_speak_openmetrics_to_a_scraper_that_asks(make_app):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse

    client = make_app(METRICS=True).test_client()
    resp = client.get("/metrics", headers={
        "Accept": "application/openmetrics-text; version=1.0.0; charset=utf-8"})
    assert resp.status_code == 200
    assert resp.content_type.startswith("application/openmetrics-text")
    names = {f.name for f in parse(resp.get_data(as_text=True))}
    assert {"pbem_moves", "pbem_emails", "pbem_clock_last_sweep_age_seconds"} <= names


# --------------------------------------------------------------------------- bot workers

def test_deep_health_says_the_bots_are_behind_when_a_bots_move_waits_for_a_worker(
        make_app, frozen):
    """A bot's move due and claimed by nobody for BOTS_BEHIND_SECONDS (no worker runs,
    the clock leaves bots to workers): 503 ``bots/behind``, the metrics say so too;
    once a worker has played it, healthy again."""
    app = make_app(METRICS=True, BOT_WORKERS=1, BOT_PAUSE_SECONDS=0)
    client = app.test_client()
    bot = services.PlayerIn("", "", "en", "UTC", bot="easy")
    with app.app_context():
        services.create_game("cavemen", [PLAYERS[0], bot, bot], None, seed=7,
                             confirm_by_email=False, start=True)
        mail.deliver_due()
        health.beat(Process.BOTS)
    clock.sweep(app)  # plays no bot: workers run elsewhere (BOT_WORKERS)
    status, body = deep(client)
    assert status == 200, body
    assert (body["bot_workers"], body["bots_due"]) == (1, 1)
    frozen.move_to(T0 + timedelta(seconds=121))
    clock.sweep(app)
    status, body = deep(client)
    assert status == 503 and body["problems"] == ["bots/behind"], body
    assert body["bots_oldest_due_age"] == 121 and body["bot_workers"] == 0
    sample = scrape(client)
    assert sample[("pbem_health_problem", (("problem", "bots/behind"),))] == 1
    assert sample[("pbem_bots_due", ())] == 1
    assert sample[("pbem_bots_oldest_due_age_seconds", ())] == 121
    with app.app_context():
        assert bots.work_once() is not None  # a worker plays it
        health.beat(Process.BOTS)
    status, body = deep(client)
    assert status == 200 and body["bots_due"] == 0 and body["bot_workers"] == 1, body
    assert scrape(client)[("pbem_health_problem", (("problem", "bots/behind"),))] == 0
