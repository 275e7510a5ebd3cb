"""The inbox says what is asked (issue 20, point 2): every email's first line says what it
wants and by when, short enough for a phone's preview, in the reader's language; the
HTML part carries the same words as a hidden preheader, first in its body; reminders say
how much time is left, counted when they are sent; the Subject stays the game's name."""

from __future__ import annotations

import email
import email.policy
import html as html_lib
import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from flask import render_template_string
from flask_babel import force_locale
from freezegun import freeze_time
from sqlmodel import select

from engine.registry import get_game
from pbem import clock, mail, services
from pbem.db import session_scope
from pbem.i18n import time_left
from pbem.models import Decision, Game, Outbox, Seat
from tests.server.conftest import GAME_SEED
from tests.server.helpers import PLAYERS, Inbox, forms
from tests.server.test_address_settings import save, unsubscribe_link
from tests.server.test_german import TITLE, play_world
from tests.server.timekit import ANN, as_entered

PREVIEW = 90  # characters a phone shows of the preview, about
WEEKDAYS = {"en": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"],
            "de": ["Mo.", "Di.", "Mi.", "Do.", "Fr.", "Sa.", "So."]}
BODY_RE = re.compile(r"<body[^>]*>\s*(<[^>]+>)([^<]*)</div>\s*<div[^>]*>\s*<h1[^>]*>([^<]*)</h1>")
FILLER = "\u034f\u200c\xa0"  # what follows the preheader's words, invisible
SAID = {  # what the first line of each kind says, in each language
    "decision": ("Your turn: ", "Dein Zug: "),
    "reminder": ("Reminder: ", "Erinnerung: "),
    "result": ("Game over: ", "Spiel vorbei: "),
    "host_confirm": ("Confirm your new game of Cavemen", "Bestätige deine neue Partie Cavemen"),
    "invitation": ("Ann invites you to play Cavemen: accept or decline",
                   "Ann lädt dich zu Cavemen ein: annehmen oder ablehnen"),
    "handover_invite": ("Ann asks you to take over the seat of Cy in Cavemen",
                        "Ann bittet dich, den Platz von Cy in Cavemen zu übernehmen"),
    "game_started": ("The game has started: nothing to do until your turn",
                     "Das Spiel hat begonnen: Bis zu deinem Zug ist nichts zu tun"),
    "welcome": ("Welcome: you take over the seat of Cy.",
                "Willkommen: Du übernimmst den Platz von Cy."),
    "declined": ("Bob declined your invitation", "Bob hat deine Einladung abgelehnt"),
    "my_games": ("Your games on pbem: ", "Deine Partien auf pbem: "),
    "digest": (" waits for you: ", " wartet auf dich: "),
}


class Rendered:
    """One email as its reader gets it: the text's first line, the HTML preheader and
    heading, the Subject."""

    def __init__(self, data: bytes) -> None:
        msg = email.message_from_bytes(data, policy=email.policy.default)
        self.subject = str(msg["Subject"])
        self.text = msg.get_body(("plain",)).get_content().replace("\r\n", "\n")
        self.html = msg.get_body(("html",)).get_content().replace("\r\n", "\n")
        self.first = self.text.split("\n", 1)[0]
        found = BODY_RE.search(self.html)
        assert found, self.html[:600]
        self.preheader_tag = found[1]
        self.preheader = html_lib.unescape(found[2]).rstrip(FILLER)
        self.filler = html_lib.unescape(found[2])[len(self.preheader):]
        self.heading = html_lib.unescape(found[3])


def render(app, row_id: int, lang: str) -> Rendered:
    """An email of the outbox rendered again in ``lang`` (links minted and rolled back).
    A notice tells the news since the reader's last email, which after the game is none:
    it is rendered with every event of the game as news, its own among them."""
    with app.app_context(), session_scope() as s:
        row = s.get(Outbox, row_id)
        game = s.get(Game, row.game_id) if row.game_id else None
        seat = s.get(Seat, row.seat_id) if row.seat_id else None
        if row.template == "notice":
            seat.seen_event_seq = 0
        with force_locale(lang):
            out, _seen, _merged = mail.compose.render(
                s, row, game, seat, seat is not None and seat.email.lower() == row.rcpt)
        s.rollback()
    return Rendered(out.data)


def kind_of(row: Outbox) -> str:
    return "reminder" if row.context.get("reminder") else str(row.template)


def short_deadline(at: datetime, tz: str, lang: str) -> str:
    """A deadline within the week as the first line writes it: "Thu 18:00", "Do. 18:00"."""
    local = at.replace(tzinfo=at.tzinfo or UTC).astimezone(ZoneInfo(tz))
    return f"{WEEKDAYS[lang][local.weekday()]} {local:%H:%M}"


@pytest.fixture
def world(saved, app, client, inbox):
    """test_german's game through every kind of email, and the list of one's games."""
    table = saved("german world", lambda: play_world(app, client, inbox))
    form = [f for f in forms(client.get("/my").get_data(as_text=True))
            if f.attrs.get("id") == "my-games-form"][0]
    assert client.post("/my", data=form.data(email=ANN.email)).status_code == 200
    inbox.deliver()
    return table


def sent_rows(app) -> list[Outbox]:
    with app.app_context(), session_scope() as s:
        rows = list(s.exec(select(Outbox).where(Outbox.status == "sent")
                           .order_by(Outbox.id)))
        for row in rows:
            s.expunge(row)
        return rows


# --------------------------------------------------------------------------- every kind


@pytest.mark.parametrize("lang", ["en", "de"])
def test_every_email_kind_says_what_is_asked_first_in_text_and_preheader(world, app, lang):
    rows = sent_rows(app)
    kinds = {}
    for row in rows:  # one email of each kind (each notice's news), and every result
        if row.template == "result":
            kinds[("result", row.id)] = row
        else:
            kinds.setdefault((kind_of(row), row.context.get("headline")), row)
    assert {kind for kind, _ in kinds} >= set(SAID) - {"digest"}  # the digest: below
    with app.app_context(), session_scope() as s:
        deadlines = {d.id: d.deadline_at for d in s.exec(select(Decision))}
        places = stoneage_free_places(s, world.game_id)
    for (kind, _), row in sorted(kinds.items(), key=str):
        got = render(app, row.id, lang)
        assert got.first == got.preheader == got.heading, (kind, got.first, got.preheader)
        assert got.first.strip() == got.first and 10 < len(got.first) <= PREVIEW, got.first
        assert got.first not in ("News from your game.", "Neues aus deinem Spiel.")
        said = SAID.get(kind, ("", ""))[lang == "de"]
        assert said in got.first, (kind, lang, got.first)
        assert got.subject == (TITLE if row.game_id else {
            "en": "Your games on pbem", "de": "Deine Partien auf pbem"}[lang]), got.subject
        if kind == "decision":  # by when, in the reader's zone and language
            zone = seat_zone(app, row.seat_id)
            assert got.first.endswith(", " + {"en": "by ", "de": "bis "}[lang] + short_deadline(
                deadlines[row.context["decision_id"]], zone, lang)), got.first
        if kind == "reminder":
            assert re.search({"en": r" left to ", "de": r" – noch \d"}[lang], got.first)
        if kind == "result":
            place = places[row.seat_id]
            assert got.first == RESULT_LINES[lang][place], (place, got.first)


RESULT_LINES = {"en": {1: "Game over: you won", 2: "Game over: you came second",
                       3: "Game over: you came third"},
                "de": {1: "Spiel vorbei: Du hast gewonnen",
                       2: "Spiel vorbei: Du bist auf dem zweiten Platz",
                       3: "Spiel vorbei: Du bist auf dem dritten Platz"}}


def stoneage_free_places(s, game_id: str) -> dict[int, int]:
    """Where each seat of the (Cavemen) game finished, read from its end state as the
    standings list it: the winner, then by Inventing score (no tie in this game)."""
    game = s.get(Game, game_id)
    mod = get_game(game.engine)
    import json

    state = mod.from_json(json.loads(game.state))
    seats = {x.position: x.id for x in s.exec(select(Seat).where(Seat.game_id == game_id))}
    order = sorted(range(state.n), key=lambda p: (p != state.winner,
                                                  -mod.scores(state, p).inventing))
    assert len({mod.scores(state, p).inventing for p in order[1:]}) == len(order) - 1
    return {seats[p]: i + 1 for i, p in enumerate(order)}


def seat_zone(app, seat_id: int) -> str:
    with app.app_context(), session_scope() as s:
        return s.get(Seat, seat_id).timezone


def test_the_preheader_is_hidden_first_in_the_body_and_not_read_twice(world, app):
    row = next(r for r in sent_rows(app) if r.template == "decision")
    got = render(app, row.id, "en")
    tag = got.preheader_tag
    assert tag.startswith('<div id="preheader" aria-hidden="true" style="')  # first in body
    style = dict(part.split(":", 1) for part in re.search(r'style="([^"]*)"', tag)[1]
                 .split(";") if part)
    # hidden in every client: display, and size, opacity and overflow for those that drop
    # display:none; mso-hide for Outlook's Word engine
    assert style["display"] == "none" and style["mso-hide"] == "all"
    assert style["max-height"] == "0" and style["opacity"] == "0"
    assert style["overflow"] == "hidden"
    # filler after the words, so that no client pulls the heading into the preview
    assert len(got.filler) >= 150 and set(got.filler) == set(FILLER)
    # the heading says the same for everyone, screen readers included
    assert got.heading == got.preheader


# --------------------------------------------------------------------------- the digest


@pytest.mark.parametrize("lang", ["en", "de"])
def test_the_digest_counts_the_games_and_the_turns_due_today(app, client, frozen, lang):
    from tests.server.test_digest import first_player_passes
    from tests.server.timekit import T0, at, new_game, tick

    first = new_game(app)  # Cy bids first, then Ann; T0 is Monday 10:00 in Berlin
    save(client, unsubscribe_link(app, first.game_id, ANN.email), delivery="digest",
         digest_hour="8", timezone="Europe/Berlin", language=lang)
    first_player_passes(app, client, first)  # Ann's turn, due Wednesday 10:00 in Berlin
    tick(app)
    lines = []
    for hours in (22.05, 46.05):  # Tuesday and Wednesday 08:03 in Berlin
        at(frozen, hours)
        tick(app)
        with app.app_context(), session_scope() as s:
            row = s.exec(select(Outbox).where(Outbox.template == "digest")
                         .order_by(Outbox.id.desc())).first()
            deadline = s.exec(select(Decision).where(Decision.closed_at.is_(None))).one()
        got = render(app, row.id, lang)
        assert got.first == got.preheader == got.heading
        lines.append(got.first)
        assert got.subject == {"en": "Your daily digest", "de": "Deine tägliche Übersicht"}[lang]
    assert deadline.deadline_at.replace(tzinfo=UTC) == T0 + timedelta(hours=48)
    assert lines == {
        "en": ["1 game waits for you: next deadline Wed 10:00",
               "1 game waits for you: 1 turn due today"],
        "de": ["1 Spiel wartet auf dich: nächste Frist Mi. 10:00",
               "1 Spiel wartet auf dich: 1 Zug heute fällig"]}[lang]


# --------------------------------------------------------------------------- reminders

CY_BERLIN = {"en": services.PlayerIn("Cy", "cy@example.com", "en", "Europe/Berlin"),
             "de": services.PlayerIn("Cy", "cy@example.com", "de", "Europe/Berlin")}


@pytest.mark.parametrize(("start", "lang", "reminder", "sent", "first", "body"), [
    # queued 3 hours before the deadline, sent 45 minutes before it: the words are
    # those of the sending
    (datetime(2030, 1, 14, 9, 0, tzinfo=UTC), "en", "3", timedelta(minutes=45),
     "Reminder: 45 minutes left to bid for the conch", "(45 minutes left)."),
    # 36 hours before a deadline on the Monday after the clocks go forward in Berlin
    # (Sunday 31 March 2030): 36 hours pass, though the wall clock moves 37
    (datetime(2030, 3, 30, 10, 0, tzinfo=UTC), "de", "36", timedelta(hours=36),
     "Erinnerung: um die Muschel bieten – noch 1 Tag 12 Stunden", "(noch 1 Tag 12 Stunden)."),
])
def test_a_reminder_says_the_time_left_when_it_is_sent(app, start, lang, reminder, sent, first,
                                                       body):
    with freeze_time(start) as frozen:
        created = new_reminded_game(app, lang, reminder)
        with app.app_context(), session_scope() as s:
            decision = s.exec(select(Decision).where(Decision.closed_at.is_(None))).one()
            deadline = decision.deadline_at.replace(tzinfo=UTC)
            assert decision.position == 2  # Cy's, in Berlin
        frozen.move_to(deadline - timedelta(hours=int(reminder)))
        assert clock.sweep(app)["reminders"] == 1  # queued now...
        frozen.move_to(deadline - sent)  # ...sent now
        with app.app_context():
            assert mail.deliver_due()["sent"] == 1
        (got,) = [m for m in Inbox(app).to("cy@example.com") if "Reminder" in m.text
                  or "Erinnerung" in m.text]
        assert got.headline == first
        assert re.search(r"<h1[^>]*>" + re.escape(first) + "</h1>", got.html)
        (decide,) = [ln for ln in got.text.splitlines() if ln.startswith(("Decide", "Entscheide"))]
        assert body in decide, decide
        assert body in got.html
        assert got.subject == created


def new_reminded_game(app, lang: str, reminder: str) -> str:
    """A started Cavemen game with Cy (who bids first) in Berlin speaking ``lang``; its
    title (the Subject of its emails)."""
    with app.app_context():
        services.create_game("cavemen", [PLAYERS[0], PLAYERS[1], CY_BERLIN[lang]],
                             as_entered(reminders=reminder), seed=GAME_SEED,
                             confirm_by_email=False, start=True, title="Remind")
        mail.deliver_due()
    return "Remind"


def test_the_dst_case_really_spans_a_change_of_the_clocks():
    deadline = datetime(2030, 4, 1, 10, 0, tzinfo=UTC)
    sent = deadline - timedelta(hours=36)
    berlin = ZoneInfo("Europe/Berlin")
    wall = (deadline.astimezone(berlin).replace(tzinfo=None)
            - sent.astimezone(berlin).replace(tzinfo=None))
    assert wall == timedelta(hours=37)


# --------------------------------------------------------------------------- the words


@pytest.mark.parametrize(("left", "en", "de"), [
    (timedelta(seconds=20), "1 minute", "1 Minute"),
    (timedelta(minutes=45, seconds=10), "45 minutes", "45 Minuten"),
    (timedelta(minutes=59, seconds=50), "1 hour", "1 Stunde"),
    (timedelta(hours=1, minutes=38), "1 hour 40 minutes", "1 Stunde 40 Minuten"),
    (timedelta(hours=1, minutes=59), "2 hours", "2 Stunden"),
    (timedelta(hours=2, minutes=29), "2 hours 30 minutes", "2 Stunden 30 Minuten"),
    (timedelta(hours=5, minutes=29), "5 hours", "5 Stunden"),
    (timedelta(hours=23, minutes=40), "1 day", "1 Tag"),
    (timedelta(days=1, hours=3, minutes=10), "1 day 3 hours", "1 Tag 3 Stunden"),
    (timedelta(days=2, hours=1), "2 days 1 hour", "2 Tage 1 Stunde"),
    (timedelta(days=9, hours=13), "10 days", "10 Tage"),
    (timedelta(0), "", ""),
    (-timedelta(hours=1), "", ""),
])
def test_time_left_in_words_rounded_sensibly(app, left, en, de):
    now = datetime(2030, 3, 30, 22, 0, tzinfo=UTC)
    with app.test_request_context():
        for lang, expected in (("en", en), ("de", de)):
            with force_locale(lang):
                assert time_left(now + left, now) == expected


# --------------------------------------------------------------------------- results

LINE = ('{%- import "emails/_result_line.jinja" as line with context -%}'
        '{{ line.first(st, winners, names, me) }}')
NAMES = ["Ann", "Bob", "Cy", "Dee"]


@pytest.mark.parametrize(("st", "winners", "me", "en", "de"), [
    ({"place": 1, "with": []}, [0], 0, "Game over: you won", "Spiel vorbei: Du hast gewonnen"),
    ({"place": 1, "with": ["Bob"]}, [0, 1], 0, "Game over: you share the win with Bob",
     "Spiel vorbei: Du teilst dir den Sieg mit Bob"),
    ({"place": 2, "with": []}, [0], 1, "Game over: you came second",
     "Spiel vorbei: Du bist auf dem zweiten Platz"),
    ({"place": 2, "with": ["Cy", "Dee"]}, [0], 1, "Game over: you share second place with Cy & Dee",
     "Spiel vorbei: Du teilst dir den zweiten Platz mit Cy & Dee"),
    ({"place": 4, "with": []}, [0], 3, "Game over: you came fourth",
     "Spiel vorbei: Du bist auf dem vierten Platz"),
    ({"place": 3, "with": ["Dee"]}, [0, 1], 2, "Game over: you share third place with Dee",
     "Spiel vorbei: Du teilst dir den dritten Platz mit Dee"),
    (None, [0, 1], 2, "Game over: Ann & Bob won", "Spiel vorbei: Ann & Bob haben gewonnen"),
    (None, [1], 2, "Game over: Bob won", "Spiel vorbei: Bob hat gewonnen"),
    (None, [2], 2, "Game over: you won", "Spiel vorbei: Du hast gewonnen"),
    (None, [], 2, "Game over: no one won", "Spiel vorbei: Niemand hat gewonnen"),
])
def test_the_result_line_says_the_readers_place_and_ties(app, st, winners, me, en, de):
    with app.test_request_context():
        for lang, expected in (("en", en), ("de", de)):
            with force_locale(lang):
                got = render_template_string(LINE, st=st, winners=winners, names=NAMES, me=me)
                assert got == expected


# --------------------------------------------------------------------------- the games list


def test_the_list_of_ones_games_counts_those_that_wait_for_the_reader(app, client, inbox):
    from tests.server.conftest import start_game
    from tests.server.test_my_games import ask

    start_game(app, title="Friday")  # the third seat bids first: Cy
    start_game(app, players=[PLAYERS[1], PLAYERS[0], PLAYERS[2]], title="Sunday")  # Cy
    start_game(app, players=[PLAYERS[2], PLAYERS[0], PLAYERS[1]], title="Monday")  # Bob
    for who, first in ((PLAYERS[2], "Your games on pbem: 2 wait for you"),
                       (PLAYERS[1], "Your games on pbem: 1 waits for you"),
                       (PLAYERS[0], "Your games on pbem: nothing waits for you")):
        inbox.clear()
        assert ask(client, who.email).status_code == 200
        (got,) = inbox.to(who.email, "my_games")
        assert (got.subject, got.headline) == ("Your games on pbem", first)
        assert got.html.count(first) == 3  # the title, the preheader and the heading
