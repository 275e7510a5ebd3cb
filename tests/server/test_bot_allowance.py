"""The bots' CPU allowance (issue 35, point 2): the CPU a game's bots spent thinking is
recorded per game and per host (the host seat's address) and UTC day, whether or not
the move could be recorded; beyond the day's allowance of the game or of its host,
strong bots think at the default budget (the budget the bot is built with is observed)
until the next UTC day, and another host's games are not touched; the host page says
it, in English and German. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest
from freezegun import freeze_time
from jsonschema import Draft202012Validator
from sqlalchemy import update

from engine.search import DEFAULT_BUDGET_MS
from pbem import bots, clock, mail, services
from pbem.db import session_scope
from pbem.models import BotUsage, Decision, Game, Move, utcnow
from pbem.services import allowance, playing
from tests.server.conftest import GAME_SEED
from tests.server.helpers import PLAYERS
from tests.server.timekit import rows

ANN, BOB, _CY = PLAYERS
CHOSEN_MS = 300.0  # the host's choice: above the default budget, and quick for a test


def bot(level: str) -> services.PlayerIn:
    return services.PlayerIn("", "", "en", "UTC", bot=level)


def strong_game(app, host: services.PlayerIn = ANN, bots: int = 2) -> tuple[str, int, str]:
    """A started Cavemen game of ``host`` and ``bots`` strong bots thinking CHOSEN_MS a
    move; the bot of seat 2 bids first, due at once (with three bots, the one of seat 3
    next): (the game, that decision, its host page link)."""
    app.config["BOT_PAUSE_SECONDS"] = 0
    with app.app_context():
        created = services.create_game("cavemen", [host, *[bot("strong")] * bots],
                                       {"bot_ms": CHOSEN_MS}, seed=GAME_SEED,
                                       confirm_by_email=False, start=True)
        mail.deliver_due()
    (first,) = rows(app, Decision, Decision.game_id == created.game_id,
                    Decision.closed_at.is_(None))
    assert first.position == 2 and first.deadline_at is not None
    return created.game_id, first.id, created.admin_token


@pytest.fixture
def budgets(monkeypatch) -> list[float]:
    """The budgets the strong bots are built with, in order (the real bots think)."""
    seen: list[float] = []
    real = playing._strong_bot

    def spy(engine: str, budget_ms: float):
        seen.append(budget_ms)
        return real(engine, budget_ms)

    monkeypatch.setattr(playing, "_strong_bot", spy)
    return seen


def work(app) -> None:
    """One bot worker's round: claim the due decision, think, record."""
    with app.app_context():
        assert bots.work_once(utcnow() + timedelta(seconds=1)) is not None


def spend(app, game_id: str, host: str, seconds: float, now: datetime | None = None) -> None:
    """Charge ``seconds`` of bot CPU to a game of ``host`` (as its bots' thinking does)."""
    with app.app_context(), session_scope() as s:
        allowance.charge(s.connection(), game_id, host, seconds, now or utcnow())


def usage(app) -> list[BotUsage]:
    return rows(app, BotUsage)


# ------------------------------------------------------------------ accounting
def test_a_bots_thinking_is_recorded_for_its_game_and_host_today(app, budgets):
    game_id, decision_id, _ = strong_game(app)
    work(app)
    assert len(rows(app, Move, Move.decision_id == decision_id)) == 1
    (row,) = usage(app)
    assert (row.day, row.game_id, row.host, row.decisions) == (
        utcnow().date(), game_id, ANN.email.lower(), 1)
    assert 0 < row.cpu_seconds < 5  # the thread's CPU time, not the wall clock's
    assert budgets == [CHOSEN_MS]  # within the allowance: the host's choice


def test_each_decision_adds_to_the_games_row_of_the_day(app):
    game_id, _, _ = strong_game(app)
    work(app)
    (first,) = usage(app)
    spend(app, game_id, ANN.email, 1.5)
    (row,) = usage(app)
    assert row.decisions == 2 and row.cpu_seconds == pytest.approx(first.cpu_seconds + 1.5)


def test_the_cpu_is_recorded_when_the_game_moved_while_the_bot_thought(app, monkeypatch):
    """Another move landed while the bot thought: its move is not recorded, its CPU is."""
    game_id, decision_id, _ = strong_game(app)
    real = playing._strong_bot

    def moved_meanwhile(engine: str, budget_ms: float):
        with session_scope() as s:
            s.connection().execute(update(Game).where(Game.id == game_id)
                                   .values(version=Game.version + 1))
        return real(engine, budget_ms)

    monkeypatch.setattr(playing, "_strong_bot", moved_meanwhile)
    with app.app_context():
        assert services.play_bot(decision_id, utcnow(), game_id) is False
    assert rows(app, Move, Move.decision_id == decision_id) == []
    (row,) = usage(app)
    assert row.game_id == game_id and row.decisions == 1 and row.cpu_seconds > 0


def test_the_cpu_is_recorded_when_recording_the_move_fails(app, monkeypatch):
    """The move's transaction fails (rolled back): the CPU spent is still recorded."""
    from pbem.services import deadlines

    game_id, decision_id, _ = strong_game(app)

    def broken(*args, **kwargs):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(deadlines, "play_move", broken)
    with app.app_context(), pytest.raises(RuntimeError):
        services.play_bot(decision_id, utcnow(), game_id)
    assert rows(app, Move, Move.decision_id == decision_id) == []
    (row,) = usage(app)
    assert row.game_id == game_id and row.decisions == 1 and row.cpu_seconds > 0


# ------------------------------------------------------------------ the allowance
def test_a_game_over_its_allowance_thinks_at_the_default_budget(app, budgets):
    game_id, decision_id, _ = strong_game(app)
    spend(app, game_id, ANN.email, app.config["BOT_CPU_GAME_SECONDS"])
    work(app)
    assert budgets == [DEFAULT_BUDGET_MS]
    assert len(rows(app, Move, Move.decision_id == decision_id)) == 1  # it still plays


def test_a_hosts_own_choice_below_the_default_budget_stands_when_over(app, budgets):
    app.config["BOT_PAUSE_SECONDS"] = 0
    with app.app_context():
        created = services.create_game("cavemen", [ANN, bot("strong"), bot("strong")],
                                       {"bot_ms": 40}, seed=GAME_SEED,
                                       confirm_by_email=False, start=True)
    spend(app, created.game_id, ANN.email, 10_000)
    work(app)
    assert budgets == [40.0]


def test_a_host_over_its_allowance_caps_all_its_games_but_not_another_hosts(app, budgets):
    app.config["BOT_CPU_HOST_SECONDS"] = 100
    anns = [strong_game(app, ANN) for _ in range(2)]
    bobs = strong_game(app, BOB)
    for game_id, _, _ in anns:  # each game well within its own allowance; together not
        spend(app, game_id, ANN.email.upper(), 60)  # the address in any case
    decided = {}
    for _ in range(3):
        budgets.clear()
        with app.app_context():
            item = bots.work_once(utcnow() + timedelta(seconds=1))
        decided[item.game_id] = budgets[0]
    assert decided == {anns[0][0]: DEFAULT_BUDGET_MS, anns[1][0]: DEFAULT_BUDGET_MS,
                       bobs[0]: CHOSEN_MS}


def test_a_new_utc_day_restores_the_hosts_choice(app, budgets):
    with freeze_time("2026-11-28 23:59:30"):
        game_id, _, _ = strong_game(app, bots=3)
        spend(app, game_id, ANN.email, app.config["BOT_CPU_HOST_SECONDS"])  # game and host
        work(app)  # the bot of seat 2: over the day's allowance
    with freeze_time("2026-11-29 00:00:05"):
        work(app)  # the bot of seat 3, a new day
    assert budgets == [DEFAULT_BUDGET_MS, CHOSEN_MS]
    assert sorted((r.day, r.decisions) for r in usage(app)) == [
        (date(2026, 11, 28), 2), (date(2026, 11, 29), 1)]


def test_the_clock_forgets_the_usage_of_days_before_yesterday(app):
    game_id, _, _ = strong_game(app)
    today = utcnow()
    for days in (0, 1, 2, 5):
        spend(app, game_id, ANN.email, 1, today - timedelta(days=days))
    clock.sweep(app, today)
    assert sorted(r.day for r in usage(app)) == [
        (today - timedelta(days=1)).date(), today.date()]


def test_the_clock_asks_once_a_utc_day_and_again_the_next(app, monkeypatch):
    game_id, _, _ = strong_game(app)
    asked: list[datetime] = []
    real = services.forget_old_usage

    def spy(now: datetime) -> int:
        asked.append(now)
        return real(now)

    monkeypatch.setattr(services, "forget_old_usage", spy)
    today = utcnow().replace(hour=12)
    for minutes in (0, 1, 60):
        clock.sweep(app, today + timedelta(minutes=minutes))
    assert len(asked) == 1  # the sweeps after it on the same day ask nothing
    spend(app, game_id, ANN.email, 1, today - timedelta(days=1))
    later = today + timedelta(days=2)
    clock.sweep(app, later)
    assert len(asked) == 2
    assert all(r.day >= (later - timedelta(days=1)).date() for r in usage(app))


# ------------------------------------------------------------------ the host page
def host_page(client, raw: str) -> str:
    resp = client.get(f"/admin/{raw}")
    assert resp.status_code == 200
    return resp.get_data(as_text=True)


def test_the_host_page_shows_todays_cpu_and_the_allowances(app, client):
    game_id, _, raw = strong_game(app)
    other, _, _ = strong_game(app)
    spend(app, game_id, ANN.email, 12.34)
    spend(app, other, ANN.email, 100)
    html = host_page(client, raw)
    assert ("CPU time the bots used today (UTC): 12.3 of 600 seconds a day for this game, "
            "112.3 of 1,800 seconds a day for all your games.") in html
    assert 'id="bot-cpu-over"' not in html


def test_the_host_page_says_when_strong_bots_think_at_the_default_budget(app, client):
    game_id, _, raw = strong_game(app)
    spend(app, game_id, ANN.email, 600)
    html = host_page(client, raw)
    assert ("<strong id=\"bot-cpu-over\">The day's allowance is used up: strong bots now "
            'think at the default budget of 100 milliseconds per move until 00:00 UTC.'
            '</strong>') in html


def test_the_host_page_says_it_in_german(app, client):
    anna = services.PlayerIn("Anna", "anna@example.com", "de", "Europe/Berlin")
    game_id, _, raw = strong_game(app, anna)
    spend(app, game_id, anna.email, 1234.5)
    html = host_page(client, raw)
    assert ("Rechenzeit der Bots heute (UTC): 1.234,5 von 600 Sekunden am Tag für diese "
            "Partie, 1.234,5 von 1.800 Sekunden am Tag für alle deine Partien.") in html
    assert ('<strong id="bot-cpu-over">Das Tageskontingent ist aufgebraucht: Starke Bots '
            'denken jetzt bis 00:00 UTC mit dem Standardbudget von 100 Millisekunden pro '
            'Zug nach.</strong>') in html


def test_the_host_page_of_a_game_without_strong_bots_says_nothing_of_cpu(app, client):
    app.config["BOT_PAUSE_SECONDS"] = 0
    with app.app_context():
        created = services.create_game("cavemen", [ANN, bot("easy"), bot("easy")], None,
                                       seed=GAME_SEED, confirm_by_email=False, start=True)
    spend(app, created.game_id, ANN.email, 700)
    html = host_page(client, created.admin_token)
    assert 'id="bot-cpu"' not in html and "CPU" not in html


# ------------------------------------------------------------------ the JSON API
def host_api(client, raw: str) -> dict:
    resp = client.get("/api/v1/host", headers={"Authorization": f"Bearer {raw}"})
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp.get_json()


def test_the_apis_host_view_carries_todays_cpu_and_the_budget_now(app, client):
    game_id, _, raw = strong_game(app)
    spend(app, game_id, ANN.email, 30)
    assert host_api(client, raw)["bot_cpu"] == {
        "game_seconds": 30.0, "host_seconds": 30.0, "game_allowance": 600.0,
        "host_allowance": 1800.0, "strong_bot_ms": CHOSEN_MS}
    spend(app, game_id, ANN.email, 600)
    assert host_api(client, raw)["bot_cpu"]["strong_bot_ms"] == DEFAULT_BUDGET_MS
    document = client.get("/api/v1/openapi.json").get_json()
    Draft202012Validator({**document, "$ref": "#/components/schemas/HostView"}).validate(
        host_api(client, raw))
