"""Celery tasks of the monitoring app: adapters that take a job's id, call one service and declare the retry
policy (`evalplatform.jobs.JOB_TASK_OPTIONS`). They run on the `heavy` queue (`CELERY_TASK_ROUTES`)."""

from __future__ import annotations

from celery import Task, shared_task

from evalplatform.jobs import JOB_TASK_OPTIONS, job_task_result
from monitoring import evaluations, recsys_fraud


@shared_task(
    name="monitoring.tasks.evaluation_run",
    time_limit=evaluations.TIME_LIMIT,
    soft_time_limit=evaluations.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def evaluation_run(self: Task, evaluation_id: int) -> str:
    return job_task_result(self, evaluations.evaluation_run(evaluation_id=evaluation_id))


@shared_task(
    name="monitoring.tasks.comparison_run",
    time_limit=evaluations.TIME_LIMIT,
    soft_time_limit=evaluations.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def comparison_run(self: Task, comparison_id: int) -> str:
    return job_task_result(self, evaluations.comparison_run(comparison_id=comparison_id))


@shared_task(
    name="monitoring.tasks.recommendation_evaluation_run",
    time_limit=recsys_fraud.TIME_LIMIT,
    soft_time_limit=recsys_fraud.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def recommendation_evaluation_run(self: Task, evaluation_id: int) -> str:
    return job_task_result(self, recsys_fraud.recommendation_evaluation_run(evaluation_id=evaluation_id))


@shared_task(
    name="monitoring.tasks.fraud_evaluation_run",
    time_limit=recsys_fraud.TIME_LIMIT,
    soft_time_limit=recsys_fraud.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def fraud_evaluation_run(self: Task, evaluation_id: int) -> str:
    return job_task_result(self, recsys_fraud.fraud_evaluation_run(evaluation_id=evaluation_id))
