"""The lead's pages: project list and detail (with query counts), creation, settings, members, imports."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotations import services
from annotations.models import Document, Project, ProjectMembership, Topic
from tests.annotations.conftest import build_project
from tests.conftest import THEO


@pytest.fixture
def project(lena: User, annotators) -> Project:  # type: ignore[no-untyped-def]
    people = annotators(3)
    project = build_project(
        lead=lena, annotators=people, topics=3, docs_per_topic=4, gold_per_topic=1, overlap=2
    )
    for person in people:
        for _ in range(2):
            held = services.task_claim(project=project, annotator=person).assignment
            services.annotation_submit(project=project, annotator=person, assignment_id=held.pk, grade=2)
    return project


@pytest.mark.django_db
class TestProjectList:
    def test_it_lists_projects_in_a_constant_number_of_queries(
        self, lead_client: Client, lena: User, project: Project, django_assert_max_num_queries
    ) -> None:  # type: ignore[no-untyped-def]
        for i in range(5):
            build_project(lead=lena, slug=f"extra-{i}", topics=1, docs_per_topic=2)
        with django_assert_max_num_queries(6):
            page = lead_client.get("/projects/").content.decode()
        assert page.count('href="/projects/extra-') >= 5
        assert ">12</td>" in page  # the tasks of `project`

    def test_it_shows_annotators_their_own_answer_counts(self, client: Client, project: Project) -> None:
        annotator = User.objects.get(username="ann0")
        client.force_login(annotator)
        page = client.get("/projects/").content.decode()
        assert f'href="/projects/{project.slug}/judge/"' in page
        assert '<td class="num">2</td>' in page


#: The project page's adjudication link counts the pairs waiting (`adjudication.waiting_count`): the
#: latest build, the answers with their users, gold and attention checks, the pairs, the overrides and
#: the adjudications, a fixed number of queries whatever the project's size.
WAITING_COUNT_QUERIES = 9


@pytest.mark.django_db
class TestProjectDetail:
    def test_it_shows_progress_by_topic_and_annotator_and_the_gold(
        self, lead_client: Client, project: Project, django_assert_max_num_queries
    ) -> None:  # type: ignore[no-untyped-def]
        with django_assert_max_num_queries(14 + WAITING_COUNT_QUERIES):
            page = lead_client.get(f"/projects/{project.slug}/").content.decode()
        for qid in ("q0", "q1", "q2"):
            assert f"<td>{qid}</td>" in page
        for name in ("ann0", "ann1", "ann2"):
            assert f"<td>{name}</td>" in page
        assert "Gold labels" in page and "<td>d0-0</td>" in page
        assert "12</strong> tasks (3 gold)" in page

    def test_it_keeps_the_query_count_flat_as_annotators_grow(
        self, lead_client: Client, project: Project, annotators, django_assert_max_num_queries
    ) -> None:  # type: ignore[no-untyped-def]
        for person in annotators(7, start=3):
            services.membership_set(project=project, user=person, role=ProjectMembership.Role.ANNOTATOR)
        with django_assert_max_num_queries(14 + WAITING_COUNT_QUERIES):
            lead_client.get(f"/projects/{project.slug}/")


@pytest.mark.django_db
class TestCreateAndSettings:
    def test_it_lets_a_lead_create_a_project(self, lead_client: Client, lena: User) -> None:
        form = {
            "name": "Product search", "slug": "products", "description": "", "guidelines": "Rate it.",
            "scale": '[{"grade": 0, "label": "Bad"}, {"grade": 1, "label": "Good"}]', "guideline_examples": "[]",
            "overlap": 3, "gold_share_min": 0.1, "gold_share_max": 0.15, "min_seconds_per_task": 10,
            "too_fast_policy": "refuse", "session_cap_minutes": 60, "session_break_minutes": 10, "reservation_minutes": 30,
        }  # fmt: skip
        response = lead_client.post("/projects/new/", form)
        assert response.status_code == 302 and response["Location"] == "/projects/products/import/"
        project = Project.objects.get(slug="products")
        assert project.grades == [0, 1]
        assert ProjectMembership.objects.get(project=project, user=lena).role == "lead"

    def test_it_refuses_creation_to_users_who_are_not_leads(self, client: Client, theo: User) -> None:
        client.force_login(theo)
        assert client.get("/projects/new/").status_code == 403

    def test_it_validates_the_settings(self, lead_client: Client, project: Project) -> None:
        response = lead_client.post(
            f"/projects/{project.slug}/settings/",
            {"name": "Web", "slug": "web", "scale": '[{"grade": 1, "label": "x"}]', "guideline_examples": "[]",
             "overlap": 0, "gold_share_min": 0.5, "gold_share_max": 0.2, "min_seconds_per_task": 5,
             "too_fast_policy": "flag", "session_cap_minutes": 0, "session_break_minutes": 10, "reservation_minutes": 30},
        )  # fmt: skip
        page = response.content.decode()
        assert response.status_code == 200
        assert "The scale needs at least two grades." in page
        assert "The gold share needs" in page

    def test_it_links_the_project_to_one_of_the_leads_teams(
        self, lead_client: Client, project: Project, lena: User, theo: User
    ) -> None:
        from evalplatform.teams import team_create

        mine = team_create(slug="search", name="Search", creator=lena)
        theirs = team_create(slug="fraud", name="Fraud", creator=theo)
        form = lead_client.get(f"/projects/{project.slug}/settings/").context["form"]
        assert list(form.fields["team"].queryset) == [mine]
        settings = {
            name: getattr(project, name)
            for name in ("name", "slug", "overlap", "gold_share_min", "gold_share_max", "min_seconds_per_task",
                         "too_fast_policy", "session_cap_minutes", "session_break_minutes", "reservation_minutes")
        }  # fmt: skip
        data = {**settings, "scale": json.dumps(project.scale), "guideline_examples": "[]"}
        refused = lead_client.post(f"/projects/{project.slug}/settings/", {**data, "team": theirs.pk})
        assert refused.status_code == 200 and "team" in refused.context["form"].errors
        assert (
            lead_client.post(f"/projects/{project.slug}/settings/", {**data, "team": mine.pk}).status_code
            == 302
        )
        project.refresh_from_db()
        assert project.team == mine


@pytest.mark.django_db
class TestMembers:
    def test_it_adds_an_existing_user_by_username(
        self, lead_client: Client, project: Project, theo: User
    ) -> None:
        page = lead_client.post(
            f"/projects/{project.slug}/members/",
            {"username": THEO.username, "role": "annotator"},
            follow=True,
        ).content.decode()
        assert "theo joined the Web project as annotator." in page
        assert ProjectMembership.objects.get(project=project, user=theo).role == "annotator"

    def test_it_reports_an_unknown_username(self, lead_client: Client, project: Project) -> None:
        page = lead_client.post(
            f"/projects/{project.slug}/members/", {"username": "nobody", "role": "annotator"}, follow=True
        ).content.decode()
        assert "There is no account named &#x27;nobody&#x27; (give an email to invite someone)." in page


@pytest.mark.django_db
class TestImportForm:
    def test_it_imports_an_uploaded_file(self, lead_client: Client, project: Project) -> None:
        upload = SimpleUploadedFile("topics.tsv", b"q9\tnew topic\n")
        response = lead_client.post(
            f"/projects/{project.slug}/import/", {"kind": "topics", "depth": 10, "file": upload}, follow=True
        )
        assert "topics.tsv: 1 topic added." in response.content.decode()
        assert Topic.objects.filter(project=project, qid="q9").exists()

    def test_it_shows_the_file_line_and_reason_and_imports_nothing(
        self, lead_client: Client, project: Project
    ) -> None:
        before = Document.objects.count()
        upload = SimpleUploadedFile("docs.jsonl", b'{"doc_id": "x1", "text": "ok"}\n{"doc_id": "x2"}\n')
        response = lead_client.post(
            f"/projects/{project.slug}/import/", {"kind": "documents", "file": upload}
        )
        page = response.content.decode()
        assert response.status_code == 400
        assert "Nothing was imported." in page
        assert "<code>docs.jsonl</code>, line 2: missing field &quot;text&quot;" in page
        assert Document.objects.count() == before
