"""Service errors: each maps to a page a person understands and an HTTP status."""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    """A refusal with a stable ``code``, a message for people and an HTTP status."""

    code = "service/error"
    status = 400

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class NotFound(ServiceError):
    code = "link/unknown"
    status = 404


class InvalidInput(ServiceError):
    code = "input/invalid"
    status = 400


class IllegalMove(InvalidInput):
    """The engine refused a move. ``reason`` is the engine's error code and ``kind`` the
    decision's kind; pages say what to do in the player's words from these two (never
    the engine's own text, which names internal ids)."""

    code = "action/refused"

    def __init__(self, reason: str, kind: str, detail: dict[str, Any] | None = None) -> None:
        super().__init__("that move is not allowed now", reason=reason, kind=kind)
        self.reason, self.kind = reason, kind
        self.detail = detail or {}  # the game's own words on what was wrong (explain)


class AlreadyRecorded(ServiceError):
    """A second submission for a decision this seat already took."""

    code = "decision/already_recorded"
    status = 409


class TurnOver(ServiceError):
    """The decision closed some other way (deadline, host, game end)."""

    code = "decision/closed"
    status = 409


class LinkExpired(ServiceError):
    """A link that worked for a while only (the list of one's games)."""

    code = "link/expired"
    status = 410


class Conflict(ServiceError):
    """Someone else changed the game at the same moment; try again."""

    code = "game/conflict"
    status = 409


class StaleVersion(Conflict):
    """A move named a version of the game that is not the latest (the API's act:
    another move came first); ``data["version"]``: the game's version now."""

    code = "game/stale_version"


class RateLimited(ServiceError):
    code = "rate/limited"
    status = 429


class WrongState(ServiceError):
    """The game is not in a state that allows this (e.g. confirming twice)."""

    code = "game/wrong_state"
    status = 409


class FormInvalid(InvalidInput):
    """Everything wrong with one form at once: ``errors`` lists (field, message) in the
    form's order, one message per field. The message joins them all (the CLI prints it)."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(message for _field, message in errors), errors=errors)
        self.errors = list(errors)


class Problems:
    """Collects the problems of a form, the first one per field, to refuse it once with
    all of them (``raise_any``)."""

    def __init__(self) -> None:
        self.errors: dict[str, str] = {}

    def add(self, field: str, message: str) -> None:
        self.errors.setdefault(field, message)

    def check(self, field: str, check: Any, *args: Any) -> Any:
        """``check(*args)``, or None with its refusal noted under ``field``."""
        try:
            return check(*args)
        except FormInvalid as exc:
            for key, message in exc.errors:
                self.add(key, message)
        except InvalidInput as exc:
            self.add(field, exc.message)
        return None

    def raise_any(self) -> None:
        if self.errors:
            raise FormInvalid(list(self.errors.items()))
