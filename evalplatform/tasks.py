"""Celery tasks of the platform. Each takes ids or plain values and calls one function.

The worker heartbeat is also written when a worker becomes ready and removed when it stops cleanly, so
/healthz sees a worker from its first second rather than after beat's first heartbeat, and sees a stopped
worker as down at once rather than when its last heartbeat goes stale.
"""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from celery.signals import worker_ready, worker_shutdown

from evalplatform.jobs import jobs_requeue_stale
from evalplatform.models import WorkerHeartbeat
from evalplatform.sessions import SessionStore


@shared_task(bind=True, name="evalplatform.tasks.record_heartbeat", time_limit=30, soft_time_limit=20)
def record_heartbeat(self: Task) -> str:
    hostname = self.request.hostname or "unknown"
    WorkerHeartbeat.objects.record(hostname=hostname)
    return hostname


@worker_ready.connect
def record_heartbeat_when_ready(sender: Any, **kwargs: Any) -> None:
    WorkerHeartbeat.objects.record(hostname=sender.hostname)


@worker_shutdown.connect
def forget_heartbeat_on_shutdown(sender: Any, **kwargs: Any) -> None:
    WorkerHeartbeat.objects.filter(hostname=sender.hostname).delete()


@shared_task(name="evalplatform.tasks.requeue_stale_jobs", time_limit=120, soft_time_limit=100)
def requeue_stale_jobs() -> int:
    return jobs_requeue_stale()


@shared_task(name="evalplatform.tasks.sessions_clear_expired", time_limit=600, soft_time_limit=540)
def sessions_clear_expired() -> None:
    """Delete expired sessions (what `manage.py clearsessions` does), daily by beat."""
    SessionStore.clear_expired()
