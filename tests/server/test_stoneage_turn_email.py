"""A Stone Age turn email a phone can read (issue 31): a short summary of the player's own
board before the choices; a placement is one row a place with a link for each number of
people it takes now, exactly the legal ones, each bound to that placement, so that one
click reaches a confirmation with the number chosen; a card or building the player cannot
pay for is greyed with the reason and has no link (and no token). The text part lists the
same rows and links. Positions are written into a real game (the engine's builders), then
a fresh turn email is asked for with the host's "remind now"."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest
from sqlmodel import select

from engine import stoneage
from engine.core import Action
from pbem import mail, services
from pbem.db import session_scope
from pbem.models import Game, Token
from tests.engine.stoneage_builders import board, build
from tests.server.helpers import (
    PLAYERS,
    Mail,
    forms,
    open_decisions,
    path_of,
    text_of,
    token_of,
    token_row,
)
from tests.server.test_stoneage_placement import start

# --------------------------------------------------------------------------- reading


@dataclass
class Row:
    """A placement row of the HTML part: its place, words and links (href, label)."""

    place: str
    text: str = ""
    links: list[tuple[str, str]] = field(default_factory=list)


class RowParser(HTMLParser):
    """The ``<li data-place>`` rows of the email's ``#place-rows`` list."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[Row] = []
        self._row: Row | None = None
        self._href: str | None = None
        self._label = ""
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "li" and "data-place" in a:
            self._row, self._depth = Row(a["data-place"]), 0
            self.rows.append(self._row)
        elif self._row is not None and tag == "li":
            self._depth += 1
        if self._row is not None and tag == "a":
            self._href, self._label = a.get("href"), ""

    def handle_endtag(self, tag):
        if self._row is None:
            return
        if tag == "a" and self._href is not None:
            # the count ("×3"), then the average yield ("≈3") of a resource place
            label = " ".join(self._label.split()).split("≈")[0]
            self._row.links.append((self._href, label))
            self._href = None
        elif tag == "li":
            if self._depth:
                self._depth -= 1
            else:
                self._row.text = " ".join(self._row.text.split())
                self._row = None

    def handle_data(self, data):
        if self._row is not None:
            self._row.text += data
            if self._href is not None:
                self._label += data


def rows_of(html: str) -> dict[str, Row]:
    parser = RowParser()
    parser.feed(html)
    return {row.place: row for row in parser.rows}


def text_rows(text: str) -> dict[str, list[tuple[str, str]]]:
    """The text part's placement rows ("  * Forest: ...") with the count lines under each
    ("      2 people: URL")."""
    rows: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("  * "):
            current = line[4:]
            rows[current] = []
        elif current is not None and line.startswith("      ") and ": http" in line:
            words, url = line.strip().split(": ", 1)
            rows[current].append((words, url))
        elif not line.strip():
            continue
        else:
            current = None
    return rows


# --------------------------------------------------------------------------- positions



def late_round(**cy) -> stoneage.State:
    """Round 10, Cy (seat 2) the start player to place, with 8 people and what ``cy``
    says; Ann and Bob on the usual late-game footing."""
    others = board(people=7, food=6, wood=3, brick=2, agriculture=3, tools=(3, 2), score=61)
    mine = board(**{"people": 8, "food": 4, "wood": 3, "brick": 1, "stone": 1,
                    "agriculture": 4, "tools": (2, 2, 1), "score": 58, **cy})
    return build(others, others._replace(score=70), mine, start=2, round=10,
                 stacks=[3, 2, 4], players=[p.name for p in PLAYERS])


def put(app, created: services.Created, state: stoneage.State) -> Mail:
    """Write ``state`` into the game and have the host remind its placer: the fresh turn
    email."""
    stoneage.check_invariants(state)
    with app.app_context(), session_scope() as s:
        s.get(Game, created.game_id).state = json.dumps(stoneage.to_json(state))
    (decision,) = open_decisions(app, created.game_id)
    assert decision.kind == "place" and decision.position == 2
    with app.app_context():
        services.remind_now(created.admin_token, decision.id)
        mail.deliver_due()
    return decision


def turn_email(inbox) -> Mail:
    """The latest turn email to Cy (a reminder is the turn email again)."""
    return [m for m in inbox.to(PLAYERS[2].email) if m.template in ("decision", "reminder")][-1]


def bound(app, url: str) -> Action:
    return Action.from_json(token_row(app, token_of(url)).action)


# --------------------------------------------------------------------------- the rows


@pytest.mark.parametrize("lang", ["en", "de"])
def test_each_place_is_one_row_with_exactly_its_legal_counts_as_links(app, inbox, lang):
    created = start(app, lang)
    state = late_round(wood=6, brick=3, stone=2, gold=1)
    put(app, created, state)
    email = turn_email(inbox)
    rows = rows_of(email.html)
    legal: dict[str, list[int]] = {}
    for a in stoneage.legal_actions(state, 2):
        legal.setdefault(a.get("at"), []).append(a.get("count"))
    assert list(rows) == list(legal)  # one row a place, in the engine's order
    for place, counts in legal.items():
        row = rows[place]
        assert [label for _, label in row.links] == [f"×{c}" for c in counts], place
        assert [bound(app, url) for url, _ in row.links] == [
            Action.of("place", at=place, count=c) for c in counts]
    assert [label for _, label in rows["hunt"].links] == [f"×{c}" for c in range(1, 9)]
    assert [label for _, label in rows["forest"].links] == [f"×{c}" for c in range(1, 8)]
    assert [label for _, label in rows["hut"].links] == ["×2"]
    # what each place brings: the average yield under each count, the card's words
    wood = {"en": "1 Wood per 3 pips", "de": "1 Holz je 3 Augen"}[lang]
    assert wood in rows["forest"].text and "≈2" in rows["forest"].text
    assert stoneage.data().card_name(state.civ[0], lang) in rows["card1"].text


@pytest.mark.parametrize("lang", ["en", "de"])
def test_a_card_or_building_the_player_cannot_pay_for_is_greyed_with_the_reason_and_no_link(
        app, inbox, lang):
    created = start(app, lang)
    put(app, created, late_round(wood=2, brick=0, stone=0, gold=0))  # two resources
    email = turn_email(inbox)
    rows = rows_of(email.html)
    assert [len(rows[f"card{i}"].links) for i in range(1, 5)] == [1, 1, 0, 0]
    why = {"en": "You cannot pay for it now: it costs {cost} resources, you have 2.",
           "de": "Du kannst sie jetzt nicht bezahlen: sie kostet {cost} Rohstoffe, du hast 2."}
    assert why[lang].format(cost=3) in rows["card3"].text
    assert why[lang].format(cost=4) in rows["card4"].text
    assert "you have 2" not in rows["card2"].text and "du hast 2" not in rows["card2"].text
    building = {"en": "You cannot pay for it now with your resources.",
                "de": "Mit deinen Rohstoffen kannst du das jetzt nicht bezahlen."}[lang]
    for stack in (1, 2, 3):  # 2 Wood pay none of these tiles
        assert not rows[f"building{stack}"].links
        assert building in rows[f"building{stack}"].text
    # the text part says so too, without a link; the game page offers them still
    text = text_rows(email.text)
    card3 = next(r for r in text if why[lang].format(cost=3)[1:-1].lower() in r.lower())
    assert text[card3] == []
    assert "/a/" not in card3


def test_no_token_is_minted_for_a_choice_shown_without_a_link(app, inbox):
    created = start(app)
    (decision,) = open_decisions(app, created.game_id)
    before = action_tokens(app, decision.id)
    put(app, created, late_round(wood=2, brick=0, stone=0, gold=0))
    links = set(turn_email(inbox).action_links())
    # the hunt (8), the forest, clay pit, quarry and river (7 each), the village (3), the
    # two cards two resources pay; no building
    assert len(links) == 8 + 4 * 7 + 3 + 2
    assert action_tokens(app, decision.id) - before == len(links)


def action_tokens(app, decision_id: int) -> int:
    with app.app_context(), session_scope() as s:
        return len(s.exec(select(Token).where(Token.decision_id == decision_id,
                                              Token.kind == "action")).all())


@pytest.mark.parametrize("lang", ["en", "de"])
def test_the_summary_of_the_players_board_comes_before_the_choices(app, inbox, lang):
    created = start(app, lang)
    put(app, created, late_round(wood=6, brick=3, stone=2, gold=1, food=4))
    email = turn_email(inbox)
    html = email.html
    assert html.index('id="when"') < html.index('id="summary"') < html.index('id="choices"')
    summary = text_of(html, "summary")
    words = {"en": ("People 8 (8 at home)", "Food 4", "Agriculture 4", "Tools 2, 2, 1",
                    "Wood 6", "Brick 3", "Stone 2", "Gold 1", "Feeding at the end of this "
                    "round: 8 people eat 8 Food"),
             "de": ("Personen 8 (8 zu Hause)", "Nahrung 4", "Ackerbau 4", "Werkzeuge 2, 2, 1",
                    "Holz 6", "Lehm 3", "Stein 2", "Gold 1", "Ernährung am Ende dieser "
                    "Runde: 8 Personen essen 8 Nahrung")}[lang]
    for w in words:
        assert w in summary, (w, summary)
    # the full board after the choices; the text part in the same order
    assert html.index('id="choices"') < html.index('id="board-places"')
    text = email.text
    choose = {"en": "Choose with one click", "de": "Wähle mit einem Klick"}[lang]
    assert text.index(words[0]) < text.index(words[-1]) < text.index(choose)


# --------------------------------------------------------------------------- one click


def test_a_count_link_opens_its_confirmation_with_that_number_chosen(app, inbox):
    created = start(app)
    put(app, created, late_round())
    (url, label) = rows_of(turn_email(inbox).html)["forest"].links[2]
    assert label == "×3"
    client = app.test_client()
    html = client.get(path_of(url)).get_data(as_text=True)
    assert text_of(html, "action") == (
        "Place 3 people on Forest: 3 dice, about 3 Wood (1 per 3 pips)")
    (form,) = forms(html)
    assert form.checked == {"choice": "place forest 3"}  # the number, chosen already
    assert form.radios["choice"] == [f"place forest {n}" for n in range(1, 8)]
    resp = client.post(path_of(url), data=form.data())
    assert text_of(resp.get_data(as_text=True), "recorded") == (
        "Recorded: Place 3 people on Forest")
    assert game_moves(app, created.game_id) == [Action.of("place", at="forest", count=3)]


def game_moves(app, game_id: str) -> list[Action]:
    from pbem.models import Move

    with app.app_context(), session_scope() as s:
        return [Action.from_json(m.action) for m in
                s.exec(select(Move).where(Move.game_id == game_id).order_by(Move.id))]


def test_the_text_part_lists_each_place_with_a_line_for_each_count(app, inbox):
    created = start(app)
    put(app, created, late_round(wood=2, brick=0, stone=0, gold=0))
    email = turn_email(inbox)
    rows = text_rows(email.text)
    forest = next(r for r in rows if r.startswith("Forest: "))
    assert forest == "Forest: about 1, 2, 3, 4, 5, 7 or 8 Wood (1 die a person, 1 per 3 pips)"
    assert [words for words, _ in rows[forest]] == ["1 person"] + [
        f"{n} people" for n in range(2, 8)]
    assert [bound(app, url) for _, url in rows[forest]] == [
        Action.of("place", at="forest", count=n) for n in range(1, 8)]
    hut = next(r for r in rows if r.startswith("Hut: "))
    assert [w for w, _ in rows[hut]] == ["2 people"]
    # every link of the HTML part is in the text part, and the other way round
    assert sorted(set(email.text_links())) == sorted(set(email.html_links()))



def test_a_daily_digest_lists_a_placement_as_the_same_rows_of_count_links(app, client,
                                                                          frozen):
    from tests.server.test_address_settings import save, unsubscribe_link
    from tests.server.timekit import at, new_game, tick

    created = new_game(app, game="stoneage")  # Cy places first
    save(client, unsubscribe_link(app, created.game_id, PLAYERS[2].email), delivery="digest",
         digest_hour="8", timezone="Europe/Berlin")
    at(frozen, 22.05)  # Tuesday 08:03 in Berlin
    tick(app)
    (digest,) = [m for m in inbox_of(app) if m.template == "digest"
                 and m.to_addr == PLAYERS[2].email]
    rows = rows_of(digest.html)
    assert [label for _, label in rows["forest"].links] == [f"×{n}" for n in range(1, 6)]
    assert [bound(app, url) for url, _ in rows["hut"].links] == [
        Action.of("place", at="hut", count=2)]
    assert rows["card1"].links == []  # nothing to pay with: greyed, no link
    text = text_rows(digest.text.replace("\n    ", "\n  ", ))  # the digest indents more
    forest = next(r for r in text if r.startswith("Forest: "))
    assert [words for words, _ in text[forest]] == ["1 person"] + [
        f"{n} people" for n in range(2, 6)]
    assert sorted(set(digest.text_links())) == sorted(set(digest.html_links()))


def inbox_of(app) -> list[Mail]:
    from tests.server.helpers import Inbox

    return Inbox(app).all()
