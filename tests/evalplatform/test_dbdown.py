"""A request that loses its database connection answers 503 with Retry-After; other database errors stay
errors (the PostgreSQL restart test, tests/evalplatform/test_postgres_restart.py, shows it under load)."""

from __future__ import annotations

import psycopg
import pytest
from django.db import IntegrityError, InterfaceError, OperationalError
from django.http import HttpResponse
from django.test import RequestFactory

from evalplatform.dbdown import DatabaseUnavailableMiddleware, connection_lost


def django_error(kind: type[Exception], cause: Exception | None) -> Exception:
    """An error as Django's database wrapper raises it: the driver's error as its cause."""
    error = kind(str(cause) if cause else "connection already closed")
    error.__cause__ = cause
    return error


LOST = [
    django_error(
        OperationalError, psycopg.errors.AdminShutdown("terminating connection due to administrator command")
    ),
    django_error(OperationalError, psycopg.errors.CannotConnectNow("the database system is starting up")),
    django_error(OperationalError, psycopg.OperationalError("connection failed: Connection refused")),
    django_error(
        OperationalError, psycopg.errors.ConnectionFailure("server closed the connection unexpectedly")
    ),
    django_error(InterfaceError, None),
]
NOT_LOST = [
    django_error(OperationalError, psycopg.errors.DeadlockDetected("deadlock detected")),
    django_error(
        OperationalError, psycopg.errors.QueryCanceled("canceling statement due to statement timeout")
    ),
    django_error(IntegrityError, psycopg.errors.UniqueViolation("duplicate key value")),
    ValueError("not a database error"),
]


def middleware() -> DatabaseUnavailableMiddleware:
    return DatabaseUnavailableMiddleware(lambda request: HttpResponse("unused"))


@pytest.mark.parametrize("error", LOST, ids=lambda e: str(e)[:30])
def test_a_lost_connection_answers_503_with_retry_after(error: Exception) -> None:
    assert connection_lost(error)
    api = middleware().process_exception(RequestFactory().post("/api/projects/p/submit/"), error)
    assert api is not None and api.status_code == 503 and api["Retry-After"] == "5"
    assert api["Content-Type"] == "application/json" and b"database_unavailable" in api.content
    page = middleware().process_exception(RequestFactory().get("/projects/p/judge/"), error)
    assert page is not None and page.status_code == 503 and page["Retry-After"] == "5"
    assert b"Back in a moment" in page.content and b"Nothing was saved" in page.content


@pytest.mark.parametrize("error", NOT_LOST, ids=lambda e: str(e)[:30])
def test_other_errors_are_left_to_django(error: Exception) -> None:
    assert not connection_lost(error)
    assert middleware().process_exception(RequestFactory().get("/projects/p/judge/"), error) is None
