"""Evaluation jobs survive their worker: a worker killed mid-job leaves no partial result and the job completes
when the message is delivered again; transient errors retry with backoff, and a job does not retry forever.

The kill test runs its own worker processes on a queue of its own (so the session's worker, if one is up,
cannot take the message), with a 4 s job lease and a 5 s Redis visibility timeout. Redelivery is Redis's:
kombu keeps a delivered, unacknowledged message in the `unacked` hash, and a worker puts back the ones older
than the visibility timeout when it starts consuming (`restore_visible` at poll init) and then every
`unacked_restore_interval` x `unacked_restore_throttle` seconds (10 x 10 by default) while it runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.db import OperationalError, connection
from django.utils import timezone

from evalcore import trec
from evalcore.retrieval import evaluate
from evalplatform.models import Team
from monitoring import tasks
from monitoring.evaluations import services as evaluations
from monitoring.evaluations.services import with_coverage
from monitoring.files import uploads
from monitoring.models import Evaluation
from tests.conftest import ROOT, WorkerProcess, _database_url_for, stop_process_group
from tests.monitoring.conftest import synthetic_collection, upload
from tests.monitoring.stored import evaluation_rows

LEASE_SECONDS = 4
VISIBILITY_TIMEOUT = 5
#: Enough queries that the bootstrap of every measure keeps the job busy for seconds on this machine.
MEASURES = [
    "map", "ndcg_cut_10", "P_10", "recall_100", "recip_rank", "Rprec", "bpref", "ndcg", "P_5", "P_20",
    "recall_10", "map_cut_10", "ndcg_cut_20", "success_10",
]  # fmt: skip


def wait_until(predicate: Callable[[], bool], *, timeout: float, every: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False


def big_collection(folder: Path, *, queries: int, docs: int) -> tuple[Path, Path]:
    """A TREC run of queries x docs lines with ties, and qrels judging about a tenth of it, 0-2."""
    rng = np.random.default_rng(7)
    qids = np.repeat(np.arange(queries), docs)
    dids = np.tile(np.arange(docs), queries)
    scores = np.round(rng.normal(size=qids.size), 2).tolist()
    run = folder / "big.run"
    with run.open("w") as out:
        out.writelines(
            f"q{q} Q0 d{d} 0 {s} big\n" for q, d, s in zip(qids.tolist(), dids.tolist(), scores, strict=True)
        )
    judged = rng.random(qids.size) < 0.1
    grades = rng.integers(0, 3, size=qids.size)
    qrels = folder / "big.qrels"
    qrels.write_text(
        "".join(
            f"q{q} 0 d{d} {g}\n"
            for q, d, g in zip(
                qids[judged].tolist(), dids[judged].tolist(), grades[judged].tolist(), strict=True
            )
        )
    )
    return run, qrels


class Workers:
    """Celery worker processes of this test, each in its own process group so it can be killed whole."""

    def __init__(self, folder: Path, media_root: Path, queue: str, **env: str) -> None:
        self.folder = folder
        self.queue = queue
        self.env = {
            **os.environ,
            "DATABASE_URL": _database_url_for(connection.settings_dict),
            "MEDIA_ROOT": str(media_root),
            "JOB_LEASE_SECONDS": str(LEASE_SECONDS),
            "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
            **env,
        }
        self.started: list[WorkerProcess] = []

    def start(self, *, queues: str | None = None) -> WorkerProcess:
        from evalplatform.celery import app

        hostname = f"redelivery-{uuid.uuid4().hex[:8]}@localhost"
        log_path = self.folder / f"{hostname.split('@')[0]}.log"
        command = [sys.executable, "-m", "celery", "-A", "evalplatform", "worker", "-Q", queues or self.queue,
                   "--concurrency", "1", "--hostname", hostname, "--without-mingle", "--without-gossip",
                   "--loglevel", "info"]  # fmt: skip
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        worker = WorkerProcess(hostname, process, log_path)
        self.started.append(worker)
        ready = wait_until(
            lambda: process.poll() is not None or bool(app.control.ping(destination=[hostname], timeout=0.5)),
            timeout=60,
            every=0,
        )
        assert ready and process.poll() is None, f"the worker did not start:\n{worker.log()}"
        return worker

    def kill(self, worker: WorkerProcess) -> None:
        """SIGKILL the worker's whole process group: the main process and its pool child, no cleanup."""
        os.killpg(worker.process.pid, signal.SIGKILL)
        worker.process.wait(timeout=10)

    def stop(self, worker: WorkerProcess) -> None:
        """SIGSTOP the worker's process group: frozen where it stands, before it is killed."""
        os.killpg(worker.process.pid, signal.SIGSTOP)

    def logs(self) -> str:
        return "\n".join(f"--- {worker.hostname}\n{worker.log()}" for worker in self.started)

    def stop_all(self) -> None:
        for worker in self.started:
            stop_process_group(worker.process)


@pytest.fixture
def workers(live_services: None, tmp_path: Path, media_root: Path) -> Iterator[Workers]:
    pool = Workers(tmp_path, media_root, f"redelivery-{uuid.uuid4().hex[:8]}")
    try:
        yield pool
    finally:
        pool.stop_all()
        forget_queue(pool.queue)


def forget_queue(queue: str) -> None:
    """Delete a test's queue, and its unacknowledged messages, so that none outlives the test."""
    from evalplatform.celery import app

    with app.connection_for_write() as broker:
        channel = broker.default_channel
        channel.queue_delete(queue)
        for tag, payload in channel.client.hgetall(channel.unacked_key).items():
            if json.loads(payload)[2] == queue:
                channel.client.hdel(channel.unacked_key, tag)
                channel.client.zrem(channel.unacked_index_key, tag)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_completes_a_job_whose_worker_was_killed_and_leaves_no_partial_result(
    workers: Workers, team: Team, tmp_path: Path
) -> None:
    started = time.monotonic()
    run_path, qrels_path = big_collection(tmp_path, queries=5000, docs=200)
    with run_path.open("rb") as run_file, qrels_path.open("rb") as qrels_file:
        run = uploads.run_upload(team=team, upload=run_file)
        qrels = uploads.qrels_upload(team=team, upload=qrels_file)
    evaluation = evaluations.evaluation_create(run=run, qrels=qrels, measures=MEASURES, enqueue=False)
    job = Evaluation.objects.filter(pk=evaluation.pk)
    first = workers.start()
    tasks.evaluation_run.apply_async((evaluation.pk,), queue=workers.queue)

    # Mid-job: claimed, its progress on record, half a second into reading the files.
    assert wait_until(lambda: job.filter(status="running", progress__isnull=False).exists(), timeout=30), (
        workers.logs()
    )
    time.sleep(0.5)
    mid_job = job.get()
    assert mid_job.status == "running" and mid_job.started_at is not None
    into_job = (timezone.now() - mid_job.started_at).total_seconds()
    workers.kill(first)
    killed_at = time.monotonic()
    dead = job.get()
    assert (dead.status, dead.attempts) == ("running", 1), f"finished before the kill:\n{workers.logs()}"
    assert not evaluation_rows(evaluation)
    assert dead.qids == [] and dead.num_queries is None

    # A worker restores unacked messages older than the visibility timeout when it starts consuming.
    wait = (mid_job.started_at + timedelta(seconds=VISIBILITY_TIMEOUT + 0.5) - timezone.now()).total_seconds()
    time.sleep(max(0.0, wait))
    workers.start()
    assert wait_until(lambda: job.get().is_finished, timeout=40, every=0.2), workers.logs()
    recovered = time.monotonic()

    done = job.get()
    assert (done.status, done.attempts, done.error) == ("done", 2, ""), workers.logs()
    want = evaluate(trec.read_qrels(qrels_path), trec.read_run(run_path), with_coverage(MEASURES))
    rows = evaluation_rows(evaluation)
    assert [row.measure for row in rows] == with_coverage(MEASURES)  # exactly one row per measure
    for row in rows:
        assert row.value == pytest.approx(want.aggregate[row.measure], abs=1e-12)
    assert done.num_queries == len(want.qids) == 5000
    print(  # shown with -s
        f"[redelivery] killed {into_job:.2f} s into the job ({mid_job.percent}% {mid_job.progress_note!r}); "
        f"done {recovered - killed_at:.1f} s after the kill; test {time.monotonic() - started:.1f} s\n"
        + workers.logs()
    )


# --- the task's retry policy (eager: Celery runs each retry at once, in this process) ----------------


QRELS, RUN = synthetic_collection()


@pytest.fixture
def evaluation(team: Team) -> Evaluation:
    qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", QRELS))
    run = uploads.run_upload(team=team, upload=upload("bm25.run", RUN(1, 1.5, "bm25")))
    return evaluations.evaluation_create(run=run, qrels=qrels, measures=["map", "P_10"], enqueue=False)


@pytest.fixture
def countdowns(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The countdown of every retry the task asks for."""
    seen: list[float] = []
    original = tasks.evaluation_run.retry

    def retry(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["countdown"])
        return original(*args, **kwargs)

    monkeypatch.setattr(tasks.evaluation_run, "retry", retry)
    return seen


def database_away_for(times: int, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The next `times` reads of a run fail as when the database goes away; returns the call counter."""
    calls = [0]
    read_run = evaluations.read_run

    def flaky(run: Any) -> Any:
        calls[0] += 1
        if calls[0] <= times:
            raise OperationalError("server closed the connection unexpectedly")
        return read_run(run)

    monkeypatch.setattr(evaluations, "read_run", flaky)
    return calls


@pytest.mark.django_db
class TestRetries:
    def test_it_retries_a_transient_error_with_backoff_and_then_completes(
        self, evaluation: Evaluation, countdowns: list[float], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        calls = database_away_for(2, monkeypatch)
        assert tasks.evaluation_run.apply(args=(evaluation.pk,)).get() == "done"
        evaluation.refresh_from_db()
        assert (evaluation.status, evaluation.attempts, calls[0]) == ("done", 3, 3)
        assert (
            len(countdowns) == 2 and 0 <= countdowns[0] <= 5 and 0 <= countdowns[1] <= 10
        )  # backoff, jitter
        assert len(evaluation_rows(evaluation)) == 4  # map, P_10 and the coverage measures

    def test_it_gives_up_after_its_last_attempt_with_a_message(
        self, evaluation: Evaluation, countdowns: list[float], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        calls = database_away_for(100, monkeypatch)
        assert tasks.evaluation_run.apply(args=(evaluation.pk,)).get() == "failed"
        evaluation.refresh_from_db()
        assert evaluation.status == "failed" and calls[0] == Evaluation.max_attempts == 3
        assert evaluation.error.startswith("Gave up after 3 attempts")
        assert len(countdowns) == 3  # three retries, and the fourth delivery fails the job: no more
        assert not evaluation_rows(evaluation)

    def test_it_fails_a_bad_file_at_once_without_retrying(
        self, team: Team, evaluation: Evaluation, countdowns: list[float]
    ) -> None:
        _, big_run = synthetic_collection(queries=100, shuffle=False)
        lines = big_run(3, 1.0).splitlines()
        lines[2600] = "q1 Q0 d1-1 0 high sys"  # past the lines checked on upload
        bad = uploads.run_upload(team=team, upload=upload("late.run", "\n".join(lines) + "\n"))
        job = evaluations.evaluation_create(run=bad, qrels=evaluation.qrels, enqueue=False)
        assert tasks.evaluation_run.apply(args=(job.pk,)).get() == "failed"
        job.refresh_from_db()
        assert job.error.startswith("late.run:2601: ") and job.attempts == 1 and countdowns == []

    def test_it_waits_for_another_workers_live_claim_then_takes_the_job_over(
        self, evaluation: Evaluation, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Another worker holds the job under a lease with 30 s left.
        Evaluation.objects.filter(pk=evaluation.pk).update(
            status="running", attempts=1, lease_token=uuid.uuid4(),
            lease_expires_at=timezone.now() + timedelta(seconds=30),
        )  # fmt: skip
        countdowns: list[float] = []
        original = tasks.evaluation_run.retry

        def lease_lapses_meanwhile(*args: Any, **kwargs: Any) -> Any:
            countdowns.append(kwargs["countdown"])
            Evaluation.objects.filter(pk=evaluation.pk).update(lease_expires_at=timezone.now())
            return original(*args, **kwargs)

        monkeypatch.setattr(tasks.evaluation_run, "retry", lease_lapses_meanwhile)
        assert tasks.evaluation_run.apply(args=(evaluation.pk,)).get() == "done"
        assert len(countdowns) == 1 and 30 <= countdowns[0] <= 32  # once the lease would have lapsed
        evaluation.refresh_from_db()
        assert (evaluation.status, evaluation.attempts) == ("done", 2)


def test_it_acknowledges_evaluation_messages_only_when_the_task_ends() -> None:
    from evalplatform.celery import app

    for task in (tasks.evaluation_run, tasks.comparison_run):
        assert task.acks_late and task.reject_on_worker_lost  # a lost worker's message is delivered again
        assert task.max_retries == 20 and task.retry_backoff and task.retry_jitter
        assert app.amqp.router.route({}, task.name)["queue"].name == "heavy"
