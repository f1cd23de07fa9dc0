"""The authentication middleware (evalplatform.auth.AuthenticationMiddleware): a signed-in page reads its
session and its user in one statement, and signs in exactly whom Django's own middleware would."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from evalplatform.models import Session
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

SESSION_TABLE = Session._meta.db_table


def test_a_signed_in_page_reads_the_session_and_its_user_in_one_statement(alice: User) -> None:
    client = client_for(alice)
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/")
    assert response.status_code == 200 and response.wsgi_request.user == alice
    sessions = [q["sql"] for q in queries if SESSION_TABLE in q["sql"]]
    assert len(sessions) == 1 and "auth_user" in sessions[0], sessions
    users = [q["sql"] for q in queries if 'FROM "auth_user"' in q["sql"] and '"auth_user"."id" =' in q["sql"]]
    assert users == [], users  # Django's own read of the user by id: not made


def test_an_anonymous_request_reads_no_session(client: Client) -> None:
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/accounts/login/")
    assert response.status_code == 200 and not response.wsgi_request.user.is_authenticated
    assert not [q for q in queries if SESSION_TABLE in q["sql"]]


@pytest.mark.parametrize("column", ["another user", "no user", "none"])
def test_the_rows_user_column_signs_nobody_in_on_its_own(
    alice: User, lena: User, column: str
) -> None:  # fmt: skip
    """Where the row's column names another user than the signed data, or none found, Django's own sign-in
    reads the user the data names."""
    client = client_for(alice)
    user_id = {"another user": lena.pk, "no user": 10**9, "none": None}[column]
    Session.objects.filter(session_key=client.session.session_key).update(user_id=user_id)
    response = client.get("/")
    assert response.wsgi_request.user == alice


def test_a_changed_password_signs_the_session_out(alice: User) -> None:
    client = client_for(alice)
    alice.set_password("a-new-password-456")
    alice.save()
    response = client.get("/")
    assert not response.wsgi_request.user.is_authenticated
    assert "_auth_user_id" not in client.session  # flushed, as Django's get_user does


def test_an_inactive_user_is_not_signed_in(alice: User) -> None:
    client = client_for(alice)
    User.objects.filter(pk=alice.pk).update(is_active=False)
    assert not client.get("/").wsgi_request.user.is_authenticated


def test_a_session_signed_with_a_fallback_secret_is_verified_and_rotated(alice: User, settings: Any) -> None:
    client = client_for(alice)
    old_key = client.session.session_key
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "another-secret-key-for-the-rotation-test-only"
    assert client.get("/").wsgi_request.user == alice
    assert client.session.session_key != old_key  # cycled by Django's get_user
    assert client.session["_auth_user_hash"] == alice.get_session_auth_hash()  # the current secret's


def test_the_api_signs_a_session_in_through_it(alice: User) -> None:
    client = client_for(alice)
    response = client.get("/api/projects/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
