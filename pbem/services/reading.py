"""Reading a game for pages and emails: a seat's game page, the spectators' page, the
host's admin page, printed card data for narration. Changes nothing."""

from __future__ import annotations

import json
import re
from typing import Any

from flask_babel import gettext
from sqlmodel import Session, select

from engine.registry import get_game
from pbem import localize
from pbem.db import session_scope
from pbem.errors import NotFound
from pbem.i18n import language
from pbem.models import Decision, EventLog, Game, Outbox, Seat
from pbem.services._plumbing import _admin_game, _seats, _token


def game_for_page(raw: str, with_log: bool = True) -> dict[str, Any]:
    """Everything a seat's game page shows, from that seat's view. A one-click (action)
    link opens the page read-only: only a game-page link offers the decision form."""
    with session_scope() as s:
        token = _token(s, raw, "page", "action")
        game = s.get(Game, token.game_id)
        seat = s.get(Seat, token.seat_id)
        data = _page_data(s, game, seat, with_log)
        data["readonly"] = token.kind != "page"
        return data


def game_for_spectator(key: str) -> dict[str, Any]:
    with session_scope() as s:
        key = str(key)
        game = None
        if re.fullmatch(r"[0-9a-f]{1,32}", key):
            game = s.exec(select(Game).where(Game.spectator_key == key)).first()
        if game is None:
            raise NotFound(gettext("no game at this address"))
        return _page_data(s, game, None)


def _page_data(s: Session, game: Game, seat: Seat | None,
               with_log: bool = True) -> dict[str, Any]:
    seats = _seats(s, game.id)
    position = seat.position if seat else None
    decisions = s.exec(select(Decision).where(Decision.game_id == game.id,
                                              Decision.closed_at.is_(None))).all()
    mine = next((d for d in decisions if seat and d.seat_id == seat.id), None)
    mod = get_game(game.engine)
    state = mod.from_json(json.loads(game.state)) if game.state else None
    legal = mod.legal_actions(state, seat.position) if mine is not None else []
    log = []
    if with_log:
        events = s.exec(select(EventLog).where(EventLog.game_id == game.id)
                        .order_by(EventLog.seq)).all()
        log = [e for e in events if e.visible_to is None or position in (e.visible_to or [])]
    tr = localize.translation_for(mod, state, seat.language if seat else language())
    return {
        "game": game, "seat": seat, "seats": seats, "card": localize.lookup(mod, state, tr),
        "view": localize.view(mod, mod.view(state, position), tr) if state is not None else None,
        "open": decisions, "decision": mine, "legal": legal, "log": log, "readonly": False,
    }


def _card_lookup(game: Game, lang: str) -> localize.CardLookup:
    """A function from card id to printed card data in ``lang``, for narration."""
    mod = get_game(game.engine)
    state = mod.from_json(json.loads(game.state)) if game.state else None
    return localize.lookup(mod, state, localize.translation_for(mod, state, lang))


def admin_data(raw: str) -> dict[str, Any]:
    with session_scope() as s:
        game = _admin_game(s, raw)
        data = _page_data(s, game, _seats(s, game.id)[0])
        data["outbox"] = s.exec(select(Outbox).where(Outbox.game_id == game.id)
                                .order_by(Outbox.id)).all()
        return data
