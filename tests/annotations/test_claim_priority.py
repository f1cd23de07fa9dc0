"""Claims in a project whose tasks have priorities (a pool built from runs, `Task.priority`): fresh
prioritised tasks come first, in priority order, then the others round the ring; started tasks still go
before both; and the claim keeps its guarantees (overlap, nobody twice, counters) under concurrent
claimers."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotations import hotpath, selectors, services
from annotations.models import Annotation, Assignment, Project, ProjectMembership, Task
from tests.annotations.conftest import build_project
from tests.annotations.test_assignment import _run_threads, answer_all, assert_counters_match


def prioritise(project: Project, order: list[Task]) -> None:
    """Give `order` the priorities 0, 1, 2... as a pool would, and mark the project as having some."""
    for position, task in enumerate(order):
        Task.objects.filter(pk=task.pk).update(priority=position)
    Project.objects.filter(pk=project.pk).update(has_priorities=True)
    project.refresh_from_db()


def ordinary(project: Project) -> list[Task]:
    return list(Task.objects.filter(project=project, is_gold=False).order_by("pk"))


@pytest.mark.django_db
class TestPriorityOrder:
    def test_it_serves_prioritised_tasks_first_in_priority_order(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=2, docs_per_topic=6, overlap=1)
        tasks = ordinary(project)
        wanted = [tasks[9], tasks[2], tasks[7], tasks[0]]
        prioritise(project, wanted)
        served = answer_all(project, alice)
        assert [task.pk for task in served[:4]] == [task.pk for task in wanted]
        assert len(served) == 12 and len({task.pk for task in served}) == 12

    def test_the_rest_follow_on_the_annotators_ring_as_without_priorities(
        self, lena: User, alice: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=2, docs_per_topic=6, overlap=1)
        seed = ProjectMembership.objects.get(project=project, user=alice).shuffle_seed
        tasks = ordinary(project)
        prioritise(project, tasks[:3])
        served = answer_all(project, alice)
        start = selectors.rank_start(seed)
        rest = sorted(tasks[3:], key=lambda task: (task.rank < start, task.rank))
        assert [task.pk for task in served] == [task.pk for task in tasks[:3]] + [task.pk for task in rest]

    def test_it_still_finishes_started_tasks_before_fresh_prioritised_ones(
        self, lena: User, alice: User, bob: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice, bob], topics=1, docs_per_topic=5, overlap=2)
        tasks = ordinary(project)
        prioritise(project, [tasks[4], tasks[3]])
        first = services.task_claim(project=project, annotator=alice)
        assert first.assignment is not None and first.assignment.task_id == tasks[4].pk
        # Bob: the task Alice started goes first (fullest first), then the next by priority.
        served = answer_all(project, bob, limit=2)
        assert [task.pk for task in served] == [tasks[4].pk, tasks[3].pk]

    def test_a_priority_changed_between_claims_changes_what_comes_next(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=5, overlap=1)
        tasks = ordinary(project)
        prioritise(project, [tasks[0], tasks[1], tasks[2]])
        assert [task.pk for task in answer_all(project, alice, limit=1)] == [tasks[0].pk]
        Task.objects.filter(pk=tasks[2].pk).update(priority=-1)
        assert [task.pk for task in answer_all(project, alice, limit=1)] == [tasks[2].pk]

    def test_gold_tasks_keep_their_place_at_the_projects_share(self, lena: User, alice: User) -> None:
        project = build_project(
            lead=lena, annotators=[alice], topics=2, docs_per_topic=10, gold_per_topic=2, overlap=1
        )
        plain = [task.is_gold for task in answer_all(project, alice)]
        Annotation.objects.filter(project=project).delete()
        Assignment.objects.filter(project=project).delete()
        Task.objects.filter(project=project).update(assigned_count=0, label_count=0)
        prioritise(project, ordinary(project))
        served = answer_all(project, alice)
        # Gold comes in at the same places as without priorities (the gold turn does not look at them).
        assert [task.is_gold for task in served] == plain and any(plain)
        order = [task.pk for task in served if not task.is_gold]
        assert order == [task.pk for task in ordinary(project)]

    def test_a_project_without_priorities_reads_no_prioritised_stage(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=5)
        with CaptureQueriesContext(connection) as plain:
            services.task_claim(project=project, annotator=alice)
        assert not any("priority IS NOT NULL" in query["sql"] for query in plain.captured_queries)

    def test_a_claim_with_priorities_costs_no_more_queries_than_one_without(
        self, lena: User, alice: User, bob: User
    ) -> None:
        plain = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=5, slug="plain")
        pooled = build_project(lead=lena, annotators=[bob], topics=1, docs_per_topic=5, slug="pooled")
        prioritise(pooled, ordinary(pooled))
        counted = []
        for project, person in ((plain, alice), (pooled, bob)):
            services.task_claim(project=project, annotator=person)  # the expiry sweep's first run
            Assignment.objects.filter(project=project).delete()
            Task.objects.filter(project=project).update(assigned_count=0)
            with CaptureQueriesContext(connection) as queries:
                assert services.task_claim(project=project, annotator=person).status == "task"
            counted.append(len(queries))
        assert counted[1] == counted[0]

    def test_the_prioritised_read_is_an_index_range_without_a_sort(self, lena: User, alice: User) -> None:
        if connection.vendor != "postgresql":
            pytest.fail("the claim path is tuned for PostgreSQL; run the tests on it")
        project = build_project(lead=lena, annotators=[alice], topics=4, docs_per_topic=50)
        prioritise(project, ordinary(project)[::2])
        with connection.cursor() as cursor:
            for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
                cursor.execute(f"SET LOCAL {setting} = off")
            sql, params = hotpath.prioritised_candidates_sql(
                project_id=project.pk, user_id=alice.pk, limit=16
            )
            cursor.execute("EXPLAIN " + sql, params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "task_claimable_priority" in plan and "Sort" not in plan, plan


def _claim_until_empty(
    project_id: int, user_id: int, barrier: threading.Barrier, errors: list[BaseException]
) -> None:
    try:
        project = Project.objects.get(pk=project_id)
        user = User.objects.get(pk=user_id)
        barrier.wait(timeout=30)
        answer_all(project, user, grade=3)
    except BaseException as exc:  # noqa: BLE001 - reported by the test
        errors.append(exc)
    finally:
        connection.close()


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestPriorityConcurrency:
    def test_it_keeps_the_invariants_under_many_concurrent_claimers(self, lena: User, annotators) -> None:  # type: ignore[no-untyped-def]
        people = annotators(10)
        project = build_project(
            lead=lena, annotators=people, topics=4, docs_per_topic=10, gold_per_topic=1, overlap=3,
            gold_overlap=5,
        )  # fmt: skip
        tasks = ordinary(project)
        prioritise(project, tasks[::-1][:20])  # half of them, in reverse id order
        barrier = threading.Barrier(len(people))
        errors: list[BaseException] = []
        _run_threads(_claim_until_empty, [(project.pk, person.pk, barrier, errors) for person in people])
        assert errors == []
        rows = list(
            Assignment.objects.filter(project=project).values_list("task_id", "annotator_id", "task__is_gold")
        )
        assert len(rows) == len(set((task, who) for task, who, _ in rows)), "an annotator got a task twice"
        per_task = Counter(task for task, _, _ in rows)
        gold = {task for task, _, is_gold in rows if is_gold}
        assert all(per_task[task] == 3 for task in per_task if task not in gold)
        assert all(per_task[task] <= 5 for task in gold)
        assert Task.objects.filter(project=project, is_gold=False).exclude(label_count=3).count() == 0
        assert_counters_match(project)

    def test_simultaneous_claimers_take_the_first_prioritised_tasks_each_once(
        self, lena: User, annotators
    ) -> None:  # type: ignore[no-untyped-def]
        people = annotators(6)
        project = build_project(lead=lena, annotators=people, topics=2, docs_per_topic=10, overlap=1)
        tasks = ordinary(project)
        wanted = tasks[::-1][:6]
        prioritise(project, wanted + tasks[:4])
        barrier = threading.Barrier(len(people))
        served: list[int] = []
        errors: list[BaseException] = []

        def claim(user_id: int) -> None:
            try:
                user = User.objects.get(pk=user_id)
                barrier.wait(timeout=30)
                claimed = services.task_claim(project=project, annotator=user)
                assert claimed.assignment is not None
                served.append(claimed.assignment.task_id)
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)
            finally:
                connection.close()

        _run_threads(claim, [(person.pk,) for person in people])
        assert errors == []
        # SKIP LOCKED spreads them over the first entries of the priority order, one task each.
        assert sorted(served) == sorted(task.pk for task in wanted)
        assert_counters_match(project)
