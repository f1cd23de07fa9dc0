"""Small things a user notices: the favicon, a friendly 403 page with no traceback in the console, and
the home page's Judge card listing the annotator's projects with open tasks."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotations import services
from annotations.models import Annotation, ProjectMembership, Task
from tests.annotations.conftest import build_project, record_answers

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
class TestFavicon:
    def test_it_links_the_favicon_on_every_page(self, client: Client, alice: User) -> None:
        login = client.get("/accounts/login/").content.decode()
        assert '<link rel="icon" href="/static/evalplatform/favicon.svg" type="image/svg+xml">' in login
        assert (ROOT / "evalplatform/static/evalplatform/favicon.svg").read_text().startswith("<svg")


@pytest.mark.django_db
class TestRefusals:
    def test_it_explains_a_refusal_in_plain_words_with_a_link_home(
        self, client: Client, alice: User, lena: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice])
        client.force_login(alice)
        response = client.get(f"/projects/{project.slug}/settings/")
        page = response.content.decode()
        assert response.status_code == 403
        assert "<h1>You can't open this page</h1>" in page
        assert "This page is for the project&#x27;s leads." in page
        assert '<a class="button" href="/">Back to the home page</a>' in page
        assert "Traceback" not in page

    def test_it_logs_a_plain_denial_as_one_line_without_a_traceback(
        self, client: Client, alice: User, lena: User, caplog: pytest.LogCaptureFixture
    ) -> None:
        project = build_project(lead=lena, annotators=[alice])
        client.force_login(alice)
        with caplog.at_level(logging.WARNING, logger="django.request"):
            assert client.get(f"/projects/{project.slug}/quality/").status_code == 403
            assert client.get("/projects/no-such-project/").status_code == 404
        records = [r for r in caplog.records if r.name == "django.request"]
        assert [r.getMessage().split(":")[0] for r in records] == [
            "Forbidden (Permission denied)",
            "Not Found",
        ]
        assert all(r.exc_info is None and r.levelno == logging.WARNING for r in records)
        assert "Traceback" not in caplog.text


@pytest.mark.django_db
class TestHomeJudgeCard:
    def test_it_links_straight_to_the_projects_with_open_tasks_and_their_counts(
        self, client: Client, alice: User, lena: User
    ) -> None:
        web = build_project(lead=lena, annotators=[alice], slug="web", topics=1, docs_per_topic=4)
        done = build_project(lead=lena, annotators=[alice], slug="done", topics=1, docs_per_topic=2)
        record_answers(done, [(alice, task, 2) for task in Task.objects.filter(project=done)])
        client.force_login(alice)
        page = client.get("/").content.decode()
        card = re.search(r'<article class="card" id="judge-card">(.*?)</article>', page, re.S)[1]
        assert re.findall(
            r'<a href="(/projects/[\w-]+/judge/)">([^<]+)</a> <span class="badge">(\d+) open', card
        ) == [("/projects/web/judge/", "Web", "4")]
        assert Annotation.objects.filter(project=done).count() == 2 and web.pk

    def test_it_says_when_there_is_nothing_to_judge(self, client: Client, alice: User, lena: User) -> None:
        project = build_project(lead=lena, annotators=[], slug="other")
        services.membership_set(project=project, user=alice, role=ProjectMembership.Role.ANNOTATOR)
        Task.objects.filter(project=project).delete()
        client.force_login(alice)
        page = client.get("/").content.decode()
        assert (
            "Nothing to judge right now" in page and '/judge/"' not in page
        )  # no link to judge (history stays)
