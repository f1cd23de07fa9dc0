"""The judge page's one-request answer (judge.js): the answer stored and the next task claimed in one
transaction, and a JSON reply that holds the page's task part as a reload renders it."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotations import hotpath
from annotations.models import Annotation, Assignment, Project
from evalplatform.models import Session
from tests.annotations.conftest import build_project

#: What judge.js sends besides its session cookie and the form's fields.
FETCH = {"HTTP_ACCEPT": "application/json"}


def judge_url(project: Project) -> str:
    return f"/projects/{project.slug}/judge/"


def answer_next_url(html: str) -> str:
    """The form's one-request answer URL (`data-answer-next`) in a page or a reply's task part."""
    match = re.search(r'data-answer-next="(/projects/[\w-]+/judge/\d+/next/)"', html)
    assert match, html
    return match.group(1)


def task_part(html: str) -> str:
    """The page's `.judge` part, without its CSRF tokens (each rendering masks the token anew)."""
    start = html.index('<div class="judge"')
    end = html.index('<dialog id="guidelines-dialog"') if "<dialog" in html else len(html)
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", html[start:end]).strip()


def answer(client: Client, url: str, fields: dict[str, str]) -> Any:
    return client.post(url, fields, **FETCH)


@pytest.fixture
def project(lena: User, alice: User) -> Project:
    return build_project(lead=lena, annotators=[alice], topics=2, docs_per_topic=3, gold_per_topic=1)


@pytest.fixture
def alice_client(client: Client, alice: User) -> Client:
    client.force_login(alice)
    return client


def first_url(project: Project, client: Client) -> str:
    return answer_next_url(client.get(judge_url(project)).content.decode())


@pytest.mark.django_db
class TestOneRequestAnswer:
    def test_it_stores_the_answer_and_replies_with_the_next_task_as_a_reload_shows_it(
        self, project: Project, alice_client: Client
    ) -> None:
        url = first_url(project, alice_client)
        response = answer(alice_client, url, {"grade": "3", "comment": " see line 2 "})
        assert response.status_code == 200 and response["Content-Type"] == "application/json"
        reply = response.json()
        assert set(reply) == {"html", "level", "message", "url"}
        assert reply["level"] == "success" and reply["message"] == "Saved 3 (Highly relevant)."
        assert reply["url"] == judge_url(project)
        stored = Annotation.objects.get()
        assert (stored.grade, stored.comment) == (3, "see line 2")
        assert stored.assignment_id == int(url.split("/")[-3])
        following = answer_next_url(reply["html"])
        assert following != url
        assert Assignment.objects.get(annotator__username="alice", state="reserved").pk == int(
            following.split("/")[-3]
        )
        assert "<strong>1</strong> done · <strong>4</strong> remaining" in reply["html"]
        assert "Undo last answer" in reply["html"]
        # A reload claims nothing new: it shows the task the reply served, rendered the same.
        reload = alice_client.get(judge_url(project)).content.decode()
        assert task_part(reply["html"]) == task_part(reload)

    def test_it_skips_and_marks_unclear(self, project: Project, alice_client: Client) -> None:
        url = first_url(project, alice_client)
        skipped = answer(alice_client, url, {"action": "skip"}).json()
        assert skipped["message"] == "Skipped."
        unclear = answer(alice_client, answer_next_url(skipped["html"]), {"action": "unclear"}).json()
        assert unclear["message"] == "Marked as unclear."
        assert sorted(Annotation.objects.values_list("skipped", "unclear")) == [(False, True), (True, False)]

    def test_it_refuses_a_too_fast_answer_and_keeps_the_task(
        self, project: Project, alice_client: Client
    ) -> None:
        Project.objects.filter(pk=project.pk).update(min_seconds_per_task=30)
        url = first_url(project, alice_client)
        response = answer(alice_client, url, {"grade": "2"})
        assert response.status_code == 409
        reply = response.json()
        assert set(reply) == {"level", "message", "seconds_left"}
        assert reply["level"] == "warning" and reply["message"].startswith("Too fast: you spent")
        assert 0 < reply["seconds_left"] <= 30
        assert not Annotation.objects.exists()
        assert first_url(project, alice_client) == url, "the same task is served again"

    def test_it_flags_a_too_fast_answer_when_the_project_says_so(
        self, project: Project, alice_client: Client
    ) -> None:
        Project.objects.filter(pk=project.pk).update(min_seconds_per_task=30, too_fast_policy="flag")
        reply = answer(alice_client, first_url(project, alice_client), {"grade": "4"}).json()
        assert "flagged as too fast" in reply["message"] and 'id="judge-form"' in reply["html"]
        assert Annotation.objects.get().too_fast

    def test_it_answers_an_answered_task_with_the_task_held_now(
        self, project: Project, alice_client: Client
    ) -> None:
        url = first_url(project, alice_client)
        held = answer_next_url(answer(alice_client, url, {"grade": "1"}).json()["html"])
        response = answer(alice_client, url, {"grade": "2"})
        assert response.status_code == 409
        reply = response.json()
        assert reply["level"] == "error" and reply["message"] == "You have already answered that task."
        assert answer_next_url(reply["html"]) == held
        assert list(Annotation.objects.values_list("grade", flat=True)) == [1]

    def test_it_answers_a_task_not_reserved_for_her_with_404_and_her_task(
        self, project: Project, alice_client: Client
    ) -> None:
        url = first_url(project, alice_client)
        response = answer(alice_client, f"/projects/{project.slug}/judge/999999/next/", {"grade": "2"})
        assert response.status_code == 404
        reply = response.json()
        assert reply["message"] == "That task is not reserved for you."
        assert answer_next_url(reply["html"]) == url
        assert not Annotation.objects.exists()

    @pytest.mark.parametrize(
        ("sweep_every", "status", "message"),
        [
            (3600, 409, "Your reservation of that task expired"),  # found expired by the answer
            (0, 404, "That task is not reserved for you."),  # released by the sweep before the answer
        ],
    )
    def test_it_answers_an_expired_reservation_whose_place_went_to_another_with_a_new_task(
        self, sweep_every: int, status: int, message: str, lena: User, alice: User, bob: User,
        alice_client: Client, settings: Any,
    ) -> None:  # fmt: skip
        settings.JUDGING_EXPIRY_SWEEP_SECONDS = sweep_every
        project = build_project(lead=lena, annotators=[alice, bob], topics=1, docs_per_topic=3, overlap=1)
        url = first_url(project, alice_client)
        mine = Assignment.objects.get(pk=int(url.split("/")[-3]))
        past = timezone.now() - timedelta(hours=2)
        Assignment.objects.filter(pk=mine.pk).update(reserved_at=past, expires_at=past + timedelta(minutes=5))
        now = timezone.now()
        Assignment.objects.create(project=project, task=mine.task, annotator=bob, state="reserved",
                                  reserved_at=now, expires_at=now + timedelta(minutes=5))  # fmt: skip
        response = answer(alice_client, url, {"grade": "2"})
        assert response.status_code == status
        reply = response.json()
        assert reply["level"] == "error" and reply["message"].startswith(message)
        assert answer_next_url(reply["html"]) != url
        assert not Annotation.objects.exists()

    def test_it_says_when_the_queue_is_empty(self, project: Project, alice_client: Client) -> None:
        url = first_url(project, alice_client)
        for _ in range(5):  # 4 ordinary tasks and the 1 gold task planned at the project's share
            reply = answer(alice_client, url, {"grade": "2"}).json()
            assert reply["level"] == "success"
            url = answer_next_url(reply["html"]) if 'id="judge-form"' in reply["html"] else ""
        assert url == ""
        assert "Your queue is empty" in reply["html"] and "you answered 5 tasks" in reply["html"]
        assert Annotation.objects.count() == 5

    def test_it_holds_no_gold_flag_and_no_label_of_another_annotator(
        self, lena: User, alice: User, bob: User, alice_client: Client
    ) -> None:
        project = build_project(lead=lena, annotators=[alice, bob], topics=2, docs_per_topic=3,
                                gold_per_topic=1, overlap=2)  # fmt: skip
        bob_client = Client()
        bob_client.force_login(bob)
        bob_url = first_url(project, bob_client)
        while bob_url:
            html = answer(bob_client, bob_url, {"grade": "4", "comment": "bob-was-here"}).json()["html"]
            bob_url = answer_next_url(html) if 'id="judge-form"' in html else ""
        url, replies = first_url(project, alice_client), []
        while url:
            response = answer(alice_client, url, {"grade": "1"})
            replies.append(response.content.decode())
            html = response.json()["html"]
            url = answer_next_url(html) if 'id="judge-form"' in html else ""
        assert len(replies) >= 2 and Annotation.objects.filter(annotator=alice, task__is_gold=True).exists()
        for text in replies:
            assert "gold" not in text.lower() and "bob" not in text and "Perfectly relevant)" not in text


@pytest.mark.django_db
class TestOneRequestAnswerRefusals:
    def test_it_needs_the_csrf_token_as_the_page_sends_it(self, project: Project, alice: User) -> None:
        client = Client(enforce_csrf_checks=True)
        client.force_login(alice)
        page = client.get(judge_url(project)).content.decode()
        url = answer_next_url(page)
        assert client.post(url, {"grade": "2"}, **FETCH).status_code == 403
        assert not Annotation.objects.exists()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token
        response = client.post(url, {"grade": "2"}, HTTP_X_CSRFTOKEN=token.group(1), **FETCH)
        assert response.status_code == 200 and Annotation.objects.count() == 1

    def test_its_reply_does_not_send_the_csrf_cookie_again_and_its_token_answers_the_next_task(
        self, project: Project, alice: User
    ) -> None:
        client = Client(enforce_csrf_checks=True)
        client.force_login(alice)
        page = client.get(judge_url(project))
        cookie = page.cookies[settings.CSRF_COOKIE_NAME].value
        html = page.content.decode()
        for _ in range(2):
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
            assert token
            response = client.post(
                answer_next_url(html), {"grade": "2"}, HTTP_X_CSRFTOKEN=token.group(1), **FETCH
            )
            assert response.status_code == 200
            # The cookie the request carried stays: no Set-Cookie for it (only the page's load renews it).
            assert settings.CSRF_COOKIE_NAME not in response.cookies
            assert client.cookies[settings.CSRF_COOKIE_NAME].value == cookie
            html = response.json()["html"]
        assert Annotation.objects.count() == 2

    @pytest.mark.parametrize("sent_as", ["field", "header"])
    def test_its_reply_carries_the_token_the_request_sent_and_masks_a_new_one_for_a_bare_secret(
        self, sent_as: str, project: Project, alice: User
    ) -> None:
        client = Client(enforce_csrf_checks=True)
        client.force_login(alice)
        html = client.get(judge_url(project)).content.decode()
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
        assert found and len(found.group(1)) == 64
        token = found.group(1)
        fields = {"grade": "2", "csrfmiddlewaretoken": token} if sent_as == "field" else {"grade": "2"}
        headers = {} if sent_as == "field" else {"HTTP_X_CSRFTOKEN": token}
        response = client.post(answer_next_url(html), fields, **headers, **FETCH)
        assert response.status_code == 200
        html = response.json()["html"]
        # The undo form's and the answer form's.
        assert re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', html) == [token, token]
        # The cookie's bare secret (as a script reading the cookie sends it): a masked token is made for it.
        secret = client.cookies[settings.CSRF_COOKIE_NAME].value
        response = client.post(answer_next_url(html), {"grade": "1"}, HTTP_X_CSRFTOKEN=secret, **FETCH)
        assert response.status_code == 200
        html = response.json()["html"]
        masked = re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
        assert len(masked) == 2 and len(masked[0]) == 64 and masked[0] not in (token, secret)
        response = client.post(answer_next_url(html), {"grade": "0"}, HTTP_X_CSRFTOKEN=masked[0], **FETCH)
        assert response.status_code == 200 and Annotation.objects.count() == 3

    def test_its_reply_sets_a_csrf_cookie_where_the_request_had_none(
        self, project: Project, alice_client: Client
    ) -> None:
        url = first_url(project, alice_client)
        del alice_client.cookies[
            settings.CSRF_COOKIE_NAME
        ]  # the test client skips the check; the view mints one
        response = answer(alice_client, url, {"grade": "2"})
        assert response.status_code == 200 and settings.CSRF_COOKIE_NAME in response.cookies

    @pytest.mark.parametrize(
        ("who", "status"), [("lead", 403), ("outsider", 404), ("other-annotator", 404), ("anonymous", 302)]
    )
    def test_it_refuses_anyone_but_the_projects_annotator(
        self, who: str, status: int, project: Project, lena: User, bob: User, alice_client: Client
    ) -> None:
        url = first_url(project, alice_client)
        client = Client()
        if who == "lead":
            client.force_login(lena)
        elif who == "outsider":
            client.force_login(bob)
        elif who == "other-annotator":  # bob judges a project of his own, not this one
            build_project(lead=lena, annotators=[bob], slug="other", topics=1, docs_per_topic=1)
            client.force_login(bob)
        response = answer(client, url, {"grade": "2"})
        assert response.status_code == status
        if who == "anonymous":
            assert response["Location"].startswith("/accounts/login/")
        assert not Annotation.objects.exists()

    def test_it_takes_only_post(self, project: Project, alice_client: Client) -> None:
        url = first_url(project, alice_client)
        assert alice_client.get(url, **FETCH).status_code == 405


@pytest.mark.django_db
class TestOneRequestAnswerSignIn:
    """The answer's session sign-in reads the session, its user and their membership in one statement,
    and signs in only whom Django's own `get_user` would."""

    def test_it_reads_the_session_the_user_and_the_membership_in_one_statement(
        self, project: Project, alice_client: Client
    ) -> None:
        url = first_url(project, alice_client)
        with CaptureQueriesContext(connection) as queries:
            assert answer(alice_client, url, {"grade": "2"}).status_code == 200
        users = [q["sql"] for q in queries if "auth_user" in q["sql"]]
        assert len(users) == 1 and hotpath.MEMBERSHIP in users[0], users
        sessions = [q["sql"] for q in queries if Session._meta.db_table in q["sql"]]
        assert sessions == users, sessions
        # Every other statement that reads the membership is the answer's and the claim's, which lock it
        # (in PostgreSQL one call of `annotations_answer_claim`, whose answer takes that lock first).
        call = "annotations_answer_claim("
        members = [q["sql"] for q in queries if hotpath.MEMBERSHIP in q["sql"] or call in q["sql"]]
        members = [sql for sql in members if sql != users[0]]
        assert members and all("FOR UPDATE" in sql or call in sql for sql in members), members

    @pytest.mark.parametrize("column", ["another user", "no user", "none"])
    def test_the_session_rows_user_column_signs_nobody_in_on_its_own(
        self, project: Project, alice: User, bob: User, alice_client: Client, column: str
    ) -> None:
        """The row's `user_id` only finds the user to join: where it names another user than the session's
        signed data, or none found, the one statement's user is not taken, and Django's `get_user` signs in
        the user the data names."""
        url = first_url(project, alice_client)
        user_id = {"another user": bob.pk, "no user": 10**9, "none": None}[column]
        Session.objects.filter(session_key=alice_client.session.session_key).update(user_id=user_id)
        assert answer(alice_client, url, {"grade": "2"}).status_code == 200
        assert list(Annotation.objects.values_list("annotator_id", flat=True)) == [alice.pk]

    def test_it_signs_out_a_session_whose_password_changed(
        self, project: Project, alice: User, alice_client: Client
    ) -> None:
        url = first_url(project, alice_client)
        alice.set_password("a-new-password-456")
        alice.save()
        response = answer(alice_client, url, {"grade": "2"})
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
        assert not Annotation.objects.exists()
        assert "_auth_user_id" not in alice_client.session  # flushed, as Django's get_user does

    def test_it_refuses_an_inactive_user(self, project: Project, alice: User, alice_client: Client) -> None:
        url = first_url(project, alice_client)
        User.objects.filter(pk=alice.pk).update(is_active=False)
        response = answer(alice_client, url, {"grade": "2"})
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
        assert not Annotation.objects.exists()

    def test_it_verifies_a_session_signed_with_a_fallback_secret_and_rotates_it(
        self, project: Project, alice_client: Client, settings: Any
    ) -> None:
        url = first_url(project, alice_client)
        old_key = alice_client.session.session_key
        settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
        settings.SECRET_KEY = "another-secret-key-for-the-rotation-test-only"
        response = answer(alice_client, url, {"grade": "2"})
        assert response.status_code == 200 and Annotation.objects.count() == 1
        assert alice_client.session.session_key != old_key  # cycled by Django's get_user

    def test_it_leaves_another_backends_session_to_django(
        self, project: Project, alice_client: Client, settings: Any
    ) -> None:
        url = first_url(project, alice_client)
        session = alice_client.session
        session["_auth_user_backend"] = "tests.no.such.Backend"
        session.save()
        response = answer(alice_client, url, {"grade": "2"})
        assert response.status_code == 302 and not Annotation.objects.exists()
