"""Deadlines, bots and host controls work for Stone Age as for Cavemen: a timeout plays the
engine's default and says so; after the missed deadlines in a row the game's own heuristic
bot plays the seat; the host's abandon ends the game with a result for everyone."""

from __future__ import annotations

import pytest
from freezegun import freeze_time

from pbem import services
from pbem.models import Game
from tests.server.helpers import Inbox, load, open_decisions
from tests.server.timekit import T0, events, moves, new_game, seat, sweep_at


@pytest.fixture
def frozen():
    with freeze_time(T0) as freezer:
        yield freezer


def test_a_stone_age_timeout_plays_the_default_then_the_bot_takes_over(app, frozen):
    inbox = Inbox(app)
    g = new_game(app, game="stoneage", hours=10)
    (first,) = open_decisions(app, g.game_id)
    assert first.kind == "place"
    who = first.position
    hours = 0
    timed_out = []
    while len([m for m in moves(app, g.game_id, "timeout") if m.position == who]) < 2:
        hours += 10.5
        sweep_at(app, frozen, hours)
        timed_out = moves(app, g.game_id, "timeout")
        assert hours < 200, "the deadlines never reached the seat twice"
    played = [m for m in timed_out if m.position == who]
    # the engine's default for a placement: a part of the tribe, not all five people
    assert played[0].action == {"kind": "place", "at": "hunt", "count": 3}
    narrated = events(app, g.game_id, "decision_timed_out")
    assert narrated and "did not decide in time" in "".join(
        m.text for m in inbox.all() if m.template in ("decision", "notice"))
    assert seat(app, g.game_id, who).bot == "heuristic"
    assert events(app, g.game_id, "seat_on_bot")
    # the bot plays the seat's next decision at once, when the others' deadlines lead there
    while not [m for m in moves(app, g.game_id, "bot") if m.position == who]:
        hours += 10.5
        sweep_at(app, frozen, hours)
        assert hours < 300, "the Stone Age bot never played the absent seat"


def test_the_host_abandons_a_stone_age_game(app, frozen):
    inbox = Inbox(app)
    g = new_game(app, game="stoneage")
    with app.app_context():
        services.abandon_game(g.admin_token)
    assert load(app, Game, g.game_id).status == "abandoned"
    assert open_decisions(app, g.game_id) == []
    assert [e.kind for e in events(app, g.game_id)][-2:] == ["game_abandoned",
                                                            "game_abandoned_by_host"]
    notices = [m for m in inbox.all() if m.template == "notice"]
    assert len(notices) == 3
    assert all(m.headline == "The host has abandoned the game. Nobody wins."
               for m in notices)
