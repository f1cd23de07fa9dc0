"""Operating points on the score curve: the detection rate at a target false positive rate, and
precision and recall at an alert budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from evalcore.fraud._curve import FraudInputError, ScoreCurve, score_curve

DetectionMethod = Literal["conservative", "interpolated"]
DETECTION_METHODS: tuple[DetectionMethod, ...] = ("conservative", "interpolated")
DEFAULT_TARGET_FPR = 0.01
# A realised FPR equal to the target up to rounding (0.01 * 9900 is 98.99999999999999) still meets it.
_RELATIVE_SLACK = 1e-12


@dataclass(frozen=True)
class DetectionRate:
    """The detection rate (TPR) reached at a target FPR, and the operating point behind it.

    `threshold`: flag an example when its score is >= it (+inf flags nothing). The interpolated
    rate mixes two thresholds, so its `threshold` is NaN and its `realised_fpr` is the target.
    """

    detection_rate: float
    threshold: float
    realised_fpr: float
    target_fpr: float
    method: DetectionMethod


def _check_target(target_fpr: float) -> float:
    if not 0.0 <= target_fpr <= 1.0:
        raise FraudInputError(f"the target FPR must lie in [0, 1], got {target_fpr!r}")
    return float(target_fpr)


def detection_rate_at_fpr(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    target_fpr: float = DEFAULT_TARGET_FPR,
    method: DetectionMethod = "conservative",
) -> DetectionRate:
    """The share of frauds caught while the false positive rate stays at `target_fpr`.

    - `conservative` (default): the best TPR among the thresholds whose realised FPR is <= the
      target; a threshold is a distinct score, so tied scores are flagged or not together. It
      reports that threshold and its realised FPR, an operating point one can deploy: of the
      thresholds reaching that TPR, the highest (fewest false positives), so a target that catches
      no fraud gives +inf (flag nothing), not the negatives that fit under it.
    - `interpolated`: the ROC curve read at exactly the target FPR, linearly between the last point
      at or below it and the next one, as public fraud benchmarks report "TPR at 1% FPR"
      (`np.interp` over scikit-learn's curve gives the same away from the curve's own FPRs; on a
      vertical segment this takes its top). It is reachable only by randomising between the two
      thresholds, and is never below the conservative rate.

    Seed 004 walks the examples in score order and stops at the int(target * negatives)-th
    negative. That is the conservative point except in two ways: it does not count the frauds
    ranked between that negative and the next one, which the conservative threshold still flags
    within the target, and it splits tied scores by their position in its sort. On the seed's own
    data both give 24.2%.

    >>> result = detection_rate_at_fpr([0, 0, 0, 0, 1, 1], [0.1, 0.2, 0.3, 0.9, 0.8, 0.4], target_fpr=0.25)
    >>> result.detection_rate, result.threshold, result.realised_fpr
    (1.0, 0.4, 0.25)
    """
    return detection_rate_from(score_curve(y_true, y_score), target_fpr=target_fpr, method=method)


def detection_rate_from(
    curve: ScoreCurve, *, target_fpr: float = DEFAULT_TARGET_FPR, method: DetectionMethod = "conservative"
) -> DetectionRate:
    target = _check_target(target_fpr)
    if method not in DETECTION_METHODS:
        raise FraudInputError(f"method must be one of {', '.join(DETECTION_METHODS)}; got {method!r}")
    nan = float("nan")
    if curve.n_negative == 0:
        return DetectionRate(nan, nan, nan, target, method)
    thresholds, tp, fp = curve.with_origin()
    # fp never decreases along the curve, so the points within the target are a prefix.
    last = int(np.searchsorted(fp, target * curve.n_negative * (1 + _RELATIVE_SLACK), side="right")) - 1
    tpr = tp / curve.n_positive if curve.n_positive else np.full(tp.shape, np.nan)
    if method == "conservative":
        # Of the points within the target with the best TPR, the first flags the fewest legitimate
        # examples: the last would add false positives for no fraud (with no fraud caught, it flagged
        # every negative the target allows). With none caught this is the origin: flag nothing.
        first = int(np.searchsorted(tp, tp[last], side="left"))
        realised = float(fp[first] / curve.n_negative)
        return DetectionRate(float(tpr[last]), float(thresholds[first]), realised, target, method)
    if last == fp.size - 1:  # the target reaches the curve's end (FPR 1, up to rounding)
        return DetectionRate(float(tpr[last]), nan, target, target, method)
    x0, x1 = fp[last] / curve.n_negative, fp[last + 1] / curve.n_negative
    rate = tpr[last] + (tpr[last + 1] - tpr[last]) * (target - x0) / (x1 - x0)
    return DetectionRate(float(rate), nan, target, target, method)


@dataclass(frozen=True)
class BudgetResult:
    """Precision and recall when the `budget` highest-scored examples are flagged.

    Ties at the budget's edge are shared in expectation: when the budget cuts a group of tied
    scores, each of its members is flagged with the same probability, so the values do not depend
    on the input order.
    """

    precision: float
    recall: float
    budget: int
    flagged: int
    true_positives: float  # an expectation when the budget cuts a tie


def precision_recall_at_budget(y_true: ArrayLike, y_score: ArrayLike, *, budget: int) -> BudgetResult:
    """Precision and recall of flagging the top `budget` examples by score.

    precision = TP / min(budget, n), recall = TP / frauds.

    >>> result = precision_recall_at_budget([1, 0, 1, 0], [0.9, 0.5, 0.5, 0.1], budget=2)
    >>> result.precision, result.recall
    (0.75, 0.75)
    """
    return budget_from(score_curve(y_true, y_score), budget=budget)


def budget_from(curve: ScoreCurve, *, budget: int) -> BudgetResult:
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer) or budget < 0:
        raise FraudInputError(f"the budget must be an integer >= 0, got {budget!r}")
    _, tp, fp = curve.with_origin()
    flagged_at = tp + fp
    last = int(np.searchsorted(flagged_at, budget, side="right")) - 1
    caught = float(tp[last])
    if flagged_at[last] < budget and last + 1 < flagged_at.size:
        # The budget cuts the next group of tied scores: take its share of frauds.
        group = flagged_at[last + 1] - flagged_at[last]
        caught += (budget - flagged_at[last]) * (tp[last + 1] - tp[last]) / group
    flagged = min(int(budget), curve.n)
    precision = caught / flagged if flagged else float("nan")
    recall = caught / curve.n_positive if curve.n_positive else float("nan")
    return BudgetResult(float(precision), float(recall), int(budget), flagged, caught)
