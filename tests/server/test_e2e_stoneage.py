"""Stone Age end to end: whole games for 2, 3 and 4 players played only through emails
received by a real SMTP server and the pages their links open, over real HTTP.

As in test_e2e.py (Cavemen): the host creates the game on the home page, confirms it from
the email, the others accept; every decision email is answered by the heuristic bot's
choice, with its one-click link when the email has one (a place's row has a link for
each number of people, and its confirmation page lets the player change the number),
else with the game page's form (filled in as a person would: a place and a number,
ticked tools, resource counts). When
the page of a move carries the same player's next decision, the player answers it there at
once, and no email is ever sent for it. The test reads the database only to let the bot
see the board and to check the bookkeeping. It prints the emails a player received per
round and per game (the email load the README quotes).
"""

from __future__ import annotations

import random
from collections import Counter
from urllib.parse import urljoin

import pytest
from sqlmodel import select

from engine.core import Action, format_action
from engine.stoneage import BOTS
from pbem import services
from pbem.db import session_scope
from pbem.models import Decision, Move, Outbox
from tests.server.helpers import (
    PLAYERS,
    forms,
    game_state,
    new_game_data,
    only_form,
    page_form_data,
    text_of,
    token_of,
    token_row,
)
from tests.server.test_e2e import games_in, live  # noqa: F401 (fixture)

MAX_DECISIONS = 3000
DEE = services.PlayerIn("Dee", "dee@example.com", "en", "UTC")
CASES = {2: 3, 3: 5, 4: 8}  # players -> a game seed


@pytest.mark.parametrize("players", sorted(CASES))
def test_a_whole_stone_age_game_by_email(live, players: int, monkeypatch) -> None:  # noqa: F811
    http, smtp, app = live.http, live.smtp, live.app
    people = [*PLAYERS, DEE][:players]
    emails = {p.email for p in people}
    seed = CASES[players]
    monkeypatch.setattr(services.games, "new_seed", lambda given: seed if given is None else given)
    app.config["FOLLOW_UP_MINUTES"] = 10  # as deployed: a follow-up waits on the page

    home = http.get(live.base + "/", timeout=30)
    (form,) = [f for f in forms(home.text) if f.attrs.get("id") == "new-game"]
    assert "stoneage" in form.radios["game"]
    created = http.post(urljoin(live.base, form.action), timeout=30,
                        data=new_game_data(form, people, title="Stones", game="stoneage"))
    assert created.status_code == 200 and "Check your email" in created.text
    (host_mail,) = live.mails_until(1)
    assert "Stone Age" in host_mail.text
    live.confirm(live.link(host_mail, "/host/confirm/"))
    for invitation in live.mails_until(players - 1):
        assert "a game of Stone Age" in invitation.text
        assert "You accepted" in live.confirm(live.links(invitation, "/invite/")[0]).text
    (game,) = games_in(app)
    assert game.status == "active" and game.engine == "stoneage"

    rng = random.Random(seed)
    bot = BOTS["heuristic"]
    results, decided, via, mails_to = [], [], Counter(), Counter()
    while len(results) < players:
        assert len(decided) < MAX_DECISIONS, "the game does not end"
        mail = live.new_mail()
        assert mail.to_addr in emails
        mails_to[mail.to_addr] += 1
        if mail.template == "result":
            results.append(mail)
            continue
        if mail.template != "decision":
            assert mail.template == "game_started", mail.subject
            continue
        decision = _addressee(app, game.id, mail, people)
        page = _answer_mail(live, mail, decision, bot, rng, via)
        decided.append(decision.id)
        # The same player's next decision, on the page of the move: answered there.
        while (form := _decision_form(page)) is not None:
            decision = _open_decision(app, game.id, int(form.hidden["decision_id"]))
            page = _answer_on_page(live, page, form, decision, bot, rng)
            via["page, at once"] += 1
            decided.append(decision.id)

    (game,) = games_in(app)
    assert game.status == "finished"
    state = game_state(app, game.id)[1]
    winners = [people[w].name for w in state.winners]
    for m in results:
        head = m.headline  # the reader's place, then who won
        won = m.to_addr in [people[w].email for w in state.winners]
        assert head.startswith("Game over: you won" if won else "Game over: you "), head
        assert all(w in m.text.split("\n")[1] for w in winners), m.text[:200]
        # the ranking comes first, everyone's final scoring broken down (the reader as
        # "You"), before the final board
        ranking = m.text.split("The final board")[0]
        for p in people:
            assert (". You: " if p.email == m.to_addr else f". {p.name}: ") in ranking
        assert ranking.count("points during the game") == players

    with app.app_context(), session_scope() as s:
        rows = list(s.exec(select(Decision).where(Decision.game_id == game.id)))
        moves = list(s.exec(select(Move).where(Move.game_id == game.id)))
        outbox = list(s.exec(select(Outbox).where(Outbox.game_id == game.id,
                                                  Outbox.template == "decision")))
    assert sorted(d.id for d in rows) == sorted(decided)
    assert all(d.closed_by == "player" for d in rows)
    assert len(moves) == len(rows) and {m.source for m in moves} == {"player"}
    # Every choice the bot makes from an email is one of its links now (a number of people
    # is chosen on the link's confirmation page): the form on the game page is used for
    # the decisions that follow at once (and for any choice an email would not offer).
    assert via["one-click"] > 0 and via["one-click, a number chosen"] > 0
    assert via["page, at once"] > 0
    # A decision answered at once on the page never got its email: it waits
    # FOLLOW_UP_MINUTES (and is dropped when due, as the decision has closed).
    held_back = [o for o in outbox if o.status != "sent"]
    assert len(held_back) == via["page, at once"]
    assert all(o.status == "pending" and (o.next_attempt_at - o.created_at).total_seconds()
               >= 60 * app.config["FOLLOW_UP_MINUTES"] for o in held_back)

    rounds = state.round
    per_game = sum(mails_to.values()) / players
    print(f"\nStone Age, {players} players, {rounds} rounds: {per_game:.1f} emails per "
          f"player per game ({per_game / rounds:.2f} per round); decisions {len(rows)} "
          f"({len(rows) / players / rounds:.2f} per player per round); answered: "
          f"{dict(via)}")
    assert live.read == len(smtp.mails)
    assert {m.subject for m in smtp.mails} == {"Stones"}
    for m in smtp.mails:
        assert sorted(set(m.text_links())) == sorted(set(m.html_links()))


def _answer_mail(player, mail, decision: Decision, bot, rng: random.Random,
                 via: Counter) -> str:
    """Click the one-click link of the bot's choice, else fill in the game page's form;
    returns the page the move answered with."""
    state = game_state(player.app, decision.game_id)[1]
    choice = bot(state, decision.position, rng)
    bound_to = {url: Action.from_json(token_row(player.app, token_of(url)).action)
                for url in player.links(mail, "/a/")}
    exact = [url for url, bound in bound_to.items() if bound == choice]
    for url in exact or list(bound_to):
        bound = bound_to[url]
        if bound != choice and not _same_place(bound, choice):
            continue
        page = player.http.get(url, timeout=30)
        assert page.status_code == 200, page.text
        form = only_form(page.text)
        offered = form.radios.get("choice", [])  # a place link asks how many people
        if offered and format_action(choice) not in offered:
            continue
        data = form.data(choice=format_action(choice)) if offered else form.data()
        resp = player.http.post(url, data=data, timeout=30)
        assert resp.status_code == 200, resp.text
        recorded = text_of(resp.text, "recorded")
        # the confirmation page named the move (places and resources printed), the number
        # of people of a place's link chosen already
        assert recorded.startswith("Recorded: ") and recorded[10:] in page.text, recorded
        if choice.kind == "place" and bound == choice:
            assert form.checked.get("choice", format_action(choice)) == format_action(choice)
        via["one-click, a number chosen" if offered else "one-click"] += 1
        return resp.text
    page = player.http.get(player.link(mail, "/g/"), timeout=30)
    assert page.status_code == 200
    via["page"] += 1
    return _post_form(player, page.text, _decision_form(page.text), decision, choice)


def _same_place(bound: Action, choice: Action) -> bool:
    """A placement link for the place ``choice`` names (its page offers the numbers)."""
    return bound.kind == choice.kind == "place" and bound.get("at") == choice.get("at")


def _answer_on_page(player, html: str, form, decision: Decision, bot,
                    rng: random.Random) -> str:
    state = game_state(player.app, decision.game_id)[1]
    return _post_form(player, html, form, decision, bot(state, decision.position, rng))


def _post_form(player, html: str, form, decision: Decision, choice: Action) -> str:
    assert form is not None and form.hidden["decision_id"] == str(decision.id), html
    data = form.data(**page_form_data(choice, decision.kind, form))
    resp = player.http.post(urljoin(player.base, form.action), data=data, timeout=30)
    assert resp.status_code == 200, (choice, data, text_of(resp.text, "error"))
    assert text_of(resp.text, "recorded").startswith("Recorded:")
    return resp.text


def _addressee(app, game_id: str, mail, people) -> Decision:
    """The email is about an open decision of the seat it was sent to."""
    with app.app_context(), session_scope() as s:
        row = s.get(Decision, mail.decision_id)
    assert row is not None and row.game_id == game_id and row.closed_at is None, mail.subject
    assert people[row.position].email == mail.to_addr
    return row


def _decision_form(html: str):
    found = [f for f in forms(html) if f.attrs.get("id") == "decision"]
    return found[0] if found else None


def _open_decision(app, game_id: str, decision_id: int) -> Decision:
    with app.app_context(), session_scope() as s:
        row = s.get(Decision, decision_id)
        assert row is not None and row.game_id == game_id and row.closed_at is None
        return row
