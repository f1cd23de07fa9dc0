"""The judging REST API: next, submit, skip, undo, progress, break; imports and overview for leads."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.test import APIRequestFactory

from annotations import api as judging_api
from annotations import api_urls, hotpath, selectors
from annotations.models import Annotation, Assignment, Document, Project, ProjectMembership
from tests.annotations.conftest import build_project
from tests.annotations.test_assignment import answer_all

MEMBERSHIP, TOKEN = ProjectMembership._meta.db_table, Token._meta.db_table


@pytest.fixture
def project(lena: User, alice: User) -> Project:
    return build_project(lead=lena, annotators=[alice], topics=2, docs_per_topic=4, gold_per_topic=1)


@pytest.fixture
def api(client: Client, alice: User) -> Client:
    client.force_login(alice)
    return client


def _figures(progress: dict[str, Any]) -> tuple[int, int, int]:
    return progress["done"], progress["remaining"], progress["assigned"]


def post(client: Client, url: str, body: dict[str, object] | None = None):  # type: ignore[no-untyped-def]
    return client.post(url, json.dumps(body or {}), content_type="application/json")


@pytest.mark.django_db
class TestAnnotatorApi:
    def test_it_serves_the_next_task_with_progress_and_scale(self, api: Client, project: Project) -> None:
        body = post(api, f"/api/projects/{project.slug}/next/").json()
        assert body["status"] == "task"
        assert set(body["task"]) == {
            "assignment",
            "query",
            "document",
            "served_at",
            "expires_at",
            "min_seconds",
            "seconds_left",
        }
        assert body["task"]["query"]["text"].startswith("query number")
        assert body["progress"] == {"done": 0, "remaining": 7, "assigned": 7, "percent": 0}
        assert [level["grade"] for level in body["scale"]] == [0, 1, 2, 3, 4]
        again = post(api, f"/api/projects/{project.slug}/next/").json()
        assert again["task"]["assignment"] == body["task"]["assignment"]
        held = api.get(f"/api/projects/{project.slug}/next/").json()
        assert held["status"] == "task" and held["task"]["assignment"] == body["task"]["assignment"]

    def test_it_submits_skips_and_reports_progress(self, api: Client, project: Project) -> None:
        first = post(api, f"/api/projects/{project.slug}/next/").json()["task"]["assignment"]
        created = post(api, f"/api/projects/{project.slug}/submit/", {"assignment": first, "grade": 3})
        assert created.status_code == 201
        assert created.json()["grade"] == 3 and created.json()["counts"] is True
        second = post(api, f"/api/projects/{project.slug}/next/").json()["task"]["assignment"]
        assert (
            post(api, f"/api/projects/{project.slug}/skip/", {"assignment": second}).json()["skipped"] is True
        )
        third = post(api, f"/api/projects/{project.slug}/next/").json()["task"]["assignment"]
        unclear = post(
            api, f"/api/projects/{project.slug}/submit/", {"assignment": third, "unclear": True}
        ).json()
        assert unclear["unclear"] is True and unclear["grade"] is None
        progress = api.get(f"/api/projects/{project.slug}/progress/").json()
        assert progress["done"] == 3 and progress["remaining"] == 4

    def test_it_refuses_a_second_answer_and_bad_input(self, api: Client, project: Project) -> None:
        first = post(api, f"/api/projects/{project.slug}/next/").json()["task"]["assignment"]
        assert post(api, f"/api/projects/{project.slug}/submit/", {"assignment": first}).status_code == 400
        bad_grade = post(api, f"/api/projects/{project.slug}/submit/", {"assignment": first, "grade": 9})
        assert bad_grade.status_code == 400 and bad_grade.json()["code"] == "invalid_grade"
        post(api, f"/api/projects/{project.slug}/submit/", {"assignment": first, "grade": 1})
        again = post(api, f"/api/projects/{project.slug}/submit/", {"assignment": first, "grade": 2})
        assert again.status_code == 409 and again.json()["code"] == "already_answered"

    def test_it_refuses_a_too_fast_answer_with_the_time_left(self, api: Client, project: Project) -> None:
        Project.objects.filter(pk=project.pk).update(min_seconds_per_task=20)
        first = post(api, f"/api/projects/{project.slug}/next/").json()["task"]
        assert 19 < first["seconds_left"] <= 20
        refused = post(
            api, f"/api/projects/{project.slug}/submit/", {"assignment": first["assignment"], "grade": 3}
        )
        assert refused.status_code == 409
        assert refused.json()["code"] == "too_fast" and 19 < refused.json()["seconds_left"] <= 20
        assert not Annotation.objects.exists()

    def test_it_flags_a_too_fast_answer_when_the_project_says_so(self, api: Client, project: Project) -> None:
        Project.objects.filter(pk=project.pk).update(min_seconds_per_task=20, too_fast_policy="flag")
        first = post(api, f"/api/projects/{project.slug}/next/").json()["task"]["assignment"]
        answer = post(api, f"/api/projects/{project.slug}/submit/", {"assignment": first, "grade": 3}).json()
        assert answer["too_fast"] is True and answer["counts"] is False

    def test_it_undoes_the_last_answer(self, api: Client, project: Project) -> None:
        first = post(api, f"/api/projects/{project.slug}/next/").json()["task"]["assignment"]
        post(api, f"/api/projects/{project.slug}/submit/", {"assignment": first, "grade": 0})
        undone = post(api, f"/api/projects/{project.slug}/undo/")
        assert undone.status_code == 200 and undone.json()["assignment"] == first
        assert post(api, f"/api/projects/{project.slug}/next/").json()["task"]["assignment"] == first
        nothing = post(api, f"/api/projects/{project.slug}/undo/")
        assert nothing.status_code == 409 and nothing.json()["code"] == "nothing_to_undo"

    def test_its_undo_reply_carries_the_counts_after_the_undo(self, api: Client, project: Project) -> None:
        base = f"/api/projects/{project.slug}"
        reply = post(api, f"{base}/next/").json()
        for _ in range(3):
            answered = post(
                api, f"{base}/submit/", {"assignment": reply["task"]["assignment"], "grade": 1, "next": True}
            )
            reply = answered.json()["next"]
        before = api.get(f"{base}/progress/").json()
        assert before["done"] == 3 and reply["progress"] == before
        for step in (1, 2):
            undone = post(api, f"{base}/undo/").json()
            now = api.get(f"{base}/progress/").json()
            assert undone["progress"] == now
            assert (now["done"], now["remaining"], now["assigned"]) == (
                before["done"] - step, before["remaining"] + step, before["assigned"],
            )  # fmt: skip

    def test_its_counts_are_right_right_after_an_undo_with_the_open_totals_cached(
        self, api: Client, project: Project, settings: Any
    ) -> None:
        settings.JUDGING_OPEN_TOTALS_SECONDS = (
            600  # as in production (1 s), where a page follows an undo at once
        )
        base = f"/api/projects/{project.slug}"
        reply = post(api, f"{base}/next/").json()
        for _ in range(3):
            answered = post(
                api, f"{base}/submit/", {"assignment": reply["task"]["assignment"], "grade": 1, "next": True}
            )
            reply = answered.json()["next"]
        before = reply["progress"]
        undone = post(api, f"{base}/undo/").json()
        page = api.get(f"/projects/{project.slug}/judge/").content.decode()
        expected = (before["done"] - 1, before["remaining"] + 1, before["assigned"])
        assert (
            undone["progress"]["done"],
            undone["progress"]["remaining"],
            undone["progress"]["assigned"],
        ) == expected
        assert f"<strong>{expected[1]}</strong> remaining · {expected[2]} in your queue" in page
        assert (
            tuple(api.get(f"{base}/progress/").json()[key] for key in ("done", "remaining", "assigned"))
            == expected
        )

    def test_its_counts_are_right_right_after_undoing_a_skip_with_the_open_totals_cached(
        self, api: Client, lena: User, alice: User, bob: User, settings: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # The skip gave its place up and the cached count holds the task as open; the undo makes it alice's
        # again and full. The replies that follow (maybe from another web process) count afresh.
        settings.JUDGING_OPEN_TOTALS_SECONDS = 600
        monkeypatch.setattr(selectors, "_open_totals_cache", {})
        monkeypatch.setattr(selectors, "open_totals_forget", lambda project: None)
        project = build_project(lead=lena, annotators=[alice, bob], topics=2, docs_per_topic=3, overlap=2)
        answer_all(project, bob)  # every task has one place left, for alice
        base = f"/api/projects/{project.slug}"
        held = post(api, f"{base}/next/").json()["task"]["assignment"]
        skipped = post(api, f"{base}/skip/", {"assignment": held, "next": True}).json()
        assert _figures(skipped["next"]["progress"]) == (1, 5, 6)
        undone = post(api, f"{base}/undo/").json()
        assert _figures(undone["progress"]) == (0, 6, 6)
        served = post(api, f"{base}/next/").json()
        assert served["task"]["assignment"] == held and _figures(served["progress"]) == (0, 6, 6)
        assert _figures(api.get(f"{base}/progress/").json()) == (0, 6, 6)

    def test_it_reports_an_empty_queue_and_a_break(self, api: Client, project: Project) -> None:
        Project.objects.filter(pk=project.pk).update(session_cap_minutes=0)
        while (body := post(api, f"/api/projects/{project.slug}/next/").json())["status"] == "task":
            post(
                api,
                f"/api/projects/{project.slug}/submit/",
                {"assignment": body["task"]["assignment"], "grade": 1},
            )
        assert body["status"] == "empty" and body["task"] is None
        assert body["progress"]["remaining"] == 0
        assert post(api, f"/api/projects/{project.slug}/break/").status_code == 204

    def test_it_claims_nothing_on_get(self, api: Client, project: Project) -> None:
        response = api.get(f"/api/projects/{project.slug}/next/")
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "none" and body["task"] is None
        assert body["message"] == "You hold no task: POST to next/ to claim one."
        assert body["progress"]["remaining"] == 7
        assert not Assignment.objects.exists()

    def test_it_reads_the_held_task_on_get_without_extending_it(self, api: Client, project: Project) -> None:
        claimed = post(api, f"/api/projects/{project.slug}/next/").json()["task"]
        soon = timezone.now() + timedelta(minutes=2)
        Assignment.objects.filter(pk=claimed["assignment"]).update(expires_at=soon)
        body = api.get(f"/api/projects/{project.slug}/next/").json()
        assert body["status"] == "task" and body["task"]["assignment"] == claimed["assignment"]
        assert Assignment.objects.get(pk=claimed["assignment"]).expires_at == soon
        assert Assignment.objects.count() == 1

    def test_it_reads_an_expired_reservation_as_none_held_on_get(self, api: Client, project: Project) -> None:
        claimed = post(api, f"/api/projects/{project.slug}/next/").json()["task"]
        gone = timezone.now() - timedelta(seconds=1)
        Assignment.objects.filter(pk=claimed["assignment"]).update(
            reserved_at=gone - timedelta(minutes=30), expires_at=gone
        )
        assert api.get(f"/api/projects/{project.slug}/next/").json()["status"] == "none"
        assert Assignment.objects.get(pk=claimed["assignment"]).expires_at == gone

    def test_it_accepts_token_authentication(self, client: Client, alice: User, project: Project) -> None:
        token = Token.objects.create(user=alice)
        response = client.get(f"/api/projects/{project.slug}/next/", HTTP_AUTHORIZATION=f"Token {token.key}")
        assert response.status_code == 200

    def test_it_lists_the_users_projects(self, api: Client, project: Project) -> None:
        assert api.get("/api/projects/").json() == [
            {"slug": "web", "name": "Web", "role": "annotator", "tasks": 8, "your_answers": 0}
        ]


@pytest.mark.django_db
class TestLeadApi:
    def test_it_imports_an_uploaded_file(self, client: Client, lena: User, project: Project) -> None:
        client.force_login(lena)
        content = b'{"doc_id": "n1", "text": "new"}\n{"doc_id": "n2", "text": "new"}\n'
        answers = [
            client.post(
                f"/api/projects/{project.slug}/imports/",
                {"kind": "documents", "file": SimpleUploadedFile("more.jsonl", content)},
            )
            for _ in range(2)
        ]
        assert [response.status_code for response in answers] == [201, 201]
        first, again = (response.json() for response in answers)
        assert first == {
            "kind": "documents",
            "file": "more.jsonl",
            "records": 2,
            "created": 2,
            "updated": 0,
            "unchanged": 0,
            "summary": "2 documents added.",
        }
        assert (again["created"], again["unchanged"]) == (0, 2) and again["summary"].startswith(
            "Nothing changed"
        )

    def test_it_imports_nothing_and_names_the_line_of_a_bad_upload(
        self, client: Client, lena: User, project: Project
    ) -> None:
        client.force_login(lena)
        before = Document.objects.count()
        upload = SimpleUploadedFile("pool.trec", b"q0 Q0 d0-0 1 2.0 r\nq0 Q0 d0-1 2 oops r\n")
        response = client.post(
            f"/api/projects/{project.slug}/imports/",
            {"kind": "pool", "format": "trec", "depth": 5, "file": upload},
        )
        assert response.status_code == 400
        assert response.json()["file"] == "pool.trec" and response.json()["line"] == 2
        assert "not a number" in response.json()["reason"]
        assert Document.objects.count() == before

    def test_it_refuses_a_format_the_kind_cannot_have(
        self, client: Client, lena: User, project: Project
    ) -> None:
        client.force_login(lena)
        upload = SimpleUploadedFile("docs.txt", b"d\tx\n")
        response = client.post(
            f"/api/projects/{project.slug}/imports/", {"kind": "documents", "format": "trec", "file": upload}
        )
        assert response.status_code == 400 and "format" in response.json()

    def test_it_reports_progress_by_topic_and_annotator(
        self, client: Client, lena: User, alice: User, project: Project
    ) -> None:
        alice_client = Client()
        alice_client.force_login(alice)
        first = post(alice_client, f"/api/projects/{project.slug}/next/").json()["task"]["assignment"]
        post(alice_client, f"/api/projects/{project.slug}/submit/", {"assignment": first, "grade": 2})
        client.force_login(lena)
        body = client.get(f"/api/projects/{project.slug}/overview/").json()
        assert body["totals"]["tasks"] == 8 and body["totals"]["gold_tasks"] == 2
        assert [t["qid"] for t in body["topics"]] == ["q0", "q1"]
        assert body["annotators"][0]["username"] == "alice" and body["annotators"][0]["answered"] == 1


@pytest.mark.django_db
class TestSchema:
    def test_it_documents_every_endpoint_in_the_openapi_schema(self, client: Client) -> None:
        paths = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]
        for name in ["next", "submit", "skip", "undo", "progress", "break", "imports", "overview"]:
            assert f"/api/projects/{{slug}}/{name}/" in paths, name
        assert (
            "multipart/form-data" in paths["/api/projects/{slug}/imports/"]["post"]["requestBody"]["content"]
        )

    def test_it_documents_that_getting_next_claims_nothing(self, client: Client) -> None:
        paths = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]
        next_path = paths["/api/projects/{slug}/next/"]
        assert next_path["get"]["summary"] == "The task you hold now (claims nothing)"
        assert next_path["post"]["summary"] == "Claim your next task (or get the one you hold)"


@pytest.mark.django_db
class TestJudgingSignIn:
    """The judging API's token sign-in reads the project's membership in its own statement; it is set on
    those views by name (`judging_api.JUDGING_AUTHENTICATION`), and no other view's `slug` argument is read so."""

    def test_it_reads_the_membership_with_a_judging_api_token_sign_in(
        self, client: Client, alice: User, project: Project
    ) -> None:
        token = Token.objects.create(user=alice)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(
                f"/api/projects/{project.slug}/progress/", HTTP_AUTHORIZATION=f"Token {token.key}"
            )
        assert response.status_code == 200
        membership_reads = [q["sql"] for q in queries if MEMBERSHIP in q["sql"]]
        assert len(membership_reads) == 1 and TOKEN in membership_reads[0]  # one statement, with the token's

    def test_it_sets_the_judging_sign_in_on_every_judging_api_view_and_no_other(self) -> None:
        views = {p.name: p.callback for p in api_urls.urlpatterns}
        judging = {
            name
            for name, view in views.items()
            if view.__module__ == judging_api.__name__ and name != "projects"
        }
        assert judging == {"next", "submit", "skip", "undo", "progress", "break", "imports", "import-job",
                           "overview", "comments"}  # fmt: skip
        for name, view in views.items():
            expected = (
                judging_api.JUDGING_AUTHENTICATION
                if name in judging
                else api_settings.DEFAULT_AUTHENTICATION_CLASSES
            )
            assert view.cls.authentication_classes == expected, name

    def test_it_reads_no_membership_at_sign_in_on_a_view_outside_the_judging_api(
        self, lena: User, project: Project
    ) -> None:
        """A view with a `slug` argument that does not name the judging authenticator: its sign-in reads the
        token alone, and leaves no membership on the user (`selectors.get_project_for_member` reads it)."""
        seen = {}

        @api_view(["GET"])
        def elsewhere(request: Request, slug: str) -> Response:
            seen["known"] = hotpath.membership_known(request.user, slug)
            return Response({})

        token = Token.objects.create(user=lena)
        request = APIRequestFactory().get("/elsewhere/", HTTP_AUTHORIZATION=f"Token {token.key}")
        with CaptureQueriesContext(connection) as queries:
            assert elsewhere(request, slug=project.slug).status_code == 200
        assert seen["known"] == (False, None)
        assert not [q["sql"] for q in queries if MEMBERSHIP in q["sql"]]
        # The qrels API is such a view: it reads the membership after the sign-in, in a statement of its own.
        with CaptureQueriesContext(connection) as queries:
            response = Client().get(
                f"/api/projects/{project.slug}/qrels/", HTTP_AUTHORIZATION=f"Token {token.key}"
            )
        assert response.status_code == 200
        assert not [q["sql"] for q in queries if TOKEN in q["sql"] and MEMBERSHIP in q["sql"]]
