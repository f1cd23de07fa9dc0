"""Every judging page and endpoint checks membership and role; annotators never see gold or others' labels."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotations import services
from annotations.models import Annotation, Project
from tests.annotations.conftest import build_project
from tests.conftest import THEO

ANNOTATOR_PAGES = ["judge/"]
LEAD_PAGES = ["settings/", "import/"]
ANNOTATOR_API = ["next/", "progress/"]
LEAD_API = ["overview/"]


@pytest.fixture
def project(lena: User, alice: User, bob: User) -> Project:
    return build_project(lead=lena, annotators=[alice, bob], topics=1, docs_per_topic=8, gold_per_topic=2)


@pytest.fixture
def other_project(lena: User) -> Project:
    return build_project(lead=lena, slug="private", topics=1, docs_per_topic=2)


@pytest.mark.django_db
class TestHtmlDenials:
    def test_it_sends_anonymous_users_to_the_login_page(self, client: Client, project: Project) -> None:
        for page in ["", *ANNOTATOR_PAGES, *LEAD_PAGES, "guidelines/"]:
            response = client.get(f"/projects/{project.slug}/{page}")
            assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), page

    def test_it_answers_404_to_non_members(self, client: Client, theo: User, project: Project) -> None:
        client.force_login(theo)
        for page in ["", *ANNOTATOR_PAGES, *LEAD_PAGES, "guidelines/"]:
            assert client.get(f"/projects/{project.slug}/{page}").status_code == 404, page
        assert (
            client.post(f"/projects/{project.slug}/members/", {"username": THEO.username}).status_code == 404
        )
        assert client.get("/projects/no-such-project/judge/").status_code == 404

    def test_it_keeps_annotators_out_of_lead_pages(
        self, client: Client, alice: User, project: Project
    ) -> None:
        client.force_login(alice)
        for page in LEAD_PAGES:
            assert client.get(f"/projects/{project.slug}/{page}").status_code == 403, page
        response = client.post(f"/projects/{project.slug}/members/", {"username": "alice", "role": "lead"})
        assert response.status_code == 403
        assert client.get(f"/projects/{project.slug}/").status_code == 302  # to the queue, not the lead page
        assert client.get("/projects/new/").status_code == 403

    def test_it_keeps_leads_out_of_the_queue(self, client: Client, lena: User, project: Project) -> None:
        client.force_login(lena)
        assert client.get(f"/projects/{project.slug}/judge/").status_code == 403

    def test_it_answers_404_for_projects_the_annotator_is_not_in(
        self, client: Client, alice: User, other_project: Project
    ) -> None:
        client.force_login(alice)
        assert client.get(f"/projects/{other_project.slug}/judge/").status_code == 404
        assert b"Private" not in client.get("/projects/").content

    def test_it_refuses_to_answer_another_annotators_task(
        self, client: Client, alice: User, bob: User, project: Project
    ) -> None:
        held = services.task_claim(project=project, annotator=bob).assignment
        client.force_login(alice)
        page = client.post(f"/projects/{project.slug}/judge/{held.pk}/", {"grade": "4"}, follow=True).content
        assert b"That task is not reserved for you." in page
        assert not Annotation.objects.exists()

    def test_it_shows_annotators_no_gold_and_no_labels_of_others(
        self, client: Client, alice: User, bob: User, project: Project
    ) -> None:
        held = services.task_claim(project=project, annotator=bob).assignment
        services.annotation_submit(project=project, annotator=bob, assignment_id=held.pk, grade=4)
        client.force_login(alice)
        for url in [
            "/projects/",
            f"/projects/{project.slug}/judge/",
            f"/projects/{project.slug}/guidelines/",
        ]:
            page = client.get(url, follow=True).content.decode().lower()
            assert "gold" not in page, url
            assert "bob" not in page, url

    def test_it_keeps_annotators_out_of_the_admin(self, client: Client, alice: User) -> None:
        client.force_login(alice)
        assert client.get("/admin/annotations/goldlabel/").status_code == 302


@pytest.mark.django_db
class TestApiDenials:
    def test_it_refuses_anonymous_calls(self, client: Client, project: Project) -> None:
        for path in [*ANNOTATOR_API, *LEAD_API]:
            assert client.get(f"/api/projects/{project.slug}/{path}").status_code in {401, 403}, path

    def test_it_answers_404_to_non_members(self, client: Client, theo: User, project: Project) -> None:
        client.force_login(theo)
        for path in [*ANNOTATOR_API, *LEAD_API]:
            assert client.get(f"/api/projects/{project.slug}/{path}").status_code == 404, path
        assert (
            client.post(f"/api/projects/{project.slug}/submit/", {"assignment": 1, "grade": 1}).status_code
            == 404
        )
        assert client.post(f"/api/projects/{project.slug}/imports/", {"kind": "topics"}).status_code == 404

    def test_it_keeps_annotators_out_of_lead_endpoints(
        self, client: Client, alice: User, project: Project
    ) -> None:
        client.force_login(alice)
        assert client.get(f"/api/projects/{project.slug}/overview/").status_code == 403
        assert client.post(f"/api/projects/{project.slug}/imports/", {"kind": "topics"}).status_code == 403

    def test_it_keeps_leads_out_of_annotator_endpoints(
        self, client: Client, lena: User, project: Project
    ) -> None:
        client.force_login(lena)
        assert client.get(f"/api/projects/{project.slug}/next/").status_code == 403

    def test_it_refuses_to_answer_another_annotators_task(
        self, client: Client, alice: User, bob: User, project: Project
    ) -> None:
        held = services.task_claim(project=project, annotator=bob).assignment
        client.force_login(alice)
        for path, body in [
            ("submit/", {"assignment": held.pk, "grade": 3}),
            ("skip/", {"assignment": held.pk}),
        ]:
            response = client.post(
                f"/api/projects/{project.slug}/{path}", body, content_type="application/json"
            )
            assert response.status_code == 404
            assert response.json()["code"] == "assignment_not_found"
        assert not Annotation.objects.exists()

    def test_it_says_nothing_about_gold_in_the_annotators_payloads(
        self, client: Client, alice: User, project: Project
    ) -> None:
        client.force_login(alice)
        for _ in range(8):
            payload = client.get(f"/api/projects/{project.slug}/next/").json()
            assert "gold" not in json.dumps(payload).lower()
            if payload["status"] != "task":
                break
            answer = client.post(
                f"/api/projects/{project.slug}/submit/",
                {"assignment": payload["task"]["assignment"], "grade": 2},
                content_type="application/json",
            ).json()
            assert set(answer) == {
                "assignment",
                "grade",
                "skipped",
                "unclear",
                "too_fast",
                "counts",
                "seconds_spent",
                "created_at",
            }
