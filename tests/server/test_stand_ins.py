"""Stand-in bots (issue 22): a bot playing for a player who left, who missed their
deadlines, or whose seat the host put on a bot is played by the clock after the bot's
short pause, like a bot seated at creation, never inside anyone's web request. Its moves
are the bot's, still do not count as a person playing, and a game whose every seat is
on a stand-in ends as one nobody plays. A seat handed back to a person gets a person's
deadline again. Both databases, under a frozen clock at ``timekit.T0``."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pbem import services
from pbem.models import Decision, Game, Outbox, Seat
from pbem.tokens import form_signature
from tests.server.helpers import (
    SECRET,
    Inbox,
    Table,
    load,
    open_decisions,
    outbox,
    page_form_data,
    path_of,
    token_of,
)
from tests.server.test_take_back import moves_of, page_of_seat, state_of, take_back
from tests.server.test_time_bank import DAY, HOUR, banked
from tests.server.timekit import (
    ANN,
    BOB,
    CY,
    PASS,
    T0,
    at,
    aware,
    bots_play,
    events,
    moves,
    new_game,
    page_form,
    page_of,
    seat,
    sweep_at,
    tick,
)

PAUSE = 4.0  # BOT_PAUSE_SECONDS: a bot plays after half to one and a half of it


def leave(app, inbox: Inbox, addr: str) -> None:
    """The player of ``addr`` leaves the game from their game page's settings."""
    with app.app_context():
        services.set_notifications(token_of(page_of(inbox, addr)), "leave")


def due_soon(decision: Decision, now) -> bool:
    """The decision waits a bot's pause from ``now``, with no reminder."""
    return (now + timedelta(seconds=PAUSE / 2) <= aware(decision.deadline_at)
            <= now + timedelta(seconds=PAUSE * 1.5)) and decision.next_reminder_at is None


def test_a_persons_move_never_plays_the_stand_in_the_clock_does(app, client, frozen):
    """Ann left; Cy passes on the page: Ann's bid is open right after Cy's request, due
    after the bot's pause; the clock plays it then, as the bot's move, emailing nobody
    for it."""
    app.config["BOT_PAUSE_SECONDS"] = PAUSE
    inbox = Inbox(app)
    g = new_game(app)
    table = Table(app, client, inbox, g.game_id, g.admin_token)
    leave(app, inbox, ANN.email)
    assert seat(app, g.game_id, 0).bot == "heuristic" and moves(app, g.game_id) == []
    table.play_on_page(table.open(), PASS)  # Cy bids first
    assert [m.source for m in moves(app, g.game_id)] == ["player"]
    (bid,) = open_decisions(app, g.game_id)
    assert bid.position == 0 and bid.kind == "bid" and due_soon(bid, T0)
    assert [r for r in outbox(app, Outbox.seat_id == bid.seat_id)
            if r.context.get("decision_id") == bid.id] == []  # no turn email for a bot
    at(frozen, (PAUSE / 2 - 0.5) / 3600)  # before the pause is over: nothing
    assert tick(app)["bots"] == 0 and len(moves(app, g.game_id)) == 1
    frozen.move_to(aware(bid.deadline_at))
    assert tick(app)["bots"] == 1
    played = moves(app, g.game_id)
    assert [(m.position, m.source) for m in played] == [(2, "player"), (0, "bot")]
    assert load(app, Decision, bid.id).closed_by == "bot"
    (bob,) = open_decisions(app, g.game_id)
    assert bob.position == 1 and inbox.for_decision(bob.id).to_addr == BOB.email
    assert inbox.to(ANN.email, "decision") == []


@pytest.mark.parametrize(("how", "idle"), [("left", 0), ("host", -1)])
def test_a_stand_in_for_a_player_who_left_is_nobody_a_bot_the_host_chose_plays(
        app, frozen, how, idle):
    """Cy's first bid, played by the clock: for a player who left it leaves the idle
    count as it was (nobody played); a bot the host chose plays for the host and resets
    it, as when either was played at once."""
    inbox = Inbox(app)
    g = new_game(app)
    assert load(app, Game, g.game_id).idle_rounds == 0
    if how == "left":
        leave(app, inbox, CY.email)
    else:
        with app.app_context():
            services.set_bot(g.admin_token, 2, "heuristic")
    (bid,) = open_decisions(app, g.game_id)
    assert bid.position == 2 and due_soon(bid, T0)
    assert bots_play(app, frozen, within=PAUSE * 2, most=1)["bots"] == 1
    assert [(m.position, m.source) for m in moves(app, g.game_id)] == [(2, "bot")]
    assert load(app, Game, g.game_id).idle_rounds == idle


def test_a_game_every_seat_of_which_is_on_a_stand_in_ends_as_nobody_plays(app, frozen):
    """Everyone leaves: the requests that left played nothing; the clock plays the
    stand-ins after their pauses, and after three rounds nobody played the game ends."""
    inbox = Inbox(app)
    g = new_game(app)
    for addr in (BOB.email, CY.email, ANN.email):
        leave(app, inbox, addr)
    assert moves(app, g.game_id) == []
    (first,) = open_decisions(app, g.game_id)
    assert first.position == 2 and due_soon(first, T0)
    played = bots_play(app, frozen)
    game = load(app, Game, g.game_id)
    assert game.status == "abandoned" and events(app, g.game_id)[-1].kind \
        == "game_abandoned_idle"
    assert played["bots"] == len(moves(app, g.game_id)) > 3
    assert {m.source for m in moves(app, g.game_id)} == {"bot"}
    assert T0 < aware(game.ended_at) < T0 + timedelta(hours=1)  # seconds apart each


def test_the_host_puts_a_seat_with_an_open_decision_on_a_bot(app, client, frozen):
    """Cy's bid is open (a person's deadline, reminders): the host puts Cy on a bot at
    10 hours; the bid is due after the bot's pause and the clock plays it then."""
    inbox = Inbox(app)
    g = new_game(app)
    (cy,) = open_decisions(app, g.game_id)
    assert cy.position == 2 and aware(cy.deadline_at) == T0 + timedelta(hours=48)
    now = at(frozen, 10)
    with app.app_context():
        services.set_bot(g.admin_token, 2, "default")
    assert moves(app, g.game_id) == []
    (waiting,) = open_decisions(app, g.game_id)
    assert waiting.id == cy.id and due_soon(waiting, now)
    inbox.clear()
    frozen.move_to(aware(waiting.deadline_at))
    assert tick(app)["bots"] == 1
    (move,) = moves(app, g.game_id)
    assert (move.decision_id, move.source, move.action) == (cy.id, "bot", {"kind": "pass"})
    (ann,) = open_decisions(app, g.game_id)
    assert ann.position == 0 and aware(ann.deadline_at) == aware(waiting.deadline_at) \
        + timedelta(hours=48)
    assert inbox.for_decision(ann.id).to_addr == ANN.email


def test_a_seat_handed_back_before_the_bot_played_gets_a_persons_deadline(app, client,
                                                                          frozen):
    """The host puts Cy on a bot and takes it off again before the clock played: Cy's
    bid is Cy's again, with a person's time from now, reminders and its email; the bot
    plays nothing."""
    inbox = Inbox(app)
    g = new_game(app)
    (cy,) = open_decisions(app, g.game_id)
    now = at(frozen, 10)
    with app.app_context():
        services.set_bot(g.admin_token, 2, "heuristic")
        services.set_bot(g.admin_token, 2, None)
    (back,) = open_decisions(app, g.game_id)
    assert back.id == cy.id and aware(back.deadline_at) == now + timedelta(hours=48)
    assert back.next_reminder_at is not None
    assert [m.decision_id for m in inbox.to(CY.email, "decision")] == [cy.id, cy.id]
    assert sweep_at(app, frozen, 10.1)["bots"] == 0 and moves(app, g.game_id) == []


def test_the_absent_player_coming_back_gets_a_persons_deadline(app, client, frozen):
    """Cy left with her bid open; she comes back (the 'I'm back' button) before the
    clock played it: the bid is hers again, with a person's deadline."""
    inbox = Inbox(app)
    g = new_game(app)
    (cy,) = open_decisions(app, g.game_id)
    page = page_of(inbox, CY.email)
    now = at(frozen, 5)
    leave(app, inbox, CY.email)
    assert due_soon(open_decisions(app, g.game_id)[0], now)
    with app.app_context():
        services.come_back(token_of(page))
    (back,) = open_decisions(app, g.game_id)
    assert back.id == cy.id and aware(back.deadline_at) == now + timedelta(hours=48)
    assert sweep_at(app, frozen, 5.1)["bots"] == 0 and moves(app, g.game_id) == []


def test_a_stand_ins_seat_handed_over_gets_a_persons_deadline(app, client, frozen):
    """Cy left; the host hands her seat to Dee before the clock played Cy's bid: Dee
    gets the bid with a person's deadline and its email."""
    from tests.server.test_host_controls import accept_hand_over

    inbox = Inbox(app)
    g = new_game(app)
    (cy,) = open_decisions(app, g.game_id)
    leave(app, inbox, CY.email)
    now = at(frozen, 1)
    with app.app_context():
        services.hand_over(g.admin_token, 2, services.PlayerIn("Dee", "dee@example.com"))
    accept_hand_over(client, inbox, "dee@example.com")
    (dee,) = open_decisions(app, g.game_id)
    assert dee.id == cy.id and aware(dee.deadline_at) == now + timedelta(hours=48)
    assert load(app, Seat, dee.seat_id).bot is None
    # the decision's email to Dee (its Message-ID says "handover"), Cy's not sent again
    assert "handover" in [m.template for m in inbox.to("dee@example.com")]
    assert [m.to_addr for m in inbox.all() if m.decision_id == dee.id] == [CY.email]
    assert sweep_at(app, frozen, 1.1)["bots"] == 0 and moves(app, g.game_id) == []


def test_a_move_and_the_stand_ins_move_the_clock_played_are_taken_back(app, client,
                                                                       frozen):
    """Ann is on a bot; Cy bids, the clock plays Ann's bid later: Cy takes back both."""
    inbox = Inbox(app)
    g = new_game(app)
    table = Table(app, client, inbox, g.game_id, g.admin_token)
    with app.app_context():
        services.set_bot(g.admin_token, 0, "heuristic")
    cy = table.open()
    page = page_of_seat(table, cy.position)
    before = state_of(app, g.game_id)[0]
    table.play_on_page(cy, PASS)
    (ann,) = open_decisions(app, g.game_id)
    table.clock_plays(ann)
    assert [(m.position, m.source) for m in moves_of(app, g.game_id)] == [
        (2, "player"), (0, "bot")]
    assert take_back(client, page).status_code == 200
    assert state_of(app, g.game_id)[0] == before and moves_of(app, g.game_id) == []
    (again,) = open_decisions(app, g.game_id)
    assert again.position == 2


def test_a_take_back_before_the_clock_plays_the_stand_in_closes_its_decision(app, client,
                                                                            frozen):
    inbox = Inbox(app)
    g = new_game(app)
    table = Table(app, client, inbox, g.game_id, g.admin_token)
    with app.app_context():
        services.set_bot(g.admin_token, 0, "heuristic")
    cy = table.open()
    page = page_of_seat(table, cy.position)
    table.play_on_page(cy, PASS)
    (ann,) = open_decisions(app, g.game_id)
    assert take_back(client, page).status_code == 200
    assert load(app, Decision, ann.id).closed_by == "superseded"
    assert bots_play(app, frozen) == {} and moves_of(app, g.game_id) == []


def test_a_time_bank_is_charged_until_the_switch_and_not_for_the_bots_pause(app, frozen):
    """A time bank of 3 days: Cy's bid has been open 10 hours when the host puts her on
    a bot; her clock keeps 3 days less 10 hours, and the bot's move adds the increment
    (as when the bot played at once). Its pause costs nothing."""
    g = new_game(app, **banked())
    (cy,) = open_decisions(app, g.game_id)
    assert aware(cy.deadline_at) == T0 + timedelta(days=3)
    at(frozen, 10)
    with app.app_context():
        services.set_bot(g.admin_token, 2, "heuristic")
    assert seat(app, g.game_id, 2).bank_left == 3 * DAY - 10 * HOUR
    (waiting,) = open_decisions(app, g.game_id)
    frozen.move_to(aware(waiting.deadline_at))
    assert tick(app)["bots"] == 1
    assert seat(app, g.game_id, 2).bank_left == min(4 * DAY, 3 * DAY - 10 * HOUR + 24 * HOUR)


def test_a_player_cannot_play_the_decision_their_stand_in_is_to_play(app, client, frozen):
    """The host put Cy on a bot while her bid was open: her page offers no form for it
    but "I'm back", and her own bid posted anyway is refused as a turn that is over (as
    when the bot had played it at once); nothing is recorded and the clock plays the
    bot's."""
    inbox = Inbox(app)
    g = new_game(app)
    table = Table(app, client, inbox, g.game_id, g.admin_token)
    (cy,) = open_decisions(app, g.game_id)
    with app.app_context():
        services.set_bot(g.admin_token, 2, "heuristic")
    page = path_of(table.page_link(cy))
    assert page_form(client, page, "decision") is None  # the page offers "I'm back"
    assert page_form(client, page, "back") is not None
    data = {"sig": form_signature(SECRET, page.rsplit("/", 1)[1]),
            "decision_id": str(cy.id), **page_form_data(PASS, cy.kind)}
    assert client.post(page, data=data).status_code == 409
    assert moves(app, g.game_id) == [] and seat(app, g.game_id, 2).bot == "heuristic"
    table.clock_plays(cy)
    assert [m.source for m in moves(app, g.game_id)] == ["bot"]


@pytest.mark.parametrize("meanwhile", ["handed back", "paused"])
def test_what_the_host_does_while_a_bot_thinks_wins_and_the_bot_plays_nothing(
        app, frozen, monkeypatch, meanwhile):
    """The clock's bot thinks in a read, holding no lock. While it thinks, the host
    takes Cy's seat off the bot, or pauses the game (each a request of its own,
    committed meanwhile): the bot's move is not recorded."""
    from pbem.services import deadlines

    g = new_game(app)
    (cy,) = open_decisions(app, g.game_id)
    at(frozen, 1)
    with app.app_context():
        services.set_bot(g.admin_token, 2, "heuristic")
    real_choice = deadlines.bot_choice
    thought: list[str] = []

    def thinking(game, mod, state, seat_row, *budget):  # the real bot; the host meanwhile
        choice = real_choice(game, mod, state, seat_row, *budget)
        with app.app_context():
            if meanwhile == "handed back":
                services.set_bot(g.admin_token, 2, None)
            else:
                services.pause_game(g.admin_token)
        thought.append(seat_row.name)
        return choice

    monkeypatch.setattr(deadlines, "bot_choice", thinking)
    now = at(frozen, 1.01)  # the bot's pause is over
    with app.app_context():
        assert deadlines.play_bot(cy.id, now) is False
    assert thought == ["Cy"] and moves(app, g.game_id) == []
    (still,) = open_decisions(app, g.game_id)
    assert still.id == cy.id and still.closed_at is None
    if meanwhile == "handed back":  # Cy's again, with a person's time from the hand-back
        assert aware(still.deadline_at) == now + timedelta(hours=48)
