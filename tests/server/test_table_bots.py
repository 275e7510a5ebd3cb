"""Bots at the table (issue 22, point 1): the host seats bots at creation; a game of one
person and bots plays to its end; the bots' moves are played by the clock after a short
pause, never inside a web request; no email is ever addressed to a bot; a bot is named
as one. Both databases, under a frozen clock."""

from __future__ import annotations

import pytest
from sqlmodel import select

from engine.registry import get_game
from pbem import mail, services
from pbem.db import session_scope
from pbem.errors import FormInvalid, InvalidInput, WrongState
from pbem.models import Decision, Game, Move, Outbox, Seat
from pbem.services import playing
from tests.server.conftest import GAME_SEED
from tests.server.helpers import (
    PLAYERS,
    Inbox,
    Table,
    new_game_data,
    new_game_form,
    open_decisions,
    path_of,
    seats_of,
    text_of,
)
from tests.server.test_host_controls import accept_hand_over
from tests.server.timekit import T0, admin_post, at, tick

ANN = PLAYERS[0]


def bot(level: str, name: str = "") -> services.PlayerIn:
    return services.PlayerIn(name, "", "en", "UTC", bot=level)


def levels(engine: str) -> list[str]:
    return services.bot_levels(get_game(engine))


def started(app, players, engine: str = "cavemen", **policy) -> services.Created:
    """A game started under the frozen clock; its first emails delivered (to people)."""
    with app.app_context():
        created = services.create_game(engine, players, policy or None, seed=GAME_SEED,
                                       confirm_by_email=False, start=True)
        mail.deliver_due()
    return created


def bot_moves(app, game_id: str) -> int:
    with app.app_context(), session_scope() as s:
        return len(s.exec(select(Move.id).where(Move.game_id == game_id,
                                                Move.source == "bot")).all())


def status(app, game_id: str) -> str:
    with app.app_context(), session_scope() as s:
        return s.get(Game, game_id).status


@pytest.mark.parametrize("engine", ["cavemen", "stoneage"])
def test_one_person_and_bots_play_a_game_to_its_end(app, client, frozen, engine):
    app.config["BOT_PAUSE_SECONDS"] = 4
    seated = [bot(level) for level in levels(engine)]
    seated += [bot("easy")] * (3 - 1 - len(seated))
    assert levels(engine) == ["easy", "strong"]
    created = started(app, [ANN, *seated], engine, bot_ms=20)  # a strong bot, quickly
    table = Table(app, client, Inbox(app), created.game_id, created.admin_token)
    seats = seats_of(app, created.game_id)
    robots = {x.position for x in seats if x.robot}
    assert robots == {1, 2} and all("bot" in seats[p].name.lower() for p in robots)
    hours, ann_moves = 0.0, 0
    while status(app, created.game_id) == "active" and hours < 24 * 30:
        hours += 10 / 3600  # ten seconds
        at(frozen, hours)
        tick(app)
        for decision in open_decisions(app, created.game_id):
            if decision.position == 0:
                before = bot_moves(app, created.game_id)
                table.play_on_page(decision, table.bot_choice(decision))
                ann_moves += 1
                # her move played no bot's in the request: the clock plays them later
                assert bot_moves(app, created.game_id) == before
    assert status(app, created.game_id) == "finished"
    with app.app_context(), session_scope() as s:
        moves = s.exec(select(Move).where(Move.game_id == created.game_id)).all()
        sources = {(m.position in robots, m.source) for m in moves}
        assert sources == {(False, "player"), (True, "bot")}, sources
        robot_ids = {x.id for x in seats if x.robot}
        rows = s.exec(select(Outbox).where(Outbox.game_id == created.game_id)).all()
        assert rows and not [r for r in rows if r.seat_id in robot_ids or not r.rcpt]
        assert {r.rcpt for r in rows} == {ANN.email}
        assert any(r.template == "result" for r in rows)
    assert ann_moves >= 10 and bot_moves(app, created.game_id) >= 20
    assert playing._strong_bot.cache_info().currsize >= 1  # the search bot played


@pytest.mark.parametrize("ms", ["nan", "0", "9", "5001", "1e400", "fast"])
def test_a_strong_bots_budget_out_of_bounds_is_refused(app, ms):
    with app.app_context(), pytest.raises(FormInvalid) as caught:
        services.create_game("cavemen", [ANN, bot("strong")], {"bot_ms": ms},
                             confirm_by_email=False, start=True)
    assert [f for f, _ in caught.value.errors] == ["bot_ms"]


def test_the_bot_waits_its_pause_and_the_clock_plays_it(app, client, frozen):
    app.config["BOT_PAUSE_SECONDS"] = 60
    created = started(app, [ANN, bot("easy"), bot("easy")])
    decisions = open_decisions(app, created.game_id)
    if decisions[0].position == 0:  # Ann decides first: her move, then a bot's turn
        table = Table(app, client, Inbox(app), created.game_id, created.admin_token)
        table.play_on_page(decisions[0], table.bot_choice(decisions[0]))
        decisions = open_decisions(app, created.game_id)
    turn = next(d for d in decisions if d.position != 0)
    at(frozen, 25 / 3600)  # before half the pause: not yet
    assert tick(app)["bots"] == 0
    assert turn.id in [d.id for d in open_decisions(app, created.game_id)]
    at(frozen, 95 / 3600)  # after one and a half of it: played by the clock
    assert tick(app)["bots"] >= 1
    with app.app_context(), session_scope() as s:
        row = s.get(Decision, turn.id)
        assert row.closed_at is not None and row.closed_by == "bot"
        assert s.exec(select(Move).where(Move.decision_id == turn.id)).one().source == "bot"


def test_bots_are_named_as_bots_and_need_no_address(app):
    with app.app_context():
        created = services.create_game("cavemen", [ANN, bot("easy"), bot("easy", "Grok"),
                                                   bot("easy", "Robot Rita")],
                                       confirm_by_email=False, start=False)
        with session_scope() as s:
            seats = s.exec(select(Seat).where(Seat.game_id == created.game_id)
                           .order_by(Seat.position)).all()
            assert [x.name for x in seats[1:]] == ["Bot 2", "Grok (bot)", "Robot Rita"]
            assert all(x.robot and x.bot == "easy" and x.email == "" and
                       x.invite == "accepted" for x in seats[1:])
            # only Ann is invited (she is the host: joined); nothing to the bots
            assert not s.exec(select(Outbox).where(Outbox.game_id == created.game_id,
                                                   Outbox.rcpt == "")).all()


@pytest.mark.parametrize(("players", "field", "words"), [
    ([bot("easy"), ANN], "bot0", "player 1 is you, the host"),
    ([ANN, bot("grandmaster")], "bot1", "offers bots at the levels"),
    ([ANN, services.PlayerIn("B", "b@example.com", bot="easy")], "email1",
     "a bot has no email address"),
    ([ANN, bot("easy", "Bad\nName")], "name1", "line breaks"),
])
def test_a_bot_seat_that_makes_no_sense_is_refused(app, players, field, words):
    with app.app_context():
        with pytest.raises(FormInvalid) as caught:
            services.create_game("cavemen", players, confirm_by_email=False, start=True)
        assert any(f == field and words in message for f, message in caught.value.errors), \
            caught.value.errors
        with session_scope() as s:
            assert s.exec(select(Game)).all() == []


def test_the_command_line_seats_bots(app, frozen):
    runner = app.test_cli_runner()
    result = runner.invoke(args=["pbem", "new-game", "--game", "cavemen", "--start",
                                 "--player", "Ann <ann@example.com>", "--bot", "easy",
                                 "--bot", "easy"])
    assert result.exit_code == 0, result.output
    game_id = result.output.split()[1]
    seats = seats_of(app, game_id)
    assert [x.robot for x in seats] == [False, True, True]
    bad = runner.invoke(args=["pbem", "new-game", "--game", "cavemen", "--start",
                              "--player", "Ann <ann@example.com>", "--bot", "wizard",
                              "--bot", "easy"])
    assert bad.exit_code != 0 and "levels" in bad.output


def test_the_host_cannot_put_a_seat_on_a_seated_bots_level(app, frozen):
    created = started(app, [ANN, *PLAYERS[1:]])
    with app.app_context(), pytest.raises(InvalidInput) as caught:
        services.set_bot(created.admin_token, 1, "strong")
    assert "'heuristic' or 'default'" in caught.value.message


def test_the_home_form_seats_bots(app, client):
    form = new_game_form(client)
    html = client.get("/").get_data(as_text=True)
    assert 'name="bot1"' in html and 'name="bot0"' not in html  # the host is a person
    data = new_game_data(form, [ANN])
    data.update({"game": "cavemen", "bot1": "easy", "name1": "", "email1": "",
                 "bot2": "easy", "name2": "Grok", "email2": ""})
    resp = client.post("/new", data=data)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert [m.template for m in Inbox(app).to(ANN.email)] == ["host_confirm"]
    with app.app_context(), session_scope() as s:
        (game,) = s.exec(select(Game)).all()
        seats = s.exec(select(Seat).where(Seat.game_id == game.id)
                       .order_by(Seat.position)).all()
        assert [(x.name, x.robot, x.bot) for x in seats] == [
            (ANN.name, False, None), ("Bot 2", True, "easy"), ("Grok (bot)", True, "easy")]


def test_a_bot_row_of_the_home_form_ignores_a_hidden_address_and_checks_its_level(
        app, client):
    data = new_game_data(new_game_form(client), [ANN, PLAYERS[1], PLAYERS[2]])
    data.update({"game": "cavemen", "bot1": "wizard"})
    resp = client.post("/new", data=data)
    assert resp.status_code == 400
    assert 'id="e-bot1"' in resp.get_data(as_text=True)
    data["bot1"] = "easy"  # Bob's address is still in the (hidden) field: never used
    resp = client.post("/new", data=data)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    with app.app_context(), session_scope() as s:
        (game,) = s.exec(select(Game)).all()
        seats = s.exec(select(Seat).where(Seat.game_id == game.id)
                       .order_by(Seat.position)).all()
        assert seats[1].robot and seats[1].email == "" and seats[1].name == "Bob (bot)"
    assert Inbox(app).to(PLAYERS[1].email) == []


def test_a_bots_seat_handed_over_to_a_person_becomes_theirs(app, client, frozen):
    app.config["BOT_PAUSE_SECONDS"] = 3600  # the bot would wait an hour
    created = started(app, [ANN, bot("easy"), bot("easy")])
    inbox = Inbox(app)
    table = Table(app, client, inbox, created.game_id, created.admin_token)
    for _ in range(3):  # until a bot's seat has a decision open
        decisions = open_decisions(app, created.game_id)
        if any(d.position != 0 for d in decisions):
            break
        table.play_on_page(decisions[0], table.bot_choice(decisions[0]))
    turn = next(d for d in open_decisions(app, created.game_id) if d.position != 0)
    resp = admin_post(client, created.admin_token, "handover", position=str(turn.position),
                      name="Dee", email="dee@example.com", lang="en", tz="Europe/London")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert accept_hand_over(client, inbox, "dee@example.com").status_code == 200
    seat = seats_of(app, created.game_id)[turn.position]
    assert (seat.robot, seat.bot, seat.email) == (False, None, "dee@example.com")
    # her turn email, with the seat's open decision
    assert len(inbox.to("dee@example.com")) == 3  # the invitation, welcome, her turn
    with app.app_context(), session_scope() as s:
        sent = s.exec(select(Outbox).where(Outbox.rcpt == "dee@example.com",
                                           Outbox.template == "decision")).all()
        assert [(r.context["decision_id"], r.status) for r in sent] == [(turn.id, "sent")]
    with app.app_context(), session_scope() as s:
        row = s.get(Decision, turn.id)
        deadline = row.deadline_at.replace(tzinfo=None) - T0.replace(tzinfo=None)
        assert deadline.total_seconds() > 40 * 3600  # a person's 48 hours, not a pause
    at(frozen, 2)  # the bot's hour has passed: nobody plays Dee's seat
    assert tick(app)["bots"] == 0
    assert turn.id in [d.id for d in open_decisions(app, created.game_id)]
    with app.app_context(), pytest.raises(WrongState):
        services.set_bot(created.admin_token, 1 if turn.position == 2 else 2, None)


def test_the_host_page_and_emails_say_a_bot_plays_and_offer_no_reminder_for_it(
        app, client, frozen):
    created = started(app, [ANN, bot("easy"), bot("easy", "Rex")])
    (first,) = open_decisions(app, created.game_id)
    assert first.position == 2  # Rex bids first with this seed
    html = client.get(f"/admin/{created.admin_token}").get_data(as_text=True)
    assert "Rex (bot) : bid for the conch a bot plays this" in text_of(html, "waiting")
    assert "/remind" not in html and "Remind now" not in html
    ann_page = client.get(path_of(Inbox(app).to(ANN.email)[-1].link("/g/"))).get_data(
        as_text=True)
    assert "Rex (bot): bid for the conch – a bot plays this" in text_of(ann_page, "waiting")
    (started_mail,) = Inbox(app).to(ANN.email, "game_started")
    assert "Rex (bot): bid for the conch, a bot plays this" in started_mail.text
    assert "a bot plays this" in started_mail.html
