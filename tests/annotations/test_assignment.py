"""Assignment: overlap, no repeats, per-annotator random order, hidden gold at the project's share,
expiring reservations, and the invariants under many concurrent claimers on PostgreSQL."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone

from annotations import hotpath, selectors, services
from annotations.models import AnnotatorCounts, Assignment, Project, ProjectMembership, Task
from tests.annotations.conftest import build_project


def answer_all(project: Project, annotator: User, *, grade: int = 2, limit: int = 10_000) -> list[Task]:
    """Claim and answer until the queue is empty; the tasks served, in order."""
    served = []
    for _ in range(limit):
        claim = services.task_claim(project=project, annotator=annotator)
        if claim.assignment is None:
            break
        served.append(claim.assignment.task)
        services.annotation_submit(
            project=project, annotator=annotator, assignment_id=claim.assignment.pk, grade=grade
        )
    return served


def answer_in_turns(project: Project, people: list[User]) -> None:
    """Annotators take turns, one answer each, until every queue is empty."""
    active = list(people)
    while active:
        for person in list(active):
            if not answer_all(project, person, limit=1):
                active.remove(person)


def assert_counters_match(project: Project) -> None:
    for task in Task.objects.filter(project=project).annotate(
        held=Count("assignments", filter=Q(assignments__state__in=["reserved", "labelled"])),
        labelled=Count("assignments", filter=Q(assignments__state="labelled")),
    ):
        assert (task.assigned_count, task.label_count) == (task.held, task.labelled), task
    assert_annotator_counts_match(project)


def assert_annotator_counts_match(project: Project) -> None:
    """The answered counts the PostgreSQL triggers keep (`AnnotatorCounts`) are the assignments' own."""
    if connection.vendor != "postgresql":
        return  # the embedded demo's SQLite keeps none and counts the assignments
    counted = {
        (row["annotator_id"], row["task__is_gold"]): row["n"]
        for row in Assignment.objects.filter(project=project)
        .exclude(state=Assignment.State.RESERVED)
        .values("annotator_id", "task__is_gold")
        .annotate(n=Count("id"))
    }
    kept = {
        row.annotator_id: (row.done_ordinary, row.done_gold)
        for row in AnnotatorCounts.objects.filter(project=project)
    }
    for annotator_id in {annotator for annotator, _ in counted} | set(kept):
        expected = (counted.get((annotator_id, False), 0), counted.get((annotator_id, True), 0))
        assert kept.get(annotator_id, (0, 0)) == expected, (annotator_id, kept, counted)


@pytest.mark.django_db
class TestClaiming:
    def test_it_gives_each_task_to_exactly_overlap_annotators(self, lena: User, annotators) -> None:  # type: ignore[no-untyped-def]
        people = annotators(4)
        project = build_project(lead=lena, annotators=people, topics=2, docs_per_topic=5, overlap=2)
        for person in people:
            answer_all(project, person)
        per_task = Counter(Task.objects.filter(project=project).values_list("annotations__task", flat=True))
        assert set(per_task.values()) == {2}
        assert len(per_task) == 10
        assert_counters_match(project)

    def test_it_never_serves_an_annotator_the_same_task_twice(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=3, docs_per_topic=4, overlap=3)
        served = answer_all(project, alice)
        assert len(served) == 12
        assert len({task.pk for task in served}) == 12
        assert services.task_claim(project=project, annotator=alice).status == "empty"

    def test_it_returns_the_held_reservation_on_reload(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice])
        first = services.task_claim(project=project, annotator=alice).assignment
        again = services.task_claim(project=project, annotator=alice).assignment
        assert first is not None and again is not None
        assert again.pk == first.pk
        assert Assignment.objects.filter(annotator=alice, state="reserved").count() == 1

    def test_it_orders_each_annotators_queue_differently_and_stably(
        self, lena: User, alice: User, bob: User
    ) -> None:
        project = build_project(lead=lena, annotators=[alice, bob], topics=4, docs_per_topic=10, overlap=2)
        # Two starting points on the rank ring a quarter-turn apart (seeds are random 62-bit numbers).
        for person, seed in ((alice, 7), (bob, 7 + 2**29)):
            ProjectMembership.objects.filter(project=project, user=person).update(shuffle_seed=seed)
        orders = {}
        for person in (alice, bob):
            seed = ProjectMembership.objects.get(project=project, user=person).shuffle_seed

            def fresh(person: User = person, seed: int = seed) -> list[int]:
                return [
                    task_id
                    for wrapped in (False, True)
                    for task_id in hotpath.candidate_ids(
                        hotpath.fresh_candidates_sql(
                            project_id=project.pk,
                            user_id=person.pk,
                            is_gold=False,
                            gold_overlap=None,
                            start=selectors.rank_start(seed),
                            wrapped=wrapped,
                            limit=1000,
                        )  # fmt: skip
                    )
                ]

            ids = fresh()
            assert ids == fresh()
            orders[person.pk] = ids
        assert orders[alice.pk] != orders[bob.pk]
        assert sorted(orders[alice.pk]) == sorted(orders[bob.pk])
        assert orders[alice.pk] != sorted(orders[alice.pk])

    def test_it_prefers_started_pairs_so_they_get_finished(self, lena: User, alice: User, bob: User) -> None:
        project = build_project(lead=lena, annotators=[alice, bob], topics=2, docs_per_topic=10, overlap=2)
        alice_first = answer_all(project, alice, limit=3)
        bob_first = answer_all(project, bob, limit=3)
        assert {t.pk for t in bob_first} == {t.pk for t in alice_first}

    def test_it_refuses_non_annotators(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[])
        # PermissionDenied (a 403): the views check the role first, but a lead may remove or re-role an
        # annotator between that check and the claim (tests/annotations/test_disqualify_race.py).
        with pytest.raises(PermissionDenied):
            services.task_claim(project=project, annotator=alice)
        with pytest.raises(PermissionDenied):
            services.task_claim(project=project, annotator=lena)


@pytest.mark.django_db
class TestReservations:
    def test_it_returns_an_expired_reservation_to_the_pool(self, lena: User, alice: User, bob: User) -> None:
        project = build_project(lead=lena, annotators=[alice, bob], topics=1, docs_per_topic=1, overlap=1)
        start = timezone.now()
        held = services.task_claim(project=project, annotator=alice, now=start).assignment
        assert held is not None
        assert services.task_claim(project=project, annotator=bob, now=start).status == "empty"
        later = start + project.reservation_timeout + timedelta(seconds=1)
        taken = services.task_claim(project=project, annotator=bob, now=later).assignment
        assert taken is not None and taken.task_id == held.task_id
        assert not Assignment.objects.filter(pk=held.pk).exists()
        assert_counters_match(project)

    def test_it_refuses_a_late_answer_whose_place_was_taken(self, lena: User, alice: User, bob: User) -> None:
        project = build_project(lead=lena, annotators=[alice, bob], topics=1, docs_per_topic=1, overlap=1)
        start = timezone.now()
        held = services.task_claim(project=project, annotator=alice, now=start).assignment
        later = start + project.reservation_timeout + timedelta(seconds=1)
        services.task_claim(project=project, annotator=bob, now=later)
        with pytest.raises(services.AssignmentNotFound):
            services.annotation_submit(
                project=project, annotator=alice, assignment_id=held.pk, grade=1, now=later
            )

    def test_it_accepts_a_late_answer_while_nobody_took_the_place(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=1, overlap=1)
        start = timezone.now()
        held = services.task_claim(project=project, annotator=alice, now=start).assignment
        later = start + project.reservation_timeout + timedelta(minutes=5)
        answer = services.annotation_submit(
            project=project, annotator=alice, assignment_id=held.pk, grade=1, now=later
        )
        assert answer.seconds_spent == pytest.approx((later - start).total_seconds())
        assert_counters_match(project)

    def test_it_extends_a_reservation_the_annotator_is_looking_at(self, lena: User, alice: User) -> None:
        project = build_project(lead=lena, annotators=[alice])
        start = timezone.now()
        held = services.task_claim(project=project, annotator=alice, now=start).assignment
        soon = start + timedelta(minutes=20)
        again = services.task_claim(project=project, annotator=alice, now=soon).assignment
        assert again.pk == held.pk
        assert again.expires_at == soon + project.reservation_timeout
        assert again.reserved_at == start


@pytest.mark.django_db
class TestGold:
    def test_it_mixes_gold_in_at_the_projects_share(self, lena: User, alice: User) -> None:
        project = build_project(
            lead=lena, annotators=[alice], topics=10, docs_per_topic=25, gold_per_topic=5, overlap=1
        )
        # A fixed seed: the draws kept within the shares leave a 40-task window without gold in about
        # 1 queue in 120 (simulated over 3,000 seeds), which this window check would call bunching.
        ProjectMembership.objects.filter(project=project, user=alice).update(shuffle_seed=12345)
        served = answer_all(project, alice)
        gold = [task.is_gold for task in served]
        ordinary = len(gold) - sum(gold)
        assert ordinary == 200
        share = sum(gold) / len(gold)
        assert project.gold_share_min <= share <= project.gold_share_max
        # Spread through the queue, not bunched at either end.
        for start in range(0, len(gold) - 40, 40):
            window = gold[start : start + 40]
            assert 1 <= sum(window) <= 12, (start, window)

    def test_it_places_gold_at_no_fixed_positions(self, lena: User, annotators) -> None:  # type: ignore[no-untyped-def]
        people = annotators(2)
        project = build_project(
            lead=lena, annotators=people, topics=4, docs_per_topic=25, gold_per_topic=5, overlap=2
        )
        positions = []
        for person in people:
            served = answer_all(project, person)
            positions.append([i for i, task in enumerate(served) if task.is_gold])
        assert positions[0] != positions[1]
        gaps = {b - a for a, b in zip(positions[0], positions[0][1:], strict=False)}
        assert len(gaps) > 1

    def test_it_shows_gold_to_every_annotator_by_default(self, lena: User, annotators) -> None:  # type: ignore[no-untyped-def]
        people = annotators(5)
        project = build_project(
            lead=lena, annotators=people, topics=2, docs_per_topic=40, gold_per_topic=4, overlap=1
        )
        answer_in_turns(project, people)
        gold_answers = Counter(
            Assignment.objects.filter(project=project, task__is_gold=True).values_list("annotator", flat=True)
        )
        assert len(gold_answers) == 5  # each annotator saw gold, beyond the overlap of 1
        assert (
            max(
                Counter(Assignment.objects.filter(task__is_gold=True).values_list("task", flat=True)).values()
            )
            > 1
        )

    def test_it_caps_gold_tasks_at_the_gold_overlap_when_set(self, lena: User, annotators) -> None:  # type: ignore[no-untyped-def]
        people = annotators(5)
        project = build_project(
            lead=lena,
            annotators=people,
            topics=2,
            docs_per_topic=40,
            gold_per_topic=4,
            overlap=1,
            gold_overlap=2,
        )
        answer_in_turns(project, people)
        per_gold_task = Counter(
            Assignment.objects.filter(project=project, task__is_gold=True).values_list("task", flat=True)
        )
        assert per_gold_task and max(per_gold_task.values()) <= 2


@pytest.mark.django_db
class TestProgress:
    def test_it_counts_down_one_per_answer_whatever_the_task(self, lena: User, alice: User) -> None:
        project = build_project(
            lead=lena, annotators=[alice], topics=4, docs_per_topic=20, gold_per_topic=4, overlap=1
        )
        start = selectors.queue_counts(project=project, annotator=alice)
        assert start.done == 0 and start.remaining == start.assigned > 0
        seen = []
        while True:
            claim = services.task_claim(project=project, annotator=alice)
            if claim.assignment is None:
                break
            services.annotation_submit(
                project=project, annotator=alice, assignment_id=claim.assignment.pk, grade=1
            )
            counts = selectors.queue_counts(project=project, annotator=alice)
            seen.append((counts.done, counts.remaining, counts.assigned))
        assert [done for done, _, _ in seen] == list(range(1, len(seen) + 1))
        assert {assigned for _, _, assigned in seen} == {start.assigned}
        assert seen[-1][1] == 0

    def test_a_claims_counts_are_the_queue_counted_afresh(self, lena: User, alice: User, bob: User) -> None:
        # The claim returns the counts after it (so the page and the API count the queue once): they must
        # be what counting again gives, for ordinary and gold claims alike, up to the empty queue.
        project = build_project(
            lead=lena, annotators=[alice, bob], topics=3, docs_per_topic=8, gold_per_topic=2, overlap=2
        )
        kinds = set()
        for _ in range(40):
            claim = services.task_claim(project=project, annotator=alice)
            assert claim.counts == selectors.queue_counts(project=project, annotator=alice)
            if claim.assignment is None:
                break
            kinds.add(claim.assignment.task.is_gold)
            services.annotation_submit(
                project=project, annotator=alice, assignment_id=claim.assignment.pk, grade=2
            )
            services.task_claim(project=project, annotator=bob)  # another annotator's claims move tasks on
        assert claim.status == "empty" and kinds == {True, False}


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


def _answer_with_next_until_empty(
    project_id: int, user_id: int, barrier: threading.Barrier, errors: list[BaseException]
) -> None:
    """Claim once, then answer each task with the next claim made with the answer (the API's `next: true`,
    the judge page's answer: on PostgreSQL one call of `annotations_answer_claim`) until the queue is empty."""
    try:
        project = Project.objects.get(pk=project_id)
        user = User.objects.get(pk=user_id)
        barrier.wait(timeout=30)
        claim: services.Claim | None = services.task_claim(project=project, annotator=user)
        while claim is not None and claim.assignment is not None:
            answered = services.annotation_submit_and_claim(
                project=project, annotator=user, assignment_id=claim.assignment.pk, grade=3
            )
            claim = answered.claim
    except BaseException as exc:  # noqa: BLE001 - reported by the test
        errors.append(exc)
    finally:
        connection.close()


def _run_threads(target: Callable[..., None], args: list[tuple[object, ...]]) -> None:
    threads = [threading.Thread(target=target, args=a) for a in args]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestConcurrency:
    def test_it_keeps_the_invariants_under_many_concurrent_claimers(self, lena: User, annotators) -> None:  # type: ignore[no-untyped-def]
        people = annotators(12)
        project = build_project(
            lead=lena,
            annotators=people,
            topics=4,
            docs_per_topic=10,
            gold_per_topic=1,
            overlap=3,
            gold_overlap=6,
        )
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
        assert all(per_task[task] <= 6 for task in gold)
        assert Task.objects.filter(project=project, is_gold=False).exclude(label_count=3).count() == 0
        assert_counters_match(project)

    def test_it_keeps_the_invariants_when_each_answer_claims_the_next_task(
        self, lena: User, annotators
    ) -> None:  # type: ignore[no-untyped-def]
        people = annotators(10)
        project = build_project(
            lead=lena, annotators=people, topics=3, docs_per_topic=10, gold_per_topic=1, overlap=3,
            gold_overlap=5,
        )  # fmt: skip
        barrier = threading.Barrier(len(people))
        errors: list[BaseException] = []
        _run_threads(
            _answer_with_next_until_empty, [(project.pk, person.pk, barrier, errors) for person in people]
        )
        assert errors == []
        rows = list(
            Assignment.objects.filter(project=project).values_list("task_id", "annotator_id", "task__is_gold")
        )
        assert len(rows) == len(set((task, who) for task, who, _ in rows)), "an annotator got a task twice"
        assert not Assignment.objects.filter(project=project, state=Assignment.State.RESERVED).exists()
        # Every ordinary task answered by exactly its overlap, no gold task over its cap.
        assert Task.objects.filter(project=project, is_gold=False).exclude(label_count=3).count() == 0
        per_task = Counter(task for task, _, _ in rows)
        assert all(per_task[task] <= 5 for task, _, is_gold in rows if is_gold)
        assert_counters_match(project)

    def test_it_gives_one_task_to_exactly_overlap_of_many_simultaneous_claimers(
        self, lena: User, annotators
    ) -> None:  # type: ignore[no-untyped-def]
        people = annotators(10)
        project = build_project(lead=lena, annotators=people, topics=1, docs_per_topic=1, overlap=3)
        barrier = threading.Barrier(len(people))
        results: list[str] = []
        errors: list[BaseException] = []

        def claim(user_id: int) -> None:
            try:
                user = User.objects.get(pk=user_id)
                barrier.wait(timeout=30)
                results.append(services.task_claim(project=project, annotator=user).status)
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)
            finally:
                connection.close()

        _run_threads(claim, [(person.pk,) for person in people])
        assert errors == []
        assert Counter(results) == {"task": 3, "empty": 7}
        assert Assignment.objects.filter(project=project).count() == 3
        assert Task.objects.get(project=project).assigned_count == 3
