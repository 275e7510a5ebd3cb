"""Gunicorn settings for pbem (``gunicorn --config python:pbem.gunicorn_conf ...``).

Every link in an email carries a secret token in its path, and an access log is read by
more people than the players; so the access log writes each token as ``<token>``. Any
run of 32 or more URL-safe characters counts as a token (ours are 43), percent-encoded
ones included.
"""

from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger

from pbem.tokens import redact


class RedactingLogger(Logger):
    """Gunicorn's logger, with every secret token taken out of the access log."""

    def atoms(self, resp: Any, req: Any, environ: dict, request_time: Any) -> dict:
        found = super().atoms(resp, req, environ, request_time)
        return {key: redact(value) if isinstance(value, str) else value
                for key, value in found.items()}


logger_class = RedactingLogger
accesslog = "-"
