"""Every fraud metric declared once, and the evaluation of all of them from one score curve.

`ScoredExamples` holds the data (labels, scores, and optionally amounts, entities and timestamps);
`FraudOptions` the choices (target FPR, alert budget, operating threshold, costs). `FraudEvaluation`
computes the shared statistics lazily and once: the score curve (one sort), the detection point,
the flagged set at the operating threshold, the costs and the detection times.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalcore.fraud._cost import CostReport, cost_at_threshold, cost_evaluation
from evalcore.fraud._curve import (
    BoolArray,
    FloatArray,
    FraudInputError,
    IntArray,
    ScoreCurve,
    as_labels,
    as_scores,
    pr_auc_from,
    pr_auc_score,
    roc_auc_from,
    roc_auc_score,
    score_curve,
)
from evalcore.fraud._operating import (
    DEFAULT_TARGET_FPR,
    BudgetResult,
    DetectionRate,
    budget_from,
    detection_rate_at_fpr,
    detection_rate_from,
    precision_recall_at_budget,
)
from evalcore.fraud._ttd import DetectionTimes, time_to_detection
from evalcore.metrics import MetricSpec
from evalcore.options import option, options_check


@dataclass(frozen=True, eq=False)
class ScoredExamples:
    """One score and one label (1: fraud) per example; optionally the amount at stake, the entity
    (as integer codes into `entity_ids`) and the time of each example."""

    labels: BoolArray
    scores: FloatArray
    amounts: FloatArray | None = None
    entities: IntArray | None = None
    entity_ids: NDArray[Any] | None = None
    timestamps: FloatArray | None = None

    @classmethod
    def from_arrays(
        cls,
        labels: ArrayLike,
        scores: ArrayLike,
        *,
        amounts: ArrayLike | None = None,
        entities: ArrayLike | None = None,
        timestamps: ArrayLike | None = None,
    ) -> ScoredExamples:
        """Validated examples; `entities` may be any ids (encoded here)."""
        y = as_labels(labels)
        s = as_scores(scores, y.size)
        amount = None if amounts is None else np.asarray(amounts, dtype=np.float64)
        if amount is not None and (
            amount.shape != y.shape or not np.isfinite(amount).all() or (amount < 0).any()
        ):
            raise FraudInputError("amounts must be finite, non-negative and one per example")
        codes = ids = None
        if entities is not None:
            values = np.asarray(entities)
            if values.shape != y.shape:
                raise FraudInputError("entities must be one per example")
            ids, inverse = np.unique(values, return_inverse=True)
            codes = inverse.reshape(-1).astype(np.int64)
        times = None if timestamps is None else np.asarray(timestamps, dtype=np.float64)
        if times is not None and (times.shape != y.shape or not np.isfinite(times).all()):
            raise FraudInputError("timestamps must be finite numbers, one per example")
        return cls(y, s, amount, codes, ids, times)

    @property
    def n(self) -> int:
        return int(self.labels.size)

    def permuted(self, order: ArrayLike) -> ScoredExamples:
        """The same examples in another order (every metric must be invariant to it)."""
        index = np.asarray(order)

        def take(values: NDArray[Any] | None) -> NDArray[Any] | None:
            return None if values is None else values[index]

        return ScoredExamples(
            self.labels[index], self.scores[index], take(self.amounts), take(self.entities), self.entity_ids,
            take(self.timestamps),
        )  # fmt: skip


@dataclass(frozen=True)
class FraudOptions:
    """The evaluation's choices, declared once with their bounds for the core, the command, the jobs, the
    forms and the API (`evalcore.options`: each is checked here, and the others derive their fields).

    `threshold`: the operating point of the costs and detection times (flag score >= threshold);
    None takes the conservative threshold at `target_fpr`. `fn_cost` is multiplied by each
    example's amount when the examples have amounts (fn_cost = 1: the amount is the loss).
    """

    target_fpr: float = option(
        DEFAULT_TARGET_FPR, kind=float, minimum=0.0, maximum=1.0,
        help="The detection rate is read at this false positive rate.",
    )  # fmt: skip
    budget: int | None = option(
        None, kind=int, minimum=0, help="Alert budget: precision and recall of the top K scores."
    )
    threshold: float | None = option(
        None, kind=float,
        help="Operating threshold (flag score >= it) of the costs and times to detection; none: the one at "
        "the target FPR.",
    )  # fmt: skip
    fp_cost: float = option(1.0, kind=float, minimum=0.0, help="Cost of a false positive.")
    fn_cost: float = option(
        1.0,
        kind=float,
        minimum=0.0,
        help="Cost of a missed fraud, times its amount when the file has amounts.",
    )

    def __post_init__(self) -> None:
        options_check(self)


@dataclass(frozen=True)
class OperatingPoint:
    """Where the costs and detection times are taken: flag every example scoring >= `threshold`.

    `rule`: "threshold" (the one given), "target_fpr" (the conservative detection point) or
    "flag_nothing" (threshold +inf, chosen because no threshold within the target FPR catches a fraud,
    or because the detection point would cost more than flagging nothing). `note` says why in words,
    for the command's report, the job's summary and the page; empty when nothing needs saying.
    """

    threshold: float
    rule: Literal["threshold", "target_fpr", "flag_nothing"]
    note: str = ""


class FraudEvaluation:
    """The statistics of one set of examples under one set of options, each computed on first use."""

    def __init__(self, examples: ScoredExamples, options: FraudOptions | None = None) -> None:
        self.examples = examples
        self.options = options or FraudOptions()

    @cached_property
    def curve(self) -> ScoreCurve:
        return score_curve(self.examples.labels, self.examples.scores)

    @cached_property
    def detection(self) -> DetectionRate:
        return detection_rate_from(self.curve, target_fpr=self.options.target_fpr, method="conservative")

    @cached_property
    def detection_interpolated(self) -> DetectionRate:
        return detection_rate_from(self.curve, target_fpr=self.options.target_fpr, method="interpolated")

    @cached_property
    def operating(self) -> OperatingPoint:
        """The threshold given, else the detection point at the target FPR unless flagging nothing is
        at least as good: a point that catches no fraud, or costs more than flagging nothing, is never
        chosen (an all-legitimate file then costs 0)."""
        if self.options.threshold is not None:
            return OperatingPoint(float(self.options.threshold), "threshold")
        nothing = OperatingPoint(math.inf, "flag_nothing")
        detection = self.detection
        if np.isnan(detection.threshold):
            return replace(
                nothing,
                note="flagging nothing: with no legitimate examples there is no threshold at the target FPR",
            )
        if detection.threshold == math.inf:
            return replace(
                nothing, note="flagging nothing: no threshold within the target FPR catches a fraud"
            )
        at_detection = self._detection_cost
        if at_detection.total_cost > at_detection.flag_nothing_cost:
            return replace(nothing, note=(
                f"flagging nothing: the threshold at the target FPR ({detection.threshold:.6g}) would cost "
                f"{at_detection.total_cost:.6g}, more than flagging nothing ({at_detection.flag_nothing_cost:.6g})"
            ))  # fmt: skip
        return OperatingPoint(detection.threshold, "target_fpr")

    @property
    def operating_threshold(self) -> float:
        return self.operating.threshold

    @cached_property
    def flagged(self) -> BoolArray:
        return self.examples.scores >= self.operating_threshold  # +inf flags nothing

    @cached_property
    def cost(self) -> CostReport:
        if self.operating.rule == "target_fpr":
            return self._detection_cost  # the operating point chose it: already costed
        return self._cost_of(self.flagged)

    @cached_property
    def _detection_cost(self) -> CostReport:
        return self._cost_of(self.examples.scores >= self.detection.threshold)

    def _cost_of(self, flagged: BoolArray) -> CostReport:
        fn_cost: float | FloatArray = self.options.fn_cost
        if self.examples.amounts is not None:
            fn_cost = self.options.fn_cost * self.examples.amounts
        return cost_evaluation(self.examples.labels, flagged, fp_cost=self.options.fp_cost, fn_cost=fn_cost)

    @cached_property
    def budget(self) -> BudgetResult | None:
        return None if self.options.budget is None else budget_from(self.curve, budget=self.options.budget)

    @cached_property
    def detection_times(self) -> DetectionTimes | None:
        e = self.examples
        if e.entities is None or e.timestamps is None:
            return None
        return time_to_detection(e.labels, self.flagged, e.entities, e.timestamps, entity_ids=e.entity_ids)

    def metrics(self, names: Iterable[str] | None = None) -> dict[str, float]:
        """Every metric (or those named), NaN where its inputs or options are missing."""
        chosen = list(METRICS) if names is None else list(names)
        unknown = [name for name in chosen if name not in METRICS]
        if unknown:
            raise FraudInputError(f"unknown fraud metric {unknown[0]!r}")
        return {name: METRICS[name].of_evaluation(self) for name in chosen}


def evaluate_scores(examples: ScoredExamples, options: FraudOptions | None = None) -> FraudEvaluation:
    """Evaluate scored examples: read `.metrics()`, `.cost`, `.detection`, `.budget`, `.detection_times`."""
    return FraudEvaluation(examples, options)


_NAN = float("nan")


def _budget(value: Callable[[BudgetResult], float]) -> Callable[[FraudEvaluation], float]:
    return lambda e: _NAN if e.budget is None else value(e.budget)


def _times(value: Callable[[DetectionTimes], float]) -> Callable[[FraudEvaluation], float]:
    return lambda e: _NAN if e.detection_times is None else value(e.detection_times)


@dataclass(frozen=True)
class FraudMetric(MetricSpec):
    """A fraud metric: `kernel` is its public function, `reduce` its value from a `FraudEvaluation`."""

    reduce: Callable[[FraudEvaluation], float] | None = field(default=None, compare=False, repr=False)

    def of_evaluation(self, evaluation: FraudEvaluation) -> float:
        assert self.reduce is not None
        return float(self.reduce(evaluation))

    def of(self, examples: ScoredExamples, options: FraudOptions | None = None) -> float:
        return self.of_evaluation(FraudEvaluation(examples, options))


def _metric(
    name: str,
    label: str,
    kernel: Callable[..., Any],
    reduce: Callable[[FraudEvaluation], float],
    definition: str,
    *,
    direction: str = "higher",
    range: tuple[float | None, float | None] | None = (0.0, 1.0),  # noqa: A002 - MetricSpec's field
    unit: str = "",
) -> FraudMetric:
    return FraudMetric(
        name=name, label=label, family="fraud", direction=direction, definition=definition,  # type: ignore[arg-type]
        kernel=kernel, range=range, unit=unit, reduce=reduce,
    )  # fmt: skip


#: The registry's view of the fraud family (`evalcore.metrics.metric_registry`).
METRIC_SPECS: tuple[FraudMetric, ...] = (
    _metric("detection_rate", "Detection rate at target FPR", detection_rate_at_fpr,
            lambda e: e.detection.detection_rate,
            "Best TPR among thresholds whose realised FPR is <= the target (conservative)."),
    _metric("detection_rate_interpolated", "Detection rate at target FPR (interpolated)", detection_rate_at_fpr,
            lambda e: e.detection_interpolated.detection_rate,
            "TPR read off the ROC curve at exactly the target FPR, linear between points."),
    _metric("threshold", "Threshold at target FPR", detection_rate_at_fpr, lambda e: e.detection.threshold,
            "Score at or above which examples are flagged at the conservative detection point.",
            direction="neutral", range=None),
    _metric("realised_fpr", "Realised FPR", detection_rate_at_fpr, lambda e: e.detection.realised_fpr,
            "False positive rate actually reached at the conservative threshold (<= the target).",
            direction="neutral"),
    _metric("roc_auc", "ROC-AUC", roc_auc_score, lambda e: roc_auc_from(e.curve),
            "Area under the ROC curve: P(score of a fraud > score of a legitimate example), ties 1/2."),
    _metric("pr_auc", "PR-AUC (average precision)", pr_auc_score, lambda e: pr_auc_from(e.curve),
            "Step-wise average precision: sum over thresholds of (R_j - R_j-1) P_j, as scikit-learn."),
    _metric("precision_at_budget", "Precision at alert budget", precision_recall_at_budget,
            _budget(lambda b: b.precision), "Share of frauds among the top-k scored examples (ties shared)."),
    _metric("recall_at_budget", "Recall at alert budget", precision_recall_at_budget,
            _budget(lambda b: b.recall), "Share of all frauds found among the top-k scored examples."),
    _metric("total_cost", "Total cost", cost_at_threshold, lambda e: e.cost.total_cost,
            "FP count x FP cost + the FN costs (per-example amounts when given).",
            direction="lower", range=(0.0, None), unit="cost"),
    _metric("cost_per_prediction", "Cost per prediction", cost_at_threshold, lambda e: e.cost.cost_per_prediction,
            "Total cost divided by the number of examples.", direction="lower", range=(0.0, None), unit="cost"),
    _metric("savings", "Savings vs flag-nothing", cost_at_threshold, lambda e: e.cost.savings,
            "1 - total cost / cost of flagging nothing (seed 004's cost reduction).", range=(None, 1.0)),
    _metric("savings_vs_best_trivial", "Savings vs best trivial policy", cost_at_threshold,
            lambda e: e.cost.savings_vs_best_trivial,
            "1 - total cost / the cheaper of flagging nothing and flagging everything.", range=(None, 1.0)),
    _metric("mean_ttd", "Mean time to detection", time_to_detection, _times(lambda t: t.mean),
            "Mean delay from an entity's first fraud to its first flag, over detected entities.",
            direction="lower", range=(0.0, None), unit="time"),
    _metric("median_ttd", "Median time to detection", time_to_detection, _times(lambda t: t.median),
            "Median delay from an entity's first fraud to its first flag.",
            direction="lower", range=(0.0, None), unit="time"),
    _metric("p95_ttd", "95th percentile time to detection", time_to_detection, _times(lambda t: t.p95),
            "95th percentile (linear) of the delays to detection.", direction="lower", range=(0.0, None), unit="time"),
    _metric("entity_detection_rate", "Entities detected", time_to_detection, _times(lambda t: t.detection_rate),
            "Share of entities with a fraud that are flagged at or after its start."),
)  # fmt: skip

METRICS: dict[str, FraudMetric] = {spec.name: spec for spec in METRIC_SPECS}
