"""One visit settles one turn: when a player's move opens their own next decision, the page
of the move shows it at once, and its email waits FOLLOW_UP_MINUTES. It goes out only if
the player leaves the decision open that long; a decision answered on the page is never
mailed (the waiting email is dropped when due). Played on Stone Age, where a player often
decides several times in a row (which place to use next, tools after a roll, paying)."""

from __future__ import annotations

from datetime import timedelta

from freezegun import freeze_time
from sqlmodel import select

from pbem.db import session_scope
from pbem.models import Outbox, utcnow
from tests.server.conftest import start_game
from tests.server.helpers import Inbox, Table, forms, text_of

MINUTES = 10


def follow_up_table(make_app) -> Table:
    app = make_app(FOLLOW_UP_MINUTES=MINUTES)
    created = start_game(app, seed=5, game="stoneage")
    return Table(app, app.test_client(), Inbox(app), created.game_id, created.admin_token,
                 bot_seed=5)


def play_until_a_follow_up(table: Table):
    """Play the open decisions until a move's page carries the same player's next one."""
    for _ in range(200):
        decision = table.open()
        resp = table.play_on_page(decision, table.bot_choice(decision))
        html = resp.get_data(as_text=True)
        found = [f for f in forms(html) if f.attrs.get("id") == "decision"]
        if found:
            return decision, found[0], html
    raise AssertionError("no follow-up decision in 200 moves")


def outbox_row(table: Table, decision_id: int) -> Outbox:
    with table.app.app_context(), session_scope() as s:
        (row,) = [o for o in s.exec(select(Outbox).where(Outbox.template == "decision"))
                  if o.context.get("decision_id") == decision_id]
        return row


def mails_for(table: Table, decision_id: int) -> list:
    return [m for m in table.inbox.all() if m.decision_id == decision_id]


def test_a_follow_up_answered_on_the_page_is_never_mailed(make_app) -> None:
    table = follow_up_table(make_app)
    before, form, html = play_until_a_follow_up(table)
    assert text_of(html, "recorded").startswith("Recorded:")
    follow_up = table.open()
    assert str(follow_up.id) == form.hidden["decision_id"]
    assert follow_up.position == before.position  # the same player, at once
    row = outbox_row(table, follow_up.id)
    assert row.status == "pending"
    assert row.next_attempt_at - row.created_at == timedelta(minutes=MINUTES)
    assert mails_for(table, follow_up.id) == []  # the clock ran: not due yet
    table.play_on_page(follow_up, table.bot_choice(follow_up))  # answered on the page
    with freeze_time(utcnow() + timedelta(minutes=MINUTES + 1)):
        assert mails_for(table, follow_up.id) == []
    row = outbox_row(table, follow_up.id)
    assert row.status == "skipped" and "closed" in row.last_error


def test_a_follow_up_left_open_is_mailed_after_the_wait(make_app) -> None:
    table = follow_up_table(make_app)
    before, form, _ = play_until_a_follow_up(table)
    follow_up = table.open()
    with freeze_time(utcnow() + timedelta(minutes=MINUTES - 1)):
        assert mails_for(table, follow_up.id) == []
    with freeze_time(utcnow() + timedelta(minutes=MINUTES + 1)):
        (mail,) = mails_for(table, follow_up.id)
    assert mail.to_addr == table.seats[before.position].email
    assert outbox_row(table, follow_up.id).status == "sent"


def test_other_players_decisions_are_mailed_at_once(make_app) -> None:
    """Only the mover's own next decision waits; a decision of anyone else goes out now."""
    table = follow_up_table(make_app)
    for _ in range(30):
        decision = table.open()
        table.play_on_page(decision, table.bot_choice(decision))
        nxt = table.open()
        if nxt.position != decision.position:
            assert len(mails_for(table, nxt.id)) == 1
            row = outbox_row(table, nxt.id)
            assert row.status == "sent" and row.sent_at - row.created_at < timedelta(minutes=1)
            return
    raise AssertionError("the turn never passed to another player")
