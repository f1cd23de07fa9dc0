"""Answer 503 with Retry-After, not 500, when a request loses its database connection.

While PostgreSQL restarts or fails over, every request that reaches the database fails. Those failures
are the service being briefly unavailable, not a bug: clients (the annotators' pages, scripts using the
API) should wait a few seconds and try again, and a 503 with `Retry-After` says exactly that. Django closes
the broken connection at the end of the request (`CONN_HEALTH_CHECKS`), so the next request reconnects.

Only connection-level errors are turned into 503s: PostgreSQL's SQLSTATE class 08 (connection exception)
and 57P0x (operator intervention: shutdown, crash shutdown, cannot connect now), or a psycopg error with
no SQLSTATE on a connection that is gone. A deadlock or a constraint error stays what it is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
MESSAGE = (
    "The database is unavailable for a moment. Nothing was saved by this request; try again in a few seconds."
)


def connection_lost(exc: BaseException) -> bool:
    """Whether `exc` says the database connection is gone, rather than that the request did wrong."""
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return False
    cause = exc.__cause__
    sqlstate = getattr(cause, "sqlstate", None)
    if sqlstate is not None:
        return sqlstate.startswith("08") or sqlstate.startswith("57P0")
    # No SQLSTATE: the client library lost the server (closed connection, refused, reset).
    return isinstance(exc, InterfaceError) or cause is None or "connection" in str(exc).lower()


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not connection_lost(exception):
            return None
        logger.warning("database unavailable: %s %s answered 503 (%s)", request.method, request.path,
                       str(exception).strip().splitlines()[0] if str(exception).strip() else type(exception).__name__)  # fmt: skip
        wants_json = request.path.startswith("/api/") or "json" in request.headers.get("Accept", "")
        response: HttpResponse
        if wants_json:
            response = JsonResponse({"detail": MESSAGE, "code": "database_unavailable"}, status=503)
        else:
            # A page of its own that reads nothing (base.html would look the user up in the database).
            response = HttpResponse(render_to_string("503.html", {"message": MESSAGE}), status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
