"""Stone Age placement as clear in the email as on the page: every place is a row that
names the numbers of people it takes and the average yield of each, with a link for each
number, whose confirmation page has that number chosen and offers the others (the POST
records only a number the page offered); a card or building the player cannot pay for
says so in the email (without a link), on the game page and on the confirmation page; the
turn email and the boards announce the coming feeding (Food needed, what is short, what
resources and the 10 points do). Emails go through a real SMTP server, in English and
German; positions are set by writing the game's state, then asking for a fresh turn email
with the host's "remind now"."""

from __future__ import annotations

import html as html_lib
import json
import re

import pytest
from sqlmodel import select

from engine.core import Action
from pbem import mail, services
from pbem.db import session_scope
from pbem.models import Game, Move
from tests.server.conftest import GAME_SEED
from tests.server.helpers import (
    PLAYERS,
    Mail,
    forms,
    game_state,
    open_decisions,
    path_of,
    snapshot,
    text_of,
)

FOREST = {
    "en": "Forest: about 1, 2, 3, 4 or 5 Wood (1 die a person, 1 per 3 pips)",
    "de": "Wald: etwa 1, 2, 3, 4 oder 5 Holz (1 Würfel je Person, 1 je 3 Augen)",
}
HUNT = {
    "en": "Hunting grounds: about 1, 3, 5, 7 or 8 Food",
    "de": "Jagdgründe: etwa 1, 3, 5, 7 oder 8 Nahrung",
}
HUT = {"en": "Hut: your tribe grows by 1 person",
       "de": "Hütte: dein Stamm wächst um 1 Person"}
CARD_UNPAYABLE = {
    "en": "; you cannot pay for it now: it costs {cost} resources, you have {have}",
    "de": "; du kannst sie jetzt nicht bezahlen: sie kostet {cost} Rohstoffe, du hast {have}",
}
BUILDING_UNPAYABLE = {"en": "; you cannot pay for it now with your resources",
                      "de": "; mit deinen Rohstoffen kannst du das jetzt nicht bezahlen"}
ENOUGH = {
    "en": "Feeding at the end of this round: 5 people eat 5 Food; you have 12 and "
          "agriculture adds 0: enough.",
    "de": "Ernährung am Ende dieser Runde: 5 Personen essen 5 Nahrung; du hast 12 und der "
          "Ackerbau bringt 0: genug.",
}
SHORT = {
    "en": "Feeding at the end of this round: 7 people eat 7 Food; you have 1 and "
          "agriculture adds 1, so you are 5 Food short. Resources pay what is missing when "
          "you feed, 1 each (you have 2); if they cannot pay it all, you lose 10 points.",
    "de": "Ernährung am Ende dieser Runde: 7 Personen essen 7 Nahrung; du hast 1 und der "
          "Ackerbau bringt 1, also fehlen dir 5 Nahrung. Beim Ernähren zahlen Rohstoffe, was "
          "fehlt, je 1 (du hast 2); reichen sie nicht für alles, verlierst du 10 Punkte.",
}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def smtp_app(make_app, smtp):
    """The app mailing through a real SMTP server."""
    smtp.start()
    return make_app(MAIL_BACKEND="smtp", SMTP_HOST="127.0.0.1", SMTP_PORT=smtp.port,
                    SMTP_TIMEOUT=10)


def start(app, lang: str = "en") -> services.Created:
    """A 3-player Stone Age game in ``lang``; Cy (seat 2) places first."""
    players = [services.PlayerIn(p.name, p.email, lang, p.timezone) for p in PLAYERS]
    with app.app_context():
        created = services.create_game("stoneage", players, seed=GAME_SEED,
                                       confirm_by_email=False, start=True)
        mail.deliver_due()
    return created


def placer(app, game_id: str):
    (decision,) = open_decisions(app, game_id)
    assert decision.kind == "place" and decision.position == 2
    return decision


def turn_email(smtp, addr: str) -> Mail:
    """The latest turn email to ``addr`` (a reminder is the turn email again)."""
    return [m for m in smtp.to(addr) if m.template in ("decision", "reminder")][-1]


def set_board(app, game_id: str, seat: int, **changes) -> None:
    """Put the game in a position: the board of ``seat`` changed as given."""
    mod, state = game_state(app, game_id)
    boards = list(state.boards)
    boards[seat] = boards[seat]._replace(**changes)
    state = state._replace(boards=tuple(boards))
    mod.check_invariants(state)
    with app.app_context(), session_scope() as s:
        s.get(Game, game_id).state = json.dumps(mod.to_json(state))


def remind(app, created: services.Created, decision) -> None:
    """The host's "remind now": a fresh turn email drawn from the position as it is."""
    with app.app_context():
        services.remind_now(created.admin_token, decision.id)
        mail.deliver_due()


def readable(html: str) -> str:
    """The HTML part as a reader sees it: tags gone, entities decoded, blanks collapsed."""
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def choice_lines(mail_: Mail) -> list[str]:
    """The rows of the text part's choices ("  * ..." lines): a place each."""
    return [line[4:] for line in mail_.text.splitlines() if line.startswith("  * ")]


def count_links(mail_: Mail, row: str) -> dict[str, str]:
    """The links under the text part's row that begins with ``row``, by their words
    ("2 people")."""
    lines = mail_.text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  * " + row))
    out = {}
    for line in lines[start + 1:]:
        if not line.startswith("      "):
            break
        words, url = line.strip().split(": ", 1)
        out[words] = url
    return out


# --------------------------------------------------------------------------- the email


@pytest.mark.parametrize("lang", ["en", "de"])
def test_each_place_row_names_its_numbers_of_people_and_the_yield_of_each(smtp_app, smtp,
                                                                          lang):
    start(smtp_app, lang)
    email = turn_email(smtp, PLAYERS[2].email)
    lines = choice_lines(email)
    assert FOREST[lang] in lines
    assert any(line.startswith(HUNT[lang]) for line in lines)
    assert HUT[lang] in lines  # a place that takes one number says just that
    people = {"en": ["1 person", "2 people", "3 people", "4 people", "5 people"],
              "de": ["1 Person", "2 Personen", "3 Personen", "4 Personen", "5 Personen"]}
    assert list(count_links(email, FOREST[lang])) == people[lang]
    page = readable(email.html)
    assert all(f"×{n} ≈{about}" in page for n, about in enumerate((1, 2, 3, 4, 5), 1))
    # a link for each number at the five resource places and one for each village place;
    # no card or building (nothing to pay with yet); the same links in both parts
    assert len(email.action_links()) == 5 * 5 + 3
    assert sorted(set(email.text_links())) == sorted(set(email.html_links()))


@pytest.mark.parametrize("lang", ["en", "de"])
def test_a_card_or_building_the_player_cannot_pay_for_says_so_in_the_email(smtp_app, smtp,
                                                                           lang):
    created = start(smtp_app, lang)
    decision = placer(smtp_app, created.game_id)
    set_board(smtp_app, created.game_id, 2, res=(2, 0, 0, 0))  # two Wood
    remind(smtp_app, created, decision)
    email = turn_email(smtp, PLAYERS[2].email)
    lines = choice_lines(email)
    cards = [line for line in lines if line.startswith(
        ("The civilization card costing", "Die Zivilisationskarte"))]
    warning = CARD_UNPAYABLE[lang]
    assert [warning.format(cost=c, have=2) in line for c, line in enumerate(cards, 1)] == [
        False, False, True, True]
    assert not any("; you cannot" in line or "; du kannst" in line for line in cards[:2])
    assert [len(count_links(email, line)) for line in cards] == [1, 1, 0, 0]
    buildings = [line for line in lines if BUILDING_UNPAYABLE[lang] in line]
    assert len(buildings) == 3  # two Wood pay none of the three open buildings
    page = readable(email.html)
    why = warning.format(cost=3, have=2)[2:]
    assert why[:1].upper() + why[1:] in page
    assert BUILDING_UNPAYABLE[lang][2:3].upper() + BUILDING_UNPAYABLE[lang][3:] in page


@pytest.mark.parametrize("lang", ["en", "de"])
def test_the_turn_email_and_its_board_announce_the_coming_feeding(smtp_app, smtp, lang):
    created = start(smtp_app, lang)
    email = turn_email(smtp, PLAYERS[2].email)
    top = email.text.split("\n\n", 1)[0]  # the lines above the choices
    assert ENOUGH[lang] in top.splitlines()
    assert email.text.count(ENOUGH[lang]) == 2  # and on the board
    assert text_of(email.html, "hint") == ENOUGH[lang]

    set_board(smtp_app, created.game_id, 2, people=7, food=1, agriculture=1, res=(2, 0, 0, 0))
    remind(smtp_app, created, placer(smtp_app, created.game_id))
    email = turn_email(smtp, PLAYERS[2].email)
    assert SHORT[lang] in email.text.split("\n\n", 1)[0].splitlines()
    assert email.text.count(SHORT[lang]) == 2
    assert text_of(email.html, "hint") == SHORT[lang]
    assert text_of(email.html, "feeding") == SHORT[lang]  # the board of the HTML part


# --------------------------------------------------------------------------- confirming


def link_of(email: Mail, row: str, people: str) -> str:
    """The path of the one-click link for ``people`` in the row that begins with ``row``."""
    return path_of(count_links(email, row)[people])


def forest_link(inbox) -> str:
    """The link that places two people on the Forest."""
    return link_of(inbox.to(PLAYERS[2].email, "decision")[-1], FOREST["en"], "2 people")


def test_the_confirmation_page_of_a_count_link_has_that_number_chosen(app, inbox):
    start(app)
    client = app.test_client()
    page = client.get(forest_link(inbox))
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert text_of(html, "action") == (
        "Place 2 people on Forest: 2 dice, about 2 Wood (1 per 3 pips)")
    (form,) = forms(html)
    assert form.radios["choice"] == [f"place forest {n}" for n in range(1, 6)]
    assert "How many people do you place on Forest?" in html
    assert "Place 3 people on Forest: 3 dice, about 3 Wood (1 per 3 pips)" in readable(html)
    assert form.checked == {"choice": "place forest 2"} and html.count(" required") == 5


def test_the_number_chosen_on_the_confirmation_page_is_what_is_recorded(app, inbox):
    created = start(app)
    client = app.test_client()
    url = forest_link(inbox)
    (form,) = forms(client.get(url).get_data(as_text=True))
    resp = client.post(url, data=form.data(choice="place forest 4"))
    assert resp.status_code == 200
    assert text_of(resp.get_data(as_text=True), "recorded") == (
        "Recorded: Place 4 people on Forest")
    with app.app_context(), session_scope() as s:
        (move,) = s.exec(select(Move).where(Move.game_id == created.game_id)).all()
    assert Action.from_json(move.action) == Action.of("place", at="forest", count=4)


@pytest.mark.parametrize(("choice", "says"), [
    (None, "Choose one of the options first."),
    ("", "Choose one of the options first."),
    ("place forest 6", "This link does not offer that choice"),  # more than are at home
    ("place hunt 2", "This link does not offer that choice"),  # another place
    ("place forest 2 ", None),  # the same with a blank: read as written, trimmed
])
def test_a_confirmation_without_an_offered_number_records_nothing(app, inbox, choice, says):
    start(app)
    client = app.test_client()
    url = forest_link(inbox)
    (form,) = forms(client.get(url).get_data(as_text=True))
    data = dict(form.hidden) if choice is None else form.data(choice=choice)
    before = snapshot(app)
    resp = client.post(url, data=data)
    html = resp.get_data(as_text=True)
    if says is None:
        assert resp.status_code == 200 and "Recorded: Place 2 people on Forest" in html
        return
    assert resp.status_code == 400
    assert says in text_of(html, "error")
    assert forms(html)[0].radios["choice"][0] == "place forest 1"  # the page, to choose again
    assert snapshot(app) == before


@pytest.mark.parametrize("lang", ["en", "de"])
def test_the_confirmation_page_of_a_card_the_player_cannot_pay_for_warns(smtp_app, smtp, lang):
    """A card's link from an email sent while it was affordable; the player spent the
    resources since: its page warns before the confirmation."""
    created = start(smtp_app, lang)
    set_board(smtp_app, created.game_id, 2, res=(2, 0, 0, 0))
    remind(smtp_app, created, placer(smtp_app, created.game_id))
    email = turn_email(smtp, PLAYERS[2].email)
    row = next(line for line in choice_lines(email) if line.startswith(
        ("The civilization card costing 2", "Die Zivilisationskarte für 2")))
    (url,) = count_links(email, row).values()
    set_board(smtp_app, created.game_id, 2, res=(0, 0, 0, 0))
    html = smtp_app.test_client().get(path_of(url)).get_data(as_text=True)
    caution = text_of(html, "caution")
    assert caution.startswith({"en": "You cannot pay for it now: it costs 2 resources, you "
                                     "have 0.",
                               "de": "Du kannst sie jetzt nicht bezahlen: sie kostet 2 "
                                     "Rohstoffe, du hast 0."}[lang])
    assert {"en": "comes back with nothing", "de": "mit leeren Händen"}[lang] in caution
    assert not forms(html)[0].radios  # one person only: nothing to choose


def test_the_confirmation_page_of_a_place_that_takes_one_number_asks_nothing(app, inbox):
    start(app)
    email = inbox.to(PLAYERS[2].email, "decision")[-1]
    html = app.test_client().get(link_of(email, HUT["en"], "2 people")).get_data(as_text=True)
    assert text_of(html, "action") == "Place 2 people on Hut"
    assert text_of(html, "effect") == "your tribe grows by 1 person"
    assert text_of(html, "caution") is None and not forms(html)[0].radios


# --------------------------------------------------------------------------- the game page


@pytest.mark.parametrize("lang", ["en", "de"])
def test_the_game_page_names_the_yield_and_warnings_of_each_place(app, inbox, lang):
    start(app, lang)
    email = inbox.to(PLAYERS[2].email, "decision")[-1]
    html = app.test_client().get(path_of(email.link("/g/"))).get_data(as_text=True)
    form = next(f for f in forms(html) if f.attrs.get("id") == "decision")
    # a row a place, a radio for each number of people it takes: one click chooses both
    assert form.radios["choice"][:6] == [f"place hunt {n}" for n in range(1, 6)] + [
        "place forest 1"]
    assert ROW_FOREST[lang] == text_of(html, "row-forest")
    assert text_of(html, "row-hut").startswith(ROW_HUT[lang])
    assert ROW_CARD_UNPAYABLE[lang] in text_of(html, "row-card4")
    assert ROW_BUILDING_UNPAYABLE[lang] in text_of(html, "row-building1")
    assert text_of(html, "feeding") == ENOUGH[lang]


ROW_FOREST = {"en": "Forest 1 Wood per 3 pips ×1 ≈1 ×2 ≈2 ×3 ≈3 ×4 ≈4 ×5 ≈5",
              "de": "Wald 1 Holz je 3 Augen ×1 ≈1 ×2 ≈2 ×3 ≈3 ×4 ≈4 ×5 ≈5"}
ROW_HUT = {"en": "Hut", "de": "Hütte"}
ROW_CARD_UNPAYABLE = {
    "en": "You cannot pay for it now: it costs 4 resources, you have 0.",
    "de": "Du kannst sie jetzt nicht bezahlen: sie kostet 4 Rohstoffe, du hast 0.",
}
ROW_BUILDING_UNPAYABLE = {"en": "You cannot pay for it now with your resources.",
                          "de": "Mit deinen Rohstoffen kannst du das jetzt nicht bezahlen."}
