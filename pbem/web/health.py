"""The health check and the metrics, for a load balancer, a supervisor and Prometheus.

``/healthz``: 200 ``{"ok": true}`` when the database answers a trivial query, else 503
(never a 500). ``/healthz?deep=1``: the facts of ``pbem.health.status`` (the clock's last
sweep, the outbox, failures in the last hour, inbound), 503 with the problems' codes when
something is wrong. Both are public: they show counts and ages only (the README's
"Health and metrics" says why that is fine). ``/metrics``: the Prometheus text format,
404 unless ``METRICS`` is set, and with ``METRICS_TOKEN`` only for that bearer token.
Neither writes anything. The POSTs that confirm a move are timed for
``pbem_confirm_seconds`` (see ``pbem.metrics``).
"""

from __future__ import annotations

import hmac

from flask import Blueprint, Response, abort, current_app, request
from flask.typing import ResponseReturnValue
from sqlalchemy.exc import SQLAlchemyError

from pbem import health, metrics

bp = Blueprint("health", __name__)
bp.before_app_request(metrics.confirm_started)  # the time a move takes to confirm
bp.after_app_request(metrics.confirm_ended)
NO_STORE = {"Cache-Control": "no-store"}


@bp.get("/healthz")
def healthz() -> ResponseReturnValue:
    if request.args.get("deep", "") not in ("", "0"):
        return _deep()
    if not health.database_answers():
        return {"ok": False, "database": "unreachable"}, 503, NO_STORE
    return {"ok": True}, 200, NO_STORE


def _deep() -> ResponseReturnValue:
    try:
        facts = health.status()
    except SQLAlchemyError:
        current_app.logger.warning("deep health: the database does not answer",
                                   exc_info=True)
        return {"ok": False, "database": "unreachable"}, 503, NO_STORE
    return {**facts.as_json(), "database": "ok"}, 200 if facts.ok else 503, NO_STORE


@bp.get("/metrics")
def prometheus() -> ResponseReturnValue:
    config = current_app.config
    if not config["METRICS"]:
        abort(404)
    token = config["METRICS_TOKEN"]
    given = request.headers.get("Authorization", "").encode("utf-8", "surrogateescape")
    if token and not hmac.compare_digest(given, f"Bearer {token}".encode()):  # bytes: any
        # header compares (str refuses non-ASCII with a TypeError, a 500)
        return Response("a bearer token is required\n", 401, mimetype="text/plain",
                        headers={"WWW-Authenticate": "Bearer", **NO_STORE})
    try:
        body, content_type = metrics.exposition(request.headers.get("Accept", ""))
    except SQLAlchemyError:
        current_app.logger.warning("metrics: the database does not answer", exc_info=True)
        return Response("the database does not answer\n", 503, mimetype="text/plain",
                        headers=NO_STORE)
    return Response(body, 200, content_type=content_type, headers=NO_STORE)
