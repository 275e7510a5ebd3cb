"""Shared pieces of the deadline and host-control tests: a frozen clock at T0, games
started under it, sweeps at given hours, and small database and email readers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlmodel import select

from engine.core import Action
from pbem import clock, mail, services
from pbem.db import session_scope
from pbem.models import Decision, EventLog, Move, Seat
from tests.server.conftest import GAME_SEED
from tests.server.helpers import PLAYERS, Inbox, forms, path_of, seats_of

ANN, BOB, CY = PLAYERS  # Cy (seat 2) holds the conch and bids first with GAME_SEED
T0 = datetime(2030, 1, 14, 9, 0, tzinfo=UTC)  # a Monday in winter (Berlin is UTC+1)
PASS = Action.of("pass")


def aware(when: datetime) -> datetime:
    """A stored time with its zone (SQLite gives them back without it; they are UTC)."""
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def at(frozen, hours: float) -> datetime:
    """Move the frozen clock to ``hours`` after T0."""
    now = T0 + timedelta(hours=hours)
    frozen.move_to(now)
    return now


def sweep_at(app, frozen, hours: float, bots: bool = True) -> dict[str, int]:
    """What the clock does at ``hours`` after T0: one sweep of the deadlines, then its
    mail loop's delivery pass; a step that failed inside fails the test. ``bots``: then
    the sweeps of the seconds after, while a bot's move falls due within a minute of the
    last (``bots_play``), their counts added."""
    at(frozen, hours)
    result = tick(app)
    if bots:
        for key, n in bots_play(app, frozen).items():
            result[key] = result.get(key, 0) + n
    return result


def bots_play(app, frozen, within: float = 60, most: int = 5000) -> dict[str, int]:
    """The clock's sweeps while the earliest open decision of a seat a bot plays (in a
    running game) falls due within ``within`` seconds of the frozen clock's time: each
    at that due time (the frozen clock moved there); their counts added up."""
    total: dict[str, int] = {}
    for sweeps in range(most + 1):
        now = datetime.now(UTC)
        with app.app_context():
            due = services.due_bot_moves(now + timedelta(seconds=within), limit=1)
        if not due:
            return total
        assert sweeps < most, f"the bots still play after {most} sweeps"
        (decision,) = rows(app, Decision, Decision.id == due[0].decision_id)
        frozen.move_to(max(now, aware(decision.deadline_at)))
        for key, n in tick(app).items():
            total[key] = total.get(key, 0) + n
    return total


def tick(app, now=None) -> dict[str, int]:
    """One deadline sweep and one delivery pass, with the counts of both."""
    result = clock.sweep(app, now=now)
    assert result.get("errors", 0) == 0, result
    with app.app_context():
        result.update(mail.deliver_due(limit=1000))
    return result


def idle(result: dict[str, int]) -> bool:
    """The sweep found nothing to do."""
    return not any(result.values())


def new_game(app, players=PLAYERS, game: str = "cavemen", **policy) -> services.Created:
    """A started game (the clock must be frozen), its first emails delivered. ``policy``:
    what a host would enter (``hours``, ``reminders``, ``absent_after``, ...)."""
    with app.app_context():
        created = services.create_game(game, list(players), as_entered(**policy),
                                       seed=GAME_SEED, confirm_by_email=False, start=True)
        assert mail.deliver_due()["sent"] == len(players)
    return created


def as_entered(hours=48, reminders=None, **rest) -> dict:
    """A policy as the home page's fields name it, for ``GamePolicy.parse``."""
    return {"hours_per_decision": hours, "reminder_hours": reminders, **rest}


def rows(app, model, *where, order=None) -> list:
    with app.app_context(), session_scope() as s:
        keys = [order] if order is not None else list(model.__table__.primary_key.columns)
        query = select(model).where(*where).order_by(*keys)
        return list(s.exec(query))


def moves(app, game_id: str, source: str | None = None) -> list[Move]:
    found = rows(app, Move, Move.game_id == game_id)
    return [m for m in found if source is None or m.source == source]


def events(app, game_id: str, *kinds: str) -> list[EventLog]:
    found = rows(app, EventLog, EventLog.game_id == game_id, order=EventLog.seq)
    return [e for e in found if not kinds or e.kind in kinds]


def seat(app, game_id: str, position: int) -> Seat:
    return seats_of(app, game_id)[position]


def subjects(inbox: Inbox, addr: str | None = None) -> list[str]:
    return [subject(m) for m in inbox.all() if addr is None or m.to_addr == addr]


def subject(mail) -> str:
    """What the email says it is about: its first line, which mail programs show as the
    preview (the Subject itself is the game's name on every email of a game)."""
    return mail.headline


def page_of(inbox: Inbox, addr: str) -> str:
    """The game page path from the last email to ``addr``."""
    return path_of(inbox.to(addr)[-1].link("/g/"))


def page_form(client, page: str, form_id: str):
    found = [f for f in forms(client.get(page).get_data(as_text=True))
             if f.attrs.get("id") == form_id]
    return found[0] if found else None


def admin_form(client, admin: str, control: str):
    """The host page's form for ``control`` (None if the page does not offer it now)."""
    html = client.get(f"/admin/{admin}").get_data(as_text=True)
    found = [f for f in forms(html) if f.action == f"/admin/{admin}/{control}"]
    return found[0] if found else None


def admin_post(client, admin: str, control: str, **fields):
    """Press the host page's button for ``control``, as a browser would (with its sig)."""
    form = admin_form(client, admin, control)
    assert form is not None, f"the host page offers no {control} form now"
    return client.post(form.action, data=form.data(**fields))
