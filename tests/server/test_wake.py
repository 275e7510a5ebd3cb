"""Wake on work: a process that commits mail wakes the clock's mail loop in another
process at once (SQLite: a datagram to the loop's socket in the database's wake folder,
``pbem.wake``; PostgreSQL: NOTIFY), the poll being only the fallback."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import select

from pbem import services, wake
from pbem.channels import delivery
from pbem.channels.delivery import notice_loop
from pbem.db import get_engine, is_postgres, session_scope
from pbem.models import Outbox, utcnow
from pbem.services.plumbing import wake_deliverer
from tests.server.conftest import PLAYERS, SECRET

ROOT = Path(__file__).resolve().parents[2]


def wait_for(check, timeout: float, step: float = 0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(step)
    return check()


def listeners(url: str, topic: str) -> list[str]:
    folder = wake.folder_for(url)
    if folder is None or not folder.is_dir():
        return []
    return sorted(p.name for p in folder.glob(f"{topic}.*")
                  if p.suffix in (".sock", ".abstract"))


# --------------------------------------------------------------------------- the socket


def test_a_ring_nobody_hears_is_no_error_and_a_dead_listeners_socket_is_cleared(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.sqlite3'}"
    assert wake.ring(url, wake.MAIL) == 0  # no folder yet
    listener = wake.Listener(url, wake.MAIL)
    assert listener.listening
    stale = listener.path
    assert stale is not None
    listener.sock.close()  # dies without closing: its socket file stays
    listener.sock = None
    assert stale.exists()
    assert wake.ring(url, wake.MAIL) == 0
    assert not stale.exists()


def test_every_listener_of_a_topic_is_rung_and_no_other_topic(tmp_path):
    """Two mail loops (two clocks by mistake) are both woken; the notice loop is not."""
    url = f"sqlite:///{tmp_path / 'a.sqlite3'}"
    with wake.Listener(url, wake.MAIL) as one, wake.Listener(url, wake.MAIL) as two, \
            wake.Listener(url, wake.NOTICES) as notices:
        assert not one.wait(0) and not two.wait(0)
        assert wake.ring(url, wake.MAIL) == 2
        assert wake.ring(url, wake.MAIL) == 2
        assert one.wait(1) and two.wait(1)
        assert not one.wait(0) and not two.wait(0)  # both rings taken by one wait
        assert not notices.wait(0)
    assert listeners(url, wake.MAIL) == [] and listeners(url, wake.NOTICES) == []


def test_two_databases_never_share_a_wake_folder(tmp_path):
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 5)
    deep.mkdir(parents=True)
    urls = [f"sqlite:///{tmp_path / 'a.sqlite3'}", f"sqlite:///{tmp_path / 'b.sqlite3'}",
            f"sqlite:///{deep / 'a.sqlite3'}", f"sqlite:///{deep / 'b.sqlite3'}"]
    folders = [wake.folder_for(url) for url in urls]
    assert folders == [tmp_path / "a.sqlite3.wake", tmp_path / "b.sqlite3.wake",
                       deep / "a.sqlite3.wake", deep / "b.sqlite3.wake"]
    # too deep for a socket's path: an abstract socket, found by its file in the folder
    with wake.Listener(urls[2], wake.MAIL) as a, wake.Listener(urls[3], wake.MAIL) as b, \
            wake.Listener(urls[0], wake.MAIL) as near:
        assert a.listening and b.listening and near.listening
        assert a.path.suffix == ".abstract" and a.path.parent == folders[2]
        assert len(os.fsencode(a.path)) > 107
        assert wake.ring(urls[2], wake.MAIL) == 1
        assert a.wait(1) and not b.wait(0) and not near.wait(0)
        assert wake.ring(urls[0], wake.MAIL) == 1
        assert near.wait(1) and not a.wait(0) and not b.wait(0)
        a.sock.close()  # dies without closing: its file stays, and is cleared by a ring
        a.sock = None
        assert wake.ring(urls[2], wake.MAIL) == 0 and not a.path.exists()
    assert wake.folder_for("sqlite://") is None
    assert wake.folder_for("postgresql+psycopg://u@127.0.0.1:1/db") is None


def test_mail_rings_the_mail_loops_only_after_its_transaction_commits(app):
    """Rolled back: no ring; committed: one ring, after the commit (a woken loop must
    find the row)."""
    if is_postgres(app):  # NOTIFY (test_delivery), no wake folder
        assert wake.folder_for(get_engine(app).url) is None
        assert not wake.Listener(get_engine(app).url, wake.MAIL).listening
        return
    with app.app_context(), wake.Listener(get_engine(app).url, wake.MAIL) as listener:
        with pytest.raises(RuntimeError), session_scope() as s:
            s.connection()
            wake_deliverer(s)
            raise RuntimeError("rolled back")
        assert not listener.wait(0.05)
        with session_scope() as s:
            s.connection()
            wake_deliverer(s)
            assert not listener.wait(0)
        assert listener.wait(1)
    services.MAIL_QUEUED.clear()


# --------------------------------------------------------------------------- processes


def clock_env(app, smtp) -> dict[str, str]:
    """The clock's own process on this test's database, sending to ``smtp``, with its
    polls 30 s apart: only a wake-up can make it send sooner."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    config = {"DATABASE_URL": app.config["DATABASE_URL"], "SECRET_KEY": SECRET,
              "MAIL_BACKEND": "smtp", "SMTP_HOST": "127.0.0.1", "SMTP_PORT": smtp.port,
              "MAIL_FROM": app.config["MAIL_FROM"], "BASE_URL": app.config["BASE_URL"],
              "MAIL_POLL_INTERVAL": 30, "CLOCK_INTERVAL": 30, "FOLLOW_UP_MINUTES": 0,
              "TAKEBACK_GRACE_SECONDS": 0, "NOTICE_LIMIT_PER_ADDRESS": 1000,
              "NOTICE_LIMIT_PER_GAME": 1000}
    env.update({f"PBEM_{k}": str(v) for k, v in config.items()})
    env["PYTHONPATH"] = str(ROOT)  # this tree's pbem, whatever the venv points at
    return env


def mail_loop_listening(app) -> bool:
    """The clock's mail loop is waiting for a wake-up: its socket (SQLite) or its LISTEN
    (PostgreSQL) is up."""
    if not is_postgres(app):
        return bool(listeners(app.config["DATABASE_URL"], wake.MAIL))
    with get_engine(app).connect() as conn:
        return bool(conn.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE query = :q AND state = 'idle'"),
            {"q": f"LISTEN {services.OUTBOX_CHANNEL}"}).scalar())


@pytest.mark.parametrize("clocks", [1, 2])
def test_mail_committed_here_is_sent_at_once_by_the_clock_of_another_process(
        app, smtp, clocks, tmp_path):
    """``flask pbem clock`` in processes of their own, their outbox polls 30 s apart (and
    on PostgreSQL too): a game started in this process has its emails sent within a
    few seconds of the commit. Two clocks by mistake: each email still goes once."""
    smtp.start()
    log = (tmp_path / "clock.log").open("wb")
    flask = Path(sys.executable).with_name("flask")
    procs = [subprocess.Popen([str(flask), "--app", "pbem", "pbem", "clock"],
                              env=clock_env(app, smtp), cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=log)
             for _ in range(clocks)]
    try:
        if is_postgres(app):
            listening = lambda: wait_for(lambda: mail_loop_listening(app), 30)  # noqa: E731
        else:
            listening = lambda: wait_for(  # noqa: E731
                lambda: len(listeners(app.config["DATABASE_URL"], wake.MAIL)) == clocks, 30)
        assert listening(), "the clock's mail loop never came to wait"
        with app.app_context():
            services.create_game("cavemen", list(PLAYERS), seed=7,
                                 confirm_by_email=False, start=True)
        committed = time.monotonic()
        assert wait_for(lambda: len(smtp.mails) >= len(PLAYERS), 10)
        took = time.monotonic() - committed
        assert took < 5, f"sent {took:.1f} s after the commit: the poll, not a wake-up"
        time.sleep(0.5)
        assert sorted(r[0] for r in smtp.recipients) == sorted(p.email for p in PLAYERS)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)
        log.close()


def test_a_notice_committed_here_wakes_the_notice_loop_at_once(app, monkeypatch):
    """The notice loop (polls every second by default; here every 30 s) is woken by a
    commit that queued a notice with its email: on SQLite rung for the notice, on
    PostgreSQL by the email's NOTIFY."""
    waiting = threading.Event()
    stop = threading.Event()
    passes: list[float] = []
    real = delivery.deliver_due

    def counting(limit: int = 100) -> dict[str, int]:
        passes.append(time.monotonic())
        return real(limit)

    monkeypatch.setattr(delivery, "deliver_due", counting)
    thread = threading.Thread(target=notice_loop, args=(app, stop, 30.0),
                              kwargs={"waiting": waiting}, daemon=True)
    thread.start()
    try:
        assert waiting.wait(10)  # (it listens before its first pass)
        if not is_postgres(app):
            assert listeners(app.config["DATABASE_URL"], wake.NOTICES)
        assert len(passes) == 1
        with app.app_context(), session_scope() as s:
            s.connection()
            s.info[wake.NOTICES_QUEUED] = True  # (as queue_notices marks it)
            wake_deliverer(s)  # (as queue_email does after it)
        assert wait_for(lambda: len(passes) >= 2, 5), "the notice loop was not woken"
    finally:
        stop.set()
        thread.join(10)
        services.MAIL_QUEUED.clear()


# --------------------------------------------------------------------------- held emails


@contextlib.contextmanager
def mail_loop_ear(app):
    """A mail loop's ear on this test's database (SQLite: a listener on the wake folder;
    PostgreSQL: a LISTEN of its own): yields ``heard(seconds)``, whether a wake-up came
    within that time."""
    if not is_postgres(app):
        with wake.Listener(get_engine(app).url, wake.MAIL) as listener:
            yield listener.wait
        services.MAIL_QUEUED.clear()
        return
    import psycopg

    url = get_engine(app).url.set(drivername="postgresql")
    with psycopg.connect(url.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(f"LISTEN {services.OUTBOX_CHANNEL}")
        yield lambda seconds: bool(list(conn.notifies(timeout=seconds, stop_after=1)))


def test_a_move_whose_email_waits_for_the_take_back_grace_wakes_no_mail_loop(app, table):
    """The next player's email waits TAKEBACK_GRACE_SECONDS (the move may be taken back):
    the move's commit wakes no mail loop, which would find nothing due (its poll sends the
    email once it is); on PostgreSQL that is one NOTIFY less, whose commit waits for every
    other notifying transaction. A move whose next email is due at once wakes it."""
    app.config["TAKEBACK_GRACE_SECONDS"] = 90
    first = table.open()
    table.page_link(first)  # (its email is delivered before the ear listens)
    with mail_loop_ear(app) as heard:
        table.play_on_page(first, table.bot_choice(first))
        assert not heard(0.5), "a move whose email waits 90 s woke the mail loop"
        with app.app_context(), session_scope() as s:
            held = s.exec(select(Outbox).where(Outbox.game_id == table.game_id,
                                               Outbox.status == "pending",
                                               Outbox.next_attempt_at > utcnow())).all()
        assert [o.template for o in held] == ["decision"]  # it is queued, for later
        app.config["TAKEBACK_GRACE_SECONDS"] = 0
        second = table.open()
        table.play_on_page(second, table.bot_choice(second))
        assert heard(2), "a move whose email is due at once did not wake the mail loop"
