"""Celery tasks of the monitoring app: adapters that take a job's id, call one service and declare the retry
policy (`evalplatform.jobs.JOB_TASK_OPTIONS`). They run on the `heavy` queue (`CELERY_TASK_ROUTES`), but for
notifications, which go to their own `notifications` queue: a long job never holds an alert back, and a slow
webhook never holds a monitor run back."""

from __future__ import annotations

from celery import Task, shared_task

from evalplatform.jobs import JOB_TASK_OPTIONS, job_task_result
from monitoring.alerts import notifications
from monitoring.alerts import services as alerts
from monitoring.embeddings import services as monitors
from monitoring.evaluations import loop
from monitoring.evaluations import services as evaluations
from monitoring.fusion import services as fusions
from monitoring.machine_judges import services as machine_judges
from monitoring.pooling import planner
from monitoring.pooling import services as pooling
from monitoring.recsys_fraud import comparisons as recsys_fraud_comparisons
from monitoring.recsys_fraud import services as recsys_fraud
from monitoring.reuse import services as reuse


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
    name="monitoring.tasks.fusion_run",
    time_limit=fusions.TIME_LIMIT,
    soft_time_limit=fusions.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def fusion_run(self: Task, fusion_id: int) -> str:
    return job_task_result(self, fusions.fusion_run(fusion_id=fusion_id))


@shared_task(
    name="monitoring.tasks.machine_judge_evaluation_run",
    time_limit=machine_judges.TIME_LIMIT,
    soft_time_limit=machine_judges.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def machine_judge_evaluation_run(self: Task, job_id: int) -> str:
    """A leaderboard scored on a machine judge's labels (`machine_judges.machine_judge_evaluation_run`)."""
    return job_task_result(self, machine_judges.machine_judge_evaluation_run(job_id=job_id))


@shared_task(
    name="monitoring.tasks.qrels_build_rescore", time_limit=300, soft_time_limit=240, **JOB_TASK_OPTIONS
)
def qrels_build_rescore(self: Task, build_id: int) -> int:
    """A linked team's runs re-scored on a new qrels version (`loop.qrels_build_rescore`; idempotent)."""
    return len(loop.qrels_build_rescore(build_id=build_id))


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


@shared_task(
    name="monitoring.tasks.fraud_comparison_run",
    time_limit=recsys_fraud.TIME_LIMIT,
    soft_time_limit=recsys_fraud.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def fraud_comparison_run(self: Task, comparison_id: int) -> str:
    return job_task_result(self, recsys_fraud_comparisons.fraud_comparison_run(comparison_id=comparison_id))


@shared_task(
    name="monitoring.tasks.recommendation_comparison_run",
    time_limit=recsys_fraud.TIME_LIMIT,
    soft_time_limit=recsys_fraud.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def recommendation_comparison_run(self: Task, comparison_id: int) -> str:
    return job_task_result(
        self, recsys_fraud_comparisons.recommendation_comparison_run(comparison_id=comparison_id)
    )


@shared_task(
    name="monitoring.tasks.notification_send",
    time_limit=120,
    soft_time_limit=100,
    **{
        **JOB_TASK_OPTIONS,
        "autoretry_for": (*JOB_TASK_OPTIONS["autoretry_for"], notifications.DeliveryError),
    },
)
def notification_send(self: Task, notification_id: int) -> str:
    return job_task_result(self, notifications.notification_send(notification_id=notification_id))


def _queue_of(task: Task) -> str | None:
    """The queue this task came from: a monitor run's chord goes to the same one."""
    return (task.request.delivery_info or {}).get("routing_key") or None


@shared_task(
    name="monitoring.tasks.monitor_run",
    time_limit=monitors.TIME_LIMIT,
    soft_time_limit=monitors.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def monitor_run(self: Task, run_id: int) -> str:
    outcome = monitors.monitor_run(run_id=run_id, queue=_queue_of(self))
    if isinstance(outcome, monitors.Split):
        return f"split into {outcome.chunks} chunks"
    return job_task_result(self, outcome)


@shared_task(
    name="monitoring.tasks.monitor_chunk",
    time_limit=monitors.TIME_LIMIT,
    soft_time_limit=monitors.TIME_LIMIT - 60,
    ignore_result=False,  # the chord's callback receives every chunk's result
    **JOB_TASK_OPTIONS,
)
def monitor_chunk(self: Task, run_id: int, token: str, start: int, stop: int) -> str | None:
    return monitors.monitor_chunk(run_id=run_id, token=token, start=start, stop=stop)


@shared_task(
    name="monitoring.tasks.monitor_merge",
    time_limit=monitors.TIME_LIMIT,
    soft_time_limit=monitors.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def monitor_merge(self: Task, names: list[str | None], run_id: int, token: str) -> str:
    return monitors.monitor_merge(run_id=run_id, token=token, names=names).status


@shared_task(
    name="monitoring.tasks.stream_tick",
    time_limit=120,
    soft_time_limit=100,
    **JOB_TASK_OPTIONS,
)
def stream_tick(self: Task, stream_id: int) -> int:
    """Beat's task for a stream's schedule: queue a monitor run for each snapshot that has none."""
    return len(monitors.stream_tick(stream_id=stream_id))


@shared_task(
    name="monitoring.tasks.alerts_check_series", time_limit=300, soft_time_limit=240, **JOB_TASK_OPTIONS
)
def alerts_check_series(self: Task, series_id: int, job_type: str, job_id: int) -> int:
    """Check the alert rules of a series a job just wrote values into (`alerts.series_observed` queues it)."""
    return len(alerts.alerts_check_series(series_id=series_id, job_type=job_type, job_id=job_id))


@shared_task(
    name="monitoring.tasks.gaps_request_run", time_limit=600, soft_time_limit=540, **JOB_TASK_OPTIONS
)
def gaps_request_run(self: Task, request_id: int) -> str:
    """ "Judge the gaps" of a run (`loop.gaps_request_run`): reads the run and the qrels, adds the tasks."""
    return job_task_result(self, loop.gaps_request_run(request_id=request_id))


@shared_task(
    name="monitoring.tasks.reuse_analysis_run",
    time_limit=reuse.TIME_LIMIT,
    soft_time_limit=reuse.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def reuse_analysis_run(self: Task, analysis_id: int) -> str:
    return job_task_result(self, reuse.reuse_analysis_run(analysis_id=analysis_id))


@shared_task(
    name="monitoring.tasks.pool_build",
    time_limit=pooling.TIME_LIMIT,
    soft_time_limit=pooling.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def pool_build(self: Task, pool_id: int) -> str:
    return job_task_result(self, pooling.pool_build_run(pool_id=pool_id))


@shared_task(
    name="monitoring.tasks.pool_reprioritise",
    time_limit=pooling.TIME_LIMIT,
    soft_time_limit=pooling.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def pool_reprioritise(self: Task, job_id: int) -> str:
    return job_task_result(self, pooling.pool_reprioritise_run(job_id=job_id))


@shared_task(
    name="monitoring.tasks.pool_simulations_refresh",
    time_limit=pooling.TIME_LIMIT,
    soft_time_limit=pooling.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def pool_simulations_refresh(self: Task, build_id: int) -> int:
    """The planner's simulation of a project's pools on its new qrels version (idempotent)."""
    return len(planner.pool_simulations_refresh(build_id=build_id))


@shared_task(
    name="monitoring.tasks.pool_simulate",
    time_limit=pooling.TIME_LIMIT,
    soft_time_limit=pooling.TIME_LIMIT - 60,
    **JOB_TASK_OPTIONS,
)
def pool_simulate(self: Task, pool_id: int) -> bool:
    """The planner's simulation of one pool again, by the measure its lead chose (idempotent)."""
    return planner.pool_simulate_task(pool_id=pool_id)
