"""Annotator quality and project agreement, precomputed into a `QualitySnapshot`.

- Reading: `project_answers` reads every answer of a project with one `values_list` query into
  `evalcore.judging.Answers` (aligned arrays, no model instances), with the gold labels, the attention
  checks and the usernames; `project_overrides` reads the leads' decisions.
- Computing: `evalcore.judging.quality_figures` (pure; see there for what counts as a label).
- Writing: a `QualityRecompute` job (`evalplatform.jobs`) computes and stores the one snapshot row.
  `quality_recompute_request` creates and queues that job after new answers (on commit, debounced: at
  most one pending per project, sent `DEBOUNCE_SECONDS` later) and on a lead's demand (at once).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Max
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from annotations.models import (
    Annotation,
    AttentionCheck,
    GoldLabel,
    Project,
    ProjectMembership,
    QualityRecompute,
    QualitySnapshot,
)
from evalcore.judging import Answers, Override, quality_figures
from evalcore.metrics import metric_registry
from evalplatform import sqlrows
from evalplatform.auth import User
from evalplatform.jobs import JobOutcome, JobStatus, ProgressFn, job_enqueue, job_run
from series.services import MetricValueIn, metric_values_write
from series.subjects import annotator_series, project_series

logger = logging.getLogger(__name__)

Reason = QualityRecompute.Reason

# After new answers the recompute waits this long, so a burst of answers costs one recompute.
DEBOUNCE_SECONDS = 30
# A pending recompute whose message was sent longer ago than this is sent again by the next request
# (the message was lost: a broker restarted without persistence, say).
PENDING_LEASE = timedelta(minutes=10)
# The worker's hard time limit for one recompute.
TIME_LIMIT = 20 * 60


# --- reading ------------------------------------------------------------------------------------------


@contextmanager
def read_snapshot() -> Iterator[None]:
    """Several reads that must see one state of the project, though annotators keep answering.

    On PostgreSQL the outermost block runs at REPEATABLE READ; SQLite's transactions already read one
    snapshot. Nested in a caller's transaction, it reads at that transaction's level.
    """
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


def project_answers(project: Project, *, with_times: bool = False) -> Answers:
    """All answers of the project, read in bulk (one query for the answers, four small ones)."""
    fields = ["task_id", "annotator_id", "grade", "too_fast", "seconds_spent"]
    rows = list(
        Annotation.objects.filter(project=project)
        .order_by("id")
        .values_list(*fields, *(["created_at"] if with_times else []))
    )
    columns = list(zip(*rows, strict=True)) if rows else [()] * (len(fields) + with_times)
    members = ProjectMembership.objects.filter(project=project, role=ProjectMembership.Role.ANNOTATOR)
    member_ids = list(members.values_list("user_id", flat=True))
    users = get_user_model().objects.filter(pk__in={*columns[1], *member_ids})
    return Answers.from_columns(
        task=columns[0],
        annotator=columns[1],
        grade=columns[2],
        too_fast=columns[3],
        seconds=columns[4],
        created_at=columns[5] if with_times else None,
        members=member_ids,
        usernames=dict(users.values_list("pk", "username")),
        gold=dict(GoldLabel.objects.filter(task__project=project).values_list("task_id", "grade")),
        attention=list(
            AttentionCheck.objects.filter(task__project=project).values_list("task_id", flat=True)
        ),
        grades=project.grades,
    )


def project_overrides(project: Project) -> dict[int, Override]:
    """The leads' decisions (include / exclude) per annotator user id; `auto` members are left out."""
    return dict(
        ProjectMembership.objects.filter(project=project)  # type: ignore[arg-type]
        .exclude(quality_override=ProjectMembership.QualityOverride.AUTO)
        .values_list("user_id", "quality_override")
    )


# --- the recompute job --------------------------------------------------------------------------------


def quality_recompute_run(*, job_id: int, now: datetime | None = None) -> JobOutcome:
    """Compute and store the project's snapshot (the task's one call). Idempotent."""
    return job_run(QualityRecompute, pk=job_id, compute=_compute, store=_store, now=now)


def quality_snapshot_refresh(*, project_id: int) -> str:
    """Recompute the project's snapshot now, in this process (the demo loader, a command's `--sync`).

    Runs the pending job if there is one, else a new one; returns the outcome (`done`, `missing`, ...).
    """
    if not Project.objects.filter(pk=project_id).exists():
        return "missing"
    job = QualityRecompute.objects.filter(project_id=project_id, status=JobStatus.PENDING).first()
    if job is None:
        job = QualityRecompute.objects.create(project_id=project_id, reason=Reason.LEAD)
    return quality_recompute_run(job_id=job.pk).status


def _compute(job: QualityRecompute, progress: ProgressFn) -> dict[str, Any]:
    project = job.project
    progress(None, "reading the answers")
    with read_snapshot():
        read = answers_fingerprint(project.pk)  # of the answers read below, in the same snapshot
        answers = project_answers(project)
        overrides = project_overrides(project)
        latest = Annotation.objects.filter(project=project).order_by("-created_at").values_list("created_at")
        latest_answer_at = next(iter(latest[:1]), (None,))[0]
    progress(0.5, "computing agreement and accuracy")
    figures = quality_figures(
        answers, overrides=overrides, min_accuracy=project.min_gold_accuracy, min_gold=project.min_gold_items
    )
    return {
        **figures,
        _READ: read,
        "latest_answer_at": latest_answer_at,
        "min_gold_accuracy": project.min_gold_accuracy,
        "min_gold_items": project.min_gold_items,
    }


def _store(job: QualityRecompute, fields: dict[str, Any]) -> None:
    read = fields[_READ]
    fields = {key: value for key, value in fields.items() if key != _READ}
    if answers_fingerprint(job.project_id) != read:
        # Answers came or went after the figures' read: their requests may have joined this job while
        # it was pending (or been skipped by a web process's memo, `quality_recompute_request`), so
        # the next recompute is requested here, once this one is stored.
        transaction.on_commit(partial(quality_recompute_request, project_id=job.project_id))
    current = (
        # The snapshot row only: ordering by project would join and lock the project row.
        QualitySnapshot.objects.select_for_update(no_key=True, of=("self",))
        .filter(project_id=job.project_id)
        .order_by()
        .first()
    )
    if current is not None and current.requested_at and current.requested_at > job.created_at:
        return  # a later recompute already stored fresher figures
    computed_at = timezone.now()
    QualitySnapshot.objects.update_or_create(
        project_id=job.project_id,
        defaults={**fields, "computed_at": computed_at, "requested_at": job.created_at},
    )
    quality_values_write(job=job, figures=fields, observed_at=computed_at)


def quality_values(figures: dict[str, Any], *, project: Project) -> list[MetricValueIn]:
    """A recompute's scalars for the one metric table: the project's agreement with its CIs (subgroup
    "" over every annotator, "reliable" over the kept ones) and gold figures, in the project's series;
    each annotator's accuracy on gold, speed and label shares (by grade), in the annotator's series."""
    registry = metric_registry()
    url = project_quality_url(project)
    project_series_ = project_series(project, url=url)
    values: list[MetricValueIn] = []
    for subgroup, scope in (("", "all"), ("reliable", "reliable")):
        for name, figure in (figures.get("agreement", {}).get(scope, {}).get("measures") or {}).items():
            values.append(MetricValueIn(
                name, figure.get("estimate"), subgroup=subgroup, ci_low=figure.get("low"), ci_high=figure.get("high"),
                series=project_series_,
            ))  # fmt: skip
    rows = figures.get("annotators") or []
    for name in ("project_gold_accuracy", "reliable_annotators"):
        values.append(MetricValueIn(name, registry.resolve(name).kernel(rows), series=project_series_))  # type: ignore[misc]
    distribution = figures.get("label_distribution") or {}
    counts = dict(zip(distribution.get("annotators") or [], distribution.get("counts") or [], strict=False))
    grades = [str(grade) for grade in distribution.get("grades") or []]
    annotator_specs = [spec for spec in registry.family("annotator") if spec.name != "label_share"]
    for row in rows:
        series = annotator_series(project, row["user_id"], row["username"], url=url)
        values += [MetricValueIn(spec.name, spec.kernel(row), series=series) for spec in annotator_specs]  # type: ignore[misc]
        total = sum(counts.get(row["username"]) or [])
        if total:
            values += [
                MetricValueIn("label_share", count / total, subgroup=grade, series=series)
                for grade, count in zip(grades, counts[row["username"]], strict=False)
            ]
    return values


def quality_values_write(*, job: QualityRecompute, figures: dict[str, Any], observed_at: datetime) -> int:
    """Store the recompute's scalars in the one metric table (`series.services.metric_values_write`)."""
    return metric_values_write(
        job=job, values=quality_values(figures, project=job.project), observed_at=observed_at
    )


def project_quality_url(project: Project) -> str:
    """The project's quality dashboard: the page its series and its annotators' link to."""
    try:
        return reverse("annotations:quality", args=[project.slug])
    except NoReverseMatch:
        return ""


#: The key of the figures' dict that carries `answers_fingerprint` as the job read it, to `_store`.
_READ = "_answers_read"


def answers_fingerprint(project_id: int) -> tuple[int, int]:
    """How many answers the project has, and its newest answer's id: any answer stored or taken back
    (an undo) changes it."""
    row = Annotation.objects.filter(project_id=project_id).aggregate(n=Count("id"), top=Max("id"))
    return int(row["n"]), int(row["top"] or 0)


#: Project id -> until when (`time.monotonic()`) this process knows a pending recompute that new answers
#: join: `quality_recompute_request` asks the database again only after that.
_joined: dict[int, float] = {}


def _pending_recompute(*, project_id: int, sent_after: datetime) -> tuple[int, bool] | None:
    """The project's pending recompute: its id and whether it was sent after `sent_after`. Every answer
    asks, so the statement is written out (a queryset cost more than the rest of the answer's check)."""
    with sqlrows.cursor() as cursor:
        cursor.execute(
            f"SELECT id, queued_at IS NOT NULL AND queued_at > %s FROM {QualityRecompute._meta.db_table} "
            "WHERE project_id = %s AND status = %s ORDER BY id LIMIT 1",
            [connection.ops.adapt_datetimefield_value(sent_after), project_id, JobStatus.PENDING.value],
        )
        row = cursor.fetchone()
    return None if row is None else (int(row[0]), bool(row[1]))


def quality_recompute_request(
    *,
    project_id: int,
    force: bool = False,
    reason: str | None = None,
    countdown: float | None = None,
    now: datetime | None = None,
) -> bool:
    """Queue a quality recompute of the project; False when one is already pending or the queue is down.

    After new answers (`force=False`) it is debounced: the first request creates the pending job and
    sends it `DEBOUNCE_SECONDS` later; later requests join it. A lead's request (`force=True`) sends the
    pending job (or a new one) at once. Never raises for an unreachable broker: answering must keep
    working without Redis (the job is then failed with the reason, and the next request tries again).

    Every answer asks: once a process has seen the pending job sent, it joins it without asking the
    database for `QUALITY_JOIN_MEMO_SECONDS`. Answers that miss a job started meanwhile are not lost:
    each recompute compares the answers after it stored its figures with those it read (`_store`),
    and requests the next one when they differ.
    """
    memo = float(getattr(settings, "QUALITY_JOIN_MEMO_SECONDS", 0))
    if not force and memo > 0 and _joined.get(project_id, 0.0) > time.monotonic():
        return False  # joins the pending recompute this process saw a moment ago
    now = now or timezone.now()
    countdown = (0 if force else DEBOUNCE_SECONDS) if countdown is None else countdown
    pending = _pending_recompute(project_id=project_id, sent_after=now - PENDING_LEASE)
    if pending is not None:
        pending_id, sent_lately = pending
        if sent_lately and not force:
            _joined[project_id] = time.monotonic() + memo
            return False
        return job_enqueue(QualityRecompute.objects.get(pk=pending_id), countdown=countdown)
    try:
        with transaction.atomic():
            job = QualityRecompute.objects.create(
                project_id=project_id, reason=reason or (Reason.LEAD if force else Reason.ANSWERS)
            )
    except IntegrityError:  # a concurrent request created the pending job first
        return False
    return job_enqueue(job, countdown=countdown)


@transaction.atomic
def annotator_override_set(
    *, project: Project, annotator: User | int, decision: str, by: User
) -> ProjectMembership:
    """Disqualify (`exclude`), reinstate (`include`) or hand back to the thresholds (`auto`) an annotator.

    Recorded with who and when; the snapshot is recomputed after commit.
    """
    decision = ProjectMembership.QualityOverride(decision)
    user_id = annotator if isinstance(annotator, int) else annotator.pk
    membership = ProjectMembership.objects.select_for_update(no_key=True, of=("self",)).get(
        project=project, user_id=user_id, role=ProjectMembership.Role.ANNOTATOR
    )
    membership.quality_override = decision
    membership.quality_override_by = by  # type: ignore[assignment]
    membership.quality_override_at = timezone.now()
    membership.save(update_fields=["quality_override", "quality_override_by", "quality_override_at"])
    transaction.on_commit(
        lambda: quality_recompute_request(project_id=project.pk, force=True, reason=Reason.OVERRIDE)
    )
    return membership
