"""The annotator's own answers: comments, the history page, reopening a chosen answer and multi-step undo;
the lead's list of comments."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from annotations import selectors, services
from annotations.models import COMMENT_MAX_LENGTH, Annotation, Assignment, Project, ProjectMembership, Task
from tests.annotations.conftest import ANSWERED_FROM, build_project, record_answers
from tests.conftest import Persona, make_user


def serve(project: Project, annotator: User) -> Assignment:
    assignment = services.task_claim(project=project, annotator=annotator).assignment
    assert assignment is not None
    return assignment


def answer(project: Project, annotator: User, grade: int = 1, **kwargs: Any) -> Annotation:
    """Claim the next task and grade it."""
    assignment = serve(project, annotator)
    return services.annotation_submit(
        project=project, annotator=annotator, assignment_id=assignment.pk, grade=grade, **kwargs
    )


def counters(project: Project) -> dict[int, tuple[int, int]]:
    return {t.pk: (t.assigned_count, t.label_count) for t in Task.objects.filter(project=project)}


@pytest.fixture
def carol(db: None) -> User:
    return make_user(Persona("carol", "carol-password-123", "annotator"))


@pytest.fixture
def project(lena: User, alice: User, bob: User) -> Project:
    return build_project(lead=lena, annotators=[alice, bob], topics=2, docs_per_topic=4)


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
class TestComments:
    def test_it_stores_the_comment_stripped_with_a_grade_or_a_skip(
        self, project: Project, alice: User
    ) -> None:
        graded = answer(project, alice, comment="  the snippet is cut off \n")
        skipped = services.annotation_skip(
            project=project, annotator=alice, assignment_id=serve(project, alice).pk, comment="not English"
        )
        graded.refresh_from_db()
        skipped.refresh_from_db()
        assert (graded.comment, skipped.comment) == ("the snippet is cut off", "not English")

    def test_it_refuses_a_comment_over_the_limit_and_saves_nothing(
        self, project: Project, alice: User
    ) -> None:
        assignment = serve(project, alice)
        with pytest.raises(services.CommentTooLong) as refused:
            services.annotation_submit(
                project=project, annotator=alice, assignment_id=assignment.pk, grade=2,
                comment="x" * (COMMENT_MAX_LENGTH + 1),
            )  # fmt: skip
        assert refused.value.status_code == 400 and str(COMMENT_MAX_LENGTH) in str(refused.value)
        assignment.refresh_from_db()
        assert assignment.state == Assignment.State.RESERVED and not Annotation.objects.exists()
        done = services.annotation_submit(
            project=project, annotator=alice, assignment_id=assignment.pk, grade=2,
            comment="x" * COMMENT_MAX_LENGTH,
        )  # fmt: skip
        assert len(done.comment) == COMMENT_MAX_LENGTH

    def test_it_lets_the_annotator_edit_their_own_comment_later_but_not_another_s(
        self, project: Project, alice: User, bob: User
    ) -> None:
        mine = answer(project, alice)
        services.annotation_comment_set(
            project=project, annotator=alice, annotation_id=mine.pk, comment=" two documents in one "
        )
        with pytest.raises(services.AnswerNotFound) as refused:
            services.annotation_comment_set(
                project=project, annotator=bob, annotation_id=mine.pk, comment="hi"
            )
        assert refused.value.status_code == 404
        mine.refresh_from_db()
        assert (mine.comment, mine.grade) == ("two documents in one", 1)


@pytest.mark.django_db
class TestReopen:
    def test_it_reopens_an_older_answer_and_serves_it_next(self, project: Project, alice: User) -> None:
        first, second, third = (answer(project, alice, grade=g) for g in (1, 2, 3))
        held = serve(project, alice)
        before = counters(project)
        reopened = services.annotation_reopen(project=project, annotator=alice, annotation_id=second.pk)
        assert reopened.pk == second.assignment_id and reopened.state == Assignment.State.RESERVED
        assert set(Annotation.objects.values_list("pk", flat=True)) == {first.pk, third.pk}
        assert not Assignment.objects.filter(pk=held.pk).exists(), "the held task went back to the pool"
        after = counters(project)
        assert after[second.task_id] == (before[second.task_id][0], before[second.task_id][1] - 1)
        assert after[held.task_id] == (before[held.task_id][0] - 1, 0)
        assert serve(project, alice).pk == second.assignment_id
        again = services.annotation_submit(
            project=project, annotator=alice, assignment_id=second.assignment_id, grade=0
        )
        assert again.grade == 0 and counters(project)[second.task_id] == before[second.task_id]

    def test_it_undoes_three_deep_and_restores_the_counters_exactly(
        self, project: Project, alice: User
    ) -> None:
        first = serve(project, alice)
        start = counters(project)
        services.annotation_submit(project=project, annotator=alice, assignment_id=first.pk, grade=2)
        answer(project, alice, grade=3)
        answer(project, alice, grade=4)
        serve(project, alice)  # a fourth task held when undo starts
        taken_back = [services.annotation_undo(project=project, annotator=alice).task_id for _ in range(3)]
        assert taken_back[-1] == first.task_id and len(set(taken_back)) == 3
        assert not Annotation.objects.exists()
        assert counters(project) == start, "as right after the first task was served"
        assert list(Assignment.objects.filter(annotator=alice).values_list("pk", "state")) == [
            (first.pk, Assignment.State.RESERVED)
        ]
        with pytest.raises(services.NothingToUndo):
            services.annotation_undo(project=project, annotator=alice)

    def test_it_undoes_at_most_the_twenty_newest_answers(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=22)
        tasks = list(Task.objects.filter(project=project).order_by("pk"))
        answers = record_answers(project, [(alice, task, 1) for task in tasks[:21]])
        Task.objects.filter(pk__in=[t.pk for t in tasks[:21]]).update(assigned_count=1, label_count=1)
        now = ANSWERED_FROM + timedelta(minutes=21)
        membership = ProjectMembership.objects.get(project=project, user=alice)
        undoable = selectors.undoable_annotations(membership=membership, now=now)
        assert [a.pk for a in undoable] == [a.pk for a in reversed(answers)][: selectors.UNDO_DEPTH]
        with pytest.raises(services.AnswerClosed):
            services.annotation_reopen(project=project, annotator=alice, annotation_id=answers[0].pk, now=now)
        reopened = services.annotation_reopen(
            project=project, annotator=alice, annotation_id=answers[1].pk, now=now
        )
        assert reopened.task_id == tasks[1].pk

    def test_it_does_not_reopen_an_answer_from_before_a_break(self, project: Project, alice: User) -> None:
        old = answer(project, alice)
        later = timezone.now() + timedelta(minutes=project.session_break_minutes)
        with pytest.raises(services.AnswerClosed) as refused:
            services.annotation_reopen(project=project, annotator=alice, annotation_id=old.pk, now=later)
        assert refused.value.status_code == 409 and Annotation.objects.filter(pk=old.pk).exists()

    def test_it_refuses_when_a_skipped_place_went_to_someone_else(
        self, lena: User, alice: User, bob: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice, bob], topics=1, docs_per_topic=2, overlap=1)
        skipped = services.annotation_skip(
            project=project, annotator=alice, assignment_id=serve(project, alice).pk
        )
        answer(project, alice)
        assert serve(project, bob).task_id == skipped.task_id
        before = counters(project)
        with pytest.raises(services.UndoConflict) as refused:
            services.annotation_reopen(project=project, annotator=alice, annotation_id=skipped.pk)
        assert refused.value.status_code == 409
        assert Annotation.objects.filter(pk=skipped.pk).exists() and counters(project) == before

    def test_it_does_not_reopen_another_annotator_s_answer(
        self, project: Project, alice: User, bob: User
    ) -> None:
        alices = answer(project, alice)
        with pytest.raises(services.AnswerNotFound) as refused:
            services.annotation_reopen(project=project, annotator=bob, annotation_id=alices.pk)
        assert refused.value.status_code == 404
        assert Annotation.objects.filter(pk=alices.pk).exists()


def history_url(project: Project) -> str:
    return f"/projects/{project.slug}/judge/history/"


@pytest.mark.django_db
class TestHistoryPage:
    def test_it_lists_only_the_annotator_s_own_answers_newest_first(
        self, project: Project, alice: User, bob: User
    ) -> None:
        alices = [answer(project, alice, grade=g, comment=f"alice note {g}") for g in (1, 2, 3)]
        answer(project, bob, grade=4, comment="bob's private note")
        page = logged_in(alice).get(history_url(project)).content.decode()
        rows = re.findall(r'<tr data-answer="(\d+)"', page)
        assert rows == [str(a.pk) for a in reversed(alices)]
        assert "alice note 2" in page and "3 (Highly relevant)" in page
        assert "bob" not in page and "4 (Perfectly relevant)" not in page
        assert page.count(">Change</button>") == 3

    def test_it_offers_no_change_for_an_answer_before_a_break(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice])
        record_answers(project, [(alice, Task.objects.filter(project=project).first(), 2)])
        page = logged_in(alice).get(history_url(project)).content.decode()
        assert re.findall(r'<tr data-answer="(\d+)"', page) and ">Change</button>" not in page
        assert "Closed" in page

    def test_it_pages_fifty_answers_with_a_fixed_number_of_queries(
        self, lena: User, alice: User, django_assert_max_num_queries: Any
    ) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=3, docs_per_topic=20)
        record_answers(project, [(alice, task, 1) for task in Task.objects.filter(project=project)])
        client = logged_in(alice)
        with django_assert_max_num_queries(12):
            first = client.get(history_url(project)).content.decode()
        second = client.get(history_url(project) + "?page=2").content.decode()
        assert len(re.findall(r"<tr data-answer=", first)) == 50
        assert len(re.findall(r"<tr data-answer=", second)) == 10 and "Page 2 of 2" in second

    def test_it_changes_an_answer_from_the_history(self, project: Project, alice: User) -> None:
        first, second = answer(project, alice, grade=1), answer(project, alice, grade=2)
        client = logged_in(alice)
        response = client.post(f"{history_url(project)}{first.pk}/change/")
        assert response.status_code == 302 and response["Location"] == f"/projects/{project.slug}/judge/"
        page = client.get(response["Location"]).content.decode()
        assert f'/judge/{first.assignment_id}/"' in page, "the changed task is served"
        assert list(Annotation.objects.values_list("pk", flat=True)) == [second.pk]

    def test_it_refuses_to_change_another_annotator_s_answer(
        self, project: Project, alice: User, bob: User
    ) -> None:
        bobs = answer(project, bob)
        response = logged_in(alice).post(f"{history_url(project)}{bobs.pk}/change/", follow=True)
        assert "not one of yours" in response.content.decode()
        assert Annotation.objects.filter(pk=bobs.pk).exists()

    def test_it_saves_a_comment_from_the_history_and_only_on_own_answers(
        self, project: Project, alice: User, bob: User
    ) -> None:
        alices, bobs = answer(project, alice), answer(project, bob)
        client = logged_in(alice)
        saved = client.post(f"{history_url(project)}{alices.pk}/comment/", {"comment": "typo in query"})
        assert saved.status_code == 302
        refused = client.post(f"{history_url(project)}{bobs.pk}/comment/", {"comment": "x"}, follow=True)
        assert "not one of yours" in refused.content.decode()
        too_long = client.post(
            f"{history_url(project)}{alices.pk}/comment/", {"comment": "x" * 2001}, follow=True
        )
        assert "the most is 2000" in too_long.content.decode()
        assert dict(Annotation.objects.values_list("annotator__username", "comment")) == {
            "alice": "typo in query",
            "bob": "",
        }

    def test_it_takes_a_comment_with_the_answer_on_the_judge_page(
        self, project: Project, alice: User
    ) -> None:
        client = logged_in(alice)
        page = client.get(f"/projects/{project.slug}/judge/").content.decode()
        action = re.search(rf'action="(/projects/{project.slug}/judge/\d+/)"', page)
        assert action
        client.post(action.group(1), {"grade": "2", "comment": " broken link "})
        assert Annotation.objects.get().comment == "broken link"

    def test_it_undoes_twice_in_a_row_on_the_judge_page(self, project: Project, alice: User) -> None:
        answers = [answer(project, alice, grade=g) for g in (1, 2, 3)]
        client = logged_in(alice)
        for _ in range(2):
            client.post(f"/projects/{project.slug}/judge/undo/")
        assert list(Annotation.objects.values_list("pk", flat=True)) == [answers[0].pk]
        page = client.get(f"/projects/{project.slug}/judge/").content.decode()
        assert f'/judge/{answers[1].assignment_id}/"' in page


@pytest.mark.django_db
class TestLeadComments:
    def test_it_shows_the_lead_every_comment_newest_first(
        self, project: Project, lena: User, alice: User, bob: User
    ) -> None:
        answer(project, alice, comment="alice: the page is empty")
        answer(project, bob, grade=0, comment="bob: spam")
        answer(project, bob)  # no comment: not listed
        page = logged_in(lena).get(f"/projects/{project.slug}/comments/").content.decode()
        assert page.index("bob: spam") < page.index("alice: the page is empty")
        assert len(re.findall(r"<tr data-answer=", page)) == 2
        detail = logged_in(lena).get(f"/projects/{project.slug}/").content.decode()
        assert f'href="/projects/{project.slug}/comments/"' in detail

    def test_it_pages_the_comments_with_a_fixed_number_of_queries(
        self, lena: User, alice: User, bob: User, django_assert_max_num_queries: Any
    ) -> None:
        project = build_project(lead=lena, annotators=[alice, bob], topics=3, docs_per_topic=20)
        tasks = Task.objects.filter(project=project)
        answers = record_answers(project, [(who, task, 2) for task in tasks for who in (alice, bob)])
        Annotation.objects.filter(pk__in=[a.pk for a in answers]).update(comment="see the title")
        client = logged_in(lena)
        with django_assert_max_num_queries(10):
            page = client.get(f"/projects/{project.slug}/comments/").content.decode()
        assert len(re.findall(r"<tr data-answer=", page)) == 50 and "Page 1 of 3" in page

    def test_it_keeps_the_comments_page_from_annotators(
        self, project: Project, alice: User, bob: User
    ) -> None:
        answer(project, bob, comment="bob's note")
        assert logged_in(alice).get(f"/projects/{project.slug}/comments/").status_code == 403
        assert "bob's note" not in logged_in(alice).get(history_url(project)).content.decode()


def post_json(client: Client, url: str, body: dict[str, object] | None = None) -> Any:
    return client.post(url, json.dumps(body or {}), content_type="application/json")


@pytest.mark.django_db
class TestApi:
    def test_it_takes_and_returns_the_comment(self, project: Project, alice: User) -> None:
        client, api = logged_in(alice), f"/api/projects/{project.slug}/"
        first = post_json(client, api + "next/").json()["task"]["assignment"]
        too_long = post_json(
            client, api + "submit/", {"assignment": first, "grade": 2, "comment": "x" * 2001}
        )
        assert too_long.status_code == 400 and "comment" in too_long.json()
        created = post_json(
            client, api + "submit/", {"assignment": first, "grade": 2, "comment": " odd one "}
        )
        assert created.status_code == 201 and created.json()["comment"] == "odd one"
        second = post_json(client, api + "next/").json()["task"]["assignment"]
        skipped = post_json(client, api + "skip/", {"assignment": second, "comment": "cannot read"})
        assert skipped.json()["comment"] == "cannot read"

    def test_it_undoes_step_by_step_through_the_api(self, project: Project, alice: User) -> None:
        answers = [answer(project, alice, grade=g) for g in (1, 2)]
        client = logged_in(alice)
        undone = [post_json(client, f"/api/projects/{project.slug}/undo/") for _ in range(3)]
        assert [r.status_code for r in undone] == [200, 200, 409]
        assert [r.json().get("assignment") for r in undone[:2]] == [
            a.assignment_id for a in reversed(answers)
        ]
        assert undone[2].json()["code"] == "nothing_to_undo"

    def test_it_lists_comments_for_the_lead_only(
        self, project: Project, lena: User, alice: User, bob: User
    ) -> None:
        answer(project, alice, grade=3, comment="alice's note")
        answer(project, bob)
        url = f"/api/projects/{project.slug}/comments/"
        body = logged_in(lena).get(url).json()
        assert body["count"] == 1 and body["next"] is None
        row = body["results"][0]
        assert (row["annotator"], row["grade"], row["comment"]) == ("alice", 3, "alice's note")
        assert set(row) >= {"qid", "query", "doc_id", "document_title", "outcome", "created_at"}
        assert logged_in(alice).get(url).status_code == 403
        assert "/api/projects/{slug}/comments/" in logged_in(lena).get("/api/schema/").content.decode()
