"""The worker heartbeat: beat schedules a task, a real worker process runs it through Redis and writes one
row per worker to PostgreSQL, and /healthz reads the fresh rows."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from evalplatform.celery import app
from evalplatform.models import WorkerHeartbeat, heartbeat_fresh_for, heartbeat_interval
from evalplatform.tasks import record_heartbeat
from tests.conftest import WorkerProcess


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestCeleryRoundTrip:
    def test_it_runs_a_task_in_the_worker_process_and_stores_the_result(
        self, celery_worker_process: WorkerProcess
    ) -> None:
        result = record_heartbeat.delay()
        assert wait_for(
            lambda: WorkerHeartbeat.objects.filter(hostname=celery_worker_process.hostname).exists()
        ), celery_worker_process.log()
        beat = WorkerHeartbeat.objects.get(hostname=celery_worker_process.hostname)
        assert beat.beats == 1
        assert beat.is_fresh()
        assert result.id in celery_worker_process.log()

    def test_it_keeps_one_row_per_worker_when_run_again(self, celery_worker_process: WorkerProcess) -> None:
        for _ in range(3):
            record_heartbeat.delay()
        assert wait_for(
            lambda: WorkerHeartbeat.objects.filter(hostname=celery_worker_process.hostname, beats=3).exists()
        ), celery_worker_process.log()
        assert WorkerHeartbeat.objects.filter(hostname=celery_worker_process.hostname).count() == 1


@pytest.mark.django_db
class TestHeartbeat:
    def test_it_counts_beats_on_one_row(self) -> None:
        WorkerHeartbeat.objects.record(hostname="w1@host")
        beat = WorkerHeartbeat.objects.record(hostname="w1@host")
        assert beat.beats == 2
        assert WorkerHeartbeat.objects.count() == 1

    def test_it_is_fresh_for_three_beat_intervals(self) -> None:
        assert heartbeat_fresh_for() == 3 * heartbeat_interval() == timedelta(minutes=3)
        now = timezone.now()
        WorkerHeartbeat.objects.create(hostname="recent@host", last_seen=now - timedelta(minutes=2))
        WorkerHeartbeat.objects.create(hostname="gone@host", last_seen=now - timedelta(minutes=4))
        assert list(WorkerHeartbeat.objects.fresh().values_list("hostname", flat=True)) == ["recent@host"]
        assert [beat.is_fresh() for beat in WorkerHeartbeat.objects.order_by("hostname")] == [False, True]

    def test_it_is_scheduled_by_beat_and_lives_in_evalplatform(self) -> None:
        entry = settings.CELERY_BEAT_SCHEDULE["worker-heartbeat"]
        assert entry["task"] == record_heartbeat.name == "evalplatform.tasks.record_heartbeat"
        assert record_heartbeat.name in app.tasks
        assert WorkerHeartbeat._meta.db_table == "evalplatform_workerheartbeat"
