"""The worker heartbeat: beat schedules a task, a real worker process runs it through Redis and writes one
row per worker to PostgreSQL, and /healthz reads the fresh rows."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from evalplatform.celery import app
from evalplatform.models import WorkerHeartbeat, heartbeat_fresh_for, heartbeat_interval
from evalplatform.tasks import record_heartbeat
from tests.conftest import ROOT, WorkerProcess, _database_url_for


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestCeleryRoundTrip:
    def test_it_runs_a_task_in_the_worker_process_and_stores_the_result(
        self, celery_worker_process: WorkerProcess
    ) -> None:
        WorkerHeartbeat.objects.all().delete()  # the row the worker wrote when it became ready
        result = record_heartbeat.delay()
        assert wait_for(
            lambda: WorkerHeartbeat.objects.filter(hostname=celery_worker_process.hostname).exists()
        ), celery_worker_process.log()
        beat = WorkerHeartbeat.objects.get(hostname=celery_worker_process.hostname)
        assert beat.beats == 1
        assert beat.is_fresh()
        assert result.id in celery_worker_process.log()

    def test_it_keeps_one_row_per_worker_when_run_again(self, celery_worker_process: WorkerProcess) -> None:
        WorkerHeartbeat.objects.all().delete()
        for _ in range(3):
            record_heartbeat.delay()
        assert wait_for(
            lambda: WorkerHeartbeat.objects.filter(hostname=celery_worker_process.hostname, beats=3).exists()
        ), celery_worker_process.log()
        assert WorkerHeartbeat.objects.filter(hostname=celery_worker_process.hostname).count() == 1


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestWorkerLifecycle:
    def test_it_records_a_worker_when_it_is_ready_and_forgets_it_when_it_stops(
        self, live_services: None, tmp_path: Path
    ) -> None:
        hostname = f"pytest-lifecycle-{uuid.uuid4().hex[:8]}@localhost"
        command = [sys.executable, "-m", "celery", "-A", "evalplatform", "worker", "-Q", "lifecycle-only",
                   "--concurrency", "1", "--hostname", hostname, "--without-mingle", "--without-gossip"]  # fmt: skip
        env = {**os.environ, "DATABASE_URL": _database_url_for(connection.settings_dict)}
        with (tmp_path / "worker.log").open("wb") as log:
            worker = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            assert wait_for(lambda: WorkerHeartbeat.objects.filter(hostname=hostname).exists(), timeout=60), (
                tmp_path / "worker.log"
            ).read_text()
            assert WorkerHeartbeat.objects.fresh().filter(hostname=hostname).exists()
            worker.terminate()  # SIGTERM: Celery's warm shutdown
            assert worker.wait(timeout=30) == 0
            assert not WorkerHeartbeat.objects.filter(hostname=hostname).exists()
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()


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
