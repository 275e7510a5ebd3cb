"""``flask --app pbem pbem ...``: new-game and deliver, also with the mail server down."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from sqlmodel import select

from pbem.db import session_scope
from pbem.models import Game, Outbox
from tests.server.helpers import BASE_URL, Inbox, outbox, path_of, seats_of, text_of

ANN = "Ann <ann@example.com>"
BOB = "Bob <bob@example.com> de Europe/Berlin"
CY = "Cy <cy@example.com>"


def run(app, *args: str):
    return app.test_cli_runner().invoke(args=["pbem", *args])


def new_game(app, *players: str, extra=()):
    args = ["new-game", "--game", "cavemen"]
    for p in players:
        args += ["--player", p]
    return run(app, *args, *extra)


def parse_output(output: str) -> tuple[str, str]:
    m = re.fullmatch(r"game ([0-9a-f]{10})\nadmin (\S+)\nmail sent \d+, failed \d+\n", output)
    assert m, output
    return m.group(1), m.group(2)


def games(app) -> list[Game]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Game)))




def test_new_game_prints_the_game_id_and_the_admin_link(app, client):
    result = new_game(app, ANN, BOB, CY)
    assert result.exit_code == 0, result.output
    game_id, admin = parse_output(result.output)
    assert result.output.endswith("mail sent 2, failed 0\n")  # invitations to Bob and Cy
    (game,) = games(app)
    assert (game.id, game.status, game.policy.hours_per_decision) == (game_id, "inviting", 48.0)
    assert admin.startswith(BASE_URL + "/admin/")
    page = client.get(path_of(admin))
    assert page.status_code == 200
    assert text_of(page.get_data(as_text=True), "status") == "waiting for the players to accept"
    bob = seats_of(app, game_id)[1]
    assert (bob.name, bob.email, bob.language, bob.timezone) == (
        "Bob", "bob@example.com", "de", "Europe/Berlin")
    assert sorted(m.to_addr for m in Inbox(app).of("invitation")) == [
        "bob@example.com", "cy@example.com"]


def test_new_game_with_start_seed_and_hours_starts_at_once(app):
    result = new_game(app, ANN, BOB, CY, extra=["--hours-per-decision", "12", "--seed", "7",
                                               "--start"])
    assert result.exit_code == 0, result.output
    game_id, _ = parse_output(result.output)
    assert result.output.endswith("mail sent 3, failed 0\n")
    (game,) = games(app)
    assert (game.status, game.seed, game.policy.hours_per_decision) == ("active", 7, 12.0)
    assert [s.invite for s in seats_of(app, game_id)] == ["accepted"] * 3
    assert sorted(m.template for m in Inbox(app).all()) == [
        "decision", "game_started", "game_started"]


@pytest.mark.parametrize(("players", "message"), [
    (["Ann"], "cannot read player 'Ann'; write it as 'Name <email>'"),
    ([ANN], "a game needs 2 to 5 players, not 1"),
    ([ANN, "Bob <not-an-address>"], "player 2: 'not-an-address' is not an email address"),
    ([ANN, "Bob <ann@example.com>"], "player 2: ann@example.com appears twice"),
    ([ANN, "Bob <bob@example.com> en Mars/Olympus"], "unknown time zone 'Mars/Olympus'"),
    ([ANN, "Bob <bob@example.com> fr"], "language must be one of en, de"),
    ([ANN, "Bob\r\nBcc: x@example.com <bob@example.com>"], "cannot read player"),
    ([ANN, "Bob\x00 <bob@example.com>"], "may not contain line breaks"),
    ([ANN, BOB, CY, "D <d@example.com>", "E <e@example.com>", "F <f@example.com>"],
     "a game needs 2 to 5 players, not 6"),
])
def test_bad_players_give_a_clean_error(app, players, message):
    result = new_game(app, *players)
    assert result.exit_code == 1
    assert result.output.startswith("Error: ")
    assert message in result.output
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)
    assert games(app) == []


def test_other_bad_options_give_a_clean_error(app):
    result = new_game(app, ANN, CY, extra=["--hours-per-decision", "0"])
    assert result.exit_code == 1, result.output
    assert "hours per decision" in result.output and "Traceback" not in result.output
    result = new_game(app, ANN, CY, extra=["--game", "chess"])  # click lists the games
    assert result.exit_code == 2, result.output
    assert "'chess' is not one of 'cavemen', 'stoneage'" in result.output
    result = run(app, "new-game")  # no player at all: click's usage error
    assert result.exit_code == 2
    assert "Missing option '--player'" in result.output
    assert games(app) == []


def test_deliver_reports_what_it_did(app):
    assert run(app, "deliver").output == "sent 0, failed 0, skipped 0\n"
    inbox = Inbox(app)
    inbox.backend.fail = ConnectionRefusedError("down")
    new_game(app, ANN, BOB, CY, extra=["--start"])
    inbox.backend.fail = None
    let_backoff_pass(app)
    result = run(app, "deliver")
    assert (result.exit_code, result.output) == (0, "sent 3, failed 0, skipped 0\n")


# --------------------------------------------------------------------------- SMTP down


def let_backoff_pass(app) -> None:
    """Move every pending row's next attempt into the past: the retry delay has passed."""
    with app.app_context(), session_scope() as s:
        for row in s.exec(select(Outbox).where(Outbox.status == "pending")):
            row.next_attempt_at = row.next_attempt_at - timedelta(hours=2)


@pytest.fixture
def smtp_app(make_app, smtp):
    return make_app(MAIL_BACKEND="smtp", SMTP_HOST="127.0.0.1", SMTP_PORT=smtp.port,
                    SMTP_TIMEOUT=5)


def test_with_the_smtp_server_down_nothing_is_lost(smtp_app, smtp):
    app = smtp_app
    result = new_game(app, ANN, BOB, CY, extra=["--start", "--seed", "7"])
    assert result.exit_code == 0, result.output
    # A server that is down ends the pass at its first failure: the others wait.
    assert result.output.endswith("mail sent 0, failed 1\n")
    rows = outbox(app)
    assert [(r.status, r.attempts) for r in rows] == [("pending", 1), ("pending", 0),
                                                      ("pending", 0)]
    assert rows[0].last_error.startswith("ConnectionRefusedError")
    assert run(app, "deliver").output == "sent 0, failed 1, skipped 0\n"
    assert run(app, "deliver").output == "sent 0, failed 1, skipped 0\n"
    rows = outbox(app)
    assert [(r.status, r.attempts) for r in rows] == [("pending", 1)] * 3
    assert all(r.last_error.startswith("ConnectionRefusedError") for r in rows)

    # The host sees it on the admin page.
    admin = path_of(result.output.split("\n")[1].split(" ", 1)[1])
    page = app.test_client().get(admin).get_data(as_text=True)
    assert page.count('data-status="pending"') == 3
    assert page.count("ConnectionRefusedError") == 3

    # Too early: the backoff holds the retry back.
    assert run(app, "deliver").output == "sent 0, failed 0, skipped 0\n"
    assert smtp.mails == []

    smtp.start()
    let_backoff_pass(app)
    assert run(app, "deliver").output == "sent 3, failed 0, skipped 0\n"
    let_backoff_pass(app)
    assert run(app, "deliver").output == "sent 0, failed 0, skipped 0\n"

    # Each email arrived exactly once, as the row it was queued as.
    assert sorted(m.message_id for m in smtp.mails) == sorted(r.message_id for r in rows)
    assert sorted(r for rcpts in smtp.recipients for r in rcpts) == [
        "ann@example.com", "bob@example.com", "cy@example.com"]
    assert [(r.status, r.attempts, r.last_error) for r in outbox(app)] == [
        ("sent", 2, None)] * 3
    page = app.test_client().get(admin).get_data(as_text=True)
    assert page.count('data-status="sent"') == 3
    assert "ConnectionRefusedError" not in page


def test_a_move_while_the_smtp_server_is_down_still_succeeds(smtp_app, smtp):
    app = smtp_app
    smtp.start()
    new_game(app, ANN, BOB, CY, extra=["--start", "--seed", "7"])
    (decision_mail,) = [m for m in smtp.mails if m.template == "decision"]
    smtp.stop()
    client = app.test_client()
    url = path_of(decision_mail.action_links()[0])
    from tests.server.helpers import only_form

    form = only_form(client.get(url).get_data(as_text=True))
    resp = client.post(url, data=form.data())
    assert resp.status_code == 200  # the move is recorded; its email waits in the outbox
    pending = [r for r in outbox(app) if r.status == "pending"]
    assert [r.template for r in pending] == ["decision"]
    assert (pending[0].attempts, pending[0].last_error) == (0, None)  # the request only queued
    assert run(app, "deliver").output == "sent 0, failed 1, skipped 0\n"
    smtp.start()
    let_backoff_pass(app)
    assert run(app, "deliver").output == "sent 1, failed 0, skipped 0\n"
    assert [m.message_id for m in smtp.mails][-1] == pending[0].message_id
