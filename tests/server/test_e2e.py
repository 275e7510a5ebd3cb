"""THE END-TO-END TEST: a whole 3-player game played only through emails received by a
real SMTP server and the links in them, over real HTTP.

The app runs in a thread behind werkzeug's server on a free loopback port; the clock's
mail loop runs in another thread and sends by SMTP to an aiosmtpd server (requests only
queue mail, as in production).
The host creates the game with the home page form, confirms it from the email, the two
others accept their invitations, and then every decision email is answered by the link
a player would click: the one-click link of the heuristic bot's choice, or the game page
form when that choice has no one-click link. The test reads the database only to let the
bot see the board and to check the bookkeeping afterwards.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from urllib.parse import urljoin

import pytest
import requests
from sqlmodel import select
from werkzeug.serving import make_server

from engine.cavemen.bots import heuristic_bot
from engine.core import Action
from pbem import clock, services
from pbem.db import session_scope
from pbem.models import Decision, Game, Move
from tests.pgcluster import free_port
from tests.server.helpers import (
    PLAYERS,
    forms,
    game_state,
    new_game_data,
    only_form,
    open_decisions,
    page_form_data,
    text_of,
    token_of,
    token_row,
)

SEED = 114  # a game seed (and bot seed) with a short game: 84 decisions in self-play
MAX_DECISIONS = 1000


@pytest.fixture
def live(make_app, smtp, monkeypatch):
    """The app served over HTTP, mailing through a real SMTP server."""
    monkeypatch.setattr(services.games, "new_seed", lambda seed: SEED if seed is None else seed)
    smtp.start()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    app = make_app(TESTING=False, BASE_URL=base, MAIL_BACKEND="smtp", SMTP_HOST="127.0.0.1",
                   SMTP_PORT=smtp.port, SMTP_TIMEOUT=10, MAIL_POLL_INTERVAL=0.02)
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    mailer, stop = clock.start_mail_thread(app)
    try:
        with requests.Session() as http:
            yield Player(app, base, http, smtp)
    finally:
        stop.set()
        mailer.join(10)
        server.shutdown()
        thread.join(10)
        server.server_close()


class Player:
    """Clicks links from emails the way a person with a browser would."""

    def __init__(self, app, base, http, smtp) -> None:
        self.app, self.base, self.http, self.smtp = app, base, http, smtp
        self.read = 0  # emails handled so far, in order of arrival

    def links(self, mail, prefix: str) -> list[str]:
        return mail.under(prefix)

    def link(self, mail, prefix: str) -> str:
        (url,) = self.links(mail, prefix)
        return url

    def confirm(self, url: str) -> requests.Response:
        """Open a link (GET shows a confirmation page) and press its button."""
        page = self.http.get(url, timeout=30)
        assert page.status_code == 200, page.text
        resp = self.http.post(url, data=only_form(page.text).data(), timeout=30)
        assert resp.status_code == 200, resp.text
        return resp

    def new_mail(self):
        """The next email in order of arrival (waiting up to 10 s for the SMTP server)."""
        with self.smtp.arrived:
            assert self.smtp.arrived.wait_for(lambda: self.read < len(self.smtp.mails),
                                              timeout=10), "no further email arrived"
        mail = self.smtp.mails[self.read]
        self.read += 1
        return mail

    def mails_until(self, count: int) -> list:
        return [self.new_mail() for _ in range(count)]


def test_a_whole_game_by_email(live):
    http, smtp, app = live.http, live.smtp, live.app
    ann, bob, cy = PLAYERS
    emails = {p.email for p in PLAYERS}

    # The host fills in the form on the home page.
    home = http.get(live.base + "/", timeout=30)
    (form,) = [f for f in forms(home.text) if f.attrs.get("id") == "new-game"]
    created = http.post(urljoin(live.base, form.action),
                        data=new_game_data(form, PLAYERS, title="E2E"), timeout=30)
    assert created.status_code == 200 and "Check your email" in created.text

    # Only the host hears of it, until the host confirms.
    (host_mail,) = live.mails_until(1)
    assert (host_mail.to_addr, host_mail.template) == (ann.email, "host_confirm")
    live.confirm(live.link(host_mail, "/host/confirm/"))

    # Bob and Cy accept; the game starts.
    invitations = live.mails_until(2)
    assert sorted((m.to_addr, m.template) for m in invitations) == [
        (bob.email, "invitation"), (cy.email, "invitation")]
    for invitation in invitations:
        accept = live.links(invitation, "/invite/")[0]
        assert "You accepted" in live.confirm(accept).text
    (game,) = games_in(app)
    assert game.status == "active" and game.seed == SEED

    # Play: answer each decision email as it arrives.
    rng = random.Random(SEED)
    results, decided, via = [], [], Counter()
    while len(results) < len(PLAYERS):
        assert len(decided) < MAX_DECISIONS, "the game does not end"
        mail = live.new_mail()
        assert mail.to_addr in emails
        if mail.template == "result":
            results.append(mail)
            continue
        if mail.template != "decision":
            assert mail.template == "game_started", mail.subject
            continue
        decision = check_addressee(app, game.id, mail)
        decided.append(decision.id)
        state = game_state(app, game.id)[1]
        choice = heuristic_bot(state, decision.position, rng)
        via[_answer(live, mail, decision, choice)] += 1

    # The game finished; everyone got the result, naming the winner.
    (game,) = games_in(app)
    assert game.status == "finished"
    winner = game_state(app, game.id)[1].winner
    assert sorted(m.to_addr for m in results) == sorted(emails)
    for m in results:
        if m.to_addr == PLAYERS[winner].email:
            assert m.headline == "Game over: you won"
        else:
            assert m.headline.startswith("Game over: you came "), m.headline
        assert f"{PLAYERS[winner].name} invented Fire and wins the game." in m.text

    # Every decision was asked by exactly one email to its player, and played by them.
    with app.app_context(), session_scope() as s:
        rows = list(s.exec(select(Decision).where(Decision.game_id == game.id)))
        moves = list(s.exec(select(Move).where(Move.game_id == game.id)))
    assert sorted(d.id for d in rows) == sorted(decided)
    assert all(d.closed_by == "player" for d in rows)
    assert len(moves) == len(rows) and {m.source for m in moves} == {"player"}
    assert via["one-click"] > 0 and via["page"] > 0  # both ways of answering were used

    # One conversation per player for the whole game: the same subject on every email,
    # each answering the one before it; every Message-ID unique; both parts agree.
    assert live.read == len(smtp.mails)
    assert len({m.message_id for m in smtp.mails}) == len(smtp.mails)
    assert {m.subject for m in smtp.mails} == {"E2E"}
    for addr in emails:
        mine = [m for m in smtp.mails if m.to_addr == addr]
        assert mine[0].msg["In-Reply-To"] is None
        for before, m in zip(mine, mine[1:], strict=False):
            assert m.msg["In-Reply-To"] == before.message_id
            assert m.msg["References"].split()[0] == mine[0].message_id
    for m in smtp.mails:
        assert sorted(set(m.text_links())) == sorted(set(m.html_links()))
    assert all(rcpts == [m.to_addr] for rcpts, m in zip(smtp.recipients, smtp.mails,
                                                         strict=True))


def games_in(app) -> list[Game]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Game)))


def check_addressee(app, game_id: str, mail) -> Decision:
    """The email is about an open decision of the seat it was sent to."""
    open_rows = {d.id: d for d in open_decisions(app, game_id)}
    assert mail.decision_id in open_rows, (mail.subject, list(open_rows))
    decision = open_rows[mail.decision_id]
    assert PLAYERS[decision.position].email == mail.to_addr
    return decision


def _answer(live: Player, mail, decision: Decision, choice: Action) -> str:
    """Click the one-click link for ``choice``, else use the game page's full form."""
    for url in live.links(mail, "/a/"):
        if Action.from_json(token_row(live.app, token_of(url)).action) == choice:
            resp = live.confirm(url)
            assert text_of(resp.text, "recorded").startswith("Recorded:")
            return "one-click"
    page = live.http.get(live.link(mail, "/g/"), timeout=30)
    assert page.status_code == 200
    (form,) = [f for f in forms(page.text) if f.attrs.get("id") == "decision"]
    assert form.hidden["decision_id"] == str(decision.id)
    data = form.data(**page_form_data(choice, decision.kind))
    resp = live.http.post(urljoin(live.base, form.action), data=data, timeout=30)
    assert resp.status_code == 200, resp.text
    return "page"
