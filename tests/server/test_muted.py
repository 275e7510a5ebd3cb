"""Nothing a player muted is ever sent (issue 20, point 7): a whole game under a frozen
clock, with four players who chose four ways: Ann "only my turns" in this game, Bob no
news at all (his address's settings), Cy "never email me again", Dee nothing. Only Dee
plays (on her game page); the others' decisions time out, then bots play their absent
seats, to the game's end. Every email the game sent is then checked against what its
reader chose, and Dee's show that the muted kinds were sent. Both databases."""

from __future__ import annotations

from collections import Counter

from pbem import services
from pbem.db import session_scope
from pbem.models import Game
from pbem.tokens import form_signature
from tests.server.conftest import SECRET
from tests.server.helpers import PLAYERS, Inbox, Table, open_decisions
from tests.server.test_address_settings import save, unsubscribe_link
from tests.server.timekit import at, new_game, tick

ANN, BOB, CY = PLAYERS
DEE = services.PlayerIn("Dee", "dee@example.com", "en", "Europe/London")
NEWS = {"notice", "game_started", "result"}


def choose(client, raw: str, how: str) -> None:
    resp = client.post(f"/u/{raw}", data={"sig": form_signature(SECRET, raw), "how": how})
    assert resp.status_code == 200, resp.get_data(as_text=True)


def test_nothing_a_player_muted_is_ever_sent(app, client, frozen):
    created = new_game(app, players=[ANN, BOB, CY, DEE], hours=1, reminders="0.5")
    choose(client, unsubscribe_link(app, created.game_id, ANN.email), "mute")
    save(client, unsubscribe_link(app, created.game_id, BOB.email), news="never")
    choose(client, unsubscribe_link(app, created.game_id, CY.email), "suppress")
    inbox = Inbox(app)
    before = {p.email: len(inbox.to(p.email)) for p in (ANN, BOB, CY, DEE)}
    hours = 0.0
    table = Table(app, client, inbox, created.game_id, created.admin_token)
    while hours < 24 * 14:
        hours += 0.25
        at(frozen, hours)
        tick(app)
        for decision in open_decisions(app, created.game_id):
            if decision.position == 3:  # Dee plays
                table.play_on_page(decision, table.bot_choice(decision))
        with app.app_context(), session_scope() as s:
            if s.get(Game, created.game_id).status != "active":
                break
    tick(app)
    with app.app_context(), session_scope() as s:
        assert s.get(Game, created.game_id).status == "finished"
    got = {p.email: Counter(m.template for m in inbox.to(p.email)[before[p.email]:])
           for p in (ANN, BOB, CY, DEE)}
    assert got[DEE.email]["notice"] >= 1 and got[DEE.email]["result"] == 1, got
    assert got[DEE.email]["decision"] >= 1
    assert not {"notice", "game_started"} & set(got[ANN.email]), got[ANN.email]
    assert got[ANN.email]["result"] == 1  # "only my turns and the result"
    assert not NEWS & set(got[BOB.email]), got[BOB.email]
    assert got[BOB.email]["decision"] >= 1  # turns still come
    assert sum(got[CY.email].values()) == 0, got[CY.email]
