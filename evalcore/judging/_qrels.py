"""Qrels from judged answers: filter the labels, keep the pairs that agree, aggregate, export.

From the answers, drop attention checks (their documents are not in the collection), too-fast labels and
the excluded annotators' labels (reliability with the build's thresholds and the leads' overrides); keep
a pair with at least `min_labels` labels within ±`tolerance` (`evalcore.aggregation.agreement_filter`);
aggregate it (`aggregate_labels`: median rounded down by default, mean rounded half up, majority with
ties to the lower grade, or Dawid-Skene anchored by the gold labels, estimated on all the pairs' used
labels).

Exports (`qrels_trec`, `qrels_jsonl`) list the judgments sorted by (qid, doc_id) in plain string order
(code points, as Python sorts `str`), one line each, so the same answers and parameters give
byte-identical files.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal, TypeAlias, TypedDict

import numpy as np

from evalcore.aggregation import DISAGREEMENT, KEPT, TOO_FEW_LABELS, aggregate_labels, agreement_filter
from evalcore.agreement import LongLabels
from evalcore.errors import EvalCoreError
from evalcore.judging._answers import Answers, Pairs
from evalcore.judging._quality import agreement_values
from evalcore.judging._reliability import Override, Reason, annotator_reliability, answers_quality
from evalcore.stats._validation import BoolArray

Aggregation: TypeAlias = Literal["median", "mean", "majority", "dawid_skene"]
AGGREGATIONS: dict[Aggregation, str] = {
    "median": "Median (rounded down)",
    "mean": "Mean (rounded half up)",
    "majority": "Majority vote (ties to the lower grade)",
    "dawid_skene": "Dawid-Skene (anchored by gold)",
}
ExportFormat: TypeAlias = Literal["trec", "jsonl"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("trec", "jsonl")


class QrelsError(EvalCoreError, ValueError):
    """Parameters or data a qrels build refuses; the message is written for the lead."""


@dataclass(frozen=True)
class QrelsParams:
    """The parameters of a qrels build, with their defaults. Declared once: the model, the form, the API,
    the command and the service all read it.

    `min_accuracy` and `min_gold` are the reliability thresholds (a project's own thresholds fill them
    when a build does not set them); `tolerance` keeps a pair whose labels span at most that many grades;
    `min_labels` is the fewest labels a kept pair needs.
    """

    tolerance: float = 1.0
    aggregation: Aggregation = "median"
    min_accuracy: float = 0.7
    min_gold: int = 10
    min_labels: int = 2

    # Upper bounds, beyond which a build could keep nothing anyway (and the stored columns overflow).
    MAX_TOLERANCE: ClassVar[float] = 1_000.0
    MAX_MIN_GOLD: ClassVar[int] = 1_000_000
    MAX_MIN_LABELS: ClassVar[int] = 1_000

    def __post_init__(self) -> None:
        if self.aggregation not in AGGREGATIONS:
            raise QrelsError(
                f"Unknown aggregation {self.aggregation!r}; choose from {', '.join(AGGREGATIONS)}."
            )
        if not (np.isfinite(self.tolerance) and 0 <= self.tolerance <= self.MAX_TOLERANCE):
            raise QrelsError(
                f"The agreement tolerance must be a number from 0 to {self.MAX_TOLERANCE:g}, "
                f"not {self.tolerance!r}."
            )
        if not 0 <= self.min_accuracy <= 1:
            raise QrelsError(f"The minimum accuracy must be between 0 and 1, not {self.min_accuracy!r}.")
        if not 0 <= self.min_gold <= self.MAX_MIN_GOLD:
            raise QrelsError(
                f"The minimum number of gold items must be from 0 to {self.MAX_MIN_GOLD}, not {self.min_gold!r}."
            )
        if not 1 <= self.min_labels <= self.MAX_MIN_LABELS:
            raise QrelsError(
                f"The minimum number of labels per pair must be from 1 to {self.MAX_MIN_LABELS}, "
                f"not {self.min_labels!r}."
            )

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


DEFAULT_QRELS_PARAMS = QrelsParams()


class PairCounts(TypedDict):
    total: int
    kept: int
    dropped: dict[str, int]  # no_labels, too_few_labels, disagreement


class LabelCounts(TypedDict):
    total: int
    used: int
    in_kept_pairs: int
    dropped: dict[str, int]  # attention_check, too_fast, excluded_annotator


class QrelsCounts(TypedDict):
    """What a build kept and dropped, by reason: stored with the build and shown to the lead."""

    pairs: PairCounts
    labels: LabelCounts


class AnnotatorVerdict(TypedDict):
    username: str
    reason: Reason


@dataclass(frozen=True)
class Judgment:
    """One judged pair: its relevance, the aggregate before rounding, and the labels it came from."""

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
class QrelsResult:
    judgments: list[Judgment]
    counts: QrelsCounts
    agreement: dict[str, Any]
    annotators: dict[str, list[AnnotatorVerdict]]


def qrels_compute(
    answers: Answers, *, pairs: Pairs, overrides: Mapping[int, Override], params: QrelsParams
) -> QrelsResult:
    """Filter, check agreement and aggregate; see the module docstring. Judgments come out sorted."""
    reliability = annotator_reliability(
        answers_quality(answers),
        overrides=overrides,
        min_accuracy=params.min_accuracy,
        min_gold=params.min_gold,
    )
    attention = answers.on_attention_check
    graded = answers.graded
    too_fast = graded & ~attention & answers.too_fast
    excluded = graded & ~attention & ~answers.too_fast & ~reliability.included[answers.annotator_code]
    used = graded & ~attention & ~answers.too_fast & ~excluded

    candidates = np.setdiff1d(pairs.task, answers.attention)
    position = np.searchsorted(pairs.task, candidates)
    labels = LongLabels.from_codes(
        np.searchsorted(candidates, answers.task[used]).astype(np.int64),
        answers.annotator_code[used],
        answers.grade[used],
        items=candidates,
        annotators=answers.annotators,
    )
    kept = agreement_filter(labels, tolerance=params.tolerance, min_labels=params.min_labels)
    scores = (
        aggregate_labels(labels, method=params.aggregation, gold=answers.gold)
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
    check_trec_safe(judgments)
    reasons = kept.counts()
    no_labels = int(np.count_nonzero(labels.labels_per_item == 0))
    ids = reliability.annotators.tolist()
    answered = np.bincount(answers.annotator_code[graded], minlength=len(ids)) > 0
    counts: QrelsCounts = {
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
    }
    return QrelsResult(
        judgments=judgments,
        counts=counts,
        agreement={
            "used_labels": agreement_values(labels),
            "kept_pairs": agreement_values(labels.select(kept.kept[labels.item])),
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
    answers: Answers, used: BoolArray, labels: LongLabels, kept: BoolArray
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


def check_trec_safe(judgments: Sequence[Judgment]) -> None:
    """Refuse ids that TREC's whitespace-separated columns cannot hold."""
    for judgment in judgments:
        ids = judgment.qid + judgment.doc_id
        if not judgment.qid or not judgment.doc_id or any(ch.isspace() for ch in ids):
            raise QrelsError(
                f"The pair {judgment.qid!r} / {judgment.doc_id!r} cannot be written as TREC qrels: "
                "ids must be non-empty and contain no whitespace."
            )


def qrels_trec(judgments: Iterable[Judgment]) -> str:
    """TREC qrels, `qid 0 docno rel`, in the order given (builds store them sorted)."""
    return "".join(f"{j.qid} 0 {j.doc_id} {j.rel}\n" for j in judgments)


def qrels_jsonl(judgments: Iterable[Judgment]) -> str:
    """One JSON object per judgment with its labels' provenance, in the order given."""
    return "".join(
        json.dumps(j.fields(), ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n"
        for j in judgments
    )


def qrels_text(judgments: Iterable[Judgment], *, fmt: ExportFormat) -> str:
    """The export as text: `trec` or `jsonl`."""
    if fmt not in EXPORT_FORMATS:
        raise QrelsError(f"Unknown export format {fmt!r}; choose trec or jsonl.")
    return qrels_trec(judgments) if fmt == "trec" else qrels_jsonl(judgments)
