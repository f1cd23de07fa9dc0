"""Celery tasks of the monitoring app. Each takes ids or plain values and calls one service."""

from __future__ import annotations

from celery import Task, shared_task

from monitoring import services


@shared_task(bind=True, name="monitoring.tasks.record_heartbeat", time_limit=30, soft_time_limit=20)
def record_heartbeat(self: Task) -> str:
    hostname = self.request.hostname or "unknown"
    services.heartbeat_record(hostname=hostname)
    return hostname
