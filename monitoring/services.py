"""Write-side operations of the monitoring app."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from monitoring.models import WorkerHeartbeat


@transaction.atomic
def heartbeat_record(*, hostname: str) -> WorkerHeartbeat:
    """Record that ``hostname`` is alive. Safe to run any number of times: one row per worker."""
    now = timezone.now()
    beat, created = WorkerHeartbeat.objects.get_or_create(
        hostname=hostname, defaults={"last_seen": now, "beats": 1}
    )
    if not created:
        WorkerHeartbeat.objects.filter(pk=beat.pk).update(last_seen=now, beats=F("beats") + 1)
        beat.refresh_from_db()
    return beat
