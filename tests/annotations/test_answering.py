"""Answering: grades, server-clock timing, the too-fast policy, skip, unclear, undo and the session cap."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotations import selectors, services
from annotations.models import Annotation, Assignment, Project, ProjectMembership, Task
from tests.annotations.conftest import build_project


def serve(project: Project, annotator: User, **kwargs: object) -> Assignment:
    assignment = services.task_claim(project=project, annotator=annotator, **kwargs).assignment  # type: ignore[arg-type]
    assert assignment is not None
    return assignment


@pytest.mark.django_db
class TestSubmit:
    def test_it_stores_the_grade_and_the_seconds_on_the_server_clock(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice], min_seconds_per_task=10)
        served_at = timezone.now()
        assignment = serve(project, alice, now=served_at)
        answer = services.annotation_submit(
            project=project, annotator=alice, assignment_id=assignment.pk, grade=3,
            now=served_at + timedelta(seconds=12.5),
        )  # fmt: skip
        assert (answer.grade, answer.seconds_spent, answer.too_fast, answer.counts) == (3, 12.5, False, True)
        assignment.refresh_from_db()
        assert assignment.state == Assignment.State.LABELLED
        task = Task.objects.get(pk=assignment.task_id)
        assert (task.assigned_count, task.label_count) == (1, 1)

    def test_it_refuses_a_grade_off_the_scale(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice])
        assignment = serve(project, alice)
        with pytest.raises(services.InvalidGrade):
            services.annotation_submit(project=project, annotator=alice, assignment_id=assignment.pk, grade=7)
        with pytest.raises(services.InvalidGrade):
            services.annotation_submit(
                project=project, annotator=alice, assignment_id=assignment.pk, grade=None
            )

    def test_it_refuses_a_second_answer(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice])
        assignment = serve(project, alice)
        services.annotation_submit(project=project, annotator=alice, assignment_id=assignment.pk, grade=1)
        with pytest.raises(services.AlreadyAnswered):
            services.annotation_submit(project=project, annotator=alice, assignment_id=assignment.pk, grade=2)
        assert Annotation.objects.count() == 1

    def test_it_refuses_an_answer_to_someone_elses_reservation(
        self, lena: User, alice: User, bob: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice, bob])
        assignment = serve(project, alice)
        with pytest.raises(services.AssignmentNotFound):
            services.annotation_submit(project=project, annotator=bob, assignment_id=assignment.pk, grade=2)


@pytest.mark.django_db
class TestTooFast:
    def test_it_refuses_an_early_answer_by_default(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice], min_seconds_per_task=10)
        served_at = timezone.now()
        assignment = serve(project, alice, now=served_at)
        with pytest.raises(services.TooFast) as refused:
            services.annotation_submit(
                project=project, annotator=alice, assignment_id=assignment.pk, grade=4,
                now=served_at + timedelta(seconds=3),
            )  # fmt: skip
        assert refused.value.seconds_left == pytest.approx(7)
        assert not Annotation.objects.exists()
        answer = services.annotation_submit(
            project=project, annotator=alice, assignment_id=assignment.pk, grade=4,
            now=served_at + timedelta(seconds=10),
        )  # fmt: skip
        assert answer.counts

    def test_it_flags_and_excludes_an_early_answer_when_the_project_says_so(
        self, lena: User, alice: User
    ) -> None:
        project = build_project(
            lead=lena, annotators=[alice], min_seconds_per_task=10, too_fast_policy=Project.TooFastPolicy.FLAG,
            overlap=1,
        )  # fmt: skip
        served_at = timezone.now()
        assignment = serve(project, alice, now=served_at)
        answer = services.annotation_submit(
            project=project, annotator=alice, assignment_id=assignment.pk, grade=4,
            now=served_at + timedelta(seconds=1),
        )  # fmt: skip
        assert answer.too_fast and not answer.counts
        task = Task.objects.get(pk=assignment.task_id)
        assert (task.assigned_count, task.label_count) == (0, 0), "a flagged answer frees the place"

    def test_it_lets_skip_and_unclear_through_at_once(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice], min_seconds_per_task=60)
        first = serve(project, alice)
        skipped = services.annotation_skip(project=project, annotator=alice, assignment_id=first.pk)
        second = serve(project, alice)
        unclear = services.annotation_submit(
            project=project, annotator=alice, assignment_id=second.pk, unclear=True
        )
        assert (skipped.skipped, skipped.grade, skipped.counts) == (True, None, False)
        assert (unclear.unclear, unclear.grade, unclear.counts) == (True, None, False)


@pytest.mark.django_db
class TestSkip:
    def test_it_passes_a_skipped_task_to_someone_else(self, lena: User, alice: User, bob: User) -> None:
        project = build_project(lead=lena, annotators=[alice, bob], topics=1, docs_per_topic=1, overlap=1)
        assignment = serve(project, alice)
        services.annotation_skip(project=project, annotator=alice, assignment_id=assignment.pk)
        assert services.task_claim(project=project, annotator=alice).status == "empty"
        assert serve(project, bob).task_id == assignment.task_id


@pytest.mark.django_db
class TestUndo:
    def test_it_takes_back_the_last_answer_and_serves_it_again(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice])
        first = serve(project, alice)
        services.annotation_submit(project=project, annotator=alice, assignment_id=first.pk, grade=1)
        following = serve(project, alice)
        undone = services.annotation_undo(project=project, annotator=alice)
        assert undone.pk == first.pk and undone.state == Assignment.State.RESERVED
        assert not Annotation.objects.exists()
        assert not Assignment.objects.filter(pk=following.pk).exists(), "the next task went back to the pool"
        assert serve(project, alice).pk == first.pk
        answer = services.annotation_submit(project=project, annotator=alice, assignment_id=first.pk, grade=2)
        assert answer.grade == 2
        task = Task.objects.get(pk=first.task_id)
        assert (task.assigned_count, task.label_count) == (1, 1)
        assert Task.objects.get(pk=following.task_id).assigned_count == 0

    def test_it_does_not_undo_across_a_break(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice], session_break_minutes=5)
        assignment = serve(project, alice)
        answered_at = timezone.now()
        services.annotation_submit(
            project=project, annotator=alice, assignment_id=assignment.pk, grade=1, now=answered_at
        )
        with pytest.raises(services.NothingToUndo):
            services.annotation_undo(
                project=project, annotator=alice, now=answered_at + timedelta(minutes=5, seconds=1)
            )
        assert Annotation.objects.count() == 1

    def test_it_undoes_a_slip_after_a_minute_when_the_project_has_no_break(
        self, lena: User, alice: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice], session_break_minutes=0)
        assignment = serve(project, alice)
        answered_at = timezone.now()
        services.annotation_submit(
            project=project, annotator=alice, assignment_id=assignment.pk, grade=1, now=answered_at
        )
        later = answered_at + selectors.UNDO_WINDOW - timedelta(seconds=1)
        assert services.annotation_undo(project=project, annotator=alice, now=later).pk == assignment.pk
        services.annotation_submit(
            project=project, annotator=alice, assignment_id=assignment.pk, grade=1, now=later
        )
        with pytest.raises(services.NothingToUndo):
            services.annotation_undo(project=project, annotator=alice, now=later + selectors.UNDO_WINDOW)

    def test_it_cannot_undo_a_skip_whose_place_went_to_someone_else(
        self, lena: User, alice: User, bob: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice, bob], topics=1, docs_per_topic=1, overlap=1)
        assignment = serve(project, alice)
        services.annotation_skip(project=project, annotator=alice, assignment_id=assignment.pk)
        serve(project, bob)
        with pytest.raises(services.UndoConflict):
            services.annotation_undo(project=project, annotator=alice)


@pytest.mark.django_db
class TestSessionCap:
    def test_it_prompts_for_a_break_after_the_cap_and_continues_when_dismissed(
        self, lena: User, alice: User
    ) -> None:
        project = build_project(
            lead=lena, annotators=[alice], docs_per_topic=20, session_cap_minutes=30, session_break_minutes=5
        )
        start = timezone.now() - timedelta(minutes=31)
        for minute in range(0, 30, 2):
            at = start + timedelta(minutes=minute)
            assignment = serve(project, alice, now=at)
            services.annotation_submit(
                project=project,
                annotator=alice,
                assignment_id=assignment.pk,
                grade=1,
                now=at + timedelta(seconds=30),
            )
        assert services.task_claim(project=project, annotator=alice).status == "break"
        membership = ProjectMembership.objects.get(project=project, user=alice)
        services.session_break_dismiss(membership=membership)
        assert services.task_claim(project=project, annotator=alice).status == "task"

    def test_it_starts_a_new_session_after_a_pause(self, lena: User, alice: User) -> None:
        project = build_project(
            lead=lena, annotators=[alice], docs_per_topic=20, session_cap_minutes=30, session_break_minutes=5
        )
        start = timezone.now() - timedelta(minutes=50)
        for minute in range(0, 30, 2):
            at = start + timedelta(minutes=minute)
            assignment = serve(project, alice, now=at)
            services.annotation_submit(
                project=project,
                annotator=alice,
                assignment_id=assignment.pk,
                grade=1,
                now=at + timedelta(seconds=30),
            )
        assert services.task_claim(project=project, annotator=alice).status == "task"


@pytest.mark.django_db
class TestConstraints:
    def test_it_rejects_a_second_assignment_of_a_task_to_the_same_annotator(
        self, lena: User, alice: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice])
        assignment = serve(project, alice)
        services.annotation_submit(project=project, annotator=alice, assignment_id=assignment.pk, grade=1)
        now = timezone.now()
        with pytest.raises(IntegrityError), transaction.atomic():
            Assignment.objects.create(
                project=project, task_id=assignment.task_id, annotator=alice, reserved_at=now,
                expires_at=now + timedelta(minutes=1),
            )  # fmt: skip

    def test_it_rejects_a_grade_together_with_skip(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice])
        assignment = serve(project, alice)
        with pytest.raises(IntegrityError), transaction.atomic():
            Annotation.objects.create(
                assignment=assignment, project=project, task_id=assignment.task_id, annotator=alice,
                grade=2, skipped=True, seconds_spent=1,
            )  # fmt: skip

    def test_it_rejects_two_live_reservations_for_one_annotator(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice])
        assignment = serve(project, alice)
        other = Task.objects.exclude(pk=assignment.task_id).first()
        now = timezone.now()
        with pytest.raises(IntegrityError), transaction.atomic():
            Assignment.objects.create(
                project=project,
                task=other,
                annotator=alice,
                reserved_at=now,
                expires_at=now + timedelta(minutes=1),
            )
