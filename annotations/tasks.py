"""Celery tasks of the annotations app: adapters that take ids, call one service and own the retry policy.

Both run on the `heavy` queue (`CELERY_TASK_ROUTES` in settings). They are safe to run twice and after a
lost worker (acks_late with re-delivery): each claims its work with a conditional UPDATE on a lease, and a
task that finds the lease held by a live run retries once that lease would lapse.
"""

from __future__ import annotations

from celery import Task, shared_task

from annotations import qrels, quality


@shared_task(
    bind=True,
    name="annotations.tasks.quality_recompute",
    max_retries=20,
    time_limit=int(quality.RUNNING_LEASE.total_seconds()) - 5 * 60,
    soft_time_limit=int(quality.RUNNING_LEASE.total_seconds()) - 6 * 60,
)
def quality_recompute(self: Task, project_id: int) -> str:
    outcome = quality.quality_snapshot_refresh(project_id=project_id)
    if outcome == "busy":
        wait = quality.quality_lease_busy_for(project_id=project_id)
        raise self.retry(countdown=min(60.0, max(5.0, wait)))
    return outcome


@shared_task(
    bind=True,
    name="annotations.tasks.qrels_build",
    max_retries=10,
    time_limit=qrels.BUILD_TIME_LIMIT,
    soft_time_limit=qrels.BUILD_TIME_LIMIT - 60,
)
def qrels_build(self: Task, build_id: int) -> str:
    outcome = qrels.qrels_build_run(build_id=build_id)
    if outcome.status == "busy":
        raise self.retry(countdown=outcome.retry_in)
    return outcome.status
