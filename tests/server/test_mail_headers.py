"""Mail headers built from user text arrive as exactly what was typed (issue 7, items 1
and 7). Every check reads the raw bytes of the sent message, as a mail server gets them:
the header block is unfolded by hand, the set of header names must be exactly the
expected one, and Subject, To and From are decoded with RFC 2047 (``decode_header``) and
with Python's own parser, both of which must give back the input."""

from __future__ import annotations

import email
import email.policy
import re
from email.header import decode_header

import pytest

from pbem import mail, services
from pbem.mail.headers import BadAddress, mailbox, parse_address, phrase, unstructured
from pbem.models import Game
from tests.server.helpers import (
    PLAYERS,
    create_on_web,
    load,
    path_of,
    text_of,
)

BASE_HEADERS = {"content-type", "mime-version", "subject", "from", "to", "date",
                "message-id", "list-id", "list-unsubscribe", "list-unsubscribe-post",
                "auto-submitted", "x-auto-response-suppress", "content-language"}
THREAD = {"in-reply-to", "references"}
REPLY_TO = re.compile(r"^pbem <games\+r\.[a-z2-7]{32}@pbem\.test>$")  # a seat's reply address

TITLES = [
    "=?utf-8?q?Win=0D=0AReply-To:_payout@evil.example?=",  # a header through a decode
    "=?utf-8?q?x=0D=0A=0D=0AYour_account_is_closed?=",  # a body through a decode
    "Friday game — Höhle",  # non-ASCII after ASCII words keeps its spaces
    "=?utf-8?b?SGk=?= =?utf-8?b?dGhlcmU=?=",  # encoded words that look valid
    "Spiel: Höhlenmenschen am Freitag, mit Ännchen, Jürgen und Groß " + "x" * 30,  # long
    "tab-free  double  spaces",
    "a" * 100,
    ("Ünïcödé " * 12).strip(),
]
NAMES = [
    "=?utf-8?q?Eve=0D=0ABcc:_all@evil.example?=",
    "=?utf-8?q?=0D=0A=0D=0Ahi?=",
    'Bo&b "the builder", Jr.',
    "Jürgen Groß",
    "Ännchen von Tharau aus dem Memelland, zweite Strophe, Refrain"[:60],
    "李小龍",
    "O'Brien",
]


def header_block(raw: bytes) -> list[tuple[str, str]]:
    """The top-level headers of a raw message as (name, raw value) pairs, unfolded."""
    head = raw.split(b"\r\n\r\n", 1)[0].decode("ascii")  # headers on the wire are ASCII
    unfolded = re.sub(r"\r\n(?=[ \t])", "", head)
    pairs = []
    for line in unfolded.split("\r\n"):
        name, sep, value = line.partition(":")
        assert sep and re.fullmatch(r"[A-Za-z0-9-]+", name), line
        pairs.append((name, value.strip()))
    return pairs


def rfc2047(value: str) -> str:
    """A header value decoded by the letter of RFC 2047 (the standard library's
    ``decode_header``: whitespace between encoded words is dropped, kept elsewhere)."""
    return "".join(part.decode(charset or "ascii") if isinstance(part, bytes) else part
                   for part, charset in decode_header(value))


def check_message(raw: bytes, subject: str, to_name: str, to_addr: str,
                  body_start: str) -> None:
    pairs = header_block(raw)
    names = [n.lower() for n, _ in pairs]
    assert len(names) == len(set(names)), names  # no header twice
    values = {n.lower(): v for n, v in pairs}
    assert REPLY_TO.match(values.pop("reply-to")), pairs  # every email to a seat's player
    assert set(values) in (BASE_HEADERS, BASE_HEADERS | THREAD), set(values) ^ BASE_HEADERS
    assert rfc2047(values["subject"]) == subject
    to = rfc2047(values["to"])
    assert to == f"{to_name} <{to_addr}>", to
    assert rfc2047(values["from"]) == "pbem <games@pbem.test>"
    parsed = email.message_from_bytes(raw, policy=email.policy.default)
    assert parsed["Subject"] == subject
    (addr,) = parsed["To"].addresses
    assert (addr.display_name, addr.addr_spec) == (to_name, to_addr)
    assert parsed.defects == [] and parsed["To"].defects == ()
    assert [p.get_content_type() for p in parsed.iter_parts()] == ["text/plain", "text/html"]
    text = parsed.get_body(("plain",)).get_content().replace("\r\n", "\n")
    assert text.startswith(body_start), text[:300]  # the body is the one we wrote


@pytest.mark.parametrize("title", TITLES)
def test_a_title_arrives_as_typed_and_adds_no_header(app, client, inbox, title):
    create_on_web(client, app, title=title)
    (raw,) = inbox.raw()
    check_message(raw, title, "Ann", "ann@example.com",
                  "Confirm your new game of Cavemen to send the invitations")


@pytest.mark.parametrize("name", NAMES)
def test_a_player_name_arrives_as_typed_in_the_to_header(app, inbox, name):
    players = [PLAYERS[0], services.PlayerIn(name, "eve@example.com"), PLAYERS[2]]
    with app.app_context():
        services.create_game("cavemen", players, seed=7, confirm_by_email=False,
                             title="Friday game — Höhle")
    raws = {email.message_from_bytes(r)["Message-ID"]: r for r in inbox.raw()}
    to_eve = [r for r in raws.values() if b"eve@example.com>" in r.split(b"\r\n\r\n")[0]]
    assert len(to_eve) == 1
    check_message(to_eve[0], "Friday game — Höhle", name, "eve@example.com",
                  "Ann invites you to play Cavemen: accept or decline")


def test_a_hostile_name_and_title_together_still_give_the_expected_headers(app, inbox):
    name, title = NAMES[0], TITLES[0]
    players = [services.PlayerIn(name, "host@example.com"), PLAYERS[1]]
    with app.app_context():
        services.create_game("cavemen", players, seed=7, title=title)
    (raw,) = [r for r in inbox.raw() if b"host@example.com>" in r.split(b"\r\n\r\n")[0]]
    check_message(raw, title, name, "host@example.com", "Confirm your new game")


@pytest.mark.parametrize("text", ["Line\r\nBreak", "Line\nBreak", "Line\rBreak", "Nul\x00",
                                  "Bidi \u202eevil", "Isolate \u2066x\u2069",
                                  "Zero\u200bwidth", "Para\u2029graph"])
def test_line_breaks_and_invisible_characters_in_names_and_titles_are_refused(
        app, client, inbox, text):
    from tests.server.helpers import new_game_data, new_game_form, snapshot

    before = snapshot(app)
    for field in ("name1", "title"):
        data = new_game_data(new_game_form(client))
        data[field] = text
        resp = client.post("/new", data=data)
        assert resp.status_code == 400, field
        error = text_of(resp.get_data(as_text=True), "error")
        assert "control characters" in error, error
    assert snapshot(app) == before and inbox.all() == []


def test_names_may_join_letters_as_some_scripts_need(app):
    """Zero-width joiner and non-joiner are part of how some names are written."""
    players = [PLAYERS[0], services.PlayerIn("می\u200cخواهم", "fa@example.com")]
    with app.app_context():
        services.create_game("cavemen", players, confirm_by_email=False)


# --------------------------------------------------------------------------- the helpers


@pytest.mark.parametrize("text", TITLES + NAMES)
def test_header_helpers_round_trip_any_text(text):
    value = unstructured(text)
    assert rfc2047(value if isinstance(value, str) else value.encode()) == text
    assert rfc2047(phrase(text)) == text
    assert rfc2047(mailbox(text, "a@example.com")) == f"{text} <a@example.com>"


@pytest.mark.parametrize("addr", ["a:b@x.org", "a..b@x.org", "ü@example.com",
                                  "a@[127.0.0.1].org", "a@[127.0.0.1]", ".a@x.org",
                                  "a.@x.org", "a@x", "a@-x.org", "a@x.123", "a b@x.org",
                                  '"a"@x.org', "a@b@x.org", "a@x..org", "a" * 65 + "@x.org",
                                  "a@" + "x" * 64 + ".org", "a@x.org\r\nBcc: y@x.org", "",
                                  "=?utf-8?q?a=0D=0AReply-To=3A=20x=40evil=2Eexample?="
                                  "@example.com", "a=?b@x.org"])
def test_addresses_the_header_writer_cannot_write_are_refused(addr):
    with pytest.raises(BadAddress):
        parse_address(addr)
    with pytest.raises(BadAddress):
        mailbox("Eve", addr)


@pytest.mark.parametrize(("addr", "sent"), [
    ("Ann@Example.COM", "Ann@example.com"),
    ("o'brien+pbem@mail.example.co.uk", "o'brien+pbem@mail.example.co.uk"),
    ("ann@bücher.example", "ann@xn--bcher-kva.example"),
    (" ann@example.com ", "ann@example.com"),
])
def test_good_addresses_are_kept_in_the_form_they_are_sent_to(addr, sent):
    assert parse_address(addr) == sent


@pytest.mark.parametrize("addr", ["a:b@x.org", "a..b@x.org", "ü@example.com",
                                  "a@[127.0.0.1].org"])
def test_the_new_game_form_refuses_an_address_it_could_not_mail(app, client, inbox, addr):
    from tests.server.helpers import new_game_data, new_game_form, snapshot

    data = new_game_data(new_game_form(client))
    data["email2"] = addr
    before = snapshot(app)
    resp = client.post("/new", data=data)
    assert resp.status_code == 400
    assert "Player 3:" in text_of(resp.get_data(as_text=True), "error")
    assert snapshot(app) == before and inbox.all() == []


# --------------------------------------------------------------------------- item 7


def test_date_is_utc_with_plus_zero(table):
    for raw in table.inbox.raw():
        values = {n.lower(): v for n, v in header_block(raw)}
        assert re.fullmatch(r"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d \+0000", values["date"])


def test_message_ids_use_the_domain_of_the_sender_or_the_configured_one(make_app):
    for config, domain in [({"MAIL_FROM": "x <games@friday.example>"}, "friday.example"),
                           ({"MAIL_FROM": "x <g@a.example>", "MAIL_DOMAIN": "mid.example"},
                            "mid.example")]:
        app = make_app(**config)
        with app.app_context():
            services.create_game("cavemen", PLAYERS, seed=7, confirm_by_email=False,
                                 start=True)
            mail.deliver_due()
        for out in app.extensions["pbem.mail"].sent:
            mid = email.message_from_bytes(out.data)["Message-ID"]
            assert mid.endswith(f"@{domain}>"), mid


@pytest.mark.parametrize("bad", ["127.0.0.1", "[10.0.0.1]", "localhost", "a b"])
def test_a_bare_ip_or_no_domain_for_message_ids_refuses_to_start(make_app, bad):
    with pytest.raises(mail.ConfigError, match="domain name"):
        make_app(MAIL_DOMAIN=bad)


def test_every_email_to_a_player_has_one_reply_to_of_its_own(table):
    seen = set()
    for raw in table.inbox.raw():
        (reply_to,) = [v for n, v in header_block(raw) if n.lower() == "reply-to"]
        assert REPLY_TO.match(reply_to) and reply_to not in seen
        seen.add(reply_to)


def test_no_reply_to_where_replies_are_off(make_app):
    app = make_app(REPLIES=False)
    from tests.server.conftest import start_game

    start_game(app)
    for raw in [m.data for m in app.extensions["pbem.mail"].sent]:
        assert "reply-to" not in {n.lower() for n, _ in header_block(raw)}


def test_every_email_offers_one_click_unsubscribe(app, table):
    for m in table.inbox.all():
        assert m.msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        url = str(m.msg["List-Unsubscribe"]).strip()  # may be folded after the colon
        assert re.fullmatch(r"<http://pbem\.test/u/[A-Za-z0-9_-]{43}>", url), url
        assert url.strip("<>") in m.text  # the footer has the same link


def test_every_email_of_a_game_says_what_is_asked_in_its_first_line(table):
    firsts = {m.template: m.headline for m in table.inbox.all()}
    assert firsts["decision"].startswith("Your turn: bid for the conch, by ")
    assert firsts["game_started"] == "The game has started: nothing to do until your turn"
    for m in table.inbox.all():
        assert text_of(m.html, "headline") == m.headline  # the HTML part starts with it
        assert text_of(m.html, "preheader").startswith(m.headline)  # and its preview


def test_the_game_name_is_the_subject_and_never_a_bare_id(app, table):
    game = load(app, Game, table.game_id)
    assert game.title == "Cavemen: Ann, Bob, Cy"
    assert {m.subject for m in table.inbox.all()} == {game.title}
    assert table.game_id not in game.title


NARRATED = 'Bo&b "x"'


def test_narration_shows_names_as_typed_in_html_emails_and_pages(app, client, inbox):
    players = [PLAYERS[0], PLAYERS[1], services.PlayerIn(NARRATED, "bo@example.com")]
    with app.app_context():
        services.create_game("cavemen", players, seed=7, confirm_by_email=False, start=True)
    import html as html_lib

    for m in inbox.all():
        if m.to_addr == "bo@example.com":
            continue  # their own emails call them "you"
        shown = html_lib.unescape(re.sub(r"<[^>]+>", " ", m.html))
        text_lines = [ln for ln in m.text.splitlines() if "Bo&b" in ln]
        assert text_lines and all(NARRATED in ln for ln in text_lines)  # raw in text
        assert NARRATED in shown  # as typed once the HTML is read
        assert "&amp;amp;" not in m.html and 'Bo&b "' not in m.html  # escaped exactly once
        assert m.html.count("Bo&") == m.html.count("Bo&amp;b &#34;x&#34;")  # everywhere
        assert "conch to Bo&amp;b &#34;x&#34;." in m.html  # the narration too
    page = client.get(path_of(inbox.to("bo@example.com")[0].link("/g/")))
    body = page.get_data(as_text=True)
    assert 'Bo&b "' not in body and "Bo&amp;b &#34;x&#34;" in body


def test_an_international_message_id_domain_is_written_in_ascii(make_app):
    app = make_app(MAIL_DOMAIN="spiele.bücher.example")
    assert app.config["MAIL_DOMAIN"] == "spiele.xn--bcher-kva.example"
