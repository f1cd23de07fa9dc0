"""The lead's drill-down from the quality page (the items where annotators disagree), the quality page's
live status JSON, and "gold seen" meaning the same on the project page and the quality page."""

from __future__ import annotations

import csv
import io
import json
import re
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from annotations import qrels
from annotations.demo import DEMO_SLUG
from annotations.models import Annotation, Project, QualityRecompute, QualitySnapshot, Task, Topic
from annotations.quality import services as quality
from tests.annotations.conftest import build_project, record_answers
from tests.conftest import THEO, make_user


@pytest.fixture
def people(annotators: Any) -> list[User]:
    return annotators(3)


@pytest.fixture
def project(lena: User, people: list[User]) -> Project:
    """Gold is graded 3. ann0 matches gold everywhere; ann1 gives 1 on the first gold pair and 4 on the
    second; ann2 labels the ordinary pairs only. On ordinary pair i ann0 gives 2, ann1 2 + (i == 0) * 2,
    ann2 gives 2 except 0 on pair 1."""
    project = build_project(lead=lena, annotators=people, topics=1, docs_per_topic=6, gold_per_topic=3)
    gold = list(Task.objects.filter(project=project, is_gold=True).order_by("pk"))
    ordinary = list(Task.objects.filter(project=project, is_gold=False).order_by("pk"))
    ann0, ann1, ann2 = people
    record_answers(
        project,
        [(ann0, task, 3) for task in gold]
        + [(ann1, gold[0], 1), (ann1, gold[1], 4), (ann1, gold[2], 3)]
        + [(ann0, task, 2) for task in ordinary]
        + [(ann1, task, 4 if i == 0 else 2) for i, task in enumerate(ordinary)]
        + [(ann2, task, 0 if i == 1 else 2) for i, task in enumerate(ordinary)],
    )
    quality.quality_snapshot_refresh(project_id=project.pk)
    return project


def drill(project: Project) -> str:
    return f"/projects/{project.slug}/quality/disagreements/"


def drill_csv(project: Project) -> str:
    return f"/projects/{project.slug}/quality/disagreements.csv"


def table_rows(page: str) -> list[list[str]]:
    body = re.search(r'<table class="data" id="disagreement-table">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert body, "the table of disagreements is on the page"
    rows = re.findall(r"<tr data-task=\"\d+\">(.*?)</tr>", body[1], re.S)
    return [[re.sub(r"<[^>]+>", "", cell).split()[0] if re.sub(r"<[^>]+>", "", cell).split() else ""
             for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)] for row in rows]  # fmt: skip


@pytest.mark.django_db
class TestDrillDown:
    def test_it_lists_where_two_annotators_disagree_with_each_side_largest_gap_first(
        self, lead_client: Client, project: Project, people: list[User]
    ) -> None:
        ann0, ann1, _ = people
        response = lead_client.get(drill(project), {"a": ann0.pk, "b": ann1.pk})
        page = response.content.decode()
        assert response.status_code == 200
        assert "Where ann0 and ann1 disagree" in page
        # gold 0 (3 vs 1, gap 2) and ordinary 0 (2 vs 4, gap 2) by task id; then gold 1 (3 vs 4, gap 1).
        rows = table_rows(page)
        assert [(row[3], row[4], row[5]) for row in rows] == [
            ("3", "1", "2"),
            ("2", "4", "2"),
            ("3", "4", "1"),
        ]
        assert [row[2] for row in rows] == ["d0-0", "d0-3", "d0-1"]
        assert "<strong>3</strong> of 6 items" in page

    def test_it_compares_one_annotator_with_gold_and_the_others(
        self, lead_client: Client, project: Project, people: list[User]
    ) -> None:
        _, ann1, ann2 = people
        page = lead_client.get(drill(project), {"a": ann2.pk}).content.decode()
        # ann2 gave 0 on ordinary pair 1 where ann0 and ann1 gave 2 (median 2), and 2 on pair 0 where they
        # gave 2 and 4 (median 3).
        rows = table_rows(page)
        assert [(row[2], row[3], row[4]) for row in rows] == [("d0-4", "0", "2"), ("d0-3", "2", "3")]
        assert "ann0 2, ann1 2" in page
        page = lead_client.get(drill(project), {"a": ann1.pk}).content.decode()
        assert [(row[2], row[3], row[4]) for row in table_rows(page)] == [
            ("d0-0", "1", "3"), ("d0-3", "4", "2"), ("d0-1", "4", "3"), ("d0-4", "2", "1"),
        ]  # fmt: skip
        assert page.count('<span class="badge">gold</span>') >= 2

    def test_it_links_to_the_other_pairs(
        self, lead_client: Client, project: Project, people: list[User]
    ) -> None:
        ann0, ann1, ann2 = people
        page = lead_client.get(drill(project), {"a": ann0.pk, "b": ann1.pk}).content.decode()
        assert f'href="?a={ann0.pk}&amp;b={ann2.pk}"' in page and f'href="?a={ann0.pk}"' in page

    def test_it_says_so_when_there_is_no_disagreement(
        self, lead_client: Client, project: Project, people: list[User]
    ) -> None:
        ann0, _, ann2 = people
        Annotation.objects.filter(annotator=ann2, grade=0).update(grade=2)
        page = lead_client.get(drill(project), {"a": ann0.pk, "b": ann2.pk}).content.decode()
        assert 'id="no-disagreements"' in page and "<strong>0</strong> of 3 items" in page

    def test_it_reads_the_answers_in_a_fixed_number_of_queries(
        self, lead_client: Client, project: Project, people: list[User], django_assert_max_num_queries: Any
    ) -> None:
        with django_assert_max_num_queries(16):
            assert lead_client.get(drill(project), {"a": people[1].pk, "b": people[0].pk}).status_code == 200

    def test_it_answers_404_for_a_missing_or_foreign_annotator(
        self, lead_client: Client, project: Project, people: list[User]
    ) -> None:
        outsider = make_user(THEO)
        assert lead_client.get(drill(project)).status_code == 404
        assert lead_client.get(drill(project), {"a": "x"}).status_code == 404
        assert lead_client.get(drill(project), {"a": outsider.pk}).status_code == 404
        assert lead_client.get(drill(project), {"a": people[0].pk, "b": people[0].pk}).status_code == 404

    def test_it_turns_away_annotators_and_strangers(
        self, client: Client, project: Project, people: list[User]
    ) -> None:
        client.force_login(people[0])
        assert client.get(drill(project), {"a": people[1].pk}).status_code == 403
        assert client.get(f"/projects/{project.slug}/quality/status.json").status_code == 403
        client.force_login(make_user(THEO))
        assert client.get(drill(project), {"a": people[1].pk}).status_code == 404

    def test_it_downloads_the_list_as_csv_with_the_pages_filters(
        self, lead_client: Client, project: Project, people: list[User]
    ) -> None:
        ann0, ann1, _ = people
        page = lead_client.get(drill(project), {"a": ann0.pk, "b": ann1.pk}).content.decode()
        link = re.search(r'<a href="([^"]*disagreements\.csv[^"]*)"[^>]*>', page)
        assert link, "the page links its CSV"
        response = lead_client.get(link[1].replace("&amp;", "&"))
        assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
        assert f'filename="{project.slug}-disagreements-ann0-ann1.csv"' in response["Content-Disposition"]
        rows = list(csv.DictReader(io.StringIO(response.content.decode())))
        assert [(r["doc_id"], r["grade"], r["other"], r["gap"], r["compared_with"]) for r in rows] == [
            ("d0-0", "3", "1", "2", "ann1"),
            ("d0-3", "2", "4", "2", "ann1"),
            ("d0-1", "3", "4", "1", "ann1"),
        ]
        assert [r["is_gold"] for r in rows] == ["true", "false", "true"]
        alone = lead_client.get(drill_csv(project), {"a": ann1.pk})
        assert {r["compared_with"] for r in csv.DictReader(io.StringIO(alone.content.decode()))} <= {
            "gold",
            "others",
        }

    def test_the_csv_quotes_a_query_written_like_a_formula(
        self, lead_client: Client, project: Project, people: list[User]
    ) -> None:
        Topic.objects.filter(project=project).update(title='=HYPERLINK("http://x","y")')
        response = lead_client.get(drill_csv(project), {"a": people[0].pk, "b": people[1].pk})
        rows = list(csv.DictReader(io.StringIO(response.content.decode())))
        assert {r["query"] for r in rows} == {'\'=HYPERLINK("http://x","y")'}

    def test_the_csv_turns_away_annotators_and_strangers(
        self, client: Client, project: Project, people: list[User]
    ) -> None:
        client.force_login(people[0])
        assert client.get(drill_csv(project), {"a": people[1].pk}).status_code == 403
        client.force_login(make_user(THEO))
        assert client.get(drill_csv(project), {"a": people[1].pk}).status_code == 404

    def test_it_is_linked_from_each_annotator_row_and_from_the_heatmap(
        self, lead_client: Client, project: Project, people: list[User]
    ) -> None:
        page = lead_client.get(f"/projects/{project.slug}/quality/").content.decode()
        for person in people:
            assert f'href="{drill(project)}?a={person.pk}"' in page
        links = json.loads(
            re.search(r'<script id="kappa-links" type="application/json">(.*?)</script>', page)[1]
        )
        assert links == {"url": drill(project), "ids": {p.username: p.pk for p in people}}
        assert f'href="{drill(project)}?a={people[0].pk}&amp;b={people[1].pk}"' in page
        assert 'src="/static/annotations/quality.js"' in page


@pytest.mark.django_db
class TestStatus:
    def test_it_reports_the_latest_recompute_and_the_unfinished_builds(
        self, lead_client: Client, project: Project
    ) -> None:
        done = qrels.qrels_build_create(project=project, created_by=None, enqueue=False)
        qrels.qrels_build_run(build_id=done.pk)
        pending = qrels.qrels_build_create(project=project, created_by=None, enqueue=False)
        QualityRecompute.objects.create(project=project)
        response = lead_client.get(f"/projects/{project.slug}/quality/status.json")
        state = response.json()
        assert response["Cache-Control"].startswith("max-age=0")
        assert state["recompute"]["status"] == "pending" and state["recompute"]["label"] == "Pending"
        assert [(b["version"], b["status"]) for b in state["builds"]] == [
            (pending.version, "pending"), (done.version, "done"),
        ]  # fmt: skip
        assert state["builds"][1]["percent"] == 100

    def test_it_marks_unfinished_jobs_on_the_page_for_the_polling_script(
        self, lead_client: Client, project: Project
    ) -> None:
        build = qrels.qrels_build_create(project=project, created_by=None, enqueue=False)
        QualityRecompute.objects.create(project=project)
        page = lead_client.get(f"/projects/{project.slug}/quality/").content.decode()
        assert f'data-job="build" data-build="{build.version}" data-status="pending"' in page
        assert 'data-job="recompute"' in page and 'id="recompute-status"' in page
        assert f'data-status-url="/projects/{project.slug}/quality/status.json"' in page


@pytest.mark.django_db
class TestGoldSeen:
    def test_it_is_the_same_figure_on_the_project_page_and_the_quality_page(self, client: Client) -> None:
        call_command("load_demo", stdout=StringIO())
        project = Project.objects.get(slug=DEMO_SLUG)
        client.force_login(User.objects.get(username="lead"))
        snapshot = QualitySnapshot.objects.get(project=project)
        on_quality = {row["username"]: row["gold_seen"] for row in snapshot.annotators if row["answers"]}
        page = client.get(f"/projects/{DEMO_SLUG}/").content.decode()
        table = re.search(r'id="totals-heading".*?By annotator.*?<tbody>(.*?)</tbody>', page, re.S)[1]
        on_project = {
            cells[0]: int(cells[6])
            for cells in (
                re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table)
            )
            if cells[0] in on_quality
        }
        assert on_project == on_quality and set(on_quality) >= {"eve", "mallory", "carol", "dave"}
        quality_page = client.get(f"/projects/{DEMO_SLUG}/quality/").content.decode()
        assert quality_page.count('title="Gold items graded in time') == 1
        assert page.count('title="Gold items graded in time') == 1
