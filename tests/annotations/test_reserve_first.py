"""`hotpath.reservation_take_first`, a claim's candidates tried in one call, where another claim holds one
of them locked: it is skipped (SKIP LOCKED) and reported busy, in one call as step by step."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone

from annotations import hotpath
from annotations.models import Assignment, Task
from tests.annotations.conftest import build_project

TAKE = {"one call": hotpath.reservation_take_first, "step by step": hotpath.reservation_take_first_steps}


@pytest.fixture
def tasks(lena: User, alice: User) -> list[Task]:
    project = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=3, overlap=2)
    return list(Task.objects.filter(project=project).order_by("pk"))


@pytest.fixture
def held_by_another(tasks: list[Task]) -> Iterator[Task]:
    """The first task, locked by another connection's open transaction (as a concurrent claim holds it)."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                Task.objects.select_for_update(no_key=True).get(pk=tasks[0].pk)
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert locked.wait(30)
    yield tasks[0]
    release.set()
    holder.join(30)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("how", list(TAKE))
class TestReserveFirst:
    def take(self, how: str, alice: User, task_ids: list[int]) -> hotpath.FirstReserved:
        now = timezone.now()
        run: Callable[..., hotpath.FirstReserved] = TAKE[how]
        project_id = Task.objects.get(pk=task_ids[0]).project_id
        with transaction.atomic():
            return run(
                project_id=project_id, task_ids=task_ids, user_id=alice.pk, now=now,
                expires_at=now + timedelta(minutes=10), cap=2,
            )  # fmt: skip

    def test_it_skips_a_task_another_claim_holds_and_reserves_the_next(
        self, how: str, alice: User, tasks: list[Task], held_by_another: Task
    ) -> None:
        first = self.take(how, alice, [held_by_another.pk, tasks[1].pk, tasks[2].pk])
        assert first.served is not None and first.served.task_id == tasks[1].pk
        assert first.busy == [held_by_another.pk]
        assert first.served.task.assigned_count == 1 and first.served.task.document.doc_id == "d0-1"
        mine = Assignment.objects.get(annotator=alice)
        assert (mine.task_id, mine.state) == (tasks[1].pk, Assignment.State.RESERVED)

    def test_it_reports_a_held_task_busy_when_nothing_else_is_free(
        self, how: str, alice: User, tasks: list[Task], held_by_another: Task
    ) -> None:
        Task.objects.filter(pk=tasks[1].pk).update(assigned_count=2)  # full: not busy, just closed
        first = self.take(how, alice, [held_by_another.pk, tasks[1].pk])
        assert first.served is None and first.busy == [held_by_another.pk]
        assert not Assignment.objects.exists()

    def test_it_corrects_a_counter_behind_the_places_taken_and_goes_on(
        self, how: str, alice: User, bob: User, lena: User, tasks: list[Task]
    ) -> None:
        now = timezone.now()
        for person in (bob, lena):  # two answers on the first task, its counter left at 0
            Assignment.objects.create(
                project_id=tasks[0].project_id, task=tasks[0], annotator=person, state="labelled",
                reserved_at=now, expires_at=now + timedelta(minutes=1), answered_at=now,
            )  # fmt: skip
        first = self.take(how, alice, [tasks[0].pk, tasks[1].pk])
        assert first.served is not None and first.served.task_id == tasks[1].pk and first.busy == []
        assert Task.objects.get(pk=tasks[0].pk).assigned_count == 2
