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
from tests.server.replying import Inbound, ReplyGame, TimedSmtp

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
