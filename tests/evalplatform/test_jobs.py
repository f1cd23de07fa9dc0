"""The shared job lifecycle (`evalplatform.jobs`), exercised through a concrete job, the quality recompute."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError
from django.utils import timezone

from annotations.models import Project, QualityRecompute
from evalcore.errors import FormatError
from evalplatform import jobs
from evalplatform.errors import InputError
from evalplatform.jobs import Claim, JobError, JobOutcome, job_attempt, job_claim, job_run
from tests.annotations.conftest import build_project
from tests.conftest import QueuedTasks


@pytest.fixture
def project(lena: User) -> Project:
    return build_project(lead=lena, topics=1, docs_per_topic=2)


@pytest.fixture
def job(project: Project) -> QualityRecompute:
    return QualityRecompute.objects.create(project=project)


def stored(job: QualityRecompute, result: Any) -> None:
    job.progress_note = f"stored {result}"  # saved with the job by job_finish


def run(job: QualityRecompute, compute: Any) -> JobOutcome:
    return job_run(QualityRecompute, pk=job.pk, compute=compute, store=stored)


@pytest.mark.django_db
class TestClaim:
    def test_it_claims_a_pending_job_once(self, job: QualityRecompute) -> None:
        first = job_claim(QualityRecompute, pk=job.pk)
        assert isinstance(first, Claim)
        second = job_claim(QualityRecompute, pk=job.pk)
        assert isinstance(second, JobOutcome) and second.status == "busy" and second.retry_in > 60
        job.refresh_from_db()
        assert (job.status, job.attempts, job.lease_token) == ("running", 1, first.token)

    def test_it_takes_over_a_job_whose_lease_lapsed(self, job: QualityRecompute) -> None:
        QualityRecompute.objects.filter(pk=job.pk).update(
            status="running", attempts=1, lease_token=uuid.uuid4(), lease_expires_at=timezone.now()
        )
        claim = job_claim(QualityRecompute, pk=job.pk, now=timezone.now() + timedelta(seconds=1))
        assert isinstance(claim, Claim)
        job.refresh_from_db()
        assert job.attempts == 2

    def test_it_gives_up_after_the_last_attempt(self, job: QualityRecompute) -> None:
        QualityRecompute.objects.filter(pk=job.pk).update(
            status="running", attempts=QualityRecompute.max_attempts, lease_expires_at=timezone.now()
        )
        outcome = job_claim(QualityRecompute, pk=job.pk, now=timezone.now() + timedelta(seconds=1))
        assert outcome == JobOutcome("failed", retry_in=1.0)
        job.refresh_from_db()
        assert job.status == "failed" and "Gave up after 3 attempts" in job.error

    def test_it_reports_a_missing_and_a_finished_job(self, job: QualityRecompute) -> None:
        assert job_claim(QualityRecompute, pk=10**9) == JobOutcome("missing")
        QualityRecompute.objects.filter(pk=job.pk).update(status="done")
        assert job_claim(QualityRecompute, pk=job.pk) == JobOutcome("finished")


@pytest.mark.django_db
class TestRun:
    def test_it_computes_stores_and_finishes(self, job: QualityRecompute) -> None:
        assert run(job, lambda job, progress: 42) == JobOutcome("done")
        job.refresh_from_db()
        assert (job.status, job.progress, job.percent, job.lease_token, job.error) == (
            "done",
            1.0,
            100,
            None,
            "",
        )
        assert job.progress_note == "" and job.finished_at and job.seconds is not None
        assert run(job, lambda job, progress: 43) == JobOutcome("finished")

    def test_it_calls_the_on_done_hook_once_a_job_is_done_and_only_then(
        self, job: QualityRecompute, project: Project, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        done: list[tuple[int, str]] = []
        monkeypatch.setattr(
            QualityRecompute, "on_done", lambda self: done.append((self.pk, self.status)), raising=False
        )
        assert run(job, lambda job, progress: 1) == JobOutcome("done")
        assert run(job, lambda job, progress: 2) == JobOutcome("finished")
        failing = QualityRecompute.objects.create(project=project)
        assert run(failing, lambda job, progress: 1 / 0) == JobOutcome("failed")
        assert done == [(job.pk, "done")]

    def test_it_fails_a_job_on_bad_input_with_the_message_for_the_user(self, job: QualityRecompute) -> None:
        def bad_file(job: Any, progress: Any) -> None:
            raise FormatError("run.txt", 3, "expected 6 columns, found 4")

        assert run(job, bad_file) == JobOutcome("failed")
        job.refresh_from_db()
        assert job.status == "failed" and job.error == "run.txt:3: expected 6 columns, found 4"

    def test_it_fails_a_job_it_cannot_do_and_a_job_that_crashes(self, project: Project) -> None:
        def refuse(job: Any, progress: Any) -> None:
            raise JobError("The qrels have no query in common with the run.")

        def crash(job: Any, progress: Any) -> None:
            raise KeyError("oops")

        for compute, message in ((refuse, "The qrels have no query in common"), (crash, "KeyError: 'oops'")):
            job = QualityRecompute.objects.create(project=project)
            assert run(job, compute).status == "failed"
            job.refresh_from_db()
            assert message in job.error
            job.delete()

    def test_it_fails_a_job_with_the_message_of_an_input_error_a_service_raised(
        self, job: QualityRecompute
    ) -> None:
        def service_refuses(job: Any, progress: Any) -> None:
            raise InputError("Choose at least one measure.")

        assert issubclass(JobError, InputError) and not issubclass(InputError, JobError)
        assert run(job, service_refuses) == JobOutcome("failed")
        job.refresh_from_db()
        assert (job.status, job.error) == ("failed", "Choose at least one measure.")

    def test_it_releases_the_job_after_a_transient_error_for_the_retry(self, job: QualityRecompute) -> None:
        def database_away(job: Any, progress: Any) -> None:
            raise OperationalError("server closed the connection unexpectedly")

        with pytest.raises(OperationalError):
            run(job, database_away)
        job.refresh_from_db()
        assert (job.status, job.attempts, job.lease_token) == ("pending", 1, None)
        assert run(job, lambda job, progress: 1) == JobOutcome("done")

    def test_it_keeps_the_claim_of_a_piece_across_its_retry_and_says_where_it_failed(
        self, job: QualityRecompute
    ) -> None:
        claim = job_claim(QualityRecompute, pk=job.pk)
        assert isinstance(claim, Claim)

        def database_away() -> None:
            raise OperationalError("server closed the connection unexpectedly")

        with pytest.raises(OperationalError):
            job_attempt(claim, database_away, release=False, where="rows 0:10")
        job.refresh_from_db()
        assert (job.status, job.lease_token) == ("running", claim.token)
        assert job_attempt(claim, lambda: 7, release=False) == 7

        def missing_file() -> None:
            raise OSError("no such chunk")

        assert job_attempt(claim, missing_file, fail_on=(OSError,), where="rows 0:10") == JobOutcome("failed")
        job.refresh_from_db()
        assert (job.status, job.error) == ("failed", "rows 0:10: no such chunk")

    def test_it_discards_the_result_when_another_worker_took_the_job_over(
        self, job: QualityRecompute
    ) -> None:
        usurper = uuid.uuid4()

        def slow(job: Any, progress: Any) -> int:
            QualityRecompute.objects.filter(pk=job.pk).update(lease_token=usurper)
            return 1

        assert run(job, slow) == JobOutcome("lost")
        job.refresh_from_db()
        assert (job.status, job.lease_token, job.progress_note) == ("running", usurper, "")

    def test_it_records_progress_at_most_once_a_second(self, job: QualityRecompute) -> None:
        seen: list[tuple[Any, str]] = []

        def compute(job: QualityRecompute, progress: Any) -> int:
            progress(0.25, "reading")
            progress(0.5, "too soon: skipped")
            fresh = QualityRecompute.objects.get(pk=job.pk)
            seen.append((fresh.percent, fresh.progress_note))
            return 1

        run(job, compute)
        assert seen == [(25, "reading")]


@pytest.mark.django_db(transaction=True)
def test_it_renews_the_lease_while_the_job_computes(project: Project, settings: Any) -> None:
    settings.JOB_LEASE_SECONDS = 0.6
    job = QualityRecompute.objects.create(project=project)
    leases: list[Any] = []

    def long_compute(job: QualityRecompute, progress: Any) -> int:
        for _ in range(3):
            time.sleep(0.45)
            leases.append(QualityRecompute.objects.get(pk=job.pk).lease_expires_at)
        return 1

    assert run(job, long_compute) == JobOutcome("done")
    assert leases[0] < leases[-1]  # renewed: a lease of 0.6 s outlived a 1.35 s computation


@pytest.mark.django_db
class TestQueueing:
    def test_it_fails_the_job_with_a_hint_when_the_broker_is_down(
        self, job: QualityRecompute, queued: QueuedTasks
    ) -> None:
        queued.broker_down = True
        assert jobs.job_enqueue(job) is False
        job.refresh_from_db()
        assert job.status == "failed" and job.error.startswith("The task queue is unreachable")

    def test_it_requeues_jobs_no_worker_is_on(self, project: Project, queued: QueuedTasks) -> None:
        now = timezone.now()
        old = now - timedelta(minutes=30)
        lost = QualityRecompute.objects.create(project=project, queued_at=old, created_at=old)
        dead = QualityRecompute.objects.create(
            project=project,
            status="running",
            lease_token=uuid.uuid4(),
            lease_expires_at=now - timedelta(seconds=5),
        )
        QualityRecompute.objects.create(
            project=project, status="running", lease_expires_at=now + timedelta(minutes=1)
        )
        QualityRecompute.objects.create(project=project, status="done")
        assert jobs.jobs_requeue_stale(now=now) == 2
        assert sorted(args[0] for _, args, _ in queued.sent) == sorted([lost.pk, dead.pk])

    def test_it_describes_a_job_for_polling(self, job: QualityRecompute) -> None:
        state = job.state()
        assert state["status"] == "pending" and state["percent"] is None and state["seconds"] is None
        assert state["label"] == "Pending"


def test_it_declares_the_stale_job_sweep_in_the_beat_schedule(settings: Any) -> None:
    from evalplatform.celery import app

    entry = settings.CELERY_BEAT_SCHEDULE["requeue-stale-jobs"]
    app.loader.import_default_modules()
    assert entry["task"] in app.tasks and entry["schedule"] <= 600
