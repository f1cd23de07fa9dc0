"""The answered counts PostgreSQL's triggers keep per annotator and project (`AnnotatorCounts`, migration
0016_annotator_counts), which a claim reads instead of counting all of the annotator's assignments: kept
by every writer, not only the judging hot path (undo, skips, the ORM, deletions, a task made gold)."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from annotations import selectors, services
from annotations.models import AnnotatorCounts, Assignment, Project, Task
from tests.annotations.conftest import build_project
from tests.annotations.test_assignment import answer_all, assert_annotator_counts_match

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.fail("the counts are kept by PostgreSQL triggers; run the tests on it")


def kept(project: Project, user: User) -> tuple[int, int]:
    row = AnnotatorCounts.objects.filter(project=project, annotator=user).first()
    return (0, 0) if row is None else (row.done_ordinary, row.done_gold)


def test_answers_skips_and_gold_are_counted_as_they_are_given(lena: User, alice: User, bob: User) -> None:
    project = build_project(lead=lena, annotators=[alice, bob], topics=3, docs_per_topic=6, gold_per_topic=1)
    answer_all(project, alice, limit=5)
    claim = services.task_claim(project=project, annotator=bob)
    assert claim.assignment is not None
    assert kept(project, bob) == (0, 0)  # a reservation is not an answer
    services.annotation_skip(project=project, annotator=bob, assignment_id=claim.assignment.pk)
    assert sum(kept(project, bob)) == 1
    answer_all(project, bob, limit=4)
    assert sum(kept(project, alice)) == 5 and sum(kept(project, bob)) == 5
    assert_annotator_counts_match(project)
    own = selectors.own_counts(project=project, annotator=alice, now=timezone.now())
    assert kept(project, alice) == (own.done_ordinary, own.done_gold)


def test_an_undo_takes_its_answer_off_the_count(lena: User, alice: User) -> None:
    project = build_project(lead=lena, annotators=[alice], topics=2, docs_per_topic=4)
    answer_all(project, alice, limit=3)
    assert kept(project, alice) == (3, 0)
    services.annotation_undo(project=project, annotator=alice)
    assert kept(project, alice) == (2, 0)
    assert_annotator_counts_match(project)


def test_a_task_made_gold_after_its_answers_moves_them(lena: User, alice: User, bob: User) -> None:
    project = build_project(lead=lena, annotators=[alice, bob], topics=2, docs_per_topic=4)
    answer_all(project, alice, limit=4)
    answer_all(project, bob, limit=2)
    answered = Assignment.objects.filter(project=project, annotator=alice).values_list("task_id", flat=True)
    Task.objects.filter(pk__in=list(answered)[:3]).update(is_gold=True)  # as a gold import does
    assert_annotator_counts_match(project)
    assert kept(project, alice) == (1, 3)
    Task.objects.filter(project=project).update(is_gold=False)
    assert kept(project, alice) == (4, 0)
    assert_annotator_counts_match(project)


def test_deleting_answers_tasks_and_people_keeps_the_counts_right(lena: User, alice: User, bob: User) -> None:
    project = build_project(lead=lena, annotators=[alice, bob], topics=2, docs_per_topic=5)
    answer_all(project, alice, limit=6)
    answer_all(project, bob, limit=6)
    Assignment.objects.filter(project=project, annotator=alice).order_by("pk").first().delete()  # type: ignore[union-attr]
    assert kept(project, alice) == (5, 0)
    Task.objects.filter(project=project, assignments__annotator=bob).order_by("pk").first().delete()  # type: ignore[union-attr]
    assert_annotator_counts_match(project)
    bob.delete()
    assert not AnnotatorCounts.objects.filter(annotator_id=bob.pk).exists()
    assert_annotator_counts_match(project)
    project.delete()
    assert not AnnotatorCounts.objects.exists()


def test_the_migrations_backfill_counts_what_was_answered_before_it(lena: User, alice: User) -> None:
    project = build_project(lead=lena, annotators=[alice], topics=2, docs_per_topic=4, gold_per_topic=1)
    answer_all(project, alice, limit=5)
    before = kept(project, alice)
    AnnotatorCounts.objects.all().delete()
    migration = import_module("annotations.migrations.0016_annotator_counts")
    with connection.cursor() as cursor:
        cursor.execute(migration.BACKFILL)
    assert kept(project, alice) == before and sum(before) == 5


def test_the_function_runs_only_for_the_writes_that_move_a_count(lena: User, alice: User) -> None:
    """Migration 0019's WHEN conditions: a claim's reservation, and a reservation kept as one, call no
    trigger function; an answer calls it once."""
    project = build_project(lead=lena, annotators=[alice], topics=2, docs_per_topic=4)

    def calls() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT COALESCE(pg_stat_get_xact_function_calls('annotations_counts_assignment'::regproc), 0)"
            )
            return int(cursor.fetchone()[0])

    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL track_functions = 'pl'")
    claim = services.task_claim(project=project, annotator=alice)
    assert claim.assignment is not None and calls() == 0
    Assignment.objects.filter(pk=claim.assignment.pk).update(reserved_at=timezone.now())
    assert calls() == 0
    services.annotation_submit(project=project, annotator=alice, assignment_id=claim.assignment.pk, grade=2)
    assert calls() == 1 and sum(kept(project, alice)) == 1
    Assignment.objects.filter(pk=claim.assignment.pk).update(
        answered_at=timezone.now()
    )  # answered stays answered
    assert calls() == 1 and sum(kept(project, alice)) == 1
