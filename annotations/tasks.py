"""Celery tasks of the annotations app: adapters that take a job's id, call one service and declare the
retry policy (`evalplatform.jobs.JOB_TASK_OPTIONS`).

All run on the `heavy` queue (`CELERY_TASK_ROUTES` in settings). They are safe to run twice and after a
lost worker (acks_late with re-delivery): each claims its job with a conditional UPDATE on a lease, and a
task that finds the job held by a live run retries once that lease would lapse.
"""

from __future__ import annotations

from celery import Task, shared_task

from annotations import imports, qrels
from annotations.machine_judges import imports as machine_imports
from annotations.machine_judges import llm
from annotations.quality import services as quality
from evalplatform.jobs import JOB_TASK_OPTIONS, job_task_result


@shared_task(
    name="annotations.tasks.quality_recompute",
    time_limit=quality.TIME_LIMIT,
    soft_time_limit=quality.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def quality_recompute(self: Task, job_id: int) -> str:
    return job_task_result(self, quality.quality_recompute_run(job_id=job_id))


@shared_task(
    name="annotations.tasks.qrels_build",
    time_limit=qrels.BUILD_TIME_LIMIT,
    soft_time_limit=qrels.BUILD_TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def qrels_build(self: Task, build_id: int) -> str:
    return job_task_result(self, qrels.qrels_build_run(build_id=build_id))


@shared_task(
    name="annotations.tasks.import_run",
    time_limit=imports.IMPORT_TIME_LIMIT,
    soft_time_limit=imports.IMPORT_TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def import_run(self: Task, job_id: int) -> str:
    return job_task_result(self, imports.import_job_run(job_id=job_id))


@shared_task(
    name="annotations.tasks.llm_judge_run",
    time_limit=llm.TIME_LIMIT,
    soft_time_limit=llm.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def llm_judge_run(self: Task, job_id: int) -> str:
    return job_task_result(self, llm.llm_judge_run(job_id=job_id))


@shared_task(
    name="annotations.tasks.machine_judge_import",
    time_limit=machine_imports.TIME_LIMIT,
    soft_time_limit=machine_imports.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def machine_judge_import(self: Task, job_id: int) -> str:
    return job_task_result(self, machine_imports.judge_import_run(job_id=job_id))
