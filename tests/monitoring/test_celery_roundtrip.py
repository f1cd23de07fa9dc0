"""A task goes through Redis to a real worker process, which writes to PostgreSQL."""

from __future__ import annotations

import time

import pytest

from monitoring.models import WorkerHeartbeat
from monitoring.services import heartbeat_record
from monitoring.tasks import record_heartbeat
from tests.conftest import WorkerProcess


def wait_for(predicate, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
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
class TestHeartbeatService:
    def test_it_counts_beats_on_one_row(self) -> None:
        heartbeat_record(hostname="w1@host")
        beat = heartbeat_record(hostname="w1@host")
        assert beat.beats == 2
        assert WorkerHeartbeat.objects.count() == 1
