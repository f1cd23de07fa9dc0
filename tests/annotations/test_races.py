"""Races between annotators' requests, through the whole stack, on PostgreSQL.

Each trial sends the two requests at the same moment from two threads, each with its own database
connection, through Django's test client (middleware, views and services as in production). A conflict
may end in a 409; never in a 500, a lost answer or a counter out of step.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client

from annotations import services
from annotations.models import Annotation, Assignment, Project
from tests.annotations.conftest import build_project
from tests.annotations.test_assignment import assert_counters_match

TRIALS = 20


def _client(user: User) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def _at_once(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run the calls in threads released together; return their results (or exceptions) in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = calls[i]()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a request hung"
    return results


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestUndoRacingAnswer:
    def test_undo_and_another_annotators_answer_on_shared_tasks_never_deadlock(
        self, lena: User, annotators
    ) -> None:  # type: ignore[no-untyped-def]
        # Alice answers one task and holds the other; Bob holds one of the two. Alice's undo and Bob's
        # answer then touch the same task rows at once. Before undo locked only its own rows, its lock
        # on the project row (joined in by Assignment's ordering) deadlocked with the answer's foreign
        # key check: PostgreSQL killed one of them, and the request answered 500.
        alice, bob = annotators(2)
        for trial in range(TRIALS):
            project = build_project(
                lead=lena,
                annotators=[alice, bob],
                topics=1,
                docs_per_topic=2,
                overlap=2,
                slug=f"race-{trial}",
            )
            first = services.task_claim(project=project, annotator=alice).assignment
            assert first is not None
            services.annotation_submit(project=project, annotator=alice, assignment_id=first.pk, grade=2)
            assert services.task_claim(project=project, annotator=alice).assignment is not None
            held = services.task_claim(project=project, annotator=bob).assignment
            assert held is not None
            base = f"/api/projects/{project.slug}"
            undo_client, answer_client = _client(alice), _client(bob)
            undo, answer = _at_once(
                [
                    partial(undo_client.post, f"{base}/undo/"),
                    partial(
                        answer_client.post,
                        f"{base}/submit/",
                        {"assignment": held.pk, "grade": 3},
                        content_type="application/json",
                    ),
                ]
            )
            assert not isinstance(undo, BaseException), undo
            assert not isinstance(answer, BaseException), answer
            assert undo.status_code in {200, 409}, (trial, undo.status_code, undo.content[:300])
            assert answer.status_code in {201, 409}, (trial, answer.status_code, answer.content[:300])
            if answer.status_code == 201:
                assert Annotation.objects.filter(assignment_id=held.pk, grade=3).count() == 1
            if undo.status_code == 200:
                assert not Annotation.objects.filter(assignment_id=first.pk).exists()
                assert Assignment.objects.get(pk=first.pk).state == Assignment.State.RESERVED
            assert_counters_match(project)
            Project.objects.filter(pk=project.pk).delete()


class _Deadlock(Exception):
    sqlstate = "40P01"


@pytest.mark.django_db(transaction=True)
class TestConflictRetry:
    def test_a_deadlock_victim_is_run_again_and_other_errors_are_not(self) -> None:
        from django.db import OperationalError

        calls: list[int] = []

        @services._retried_on_conflict
        def flaky(fail_times: int, sqlstate: str) -> str:
            calls.append(1)
            if len(calls) <= fail_times:
                cause = _Deadlock()
                cause.sqlstate = sqlstate
                raise OperationalError("conflict") from cause
            return "stored"

        assert flaky(2, "40P01") == "stored" and len(calls) == 3
        calls.clear()
        with pytest.raises(OperationalError):
            flaky(3, "40P01")  # gives up after three tries
        assert len(calls) == 3
        calls.clear()
        with pytest.raises(OperationalError):
            flaky(1, "08006")  # a lost connection is not a conflict
        assert len(calls) == 1
