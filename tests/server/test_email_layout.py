"""Emails that read like a game: the decision first, big buttons, choices that say what
they cost and bring, at most ten lines of news, "you" for the reader, and a result email
that starts with the winner and the ranking."""

from __future__ import annotations

import re

import jinja2

from engine import cavemen
from pbem import narrate
from pbem.i18n import LANGUAGES
from tests.server.conftest import start_game
from tests.server.helpers import PLAYERS, Table, game_state

BUTTON_RE = re.compile(r'<a href="([^"]+)" style="([^"]*)">')


def test_the_decision_comes_first_with_buttons_at_least_44_px_tall(table: Table):
    m = table.mail(table.open())
    lines = m.text.splitlines()
    assert lines[0].startswith("Your turn: bid for the conch, by ")
    assert lines[1].startswith("Decide by ") and "If you do not, the server plays" in lines[1]
    # in HTML: the headline, the deadline, then the choices as buttons, before the news
    html = m.html
    assert html.index('id="headline"') < html.index('id="when"') < html.index('id="choices"')
    assert html.index('id="choices"') < html.index("Since your last email")
    buttons = [(url, style) for url, style in BUTTON_RE.findall(html) if "/a/" in url]
    assert len(buttons) == len([u for u in m.token_links() if "/a/" in u]) >= 2
    for _url, style in buttons:
        assert "min-height:44px" in style and "display:block" in style
    assert '<meta name="viewport"' in html


def test_a_choice_names_what_it_costs_and_brings(app, client, inbox):
    created = start_game(app)
    table = Table(app, client, inbox, created.game_id, created.admin_token, bot_seed=7)
    for _ in range(40):  # on to the first action decision
        decision = table.open()
        if decision.kind == "act":
            break
        table.step()
    assert decision.kind == "act"
    state = game_state(app, created.game_id)[1]
    m = table.mail(decision)
    forage = next(ln.strip() for ln in m.text.splitlines() if ln.strip().startswith("* Forage"))
    sc = cavemen.scores(state, decision.position)  # Foraging and the inventions' income
    food = sc.foraging + sc.income_for("forage")[0]
    assert forage == f"* Forage: +{food} Food", forage
    hunts = [ln for ln in m.text.splitlines() if ln.strip().startswith("* Hunt ")]
    assert all(ln.endswith("then a casualty draw") for ln in hunts), hunts
    recruits = [ln for ln in m.text.splitlines() if ln.strip().startswith("* Recruit ")]
    assert all(re.search(r": costs \d+ (Food|Teeth?|Tooth); ", ln) for ln in recruits), recruits


def test_news_is_at_most_ten_lines_and_the_readers_moves_read_you(table: Table):
    for _ in range(12):
        table.step()
    for m in table.inbox.all():
        if "Since your last email:" not in m.text:
            continue
        news = m.text.split("Since your last email:", 1)[1].split("\n\n", 1)[0]
        items = [ln for ln in news.splitlines() if ln.startswith("  - ")]
        assert 1 <= len(items) <= 10, news
        if re.search(r"^  \+\d+ more on the game page", news, re.M) is None:
            continue
        assert len(items) == 10
    for player in PLAYERS:
        for m in table.inbox.to(player.email):
            own = [f"{player.name} bids", f"{player.name} passes.", f"{player.name} forages",
                   f"{player.name} recruits", f"{player.name} hunts"]
            assert not any(x in m.text for x in own), (player.name, m.text)
    texts = " ".join(m.text for m in table.inbox.to(PLAYERS[0].email))
    assert re.search(r"\bYou (bid|pass|forage|recruit|hunt|take|explore|invent)", texts)


def test_the_result_email_starts_with_the_winner_and_the_ranking(table: Table):
    for _ in range(400):
        if table.state().phase == "over":
            break
        table.step()
    results = table.inbox.of("result")
    assert len(results) == len(PLAYERS)
    for m in results:
        assert m.headline.startswith("Game over: "), m.headline
        second = m.text.split("\n")[1]
        assert "wins the game" in second or "without a winner" in second, second
        ranking = m.text.split("The final board", 1)[0]
        rows = re.findall(r"^  (\d)\. (\S+)", ranking, re.M)
        assert [int(i) for i, _ in rows] == list(range(1, len(PLAYERS) + 1)), ranking
        assert "You" in [who for _, who in rows]
        html = m.html
        assert html.index('id="final"') < html.index("The final board")


def test_every_game_page_links_to_the_rules(table: Table, client):
    from tests.server.helpers import path_of

    decision = table.open()
    mail = table.mail(decision)
    pages = {"game": path_of(mail.link("/g/")),
             "action": path_of(next(u for u in mail.token_links() if "/a/" in u)),
             "host": f"/admin/{table.admin}"}
    for name, path in pages.items():
        html = client.get(path).get_data(as_text=True)
        assert 'id="rules-link" class="rules-link">How to play</a>' in html, name
        assert 'href="/rules/cavemen' in html, name


def test_emails_make_their_games_narration_once_per_part_and_language(table: Table,
                                                                      monkeypatch):
    """Each ``import ... with context`` runs the module again: an email takes its game's
    narration for the text and at most once for the HTML (only when the HTML part says
    something the text could not: ``pbem.narrate.EmailNarration``), and its templates and
    partials (news, deadlines, board) use those (``{% if n is not defined %}``); the
    modules are made once per language in the process and shared by the next emails
    (``pbem.narrate.narration_module``)."""
    for _ in range(3):  # moves that send decisions and notices with news, board and deadlines
        table.step()
    narrate._MODULES.clear()
    imports: list[str] = []
    original = jinja2.Template.make_module

    def counted(self, *args, **kwargs):
        imports.append(self.name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(jinja2.Template, "make_module", counted)
    sent = table.inbox.deliver()["sent"]  # the last move's emails
    assert sent >= 1
    made = imports.count("games/cavemen/narration.jinja")
    assert 1 <= made <= min(sent, len(LANGUAGES))
    assert imports.count("games/cavemen/narration.jinja@html") <= made
