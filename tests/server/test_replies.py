"""Replies by email, sent over SMTP into the real inbound receiver on loopback: a reply
plays what it names and is answered in its thread; anything else gets the answer of
its kind or none, never a crash, never a move nobody asked for."""

from __future__ import annotations

import re
import smtplib

import pytest
from sqlmodel import select

from engine.core import Action
from pbem import mail
from pbem.commands import command_list, expand_line
from pbem.db import session_scope
from pbem.kinds import TokenKind
from pbem.models import InboundMessage, Move, Token
from pbem.tokens import hash_token
from tests.server.helpers import PLAYERS, all_stored_text, game_state, load, open_decisions
from tests.server.replying import Inbound, reply_address, reply_to, wire

REPLY_TO_RE = re.compile(r"^games\+r\.([a-z2-7]{32})@pbem\.test$")


@pytest.fixture
def inbound(app):
    receiver = Inbound(app)
    yield receiver
    receiver.stop()


def moves(app, game_id: str) -> list[Move]:
    with app.app_context(), session_scope() as s:
        return list(s.exec(select(Move).where(Move.game_id == game_id).order_by(Move.id)))


def answers(inbox, addr: str):
    return inbox.to(addr, "reply")


def spoken(table, decision, lang="en") -> list[str]:
    """The lines of commands the decision's email lists."""
    mod, state = game_state(table.app, table.game_id)
    with table.app.app_context():
        return command_list(mod, state, decision.position, lang)


def commands(table, decision, lang="en") -> list[str]:
    """The commands the email lists, one a move (a line offering several numbers names
    one command for each)."""
    return [c for line in spoken(table, decision, lang) for c in expand_line(line)]


def first_mail(table):
    decision = table.open()
    return decision, table.mail(decision)


def test_every_email_to_a_player_has_its_own_reply_address_stored_hashed(table):
    mails = table.inbox.all()
    addresses = [reply_address(m) for m in mails]
    assert all(REPLY_TO_RE.match(a) for a in addresses), addresses
    assert len(set(addresses)) == len(addresses)
    stored = all_stored_text(table.app)
    for a in addresses:
        raw = REPLY_TO_RE.match(a).group(1)
        assert raw not in stored
        row = load(table.app, Token, hash_token(raw))
        assert row.kind == TokenKind.REPLY and row.game_id == table.game_id


def test_a_decision_email_lists_the_commands_it_accepts(table):
    decision, m = first_mail(table)
    lines = spoken(table, decision)
    assert lines and all(f"  {c}\n" in m.text for c in lines)
    assert "Or answer this email with a command" in m.text


def test_a_reply_with_a_command_plays_it_and_answers_in_the_thread(table, inbound):
    decision, m = first_mail(table)
    choice = table.bot_choice(decision)
    line = next(c for c in commands(table, decision) if c.split()[0] == choice.kind
                and (not choice.args or c.endswith(str(choice.args[0][1]))))
    sent = inbound.reply(m, line.upper())  # case does not matter
    (move,) = moves(table.app, table.game_id)
    assert move.decision_id == decision.id and move.source == "player"
    (answer,) = answers(table.inbox, m.to_addr)
    assert answer.headline.startswith("Recorded:")
    assert answer.msg["In-Reply-To"] == sent["Message-ID"]
    assert answer.subject == m.subject
    assert REPLY_TO_RE.match(reply_address(answer))


def test_the_same_reply_delivered_twice_is_read_once(table, inbound):
    decision, m = first_mail(table)
    msg = reply_to(m, commands(table, decision)[0])
    for _ in range(2):
        inbound.send(wire(msg), m.to_addr, [reply_address(m)])
    assert len(moves(table.app, table.game_id)) == 1
    assert len(answers(table.inbox, m.to_addr)) == 1


@pytest.mark.parametrize("text", ["", "bid banana", "pass pass pass", "BID -1", "bid"])
def test_garbage_is_answered_with_the_commands_and_plays_nothing(table, inbound, text):
    decision, m = first_mail(table)
    inbound.reply(m, text)
    assert moves(table.app, table.game_id) == []
    (answer,) = answers(table.inbox, m.to_addr)
    assert answer.headline.startswith(("Not played:", "Your reply had no command"))
    for c in spoken(table, decision):
        assert f"  {c}\n" in answer.text


def test_a_command_that_leaves_out_a_word_is_never_completed(table, inbound):
    decision = table.play_until(lambda d, st: d.kind == "act" and any(
        a.kind == "recruit" for a in game_state(table.app, table.game_id)[0]
        .legal_actions(st, d.position)))
    m = table.mail(decision)
    recruit = next(c for c in commands(table, decision) if c.startswith("recruit"))
    name_only = recruit.rsplit(" ", 1)[0]  # without the payment
    before = len(moves(table.app, table.game_id))
    inbound.reply(m, name_only.lower())
    assert len(moves(table.app, table.game_id)) == before
    answer = answers(table.inbox, m.to_addr)[-1]
    assert "leaves out part of the move" in answer.text
    assert recruit in answer.text


def test_a_reply_from_a_stranger_is_dropped_unanswered(table, inbound):
    decision, m = first_mail(table)
    sent_before = len(table.inbox.all())
    inbound.reply(m, commands(table, decision)[0], sender="mallory@evil.example")
    assert moves(table.app, table.game_id) == []
    assert len(table.inbox.all()) == sent_before


def test_a_reply_from_another_player_is_told_so_and_plays_nothing(table, inbound):
    decision, m = first_mail(table)
    other = next(p.email for p in PLAYERS if p.email != m.to_addr)
    inbound.reply(m, commands(table, decision)[0], sender=other)
    assert moves(table.app, table.game_id) == []
    assert answers(table.inbox, m.to_addr) == []
    (told,) = answers(table.inbox, other)
    assert told.headline == "This reply address belongs to another player."


@pytest.mark.parametrize("address", [
    "play+" + "a" * 32 + "@pbem.test",  # well formed, unknown
    "play+abc@pbem.test",  # malformed
])
def test_a_forged_reply_address_is_dropped(table, inbound, address):
    decision, m = first_mail(table)
    sent_before = len(table.inbox.all())
    inbound.reply(m, commands(table, decision)[0], to=address)
    assert moves(table.app, table.game_id) == []
    assert len(table.inbox.all()) == sent_before


def test_the_receiver_takes_no_mail_for_other_addresses(table, inbound):
    with pytest.raises(smtplib.SMTPRecipientsRefused):
        inbound.send(b"Subject: hi\r\n\r\nhello\r\n", "a@example.com", ["ann@example.com"])


def test_a_reply_to_a_closed_decision_is_refused_as_late(table, inbound):
    decision, m = first_mail(table)
    line = commands(table, decision)[0]
    table.play_on_page(decision, table.bot_choice(decision))
    before = len(moves(table.app, table.game_id))
    inbound.reply(m, line)
    assert len(moves(table.app, table.game_id)) == before
    answer = answers(table.inbox, m.to_addr)[-1]
    assert "already recorded" in answer.text


@pytest.mark.parametrize("headers", [
    {"Auto-Submitted": "auto-replied"},
    {"Precedence": "bulk"},
    {"X-Autoreply": "yes"},
    {"List-Id": "<friends.lists.example.com>"},
    {"Authentication-Results": "mx.example.com; spf=fail smtp.mailfrom=example.com; "
                               "dkim=none; dmarc=fail header.from=example.com"},
])
def test_auto_replies_lists_and_forged_mail_are_never_answered(table, inbound, headers):
    decision, m = first_mail(table)
    sent_before = len(table.inbox.all())
    inbound.reply(m, commands(table, decision)[0], headers=headers)
    assert moves(table.app, table.game_id) == []
    assert len(table.inbox.all()) == sent_before


def test_a_delivery_report_is_never_answered(table, inbound):
    decision, m = first_mail(table)
    sent_before = len(table.inbox.all())
    report = reply_to(m, "Delivery to the following recipient failed permanently")
    inbound.send(wire(report), "", [reply_address(m)])  # MAIL FROM:<>
    assert moves(table.app, table.game_id) == []
    assert len(table.inbox.all()) == sent_before


def test_a_reply_that_passes_dmarc_is_played(table, inbound):
    decision, m = first_mail(table)
    inbound.reply(m, commands(table, decision)[0], headers={
        "Authentication-Results": "mx.pbem.test; spf=pass; dkim=pass; dmarc=pass"})
    assert len(moves(table.app, table.game_id)) == 1


@pytest.mark.parametrize("style", ["german", "html", "signature"])
def test_mail_programs_replies_are_read(table, inbound, style):
    decision, m = first_mail(table)
    line = commands(table, decision)[-1]
    kwargs = {"german": {"lang": "de"}, "html": {"html": True},
              "signature": {"signature": "Ann\nSent from my phone"}}[style]
    inbound.reply(m, line, **kwargs)
    (move,) = moves(table.app, table.game_id)
    assert move.decision_id == decision.id
    assert answers(table.inbox, m.to_addr)[-1].headline.startswith("Recorded:")


def test_a_large_attachment_does_not_stop_the_command(table, inbound):
    decision, m = first_mail(table)
    msg = reply_to(m, commands(table, decision)[0])
    msg.add_attachment(b"\0" * (10 * 1024 * 1024), maintype="application",
                       subtype="octet-stream", filename="big.bin")
    inbound.send(wire(msg), m.to_addr, [reply_address(m)])
    assert len(moves(table.app, table.game_id)) == 1


def test_every_message_read_is_noted_once(table, inbound):
    decision, m = first_mail(table)
    inbound.reply(m, "bid banana")
    inbound.reply(m, "hello")
    inbound.reply(m, commands(table, decision)[0])
    with table.app.app_context(), session_scope() as s:
        rows = list(s.exec(select(InboundMessage).order_by(InboundMessage.id)))
    assert [r.outcome for r in rows] == ["refused", "talk", "played"]
    assert [r.played for r in rows] == [0, 0, 1]


def test_an_action_named_by_its_id_still_works(table, inbound):
    decision, m = first_mail(table)
    mod, state = game_state(table.app, table.game_id)
    action = mod.legal_actions(state, decision.position)[0]
    inbound.reply(m, str(action))
    (move,) = moves(table.app, table.game_id)
    assert Action.from_json(move.action) == action


def test_the_inbound_domain_is_the_mail_domain_unless_set(make_app):
    assert make_app().config["INBOUND_DOMAIN"] == "pbem.test"
    assert make_app(INBOUND_DOMAIN="In.Example.ORG").config["INBOUND_DOMAIN"] == "in.example.org"
    with pytest.raises(mail.ConfigError, match="INBOUND_DOMAIN"):
        make_app(INBOUND_DOMAIN="not a domain")


def test_the_dev_mailbox_reply_box_answers_through_the_receiver(make_app):
    from tests.pgcluster import free_port
    from tests.server.conftest import start_game

    port = free_port()
    app = make_app(MAIL_BACKEND="dev", INBOUND_PORT=port)
    created = start_game(app)
    receiver = Inbound(app, port=port)
    try:
        client = app.test_client()
        listing = client.get("/dev/mail").get_data(as_text=True)
        names = re.findall(r'href="/dev/mail/([^"]+\.eml)"', listing)
        decision = open_decisions(app, created.game_id)[0]
        mod, state = game_state(app, created.game_id)
        line = expand_line(command_list(mod, state, decision.position)[0])[0]
        for name in names:
            page = client.get(f"/dev/mail/{name}").get_data(as_text=True)
            if PLAYERS[decision.position].email in page:
                break
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
        resp = client.post(f"/dev/mail/{name}/reply", data={"csrf": csrf, "text": line},
                           follow_redirects=False)
        assert resp.status_code == 303
        (move,) = moves(app, created.game_id)
        assert move.decision_id == decision.id
    finally:
        receiver.stop()


def test_a_reply_to_a_game_that_ended_says_so(table, inbound):
    from pbem import services

    decision, m = first_mail(table)
    line = commands(table, decision)[0]
    with table.app.app_context():
        services.abandon_game(table.admin)
    inbound.reply(m, line)
    assert moves(table.app, table.game_id) == []
    answer = answers(table.inbox, m.to_addr)[-1]
    assert "the game is over" in answer.text


def test_a_command_when_it_is_not_your_turn_plays_nothing(table, inbound):
    decision = table.open()
    other = next(p for i, p in enumerate(PLAYERS) if i != decision.position)
    inbound.reply(table.inbox.to(other.email)[0], "pass")  # the game_started email
    assert moves(table.app, table.game_id) == []
    answer = answers(table.inbox, other.email)[-1]
    assert "it is not your turn now" in answer.text


def test_the_answer_is_in_the_players_language(app, inbox):
    from pbem import services
    from tests.server.conftest import start_game

    german = [services.PlayerIn(p.name, p.email, "de", p.timezone) for p in PLAYERS]
    created = start_game(app, players=german)
    receiver = Inbound(app)
    try:
        decision = open_decisions(app, created.game_id)[0]
        (m,) = [x for x in inbox.all() if x.decision_id == decision.id]
        mod, state = game_state(app, created.game_id)
        assert "Oder antworte auf diese E-Mail mit einem Befehl" in m.text
        receiver.reply(m, "bid blabla")
        answer = answers(inbox, m.to_addr)[-1]
        assert answer.headline == "Nicht gespielt: bid blabla"
        assert "Antworte auf diese E-Mail mit einem dieser Befehle:" in answer.text
        assert command_list(mod, state, decision.position, "de")[0] in answer.text
    finally:
        receiver.stop()


def test_several_lines_play_consecutive_decisions_of_one_player(table, inbound):
    mod, _ = game_state(table.app, table.game_id)

    def two_in_a_row(decision, state):
        choice = mod.BOTS["heuristic"](state, decision.position, __import__("random").Random(1))
        after, _ = mod.apply(state, decision.position, choice)
        pending = mod.pending(after)
        return bool(pending) and pending[0].seat == decision.position

    decision = table.play_until(two_in_a_row, limit=200)
    m = table.mail(decision)
    mod, state = game_state(table.app, table.game_id)
    import random

    from pbem import localize

    first = mod.BOTS["heuristic"](state, decision.position, random.Random(1))
    after, _ = mod.apply(state, decision.position, first)
    second = mod.legal_actions(after, decision.position)[0]
    card = localize.lookup(mod, state, None)
    from pbem.commands import spoken_action

    before = len(moves(table.app, table.game_id))
    inbound.reply(m, f"{spoken_action(first, card)}\n{spoken_action(second, card)}\nthanks!")
    played = moves(table.app, table.game_id)[before:]
    assert [Action.from_json(x.action) for x in played[:2]] == [first, second]
    assert all(x.position == decision.position for x in played[:2])
    answer = answers(table.inbox, m.to_addr)[-1]
    assert answer.headline.startswith("Recorded:") and "To the table: thanks!" in answer.text


def test_the_receiver_speaks_lmtp_too(table):
    from pbem import services
    from pbem.mail import receive
    from tests.pgcluster import free_port

    decision, m = first_mail(table)
    port = free_port()
    controller = receive.smtp_receiver(table.app, services.receive_reply, host="127.0.0.1",
                                       port=port, lmtp=True)
    try:
        msg = reply_to(m, commands(table, decision)[0])
        with smtplib.LMTP("127.0.0.1", port) as lmtp:
            lmtp.sendmail(m.to_addr, [reply_address(m)], wire(msg))
    finally:
        controller.stop()
    assert len(moves(table.app, table.game_id)) == 1


def test_the_inbound_command_receives_replies(table, db_url, tmp_path):
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    from tests.pgcluster import free_port

    decision, m = first_mail(table)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    env.update(PBEM_DATABASE_URL=db_url, PBEM_MAIL_BACKEND="memory",
               PBEM_MAIL_FROM="pbem <games@pbem.test>", PBEM_SECRET_KEY="x",
               PBEM_INBOUND_PORT=str(port))
    flask = str(Path(sys.executable).with_name("flask"))
    proc = subprocess.Popen([flask, "--app", "pbem", "pbem", "inbound"], env=env,
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        msg = reply_to(m, commands(table, decision)[0])
        deadline = time.monotonic() + 60
        while True:
            try:
                with smtplib.SMTP("127.0.0.1", port, timeout=30) as smtp:
                    smtp.sendmail(m.to_addr, [reply_address(m)], wire(msg))
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
    finally:
        proc.terminate()
        out = proc.communicate(timeout=30)[0].decode()
    assert len(moves(table.app, table.game_id)) == 1, out
    assert f"127.0.0.1:{port}" in out


def test_the_dev_reply_box_refuses_bad_posts(make_app):
    from tests.pgcluster import free_port
    from tests.server.conftest import start_game

    app = make_app(MAIL_BACKEND="dev", INBOUND_PORT=free_port())
    start_game(app)
    client = app.test_client()
    name = re.findall(r'href="/dev/mail/([^"]+\.eml)"',
                      client.get("/dev/mail").get_data(as_text=True))[0]
    page = client.get(f"/dev/mail/{name}").get_data(as_text=True)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    assert client.post(f"/dev/mail/{name}/reply", data={"text": "pass"}).status_code == 400
    assert client.post("/dev/mail/nothing.eml/reply",
                       data={"csrf": csrf, "text": "pass"}).status_code == 404
    assert client.post(f"/dev/mail/{name}/reply", data={"csrf": csrf, "text": "pass"},
                       environ_base={"REMOTE_ADDR": "203.0.113.9"}).status_code == 404
    down = client.post(f"/dev/mail/{name}/reply", data={"csrf": csrf, "text": "pass"})
    assert down.status_code == 502  # no receiver on that port: said, not a 500


def test_a_bid_above_your_teeth_is_answered_with_the_nearest_bids(table, inbound):
    decision, m = first_mail(table)
    highest = max(int(c.split()[1]) for c in commands(table, decision) if c.startswith("bid"))
    inbound.reply(m, "bid 99")
    assert moves(table.app, table.game_id) == []
    (answer,) = answers(table.inbox, m.to_addr)
    assert answer.headline == "Not played: bid 99"
    assert ("this is not a move you can make now; the nearest you can make:\n"
            f"    bid {highest}\n    bid {highest - 1}\n") in answer.text
    inbound.reply(answer, f"bid {highest}")  # as the answer offers it
    (move,) = moves(table.app, table.game_id)
    assert move.action == {"kind": "bid", "amount": highest}


# ------------------------------------------------------------------- a command is never talk

SEEDS = {"cavemen": 7, "stoneage": 5}
FIRST_KIND = {"cavemen": "bid", "stoneage": "place"}  # what the first emails ask
SAID = {  # what the answer says, in each language
    "recorded": {"en": "your choice for that turn is already recorded.",
                 "de": "deine Wahl für diesen Zug ist bereits gespeichert."},
    "illegal": {"en": "this is not a move you can make now; the nearest you can make:",
                "de": "diesen Zug kannst du jetzt nicht machen; am nächsten kommen diese:"},
    "not_played": {"en": "Not played: ", "de": "Nicht gespielt: "},
}


def table_in(app, game: str, lang: str):
    """A started game of ``game`` whose three players read ``lang``, its first emails
    delivered."""
    from pbem import services
    from tests.server.conftest import start_game
    from tests.server.helpers import Inbox, Table

    players = [services.PlayerIn(p.name, p.email, lang, p.timezone) for p in PLAYERS]
    created = start_game(app, players=players, seed=SEEDS[game], game=game)
    return Table(app, app.test_client(), Inbox(app), created.game_id, created.admin_token,
                 bot_seed=SEEDS[game])


def talk_events(app, game_id: str) -> list:
    from pbem.models import EventLog

    with app.app_context(), session_scope() as s:
        return list(s.exec(select(EventLog).where(EventLog.game_id == game_id,
                                                  EventLog.kind == "table_talk")))


def nobody_may(table, kind: str):
    """A predicate of ``Table.play_until``: no seat may make a move of ``kind`` now."""
    mod, _ = game_state(table.app, table.game_id)
    return lambda decision, state: all(
        a.kind != kind for d in mod.pending(state) for a in mod.legal_actions(state, d.seat))


@pytest.mark.parametrize("lang", ["en", "de"])
@pytest.mark.parametrize("game", ["cavemen", "stoneage"])
def test_a_command_from_an_email_whose_phase_is_over_is_refused_never_posted(
        app, inbound, game, lang):
    """Bidding (placing) is over for everyone: a reply to the first email with a command
    it listed is answered as late, and nothing goes to the table."""
    from tests.server.replying import listed_in

    table = table_in(app, game, lang)
    decision, m = first_mail(table)
    line = expand_line(listed_in(m)[-1])[0]
    table.play_until(nobody_may(table, FIRST_KIND[game]), limit=200)
    before = len(moves(app, table.game_id))
    inbound.reply(m, line)
    assert len(moves(app, table.game_id)) == before
    assert talk_events(app, table.game_id) == []
    answer = answers(table.inbox, m.to_addr)[-1]
    assert answer.headline == SAID["not_played"][lang] + line
    assert SAID["recorded"][lang] in answer.text


REFUSED = {  # a move of a kind the game has, not open at the first decision
    ("cavemen", "en"): "hunt mammoth", ("cavemen", "de"): "jage mammut",
    ("stoneage", "en"): "feed wood", ("stoneage", "de"): "ernähre holz",
}


@pytest.mark.parametrize("lang", ["en", "de"])
@pytest.mark.parametrize("game", ["cavemen", "stoneage"])
def test_a_move_of_a_kind_nobody_may_make_now_is_refused_with_the_commands(
        app, inbound, game, lang):
    from tests.server.replying import listed_in, offered_in_refusal

    table = table_in(app, game, lang)
    decision, m = first_mail(table)
    line = REFUSED[game, lang]
    inbound.reply(m, line)
    assert moves(app, table.game_id) == []
    assert talk_events(app, table.game_id) == []
    (answer,) = answers(table.inbox, m.to_addr)
    assert answer.headline == SAID["not_played"][lang] + line
    assert SAID["illegal"][lang] in answer.text
    offered = offered_in_refusal(answer)
    assert offered and set(offered) <= {c for x in listed_in(m) for c in expand_line(x)} | set(
        listed_in(m))


def test_a_line_that_begins_with_a_moves_word_is_a_command_even_in_a_sentence(table, inbound):
    """"bid high next time" begins with a kind of move: refused and answered with the
    commands (and how to write to the table), not posted."""
    decision, m = first_mail(table)
    inbound.reply(m, "Bid high next time")
    assert moves(table.app, table.game_id) == []
    assert talk_events(table.app, table.game_id) == []
    (answer,) = answers(table.inbox, m.to_addr)
    assert answer.headline == "Not played: Bid high next time"
    assert "(A line to the table begins with “say:”.)" in answer.text
    for c in spoken(table, decision):
        assert f"  {c}\n" in answer.text


def test_a_command_when_it_is_not_your_turn_is_answered_whatever_its_kind(table, inbound):
    decision = table.open()
    other = next(p for i, p in enumerate(PLAYERS) if i != decision.position)
    inbound.reply(table.inbox.to(other.email)[0], "hunt mammoth")  # bidding now
    assert moves(table.app, table.game_id) == []
    assert talk_events(table.app, table.game_id) == []
    assert "it is not your turn now" in answers(table.inbox, other.email)[-1].text


@pytest.mark.parametrize(("lang", "text"), [
    ("en", "Good luck, everyone"), ("en", "to be fair, that was a nice move"),
    ("en", "In my view the conch is overrated"), ("de", "Gut gespielt!"),
    ("de", "Wir sehen uns"), ("de", "Passt schon")])
@pytest.mark.parametrize("game", ["cavemen", "stoneage"])
def test_sentences_are_still_table_talk(app, inbound, game, lang, text):
    table = table_in(app, game, lang)
    decision, m = first_mail(table)
    inbound.reply(m, text)
    assert [e.data["text"] for e in talk_events(app, table.game_id)] == [text]
    assert moves(app, table.game_id) == [] and answers(table.inbox, m.to_addr) == []


def test_talk_after_a_refused_command_still_goes_to_the_table(table, inbound):
    decision, m = first_mail(table)
    table.play_until(nobody_may(table, "bid"), limit=200)
    inbound.reply(m, "bid 2\npass\nGood game, all")
    assert [e.data["text"] for e in talk_events(table.app, table.game_id)] == [
        "Good game, all"]
    answer = answers(table.inbox, m.to_addr)[-1]
    assert answer.headline == "Not played: bid 2"
    assert "The lines after it were not played either:\n  pass\n" in answer.text
    assert "To the table: Good game, all" in answer.text


# ------------------------------------------------------------------- the next email at once


def follow_up_game(make_app, game: str):
    """A game whose decisions wait FOLLOW_UP_MINUTES when the same player decides again
    at once, played on to a decision after which that player decides again."""
    import random

    from tests.server.conftest import start_game
    from tests.server.helpers import Inbox, Table

    app = make_app(FOLLOW_UP_MINUTES=10)
    created = start_game(app, seed=SEEDS[game], game=game)
    table = Table(app, app.test_client(), Inbox(app), created.game_id, created.admin_token,
                  bot_seed=SEEDS[game])
    mod, _ = game_state(app, created.game_id)

    def again(decision, state):
        choice = mod.BOTS["heuristic"](state, decision.position, random.Random(1))
        pending = mod.pending(mod.apply(state, decision.position, choice)[0])
        return bool(pending) and pending[0].seat == decision.position

    return table, table.play_until(again, limit=300)


@pytest.mark.parametrize("tail", ["Good luck, everyone", "nonsense 99"])
@pytest.mark.parametrize("game", ["cavemen", "stoneage"])
def test_a_reply_with_more_than_its_command_sends_the_next_turn_email_at_once(
        make_app, game, tail):
    """A command and a line of talk (or a command refused after it): the player's next
    decision, opened by the command, is emailed at once, not FOLLOW_UP_MINUTES later."""
    import random

    from pbem.commands import read_command
    from tests.server.replying import listed_in

    table, decision = follow_up_game(make_app, game)
    m = table.mail(decision)
    mod, state = game_state(table.app, table.game_id)
    choice = mod.BOTS["heuristic"](state, decision.position, random.Random(1))
    line = next(c for x in listed_in(m) for c in expand_line(x)
                if read_command(mod, state, decision.position, c) == choice)
    if tail.startswith("nonsense"):
        tail = f"{choice.kind} {tail}"  # a command, refused
    receiver = Inbound(table.app)
    try:
        receiver.reply(m, f"{line}\n{tail}")
    finally:
        receiver.stop()
    follow_up = table.open()
    assert follow_up.position == decision.position and follow_up.id != decision.id
    # no clock moved: what is delivered now went at once
    assert [x.to_addr for x in table.inbox.all() if x.decision_id == follow_up.id] == [
        m.to_addr]
    answer = answers(table.inbox, m.to_addr)[-1]
    assert answer.headline.startswith("Recorded:")
    if not tail.startswith(choice.kind):
        assert f"To the table: {tail}" in answer.text


# ------------------------------------------------------------------- the answer cap


CAPPED = {
    "en": ("This is the last answer for a while: you had 2 answers to your replies within "
           "an hour, as many as an hour allows. Until {when} your replies are still read "
           "and played, but not answered."),
    "de": ("Das ist vorerst die letzte Antwort: Du hast innerhalb einer Stunde 2 Antworten "
           "auf deine E-Mails bekommen, so viele wie eine Stunde erlaubt. Bis {when} werden "
           "deine E-Mails weiter gelesen und gespielt, aber nicht beantwortet."),
}


@pytest.mark.parametrize("lang", ["en", "de"])
def test_past_the_answer_cap_one_answer_says_until_when_then_silence(app, inbound, lang):
    """REPLY_ANSWERS_PER_HOUR answers, then one that says until when (the reader's time,
    zone and language), then none while the replies are still played; an hour after the
    first answer, answers again."""
    from datetime import UTC, timedelta

    from flask_babel import force_locale
    from sqlalchemy import update

    from pbem.i18n import format_deadline
    from pbem.models import Outbox
    from tests.server.replying import listed_in

    app.config["REPLY_ANSWERS_PER_HOUR"] = 2
    table = table_in(app, "cavemen", lang)
    decision, m = first_mail(table)
    for i in range(5):
        inbound.reply(m, f"bid nonsense {i}")
    sent = answers(table.inbox, m.to_addr)
    assert len(sent) == 3  # two answers, the one that says the cap, then none
    with app.app_context(), session_scope() as s:
        first = s.exec(select(Outbox.created_at).where(Outbox.template == "reply")
                       .order_by(Outbox.id)).first()
        with force_locale(lang):
            first = first if first.tzinfo else first.replace(tzinfo=UTC)  # SQLite
            until = format_deadline((first + timedelta(hours=1)).isoformat(),
                                    PLAYERS[decision.position].timezone)
    assert "(Asia/Tokyo)" in until["local"]
    assert CAPPED[lang].format(when=until["local"]) in " ".join(sent[-1].text.split())
    assert all(until["local"] not in x.text for x in sent[:2])
    # past the cap, a command is still played, unanswered
    inbound.reply(m, expand_line(listed_in(m)[0])[0])
    assert len(moves(app, table.game_id)) == 1
    assert len(answers(table.inbox, m.to_addr)) == 3
    # an hour after the first answers, the answers come again, as usual
    with app.app_context(), session_scope() as s:
        s.exec(update(Outbox).where(Outbox.template == "reply")
               .values(created_at=Outbox.created_at - timedelta(minutes=61)))
    inbound.reply(m, "bid nonsense again")
    again = answers(table.inbox, m.to_addr)
    assert len(again) == 4 and until["local"] not in again[-1].text
