"""Celery tasks of the platform. Each takes ids or plain values and calls one function."""

from __future__ import annotations

from celery import Task, shared_task

from evalplatform.models import WorkerHeartbeat


@shared_task(bind=True, name="evalplatform.tasks.record_heartbeat", time_limit=30, soft_time_limit=20)
def record_heartbeat(self: Task) -> str:
    hostname = self.request.hostname or "unknown"
    WorkerHeartbeat.objects.record(hostname=hostname)
    return hostname
