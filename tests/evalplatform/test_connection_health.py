"""The PostgreSQL backend's health check of a kept connection (evalplatform/postgresql/base.py): no round
trip while the connection is idle and the server has said nothing, and a connection the server ended is
found dead before a request uses it, so that request reconnects instead of failing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper

pytestmark = pytest.mark.django_db


@pytest.fixture
def kept() -> Iterator[BaseDatabaseWrapper]:
    """A connection of its own (the test's own sits in the test transaction), as a web process keeps one."""
    if connection.vendor != "postgresql":
        pytest.fail("the health check is PostgreSQL's; run the tests on it")
    wrapper = connections.create_connection("default")
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def backend_pid(wrapper: BaseDatabaseWrapper) -> int:
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def test_it_is_the_projects_backend(kept: BaseDatabaseWrapper) -> None:
    assert type(kept).__module__ == "evalplatform.postgresql.base"
    assert kept.vendor == "postgresql" and kept.settings_dict["CONN_HEALTH_CHECKS"] is True


def test_an_idle_connection_is_usable_without_a_statement(
    kept: BaseDatabaseWrapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend_pid(kept)

    def no_statement(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the health check sent a statement")

    monkeypatch.setattr(psycopg.Connection, "cursor", no_statement)
    assert kept.is_usable() is True


def test_a_connection_the_server_ended_is_not_usable_and_is_replaced(kept: BaseDatabaseWrapper) -> None:
    pid = backend_pid(kept)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        assert cursor.fetchone()[0] is True
    deadline = time.monotonic() + 5
    while kept.is_usable() and time.monotonic() < deadline:  # the goodbye takes a moment to arrive
        time.sleep(0.05)
    assert kept.is_usable() is False
    # What Django does before a request's first statement: the dead connection is closed, a new one made.
    kept.health_check_done = False
    kept.close_if_health_check_failed()
    assert kept.connection is None
    assert backend_pid(kept) != pid


def test_a_closed_connection_is_not_usable(kept: BaseDatabaseWrapper) -> None:
    kept.connection.close()
    assert kept.is_usable() is False
