"""A game nobody plays ends: after ``IDLE_ROUNDS`` (3) full rounds in a row in which every
decision was closed by a timeout or by a bot standing in for an absent player, the game
ends as abandoned, as the host's abandon would, everyone is emailed why, and the game log
says so. A game in which one person keeps playing goes on, and so does one with bots the
host chose (they play for the host). For every game (the server counts the rounds by the
engine's ``ROUND_EVENT``).

Time is driven by freezegun and the clock's sweep is called directly; nobody clicks but
the one player of the last tests. Every test runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest

from engine.core import Event
from engine.registry import listings
from pbem import services
from pbem.models import Game
from pbem.services.playing import idle_after
from pbem.tokens import form_signature
from tests.server.helpers import (
    SECRET,
    Inbox,
    Table,
    load,
    open_decisions,
    path_of,
    text_of,
)
from tests.server.test_my_games import ask, entry, list_path
from tests.server.timekit import (
    ANN,
    BOB,
    CY,
    T0,
    events,
    idle,
    moves,
    new_game,
    page_of,
    seat,
    sweep_at,
    tick,
)

BOB_DE = services.PlayerIn(BOB.name, BOB.email, "de", BOB.timezone)
PLAYERS = [ANN, BOB_DE, CY]  # Ann is the host; Bob reads German
ENDED = {"en": "No one has played for 3 rounds: the game ended.",
         "de": "3 Runden lang hat niemand gespielt: Das Spiel ist beendet."}


def run_by_the_clock(app, frozen, game_id: str, hours: float = 48) -> float:
    """Sweep at every deadline until the game is no longer running; the last hour."""
    now = 0.0
    while load(app, Game, game_id).status == "active":
        now += hours
        sweep_at(app, frozen, now)
        assert now < 200 * hours, "the game never ended"
    return now


def rounds_begun(app, game_id: str) -> list[int]:
    return [e.data["round"] for e in events(app, game_id, "round_started")]


# --------------------------------------------------------------------------- nobody plays


@pytest.mark.parametrize("game", sorted(listings()))
def test_a_game_played_only_by_the_clock_ends_after_three_idle_rounds(app, client, frozen,
                                                                      game):
    inbox = Inbox(app)
    g = new_game(app, PLAYERS, game=game)
    inbox.clear()
    end = run_by_the_clock(app, frozen, g.game_id)
    row = load(app, Game, g.game_id)
    # at the last timeout, or at the stand-ins' moves the clock played in the minutes after
    assert row.status == "abandoned"
    assert T0 + timedelta(hours=end) <= row.ended_at < T0 + timedelta(hours=end, minutes=10)
    assert open_decisions(app, g.game_id) == []
    assert {m.source for m in moves(app, g.game_id)} <= {"timeout", "bot"}
    # Rounds 1, 2 and 3 passed with nobody; the game ended as round 4 began.
    assert rounds_begun(app, g.game_id)[-2:] == [3, 4]
    last = events(app, g.game_id)[-2:]
    assert [(e.kind, e.data) for e in last][1] == ("game_abandoned_idle", {"rounds": 3})
    assert last[0].kind == "game_abandoned"
    # Everyone, the host included, is told why, in their language.
    told = {m.to_addr: m.headline for m in inbox.of("notice")
            if m.headline in ENDED.values()}
    assert told == {ANN.email: ENDED["en"], BOB.email: ENDED["de"], CY.email: ENDED["en"]}
    # The game log says so, oldest first, after the game's own last word.
    log = text_of(client.get(page_of(inbox, ANN.email)).get_data(as_text=True), "log")
    assert log.index("The game has ended without a winner.") < log.index(ENDED["en"])
    host_page = client.get(f"/admin/{g.admin_token}").get_data(as_text=True)
    assert text_of(host_page, "result") == ENDED["en"]  # why the game is over
    assert "the game ended: nobody played" in text_of(host_page, "outbox")
    assert idle(sweep_at(app, frozen, end + 1000))  # nothing more happens


def test_an_old_link_after_the_end_brings_nobody_back(app, client, frozen):
    """Every seat was on a bot when the game ended: a player's old one-click link says
    the turn is over (it does not hand the seat back in a game that has ended), and the
    game page offers no "I'm back"."""
    inbox = Inbox(app)
    g = new_game(app, PLAYERS)
    first = inbox.to(CY.email, "decision")[0].action_links()[0]
    run_by_the_clock(app, frozen, g.game_id)
    assert seat(app, g.game_id, 2).bot == "heuristic"
    page = page_of(inbox, CY.email)
    inbox.clear()
    raw = first.rsplit("/", 1)[1]
    resp = client.post(path_of(first), data={"sig": form_signature(SECRET, raw)})
    assert resp.status_code == 409 and "This turn is over" in resp.get_data(as_text=True)
    assert seat(app, g.game_id, 2).bot == "heuristic"
    assert events(app, g.game_id, "seat_returned") == [] and inbox.all() == []
    assert text_of(client.get(page).get_data(as_text=True), "back") is None


def test_a_game_where_every_seat_is_on_the_default_bot_ends_too(app, frozen):
    """The 'default' stand-in only plays the timeout defaults, which never end a game of
    Cavemen: once every seat is on it, three more rounds and the game is over."""
    inbox = Inbox(app)
    g = new_game(app, PLAYERS, absent_after=1, absent_bot="default")
    run_by_the_clock(app, frozen, g.game_id)
    assert [seat(app, g.game_id, p).bot for p in range(3)] == ["default"] * 3
    assert load(app, Game, g.game_id).status == "abandoned"
    assert events(app, g.game_id)[-1].kind == "game_abandoned_idle"
    assert len(moves(app, g.game_id)) < services.playing.BOT_MOVES_IN_A_ROW
    assert sorted(m.to_addr for m in inbox.of("notice") if m.headline in ENDED.values()) \
        == sorted(p.email for p in PLAYERS)


def test_my_games_says_the_game_ended_because_nobody_played(app, client, frozen):
    inbox = Inbox(app)
    g = new_game(app, PLAYERS)
    run_by_the_clock(app, frozen, g.game_id)
    ask(client, ANN.email)
    html = client.get(list_path(inbox, ANN.email)).get_data(as_text=True)
    assert "The game ended because nobody played any more." in entry(html, g.game_id)
    assert "The host ended this game." not in entry(html, g.game_id)


# --------------------------------------------------------------------------- someone plays


@pytest.mark.parametrize("game", sorted(listings()))
def test_a_game_where_one_person_keeps_playing_does_not_end(app, client, frozen, game):
    """Ann plays each of her decisions on her game page; Bob and Cy never do (their
    deadlines pass and bots take their seats). Six rounds later the game still runs."""
    inbox = Inbox(app)
    g = new_game(app, PLAYERS, game=game)
    table = Table(app, client, inbox, g.game_id, g.admin_token, bot_seed=1)
    for _ in range(400):
        if load(app, Game, g.game_id).status != "active" or \
                rounds_begun(app, g.game_id)[-1] >= 7:
            break
        opened = open_decisions(app, g.game_id)
        mine = [d for d in opened if d.position == 0]
        if mine:
            table.play_on_page(mine[0], table.bot_choice(mine[0]))
            continue
        due = min(d.deadline_at for d in opened)
        frozen.move_to(due)
        tick(app)
    assert rounds_begun(app, g.game_id)[-1] >= 7 or load(app, Game, g.game_id).status \
        == "finished"
    assert events(app, g.game_id, "game_abandoned_idle") == []
    assert [seat(app, g.game_id, p).bot for p in (1, 2)] == ["heuristic", "heuristic"]
    assert load(app, Game, g.game_id).status in ("active", "finished")


def test_bots_the_host_chose_keep_the_game_going(app, frozen):
    """The host puts Bob and Cy on bots; Ann (the host) then misses her deadlines and a
    bot stands in for her too. The bots the host chose play for the host: the game goes
    on to its end instead of ending as one nobody plays."""
    g = new_game(app, PLAYERS)
    with app.app_context():
        for position in (1, 2):
            services.set_bot(g.admin_token, position, "heuristic")
    run_by_the_clock(app, frozen, g.game_id)
    assert seat(app, g.game_id, 0).bot == "heuristic"  # by absence
    assert load(app, Game, g.game_id).status == "finished"
    assert events(app, g.game_id, "game_abandoned_idle") == []


# --------------------------------------------------------------------------- the count


ROUND = Event("round_started", None, {"round": 2})


@pytest.mark.parametrize(("idle", "events_", "played", "after"), [
    (0, [Event("x")], False, 0),  # nobody played, the round goes on
    (0, [ROUND], False, 1),  # a round nobody played has ended
    (2, [Event("x"), ROUND], False, 3),
    (2, [Event("x")], True, -1),  # someone played: this round is not idle
    (2, [ROUND], True, 0),  # ... even if their move ended it
    (-1, [ROUND], False, 0),  # the round a person played in has ended
])
def test_idle_rounds_count_the_rounds_that_ended_with_nobody_playing(idle, events_, played,
                                                                    after):
    game = SimpleNamespace(ROUND_EVENT="round_started")
    assert idle_after(idle, game, events_, played) == after


def test_a_game_without_rounds_counts_the_moves_nobody_made():
    game = SimpleNamespace()  # no ROUND_EVENT
    assert idle_after(4, game, [Event("x")], False) == 5
    assert idle_after(4, game, [Event("x")], True) == 0
