"""END TO END BY REPLY: a whole Cavemen game and a whole Stone Age game played only by
replying to the emails, over SMTP into the real inbound receiver on loopback; the
server's emails go out through the clock's mail loop to a real SMTP server.

Every decision email is answered with the heuristic bot's choice typed as a person
types it from the email's list of commands (lower case, a printed name shortened to its
last word or its first letters, a number first), in turn as a plain reply quoting the
email, an HTML-only reply, a reply under a German mail program's quote header and one
with a signature (``tests/server/replying.py``); two or three moves of the same player
in a row go in one reply, one a line. A refused reply is answered with the commands,
and the player replies to that answer exactly as it lists them. The test prints the
share of replies played at the first try and the time from a reply to the next
decision email.
"""

from __future__ import annotations

import statistics
import threading

import pytest
from sqlmodel import select

from pbem import clock, services
from pbem.db import session_scope
from pbem.models import Decision, Move
from tests.server.helpers import PLAYERS
from tests.server.replying import Inbound, ReplyGame, TimedSmtp, listed_in, offered_in_refusal

DEE = services.PlayerIn("Dee", "dee@example.com", "de", "Europe/Berlin")


@pytest.fixture
def by_reply(make_app):
    smtp = TimedSmtp()
    smtp.start()
    app = make_app(TESTING=False, MAIL_BACKEND="smtp", SMTP_HOST="127.0.0.1",
                   SMTP_PORT=smtp.port, SMTP_TIMEOUT=10, MAIL_POLL_INTERVAL=0.02,
                   REPLY_ANSWERS_PER_HOUR=100_000)
    mailer, stop = clock.start_mail_thread(app)
    inbound = Inbound(app)
    try:
        yield app, smtp, inbound
    finally:
        inbound.stop()
        stop.set()
        mailer.join(10)
        smtp.stop()


@pytest.mark.parametrize(("game", "seed", "people"), [
    ("cavemen", 114, [*PLAYERS]),
    ("stoneage", 5, [PLAYERS[0], PLAYERS[1], DEE]),
])
def test_a_whole_game_only_by_replies(by_reply, game, seed, people):
    app, smtp, inbound = by_reply
    with app.app_context():
        created = services.create_game(game, people, {"hours_per_decision": 48}, seed=seed,
                                       title="By reply", confirm_by_email=False, start=True)
    player = ReplyGame(app, smtp, inbound, created.game_id, seed)
    player.play(len(people))

    with app.app_context(), session_scope() as s:
        rows = list(s.exec(select(Decision).where(Decision.game_id == created.game_id)))
        moves = list(s.exec(select(Move).where(Move.game_id == created.game_id)))
    assert rows and all(d.closed_by == "player" for d in rows)
    assert len(moves) == len(rows) and {m.source for m in moves} == {"player"}
    assert {p.email for p in people} == {m.to_addr for m in player.results}
    assert set(player.styles) == {"plain", "html", "german", "signature"}
    share = player.first_try / player.replies
    lat = sorted(player.latencies)
    p99 = lat[max(0, round(0.99 * len(lat)) - 1)]
    print(f"\n{game}: {len(rows)} decisions in {player.replies} replies, "
          f"{share:.1%} played at the first try; refused: {player.refused[:8]}; "
          f"reply -> next decision email: median {statistics.median(lat) * 1000:.0f} ms, "
          f"p99 {p99 * 1000:.0f} ms (n={len(lat)})")
    assert share > 0.8
    assert threading.active_count() < 50


def test_a_german_player_plays_by_listed_german_commands_and_is_offered_the_nearest(by_reply):
    """Dee reads German: she answers her first turn with a German command from her
    email's list (a line offering numbers: one of them), then a turn with a count that
    place does not take, reads the nearest commands in the answer, and plays one."""
    from pbem.commands import expand_line

    app, smtp, inbound = by_reply
    with app.app_context():
        created = services.create_game("stoneage", [PLAYERS[0], PLAYERS[1], DEE],
                                       {"hours_per_decision": 48}, seed=5, title="Auf Deutsch",
                                       confirm_by_email=False, start=True)
    player = ReplyGame(app, smtp, inbound, created.game_id, 5)
    steps: list[str] = []
    while len(steps) < 2:
        mail, _ = player.new_mail()
        if mail.template != "decision":
            continue
        listed = listed_in(mail)
        if mail.to_addr != DEE.email:  # the others play the first command listed
            inbound.reply(mail, expand_line(listed[0])[0])
            continue
        assert all(line.split()[0] in ("setze", "reihenfolge", "nutze", "werkzeug",
                                       "ohne_werkzeug", "nimm", "verzichte", "baue", "wähle",
                                       "ernähre", "hungere") for line in listed), listed
        grouped = next(line for line in listed if " | " in line)
        if not steps:  # one of the numbers of a listed line, as the email says to
            command = expand_line(grouped)[1]  # two people: more placements follow
            inbound.reply(mail, command)
            steps.append(command)
            continue
        head, numbers = grouped.split(" | ")[0].rsplit(" ", 1)[0], grouped.split(" | ")
        wrong = f"{head} {int(numbers[-1]) + 4}"  # more people than that place takes now
        inbound.reply(mail, wrong)
        answer = player._wait_for(player._last_answer().message_id)
        assert answer.headline == f"Nicht gespielt: {wrong}"
        assert "am nächsten kommen diese:" in answer.text
        offered = offered_in_refusal(answer)
        assert offered and offered[0] == f"{head} {numbers[-1]}", offered  # the most it takes
        inbound.reply(answer, offered[0])
        steps.append(offered[0])

    with app.app_context(), session_scope() as s:
        played = [m for m in s.exec(select(Move).where(Move.game_id == created.game_id)
                                    .order_by(Move.id)) if m.position == 2]
    assert len(played) == 2 and all(m.source == "player" for m in played)
    for move, command in zip(played, steps, strict=True):
        _, at, count = command.split()
        assert move.action["kind"] == "place" and str(move.action["count"]) == count
        assert {"jagd": "hunt", "wald": "forest", "lehmgrube": "clay", "steinbruch": "quarry",
                "fluss": "river"}[at] == move.action["at"]
