"""Pools built from runs (`monitoring.pooling.services`): the build materialises `evalcore.pooling`'s
order as prioritised tasks, reuses the project's tasks, skips documents the project lacks, and the
re-prioritisation job follows the answers; answers reach it through `annotations.hooks`, debounced."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotations import services as judging
from annotations.models import Assignment, Project, Task
from evalcore import trec
from evalcore.pooling import PoolParams, candidates_from_runs, pool_order
from evalplatform.errors import InputError
from evalplatform.models import Team
from monitoring.files import uploads
from monitoring.files.models import Run
from monitoring.pooling import services as pooling
from monitoring.pooling.models import JudgingPool, PoolReprioritise, PoolTask
from tests.annotations.conftest import annotators as annotators  # noqa: F401 - a fixture
from tests.annotations.conftest import build_project
from tests.conftest import BOB, QueuedTasks, make_user
from tests.monitoring.conftest import upload

TOPICS, DOCS = 3, 8


@pytest.fixture
def bob(db: None) -> User:
    return make_user(BOB)


def run_text(tag: str, order: Callable[[int], list[int]], *, missing: bool = False) -> str:
    """A run over topics q0.. ranking documents d{q}-{j} in `order(q)`; with `missing`, a document the
    project does not have (x{q}) first."""
    lines = []
    for q in range(TOPICS):
        docs = ([f"x{q}"] if missing else []) + [f"d{q}-{j}" for j in order(q)]
        lines += [f"q{q} Q0 {doc} {rank} {100 - rank} {tag}" for rank, doc in enumerate(docs, start=1)]
    return "\n".join(lines) + "\n"


RUN_TEXTS = {
    "up": run_text("up", lambda q: [0, 1, 2, 3, 4], missing=True),
    "down": run_text("down", lambda q: [7, 6, 5, 4, 3]),
    "mid": run_text("mid", lambda q: [2, 5, 1, 6]),
}


@pytest.fixture
def project(lena: User, alice: User, bob: User, team: Team) -> Project:
    project = build_project(lead=lena, annotators=[alice, bob], topics=TOPICS, docs_per_topic=DOCS, overlap=1)
    Task.objects.filter(project=project).delete()  # a project with topics and documents, no tasks yet
    project.team = team
    project.save(update_fields=["team"])
    return project


@pytest.fixture
def runs(team: Team, theo: User) -> list[Run]:
    return [
        uploads.run_upload(team=team, upload=upload(f"{name}.run", text), uploaded_by=theo)
        for name, text in RUN_TEXTS.items()
    ]


def built(project: Project, runs: list[Run], **params: Any) -> JudgingPool:
    params.setdefault("depth", 10)
    pool = pooling.pool_create(project=project, runs=runs, enqueue=False, **params)
    assert pooling.pool_build_run(pool_id=pool.pk).status == "done", JudgingPool.objects.get(pk=pool.pk).error
    return JudgingPool.objects.get(pk=pool.pk)


def reference_candidates(tmp_path: Any, runs: list[Run], *, depth: int, drop_missing: bool = True) -> Any:
    """The candidates as evalcore pools the same files, documents the project lacks left out by hand."""
    read = []
    for run in runs:
        path = tmp_path / f"{run.name}.run"
        path.write_text(RUN_TEXTS[run.name])
        read.append(trec.read_run(str(path)))
    pooled = candidates_from_runs(read, depth=depth, names=[run.name for run in runs])
    if drop_missing:
        import numpy as np

        keep = np.array([not docno.startswith("x") for docno in pooled.docnos])
        pooled = pooling.candidates_subset(pooled, keep)
    return pooled


def prioritised(project: Project) -> list[tuple[str, str]]:
    """The project's pending prioritised pairs, lowest priority first."""
    tasks = Task.objects.filter(project=project, priority__isnull=False, assigned_count=0, label_count=0)
    return [
        (task.topic.qid, task.document.doc_id)
        for task in tasks.select_related("topic", "document").order_by("priority", "pk")
    ]


def judge(project: Project, annotator: User, grades: Callable[[Task], int], *, count: int) -> list[Task]:
    """Claim and answer `count` tasks, each with `grades(task)`."""
    done = []
    for _ in range(count):
        claim = judging.task_claim(project=project, annotator=annotator)
        assert claim.assignment is not None
        task = claim.assignment.task
        judging.annotation_submit(
            project=project, annotator=annotator, assignment_id=claim.assignment.pk, grade=grades(task)
        )
        done.append(task)
    return done


def judge_all(project: Project, annotator: User) -> None:
    while (claim := judging.task_claim(project=project, annotator=annotator)).assignment is not None:
        judging.annotation_submit(
            project=project, annotator=annotator, assignment_id=claim.assignment.pk, grade=1
        )


def run_pending(pool: JudgingPool) -> None:
    """A pending re-prioritisation (one the answers asked for, or a new one) run here, as the worker would."""
    with contextlib.suppress(IntegrityError), transaction.atomic():
        PoolReprioritise.objects.create(pool=pool)
    for job_id in PoolReprioritise.objects.filter(pool=pool, status="pending").values_list("pk", flat=True):
        assert pooling.pool_reprioritise_run(job_id=job_id).status in ("done", "finished", "busy")


def reprioritise(pool: JudgingPool) -> JudgingPool:
    run_pending(pool)
    return JudgingPool.objects.get(pk=pool.pk)


@pytest.mark.django_db
class TestBuild:
    def test_it_adds_the_budgeted_order_as_prioritised_tasks(
        self, project: Project, runs: list[Run], tmp_path: Any
    ) -> None:
        pool = built(project, runs, strategy="take-rrf", budget=7)
        candidates = reference_candidates(tmp_path, runs, depth=10)
        expected = [
            candidates.pair(i) for i in pool_order(candidates, PoolParams("take-rrf", budget=7, depth=10))
        ]
        assert prioritised(project) == expected and len(expected) == 7
        project.refresh_from_db()
        assert project.has_priorities
        assert (pool.phase, pool.tasks_created, pool.tasks_reused, pool.pending) == ("judging", 7, 0, 7)
        assert pool.candidates_count == len(candidates)
        assert pool.skipped_missing == TOPICS  # x0, x1, x2: the project has no such documents
        assert PoolTask.objects.filter(pool=pool, created=True).count() == 7

    def test_it_reuses_the_projects_tasks_and_never_duplicates_a_pair(
        self, project: Project, runs: list[Run]
    ) -> None:
        topic, document = project.topics.get(qid="q0"), project.documents.get(doc_id="d0-0")
        existing = Task.objects.create(project=project, topic=topic, document=document)
        pool = built(project, runs, strategy="depth", budget=None)
        assert Task.objects.filter(project=project, topic=topic, document=document).get().pk == existing.pk
        assert pool.tasks_reused == 1 and pool.tasks_created == pool.candidates_count - 1
        assert not PoolTask.objects.get(pool=pool, task=existing).created
        # A second build of the same runs reuses every task (once the first is done: one pool at a time).
        JudgingPool.objects.filter(pk=pool.pk).update(stage=JudgingPool.Stage.DONE)
        again = built(project, runs, strategy="depth", budget=None)
        assert (again.tasks_created, again.tasks_reused) == (0, pool.candidates_count)
        assert Task.objects.filter(project=project).count() == pool.candidates_count

    def test_the_same_seed_gives_the_same_order(self, project: Project, runs: list[Run], lena: User) -> None:
        built(project, runs, strategy="random", budget=9, seed=5)
        first = prioritised(project)
        other = build_project(lead=lena, topics=TOPICS, docs_per_topic=DOCS, slug="other")
        Task.objects.filter(project=other).delete()
        other.team = project.team
        other.save(update_fields=["team"])
        built(other, runs, strategy="random", budget=9, seed=5)
        assert prioritised(other) == first
        third = build_project(lead=lena, topics=TOPICS, docs_per_topic=DOCS, slug="third")
        Task.objects.filter(project=third).delete()
        third.team = project.team
        third.save(update_fields=["team"])
        built(third, runs, strategy="random", budget=9, seed=6)
        assert prioritised(third) != first

    def test_it_refuses_what_it_cannot_build(
        self, project: Project, runs: list[Run], other_team: Team, otto: User
    ) -> None:
        foreign = uploads.run_upload(
            team=other_team, upload=upload("f.run", RUN_TEXTS["up"]), uploaded_by=otto
        )
        with pytest.raises(InputError, match="team's runs"):
            pooling.pool_create(project=project, runs=[foreign], strategy="depth", budget=5)
        with pytest.raises(InputError, match="unknown strategy"):
            pooling.pool_create(project=project, runs=runs, strategy="best", budget=5)
        with pytest.raises(InputError, match="at least one run"):
            pooling.pool_create(project=project, runs=[], strategy="depth", budget=5)
        project.team = None
        project.save(update_fields=["team"])
        with pytest.raises(InputError, match="Link the project to a team"):
            pooling.pool_create(project=project, runs=runs, strategy="depth", budget=5)
        assert not JudgingPool.objects.exists()

    def test_it_queues_its_build_on_commit(
        self, project: Project, runs: list[Run], queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            pool = pooling.pool_create(project=project, runs=runs, strategy="depth", budget=5)
        assert queued.sent == [("monitoring.tasks.pool_build", (pool.pk,), {"countdown": 0, "retry": False})]


@pytest.mark.django_db
class TestAnswers:
    def test_the_budget_ends_the_pool(self, project: Project, runs: list[Run], alice: User) -> None:
        pool = built(project, runs, strategy="depth", budget=5)
        judge(project, alice, lambda task: 2, count=5)
        pool = reprioritise(pool)
        assert (pool.phase, pool.judged, pool.relevant, pool.pending) == ("done", 5, 5, 0)
        assert pool.yield_curve == [1, 2, 3, 4, 5]
        assert judging.task_claim(project=project, annotator=alice).status == "empty"

    def test_new_labels_reorder_an_adaptive_pool_as_evalcore_replays_them(
        self, project: Project, runs: list[Run], alice: User, tmp_path: Any
    ) -> None:
        pool = built(project, runs, strategy="mtf", budget=15)
        before = prioritised(project)
        # Only the "down" run's documents (d*-7, d*-6, d*-5) are relevant.
        relevant = {"7", "6", "5"}
        done = judge(
            project, alice, lambda task: 3 if task.document.doc_id.split("-")[1] in relevant else 0, count=4
        )
        pool = reprioritise(pool)
        candidates = reference_candidates(tmp_path, runs, depth=10)
        history = [
            (
                candidates.index_of(task.topic.qid, task.document.doc_id),
                task.document.doc_id.split("-")[1] in relevant,
            )
            for task in done
        ]
        params = PoolParams("mtf", budget=15, depth=10)
        expected = [candidates.pair(i) for i in pool_order(candidates, params, history)]
        assert prioritised(project) == expected
        assert prioritised(project) != [
            pair for pair in before if pair not in {(t.topic.qid, t.document.doc_id) for t in done}
        ]
        assert (pool.judged, pool.relevant) == (4, sum(flag for _, flag in history))
        # The pool's pending tasks are exactly the budgeted order: those that left it were deleted.
        pending = Task.objects.filter(pool_links__pool=pool, label_count=0, assigned_count=0)
        assert pending.count() == 11 == len(expected)
        assert pool.pending == 11

    def test_re_running_the_job_changes_nothing(self, project: Project, runs: list[Run], alice: User) -> None:
        pool = built(project, runs, strategy="bandit-mm-ns", budget=12, seed=3)
        judge(project, alice, lambda task: int(task.document.doc_id.endswith(("-0", "-1"))) * 2, count=3)
        reprioritise(pool)
        order, tasks = prioritised(project), set(Task.objects.values_list("pk", flat=True))
        job = PoolReprioritise.objects.create(pool=pool)
        pooling.pool_reprioritise_run(job_id=job.pk)
        assert PoolReprioritise.objects.get(pk=job.pk).changed == 0
        assert prioritised(project) == order and set(Task.objects.values_list("pk", flat=True)) == tasks

    def test_a_re_ordering_reads_the_links_once_and_writes_only_what_changed(
        self, project: Project, runs: list[Run], alice: User
    ) -> None:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        pool = built(project, runs, strategy="bandit-mm-ns", budget=12, seed=3)
        judge(project, alice, lambda task: int(task.document.doc_id.endswith(("-7", "-6"))) * 2, count=4)
        before = dict(Task.objects.filter(pool_links__pool=pool).values_list("pk", "priority"))
        job = PoolReprioritise.objects.create(pool=pool)
        pooling.pool_reprioritise_run(job_id=job.pk)
        after = dict(Task.objects.filter(pool_links__pool=pool).values_list("pk", "priority"))
        moved = {pk for pk in after if pk in before and after[pk] != before[pk]}
        dropped = {pk for pk, priority in before.items() if pk not in after and priority is not None}
        new = set(after) - set(before)
        job.refresh_from_db()
        assert job.created_tasks == len(new) and job.deleted_tasks == len(dropped)
        assert job.changed == len(moved) + len(dropped) + len(new) > 0
        # Again with nothing new: every candidate of the order is linked, so no task is looked up by its
        # pair, no read of the pool's tasks sorts them by Task's default ordering (a join of the project and
        # the topic), and nothing is written.
        again = PoolReprioritise.objects.create(pool=pool)
        with CaptureQueriesContext(connection) as queries:
            pooling.pool_reprioritise_run(job_id=again.pk)
        again.refresh_from_db()
        assert (again.changed, again.created_tasks, again.deleted_tasks) == (0, 0, 0)
        sql = [query["sql"] for query in queries.captured_queries]
        assert not any('"annotations_document"."doc_id" IN' in text for text in sql)
        assert not any(
            '"annotations_task"' in text and '"annotations_topic"."qid" ASC' in text for text in sql
        )
        assert not any(text.startswith("UPDATE annotations_task") for text in sql)
        pool.refresh_from_db()
        assert pool.pending == Task.objects.filter(pool_links__pool=pool, label_count=0).count()

    def test_a_task_someone_holds_is_never_deleted(
        self, project: Project, runs: list[Run], alice: User, bob: User
    ) -> None:
        pool = built(project, runs, strategy="mtf", budget=15)
        held = judging.task_claim(project=project, annotator=bob).assignment
        assert held is not None
        judge(project, alice, lambda task: 0, count=5)
        reprioritise(pool)
        assert Task.objects.filter(pk=held.task_id).exists()
        assert Assignment.objects.filter(pk=held.pk, state="reserved").exists()

    def test_answers_ask_for_one_debounced_reprioritisation(
        self, project: Project, runs: list[Run], alice: User, queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any, settings: Any,
    ) -> None:  # fmt: skip
        pool = built(project, runs, strategy="mtf", budget=10)
        project.refresh_from_db()
        pooling._joined.clear()
        with django_capture_on_commit_callbacks(execute=True):
            judge(project, alice, lambda task: 1, count=1)
        pooling._joined.clear()  # another process
        with django_capture_on_commit_callbacks(execute=True):
            judge(project, alice, lambda task: 1, count=1)
        jobs = PoolReprioritise.objects.filter(pool=pool)
        assert jobs.count() == 1 and jobs.get().status == "pending"
        sent = [entry for entry in queued.sent if entry[0] == "monitoring.tasks.pool_reprioritise"]
        assert sent == [
            (
                "monitoring.tasks.pool_reprioritise",
                (jobs.get().pk,),
                {"countdown": pooling.DEBOUNCE_SECONDS, "retry": False},
            )
        ]

    def test_a_process_that_queued_the_job_passes_over_answers_for_a_moment(
        self, project: Project, runs: list[Run], alice: User, queued: QueuedTasks,
        django_assert_num_queries: Any,
    ) -> None:  # fmt: skip
        pool = built(project, runs, strategy="mtf", budget=10)
        pooling._joined.clear()
        pooling.pool_answers_changed(project.pk)
        with django_assert_num_queries(0):
            pooling.pool_answers_changed(project.pk)  # within JOIN_MEMO_SECONDS: the queued job reads it
        pooling._joined.clear()
        queued.broker_down = True
        PoolReprioritise.objects.all().delete()
        pooling.pool_answers_changed(project.pk)  # the job failed, saying so: no memo, the next answer asks
        assert pooling._joined == {} and PoolReprioritise.objects.get(pool=pool).status == "failed"

    def test_a_process_joins_a_waiting_job_with_one_read_and_no_write(
        self, project: Project, runs: list[Run], queued: QueuedTasks, django_assert_num_queries: Any
    ) -> None:
        pool = built(project, runs, strategy="mtf", budget=10)
        job = PoolReprioritise.objects.create(pool=pool)  # another process's, sent DEBOUNCE_SECONDS later
        pooling._joined.clear()
        with django_assert_num_queries(1):  # the live pools and their pending jobs: no INSERT that fails
            pooling.pool_answers_changed(project.pk)
        assert list(PoolReprioritise.objects.values_list("pk", flat=True)) == [job.pk]
        assert queued.sent == []
        # The job starts DEBOUNCE_SECONDS after it was created: until a margin before that, no more reads.
        remaining = pooling._joined[project.pk] - time.monotonic()
        assert 0 < remaining <= pooling.JOIN_MEMO_SECONDS
        with django_assert_num_queries(0):
            pooling.pool_answers_changed(project.pk)

    def test_a_job_about_to_start_is_joined_without_a_memo(
        self, project: Project, runs: list[Run], queued: QueuedTasks, django_assert_num_queries: Any
    ) -> None:
        pool = built(project, runs, strategy="mtf", budget=10)
        job = PoolReprioritise.objects.create(pool=pool)
        # Created DEBOUNCE_SECONDS - 0.5 s ago: it may start within the margin, and would miss answers
        # this process passed over, so every answer asks again (one read each).
        since = timezone.now() - timedelta(seconds=pooling.DEBOUNCE_SECONDS - 0.5)
        PoolReprioritise.objects.filter(pk=job.pk).update(created_at=since)
        pooling._joined.clear()
        for _ in range(2):
            with django_assert_num_queries(1):
                pooling.pool_answers_changed(project.pk)
        assert pooling._joined == {} and PoolReprioritise.objects.count() == 1 and queued.sent == []
        # Once it started (no longer pending), the next answer queues the next job.
        PoolReprioritise.objects.filter(pk=job.pk).update(status="running")
        pooling.pool_answers_changed(project.pk)
        assert PoolReprioritise.objects.filter(status="pending").count() == 1
        assert [entry[0] for entry in queued.sent] == ["monitoring.tasks.pool_reprioritise"]

    def test_a_project_without_priorities_schedules_nothing_more_per_answer(
        self, lena: User, alice: User, django_capture_on_commit_callbacks: Any
    ) -> None:
        plain = build_project(lead=lena, annotators=[alice], topics=1, docs_per_topic=3, slug="plain")
        with django_capture_on_commit_callbacks() as plain_callbacks:
            judge(plain, alice, lambda task: 1, count=1)
        Project.objects.filter(pk=plain.pk).update(has_priorities=True)
        plain.refresh_from_db()
        with django_capture_on_commit_callbacks() as pooled_callbacks:
            judge(plain, alice, lambda task: 1, count=1)
        assert len(pooled_callbacks) == len(plain_callbacks) + 1


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestUnderLoad:
    def test_claims_keep_their_guarantees_while_the_pool_is_re_ordered(
        self, project: Project, runs: list[Run], annotators: Any, queued: QueuedTasks
    ) -> None:
        import threading

        from django.db import connection

        from tests.annotations.test_assignment import _run_threads, assert_counters_match

        people = annotators(6)
        for person in people:
            judging.membership_set(project=project, user=person, role="annotator")
        Project.objects.filter(pk=project.pk).update(overlap=2)
        pool = built(project, runs, strategy="mtf", budget=18)
        stop = threading.Event()
        errors: list[BaseException] = []
        barrier = threading.Barrier(len(people) + 1)

        def answer_until_empty(user_id: int) -> None:
            try:
                user = User.objects.get(pk=user_id)
                barrier.wait(timeout=30)
                while True:
                    fresh = Project.objects.get(pk=project.pk)  # as each request reads it
                    claim = judging.task_claim(project=fresh, annotator=user)
                    if claim.assignment is None:
                        break
                    grade = 3 if claim.assignment.task.document.doc_id.endswith(("-7", "-6", "-0")) else 0
                    judging.annotation_submit(
                        project=fresh, annotator=user, assignment_id=claim.assignment.pk, grade=grade
                    )
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)
            finally:
                connection.close()

        def reorder() -> None:
            try:
                barrier.wait(timeout=30)
                while not stop.is_set():
                    run_pending(pool)
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)
            finally:
                connection.close()

        reorderer = threading.Thread(target=reorder)
        reorderer.start()
        _run_threads(answer_until_empty, [(person.pk,) for person in people])
        stop.set()
        reorderer.join(timeout=60)
        assert errors == []
        rows = list(Assignment.objects.filter(project=project).values_list("task_id", "annotator_id"))
        assert len(rows) == len(set(rows)), "an annotator got a task twice"
        assert Task.objects.filter(project=project, label_count__gt=2).count() == 0
        assert_counters_match(project)
        # Whatever the last re-orderings added after the annotators left is judged on another pass.
        for _ in range(5):
            pool = reprioritise(pool)
            if pool.phase == "done":
                break
            fresh = Project.objects.get(pk=project.pk)
            for person in people:
                judge_all(fresh, person)
        # The budget stops the pool; pairs that were in flight when an order dropped them (at most one
        # reservation per annotator) are still answered, so it may be passed by that many.
        pool = reprioritise(pool)  # the figures follow the answers given after the budget was spent
        assert pool.phase == "done" and pool.pending == 0
        assert 18 <= pool.judged <= 18 + len(people)
        assert PoolReprioritise.objects.filter(status="failed").count() == 0


def has_priorities(project: Project) -> bool:
    return Project.objects.values_list("has_priorities", flat=True).get(pk=project.pk)


@pytest.mark.django_db
class TestPrioritiesEnd:
    def test_a_spent_budget_clears_has_priorities_once_its_last_pairs_are_answered(
        self, project: Project, runs: list[Run], alice: User
    ) -> None:
        pool = built(project, runs, strategy="mtf", budget=5)
        assert has_priorities(project)
        judge(project, alice, lambda task: 2, count=4)
        assert reprioritise(pool).phase == "judging" and has_priorities(project)
        judge(project, alice, lambda task: 0, count=1)
        assert reprioritise(pool).phase == "done"
        assert not has_priorities(project)  # the claim's plain path again
        assert not Task.objects.filter(project=project, priority__isnull=False, label_count=0).exists()

    def test_a_pair_in_flight_keeps_it_until_answered(
        self, project: Project, runs: list[Run], alice: User, bob: User
    ) -> None:
        pool = built(project, runs, strategy="depth", budget=3)
        held = judging.task_claim(project=project, annotator=bob).assignment
        assert held is not None and held.task.priority is not None
        judge(project, alice, lambda task: 1, count=2)
        # A pooled pair outside the order, judged in the ordinary way: the budget is spent.
        Task.objects.create(
            project=project, topic=project.topics.get(qid="q0"), document=project.documents.get(doc_id="d0-3")
        )
        judge(project, alice, lambda task: 1, count=1)
        assert reprioritise(pool).phase == "done" and has_priorities(project)  # bob's pair is pending
        judging.annotation_submit(project=project, annotator=bob, assignment_id=held.pk, grade=0)
        reprioritise(pool)
        assert not has_priorities(project)

    def test_deleting_the_pool_drops_its_unstarted_tasks_keeps_the_answers_and_clears_priorities(
        self, project: Project, runs: list[Run], alice: User
    ) -> None:
        pool = built(project, runs, strategy="take-rrf", budget=9)
        answered = judge(project, alice, lambda task: 1, count=2)
        reprioritise(pool)
        created = set(PoolTask.objects.filter(pool=pool, created=True).values_list("task_id", flat=True))
        assert len(created) == 9
        assert pooling.pool_delete(pool=pool) == 7
        assert set(Task.objects.filter(project=project).values_list("pk", flat=True)) == {
            task.pk for task in answered
        }
        assert not JudgingPool.objects.filter(pk=pool.pk).exists() and not has_priorities(project)
        assert judging.task_claim(project=project, annotator=alice).status == "empty"
        # The project may pool again.
        again = built(project, runs, strategy="depth", budget=4)
        assert again.phase == "judging" and has_priorities(project)

    def test_the_gaps_lose_their_urgency_with_the_last_pool_only(
        self, project: Project, runs: list[Run]
    ) -> None:
        pool = built(project, runs, strategy="depth", budget=3)
        outside = Task.objects.create(
            project=project, topic=project.topics.get(qid="q2"), document=project.documents.get(doc_id="d2-7"),
            priority=pooling.URGENT_PRIORITY,
        )  # fmt: skip
        done = JudgingPool.objects.create(team=pool.team, project=project, strategy="depth", stage="done")
        pooling.pool_delete(pool=done)  # another pool remains: the gaps keep theirs
        assert Task.objects.get(pk=outside.pk).priority == pooling.URGENT_PRIORITY and has_priorities(project)
        pooling.pool_delete(pool=pool)
        assert Task.objects.get(pk=outside.pk).priority is None and not has_priorities(project)


@pytest.mark.django_db
class TestOnePoolAtATime:
    def test_it_refuses_a_second_pool_while_one_judges_and_says_why(
        self, project: Project, runs: list[Run], alice: User
    ) -> None:
        pool = built(project, runs, strategy="mtf", budget=4)
        with pytest.raises(InputError, match=rf"Pool #{pool.pk} \(mtf\) of this project is still judging"):
            pooling.pool_create(project=project, runs=runs, strategy="depth", budget=3)
        judge(project, alice, lambda task: 1, count=4)
        assert reprioritise(pool).phase == "done"
        second = built(project, runs, strategy="depth", budget=6)  # a spent budget lets the next one in
        assert second.phase == "judging"

    def test_an_undo_in_a_finished_pool_leaves_the_newer_pools_order_alone(
        self, project: Project, runs: list[Run], alice: User
    ) -> None:
        older = built(project, [runs[0]], strategy="depth", budget=3, depth=3)  # d{q}-0 and d{q}-1
        judge(project, alice, lambda task: 1, count=3)
        assert reprioritise(older).phase == "done" and not has_priorities(project)
        newer = built(project, [runs[1]], strategy="depth", budget=4, depth=2)  # d{q}-7 and d{q}-6
        theirs = prioritised(project)
        assert len(theirs) == 4 and all(doc[-1] in "67" for _, doc in theirs)
        # alice takes her last answer back (a pair of the older pool) and leaves it.
        reopened = judging.annotation_undo(project=project, annotator=alice).task
        judging.reservations_release_held(project=project, annotator=alice)
        older = reprioritise(older)
        assert older.phase == "done" and (older.judged, older.pending) == (2, 1)  # its figures follow
        assert (
            Task.objects.get(pk=reopened.pk).priority is None
        )  # served in the plain order, after the newer's
        assert prioritised(project) == theirs and pooling.ordering_pool(project_id=project.pk) == newer
        assert reprioritise(newer).phase == "judging" and prioritised(project) == theirs
        with pytest.raises(InputError, match=rf"Pool #{newer.pk} \(depth\)"):
            pooling.pool_create(project=project, runs=runs, strategy="depth", budget=3)
        # Without the newer pool, the older one orders again: the re-opened pair is its to serve.
        pooling.pool_delete(pool=newer)
        assert reprioritise(older).phase == "judging"
        assert prioritised(project) == [(reopened.topic.qid, reopened.document.doc_id)]

    def test_a_pool_still_building_blocks_too_and_a_failed_one_does_not(
        self, project: Project, runs: list[Run]
    ) -> None:
        building = pooling.pool_create(project=project, runs=runs, strategy="depth", budget=3, enqueue=False)
        with pytest.raises(InputError, match="still building"):
            pooling.pool_create(project=project, runs=runs, strategy="depth", budget=3, enqueue=False)
        JudgingPool.objects.filter(pk=building.pk).update(status="failed")
        assert pooling.pool_create(project=project, runs=runs, strategy="depth", budget=3, enqueue=False)

    def test_the_page_and_the_api_refuse_it_and_delete_a_pool(
        self, project: Project, runs: list[Run], lena: User, theo: User
    ) -> None:
        from annotations import services as project_services
        from annotations.models import ProjectMembership
        from monitoring.pooling.selectors import may_pool  # noqa: F401 - theo leads and edits the team
        from tests.monitoring.test_judging_loop import signed_in

        project_services.membership_set(project=project, user=theo, role=ProjectMembership.Role.LEAD)
        pool = built(project, runs, strategy="mtf", budget=4)
        client = signed_in(theo)
        body = {"runs": [runs[0].pk], "strategy": "depth", "budget": 3, "depth": 10, "seed": 0}
        page = client.post(f"/projects/{project.slug}/pools/", body)
        assert page.status_code == 400, page.content.decode()
        assert "a project judges one pool at a time" in page.content.decode()
        api = client.post(f"/api/projects/{project.slug}/pools/", body, content_type="application/json")
        assert api.status_code == 400 and "one pool at a time" in api.json()["non_field_errors"][0]
        response = client.post(f"/projects/{project.slug}/pools/{pool.pk}/delete/")
        assert response.status_code == 302 and response["Location"] == f"/projects/{project.slug}/pools/"
        assert not JudgingPool.objects.exists() and not has_priorities(project)
        other = built(project, runs, strategy="depth", budget=3)
        assert client.delete(f"/api/projects/{project.slug}/pools/{other.pk}/").status_code == 204
        assert not JudgingPool.objects.exists() and not Task.objects.filter(project=project).exists()
