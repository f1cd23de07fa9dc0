"""Evaluation jobs, monitors and alerts (see PRODUCT.md §2-3)."""

from __future__ import annotations

from datetime import timedelta

from django.db import models
from django.utils import timezone


class WorkerHeartbeat(models.Model):
    """The last time each Celery worker ran the scheduled heartbeat task. One row per worker."""

    hostname = models.CharField(max_length=255, unique=True)
    last_seen = models.DateTimeField()
    beats = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-last_seen"]

    def __str__(self) -> str:
        return f"{self.hostname} @ {self.last_seen:%Y-%m-%d %H:%M:%S}"

    def is_fresh(self, *, within: timedelta = timedelta(minutes=3)) -> bool:
        return timezone.now() - self.last_seen <= within
