"""SMTP is never on the request path (issue 7, item 5): a request only queues; the clock's
mail loop delivers, woken at once (a PostgreSQL NOTIFY, or on SQLite a commit in its own
process) or by a poll (SQLite mail from another process); a mail
server that accepts connections and never answers stalls only that loop."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import event

from pbem import clock, mail, services
from pbem.db import get_engine, is_postgres, session_scope
from pbem.services.plumbing import wake_deliverer
from pbem.tokens import form_signature
from tests.server.helpers import (
    PLAYERS,
    SECRET,
    new_game_data,
    new_game_form,
    only_form,
    open_decisions,
    outbox,
    path_of,
    poll_until,
)
from tests.smtpsink import Tarpit


@pytest.fixture
def tarpit():
    pit = Tarpit()
    pit.start()
    try:
        yield pit
    finally:
        pit.stop()




FIVE = [*PLAYERS, services.PlayerIn("Dee", "dee@example.com"),
        services.PlayerIn("Eve", "eve@example.com")]


def test_requests_only_queue_and_never_touch_the_mail_server(make_app, tarpit):
    app = make_app(MAIL_BACKEND="smtp", SMTP_HOST="127.0.0.1", SMTP_PORT=tarpit.port,
                   SMTP_TIMEOUT=30)
    client = app.test_client()
    with app.app_context():
        created = services.create_game("cavemen", FIVE, seed=7, confirm_by_email=False,
                                       start=True)
    sig = {"sig": form_signature(SECRET, created.admin_token)}
    # A host pauses and resumes a 5-seat game, and someone starts a game on the web form:
    # each answers at once, and the mail server is never even called.
    for control in ("pause", "resume"):
        assert client.post(f"/admin/{created.admin_token}/{control}", data=sig
                           ).status_code == 200
    resp = client.post("/new", data=new_game_data(new_game_form(client)))
    assert resp.status_code == 200
    assert tarpit.accepted == 0  # no thread of a request ever connects: none is started
    rows = outbox(app)
    assert len(rows) == 5 + 10 + 1
    assert {(r.status, r.attempts) for r in rows} == {("pending", 0)}


def test_the_mail_loop_delivers_soon_after_a_request_queues(make_app, smtp):
    """The loop polls only once a minute here, so only a wake-up can explain prompt mail:
    on PostgreSQL the NOTIFY of the queueing transaction, on SQLite the commit of a
    transaction that queued mail in this process. A stop is seen at once all the same."""
    smtp.start()
    app = make_app(MAIL_BACKEND="smtp", SMTP_HOST="127.0.0.1", SMTP_PORT=smtp.port,
                   MAIL_POLL_INTERVAL=60.0)
    client = app.test_client()
    waiting = threading.Event()
    thread, stop = clock.start_mail_thread(app, waiting=waiting)
    try:
        assert waiting.wait(20)  # the loop is up, and asleep until woken
        with app.app_context():
            services.create_game("cavemen", PLAYERS, seed=7, confirm_by_email=False,
                                 start=True)
        poll_until(lambda: len(smtp.mails) == 3, 20, "3 emails")  # far below a minute
        first = smtp.to(PLAYERS[2].email, "decision")[0]
        link = path_of(first.action_links()[0])
        form = only_form(client.get(link).get_data(as_text=True))
        assert client.post(link, data=form.data()).status_code == 200
        poll_until(lambda: len(smtp.mails) == 4, 20, "the 4th email")
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()


def test_a_hung_mail_server_stalls_only_the_mail_loop(make_app, tarpit):
    """A pass gives up at the first timeout (not one timeout per email) and the rows wait
    for a retry; while the mail loop hangs in the mail server, the deadline sweep runs."""
    app = make_app(MAIL_BACKEND="smtp", SMTP_HOST="127.0.0.1", SMTP_PORT=tarpit.port,
                   SMTP_TIMEOUT=0.5)
    with app.app_context():
        services.create_game("cavemen", PLAYERS, seed=7, confirm_by_email=False, start=True)
        assert mail.deliver_due() == {"sent": 0, "failed": 1, "skipped": 0}
    assert tarpit.accepted == 1
    rows = outbox(app)
    assert [(r.status, r.attempts) for r in rows] == [("pending", 1), ("pending", 0),
                                                      ("pending", 0)]
    assert "timed out" in rows[0].last_error

    slow = make_app(MAIL_BACKEND="smtp", SMTP_HOST="127.0.0.1", SMTP_PORT=tarpit.port,
                    SMTP_TIMEOUT=30, MAIL_POLL_INTERVAL=0.05)
    thread, stop = clock.start_mail_thread(slow)
    try:
        poll_until(lambda: tarpit.accepted == 2, 10, "the loop hangs in SMTP")
        (decision,) = open_decisions(slow, rows[0].game_id)
        result = clock.sweep(slow, now=decision.deadline_at + timedelta(seconds=1))
        assert (result["timeouts"], result["errors"]) == (1, 0)  # played all the same
        assert thread.is_alive() and tarpit.accepted == 2  # still waiting on SMTP
    finally:
        stop.set()
        tarpit.stop()  # lets the hung connection fail at once
        thread.join(10)


def test_the_deliverer_is_woken_once_by_each_transaction_that_commits_mail(app):
    """PostgreSQL: one NOTIFY per transaction, however many emails it queues (a
    savepoint rolled back takes its NOTIFY with it: the next email sends another). SQLite:
    ``MAIL_QUEUED`` is set when such a transaction commits, not when it rolls back."""
    notified: list[str] = []

    def spy(_conn, _cursor, statement, *_args):
        if statement.startswith("NOTIFY"):
            notified.append(statement)

    with app.app_context():
        engine = get_engine(app)
        event.listen(engine, "before_cursor_execute", spy)
        try:
            services.MAIL_QUEUED.clear()
            with pytest.raises(RuntimeError), session_scope() as s:
                s.connection()  # (as queueing an email begins the transaction)
                wake_deliverer(s)
                raise RuntimeError("rolled back")
            assert not services.MAIL_QUEUED.is_set()
            with session_scope() as s:
                s.connection()
                wake_deliverer(s)
                wake_deliverer(s)
                with s.begin_nested() as nested:
                    wake_deliverer(s)
                    nested.rollback()
                wake_deliverer(s)
                assert not services.MAIL_QUEUED.is_set()  # not before the commit
            if is_postgres(app):
                assert len(notified) == 1 + 2  # the rolled back one, then one and one
            else:
                assert services.MAIL_QUEUED.is_set() and not notified
            services.MAIL_QUEUED.clear()
            with session_scope() as s:
                s.connection()
                wake_deliverer(s)
            assert len(notified) == (4 if is_postgres(app) else 0)
            assert services.MAIL_QUEUED.is_set() != is_postgres(app)
        finally:
            event.remove(engine, "before_cursor_execute", spy)
            services.MAIL_QUEUED.clear()
