"""The score curve: true and false positives at every distinct score, and the curves and areas under it.

Every threshold metric reads one `ScoreCurve`: the distinct scores in decreasing order, and how many
positives and negatives score at least each of them. An example is flagged when its score is >= the
threshold, so the curve's points are exactly the operating points a threshold can reach; tied scores
form one point. Building it costs one sort of the scores (plus one of the positives' scores), O(n log n)
once; everything after is O(distinct scores).

The curves and areas match scikit-learn's `roc_curve`, `precision_recall_curve`, `roc_auc_score` and
`average_precision_score` on data with both classes. Where a class is missing they differ on purpose:
ROC-AUC and PR-AUC are NaN (scikit-learn raises for ROC-AUC and returns 0 for average precision), and
the recall of the PR curve is NaN (scikit-learn sets it to 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalcore.errors import EvalCoreError

FloatArray: TypeAlias = NDArray[np.float64]
IntArray: TypeAlias = NDArray[np.int64]
BoolArray: TypeAlias = NDArray[np.bool_]


class FraudInputError(EvalCoreError, ValueError):
    """Labels or scores a fraud metric cannot be computed from: misaligned, not 0/1, not finite."""


def as_labels(y_true: ArrayLike) -> BoolArray:
    """Binary labels (1 or True for fraud) as a boolean array."""
    labels = np.asarray(y_true)
    if labels.ndim != 1:
        raise FraudInputError(f"labels must be one-dimensional, got shape {labels.shape}")
    if labels.dtype == np.bool_:
        return labels
    if labels.size and not (np.issubdtype(labels.dtype, np.number) and np.isin(labels, (0, 1)).all()):
        raise FraudInputError("labels must be 0 or 1")
    return labels.astype(bool)


def as_scores(y_score: ArrayLike, n: int) -> FloatArray:
    scores = np.asarray(y_score, dtype=np.float64)
    if scores.shape != (n,):
        raise FraudInputError(f"scores must be aligned with the labels: {scores.size} scores, {n} labels")
    if not np.isfinite(scores).all():
        raise FraudInputError("scores must be finite numbers")
    return scores


@dataclass(frozen=True, eq=False)
class ScoreCurve:
    """`tp[j]` positives and `fp[j]` negatives score >= `thresholds[j]`; thresholds decrease.

    The sufficient statistic of every threshold metric. Point j of the ROC curve is
    (fp[j] / n_negative, tp[j] / n_positive); the flag-nothing point (0, 0) is not stored.

    >>> curve = score_curve([0, 1, 1, 0], [0.1, 0.8, 0.4, 0.4])
    >>> curve.thresholds.tolist(), curve.tp.tolist(), curve.fp.tolist()
    ([0.8, 0.4, 0.1], [1, 2, 2], [0, 1, 2])
    """

    thresholds: FloatArray
    tp: IntArray
    fp: IntArray
    n_positive: int
    n_negative: int

    @property
    def n(self) -> int:
        return self.n_positive + self.n_negative

    def with_origin(self) -> tuple[FloatArray, IntArray, IntArray]:
        """The points with the flag-nothing point (threshold +inf, no positive, no negative) first."""
        return (
            np.concatenate([[np.inf], self.thresholds]),
            np.concatenate([[0], self.tp]),
            np.concatenate([[0], self.fp]),
        )


def score_curve(y_true: ArrayLike, y_score: ArrayLike) -> ScoreCurve:
    """Count the positives and negatives at or above every distinct score.

    Scores with few distinct values (rounded, or a model's coarse buckets) are counted by value:
    one pass through a hash table codes each score by its distinct value, and a count per value
    (all, and positives) summed from the highest value down gives the curve, with a sort of the
    distinct values only. Otherwise the scores are sorted once; the positives' scores are sorted
    apart, and a binary search per distinct score counts those at or above it (the searches move
    forward over sorted keys, so this costs about a merge). Both give the same curve.
    """
    labels = as_labels(y_true)
    scores = as_scores(y_score, labels.size)
    by_value = _curve_by_value(labels, scores) if scores.size >= _BY_VALUE_MIN else None
    if by_value is not None:
        return by_value
    ordered = np.sort(scores)
    positives = np.sort(scores[labels])
    if ordered.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return ScoreCurve(np.zeros(0), empty, empty, 0, 0)
    # The first index of each run of equal scores, in ascending order: at or above ordered[start]
    # lie n - start examples.
    start = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    values = ordered[start]
    at_or_above = ordered.size - start
    tp = positives.size - np.searchsorted(positives, values, side="left")
    return ScoreCurve(
        thresholds=values[::-1].copy(),
        tp=tp[::-1].astype(np.int64),
        fp=(at_or_above - tp)[::-1].astype(np.int64),
        n_positive=int(positives.size),
        n_negative=int(ordered.size - positives.size),
    )


#: Scores counted by value from this many on, when a strided sample of `_SAMPLE` of them repeats
#: its values (at most one distinct value in `_FEW`): a hash table of few distinct values stays in
#: cache and takes a tenth of the sort's time; one of millions of values is slower than the sort.
_BY_VALUE_MIN = 1 << 16
_SAMPLE = 1 << 14
_FEW = 2


def _curve_by_value(labels: BoolArray, scores: FloatArray) -> ScoreCurve | None:
    """`score_curve` by counting each distinct value; None where the scores look mostly distinct, or
    hold both 0.0 and -0.0 (one value to the sort, two to the hash table)."""
    from evalcore.arrow import value_counts  # pyarrow: imported by the file readers anyway

    sample = scores[:: max(1, scores.size // _SAMPLE)]
    if np.unique(sample).size * _FEW > sample.size:
        return None
    values, counts = value_counts(scores)
    if np.count_nonzero(values == 0) > 1:
        return None
    order = np.argsort(values)  # the values are distinct: no ties to break
    values, counts = values[order], counts[order]
    # The positives' values are among them: each finds its own by a binary search.
    fraud_values, fraud_counts = value_counts(scores[labels])
    positives = np.zeros(values.size, dtype=np.int64)
    positives[np.searchsorted(values, fraud_values)] = fraud_counts
    tp = np.cumsum(positives[::-1])
    n_positive = int(tp[-1]) if tp.size else 0
    return ScoreCurve(
        thresholds=values[::-1].copy(),
        tp=tp,
        fp=np.cumsum(counts[::-1]) - tp,
        n_positive=n_positive,
        n_negative=int(scores.size - n_positive),
    )


def _rates(counts: IntArray, total: int) -> FloatArray:
    return counts / total if total else np.full(counts.shape, np.nan)


def roc_curve(
    y_true: ArrayLike, y_score: ArrayLike, *, drop_intermediate: bool = True
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(fpr, tpr, thresholds) as scikit-learn's `roc_curve`, from (0, 0) at threshold +inf.

    With `drop_intermediate`, points on a straight segment between their neighbours are left out
    (they do not change the plot or the area), by scikit-learn's rule.
    """
    return roc_curve_from(score_curve(y_true, y_score), drop_intermediate=drop_intermediate)


def roc_curve_from(
    curve: ScoreCurve, *, drop_intermediate: bool = True
) -> tuple[FloatArray, FloatArray, FloatArray]:
    thresholds, tp, fp = curve.thresholds, curve.tp, curve.fp
    if drop_intermediate and thresholds.size > 2:
        corner = np.flatnonzero(
            np.concatenate([[True], (np.diff(fp, 2) != 0) | (np.diff(tp, 2) != 0), [True]])
        )
        thresholds, tp, fp = thresholds[corner], tp[corner], fp[corner]
    tp = np.concatenate([[0], tp])
    fp = np.concatenate([[0], fp])
    return _rates(fp, curve.n_negative), _rates(tp, curve.n_positive), np.concatenate([[np.inf], thresholds])


def roc_auc_from(curve: ScoreCurve) -> float:
    if curve.n_positive == 0 or curve.n_negative == 0:
        return float("nan")
    _, tp, fp = curve.with_origin()
    # The trapezoids' doubled areas are integers: summing them before the one division is exact up
    # to 2**53, which a float trapezoid over millions of points is not.
    doubled = np.diff(fp).astype(np.float64) @ (tp[1:] + tp[:-1]).astype(np.float64)
    return float(doubled / (2.0 * curve.n_positive * curve.n_negative))


def roc_auc_score(y_true: ArrayLike, y_score: ArrayLike) -> float:
    """Area under the ROC curve: the chance that a random fraud outscores a random legitimate
    example, ties counting one half. NaN with a single class.

    >>> roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    return roc_auc_from(score_curve(y_true, y_score))


def precision_recall_curve(
    y_true: ArrayLike, y_score: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(precision, recall, thresholds) as scikit-learn's `precision_recall_curve`.

    Thresholds increase; the last point (precision 1, recall 0) has no threshold.
    """
    return precision_recall_curve_from(score_curve(y_true, y_score))


def precision_recall_curve_from(curve: ScoreCurve) -> tuple[FloatArray, FloatArray, FloatArray]:
    precision = curve.tp / (curve.tp + curve.fp)
    recall = _rates(curve.tp, curve.n_positive)
    return (
        np.concatenate([precision[::-1], [1.0]]),
        np.concatenate([recall[::-1], [0.0]]),
        curve.thresholds[::-1].copy(),
    )


def pr_auc_from(curve: ScoreCurve) -> float:
    if curve.n_positive == 0:
        return float("nan")
    precision = curve.tp / (curve.tp + curve.fp)
    recall_gain = np.diff(np.concatenate([[0], curve.tp])) / curve.n_positive
    # scikit-learn clips the -0.0 that rounding can leave; so do we.
    return max(0.0, float(recall_gain @ precision))


def pr_auc_score(y_true: ArrayLike, y_score: ArrayLike) -> float:
    """Area under the precision-recall curve as step-wise average precision (scikit-learn's
    `average_precision_score`): sum_j (R_j - R_{j-1}) P_j over the distinct scores, no interpolation.
    NaN without a fraud.

    >>> pr_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.8333333333333333
    """
    return pr_auc_from(score_curve(y_true, y_score))
