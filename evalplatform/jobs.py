"""One lifecycle for every background job: qrels builds, quality recomputes, evaluations, monitor runs.

A job is a row of a concrete subclass of `Job`. It goes pending -> running -> done or failed:

1. Created `pending`, and queued with `job_enqueue_on_commit` (the task takes the job's id only).
2. The task calls `job_run`: it claims the row with a conditional UPDATE (`pending`, or `running` under a
   lapsed lease, so a job whose worker died is taken over), exactly one row changing or nothing at all.
   While it computes, a thread renews the lease every third of its length, so a live job keeps its
   claim however long it runs, and a killed worker's claim lapses within one lease.
3. `compute(job, progress)` runs without any lock; `progress(fraction, note)` records how far it is.
4. `store(job, result)` writes the results in one transaction that first locks the row and checks the
   lease is still ours: a job taken over by another worker discards its result (`lost`), so results are
   written once, whole, or not at all.

Errors, mapped in one place (`job_attempt`, which `job_run` and a monitor run's chord pieces call): an
`EvalCoreError`, `JobError` or other `InputError` (bad input: a malformed file, impossible parameters)
fails the job at once with its message, for the user to read. A transient error (the database went
away) releases the claim and is raised again for the task to retry with backoff; every claim counts as
an attempt, and after `max_attempts` the job fails with a message saying so (an `ImportJob` allows one
redo after a crashed worker). Any other exception is a bug: the job fails with the exception's text,
and the traceback goes to the log.

Running a task twice, or after its worker died, is safe: a finished job is never claimed again (the
second run answers `finished`), and a live claim makes another run wait (`busy`, retry in N seconds).
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, ClassVar, Literal, TypeVar

from django.conf import settings
from django.db import InterfaceError, OperationalError, connections, models, transaction
from django.db.models import F, Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from evalcore.errors import EvalCoreError
from evalplatform.errors import InputError

logger = logging.getLogger(__name__)

R = TypeVar("R")
J = TypeVar("J", bound="Job")

#: Errors worth another attempt: the job is released and the task retries with backoff.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)


class JobError(InputError):
    """A job cannot be done as asked (bad input or parameters); the message is written for its user.

    Raised while a job computes; a service that refuses a request outside jobs raises `InputError`."""


#: Bad input, not a bug: the job fails at once with the error's message, for its user to read (an
#: `InputError` a service raises inside a job, `JobError` among them, or an `EvalCoreError`).
INPUT_ERRORS: tuple[type[BaseException], ...] = (InputError, EvalCoreError)


class JobStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class JobQuerySet(models.QuerySet[J]):
    def unfinished(self) -> JobQuerySet[J]:
        """Jobs that may still change: a finished job is immutable."""
        return self.filter(status__in=[JobStatus.PENDING, JobStatus.RUNNING])

    def claimable(self, now: datetime | None = None) -> JobQuerySet[J]:
        """Pending jobs, and running ones whose worker's lease has lapsed (it died)."""
        now = now or timezone.now()
        return self.filter(
            Q(status=JobStatus.PENDING) | Q(status=JobStatus.RUNNING, lease_expires_at__lte=now)
        )

    def stale(self, now: datetime, *, queued_before: datetime) -> JobQuerySet[J]:
        """Jobs no worker is on: pending since before `queued_before` (a lost message), or running under a
        lapsed lease (a dead worker)."""
        return self.filter(
            Q(status=JobStatus.PENDING, queued_at__lt=queued_before)
            | Q(status=JobStatus.PENDING, queued_at__isnull=True, created_at__lt=queued_before)
            | Q(status=JobStatus.RUNNING, lease_expires_at__lte=now)
        )


class Job(models.Model):
    """The state of one background job; concrete jobs add what they compute and store.

    Subclasses set `task_name` (the Celery task that runs the job, given its id) and may tune
    `max_attempts`. `progress` is the fraction done while running, when the job knows it. A subclass
    may define `on_done` for what follows a finished job (its alert checks).
    """

    Status = JobStatus

    status = models.CharField(max_length=8, choices=JobStatus.choices, default=JobStatus.PENDING)
    error = models.TextField(blank=True)
    progress = models.FloatField(null=True, blank=True, help_text="Fraction done (0-1), when known.")
    progress_note = models.CharField(max_length=200, blank=True, help_text="What the job is doing now.")
    attempts = models.PositiveSmallIntegerField(default=0)
    lease_token = models.UUIDField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    task_name: ClassVar[str] = ""
    max_attempts: ClassVar[int] = 3
    #: Added to the error of a job the broker could not take (how else to run it).
    queue_down_hint: ClassVar[str] = "Try again later."

    class Meta:
        abstract = True

    def on_done(self) -> None:
        """Called once the job is done, after the transaction that stored its results and marked it done
        closed (in a worker: committed), by whichever worker finished it (`job_finish`). Nothing by
        default; a job whose results feed alert rules checks them here. An exception it raises reaches
        the task (a transient one retries it, which then finds the job finished: the hook runs once at
        most)."""

    @property
    def is_finished(self) -> bool:
        return self.status in (JobStatus.DONE, JobStatus.FAILED)

    @property
    def percent(self) -> int | None:
        """Progress as a whole percentage: 100 when done, None when unknown."""
        if self.status == JobStatus.DONE:
            return 100
        if self.progress is None or not math.isfinite(self.progress):  # unknown, whatever was stored
            return None
        return int(round(100 * self.progress))

    @property
    def seconds(self) -> float | None:
        """How long the last attempt ran (so far, while running)."""
        if self.started_at is None:
            return None
        return ((self.finished_at or timezone.now()) - self.started_at).total_seconds()

    def state(self) -> dict[str, Any]:
        """The job's state as JSON-ready data, for polling pages and the API."""
        return {
            "status": self.status,
            "label": JobStatus(self.status).label,
            "percent": self.percent,
            "note": self.progress_note,
            "error": self.error,
            "attempts": self.attempts,
            "created_at": self.created_at.isoformat(),
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "seconds": self.seconds,
        }


def lease_length() -> timedelta:
    """How long a claim lasts without renewal (settings.JOB_LEASE_SECONDS)."""
    return timedelta(seconds=float(getattr(settings, "JOB_LEASE_SECONDS", 120)))


# --- outcomes -----------------------------------------------------------------------------------------

OutcomeStatus = Literal["done", "failed", "finished", "busy", "lost", "missing"]


@dataclass(frozen=True)
class JobOutcome:
    """What a run did: `done`, `failed`, `finished` (already; nothing to do), `busy` (another worker holds
    a live lease: try again in `retry_in` seconds), `lost` (our lease lapsed and another worker took the
    job over; our result was discarded) or `missing` (no such job)."""

    status: OutcomeStatus
    retry_in: float = 0.0


@dataclass(frozen=True)
class Claim:
    """A worker's hold on one job: the job's model and id, and the lease token that proves it."""

    model: type[Job]
    pk: int
    token: uuid.UUID

    def rows(self) -> models.QuerySet[Any]:
        """The job's row, only while this claim holds it."""
        return self.model.objects.filter(pk=self.pk, status=JobStatus.RUNNING, lease_token=self.token)


# --- claiming and releasing ---------------------------------------------------------------------------


def job_claim(model: type[Job], *, pk: int, now: datetime | None = None) -> Claim | JobOutcome:
    """Claim a job by conditional UPDATE; the outcome says why not when exactly one row did not change."""
    now = now or timezone.now()
    token = uuid.uuid4()
    claimed = (
        model.objects.claimable(now)
        .filter(pk=pk, attempts__lt=model.max_attempts)
        .update(
            status=JobStatus.RUNNING,
            lease_token=token,
            lease_expires_at=now + lease_length(),
            started_at=now,
            finished_at=None,
            progress=None,
            progress_note="",
            attempts=F("attempts") + 1,
        )
    )
    if claimed == 1:
        return Claim(model, pk, token)
    return _not_claimed(model, pk, now)


def _not_claimed(model: type[Job], pk: int, now: datetime) -> JobOutcome:
    job = model.objects.filter(pk=pk).first()
    if job is None:
        return JobOutcome("missing")
    if job.is_finished:
        return JobOutcome("finished")
    lapsed = job.status == JobStatus.PENDING or (
        job.lease_expires_at is not None and job.lease_expires_at <= now
    )
    if job.attempts >= model.max_attempts and lapsed:
        gave_up = (
            model.objects.claimable(now)
            .filter(pk=pk)
            .update(
                status=JobStatus.FAILED,
                finished_at=now,
                lease_token=None,
                lease_expires_at=None,
                error=f"Gave up after {job.attempts} attempts: each one ended without finishing (worker lost?).",
            )
        )
        return JobOutcome("failed" if gave_up else "busy", retry_in=1.0)
    wait = (job.lease_expires_at - now).total_seconds() if job.lease_expires_at else 1.0
    return JobOutcome("busy", retry_in=max(1.0, wait + 1.0))


def job_release(claim: Claim) -> bool:
    """Hand the job back to the queue (pending) after a transient error, keeping its attempt count."""
    released = claim.rows().update(status=JobStatus.PENDING, lease_token=None, lease_expires_at=None)
    return released == 1


def job_fail(claim: Claim, message: str) -> bool:
    """Fail the job with `message`, if the claim still holds it."""
    failed = claim.rows().update(
        status=JobStatus.FAILED,
        error=message[:10_000],
        finished_at=timezone.now(),
        lease_token=None,
        lease_expires_at=None,
    )
    return failed == 1


# --- progress and the lease ---------------------------------------------------------------------------

ProgressFn = Callable[[float | None, str], None]


class Progress:
    """`progress(fraction, note)`: records how far the job is, at most once a second unless it's done."""

    def __init__(self, claim: Claim, *, min_interval: float = 1.0) -> None:
        self.claim = claim
        self.min_interval = min_interval
        self._last = 0.0

    def __call__(self, fraction: float | None, note: str = "") -> None:
        moment = time.monotonic()
        if fraction is not None and fraction < 1.0 and moment - self._last < self.min_interval:
            return
        self._last = moment
        value = None if fraction is None else min(1.0, max(0.0, float(fraction)))
        self.claim.rows().update(progress=value, progress_note=note[:200])


class _LeaseKeeper(threading.Thread):
    """Renews a claim's lease every third of its length until stopped, on its own database connection."""

    def __init__(self, claim: Claim) -> None:
        super().__init__(name=f"lease-{claim.model.__name__}-{claim.pk}", daemon=True)
        self.claim = claim
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            every = lease_length().total_seconds() / 3
            while not self.stopped.wait(every):
                if not self.claim.rows().update(lease_expires_at=timezone.now() + lease_length()):
                    return
        except Exception:  # the lease then lapses on its own; the worker's main thread goes on
            logger.exception("renewing the lease of %s %s failed", self.claim.model.__name__, self.claim.pk)
        finally:
            connections.close_all()


@contextmanager
def lease_kept(claim: Claim) -> Iterator[None]:
    keeper = _LeaseKeeper(claim)
    keeper.start()
    try:
        yield
    finally:
        keeper.stopped.set()
        keeper.join(timeout=5)


# --- running ------------------------------------------------------------------------------------------


def job_run(
    model: type[J],
    *,
    pk: int,
    compute: Callable[[J, ProgressFn], R],
    store: Callable[[J, R], None],
    now: datetime | None = None,
    retry_on: tuple[type[BaseException], ...] = (),
) -> JobOutcome:
    """Claim, compute and store a job (see the module docstring). Idempotent; raises only transient
    errors (after releasing the job), for the task to retry. `retry_on` adds the job's own transient
    errors (a webhook that did not answer, say)."""
    claim = job_claim(model, pk=pk, now=now)
    if isinstance(claim, JobOutcome):
        return claim
    job: J = model.objects.get(pk=pk)  # type: ignore[assignment]
    result = job_attempt(claim, partial(compute, job, Progress(claim)), retry_on=retry_on)
    if isinstance(result, JobOutcome):
        return result
    return job_finish(claim, lambda locked: store(locked, result))  # type: ignore[arg-type]


def job_attempt(
    claim: Claim,
    compute: Callable[[], R],
    *,
    retry_on: tuple[type[BaseException], ...] = (),
    fail_on: tuple[type[BaseException], ...] = (),
    release: bool = True,
    where: str = "",
) -> R | JobOutcome:
    """Run `compute()` under the claim, its lease kept, mapping each kind of exception once for every job.

    - A transient error (`TRANSIENT_ERRORS`, and `retry_on`) is raised again for the task to retry; with
      `release`, the job is first handed back (pending), as `job_run` does. A piece of a bigger job that
      keeps the claim across its retries (a monitor run's chord chunk or merge) passes `release=False`.
    - Bad input (`INPUT_ERRORS`, and `fail_on`) fails the job with its message for the user.
    - Anything else is a bug: the job fails with the exception's type and text, and the traceback is logged.

    `where` (rows 0:1000, say) starts the failure's message and the log line. Returns compute's result,
    or `JobOutcome("failed")` when the job failed.
    """
    prefix = f"{where}: " if where else ""
    try:
        with lease_kept(claim):
            return compute()
    except (*TRANSIENT_ERRORS, *retry_on):
        logger.warning(
            "%s %s %shit a transient error; %s", claim.model.__name__, claim.pk, prefix,
            "released for a retry" if release else "to be retried", exc_info=True,
        )  # fmt: skip
        if release:
            _release_quietly(claim)
        raise
    except (*INPUT_ERRORS, *fail_on) as error:
        job_fail(claim, prefix + (str(error) or type(error).__name__))
    except Exception as error:
        logger.exception("%s %s %sfailed", claim.model.__name__, claim.pk, prefix)
        job_fail(claim, f"{prefix}{type(error).__name__}: {error}")
    return JobOutcome("failed")


def _release_quietly(claim: Claim) -> None:
    with suppress(*TRANSIENT_ERRORS):  # if the database is away, the lease lapses by itself
        job_release(claim)


def job_finish(
    claim: Claim, store: Callable[[Job], None], *, cleanup: Callable[[], None] | None = None
) -> JobOutcome:
    """Write the results and mark the job done in one transaction, only while the claim holds it; then
    call `cleanup` (whatever the outcome: the caller's scratch files, say) and, when done, the job's
    `on_done` hook."""
    with transaction.atomic():
        job = claim.rows().select_for_update().first()
        if job is None:
            outcome = JobOutcome("lost")
        else:
            try:
                with transaction.atomic():
                    store(job)
            except INPUT_ERRORS as error:
                job_fail(claim, str(error) or type(error).__name__)
                outcome = JobOutcome("failed")
            else:
                job.status = JobStatus.DONE
                job.progress = 1.0
                job.progress_note = ""
                job.error = ""
                job.finished_at = timezone.now()
                job.lease_token = None
                job.lease_expires_at = None
                job.save()
                outcome = JobOutcome("done")
    if cleanup is not None:
        cleanup()
    if job is not None and outcome.status == "done":
        job.on_done()
    return outcome


# --- queueing -----------------------------------------------------------------------------------------


_TASK_IMPORT_LOCK = threading.Lock()


def job_enqueue(job: Job, *, countdown: float = 0) -> bool:
    """Send the job's task. An unreachable broker fails a pending job with a message that says so."""
    from celery import current_app

    if job.task_name not in current_app.tasks:  # a web process has not imported the apps' tasks modules
        # One thread imports them; another that asked meanwhile waits for it, rather than finding the
        # registry half-filled ("never registered": seen with several threads answering at once).
        with _TASK_IMPORT_LOCK:
            if job.task_name not in current_app.tasks:
                current_app.loader.import_default_modules()
    try:
        current_app.tasks[job.task_name].apply_async((job.pk,), countdown=countdown, retry=False)
    except (BrokerError, OSError) as error:
        logger.warning("%s %s not queued: %s", type(job).__name__, job.pk, error)
        type(job).objects.filter(pk=job.pk, status=JobStatus.PENDING).update(
            status=JobStatus.FAILED,
            finished_at=timezone.now(),
            error=f"The task queue is unreachable ({error}). {job.queue_down_hint}",
        )
        return False
    type(job).objects.filter(pk=job.pk).update(queued_at=timezone.now())
    return True


def job_enqueue_on_commit(job: Job, *, countdown: float = 0) -> None:
    """Queue the job once the current transaction commits (at once outside one)."""
    transaction.on_commit(partial(job_enqueue, job, countdown=countdown))


def task_send(task: Any, args: tuple[Any, ...], *, what: str, retry: bool | None = None) -> bool:
    """Send a plain task (one that is not a `Job`'s): False, and logged, when the broker is unreachable,
    which loses this send only. `what` names what was not queued, for the log; `retry`, when given,
    overrides Celery's publish retry (False: fail at once, for a request that answers 503)."""
    options = {} if retry is None else {"retry": retry}
    try:
        task.apply_async(args=args, **options)
    except Exception:  # kombu's OperationalError and its kin
        logger.exception("could not queue %s", what)
        return False
    return True


def task_send_on_commit(task: Any, args: tuple[Any, ...], *, what: str, retry: bool | None = None) -> None:
    """`task_send` once the current transaction commits (at once outside one): a broker that is down then
    loses this send only, never the transaction that asked for it."""
    transaction.on_commit(partial(task_send, task, args, what=what, retry=retry))


def job_models() -> list[type[Job]]:
    from django.apps import apps

    return [model for model in apps.get_models() if issubclass(model, Job)]


def jobs_requeue_stale(*, now: datetime | None = None, pending_for: timedelta = timedelta(minutes=10)) -> int:
    """Queue again the jobs no worker is on (a lost message, a dead worker); returns how many.

    Safe beside live workers: a duplicate message only meets a claimed or finished job.
    """
    now = now or timezone.now()
    count = 0
    for model in job_models():
        for job in model.objects.stale(now, queued_before=now - pending_for):
            count += job_enqueue(job)
    return count


# --- the Celery side ----------------------------------------------------------------------------------

#: Options every job task declares: it takes the job's id, and retries with backoff after a transient
#: error (the job was released first) or while another worker's live claim holds the job.
JOB_TASK_OPTIONS: dict[str, Any] = {
    "bind": True,
    "autoretry_for": TRANSIENT_ERRORS,
    "retry_backoff": 5,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 20,
}


def job_task_result(task: Any, outcome: JobOutcome) -> str:
    """What a job task returns: the outcome's status; `busy` becomes a retry once the lease would lapse."""
    if outcome.status == "busy":
        raise task.retry(countdown=outcome.retry_in)
    return outcome.status
