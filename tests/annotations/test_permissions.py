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
            payload = client.post(f"/api/projects/{project.slug}/next/").json()
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
                "comment",
                "created_at",
            }


@pytest.mark.django_db
class TestTeamReaders:
    """Members of the team a project is linked to read its quality and qrels; they change nothing."""

    @pytest.fixture
    def linked(self, project: Project, theo: User, alice: User) -> Project:
        from annotations import qrels
        from evalplatform.teams import team_create, team_member_set

        team = team_create(slug="search", name="Search", creator=theo)
        team_member_set(team=team, user=alice, role="viewer")  # also an annotator of the project
        project.team = team
        project.save(update_fields=["team"])
        build = qrels.qrels_build_create(project=project, created_by=None, enqueue=False)
        qrels.qrels_build_run(build_id=build.pk)
        return project

    def test_it_lets_team_members_read_quality_and_qrels(
        self, client: Client, theo: User, linked: Project
    ) -> None:
        client.force_login(theo)
        page = client.get(f"/projects/{linked.slug}/quality/")
        assert page.status_code == 200
        assert b"Build qrels</button>" not in page.content and b"Recompute quality" not in page.content
        assert client.get(f"/projects/{linked.slug}/qrels/1/trec/").status_code == 200
        assert client.get(f"/api/projects/{linked.slug}/qrels/").status_code == 200
        assert client.get(f"/api/projects/{linked.slug}/qrels/1/export/jsonl/").status_code == 200

    def test_it_keeps_team_members_from_changing_anything(
        self, client: Client, theo: User, linked: Project
    ) -> None:
        client.force_login(theo)
        assert client.post(f"/projects/{linked.slug}/quality/recompute/").status_code == 404
        assert client.post(f"/projects/{linked.slug}/qrels/", {"aggregation": "median"}).status_code == 404
        assert (
            client.post(
                f"/api/projects/{linked.slug}/qrels/", {}, content_type="application/json"
            ).status_code
            == 404
        )
        assert client.get(f"/projects/{linked.slug}/settings/").status_code == 404

    def test_it_never_shows_an_annotator_the_qrels_provenance_through_a_team(
        self, client: Client, alice: User, linked: Project
    ) -> None:
        client.force_login(alice)
        assert client.get(f"/projects/{linked.slug}/quality/").status_code == 403
        assert client.get(f"/api/projects/{linked.slug}/qrels/1/export/jsonl/").status_code == 403

    def test_it_answers_404_to_other_teams(self, client: Client, bob: User, linked: Project) -> None:
        from evalplatform.teams import team_create

        team_create(slug="fraud", name="Fraud", creator=bob)
        client.force_login(bob)  # an annotator of the project, but no member of its team
        assert client.get(f"/projects/{linked.slug}/quality/").status_code == 403
