"""The home page (issue 11): each game described with a link to its rules, players as
labelled fieldsets, the time zone from a list, and every problem of a refused form shown
at once (in a summary linked to the fields, and next to each field), values kept. The
service checks the same way for every caller."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from pbem import services
from pbem.errors import FormInvalid
from tests.server.helpers import PLAYERS, forms, new_game_data, new_game_form, snapshot

ANN, BOB, CY = PLAYERS


class Fields(HTMLParser):
    """The new-game form's fields (id, name, attributes), its labels' ``for`` and the
    ids of every element."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[dict[str, str]] = []
        self.label_for: set[str] = set()
        self.ids: set[str] = set()
        self.in_form = False

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "form":
            self.in_form = a.get("id") == "new-game"
        if not self.in_form:
            return
        if tag == "label" and a.get("for"):
            self.label_for.add(a["for"])
        if tag in ("input", "select", "textarea") and a.get("type") != "hidden":
            self.fields.append({"tag": tag, **a})

    def handle_endtag(self, tag):
        if tag == "form":
            self.in_form = False


def parse(html: str) -> Fields:
    p = Fields()
    p.feed(html)
    return p


def post(client, **changes: str):
    data = new_game_data(new_game_form(client)) | changes
    return client.post("/new", data=data)


def summary(html: str) -> list[tuple[str, str]]:
    """The error summary: (link target, text) per problem."""
    box = re.search(r'<ul id="error">(.*?)</ul>', html, re.S)
    assert box, "no error summary"
    return [(href, re.sub(r"<[^>]+>", "", text))
            for href, text in re.findall(r'<a href="#([^"]+)">(.*?)</a>', box.group(1))]


# --------------------------------------------------------------------------- the page


def test_each_game_is_described_with_its_player_count_and_a_rules_link(client):
    html = client.get("/").get_data(as_text=True)
    for name, low, high in (("cavemen", 2, 5), ("stoneage", 2, 4)):
        about = re.search(rf'<p class="about" id="about-{name}">(.*?)</p>', html, re.S)
        assert about and f'<a href="/rules/{name}">Rules</a>' in about.group(1)
        assert "rounds" in about.group(1)  # how long it is
        assert f'aria-describedby="about-{name}"' in html
        assert re.search(rf'for="game-{name}">.*?{low} to {high} players', html, re.S)


def test_every_field_of_the_form_has_a_label(client):
    page = parse(client.get("/").get_data(as_text=True))
    assert len(page.fields) > 20
    unlabelled = [f.get("name") for f in page.fields
                  if f["tag"] != "input" or f.get("type") != "radio"
                  if f.get("id") not in page.label_for]
    assert unlabelled == []
    radios = [f for f in page.fields if f.get("type") == "radio"]
    assert {f["id"] for f in radios} <= page.label_for


def test_the_time_zone_is_a_list_by_region_that_the_browser_may_preselect(client):
    html = client.get("/").get_data(as_text=True)
    selects = re.findall(r'<select name="tz(\d)"[^>]*>(.*?)</select>', html, re.S)
    assert [n for n, _ in selects] == ["0", "1", "2", "3", "4"]
    tag = re.search(r'<select name="tz0"[^>]*>', html).group(0)
    assert "data-browser-zone" in tag  # nothing chosen yet: the script may choose
    options = selects[0][1]
    assert '<option value="UTC" selected>UTC</option>' in options
    groups = re.findall(r'<optgroup label="([^"]+)">', options)
    assert groups[:3] == ["Europe", "America", "Asia"] and len(groups) == 10
    values = re.findall(r'<option value="([^"]+)"', options)
    assert len(values) == len(set(values)) > 300  # each zone once
    assert "Europe/Berlin" in values and "Asia/Kolkata" in values
    assert "Asia/Calcutta" not in values and "US/Eastern" not in values  # old aliases
    assert re.search(r'<option value="Europe/Vienna">Vienna \(UTC\+[12]\)</option>', options)
    assert re.search(r'<script src="/static/tz.js\?v=[0-9a-f]{12}" defer></script>', html)
    csp = client.get("/").headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp


def test_german_readers_get_the_cities_and_regions_in_german(client):
    html = client.get("/", headers={"Accept-Language": "de"}).get_data(as_text=True)
    assert '<optgroup label="Europa">' in html and '<optgroup label="Asien">' in html
    assert re.search(r'<option value="Europe/Vienna">Wien \(UTC\+[12]\)</option>', html)


def test_a_zone_the_list_does_not_show_is_still_accepted_and_kept(app, client):
    resp = post(client, tz1="Asia/Calcutta", hours="-1")  # an old name: valid
    html = resp.get_data(as_text=True)
    assert [target for target, _ in summary(html)] == ["f-hours"]
    tag = re.search(r'<select name="tz1"[^>]*>(.*?)</select>', html, re.S)
    assert '<option value="Asia/Calcutta" selected>Asia/Calcutta</option>' in tag.group(1)
    assert "data-browser-zone" not in tag.group(0)


# --------------------------------------------------------------------------- errors


def test_every_problem_is_shown_at_once_linked_to_its_field(app, client, inbox):
    before = snapshot(app)
    resp = post(client, game="nope", title="a\nb", email0="ann@", tz0="Mars/Olympus",
                name1="", email1=BOB.email, name2="Cy", email2=BOB.email, lang2="fr",
                hours="soon", reminders="later", absent_after="0", absent_bot="random",
                vacation_days="99")
    assert resp.status_code == 400
    html = resp.get_data(as_text=True)
    problems = summary(html)
    assert [target for target, _ in problems] == [
        "f-game", "f-title", "f-email0", "f-tz0", "f-name1", "f-email2", "f-lang2",
        "f-hours", "f-reminders", "f-absent_after", "f-absent_bot", "f-vacation_days"]
    texts = dict(problems)
    assert "unknown time zone 'Mars/Olympus'" in texts["f-tz0"].replace("&#39;", "'")
    assert "appears twice" in texts["f-email2"]
    assert "12 things to fix" in html
    page = parse(html)
    for target, _ in problems:
        assert target in page.ids, f"the summary links to a missing field {target}"
        key = target.removeprefix("f-")
        field = next((f for f in page.fields if f.get("id") == target), None)
        if field is not None:  # a field (the game choice is a fieldset of radios)
            assert field.get("aria-invalid") == "true", target
            assert f"e-{key}" in field.get("aria-describedby", "").split(), target
        assert f"e-{key}" in page.ids, f"no message next to {target}"
    assert snapshot(app) == before and inbox.all() == []


def test_a_refused_form_keeps_every_value_entered(client):
    resp = post(client, title="Friday", name3="Dee", email3="dee@", lang3="de",
                tz3="Europe/Vienna", reminders="12; 3", absent_after="3",
                absent_bot="default", vacation_days="2.5", hours="24", game="stoneage")
    html = resp.get_data(as_text=True)
    assert [t for t, _ in summary(html)] == ["f-email3"]
    (form,) = [f for f in forms(html) if f.attrs.get("id") == "new-game"]
    assert form.checked["game"] == "stoneage"
    assert {k: form.inputs[k] for k in ("title", "name3", "email3", "reminders",
                                        "absent_after", "vacation_days", "hours")} == {
        "title": "Friday", "name3": "Dee", "email3": "dee@", "reminders": "12; 3",
        "absent_after": "3", "vacation_days": "2.5", "hours": "24"}
    for name, value in (("tz3", "Europe/Vienna"), ("lang3", "de"), ("tz0", ANN.timezone),
                        ("absent_bot", "default")):
        select = re.search(rf'<select[^>]* name="{name}"[^>]*>.*?</select>', html, re.S).group(0)
        assert f'<option value="{value}" selected' in select or \
            f'<option value="{value}" lang="{value}" selected' in select, name


def test_too_few_players_is_said_at_the_players_heading(client):
    resp = post(client, name1="", email1="", name2="", email2="")
    html = resp.get_data(as_text=True)
    assert summary(html) == [("f-players", "A game needs 2 to 5 players, not 1.")]
    assert 'id="e-players"' in html and 'id="f-players"' in html


def test_a_valid_form_still_creates_the_game(app, client, inbox):
    resp = post(client, tz0="Asia/Kolkata")
    assert resp.status_code == 200 and "Check your email" in resp.get_data(as_text=True)
    assert [m.template for m in inbox.all()] == ["host_confirm"]


# --------------------------------------------------------------------------- the service


def test_the_service_refuses_every_problem_at_once_for_any_caller(app):
    with app.app_context(), pytest.raises(FormInvalid) as refused:
        services.create_game("cavemen", [services.PlayerIn("", "x", "en", "Nowhere"),
                                         None, BOB],
                             {"hours_per_decision": 0, "vacation_days": "-1"},
                             confirm_by_email=False)
    assert [field for field, _ in refused.value.errors] == [
        "name0", "email0", "tz0", "hours", "vacation_days"]
    assert str(refused.value).count("; ") == 4  # the CLI prints them all
