"""The daily digest (issue 20, points 3 and 7), under a frozen clock: an address that
chose it gets no email per turn but one email a day at its hour in its zone (08:00 in
Berlin and 08:00 in Los Angeles on the same day), listing every game waiting for it with
the link that takes each decision; none on a day when nothing waits, never two a day.
Both databases."""

from __future__ import annotations

import dataclasses

from sqlmodel import select

from engine.core import Action
from pbem.db import session_scope
from pbem.kinds import OutboxStatus
from pbem.models import Outbox
from pbem.services.digest import NOTHING_WAITS
from tests.server.helpers import Inbox, Table, forms, only_form, path_of, token_of, token_row
from tests.server.test_address_settings import save, unsubscribe_link
from tests.server.timekit import ANN, BOB, CY, at, moves, new_game, tick


def digests(app, email: str) -> list[Outbox]:
    with app.app_context(), session_scope() as s:
        found = s.exec(select(Outbox).where(Outbox.template == "digest",
                                            Outbox.rcpt == email).order_by(Outbox.id)).all()
        for row in found:
            s.expunge(row)
        return list(found)


def sent_digests(app, email: str) -> list:
    return [m for m in Inbox(app).all() if m.to_addr == email and m.template == "digest"]


def first_player_passes(app, client, created) -> None:
    table = Table(app, client, Inbox(app), created.game_id, created.admin_token)
    table.play_on_page(table.open(), Action.of("pass"))


def test_a_digest_at_eight_in_berlin_and_at_eight_in_los_angeles(app, client, frozen):
    # T0: Monday 09:00 UTC, 10:00 in Berlin, 01:00 in Los Angeles
    first = new_game(app)  # Cy bids first, then Ann
    second = new_game(app, players=[ANN, CY, BOB])  # Bob bids first here
    save(client, unsubscribe_link(app, first.game_id, ANN.email), delivery="digest",
         digest_hour="8", timezone="Europe/Berlin")
    save(client, unsubscribe_link(app, second.game_id, BOB.email), delivery="digest",
         digest_hour="8", timezone="America/Los_Angeles")
    first_player_passes(app, client, first)  # now Ann's turn: no email of its own
    tick(app)
    assert [m for m in Inbox(app).all() if m.to_addr == ANN.email
            and m.template == "decision"] == []
    assert digests(app, ANN.email) == [] and digests(app, BOB.email) == []  # next at 08:00

    at(frozen, 6.9)  # Monday 15:54 UTC, 07:54 in Los Angeles
    tick(app)
    assert digests(app, BOB.email) == []
    at(frozen, 7.05)  # 08:03 in Los Angeles, the first 08:00 there since Bob chose it
    tick(app)
    assert len(sent_digests(app, BOB.email)) == 1 and digests(app, ANN.email) == []

    at(frozen, 21.9)  # Tuesday 06:54 UTC, 07:54 in Berlin
    tick(app)
    assert digests(app, ANN.email) == []
    at(frozen, 22.05)  # Tuesday 08:03 in Berlin
    tick(app)
    (mail,) = sent_digests(app, ANN.email)
    assert mail.subject == "Your daily digest"
    assert mail.headline == "1 game waits for you: next deadline Wed 10:00"
    assert "Your turn: bid for the conch, until" in mail.text
    page = client.get(path_of(mail.link("/g/")))
    assert page.status_code == 200 and 'id="decision"' in page.get_data(as_text=True)
    at(frozen, 22.5)
    tick(app)
    assert len(digests(app, ANN.email)) == 1  # never two a day
    assert len(digests(app, BOB.email)) == 1  # 00:30 in Los Angeles

    at(frozen, 31.05)  # Tuesday 16:03 UTC: 08:03 in Los Angeles, the same day
    tick(app)
    first_bob, second_bob = sent_digests(app, BOB.email)
    assert "Your turn: bid for the conch" in second_bob.text
    assert len(sent_digests(app, ANN.email)) == 1


def test_the_digest_offers_one_click_choices_that_play_exactly_the_one_clicked(
        app, client, frozen):
    created = new_game(app)  # Cy bids first, then Ann
    save(client, unsubscribe_link(app, created.game_id, ANN.email), delivery="digest",
         digest_hour="8", timezone="Europe/Berlin")
    first_player_passes(app, client, created)
    at(frozen, 22.05)  # Tuesday 08:03 in Berlin
    tick(app)
    (mail,) = sent_digests(app, ANN.email)
    bound = {url: Action.from_json(token_row(app, token_of(url)).action)
             for url in mail.action_links()}
    assert len(bound) >= 2 and Action.of("pass") in bound.values()
    assert "More choices, and the whole board:" in mail.text
    assert all(url in mail.html_links() for url in bound)  # the HTML part has them too
    url, action = next((u, a) for u, a in bound.items() if a.kind == "bid")
    form = only_form(client.get(path_of(url)).get_data(as_text=True))
    assert client.post(path_of(url), data=form.data()).status_code == 200
    (move,) = [m for m in moves(app, created.game_id) if m.position == 0]
    assert Action.from_json(move.action) == action
    other = next(u for u, a in bound.items() if a != action)  # the decision is taken
    assert forms(client.get(path_of(other)).get_data(as_text=True)) == []
    client.post(path_of(other), data=form.data())  # the sig of an earlier form
    assert len([m for m in moves(app, created.game_id) if m.position == 0]) == 1


def test_the_digest_tells_what_happened_since_the_last_email_once(app, client, frozen):
    created = new_game(app)  # Cy bids first, then Ann
    save(client, unsubscribe_link(app, created.game_id, ANN.email), delivery="digest",
         digest_hour="8", timezone="Europe/Berlin", news="turn")
    first_player_passes(app, client, created)
    at(frozen, 22.05)  # Tuesday 08:03 in Berlin
    tick(app)
    (mail,) = sent_digests(app, ANN.email)
    told = mail.text.split("Since your last email:")[1]
    assert "Cy" in told.splitlines()[1] and "pass" in told.splitlines()[1].lower()
    assert "Since your last email" in mail.html
    at(frozen, 22.05 + 24)  # nothing happened meanwhile: the next digest tells nothing
    tick(app)
    first, second = sent_digests(app, ANN.email)
    assert "Since your last email" not in second.text and "Since your last email" not in second.html


def test_the_digest_in_german(app, client, frozen):
    anna = dataclasses.replace(ANN, language="de")
    created = new_game(app, players=[anna, BOB, CY])
    save(client, unsubscribe_link(app, created.game_id, ANN.email), delivery="digest",
         digest_hour="8", timezone="Europe/Berlin")
    first_player_passes(app, client, created)
    at(frozen, 22.05)
    tick(app)
    (mail,) = sent_digests(app, ANN.email)
    assert "Weitere Möglichkeiten" in mail.text and "Passen" in mail.text, mail.text
    assert len(mail.action_links()) >= 2


def test_no_digest_on_a_day_when_nothing_waits(app, client, frozen):
    created = new_game(app)  # Cy decides: nothing waits for Ann
    save(client, unsubscribe_link(app, created.game_id, ANN.email), delivery="digest",
         digest_hour="8", timezone="Europe/Berlin")
    at(frozen, 22.05)
    tick(app)
    (row,) = digests(app, ANN.email)
    assert row.status == OutboxStatus.SKIPPED and row.last_error == NOTHING_WAITS
    assert sent_digests(app, ANN.email) == []
    at(frozen, 22.05 + 24)
    tick(app)
    assert len(digests(app, ANN.email)) == 2  # tried again the next day


def test_the_digest_shows_every_message_to_the_table_first_and_whole(app, client, frozen):
    """Twelve messages from Bob since Ann's last email: her digest shows all of them, in
    order, before the rest of the news (ten lines at most)."""
    from pbem.tokens import form_signature
    from tests.server.helpers import SECRET
    from tests.server.timekit import page_of

    created = new_game(app)  # Cy bids first, then Ann
    save(client, unsubscribe_link(app, created.game_id, ANN.email), delivery="digest",
         digest_hour="8", timezone="Europe/Berlin")
    page = page_of(Inbox(app), BOB.email)
    sent = [f"message {i} from Bob" for i in range(1, 13)]
    for text in sent:
        resp = client.post(page + "/say", data={
            "sig": form_signature(SECRET, page.rsplit("/", 1)[1]), "text": text})
        assert resp.status_code == 200
    first_player_passes(app, client, created)
    at(frozen, 22.05)  # Tuesday 08:03 in Berlin
    tick(app)
    (mail,) = sent_digests(app, ANN.email)
    at_ = [mail.text.index(f"Bob: {t}\n") for t in sent]
    assert at_ == sorted(at_)
    assert mail.text.index("Said at the table since your last email:") < at_[0]
    assert at_[-1] < mail.text.index("Since your last email:")
    assert all(f"Bob: {t}" in mail.html for t in sent)
