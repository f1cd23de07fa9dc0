"""A qrels build whose worker is killed mid-build is taken up again by beat and stored exactly once.

Production settings, short: the build's lease is 3 s (renewed while it runs), Redis's visibility timeout
is left at its default (over an hour, so Redis's own redelivery cannot be what rescues the job), and a
real `celery beat` runs the `requeue-stale-jobs` entry every 2 s. The worker is frozen (SIGSTOP) the moment
the build is claimed, so the kill lands mid-build, then killed (SIGKILL); a new worker is started.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.contrib.auth.models import User

from annotations import qrels
from annotations import tasks as annotation_tasks
from annotations.models import QrelsBuild, QrelsJudgment, Task
from tests.annotations.conftest import build_project, record_answers
from tests.conftest import WorkerProcess, start_beat, stop_process_group
from tests.monitoring.test_redelivery import Workers, forget_queue, wait_until

LEASE_SECONDS = 3
REQUEUE_SECONDS = 2
DEADLINE_SECONDS = 300  # the bound: a killed worker's build is done within five minutes


@pytest.fixture
def workers(live_services: None, tmp_path: Path, media_root: Path) -> Iterator[Workers]:
    pool = Workers(
        tmp_path,
        media_root,
        f"qrels-kill-{uuid.uuid4().hex[:8]}",
        JOB_LEASE_SECONDS=str(LEASE_SECONDS),
        CELERY_VISIBILITY_TIMEOUT=str(settings.CELERY_VISIBILITY_TIMEOUT),
    )
    try:
        yield pool
    finally:
        pool.stop_all()
        forget_queue(pool.queue)


@pytest.fixture
def beat(tmp_path: Path) -> Iterator[WorkerProcess]:
    process = start_beat(
        tmp_path, JOBS_REQUEUE_SECONDS=str(REQUEUE_SECONDS), JOB_LEASE_SECONDS=str(LEASE_SECONDS)
    )
    try:
        yield process
    finally:
        stop_process_group(process.process)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_killed_workers_build_is_requeued_and_stored_once(
    workers: Workers, beat: WorkerProcess, lena: User, annotators
) -> None:  # type: ignore[no-untyped-def]
    people = annotators(3)
    project = build_project(lead=lena, annotators=people, topics=20, docs_per_topic=250, gold_per_topic=5)
    rng = np.random.default_rng(7)
    task_list = list(Task.objects.filter(project=project).order_by("pk"))
    # Reliable annotators (gold answered right: grade 3) who mostly agree within one grade.
    base = rng.integers(0, 4, size=(len(task_list), 1))
    grades = np.where(
        [[task.is_gold] for task in task_list], 3, base + rng.integers(0, 2, size=(1, len(people)))
    )
    grades = grades.tolist()
    record_answers(
        project,
        [
            (person, task, row[i])
            for task, row in zip(task_list, grades, strict=True)
            for i, person in enumerate(people)
        ],
    )
    build = qrels.qrels_build_create(project=project, created_by=lena, enqueue=False)
    job = QrelsBuild.objects.filter(pk=build.pk)

    def logs() -> str:
        return f"{workers.logs()}\n--- beat\n{beat.log()[-3000:]}"

    first = workers.start()
    annotation_tasks.qrels_build.apply_async((build.pk,), queue=workers.queue)
    assert wait_until(lambda: job.filter(status="running").exists(), timeout=60, every=0.005), logs()
    workers.stop(first)
    frozen = job.get()
    assert (frozen.status, frozen.attempts) == ("running", 1), f"done before the kill:\n{logs()}"
    workers.kill(first)
    killed_at = time.monotonic()
    assert not QrelsJudgment.objects.filter(build=build).exists()

    workers.start(queues=f"default,heavy,{workers.queue}")  # beat's requeue task runs on default
    assert wait_until(lambda: job.get().is_finished, timeout=DEADLINE_SECONDS, every=0.2), logs()
    recovered = time.monotonic() - killed_at

    done = job.get()
    assert (done.status, done.attempts, done.error) == ("done", 2, ""), logs()
    assert recovered < DEADLINE_SECONDS
    # Exactly once: the same judgments as a build computed here in one go, one row per pair.
    again = qrels.qrels_build_create(project=project, created_by=lena, enqueue=False)
    assert qrels.qrels_build_run(build_id=again.pk).status == "done"
    again.refresh_from_db()
    assert done.content_hash == again.content_hash and done.pairs_kept == again.pairs_kept > 0
    rows = QrelsJudgment.objects.filter(build=build)
    assert rows.count() == again.pairs_kept == rows.values("qid", "doc_id").distinct().count()
    print(f"[qrels redelivery] done {recovered:.1f} s after the kill")  # shown with -s
