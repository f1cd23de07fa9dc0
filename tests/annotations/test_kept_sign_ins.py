"""The judge page's answers, and the judging API's, from a kept sign-in (`annotations.kept_sign_ins`): a
session's (or token's) second answer in a process makes no statement for its sign-in, and whatever would have ended or changed that sign-in since
the first (a logout, a password change, a deactivation, an expiry, a new role, a project's new settings)
takes effect on that answer as it does without the kept sign-in: nothing is written for it."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.authtoken.models import Token

from annotations import kept_sign_ins
from annotations.models import Annotation, Assignment, Project, ProjectMembership
from evalplatform import sqlrows
from evalplatform.models import Session
from tests.annotations.conftest import build_project
from tests.annotations.test_judge_page_answer import FETCH, answer_next_url, judge_url

MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


@pytest.fixture
def project(lena: User, alice: User) -> Project:
    return build_project(lead=lena, annotators=[alice], topics=2, docs_per_topic=4)


@pytest.fixture
def alice_client(alice: User) -> Client:
    """Alice signed in as the login page signs in (the model backend), with the CSRF check on."""
    client = Client()
    client.force_login(alice, backend=MODEL_BACKEND)
    return client


def first_answer(project: Project, client: Client) -> str:
    """Answer the page's first task (a sign-in of its own, then kept); the next task's answer URL."""
    page = client.get(judge_url(project)).content.decode()
    response = client.post(answer_next_url(page), {"grade": "2"}, **FETCH)
    assert response.status_code == 200
    session_key = client.cookies["sessionid"].value
    assert kept_sign_ins.kept(session_key, project.slug) is not None
    return answer_next_url(response.json()["html"])


def statements(queries: CaptureQueriesContext, table: str) -> list[str]:
    return [query["sql"] for query in queries if table in query["sql"]]


@pytest.mark.django_db
class TestKeptSignIn:
    def test_a_sessions_next_answer_makes_no_statement_for_its_sign_in(
        self, project: Project, alice_client: Client
    ) -> None:
        if connection.vendor != "postgresql":
            pytest.fail("kept sign-ins are PostgreSQL's; run the tests on it")
        url = first_answer(project, alice_client)
        with CaptureQueriesContext(connection) as queries:
            response = alice_client.post(url, {"grade": "3"}, **FETCH)
        assert response.status_code == 200 and response.json()["level"] == "success"
        assert statements(queries, Session._meta.db_table) == statements(queries, "auth_user") == []
        assert len(statements(queries, "annotations_answer_claim(")) == 1
        assert Annotation.objects.filter(grade=3).count() == 1
        # The reply is the one a fresh sign-in gives: the next task, for alice.
        assert answer_next_url(response.json()["html"]) != url

    @pytest.mark.parametrize("change", ["logout", "expiry", "password", "deactivated"])
    def test_an_ended_sign_in_answers_nothing_and_goes_to_the_login_page(
        self, change: str, project: Project, alice: User, alice_client: Client
    ) -> None:
        url = first_answer(project, alice_client)
        session_key = alice_client.cookies["sessionid"].value
        if change == "logout":
            Session.objects.filter(session_key=session_key).delete()
        elif change == "expiry":
            Session.objects.filter(session_key=session_key).update(expire_date=timezone.now() - timedelta(1))
        elif change == "password":
            alice.set_password("a-new-password-for-alice")
            alice.save()
        else:
            User.objects.filter(pk=alice.pk).update(is_active=False)
        answers = Annotation.objects.count()
        response = alice_client.post(url, {"grade": "3"}, **FETCH)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
        assert Annotation.objects.count() == answers
        assert Assignment.objects.get(pk=int(url.split("/")[-3])).state == "reserved"
        assert kept_sign_ins.kept(session_key, project.slug) is None

    def test_a_refusal_before_the_answers_statement_signs_in_afresh_first(
        self, project: Project, alice_client: Client
    ) -> None:
        """A grade off the scale is refused before the answer's statement, and the refusal claims the task
        the page shows: for a session that ended, that is the login page, and nothing is claimed."""
        url = first_answer(project, alice_client)
        Session.objects.filter(session_key=alice_client.cookies["sessionid"].value).delete()
        assignments = Assignment.objects.count()
        response = alice_client.post(url, {"grade": "7"}, **FETCH)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
        assert Assignment.objects.count() == assignments

    def test_a_refusal_for_a_kept_sign_in_that_holds_is_the_usual_one(
        self, project: Project, alice_client: Client
    ) -> None:
        url = first_answer(project, alice_client)
        response = alice_client.post(url, {"grade": "7"}, **FETCH)
        assert response.status_code == 400 and response.json()["level"] == "error"
        assert Annotation.objects.count() == 1

    @pytest.mark.parametrize("role", ["lead", "removed"])
    def test_a_changed_role_answers_nothing(
        self, role: str, project: Project, alice: User, alice_client: Client
    ) -> None:
        url = first_answer(project, alice_client)
        membership = ProjectMembership.objects.filter(project=project, user=alice)
        if role == "lead":
            membership.update(role="lead")
        else:
            membership.delete()
        response = alice_client.post(url, {"grade": "3"}, **FETCH)
        assert response.status_code in (403, 404)
        assert Annotation.objects.count() == 1

    def test_a_projects_new_settings_apply_to_the_next_answer(
        self, project: Project, alice_client: Client
    ) -> None:
        url = first_answer(project, alice_client)
        Project.objects.filter(pk=project.pk).update(
            min_seconds_per_task=600, too_fast_policy=Project.TooFastPolicy.REFUSE
        )
        response = alice_client.post(url, {"grade": "3"}, **FETCH)
        assert response.status_code == 409 and response.json()["message"].startswith("Too fast"), (
            response.json()
        )
        assert Annotation.objects.count() == 1

    def test_a_kept_sign_in_is_its_sessions_and_projects_only(
        self, project: Project, lena: User, alice: User, bob: User, alice_client: Client
    ) -> None:
        """Another session of the same user, or the same session in another project, signs in by itself."""
        url = first_answer(project, alice_client)
        other = build_project(lead=lena, annotators=[alice], slug="other", topics=1, docs_per_topic=2)
        with CaptureQueriesContext(connection) as queries:
            page = alice_client.get(judge_url(other)).content.decode()
            response = alice_client.post(answer_next_url(page), {"grade": "1"}, **FETCH)
        assert response.status_code == 200
        assert len(statements(queries, Session._meta.db_table)) == 2  # the page's and the answer's sign-ins
        second = Client()
        second.force_login(alice, backend=MODEL_BACKEND)
        assert second.cookies["sessionid"].value != alice_client.cookies["sessionid"].value
        with CaptureQueriesContext(connection) as queries:
            response = second.post(url, {"grade": "1"}, **FETCH)
        assert response.status_code == 200 and len(statements(queries, Session._meta.db_table)) == 1


def test_a_requests_copies_leave_the_kept_instances_as_verified() -> None:
    """What a request changes on its user, membership or project is its own copy's (`sqlrows.clone`)."""
    user = User(pk=1, username="someone")
    copied = sqlrows.clone(user)
    copied.username = "changed"
    assert user.username == "someone" and copied.pk == 1 and copied._state is not user._state


def api_post(client: Client, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def token(alice: User) -> Token:
    return Token.objects.create(user=alice)


@pytest.fixture
def alice_api(token: Token) -> Client:
    client = Client()
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {token.key}"
    return client


def first_api_answer(project: Project, client: Client, token: Token) -> int:
    """Claim and answer with `next: true` (a token sign-in of its own, then kept); the next assignment."""
    base = f"/api/projects/{project.slug}"
    held = api_post(client, f"{base}/next/", {}).json()["task"]["assignment"]
    reply = api_post(client, f"{base}/submit/", {"assignment": held, "grade": 2, "next": True})
    assert reply.status_code == 201, reply.content
    assert kept_sign_ins._KEPT.get((token.key, project.slug)) is not None
    return int(reply.json()["next"]["task"]["assignment"])


@pytest.mark.django_db
class TestKeptTokenSignIn:
    def test_a_tokens_next_answer_makes_no_statement_for_its_sign_in(
        self, project: Project, alice_api: Client, token: Token
    ) -> None:
        held = first_api_answer(project, alice_api, token)
        with CaptureQueriesContext(connection) as queries:
            reply = api_post(
                alice_api,
                f"/api/projects/{project.slug}/submit/",
                {"assignment": held, "grade": 3, "next": True},
            )
        assert reply.status_code == 201 and reply.json()["next"]["status"] == "task"
        assert statements(queries, "authtoken_token") == statements(queries, "auth_user") == []
        assert len(statements(queries, "annotations_answer_claim(")) == 1
        assert Annotation.objects.filter(grade=3).count() == 1

    @pytest.mark.parametrize("change", ["deleted", "replaced", "deactivated", "lead", "removed"])
    def test_a_revoked_sign_in_answers_nothing(
        self, change: str, project: Project, alice: User, alice_api: Client, token: Token
    ) -> None:
        held = first_api_answer(project, alice_api, token)
        if change in ("deleted", "replaced"):
            key = token.key
            token.delete()
            if change == "replaced":
                Token.objects.create(user=alice)
            assert not Token.objects.filter(key=key).exists()
        elif change == "deactivated":
            User.objects.filter(pk=alice.pk).update(is_active=False)
        else:
            membership = ProjectMembership.objects.filter(project=project, user=alice)
            membership.update(role="lead") if change == "lead" else membership.delete()
        base = f"/api/projects/{project.slug}"
        reply = api_post(alice_api, f"{base}/submit/", {"assignment": held, "grade": 3, "next": True})
        expected = {"deleted": 401, "replaced": 401, "deactivated": 401, "lead": 403, "removed": 404}[change]
        assert reply.status_code == expected, reply.content
        assert Annotation.objects.count() == 1
        # A refusal before the answer's statement (a field off its range) signs in afresh too.
        reply = api_post(alice_api, f"{base}/submit/", {"assignment": held, "grade": "x", "next": True})
        assert reply.status_code == expected

    def test_a_projects_new_settings_apply_to_the_next_api_answer(
        self, project: Project, alice_api: Client, token: Token
    ) -> None:
        held = first_api_answer(project, alice_api, token)
        Project.objects.filter(pk=project.pk).update(
            min_seconds_per_task=600, too_fast_policy=Project.TooFastPolicy.REFUSE
        )
        base = f"/api/projects/{project.slug}"
        reply = api_post(alice_api, f"{base}/submit/", {"assignment": held, "grade": 3, "next": True})
        assert reply.status_code == 409 and reply.json()["code"] == "too_fast", reply.content
        assert Annotation.objects.count() == 1

    def test_a_valid_refusal_for_a_kept_token_is_the_usual_one(
        self, project: Project, alice_api: Client, token: Token
    ) -> None:
        held = first_api_answer(project, alice_api, token)
        base = f"/api/projects/{project.slug}"
        reply = api_post(alice_api, f"{base}/submit/", {"assignment": held, "grade": 7, "next": True})
        assert reply.status_code == 400 and Annotation.objects.count() == 1
        reply = api_post(alice_api, f"{base}/skip/", {"assignment": held, "next": True})
        assert reply.status_code == 201 and reply.json()["next"]["status"] == "task"

    def test_a_plain_answer_signs_in_with_its_statement_and_is_stored_once(
        self, project: Project, alice_api: Client, token: Token
    ) -> None:
        """Only the answer with `next: true` checks a kept sign-in in its statement; an answer without it
        (and a form-encoded one) signs in as before, and is stored once, 201."""
        held = first_api_answer(project, alice_api, token)
        base = f"/api/projects/{project.slug}"
        with CaptureQueriesContext(connection) as queries:
            reply = api_post(alice_api, f"{base}/submit/", {"assignment": held, "grade": 3})
        assert reply.status_code == 201, reply.content
        assert len(statements(queries, "authtoken_token")) == 1
        assert Annotation.objects.filter(assignment_id=held).count() == 1
        held = api_post(alice_api, f"{base}/next/", {}).json()["task"]["assignment"]
        reply = alice_api.post(f"{base}/submit/", {"assignment": held, "grade": 1, "next": "true"})
        assert reply.status_code == 201 and Annotation.objects.filter(assignment_id=held).count() == 1
