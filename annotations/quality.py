"""Annotator quality and project agreement, precomputed into a `QualitySnapshot` (PRODUCT.md §1, Quality).

- Reading: `project_answers` reads every answer of a project with one `values_list` query into aligned
  arrays (no model instances), plus the gold labels, the attention checks and the usernames.
- Computing: `quality_compute` reduces them with `evalcore.agreement`; `annotator_reliability` applies the
  thresholds (accuracy on gold >= `min_accuracy` on at least `min_gold` gold items, seed 004 §21.3.2) and
  the leads' overrides. Qrels builds (`annotations/qrels.py`) use the same two functions.
- Writing: `quality_snapshot_refresh` (run by `annotations.tasks.quality_recompute`) claims the project's
  `QualityLease` with a conditional UPDATE, computes, and stores the one `QualitySnapshot` row.
  `quality_recompute_request` queues that task after new answers (on commit, debounced: at most one
  pending per project, guarded by the lease's `pending_until`) and on a lead's demand.

Labels that count are grades given in time: skipped and unclear answers carry no grade, and too-fast
answers are left out of every label statistic but counted in the annotator's too-fast share. The median
seconds per task is over all of an annotator's answers. Agreement leaves attention checks out (their
documents are written to be obvious); accuracy on gold counts them, as gold.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError
from numpy.typing import NDArray

from annotations.models import (
    Annotation,
    AttentionCheck,
    GoldLabel,
    Project,
    ProjectMembership,
    QualityLease,
    QualitySnapshot,
)
from evalcore.agreement import (
    AgreementStats,
    AnnotatorQuality,
    LongLabels,
    PairConfusion,
    agreement_report,
    agreement_stats,
    annotator_quality,
    bootstrap_agreement,
)
from evalcore.stats._validation import BoolArray, FloatArray, IntArray

logger = logging.getLogger(__name__)

Override = ProjectMembership.QualityOverride

# After new answers the recompute waits this long, so a burst of answers costs one recompute.
DEBOUNCE_SECONDS = 30
# A queued recompute keeps later requests from queueing another until this long has passed.
PENDING_LEASE = timedelta(minutes=10)
# When the broker is unreachable, requests try again after this long.
BROKER_RETRY = timedelta(seconds=30)
# A worker's claim on a recompute; the task's time limit is shorter, so a live run never outlasts it.
RUNNING_LEASE = timedelta(minutes=30)
BOOTSTRAP_RESAMPLES = 1_000
CONFIDENCE = 0.95
TOLERANCE = 1  # "within ±1" in accuracy on gold, consensus agreement and pairwise agreement

# Project agreement measures: (name, measure in evalcore's registry, Krippendorff level).
AGREEMENT_MEASURES: tuple[tuple[str, str, str], ...] = (
    ("exact_agreement", "exact_agreement", "ordinal"),
    ("pairwise_agreement", "pairwise_agreement", "ordinal"),
    ("fleiss_kappa", "fleiss_kappa", "ordinal"),
    ("krippendorff_alpha_nominal", "krippendorff_alpha", "nominal"),
    ("krippendorff_alpha_ordinal", "krippendorff_alpha", "ordinal"),
    ("krippendorff_alpha_interval", "krippendorff_alpha", "interval"),
)


# --- reading ------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ProjectAnswers:
    """Every answer of a project as aligned arrays, one entry per answer.

    `grade` is NaN for skipped and unclear answers. `annotators` is the sorted user ids of the project's
    annotators and of everyone who answered; `annotator_code` indexes it. `labels(mask)` makes the
    `LongLabels` of a subset, items being task ids. `created_at` is read only when asked for (the
    provenance of qrels builds).
    """

    task: IntArray
    annotator: IntArray
    grade: FloatArray
    too_fast: BoolArray
    seconds: FloatArray
    created_at: NDArray[Any] | None
    annotators: IntArray
    annotator_code: IntArray
    usernames: dict[int, str]
    gold: dict[int, int]
    attention: IntArray
    grades: list[int]

    @property
    def n_answers(self) -> int:
        return int(self.task.size)

    @property
    def graded(self) -> BoolArray:
        return ~np.isnan(self.grade)

    @property
    def counted(self) -> BoolArray:
        """The labels that count: a grade given in time."""
        return self.graded & ~self.too_fast

    @property
    def on_attention_check(self) -> BoolArray:
        return np.isin(self.task, self.attention)

    def labels(self, mask: BoolArray) -> LongLabels:
        """The graded answers where `mask` holds, items = their task ids, over all the annotators."""
        keep = mask & self.graded
        items, item_code = np.unique(self.task[keep], return_inverse=True)
        return LongLabels.from_codes(
            item_code.astype(np.int64),
            self.annotator_code[keep],
            self.grade[keep],
            items=items,
            annotators=self.annotators,
        )

    def username(self, user_id: int) -> str:
        return self.usernames.get(int(user_id), str(user_id))


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


def project_answers(project: Project, *, with_times: bool = False) -> ProjectAnswers:
    """All answers of the project, read in bulk (one query for the answers, three small ones)."""
    fields = ["task_id", "annotator_id", "grade", "too_fast", "seconds_spent"]
    rows = list(
        Annotation.objects.filter(project=project)
        .order_by("id")
        .values_list(*fields, *(["created_at"] if with_times else []))
    )
    columns = list(zip(*rows, strict=True)) if rows else [()] * (len(fields) + with_times)
    grade = np.array([np.nan if g is None else g for g in columns[2]], dtype=np.float64)
    annotator = np.array(columns[1], dtype=np.int64)
    members = ProjectMembership.objects.filter(project=project, role=ProjectMembership.Role.ANNOTATOR)
    annotators = np.union1d(annotator, np.array(list(members.values_list("user_id", flat=True)), np.int64))
    users = get_user_model().objects.filter(pk__in=annotators.tolist())
    usernames = dict(users.values_list("pk", "username"))
    gold = dict(GoldLabel.objects.filter(task__project=project).values_list("task_id", "grade"))
    attention = AttentionCheck.objects.filter(task__project=project).values_list("task_id", flat=True)
    return ProjectAnswers(
        task=np.array(columns[0], dtype=np.int64),
        annotator=annotator,
        grade=grade,
        too_fast=np.array(columns[3], dtype=np.bool_),
        seconds=np.array(columns[4], dtype=np.float64),
        created_at=np.array(columns[5], dtype=object) if with_times else None,
        annotators=annotators.astype(np.int64),
        annotator_code=np.searchsorted(annotators, annotator).astype(np.int64),
        usernames=usernames,
        gold=gold,
        attention=np.array(sorted(attention), dtype=np.int64),
        grades=project.grades,
    )


def project_overrides(project: Project) -> dict[int, str]:
    """The leads' decisions (include / exclude) per annotator user id; `auto` members are left out."""
    return dict(
        ProjectMembership.objects.filter(project=project)
        .exclude(quality_override=Override.AUTO)
        .values_list("user_id", "quality_override")
    )


# --- reliability --------------------------------------------------------------------------------------

Reason = Literal["reliable", "too_few_gold", "low_accuracy", "reinstated", "disqualified"]
REASONS: dict[str, str] = {
    "reliable": "accurate on gold",
    "too_few_gold": "too few gold items",
    "low_accuracy": "inaccurate on gold",
    "reinstated": "reinstated by a lead",
    "disqualified": "disqualified by a lead",
}


@dataclass(frozen=True, eq=False)
class Reliability:
    """Which annotators' labels go into qrels; arrays aligned with `annotators` (user ids)."""

    annotators: IntArray
    meets_thresholds: BoolArray
    included: BoolArray
    reasons: list[Reason]
    threshold_reasons: list[Reason]


def annotator_reliability(
    quality: AnnotatorQuality, *, overrides: dict[int, str], min_accuracy: float, min_gold: int
) -> Reliability:
    """Seed 004's rule (exact accuracy on gold >= `min_accuracy` on >= `min_gold` items), then overrides."""
    ids = np.asarray(quality.annotators, dtype=np.int64)
    meets = quality.reliable(min_accuracy=min_accuracy, min_gold=min_gold)
    verdicts: list[Reason] = [
        "reliable" if ok else "too_few_gold" if seen < min_gold else "low_accuracy"
        for ok, seen in zip(meets.tolist(), quality.gold_seen.tolist(), strict=True)
    ]
    decisions = [overrides.get(user_id, Override.AUTO) for user_id in ids.tolist()]
    included = np.array(
        [
            d == Override.INCLUDE or (d == Override.AUTO and ok)
            for d, ok in zip(decisions, meets.tolist(), strict=True)
        ],
        dtype=np.bool_,
    )
    reasons: list[Reason] = [
        "reinstated" if d == Override.INCLUDE else "disqualified" if d == Override.EXCLUDE else verdict
        for d, verdict in zip(decisions, verdicts, strict=True)
    ]
    return Reliability(ids, meets, included, reasons, verdicts)


def answers_quality(answers: ProjectAnswers) -> AnnotatorQuality:
    """Accuracy on gold and consensus agreement, over the labels that count (attention checks included)."""
    return annotator_quality(
        answers.labels(answers.counted), gold=answers.gold, tolerance=TOLERANCE, rounding="floor"
    )


# --- computing the snapshot ---------------------------------------------------------------------------


def quality_compute(
    answers: ProjectAnswers,
    *,
    overrides: dict[int, str],
    min_accuracy: float,
    min_gold: int,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
) -> dict[str, Any]:
    """The fields of a `QualitySnapshot`: per-annotator rows, agreement, kappa, distribution, statistics."""
    quality = answers_quality(answers)
    reliability = annotator_reliability(
        quality, overrides=overrides, min_accuracy=min_accuracy, min_gold=min_gold
    )
    not_attention = ~answers.on_attention_check
    everyone = answers.labels(answers.counted & not_attention)
    reliable = answers.labels(answers.counted & not_attention & reliability.included[answers.annotator_code])
    report = agreement_report(everyone, level="ordinal")
    with_labels = np.flatnonzero(np.bincount(everyone.annotator, minlength=everyone.n_annotators) > 0)
    names = [answers.username(user_id) for user_id in answers.annotators.tolist()]
    return {
        "answers": answers.n_answers,
        "annotators": _annotator_rows(answers, quality, reliability, names),
        "agreement": {
            "all": _agreement(everyone, n_resamples=n_resamples),
            "reliable": _agreement(reliable, n_resamples=n_resamples),
        },
        "kappa": {
            "annotators": [names[i] for i in with_labels],
            **{
                weights: _json_matrix(matrix[np.ix_(with_labels, with_labels)])
                for weights, matrix in report.cohen_kappa.items()
            },
            "shared_items": _json_matrix(
                report.confusion.shared_items()[np.ix_(with_labels, with_labels)], integer=True
            ),
        },
        "label_distribution": _label_distribution(answers, names),
        "statistics": {
            "all": {
                "agreement_stats": _stats_json(report.stats),
                "pair_confusion": _confusion_json(report.confusion, names),
            },
            "reliable": {"agreement_stats": _stats_json(agreement_stats(reliable))},
        },
    }


def _annotator_rows(
    answers: ProjectAnswers, quality: AnnotatorQuality, reliability: Reliability, names: list[str]
) -> list[dict[str, Any]]:
    n = answers.annotators.size
    code = answers.annotator_code
    per = np.bincount(code, minlength=n)
    graded = np.bincount(code, weights=answers.graded, minlength=n)
    too_fast = np.bincount(code, weights=answers.too_fast, minlength=n)
    medians = _median_per_group(code, answers.seconds, n)
    rows = []
    for i, user_id in enumerate(answers.annotators.tolist()):
        rows.append(
            {
                "user_id": user_id,
                "username": names[i],
                "answers": int(per[i]),
                "graded": int(graded[i]),
                "labels": int(quality.n_labels[i]),
                "too_fast": int(too_fast[i]),
                "too_fast_share": _number(too_fast[i] / graded[i]) if graded[i] else None,
                "median_seconds": _number(medians[i]),
                "gold_seen": int(quality.gold_seen[i]),
                "gold_accuracy": _number(quality.gold_accuracy[i]),
                "gold_accuracy_within": _number(quality.gold_accuracy_within[i]),
                "gold_mae": _number(quality.gold_mae[i]),
                "consensus_seen": int(quality.consensus_seen[i]),
                "consensus_agreement": _number(quality.consensus_agreement[i]),
                "consensus_agreement_within": _number(quality.consensus_agreement_within[i]),
                "meets_thresholds": bool(reliability.meets_thresholds[i]),
                "threshold_reason": reliability.threshold_reasons[i],
                "included": bool(reliability.included[i]),
                "reason": reliability.reasons[i],
            }
        )
    return rows


def _median_per_group(group: IntArray, values: FloatArray, n_groups: int) -> FloatArray:
    """The median of `values` within each group 0..n_groups-1 (NaN for an empty group), by one sort."""
    order = np.lexsort((values, group))
    ordered = values[order]
    counts = np.bincount(group, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    result = np.full(n_groups, np.nan)
    some = counts > 0
    low = ordered[starts[some] + (counts[some] - 1) // 2]
    high = ordered[starts[some] + counts[some] // 2]
    result[some] = (low + high) / 2.0
    return result


def _agreement(labels: LongLabels, *, n_resamples: int) -> dict[str, Any]:
    """Agreement measures with percentile bootstrap CIs over items, and pairwise agreement within ±1."""
    intervals_by_name: dict[str, dict[str, float | None]] = {}
    for level in ("ordinal", "nominal", "interval"):
        wanted = [(name, measure) for name, measure, at in AGREEMENT_MEASURES if at == level]
        intervals = bootstrap_agreement(
            labels,
            measures=[measure for _, measure in wanted],
            level=level,  # type: ignore[arg-type]
            n_resamples=n_resamples,
            confidence=CONFIDENCE,
            seed=0,
        )
        for name, measure in wanted:
            ci = intervals[measure]
            intervals_by_name[name] = {
                "estimate": _number(ci.estimate),
                "low": _number(ci.low),
                "high": _number(ci.high),
            }
    stats = agreement_stats(labels)
    measures = {name: intervals_by_name[name] for name, _, _ in AGREEMENT_MEASURES}
    within = stats.pairwise_agreement(tolerance=TOLERANCE)
    measures["pairwise_agreement_within_1"] = {"estimate": _number(within), "low": None, "high": None}
    return {
        "n_labels": labels.n_labels,
        "n_items": int(np.count_nonzero(labels.labels_per_item)),
        "n_pairable": stats.n_pairable,
        "n_annotators": int(np.count_nonzero(np.bincount(labels.annotator, minlength=labels.n_annotators))),
        "confidence": CONFIDENCE,
        "n_resamples": n_resamples,
        "measures": measures,
    }


def _label_distribution(answers: ProjectAnswers, names: list[str]) -> dict[str, Any]:
    """Graded answers per annotator and grade (too-fast ones included: the chart shows behaviour)."""
    grades = sorted(set(answers.grades) | set(np.unique(answers.grade[answers.graded]).astype(int).tolist()))
    graded = answers.graded
    column = np.searchsorted(np.array(grades), answers.grade[graded].astype(np.int64))
    n = answers.annotators.size
    counts = np.bincount(
        answers.annotator_code[graded] * len(grades) + column, minlength=n * len(grades)
    ).reshape(n, len(grades))
    return {"grades": grades, "annotators": names, "counts": counts.tolist()}


def _stats_json(stats: AgreementStats) -> dict[str, Any]:
    return {
        "values": stats.values.tolist(),
        "coincidence": stats.coincidence.tolist(),
        "pair_counts": stats.pair_counts.tolist(),
        "n_items": stats.n_items,
        "n_pairable": stats.n_pairable,
        "n_unanimous": stats.n_unanimous,
        "fleiss_sum": float(stats.fleiss_sum),
        "min_labels": stats.min_labels,
        "max_labels": stats.max_labels,
    }


def _confusion_json(confusion: PairConfusion, names: list[str]) -> dict[str, Any]:
    return {
        "annotators": [names[int(i)] for i in range(confusion.n_annotators)],
        "values": confusion.values.tolist(),
        "counts": confusion.counts.tolist(),
    }


def _number(value: Any) -> float | None:
    """A float for JSON: NaN and infinities (undefined figures) become None."""
    number = float(value)
    return number if np.isfinite(number) else None


def _json_matrix(matrix: NDArray[Any], *, integer: bool = False) -> list[list[Any]]:
    if integer:
        return np.asarray(matrix, dtype=np.int64).tolist()
    return [[_number(x) for x in row] for row in np.asarray(matrix, dtype=np.float64)]


# --- writing ------------------------------------------------------------------------------------------

RefreshOutcome = Literal["done", "busy", "missing"]


def quality_snapshot_refresh(*, project_id: int, now: datetime | None = None) -> RefreshOutcome:
    """Recompute and store a project's quality snapshot, unless another worker is computing it (`busy`).

    The claim is a conditional UPDATE of the lease row (free, or its holder's lease lapsed) that also
    clears `pending_until`, so answers arriving from now on queue the next recompute.
    """
    now = now or timezone.now()
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return "missing"
    QualityLease.objects.get_or_create(project=project)
    token = uuid.uuid4()
    claimed = (
        QualityLease.objects.filter(project=project)
        .filter(Q(running_until__isnull=True) | Q(running_until__lte=now))
        .update(running_until=now + RUNNING_LEASE, token=token, pending_until=None)
    )
    if claimed != 1:
        return "busy"
    try:
        with read_snapshot():
            answers = project_answers(project)
            overrides = project_overrides(project)
        fields = quality_compute(
            answers,
            overrides=overrides,
            min_accuracy=project.min_gold_accuracy,
            min_gold=project.min_gold_items,
        )
        latest = (
            Annotation.objects.filter(project=project)
            .order_by("-created_at")
            .values_list("created_at", flat=True)
        )
        with transaction.atomic():
            if QualityLease.objects.select_for_update().filter(project=project, token=token).exists():
                QualitySnapshot.objects.update_or_create(
                    project=project,
                    defaults={
                        **fields,
                        "computed_at": timezone.now(),
                        "latest_answer_at": latest.first(),
                        "min_gold_accuracy": project.min_gold_accuracy,
                        "min_gold_items": project.min_gold_items,
                    },
                )
    finally:
        QualityLease.objects.filter(project=project, token=token).update(running_until=None, token=None)
    return "done"


def quality_lease_busy_for(*, project_id: int, now: datetime | None = None) -> float:
    """Seconds until the running recompute's lease lapses (0 when none is running)."""
    now = now or timezone.now()
    until = QualityLease.objects.filter(project_id=project_id).values_list("running_until", flat=True).first()
    return max(0.0, (until - now).total_seconds()) if until else 0.0


def quality_recompute_request(
    *, project_id: int, force: bool = False, countdown: float | None = None, now: datetime | None = None
) -> bool:
    """Queue a quality recompute of the project; False when one is already pending or the queue is down.

    After new answers (`force=False`) it is debounced: only the first request takes the pending lease and
    queues the task, `DEBOUNCE_SECONDS` later. A lead's request (`force=True`) queues one now regardless.
    Never raises for an unreachable broker: answering must keep working without Redis.
    """
    now = now or timezone.now()
    countdown = (0 if force else DEBOUNCE_SECONDS) if countdown is None else countdown
    rows = QualityLease.objects.filter(project_id=project_id)
    if not force:
        rows = rows.filter(Q(pending_until__isnull=True) | Q(pending_until__lte=now))
    if rows.update(pending_until=now + PENDING_LEASE, requested_at=now) != 1:
        _, created = QualityLease.objects.get_or_create(
            project_id=project_id, defaults={"pending_until": now + PENDING_LEASE, "requested_at": now}
        )
        if not created:
            return False
    from annotations.tasks import quality_recompute

    try:
        quality_recompute.apply_async((project_id,), countdown=countdown, retry=False)
    except (BrokerError, OSError) as error:
        logger.warning("quality recompute of project %s not queued: %s", project_id, error)
        QualityLease.objects.filter(project_id=project_id).update(pending_until=now + BROKER_RETRY)
        return False
    return True


@transaction.atomic
def annotator_override_set(
    *, project: Project, annotator: AbstractBaseUser | int, decision: str, by: AbstractBaseUser
) -> ProjectMembership:
    """Disqualify (`exclude`), reinstate (`include`) or hand back to the thresholds (`auto`) an annotator.

    Recorded with who and when; the snapshot is recomputed after commit.
    """
    decision = Override(decision)
    user_id = annotator if isinstance(annotator, int) else annotator.pk
    membership = ProjectMembership.objects.select_for_update().get(
        project=project, user_id=user_id, role=ProjectMembership.Role.ANNOTATOR
    )
    membership.quality_override = decision
    membership.quality_override_by = by  # type: ignore[assignment]
    membership.quality_override_at = timezone.now()
    membership.save(update_fields=["quality_override", "quality_override_by", "quality_override_at"])
    transaction.on_commit(lambda: quality_recompute_request(project_id=project.pk, force=True))
    return membership
