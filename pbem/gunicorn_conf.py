"""Gunicorn settings for pbem (``gunicorn --config python:pbem.gunicorn_conf ...``).

Every link in an email carries a secret token in its path, and an access log is read by
more people than the players; so the access log writes each token as ``<token>``. Any
run of 32 or more URL-safe characters counts as a token (ours are 43), percent-encoded
ones included.
"""

from __future__ import annotations

import gc
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


def post_worker_init(worker: Any) -> None:
    """Once a worker has loaded the app, move every object it made so far (the app, the
    engines' rule tables, the catalogs: over a hundred thousand) out of the garbage
    collector's sight: they live as long as the worker, and a full collection that walks
    them all held a request up for tens of milliseconds now and then (the p99)."""
    gc.collect()
    gc.freeze()
