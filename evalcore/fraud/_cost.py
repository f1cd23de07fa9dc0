"""Cost-sensitive evaluation: what the flagged examples cost, against doing nothing or everything.

A false positive costs an investigation (`fp_cost`); a false negative costs the fraud that gets
through (`fn_cost`). Either may be one number or one per example, such as the transaction amount.
True positives and true negatives cost nothing here, as in seed 004.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from evalcore.fraud._curve import BoolArray, FloatArray, FraudInputError, as_labels, as_scores


@dataclass(frozen=True)
class CostReport:
    """The confusion counts of one set of predictions, and what they cost.

    - `total_cost` = sum of fp_cost over false positives + sum of fn_cost over false negatives;
    - `cost_per_prediction` = total_cost / n;
    - `savings` = 1 - total_cost / flag_nothing_cost (seed 004's "cost reduction vs baseline"):
      the share of the fraud losses of flagging nothing that the model avoids;
    - `savings_vs_best_trivial` = 1 - total_cost / min(flag_nothing_cost, flag_everything_cost): the
      same against the cheaper of the two trivial policies, so a model worse than a trivial policy
      shows a negative value even when flagging nothing is very expensive.

    Savings are NaN when their baseline costs nothing.
    """

    tp: int
    fp: int
    tn: int
    fn: int
    total_cost: float
    cost_per_prediction: float
    flag_nothing_cost: float
    flag_everything_cost: float
    savings: float
    savings_vs_best_trivial: float


#: A sum of integer costs below this is exact in float64, whatever the order of its additions.
_EXACT_SUMS = 2.0**53


def _costs(cost: float | ArrayLike, n: int, *, name: str) -> FloatArray | float:
    """The cost of each example, or one number for all when summing it is exact (an integer cost whose
    sum over all examples stays below 2^53): then a sum over k examples is that number times k, the
    value the dot product gives, without an array per example."""
    values = np.asarray(cost, dtype=np.float64)
    if values.ndim == 0:
        single = float(values) + 0.0  # -0.0 as 0.0, as the dot product sums it
        if math.isfinite(single) and single >= 0 and single.is_integer() and single * n < _EXACT_SUMS:
            return single
        values = np.full(n, single)
    if values.shape != (n,):
        raise FraudInputError(f"{name} must be one number or one per example ({n}), got shape {values.shape}")
    if not np.isfinite(values).all() or (values < 0).any():
        raise FraudInputError(f"{name} must be finite and non-negative")
    return values


def _sum(costs: FloatArray | float, chosen: BoolArray, count: int) -> float:
    """The cost of the `count` examples `chosen`."""
    if isinstance(costs, float):
        return costs * count
    return float(costs @ chosen)


def _as_predictions(y_pred: ArrayLike, n: int) -> BoolArray:
    predictions = as_labels(y_pred)
    if predictions.size != n:
        raise FraudInputError(f"predictions must be aligned with the labels: {predictions.size} and {n}")
    return predictions


def _saving(total: float, baseline: float) -> float:
    return 1.0 - total / baseline if baseline > 0 else float("nan")


def cost_evaluation(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    fp_cost: float | ArrayLike = 1.0,
    fn_cost: float | ArrayLike = 1.0,
) -> CostReport:
    """Costs of the predictions `y_pred` (1: flagged as fraud) against the labels.

    >>> report = cost_evaluation([1, 1, 0, 0, 0], [1, 0, 1, 0, 0], fp_cost=100, fn_cost=[500, 800, 0, 0, 0])
    >>> report.total_cost, report.flag_nothing_cost, round(report.savings, 4)
    (900.0, 1300.0, 0.3077)
    """
    labels = as_labels(y_true)
    flagged = _as_predictions(y_pred, labels.size)
    fp_costs = _costs(fp_cost, labels.size, name="fp_cost")
    fn_costs = _costs(fn_cost, labels.size, name="fn_cost")
    false_positive = flagged & ~labels
    false_negative = ~flagged & labels
    tp = int(np.count_nonzero(flagged & labels))
    fp = int(np.count_nonzero(false_positive))
    fn = int(np.count_nonzero(false_negative))
    total = _sum(fp_costs, false_positive, fp) + _sum(fn_costs, false_negative, fn)
    nothing = _sum(fn_costs, labels, int(np.count_nonzero(labels)))
    everything = _sum(fp_costs, ~labels, int(labels.size) - int(np.count_nonzero(labels)))
    return CostReport(
        tp=tp,
        fp=fp,
        tn=int(labels.size) - tp - fp - fn,
        fn=fn,
        total_cost=total,
        cost_per_prediction=total / labels.size if labels.size else float("nan"),
        flag_nothing_cost=nothing,
        flag_everything_cost=everything,
        savings=_saving(total, nothing),
        savings_vs_best_trivial=_saving(total, min(nothing, everything)),
    )


def cost_at_threshold(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    threshold: float,
    fp_cost: float | ArrayLike = 1.0,
    fn_cost: float | ArrayLike = 1.0,
) -> CostReport:
    """`cost_evaluation` of flagging every example whose score is >= `threshold`."""
    labels = as_labels(y_true)
    flagged = as_scores(y_score, labels.size) >= threshold
    return cost_evaluation(labels, flagged, fp_cost=fp_cost, fn_cost=fn_cost)
