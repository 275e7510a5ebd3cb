"""Gunicorn settings for pbem (``gunicorn --config python:pbem.gunicorn_conf ...``).

Every link in an email carries a secret token in its path, and an access log is read by
more people than the players; so the access log writes each token as ``<token>``. Any
run of 32 or more URL-safe characters counts as a token (ours are 43), percent-encoded
ones included.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from gunicorn.glogging import Logger
from gunicorn.http import Request
from gunicorn.http.wsgi import Response

from pbem.tokens import redact

if TYPE_CHECKING:  # the stubs' name of the atoms' dict (no such class at run time)
    from gunicorn.glogging import _AtomsDict


class RedactingLogger(Logger):
    """Gunicorn's logger, with every secret token taken out of the access log."""

    def atoms(self, resp: Response, req: Request, environ: MutableMapping[str, Any],
              request_time: timedelta) -> _AtomsDict:
        found = super().atoms(resp, req, environ, request_time)
        return cast("_AtomsDict", {key: redact(value) if isinstance(value, str) else value
                                   for key, value in found.items()})


logger_class = RedactingLogger
accesslog = "-"
