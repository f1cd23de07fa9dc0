"""Qrels builds: versioned, immutable qrels from the reliable annotators' labels (PRODUCT.md §1, seed 004 §21.3.2).

A build goes through:

1. `qrels_build_create`: a `pending` row with its parameters and the project's next version number; the
   task `annotations.tasks.qrels_build` (heavy queue) is queued when the transaction commits.
2. `qrels_build_run`, the task's one call: claim the row with a conditional UPDATE (`pending`, or
   `running` under a lapsed lease, so a run whose worker died is taken over), then compute without
   holding any lock, then write the judgments, counts and hash in one transaction, only while the lease
   is still ours. A finished build is never claimed again, so running the task twice changes nothing.
3. `qrels_compute`, the pure part: from the answers, drop attention checks (their documents are not in
   the collection), too-fast labels and the excluded annotators' labels (reliability as in
   `annotations.quality`, with the build's thresholds and the leads' overrides); keep a pair with at least
   `min_labels` labels within ±`tolerance` (`evalcore.aggregation.agreement_filter`); aggregate it
   (`aggregate_labels`: median rounded down by default, mean rounded half up, majority with ties to the
   lower grade, or Dawid-Skene anchored by the gold labels, estimated on all the pairs' used labels).

Exports (`qrels_trec`, `qrels_jsonl`) list the judgments sorted by (qid, doc_id) in plain string order
(code points, as Python sorts `str`, whatever the database collation), one line each, so the same
annotations and parameters give byte-identical files. `content_hash` is the sha256 of the TREC file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, Literal

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from annotations.models import Project, QrelsBuild, QrelsJudgment, Task
from annotations.quality import (
    ProjectAnswers,
    annotator_reliability,
    answers_quality,
    project_answers,
    project_overrides,
    read_snapshot,
)
from evalcore.aggregation import DISAGREEMENT, KEPT, TOO_FEW_LABELS, aggregate_labels, agreement_filter
from evalcore.agreement import LongLabels, agreement_stats
from evalcore.stats._validation import BoolArray

logger = logging.getLogger(__name__)

Status = QrelsBuild.Status
Aggregation = QrelsBuild.Aggregation

# The task's hard time limit is shorter than the lease, so a live run never outlasts its claim.
BUILD_TIME_LIMIT = 20 * 60
BUILD_LEASE = timedelta(seconds=BUILD_TIME_LIMIT + 5 * 60)
MAX_ATTEMPTS = 3
EXPORT_FORMATS = ("trec", "jsonl")


class QrelsBuildError(Exception):
    """Parameters or data a build refuses; the message is written for the lead."""


# --- creating -----------------------------------------------------------------------------------------


@transaction.atomic
def qrels_build_create(
    *,
    project: Project,
    created_by: AbstractBaseUser | None,
    tolerance: float = 1.0,
    aggregation: str = Aggregation.MEDIAN,
    min_accuracy: float | None = None,
    min_gold: int | None = None,
    min_labels: int = 2,
    enqueue: bool = True,
) -> QrelsBuild:
    """A pending build with the project's next version; queued on commit unless `enqueue` is False.

    The thresholds default to the project's (`min_gold_accuracy`, `min_gold_items`).
    """
    min_accuracy = project.min_gold_accuracy if min_accuracy is None else float(min_accuracy)
    min_gold = project.min_gold_items if min_gold is None else int(min_gold)
    _check_params(tolerance=tolerance, aggregation=aggregation, min_accuracy=min_accuracy, min_gold=min_gold,
                  min_labels=min_labels)  # fmt: skip
    # Version numbers are taken under the project's row lock; the unique constraint backs it up.
    Project.objects.select_for_update().filter(pk=project.pk).first()
    latest = QrelsBuild.objects.filter(project=project).aggregate(latest=Max("version"))["latest"] or 0
    build = QrelsBuild.objects.create(
        project=project,
        version=latest + 1,
        tolerance=float(tolerance),
        aggregation=aggregation,
        min_accuracy=min_accuracy,
        min_gold=min_gold,
        min_labels=int(min_labels),
        created_by=created_by,
    )
    if enqueue:
        transaction.on_commit(partial(qrels_build_enqueue, build_id=build.pk))
    return build


def _check_params(
    *, tolerance: float, aggregation: str, min_accuracy: float, min_gold: int, min_labels: int
) -> None:
    if aggregation not in Aggregation.values:
        raise QrelsBuildError(
            f"Unknown aggregation {aggregation!r}; choose from {', '.join(Aggregation.values)}."
        )
    if not (np.isfinite(tolerance) and tolerance >= 0):
        raise QrelsBuildError(f"The agreement tolerance must be a number >= 0, not {tolerance!r}.")
    if not 0 <= min_accuracy <= 1:
        raise QrelsBuildError(f"The minimum accuracy must be between 0 and 1, not {min_accuracy!r}.")
    if min_gold < 0:
        raise QrelsBuildError(f"The minimum number of gold items must be >= 0, not {min_gold!r}.")
    if min_labels < 1:
        raise QrelsBuildError(f"The minimum number of labels per pair must be >= 1, not {min_labels!r}.")


def qrels_build_enqueue(*, build_id: int) -> bool:
    """Queue the build's task. An unreachable broker fails the build with a message that says so."""
    from annotations.tasks import qrels_build

    try:
        qrels_build.apply_async((build_id,), retry=False)
    except (BrokerError, OSError) as error:
        logger.warning("qrels build %s not queued: %s", build_id, error)
        QrelsBuild.objects.unfinished().filter(pk=build_id).update(
            status=Status.FAILED,
            finished_at=timezone.now(),
            error=f"The task queue is unreachable ({error}). Build again later, or run "
            "`python manage.py build_qrels PROJECT --sync`.",
        )
        return False
    return True


# --- running ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunOutcome:
    """What `qrels_build_run` did: `done`, `failed`, `finished` (already; nothing to do), `busy` (another
    worker holds a live lease: try again in `retry_in` seconds), `lost` (our lease lapsed and another
    worker took the build over; our result was discarded) or `missing` (no such build)."""

    status: Literal["done", "failed", "finished", "busy", "lost", "missing"]
    retry_in: float = 0.0


def qrels_build_run(*, build_id: int, now: datetime | None = None) -> RunOutcome:
    """Claim, compute and store a build. Idempotent: safe to run twice, or after a crashed run."""
    token = uuid.uuid4()
    now = now or timezone.now()
    claim = QrelsBuild.objects.claimable(now).filter(pk=build_id)
    claimed = claim.filter(attempts__lt=MAX_ATTEMPTS).update(
        status=Status.RUNNING,
        lease_token=token,
        lease_expires_at=now + BUILD_LEASE,
        started_at=now,
        attempts=F("attempts") + 1,
    )
    if claimed != 1:
        return _not_claimed(build_id, now)
    build = QrelsBuild.objects.select_related("project").get(pk=build_id)
    try:
        with read_snapshot():
            answers = project_answers(build.project, with_times=True)
            pairs = project_pairs(build.project)
            overrides = project_overrides(build.project)
        result = qrels_compute(answers, pairs=pairs, overrides=overrides, params=build.params)
    except Exception as error:
        logger.exception("qrels build %s failed", build_id)
        _finish_failed(build_id, token, str(error) or type(error).__name__)
        return RunOutcome("failed")
    with transaction.atomic():
        build = (
            QrelsBuild.objects.select_for_update()
            .filter(pk=build_id, status=Status.RUNNING, lease_token=token)
            .first()
        )
        if build is None:
            return RunOutcome("lost")
        QrelsJudgment.objects.filter(build=build).delete()
        QrelsJudgment.objects.bulk_create(
            [QrelsJudgment(build=build, **judgment.fields()) for judgment in result.judgments],
            batch_size=2000,
        )
        build.status = Status.DONE
        build.pairs_kept = len(result.judgments)
        build.counts = result.counts
        build.agreement = result.agreement
        build.annotators = result.annotators
        build.content_hash = hashlib.sha256(qrels_trec(result.judgments).encode()).hexdigest()
        build.finished_at = timezone.now()
        build.lease_expires_at = None
        build.lease_token = None
        build.error = ""
        build.save()
    return RunOutcome("done")


def _not_claimed(build_id: int, now: datetime) -> RunOutcome:
    build = QrelsBuild.objects.filter(pk=build_id).first()
    if build is None:
        return RunOutcome("missing")
    if build.is_finished:
        return RunOutcome("finished")
    if build.attempts >= MAX_ATTEMPTS and (
        build.status == Status.PENDING or (build.lease_expires_at and build.lease_expires_at <= now)
    ):
        QrelsBuild.objects.claimable(now).filter(pk=build_id).update(
            status=Status.FAILED,
            finished_at=now,
            lease_token=None,
            lease_expires_at=None,
            error=f"Gave up after {build.attempts} attempts: each run ended without finishing (worker lost?).",
        )
        return RunOutcome("failed")
    wait = (build.lease_expires_at - now).total_seconds() if build.lease_expires_at else 1.0
    return RunOutcome("busy", retry_in=max(1.0, wait + 1.0))


def _finish_failed(build_id: int, token: uuid.UUID, message: str) -> None:
    QrelsBuild.objects.filter(pk=build_id, status=Status.RUNNING, lease_token=token).update(
        status=Status.FAILED,
        finished_at=timezone.now(),
        lease_token=None,
        lease_expires_at=None,
        error=message,
    )


# --- computing ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pairs:
    """The project's (topic, document) pairs: task ids (sorted) with their qid and doc_id."""

    task: np.ndarray
    qid: list[str]
    doc_id: list[str]


def project_pairs(project: Project) -> Pairs:
    rows = sorted(Task.objects.filter(project=project).values_list("id", "topic__qid", "document__doc_id"))
    return Pairs(
        task=np.array([row[0] for row in rows], dtype=np.int64),
        qid=[row[1] for row in rows],
        doc_id=[row[2] for row in rows],
    )


@dataclass(frozen=True)
class Judgment:
    qid: str
    doc_id: str
    rel: int
    score: float
    labels: list[dict[str, Any]] = field(default_factory=list)

    def fields(self) -> dict[str, Any]:
        return {
            "qid": self.qid,
            "doc_id": self.doc_id,
            "rel": self.rel,
            "score": self.score,
            "n_labels": len(self.labels),
            "labels": self.labels,
        }


@dataclass(frozen=True)
class BuildResult:
    judgments: list[Judgment]
    counts: dict[str, Any]
    agreement: dict[str, Any]
    annotators: dict[str, Any]


def qrels_compute(
    answers: ProjectAnswers, *, pairs: Pairs, overrides: dict[int, str], params: dict[str, Any]
) -> BuildResult:
    """Filter, check agreement and aggregate; see the module docstring. Judgments come out sorted."""
    reliability = annotator_reliability(
        answers_quality(answers),
        overrides=overrides,
        min_accuracy=params["min_accuracy"],
        min_gold=params["min_gold"],
    )
    attention = answers.on_attention_check
    graded = answers.graded
    too_fast = graded & ~attention & answers.too_fast
    excluded = graded & ~attention & ~answers.too_fast & ~reliability.included[answers.annotator_code]
    used = graded & ~attention & ~answers.too_fast & ~excluded

    candidates = np.setdiff1d(pairs.task, answers.attention)
    position = np.searchsorted(pairs.task, candidates)
    item_code = np.searchsorted(candidates, answers.task[used])
    labels = LongLabels.from_codes(
        item_code.astype(np.int64),
        answers.annotator_code[used],
        answers.grade[used],
        items=candidates,
        annotators=answers.annotators,
    )
    kept = agreement_filter(labels, tolerance=params["tolerance"], min_labels=params["min_labels"])
    scores = (
        aggregate_labels(labels, method=params["aggregation"], gold=answers.gold)
        if labels.n_labels
        else np.full(labels.n_items, np.nan)
    )
    rel = np.floor(scores + 0.5)  # the mean is rounded half up; the other methods give grades already
    provenance = _provenance(answers, used, labels, kept.kept)
    judgments = sorted(
        (
            Judgment(
                qid=pairs.qid[position[u]],
                doc_id=pairs.doc_id[position[u]],
                rel=int(rel[u]),
                score=float(scores[u]),
                labels=provenance[u],
            )
            for u in np.flatnonzero(kept.kept).tolist()
        ),
        key=lambda judgment: (judgment.qid, judgment.doc_id),
    )
    _check_trec_safe(judgments)
    reasons = kept.counts()
    no_labels = int(np.count_nonzero(labels.labels_per_item == 0))
    ids = reliability.annotators.tolist()
    answered = np.bincount(answers.annotator_code[graded], minlength=len(ids)) > 0
    return BuildResult(
        judgments=judgments,
        counts={
            "pairs": {
                "total": int(candidates.size),
                "kept": reasons[KEPT],
                "dropped": {
                    "no_labels": no_labels,
                    "too_few_labels": reasons[TOO_FEW_LABELS] - no_labels,
                    "disagreement": reasons[DISAGREEMENT],
                },
            },
            "labels": {
                "total": int(np.count_nonzero(graded)),
                "used": int(np.count_nonzero(used)),
                "in_kept_pairs": int(np.count_nonzero(kept.kept[labels.item])),
                "dropped": {
                    "attention_check": int(np.count_nonzero(graded & attention)),
                    "too_fast": int(np.count_nonzero(too_fast)),
                    "excluded_annotator": int(np.count_nonzero(excluded)),
                },
            },
        },
        agreement={
            "used_labels": _agreement_figures(labels),
            "kept_pairs": _agreement_figures(labels.select(kept.kept[labels.item])),
        },
        annotators={
            key: [
                {"username": answers.username(ids[i]), "reason": reliability.reasons[i]}
                for i in range(len(ids))
                if answered[i] and bool(reliability.included[i]) == (key == "included")
            ]
            for key in ("included", "excluded")
        },
    )


def _provenance(
    answers: ProjectAnswers, used: BoolArray, labels: LongLabels, kept: BoolArray
) -> dict[int, list[dict[str, Any]]]:
    """Per kept item, its labels as {annotator, grade, seconds, created_at}, by annotator then time.

    Label row j of `labels` is answer `flatnonzero(used)[j]`: the labels were built from `used` in order.
    """
    rows = np.flatnonzero(used)
    on_kept = np.flatnonzero(kept[labels.item])
    times = answers.created_at
    entries = sorted(
        (
            int(labels.item[j]),
            answers.username(answers.annotator[rows[j]]),
            _timestamp(times[rows[j]]) if times is not None else "",
            int(rows[j]),
        )
        for j in on_kept.tolist()
    )
    result: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for item, username, created, row in entries:
        result[item].append(
            {
                "annotator": username,
                "grade": int(answers.grade[row]),
                "seconds": round(float(answers.seconds[row]), 3),
                "created_at": created or None,
            }
        )
    return result


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _agreement_figures(labels: LongLabels) -> dict[str, Any]:
    stats = agreement_stats(labels)

    def number(value: float) -> float | None:
        return float(value) if np.isfinite(value) else None

    return {
        "n_labels": labels.n_labels,
        "n_pairable": stats.n_pairable,
        "exact_agreement": number(stats.exact_agreement()),
        "pairwise_agreement": number(stats.pairwise_agreement()),
        "pairwise_agreement_within_1": number(stats.pairwise_agreement(tolerance=1)),
        "fleiss_kappa": number(stats.fleiss_kappa()),
        "krippendorff_alpha_nominal": number(stats.krippendorff_alpha("nominal")),
        "krippendorff_alpha_ordinal": number(stats.krippendorff_alpha("ordinal")),
        "krippendorff_alpha_interval": number(stats.krippendorff_alpha("interval")),
    }


def _check_trec_safe(judgments: Sequence[Judgment]) -> None:
    for judgment in judgments:
        if (
            not judgment.qid
            or not judgment.doc_id
            or any(ch.isspace() for ch in judgment.qid + judgment.doc_id)
        ):
            raise QrelsBuildError(
                f"The pair {judgment.qid!r} / {judgment.doc_id!r} cannot be written as TREC qrels: "
                "ids must be non-empty and contain no whitespace."
            )


# --- exporting ----------------------------------------------------------------------------------------


def qrels_trec(judgments: Iterable[Judgment]) -> str:
    """TREC qrels, `qid 0 docno rel`, in the order given (builds store them sorted)."""
    return "".join(f"{j.qid} 0 {j.doc_id} {j.rel}\n" for j in judgments)


def qrels_jsonl(judgments: Iterable[Judgment]) -> str:
    """One JSON object per judgment with its labels' provenance, in the order given."""
    return "".join(
        json.dumps(
            {"qid": j.qid, "doc_id": j.doc_id, "rel": j.rel, "score": j.score, "n_labels": len(j.labels),
             "labels": j.labels},
            ensure_ascii=True,
            separators=(",", ":"),
            allow_nan=False,
        ) + "\n"
        for j in judgments
    )  # fmt: skip


def build_judgments(build: QrelsBuild) -> list[Judgment]:
    """A finished build's judgments, sorted by (qid, doc_id) in code point order."""
    rows = QrelsJudgment.objects.filter(build=build).values_list("qid", "doc_id", "rel", "score", "labels")
    judgments = [Judgment(qid=q, doc_id=d, rel=r, score=s, labels=labels) for q, d, r, s, labels in rows]
    return sorted(judgments, key=lambda judgment: (judgment.qid, judgment.doc_id))


def qrels_export(build: QrelsBuild, *, fmt: str) -> str:
    """The build's export as text: `trec` or `jsonl`."""
    if fmt not in EXPORT_FORMATS:
        raise QrelsBuildError(f"Unknown export format {fmt!r}; choose trec or jsonl.")
    if build.status != Status.DONE:
        raise QrelsBuildError(f"Build v{build.version} is {build.status}; only a done build can be exported.")
    judgments = build_judgments(build)
    return qrels_trec(judgments) if fmt == "trec" else qrels_jsonl(judgments)
