"""Adjudication: the queue of pairs dropped for disagreement, setting final grades (who may, which grades),
builds that take adjudicated grades as their own source, the pages, the API, and the demo's queue."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.test import Client

from annotations import qrels
from annotations.adjudication import services as adjudication
from annotations.demo import demo_annotations_simulate, demo_project_create
from annotations.models import Adjudication, Annotation, Project, ProjectMembership, QrelsBuild, Task, Topic
from annotations.quality.services import quality_snapshot_refresh
from annotations.services import attention_check_create
from portal.demo import demo_accounts_create
from tests.annotations.conftest import build_project, record_answers


@pytest.fixture
def people(annotators: Any) -> list[User]:
    return annotators(3)


@pytest.fixture
def project(lena: User, people: list[User]) -> Project:
    """Ten gold pairs everyone answers right; o0 split 0 / 3 / 1 (dropped for disagreement), o1 2 / 2
    (kept), o2 unanswered. ann1 comments on o0."""
    project = build_project(lead=lena, annotators=people, topics=2, docs_per_topic=7, gold_per_topic=5)
    gold = list(Task.objects.filter(project=project, is_gold=True).order_by("pk"))
    o = list(Task.objects.filter(project=project, is_gold=False).order_by("pk"))
    ann0, ann1, ann2 = people
    record_answers(
        project,
        [(person, task, 3) for person in people for task in gold]
        + [(ann0, o[0], 0), (ann1, o[0], 3), (ann2, o[0], 1), (ann0, o[1], 2), (ann1, o[1], 2)],
    )
    Annotation.objects.filter(task=o[0], annotator=ann1).update(comment="The second paragraph answers it.")
    return project


def ordinary(project: Project) -> list[Task]:
    return list(
        Task.objects.filter(project=project, is_gold=False).select_related("topic", "document").order_by("pk")
    )


def build(project: Project, **params: Any) -> QrelsBuild:
    created = qrels.qrels_build_create(project=project, created_by=None, enqueue=False, **params)
    assert qrels.qrels_build_run(build_id=created.pk).status == "done"
    created.refresh_from_db()
    return created


def pair_key(task: Task) -> str:
    return f"{task.topic.qid}/{task.document.doc_id}"


@pytest.mark.django_db
class TestQueue:
    def test_it_lists_the_pairs_a_build_drops_for_disagreement(self, project: Project) -> None:
        queue = adjudication.adjudication_queue(project=project)
        o = ordinary(project)
        assert [pair.task.pk for pair in queue.waiting] == [o[0].pk]
        assert (queue.waiting[0].grades, queue.waiting[0].spread) == ([0, 1, 3], 3.0)
        assert queue.done == [] and queue.build_version is None
        assert adjudication.waiting_count(project=project) == 1
        assert build(project).counts["pairs"]["dropped"]["disagreement"] == 1

    def test_it_follows_the_latest_done_builds_parameters(self, project: Project) -> None:
        build(project, tolerance=3)
        queue = adjudication.adjudication_queue(project=project)
        assert (queue.waiting, queue.build_version, queue.params.tolerance) == ([], 1, 3.0)

    def test_it_moves_an_adjudicated_pair_to_the_done_list(self, project: Project, lena: User) -> None:
        o0 = ordinary(project)[0]
        adjudication.adjudication_set(
            project=project, task=o0, grade=2, note=" Read it twice. ", adjudicator=lena
        )
        queue = adjudication.adjudication_queue(project=project)
        assert queue.waiting == [] and [pair.task.pk for pair in queue.done] == [o0.pk]
        assert (queue.done[0].adjudication.grade, queue.done[0].adjudication.note) == (2, "Read it twice.")
        assert adjudication.waiting_count(project=project) == 0


@pytest.mark.django_db
class TestSettingTheGrade:
    def test_it_refuses_a_grade_off_the_scale(self, project: Project, lena: User) -> None:
        for grade in (7, None, -1):
            with pytest.raises(adjudication.AdjudicationError, match="scale"):
                adjudication.adjudication_set(
                    project=project, task=ordinary(project)[0], grade=grade, note="", adjudicator=lena
                )
        assert not Adjudication.objects.exists()

    def test_it_lets_only_leads_and_chosen_annotators_adjudicate(
        self, project: Project, people: list[User], lena: User
    ) -> None:
        o0 = ordinary(project)[0]
        with pytest.raises(PermissionDenied):
            adjudication.adjudication_set(project=project, task=o0, grade=1, note="", adjudicator=people[0])
        adjudication.adjudicator_allow(project=project, user_id=people[0].pk, allowed=True)
        adjudication.adjudication_set(project=project, task=o0, grade=1, note="", adjudicator=people[0])
        adjudication.adjudication_set(project=project, task=o0, grade=3, note="Changed.", adjudicator=lena)
        done = Adjudication.objects.get()
        assert (done.grade, done.note, done.adjudicator, done.project) == (3, "Changed.", lena, project)
        assert done.updated_at >= done.created_at

    def test_it_refuses_attention_checks_and_other_projects_pairs(self, project: Project, lena: User) -> None:
        check = attention_check_create(
            project=project, topic=Topic.objects.filter(project=project).first(), doc_id="check", title="Check",
            text="Rate this page 0.", expected_grade=0, reason="Says so.",
        )  # fmt: skip
        other = build_project(lead=lena, slug="other", topics=1, docs_per_topic=1)
        for task in (check.task, Task.objects.get(project=other)):
            with pytest.raises(adjudication.AdjudicationError):
                adjudication.adjudication_set(project=project, task=task, grade=1, note="", adjudicator=lena)

    def test_only_annotators_can_be_made_adjudicators(self, project: Project, lena: User) -> None:
        with pytest.raises(ProjectMembership.DoesNotExist):
            adjudication.adjudicator_allow(project=project, user_id=lena.pk, allowed=True)


@pytest.mark.django_db
class TestBuildsWithAdjudications:
    def test_a_build_takes_the_adjudicated_grade_as_its_own_source(
        self, project: Project, lena: User
    ) -> None:
        o = ordinary(project)
        before = build(project)
        adjudication.adjudication_set(project=project, task=o[0], grade=2, note="Partly.", adjudicator=lena)
        adjudication.adjudication_set(project=project, task=o[1], grade=4, note="", adjudicator=lena)
        after = build(project)
        rels = {f"{j.qid}/{j.doc_id}": j for j in qrels.build_judgments(after)}
        assert pair_key(o[0]) not in {f"{j.qid}/{j.doc_id}" for j in qrels.build_judgments(before)}
        assert (rels[pair_key(o[0])].rel, rels[pair_key(o[1])].rel) == (2, 4)
        assert after.counts["adjudicated"] == 2 == after.adjudicated
        assert after.counts["sources"] == {"crowd": 10, "adjudication": 2}
        assert after.counts["pairs"]["dropped"]["disagreement"] == 0
        assert after.params.use_adjudications and qrels.build_summary(after)["adjudicated"] == 2
        lines = [json.loads(line) for line in qrels.qrels_export(after, fmt="jsonl").splitlines()]
        line = next(line for line in lines if f"{line['qid']}/{line['doc_id']}" == pair_key(o[0]))
        assert line["source"] == "adjudication" and line["rel"] == 2
        assert (line["adjudication"]["adjudicator"], line["adjudication"]["note"]) == ("lena", "Partly.")
        assert sorted(label["grade"] for label in line["labels"]) == [0, 1, 3] and line["n_labels"] == 3
        assert all(len(row.split()) == 4 for row in qrels.qrels_export(after, fmt="trec").splitlines())

    def test_it_is_deterministic_and_can_leave_the_adjudications_out(
        self, project: Project, lena: User
    ) -> None:
        adjudication.adjudication_set(
            project=project, task=ordinary(project)[0], grade=2, note="", adjudicator=lena
        )
        first, second = build(project), build(project)
        for fmt in qrels.EXPORT_FORMATS:
            assert qrels.qrels_export(first, fmt=fmt) == qrels.qrels_export(second, fmt=fmt)
        without = build(project, use_adjudications=False)
        assert (without.adjudicated, without.params.use_adjudications, without.pairs_kept) == (0, False, 11)
        assert first.pairs_kept == 12 and first.content_hash != without.content_hash


@pytest.mark.django_db
class TestPages:
    def test_it_shows_the_queue_and_the_pair_with_labels_comments_and_accuracy(
        self, client: Client, project: Project, lena: User
    ) -> None:
        assert quality_snapshot_refresh(project_id=project.pk) == "done"
        client.force_login(lena)
        o0 = ordinary(project)[0]
        queue = client.get(f"/projects/{project.slug}/adjudication/").content.decode()
        assert (
            f'href="/projects/{project.slug}/adjudication/{o0.pk}/"' in queue
            and 'id="waiting-count">1<' in queue
        )
        page = client.get(f"/projects/{project.slug}/adjudication/{o0.pk}/").content.decode()
        for text in ("ann0", "ann1", "ann2", "The second paragraph answers it.", "100%", o0.document.text):
            assert text in page
        explained = "share of gold items the annotator graded exactly right"
        assert "gold" not in page.lower().replace(explained, ""), "no gold label, no word of one"

    def test_it_sets_the_grade_and_goes_to_the_next_pair_or_the_queue(
        self, client: Client, project: Project, lena: User, people: list[User]
    ) -> None:
        o = ordinary(project)
        record_answers(project, [(people[0], o[2], 0), (people[1], o[2], 4)])  # a second disagreement
        client.force_login(lena)
        first = client.post(f"/projects/{project.slug}/adjudication/{o[0].pk}/", {"grade": "2", "note": "ok"})
        assert (
            first.status_code == 302
            and first["Location"] == f"/projects/{project.slug}/adjudication/{o[2].pk}/"
        )
        last = client.post(f"/projects/{project.slug}/adjudication/{o[2].pk}/", {"grade": "0"})
        assert last["Location"] == f"/projects/{project.slug}/adjudication/"
        assert dict(Adjudication.objects.values_list("task_id", "grade")) == {o[0].pk: 2, o[2].pk: 0}
        refused = client.post(
            f"/projects/{project.slug}/adjudication/{o[0].pk}/", {"grade": "9"}, follow=True
        )
        assert "Choose a grade of the project&#x27;s scale" in refused.content.decode()

    def test_it_keeps_plain_annotators_and_outsiders_out(
        self, client: Client, project: Project, people: list[User], bob: User
    ) -> None:
        o0 = ordinary(project)[0]
        urls = [f"/projects/{project.slug}/adjudication/", f"/projects/{project.slug}/adjudication/{o0.pk}/",
                f"/api/projects/{project.slug}/adjudication/"]  # fmt: skip
        for user, code in ((people[0], 403), (bob, 404)):
            client.force_login(user)
            assert [client.get(url).status_code for url in urls] == [code] * 3
            assert client.post(urls[1], {"grade": "1"}).status_code == code
            api = client.post(f"/api/projects/{project.slug}/adjudication/{o0.pk}/", {"grade": 1})
            assert api.status_code == code
        assert not Adjudication.objects.exists()

    def test_a_lead_lets_an_annotator_adjudicate_who_then_may(
        self, client: Client, project: Project, lena: User, people: list[User]
    ) -> None:
        allow = f"/projects/{project.slug}/adjudication/adjudicators/{people[0].pk}/"
        client.force_login(people[1])
        assert client.post(allow, {"allowed": "1"}).status_code == 403
        client.force_login(lena)
        detail = client.get(f"/projects/{project.slug}/").content.decode()
        assert "Let adjudicate" in detail and "1 waiting" in detail
        assert client.post(allow, {"allowed": "1"})["Location"] == f"/projects/{project.slug}/"
        assert ProjectMembership.objects.get(project=project, user=people[0]).can_adjudicate
        client.force_login(people[0])
        o0 = ordinary(project)[0]
        assert client.get(f"/projects/{project.slug}/adjudication/{o0.pk}/").status_code == 200
        assert (
            client.post(f"/projects/{project.slug}/adjudication/{o0.pk}/", {"grade": "1"}).status_code == 302
        )
        assert Adjudication.objects.get().adjudicator == people[0]
        assert f'href="/projects/{project.slug}/adjudication/"' in client.get("/projects/").content.decode()
        o1 = ordinary(project)[1]  # a pair the annotators agree on: not theirs to open
        assert client.get(f"/projects/{project.slug}/adjudication/{o1.pk}/").status_code == 404
        assert (
            client.post(f"/api/projects/{project.slug}/adjudication/{o1.pk}/", {"grade": 1}).status_code
            == 404
        )
        client.force_login(lena)
        client.post(allow, {"allowed": "0"})
        client.force_login(people[0])
        assert client.get(f"/projects/{project.slug}/adjudication/").status_code == 403


@pytest.mark.django_db
class TestApi:
    def test_it_lists_the_queue_and_sets_a_grade(self, client: Client, project: Project, lena: User) -> None:
        client.force_login(lena)
        o0 = ordinary(project)[0]
        queue = client.get(f"/api/projects/{project.slug}/adjudication/").json()
        assert [(p["task"], p["grades"], p["spread"]) for p in queue["waiting"]] == [(o0.pk, [0, 1, 3], 3.0)]
        assert queue["parameters"]["use_adjudications"] is True and queue["done"] == []
        url = f"/api/projects/{project.slug}/adjudication/{o0.pk}/"
        assert client.post(url, {"grade": 8}, content_type="application/json").status_code == 400
        assert (
            client.post(f"/api/projects/{project.slug}/adjudication/999999/", {"grade": 1}).status_code == 404
        )
        done = client.post(url, {"grade": 2, "note": "API"}, content_type="application/json")
        assert done.status_code == 200 and done.json()["grade"] == 2 and done.json()["adjudicator"] == "lena"
        again = client.get(f"/api/projects/{project.slug}/adjudication/").json()
        assert again["waiting"] == [] and again["done"][0]["adjudication"]["note"] == "API"
        build(project)
        built = client.get(f"/api/projects/{project.slug}/qrels/1/").json()
        assert built["adjudicated"] == 1 and built["parameters"]["use_adjudications"] is True

    def test_a_build_can_be_asked_without_adjudications(
        self, client: Client, project: Project, lena: User, queued: Any
    ) -> None:
        client.force_login(lena)
        created = client.post(
            f"/api/projects/{project.slug}/qrels/",
            {"use_adjudications": False},
            content_type="application/json",
        )
        assert created.status_code == 202 and created.json()["parameters"]["use_adjudications"] is False

    def test_the_quality_page_builds_with_or_without_adjudications_and_counts_them(
        self, client: Client, project: Project, lena: User, queued: Any
    ) -> None:
        client.force_login(lena)
        adjudication.adjudication_set(
            project=project, task=ordinary(project)[0], grade=2, note="", adjudicator=lena
        )
        page = client.get(f"/projects/{project.slug}/quality/").content.decode()
        assert f'href="/projects/{project.slug}/adjudication/"' in page and "Leave out adjudicated" in page
        form = {
            "aggregation": "median",
            "tolerance": "1",
            "min_labels": "2",
            "min_accuracy": "0.7",
            "min_gold": "5",
        }
        client.post(f"/projects/{project.slug}/qrels/", form)  # a form without the box keeps them
        client.post(f"/projects/{project.slug}/qrels/", {**form, "ignore_adjudications": "on"})
        with_them, without = QrelsBuild.objects.filter(project=project).order_by("version")
        assert (with_them.params.use_adjudications, without.params.use_adjudications) == (True, False)
        for created in (with_them, without):
            assert qrels.qrels_build_run(build_id=created.pk).status == "done"
        page = client.get(f"/projects/{project.slug}/quality/").content.decode()
        assert page.count("1 adjudicated") == 1 and page.count("crowd only (adjudications left out)") == 1


@pytest.mark.django_db
class TestDemo:
    def test_the_demo_project_has_disagreements_to_adjudicate_on_first_start(self) -> None:
        demo_accounts_create()
        project = demo_project_create()
        demo_annotations_simulate(project)
        queue = adjudication.adjudication_queue(project=project)
        assert len(queue.waiting) >= 3
        assert Annotation.objects.filter(project=project).exclude(comment="").exists()
        assert build(project).counts["pairs"]["dropped"]["disagreement"] == len(queue.waiting)
