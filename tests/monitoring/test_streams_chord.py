"""A snapshot too big for one task is split over workers: a Celery chord (Redis as broker and result backend)
of chunk tasks, each summarising a row range, and a callback that merges them. Its values equal the single
task's; a lost chord is recovered by the stale-job sweep, and the lost chord's chunks are dropped.

The split test runs its own worker process (two pool processes, so chunks run side by side) on a queue of
its own; the recovery test uses the session's worker on the usual queues.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.db import connection

from evalplatform.jobs import jobs_requeue_stale
from evalplatform.models import Team
from monitoring import tasks
from monitoring.embeddings import services as monitors
from monitoring.models import EmbeddingStream, MonitorRun
from tests.conftest import ROOT, WorkerProcess, _database_url_for, stop_process_group
from tests.monitoring.test_streams import embeddings, make_stream, npy_upload, values_of

CHUNK_ROWS = 1000


def wait_until(predicate: Callable[[], bool], *, timeout: float, every: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False


@pytest.fixture
def chord_worker(
    live_services: None, tmp_path: Path, media_root: Path
) -> Iterator[tuple[WorkerProcess, str]]:
    """A real `celery worker` with two pool processes on a queue of this test's own."""
    from evalplatform.celery import app

    queue = f"chord-{uuid.uuid4().hex[:8]}"
    hostname = f"{queue}@localhost"
    log_path = tmp_path / "worker.log"
    env = {
        **os.environ,
        "DATABASE_URL": _database_url_for(connection.settings_dict),
        "MEDIA_ROOT": str(media_root),
    }
    command = [sys.executable, "-m", "celery", "-A", "evalplatform", "worker", "-Q", queue, "--concurrency", "2",
               "--hostname", hostname, "--without-mingle", "--without-gossip", "--loglevel", "info"]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    worker = WorkerProcess(hostname, process, log_path)
    try:
        ready = wait_until(
            lambda: process.poll() is not None or bool(app.control.ping(destination=[hostname], timeout=0.5)),
            timeout=60,
            every=0,
        )
        assert ready and process.poll() is None, f"the worker did not start:\n{worker.log()}"
        yield worker, queue
    finally:
        stop_process_group(process)
        with app.connection_for_write() as broker:
            broker.default_channel.queue_delete(queue)


def stream_with_snapshots(
    team: Team, slug: str, current: np.ndarray
) -> tuple[EmbeddingStream, list[MonitorRun]]:
    """A stream with a reference (1,500 rows) and one snapshot; their runs created, not queued."""
    stream = make_stream(team, slug=slug)
    reference = monitors.snapshot_upload(
        stream=stream, upload=npy_upload(embeddings(1500, seed=1), "ref.npy")
    )
    monitors.stream_reference_set(stream=stream, snapshot=reference, enqueue=False)
    monitors.snapshot_upload(stream=stream, upload=npy_upload(current, "big.npy"))
    return stream, [
        MonitorRun.objects.get(snapshot=reference),
        *monitors.stream_tick(stream_id=stream.pk, enqueue=False),
    ]


def chunk_files(stream: EmbeddingStream, media_root: Path) -> list[str]:
    folder = media_root / f"embeddings/{stream.team.slug}/{stream.pk}/chunks"
    return sorted(os.listdir(folder)) if folder.exists() else []


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_splits_a_big_snapshot_over_workers_and_equals_the_single_task(
    chord_worker: tuple[WorkerProcess, str], team: Team, settings: Any, media_root: Path
) -> None:
    worker, queue = chord_worker
    settings.MONITOR_CHUNK_ROWS = CHUNK_ROWS
    current = embeddings(3500, seed=4, shift=0.3)
    stream, runs = stream_with_snapshots(team, "split", current)
    assert [run.chunks for run in runs] == [2, 4]
    started = time.monotonic()
    for run in runs:
        tasks.monitor_run.apply_async((run.pk,), queue=queue)
    finished = wait_until(
        lambda: all(r.is_finished for r in MonitorRun.objects.filter(stream=stream)), timeout=90
    )
    took = time.monotonic() - started
    assert finished, worker.log()
    split_runs = list(MonitorRun.objects.filter(stream=stream).order_by("observed_at"))
    assert [(run.status, run.error, run.chunks, run.attempts) for run in split_runs] == [
        ("done", "", 2, 1), ("done", "", 4, 1),
    ]  # fmt: skip

    # The same files in one task each (no result backend: the fallback), in this process.
    settings.CELERY_RESULT_BACKEND = None
    single_stream, single_runs = stream_with_snapshots(team, "single", current)
    for run in single_runs:
        assert monitors.monitor_run(run_id=run.pk).status == "done"  # type: ignore[union-attr]
    for split, single in zip(
        split_runs, MonitorRun.objects.filter(stream=single_stream).order_by("observed_at"), strict=True
    ):
        single.refresh_from_db()
        assert single.chunks == 1
        got, want = values_of(split), values_of(single)
        assert set(got) == set(want)
        for name, value in want.items():
            assert got[name] == pytest.approx(value, rel=1e-9, abs=1e-12), name
        assert split.effect_thresholds == single.effect_thresholds
        for key in ("current", "reference"):
            np.testing.assert_allclose(
                split.spectrum.get(key, []), single.spectrum.get(key, []), rtol=1e-9, atol=1e-12
            )
    assert chunk_files(stream, media_root) == []  # the merge removed its chunks' files
    log = worker.log()
    pool = set(re.findall(r"ForkPoolWorker-(\d+)\] Task monitoring\.tasks\.monitor_chunk\[", log))
    print(
        f"[chord] 2 runs (2 + 4 chunks) on the workers in {took:.1f} s; chunks ran in pool processes {sorted(pool)}"
    )


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_recovers_a_lost_chord_through_the_stale_job_sweep(
    celery_worker_process: WorkerProcess, team: Team, settings: Any, media_root: Path
) -> None:
    from evalplatform.celery import app

    settings.MONITOR_CHUNK_ROWS = CHUNK_ROWS
    stream, (reference_run, run) = stream_with_snapshots(team, "lost", embeddings(2500, seed=4, shift=0.3))
    assert monitors.monitor_run(run_id=reference_run.pk, split=False).status == "done"  # type: ignore[union-attr]

    # The chord goes to a queue no worker reads: as good as lost.
    nowhere = f"nowhere-{uuid.uuid4().hex[:8]}"
    try:
        assert monitors.monitor_run(run_id=run.pk, queue=nowhere) == monitors.Split(3)
        lost = MonitorRun.objects.get(pk=run.pk)
        assert (lost.status, lost.attempts, lost.chunks) == ("running", 1, 3)
        old_token = str(lost.lease_token)
        assert jobs_requeue_stale() == 0  # its chord lease still runs
        MonitorRun.objects.filter(pk=run.pk).update(
            lease_expires_at=lost.lease_expires_at - monitors.chord_wait()
        )
        assert jobs_requeue_stale() == 1  # lapsed: queued again on the heavy queue, a new chord there
        assert wait_until(lambda: MonitorRun.objects.get(pk=run.pk).is_finished, timeout=60), (
            celery_worker_process.log()[-3000:]
        )
        done = MonitorRun.objects.get(pk=run.pk)
        assert (done.status, done.error, done.attempts, done.chunks) == ("done", "", 2, 3)
        values = values_of(done)

        # The lost chord's chunks arrive at last: dropped, and its merge finds the run lost.
        assert monitors.monitor_chunk(run_id=run.pk, token=old_token, start=0, stop=800) is None
        assert (
            monitors.monitor_merge(run_id=run.pk, token=old_token, names=[None, None, None]).status == "lost"
        )
        assert values_of(MonitorRun.objects.get(pk=run.pk)) == values
        assert chunk_files(stream, media_root) == []
    finally:
        with app.connection_for_write() as broker:
            broker.default_channel.queue_delete(nowhere)
        worker_settle(app, celery_worker_process.hostname)


def worker_settle(app: Any, hostname: str, timeout: float = 30.0) -> None:
    """Wait until the worker runs and holds no task (the follow-ups a finished run queues, such as its
    alert check), so that the test database's flush never meets one of its transactions."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        inspect = app.control.inspect(destination=[hostname], timeout=1.0)
        busy = [tasks for reply in (inspect.active(), inspect.reserved()) for tasks in (reply or {}).values()]
        if not any(busy):
            return
        time.sleep(0.1)
