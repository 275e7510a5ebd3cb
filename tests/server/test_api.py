"""The public JSON API (issue 34, points 2 and 4): every route, its refusals as JSON,
authentication by the game page's token only (in the Authorization header only), the
exactly-once move with its 409s and 422s, talk's limit, the wait for a change, the
host's overview, the OpenAPI document checked against real answers, no 500 on garbage,
and whole games of each game read through every seat's answers for another seat's links
and hidden cards. Both databases (the ``app`` fixture)."""

from __future__ import annotations

import itertools
import json
import random
import re
import threading
import time

import jsonschema
import pytest
from sqlmodel import func, select

from engine.core import EngineError, format_action, parse_action
from pbem.db import read_scope
from pbem.models import EventLog, Move
from tests.server.conftest import start_game
from tests.server.helpers import PLAYERS, game_state, open_decisions, path_of, token_of

API = "/api/v1"
TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{43}")


# --------------------------------------------------------------------------- helpers


def raw_page(table, position: int) -> str:
    """The token of the seat's game page link, from its first email (as a player has it)."""
    email = table.seats[position].email
    mail = next(m for m in table.inbox.all() if m.to_addr == email and m.under("/g/"))
    return path_of(mail.link("/g/")).rsplit("/", 1)[1]


def call(client, method: str, path: str, token: str | None = None, body=None,
         **kwargs):
    headers = dict(kwargs.pop("headers", {}))
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body) if body is not None and not isinstance(body, str | bytes) \
        else body
    resp = client.open(API + path, method=method, headers=headers, data=data,
                       content_type="application/json" if data is not None else None,
                       **kwargs)
    assert resp.status_code < 500, resp.get_data(as_text=True)
    if resp.status_code != 204:
        assert resp.mimetype == "application/json", resp.get_data(as_text=True)[:300]
    return resp


def moves(app) -> int:
    with app.app_context(), read_scope() as s:
        return s.exec(select(func.count()).select_from(Move)).one()


def deciding(table) -> tuple[int, str]:
    """The open decision's seat and that seat's page token."""
    decision = table.open()
    return decision.position, raw_page(table, decision.position)


def error_of(resp) -> dict:
    body = resp.get_json()
    assert set(body) == {"error"}, body
    return body["error"]


# --------------------------------------------------------------------------- reading


def test_the_seat_reads_its_view_as_json_with_times_in_utc(table):
    position, raw = deciding(table)
    resp = call(table.client, "GET", "/seat", raw)
    assert resp.status_code == 200
    view = resp.get_json()
    assert view["reader"]["position"] == position
    assert view["game"]["id"] == table.game_id and view["game"]["status"] == "active"
    assert view["mine"]["decision"]["id"] == table.open().id
    assert view["open"][0]["opened_at"].endswith("Z")
    assert [s["name"] for s in view["seats"]] == [p.name for p in PLAYERS]
    assert view["events"] and view["since"] == 0
    later = call(table.client, "GET", f"/seat?since={view['game']['event_seq']}", raw)
    assert later.get_json()["events"] == []


def test_a_seat_not_asked_has_no_legal_actions(table):
    position, _raw = deciding(table)
    other = raw_page(table, (position + 1) % 3)
    legal = call(table.client, "GET", "/seat/legal", other).get_json()
    assert legal["decision"] is None and legal["legal"] == []


def test_legal_actions_are_in_the_notation_the_engine_reads_back(table):
    _position, raw = deciding(table)
    legal = call(table.client, "GET", "/seat/legal", raw).get_json()
    decision = table.open()
    assert legal["decision"]["id"] == decision.id and legal["decision"]["kind"] == decision.kind
    mod, state = game_state(table.app, table.game_id)
    actions = mod.legal_actions(state, decision.position)
    assert [c["notation"] for c in legal["legal"]] == [format_action(a) for a in actions]
    assert [parse_action(c["notation"], actions, exact=True) for c in legal["legal"]] == actions
    assert all(c["effect"] is not None for c in legal["legal"])


# --------------------------------------------------------------------------- acting


def act(table, raw: str, notation: str | None = None, decision: int | None = None,
        version: int | None = None):
    legal = call(table.client, "GET", "/seat/legal", raw).get_json()
    body = {"decision": decision if decision is not None else legal["decision"]["id"],
            "version": version if version is not None else legal["version"],
            "action": notation if notation is not None else legal["legal"][0]["notation"]}
    return call(table.client, "POST", "/seat/act", raw, body), body


def test_a_move_is_recorded_once_and_a_second_post_says_already_recorded(table):
    _position, raw = deciding(table)
    before = moves(table.app)
    first, body = act(table, raw)
    assert first.status_code == 200, first.get_json()
    done = first.get_json()
    assert done["decision"] == body["decision"] and done["action"] == body["action"]
    assert done["version"] == body["version"] + 1
    again = call(table.client, "POST", "/seat/act", raw, body)
    assert again.status_code == 409
    assert error_of(again) | {} == {"code": "decision/already_recorded", "version":
                                    done["version"], "message": error_of(again)["message"],
                                    "kind": None}
    assert moves(table.app) == before + 1


def test_a_stale_version_is_409_with_the_version_now_and_records_nothing(table):
    _position, raw = deciding(table)
    before = moves(table.app)
    version = call(table.client, "GET", "/seat", raw).get_json()["game"]["version"]
    for stale in (version + 1, max(version - 1, 0) if version else 5):
        resp, _ = act(table, raw, version=stale)
        assert resp.status_code == 409
        assert error_of(resp)["code"] == "game/stale_version"
        assert error_of(resp)["version"] == version
    assert moves(table.app) == before


def test_an_illegal_action_is_422_with_the_engines_code(table):
    _position, raw = deciding(table)
    mod, state = game_state(table.app, table.game_id)
    decision = table.open()
    with pytest.raises(EngineError) as refused:
        parse_action("dance wildly", mod.legal_actions(state, decision.position), exact=True)
    resp, _ = act(table, raw, notation="dance wildly")
    assert resp.status_code == 422
    assert error_of(resp)["code"] == refused.value.code
    assert error_of(resp)["kind"] == decision.kind
    empty, _ = act(table, raw, notation=" ")
    assert (empty.status_code, error_of(empty)["code"]) == (422, "action/missing")


def test_a_decision_of_another_seat_is_not_found_and_nothing_is_recorded(table, app):
    position, raw = deciding(table)
    other = raw_page(table, (position + 1) % 3)
    before = moves(app)
    notation = call(table.client, "GET", "/seat/legal", raw).get_json()["legal"][0]["notation"]
    resp, _ = act(table, other, notation, decision=table.open().id)
    assert resp.status_code == 404 and error_of(resp)["code"] == "decision/unknown"
    # a seat of another game names this game's decision: the same
    second = start_game(app, players=PLAYERS[:2], seed=3)
    with app.app_context():
        mails = [m for m in table.inbox.all() if m.under("/g/")]
    stranger = next(path_of(m.link("/g/")).rsplit("/", 1)[1] for m in reversed(mails))
    assert call(table.client, "GET", "/seat", stranger).get_json()["game"]["id"] \
        == second.game_id
    resp, _ = act(table, stranger, notation, decision=table.open().id,
                  version=call(table.client, "GET", "/seat", stranger).get_json()
                  ["game"]["version"])
    assert resp.status_code == 404
    assert moves(app) == before


# --------------------------------------------------------------------------- authentication


def refused_401(resp) -> None:
    assert resp.status_code == 401, resp.get_data(as_text=True)
    assert error_of(resp)["code"] == "auth/unauthorized"
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    assert "Set-Cookie" not in resp.headers


def test_no_token_a_garbled_one_or_one_of_another_kind_is_401(table):
    _position, raw = deciding(table)
    one_click = token_of(next(iter(table.one_click(table.open()))))
    client = table.client
    for path in ("/seat", "/seat/legal", "/seat/wait"):
        refused_401(call(client, "GET", path))
        refused_401(call(client, "GET", path, "x" * 43))
        refused_401(call(client, "GET", path, "garbage"))
        refused_401(call(client, "GET", path, one_click))  # a one-click link's token
        refused_401(call(client, "GET", path, table.admin))  # the host's
        refused_401(call(client, "GET", path, headers={"Authorization": f"Basic {raw}"}))
        refused_401(call(client, "GET", f"{path}?token={raw}"))  # never from the address
        refused_401(call(client, "GET", f"{path}?access_token={raw}"))
    for path in ("/seat/act", "/seat/talk"):
        refused_401(call(client, "POST", path, None, {"text": "hi"}))
        refused_401(call(client, "POST", path, one_click, {"text": "hi"}))
    refused_401(call(client, "GET", "/host", raw))  # a seat's token opens no host route
    refused_401(call(client, "GET", "/host"))


def test_a_token_with_a_line_break_or_not_ascii_is_401(table):
    _position, raw = deciding(table)
    for header in (f"Bearer {raw}\r\nX-Evil: 1", f"Bearer {raw}\n", f"Bearer {raw[:-1]}é",
                   "Bearer " + raw + "\x00", "Bearer  ", "Bearer"):
        resp = call(table.client, "GET", "/seat",
                    environ_overrides={"HTTP_AUTHORIZATION": header})
        refused_401(resp)


def test_cookies_are_never_read(table):
    _position, raw = deciding(table)
    table.client.set_cookie("session", raw)
    table.client.set_cookie("token", raw)
    refused_401(call(table.client, "GET", "/seat"))
    resp = call(table.client, "GET", "/seat", raw)
    assert resp.status_code == 200 and "Set-Cookie" not in resp.headers


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("body", [
    "not json", "[1, 2]", "null", '{"decision": "1", "version": 0, "action": "x"}',
    '{"decision": true, "version": 0, "action": "x"}',
    '{"decision": 1e400, "version": 0, "action": "x"}',
    '{"decision": 99999999999999999999999999, "version": 0, "action": "x"}',
    '{"decision": 1, "version": -1, "action": "x"}',
    '{"decision": 0, "version": 0, "action": "x"}',
    '{"decision": 1, "version": 0}', '{"decision": 1, "version": 0, "action": 5}',
    '{"decision": 1, "version": 0, "action": "' + "x" * 5000 + '"}',
    b"\xff\xfe\x00", ""])
def test_a_body_that_is_not_an_act_is_400(table, body):
    _position, raw = deciding(table)
    before = moves(table.app)
    resp = call(table.client, "POST", "/seat/act", raw, body)
    assert resp.status_code == 400 and error_of(resp)["code"] == "request/invalid"
    assert moves(table.app) == before


def test_a_body_too_large_is_413(table):
    _position, raw = deciding(table)
    resp = call(table.client, "POST", "/seat/talk", raw, '{"text": "' + "a" * 70_000 + '"}')
    assert resp.status_code == 413 and error_of(resp)["code"] == "request/too_large"


@pytest.mark.parametrize("query", ["since=-1", "since=abc", "since=99999999999",
                                   "since=%00", "since=١٢"])
def test_a_bad_number_in_the_address_is_400(table, query):
    _position, raw = deciding(table)
    resp = call(table.client, "GET", f"/seat?{query}", raw)
    assert resp.status_code == 400 and error_of(resp)["code"] == "request/invalid"


def test_an_unknown_route_or_method_answers_json(client):
    resp = call(client, "GET", "/nope")
    assert resp.status_code == 404 and error_of(resp)["code"] == "route/unknown"
    resp = call(client, "DELETE", "/seat")
    assert resp.status_code == 405 and error_of(resp)["code"] == "route/method"
    resp = call(client, "GET", "/seat/act")
    assert resp.status_code == 405


def test_no_500_and_no_html_on_garbage(table):
    """Every route with every method, token and body of a fixed garbage list."""
    _position, raw = deciding(table)
    rng = random.Random(34)
    paths = ["/seat", "/seat/legal", "/seat/act", "/seat/talk", "/seat/wait?version=x",
             "/seat/wait?version=99999999999999", "/host", "/openapi.json", "/seat/",
             "/seat/act/1", "/%ff", "/seat?since=1&since=2"]
    tokens = [None, raw, table.admin, "", "é" * 43, "../" * 15, raw + "x"]
    bodies = [None, "", "{", '{"text": null}', '{"text": ' + "[" * 2000 + "]" * 2000 + "}",
              '{"decision": {}, "version": [], "action": {}}', b"\x00\xff",
              json.dumps({"text": "x" * 20_000})]
    table.app.config["API_WAIT_SECONDS"] = 0
    combos = list(itertools.product(paths, ["GET", "POST", "PUT", "HEAD"], tokens, bodies))
    for path, method, token, body in rng.sample(combos, 400):
        resp = call(table.client, method, path, token, body)
        if method != "HEAD":
            assert resp.get_data(as_text=True).lstrip()[:1] in ("{", ""), (path, method)


# --------------------------------------------------------------------------- talk


def test_talk_posts_to_the_table_and_the_others_read_it(table):
    position, raw = deciding(table)
    resp = call(table.client, "POST", "/seat/talk", raw, {"text": "Hunt <the>\nmammoth?"})
    assert resp.status_code == 200 and resp.get_json() == {"text": "Hunt <the> mammoth?"}
    other = raw_page(table, (position + 1) % 3)
    talk = call(table.client, "GET", "/seat", other).get_json()["talk"]
    assert [(t["position"], t["text"]) for t in talk] == [(position, "Hunt <the> mammoth?")]
    empty = call(table.client, "POST", "/seat/talk", raw, {"text": "  "})
    assert (empty.status_code, error_of(empty)["code"]) == (422, "talk/empty")


def test_talk_has_the_pages_limit_per_hour(table):
    _position, raw = deciding(table)
    table.app.config["TALK_PER_HOUR"] = 2
    for n in range(2):
        assert call(table.client, "POST", "/seat/talk", raw, {"text": f"{n}"}).status_code == 200
    resp = call(table.client, "POST", "/seat/talk", raw, {"text": "one more"})
    assert resp.status_code == 429 and error_of(resp)["code"] == "rate/limited"


# --------------------------------------------------------------------------- waiting


def test_wait_answers_at_once_for_a_version_that_is_not_the_pages(table):
    _position, raw = deciding(table)
    now = call(table.client, "GET", "/seat/wait", raw).get_json()
    assert now["page_version"] == call(table.client, "GET", "/seat", raw).get_json()[
        "game"]["page_version"]
    started = time.monotonic()
    resp = call(table.client, "GET", f"/seat/wait?version={now['page_version'] + 1}", raw)
    assert resp.status_code == 200 and resp.get_json() == now
    assert time.monotonic() - started < 2


def test_wait_holds_until_its_time_then_204(table):
    _position, raw = deciding(table)
    table.app.config["API_WAIT_SECONDS"] = 0.5
    seen = call(table.client, "GET", "/seat/wait", raw).get_json()["page_version"]
    started = time.monotonic()
    resp = call(table.client, "GET", f"/seat/wait?version={seen}", raw)
    assert resp.status_code == 204 and time.monotonic() - started >= 0.5


def test_wait_wakes_when_another_seat_moves(table):
    position, raw = deciding(table)
    other = raw_page(table, (position + 1) % 3)
    table.app.config["API_WAIT_SECONDS"] = 20
    seen = call(table.client, "GET", "/seat", other).get_json()["game"]["page_version"]
    body = {"decision": table.open().id, "version": call(table.client, "GET", "/seat", raw)
            .get_json()["game"]["version"],
            "action": call(table.client, "GET", "/seat/legal", raw).get_json()["legal"][0][
                "notation"]}
    mover = table.app.test_client()

    def move_soon() -> None:
        time.sleep(0.5)
        call(mover, "POST", "/seat/act", raw, body)

    thread = threading.Thread(target=move_soon)
    started = time.monotonic()
    thread.start()
    resp = call(table.client, "GET", f"/seat/wait?version={seen}", other)
    thread.join()
    assert resp.status_code == 200 and resp.get_json()["page_version"] > seen
    assert 0.4 < time.monotonic() - started < 10


def test_only_as_many_waits_hold_at_once_as_the_server_has_slots_the_next_asks_later(
        table):
    """A holding wait takes a web worker: with ``API_WAIT_SLOTS`` = 1, a second wait
    while one holds is refused at once (429, Retry-After) instead of taking another
    worker from the pages; once the first has answered, a wait holds again."""
    position, raw = deciding(table)
    other = raw_page(table, (position + 1) % 3)
    table.app.config.update(API_WAIT_SECONDS=1.5, API_WAIT_SLOTS=1)
    seen = call(table.client, "GET", "/seat/wait", raw).get_json()["page_version"]
    answers: list[int] = []
    first = threading.Thread(target=lambda: answers.append(call(
        table.app.test_client(), "GET", f"/seat/wait?version={seen}", raw).status_code))
    first.start()
    time.sleep(0.5)  # the first wait holds its slot
    started = time.monotonic()
    busy = call(table.client, "GET", f"/seat/wait?version={seen}", other)
    assert busy.status_code == 429 and time.monotonic() - started < 1
    assert error_of(busy)["code"] == "wait/busy"
    assert busy.headers["Retry-After"] == "2"
    first.join()
    assert answers == [204]
    table.app.config["API_WAIT_SECONDS"] = 0.2
    assert call(table.client, "GET", f"/seat/wait?version={seen}", other).status_code == 204
    table.app.config["API_WAIT_SLOTS"] = 2  # two slots: two waits hold side by side
    table.app.config["API_WAIT_SECONDS"] = 1
    first = threading.Thread(target=lambda: answers.append(call(
        table.app.test_client(), "GET", f"/seat/wait?version={seen}", raw).status_code))
    first.start()
    time.sleep(0.3)
    assert call(table.client, "GET", f"/seat/wait?version={seen}", other).status_code == 204
    first.join()


# --------------------------------------------------------------------------- the host


def test_the_host_reads_the_overview_with_the_host_token(table):
    resp = call(table.client, "GET", "/host", table.admin)
    assert resp.status_code == 200
    host = resp.get_json()
    assert host["game"]["id"] == table.game_id
    assert [s["seat"]["name"] for s in host["seats"]] == [p.name for p in PLAYERS]
    assert [s["invite"] for s in host["seats"]] == ["accepted"] * 3
    assert [d["id"] for d in host["open"]] == [table.open().id]
    assert host["mail"]["sent"] >= 3
    assert host["board"]["view"]["you"] is None  # a spectator's board: no seat's secrets


# --------------------------------------------------------------------------- the document


def validator(document: dict, name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({**document, "$ref":
                                            f"#/components/schemas/{name}"})


def test_the_openapi_document_names_every_route_and_real_answers_match_it(table, app):
    document = call(table.client, "GET", "/openapi.json").get_json()
    assert document["openapi"].startswith("3.1")
    routes = {(rule.rule, method.lower()) for rule in app.url_map.iter_rules()
              if rule.rule.startswith(API) and rule.rule != API + "/openapi.json"
              for method in rule.methods - {"HEAD", "OPTIONS"}}
    assert routes == {(path, method) for path, ops in document["paths"].items()
                      for method in ops}
    position, raw = deciding(table)
    table.app.config["API_WAIT_SECONDS"] = 0
    answers = {
        "SeatView": call(table.client, "GET", "/seat", raw),
        "Legal": call(table.client, "GET", "/seat/legal", raw),
        "World": call(table.client, "GET", "/seat/world", raw),
        "Changed": call(table.client, "GET", "/seat/wait", raw),
        "Said": call(table.client, "POST", "/seat/talk", raw, {"text": "hello"}),
        "HostView": call(table.client, "GET", "/host", table.admin),
    }
    answers["Acted"] = act(table, raw)[0]
    answers["ApiError"] = call(table.client, "GET", "/seat")
    for name, resp in answers.items():
        assert resp.status_code in (200, 401), (name, resp.get_json())
        validator(document, name).validate(resp.get_json())
    # the document can refuse: an answer without its game, a wrong type
    broken = dict(answers["SeatView"].get_json())
    del broken["game"]
    assert not validator(document, "SeatView").is_valid(broken)
    assert not validator(document, "Acted").is_valid({**answers["Acted"].get_json(),
                                                      "version": "1"})
    for name in ("ActRequest", "TalkRequest"):
        assert name in document["components"]["schemas"]


# --------------------------------------------------------------------------- safety


def seen_in_the_log(app, game_id: str, position: int) -> str:
    """Every event's data the seat may see, as JSON text (what it was ever shown)."""
    with app.app_context(), read_scope() as s:
        rows = s.exec(select(EventLog).where(EventLog.game_id == game_id)).all()
        return json.dumps([e.data for e in rows
                           if e.visible_to is None or position in e.visible_to])


def secrets_hidden_from(app, game_id: str, mod, state, position: int) -> set[str]:
    """The card ids another seat holds hidden from ``position`` (Stone Age's
    civilization cards held; Cavemen's draw pile), less those the engine's view for
    ``position`` shows or an event it may see showed (a card drawn, then shuffled back)."""
    shown = json.dumps(mod.view(state, position)) + seen_in_the_log(app, game_id, position)
    if hasattr(state, "boards"):  # Stone Age
        hidden = {c for s, b in enumerate(state.boards) if s != position for c in b.cards}
    else:
        hidden = set(state.draw)
    return {c for c in hidden if f'"{c}"' not in shown}


def api_answers(client, raw: str) -> list[str]:
    return [call(client, "GET", path, raw).get_data(as_text=True)
            for path in ("/seat", "/seat/legal", "/seat/wait")]


@pytest.mark.parametrize("game", ["cavemen", "stoneage"])
def test_a_whole_game_through_the_api_shows_no_seat_another_seats_links_or_cards(
        app, client, inbox, game):
    from tests.server.helpers import Table

    created = start_game(app, players=PLAYERS[:2], game=game, seed=11)
    table = Table(app, client, inbox, created.game_id, created.admin_token)
    raws = [raw_page(table, p) for p in (0, 1)]
    rng = random.Random(34)
    checked_cards = 0
    for _step in range(3000):
        opened = open_decisions(app, table.game_id)
        mod, state = game_state(app, table.game_id)
        links = {p: {t for m in inbox.all() if m.to_addr == PLAYERS[p].email
                     for t in TOKEN_RE.findall(m.msg.as_string())} for p in (0, 1)}
        for p, raw in enumerate(raws):
            text = "".join(api_answers(client, raw))
            assert not {t for t in links[1 - p] if t in text}, "another seat's link"
            assert not {t for t in links[p] if t in text}, "a link in an answer"
            hidden = secrets_hidden_from(app, table.game_id, mod, state, p)
            checked_cards += len(hidden)
            assert not {c for c in hidden if f'"{c}"' in text}, "a hidden card"
        if not opened:
            break
        decision = opened[0]
        action = mod.BOTS["heuristic"](state, decision.position, rng)
        version = call(client, "GET", "/seat", raws[decision.position]).get_json()[
            "game"]["version"]
        resp = call(client, "POST", "/seat/act", raws[decision.position],
                    {"decision": decision.id, "version": version,
                     "action": format_action(action)})
        assert resp.status_code == 200, resp.get_json()
        inbox.deliver()
    else:
        raise AssertionError("the game did not end")
    host = call(client, "GET", "/host", created.admin_token)
    assert host.get_json()["game"]["status"] == "finished"
    assert checked_cards > 0


# --------------------------------------------------------------------------- worlds


@pytest.mark.parametrize("game", ["cavemen", "stoneage"])
def test_a_world_draws_anew_all_the_seat_cannot_know_and_the_strong_bot_plays_on_it(
        app, client, inbox, game):
    """``/seat/world``: the game's state with the hidden parts drawn anew at every
    request (never the truth's order, nor its random source), what the seat sees as it
    is; the game's strong bot chooses on it a move the game takes."""
    from tests.server.helpers import Table

    created = start_game(app, players=PLAYERS[:2], game=game, seed=11)
    table = Table(app, client, inbox, created.game_id, created.admin_token)
    position, raw = deciding(table)
    mod, truth = game_state(app, table.game_id)
    worlds = [call(client, "GET", "/seat/world", raw).get_json() for _ in range(3)]
    drawn = [mod.from_json(w["state"]) for w in worlds]
    assert {w["position"] for w in worlds} == {position}
    assert {w["engine"] for w in worlds} == {game}
    pile = "pile" if game == "stoneage" else "draw"
    for world in drawn:
        assert sorted(getattr(world, pile)) == sorted(getattr(truth, pile))
        assert getattr(world, pile) != getattr(truth, pile)  # 30+ cards: never by chance
        assert world.rng != truth.rng
        assert mod.view(world, position) == mod.view(truth, position)  # what it sees
    assert getattr(drawn[0], pile) != getattr(drawn[1], pile)  # a new draw each time
    if game == "stoneage":  # the tiles under the stacks' tops
        assert [st[1:] for st in drawn[0].stacks] != [st[1:] for st in truth.stacks]
    # the example client's way: the strong bot on the world, its move in notation
    action = mod.make_strong(rollouts=4)(drawn[0], position, random.Random(1))
    resp = call(client, "POST", "/seat/act", raw, {
        "decision": table.open().id, "version": worlds[0]["version"],
        "action": format_action(action)})
    assert resp.status_code == 200, resp.get_json()
    other = raw_page(table, 1 - position)
    assert call(client, "GET", "/seat/world", "x" * 43).status_code == 401
    assert call(client, "GET", "/seat/world", table.admin).status_code == 401
    assert call(client, "GET", "/seat/world", other).status_code == 200


def test_a_world_holds_no_other_seats_standing_plan(app, client, inbox):
    """A Stone Age seat's standing plan is its own to see (the page shows nobody
    else's); a world drawn for another seat must not hold it, or a client reads its
    opponent's next placements from ``/seat/world``."""
    from engine.stoneage.rules import plan_of
    from pbem.tokens import form_signature
    from tests.server.helpers import SECRET, Table

    created = start_game(app, players=PLAYERS[:2], game="stoneage", seed=11)
    table = Table(app, client, inbox, created.game_id, created.admin_token)
    position, raw = deciding(table)
    planner = 1 - position
    page = "/g/" + raw_page(table, planner)
    resp = client.post(page + "/plan", data={
        "sig": form_signature(SECRET, raw_page(table, planner)), "how": "set",
        "plan.at": ["hunt"], "plan.count": ["rest"]})
    assert resp.status_code == 200
    mod, truth = game_state(app, table.game_id)
    assert plan_of(truth, planner) is not None  # the plan is set
    for _ in range(5):
        world = call(client, "GET", "/seat/world", raw).get_json()
        assert plan_of(mod.from_json(world["state"]), planner) is None
        assert "hunt" not in json.dumps(world["state"].get("plans"))
    # the planner's own world keeps its plan (its own to see)
    own = call(client, "GET", "/seat/world", raw_page(table, planner)).get_json()
    assert plan_of(mod.from_json(own["state"]), planner) == plan_of(truth, planner)
