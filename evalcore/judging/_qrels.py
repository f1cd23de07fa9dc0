"""Qrels from judged answers: filter the labels, keep the pairs that agree, aggregate, export.

From the answers, drop attention checks (their documents are not in the collection), too-fast labels and
the excluded annotators' labels (reliability with the build's thresholds and the leads' overrides); keep
a pair with at least `min_labels` labels within ±`tolerance` (`evalcore.aggregation.agreement_filter`);
aggregate it (`aggregate_labels`: median rounded down by default, mean rounded half up, majority with
ties to the lower grade, or Dawid-Skene anchored by the gold labels, estimated on all the pairs' used
labels).

Adjudication: `qrels_disagreements` lists the pairs such a computation drops for disagreement (the
adjudication queue). A pair given a final grade by an adjudicator (`Adjudicated`) enters the qrels as its
own source when `use_adjudications` is on: its rel is that grade, whatever the crowd's labels say, and its
provenance keeps the crowd's used labels alongside.

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
from typing import Any, ClassVar, Literal, NotRequired, TypeAlias, TypedDict

import numpy as np

from evalcore.aggregation import (
    DISAGREEMENT,
    TOO_FEW_LABELS,
    AgreementFilter,
    aggregate_labels,
    agreement_filter,
)
from evalcore.agreement import LongLabels
from evalcore.errors import EvalCoreError
from evalcore.jsonable import json_finite
from evalcore.judging._answers import Answers, Pairs
from evalcore.judging._quality import agreement_values
from evalcore.judging._reliability import (
    Override,
    Reason,
    Reliability,
    annotator_reliability,
    answers_quality,
)
from evalcore.stats._validation import BoolArray, FloatArray, IntArray

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
    `min_labels` is the fewest labels a kept pair needs. `use_adjudications` lets adjudicated grades
    override the crowd's labels (see `qrels_compute`).
    """

    tolerance: float = 1.0
    aggregation: Aggregation = "median"
    min_accuracy: float = 0.7
    min_gold: int = 10
    min_labels: int = 2
    use_adjudications: bool = True

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


class SourceCounts(TypedDict):
    crowd: int
    adjudication: int


class GoldMismatch(TypedDict):
    """A judged pair whose rel differs from its gold grade, and where the rel came from."""

    qid: str
    doc_id: str
    gold: int
    rel: int
    source: str  # crowd or adjudication


class QrelsCounts(TypedDict):
    """What a build kept and dropped, by reason: stored with the build and shown to the lead.

    `pairs.kept` counts every judgment, `sources` splits them into the crowd's aggregates and adjudicated
    grades (`adjudicated` repeats the latter); the dropped counts leave out the adjudicated pairs.
    `gold_mismatches` (when the build was given the gold grades) lists every judgment that differs from
    its pair's gold grade: an adjudicator who overruled gold, or a crowd that disagrees with it.
    """

    pairs: PairCounts
    labels: LabelCounts
    adjudicated: int
    sources: SourceCounts
    use_adjudications: bool
    gold_mismatches: NotRequired[list[GoldMismatch]]


class AnnotatorVerdict(TypedDict):
    username: str
    reason: Reason


@dataclass(frozen=True)
class Adjudicated:
    """The final grade an adjudicator set for a pair the crowd disagreed on."""

    grade: int
    adjudicator: str
    note: str = ""
    at: datetime | None = None

    def provenance(self) -> dict[str, Any]:
        return {
            "adjudicator": self.adjudicator,
            "grade": self.grade,
            "note": self.note,
            "adjudicated_at": _timestamp(self.at) if self.at is not None else None,
        }


@dataclass(frozen=True)
class Judgment:
    """One judged pair: its relevance, the aggregate before rounding, and the labels it came from.

    `adjudication` is set when the rel is an adjudicator's grade (`Adjudicated.provenance()`); `labels`
    are then the crowd's used labels, kept alongside.
    """

    qid: str
    doc_id: str
    rel: int
    score: float
    labels: list[dict[str, Any]] = field(default_factory=list)
    adjudication: dict[str, Any] | None = None

    @property
    def source(self) -> str:
        return "crowd" if self.adjudication is None else "adjudication"

    def fields(self) -> dict[str, Any]:
        """The JSONL object. Crowd pairs keep the shape they always had; an adjudicated pair adds
        `"source": "adjudication"` and the adjudicator's grade, name, note and time."""
        fields: dict[str, Any] = {
            "qid": self.qid,
            "doc_id": self.doc_id,
            "rel": self.rel,
            "score": self.score,
            "n_labels": len(self.labels),
            "labels": self.labels,
        }
        if self.adjudication is not None:
            fields["source"] = "adjudication"
            fields["adjudication"] = self.adjudication
        return fields


@dataclass(frozen=True)
class QrelsResult:
    judgments: list[Judgment]
    counts: QrelsCounts
    agreement: dict[str, Any]
    annotators: dict[str, list[AnnotatorVerdict]]


@dataclass(frozen=True, eq=False)
class _Filtered:
    """The labels a build uses and the crowd's verdict per candidate pair (see `_filter`)."""

    reliability: Reliability
    used: BoolArray
    too_fast: BoolArray
    excluded: BoolArray
    candidates: IntArray
    position: IntArray
    labels: LongLabels
    verdict: AgreementFilter


def _filter(
    answers: Answers, *, pairs: Pairs, overrides: Mapping[int, Override], params: QrelsParams
) -> _Filtered:
    """Drop attention checks, too-fast labels and the excluded annotators' labels; check agreement."""
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
    labels = LongLabels.from_codes(
        np.searchsorted(candidates, answers.task[used]).astype(np.int64),
        answers.annotator_code[used],
        answers.grade[used],
        items=candidates,
        annotators=answers.annotators,
    )
    return _Filtered(
        reliability=reliability,
        used=used,
        too_fast=too_fast,
        excluded=excluded,
        candidates=candidates,
        position=np.searchsorted(pairs.task, candidates),
        labels=labels,
        verdict=agreement_filter(labels, tolerance=params.tolerance, min_labels=params.min_labels),
    )


@dataclass(frozen=True, eq=False)
class DroppedPairs:
    """The pairs a build drops for disagreement: task ids (sorted), the spread (max - min) of their used
    labels and how many used labels each has, aligned."""

    task: IntArray
    spread: FloatArray
    n_labels: IntArray

    def __len__(self) -> int:
        return int(self.task.size)


def qrels_disagreements(
    answers: Answers, *, pairs: Pairs, overrides: Mapping[int, Override], params: QrelsParams
) -> DroppedPairs:
    """The pairs `qrels_compute` with the same inputs drops for disagreement, whatever the adjudications:
    the adjudication queue (the caller leaves out the pairs already adjudicated)."""
    filtered = _filter(answers, pairs=pairs, overrides=overrides, params=params)
    verdict = filtered.verdict
    dropped = verdict.reason == DISAGREEMENT
    return DroppedPairs(
        task=filtered.candidates[dropped],
        spread=verdict.spread[dropped],
        n_labels=verdict.n_labels[dropped].astype(np.int64),
    )


def qrels_compute(
    answers: Answers,
    *,
    pairs: Pairs,
    overrides: Mapping[int, Override],
    params: QrelsParams,
    adjudications: Mapping[int, Adjudicated] | None = None,
    gold: Mapping[tuple[str, str], int] | None = None,
) -> QrelsResult:
    """Filter, check agreement and aggregate; see the module docstring. Judgments come out sorted.

    `adjudications` maps a task id to its adjudicated grade; with `params.use_adjudications` each such
    pair (attention checks aside) is judged by that grade, kept or dropped by the crowd alike. `gold`
    maps (qid, doc_id) to the pair's gold grade; given, the counts list the judgments that differ from it
    (`gold_mismatches`).
    """
    filtered = _filter(answers, pairs=pairs, overrides=overrides, params=params)
    labels, verdict, candidates, position = (
        filtered.labels, filtered.verdict, filtered.candidates, filtered.position,
    )  # fmt: skip
    adjudications = adjudications if params.use_adjudications and adjudications else {}
    adjudicated = np.isin(candidates, np.fromiter(adjudications, dtype=np.int64, count=len(adjudications)))
    judged = verdict.kept | adjudicated
    scores = (
        aggregate_labels(labels, method=params.aggregation, gold=answers.gold)
        if labels.n_labels
        else np.full(labels.n_items, np.nan)
    )
    rel = np.floor(scores + 0.5)  # the mean is rounded half up; the other methods give grades already
    provenance = _provenance(answers, filtered.used, labels, judged)
    judgments = sorted(
        (
            _judgment(
                qid=pairs.qid[position[u]],
                doc_id=pairs.doc_id[position[u]],
                rel=int(rel[u]) if not adjudicated[u] else None,
                score=float(scores[u]),
                labels=provenance[u],
                adjudication=adjudications.get(int(candidates[u])),
            )
            for u in np.flatnonzero(judged).tolist()
        ),
        key=lambda judgment: (judgment.qid, judgment.doc_id),
    )
    check_trec_safe(judgments)
    counts = _counts(answers, filtered, adjudicated, params=params)
    if gold is not None:
        counts["gold_mismatches"] = gold_mismatches(judgments, gold)
    return QrelsResult(
        judgments=judgments,
        counts=counts,
        agreement={
            "used_labels": agreement_values(labels),
            "kept_pairs": agreement_values(labels.select(verdict.kept[labels.item])),
        },
        annotators=_verdicts(answers, filtered),
    )


def gold_mismatches(judgments: Iterable[Judgment], gold: Mapping[tuple[str, str], int]) -> list[GoldMismatch]:
    """The judgments whose rel differs from their pair's gold grade, in the judgments' order.

    >>> gold_mismatches([Judgment("q1", "d1", 3, 3.0), Judgment("q1", "d2", 1, 1.0)], {("q1", "d1"): 4})
    [{'qid': 'q1', 'doc_id': 'd1', 'gold': 4, 'rel': 3, 'source': 'crowd'}]
    """
    return [
        {"qid": j.qid, "doc_id": j.doc_id, "gold": int(grade), "rel": j.rel, "source": j.source}
        for j in judgments
        if (grade := gold.get((j.qid, j.doc_id))) is not None and int(grade) != j.rel
    ]


def _judgment(
    *, qid: str, doc_id: str, rel: int | None, score: float, labels: list[dict[str, Any]],
    adjudication: Adjudicated | None,
) -> Judgment:  # fmt: skip
    """A crowd judgment, or (`adjudication` given) one whose rel and score are the adjudicated grade."""
    if adjudication is None:
        assert rel is not None
        return Judgment(qid=qid, doc_id=doc_id, rel=rel, score=score, labels=labels)
    grade = int(adjudication.grade)
    return Judgment(
        qid=qid, doc_id=doc_id, rel=grade, score=float(grade), labels=labels,
        adjudication=adjudication.provenance(),
    )  # fmt: skip


def _counts(
    answers: Answers, filtered: _Filtered, adjudicated: BoolArray, *, params: QrelsParams
) -> QrelsCounts:
    labels, verdict = filtered.labels, filtered.verdict
    crowd = verdict.kept & ~adjudicated
    open_ = ~adjudicated
    no_labels = int(np.count_nonzero((labels.labels_per_item == 0) & open_))
    too_few = int(np.count_nonzero((verdict.reason == TOO_FEW_LABELS) & open_))
    judged = verdict.kept | adjudicated
    n_adjudicated = int(np.count_nonzero(adjudicated))
    attention = answers.on_attention_check
    graded = answers.graded
    return {
        "pairs": {
            "total": int(filtered.candidates.size),
            "kept": int(np.count_nonzero(judged)),
            "dropped": {
                "no_labels": no_labels,
                "too_few_labels": too_few - no_labels,
                "disagreement": int(np.count_nonzero((verdict.reason == DISAGREEMENT) & open_)),
            },
        },
        "labels": {
            "total": int(np.count_nonzero(graded)),
            "used": int(np.count_nonzero(filtered.used)),
            "in_kept_pairs": int(np.count_nonzero(judged[labels.item])),
            "dropped": {
                "attention_check": int(np.count_nonzero(graded & attention)),
                "too_fast": int(np.count_nonzero(filtered.too_fast)),
                "excluded_annotator": int(np.count_nonzero(filtered.excluded)),
            },
        },
        "adjudicated": n_adjudicated,
        "sources": {"crowd": int(np.count_nonzero(crowd)), "adjudication": n_adjudicated},
        "use_adjudications": params.use_adjudications,
    }


def _verdicts(answers: Answers, filtered: _Filtered) -> dict[str, list[AnnotatorVerdict]]:
    reliability = filtered.reliability
    ids = reliability.annotators.tolist()
    answered = np.bincount(answers.annotator_code[answers.graded], minlength=len(ids)) > 0
    return {
        key: [
            {"username": answers.username(ids[i]), "reason": reliability.reasons[i]}
            for i in range(len(ids))
            if answered[i] and bool(reliability.included[i]) == (key == "included")
        ]
        for key in ("included", "excluded")
    }


def _provenance(
    answers: Answers, used: BoolArray, labels: LongLabels, kept: BoolArray
) -> dict[int, list[dict[str, Any]]]:
    """Per judged item, its labels as {annotator, grade, seconds, created_at}, by annotator then time.

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
    """One JSON object per judgment with its labels' provenance, in the order given (an undefined score as
    null: strict JSON, which a NaN would break)."""
    return "".join(
        json.dumps(json_finite(j.fields()), ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n"
        for j in judgments
    )


def qrels_text(judgments: Iterable[Judgment], *, fmt: ExportFormat) -> str:
    """The export as text: `trec` or `jsonl`."""
    if fmt not in EXPORT_FORMATS:
        raise QrelsError(f"Unknown export format {fmt!r}; choose trec or jsonl.")
    return qrels_trec(judgments) if fmt == "trec" else qrels_jsonl(judgments)
