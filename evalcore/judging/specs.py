"""The annotator family of the metric registry: what a judging project's quality recompute reports for
each annotator (`evalcore.judging.annotator_rows`), so an annotator's accuracy on gold, speed and label
distribution can be charted over time and watched by alert rules.

The project's own figures (its agreement) are the agreement family's (`evalcore.agreement`); the two
project-wide gold figures are declared here beside the annotators' ones.

>>> from evalcore.metrics import metric_registry
>>> metric_registry().resolve("gold_accuracy").family
'annotator'
>>> metric_registry().resolve("project_gold_accuracy").family
'agreement'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from evalcore.metrics import MetricSpec

#: An annotator row as `evalcore.judging.annotator_rows` gives it.
Row = Mapping[str, Any]


def _field(name: str) -> Callable[[Row], float | None]:
    """The kernel of a metric `annotator_rows` computes: its field of an annotator's row."""

    def kernel(row: Row) -> float | None:
        value = row.get(name)
        return None if value is None else float(value)

    kernel.__name__ = f"row_{name}"
    return kernel


def label_shares(grades: Any) -> dict[str, float]:
    """Each grade's share of an annotator's graded answers, by grade ("0".."4"); {} for none.

    >>> label_shares([2, 2, 3, 0])
    {'0': 0.25, '2': 0.5, '3': 0.25}
    """
    values, counts = np.unique(np.asarray(grades, dtype=np.int64), return_counts=True)
    total = counts.sum()
    return {str(v): float(c / total) for v, c in zip(values.tolist(), counts.tolist(), strict=True)}


def project_gold_accuracy(rows: Sequence[Row]) -> float | None:
    """Accuracy on gold over every graded gold answer of the project: the annotators' accuracies weighted
    by the gold items each graded; None when nobody graded gold.

    >>> project_gold_accuracy([{"gold_seen": 3, "gold_accuracy": 1.0}, {"gold_seen": 1, "gold_accuracy": 0.0}])
    0.75
    """
    seen = np.array([row.get("gold_seen") or 0 for row in rows], dtype=np.float64)
    accuracy = np.array([row.get("gold_accuracy") or 0.0 for row in rows], dtype=np.float64)
    return float(seen @ accuracy / seen.sum()) if seen.sum() else None


def reliable_annotators(rows: Sequence[Row]) -> float:
    """How many annotators' labels the project keeps."""
    return float(sum(bool(row.get("included")) for row in rows))


_SHARE = (0.0, 1.0)
_COUNT = (0.0, None)

#: Metrics of one annotator within one project, as `annotator_rows` names them; `label_share` is kept
#: per grade (the grade is the value's subgroup).
METRIC_SPECS: tuple[MetricSpec, ...] = (
    MetricSpec("gold_accuracy", "Accuracy on gold", "annotator", "higher",
               "Share of the annotator's graded gold items labelled exactly as the gold label.", range=_SHARE, kernel=_field("gold_accuracy")),
    MetricSpec("gold_accuracy_within", "Accuracy on gold within ±1", "annotator", "higher",
               "Share of the annotator's graded gold items labelled within one grade of the gold label.",
               range=_SHARE, kernel=_field("gold_accuracy_within")),
    MetricSpec("gold_mae", "Gold mean absolute error", "annotator", "lower",
               "Mean absolute difference between the annotator's grades and the gold grades.", range=_COUNT,
               unit="grades", kernel=_field("gold_mae")),
    MetricSpec("gold_seen", "Gold items answered", "annotator", "neutral",
               "Gold items the annotator graded.", range=_COUNT, unit="items", kernel=_field("gold_seen")),
    MetricSpec("answers", "Answers", "annotator", "neutral",
               "Answers the annotator gave, skipped and unclear ones included.", range=_COUNT, unit="answers", kernel=_field("answers")),
    MetricSpec("median_seconds", "Median seconds per answer", "annotator", "neutral",
               "Median time the annotator took per answer.", range=_COUNT, unit="seconds", kernel=_field("median_seconds")),
    MetricSpec("too_fast_share", "Too-fast share", "annotator", "lower",
               "Share of graded answers given faster than the project's minimum reading time.", range=_SHARE, kernel=_field("too_fast_share")),
    MetricSpec("consensus_agreement", "Agreement with consensus", "annotator", "higher",
               "Share of the annotator's labels on overlap items equal to the other annotators' consensus.",
               range=_SHARE, kernel=_field("consensus_agreement")),
    MetricSpec("label_share", "Label share", "annotator", "neutral",
               "Share of the annotator's graded answers with one grade (the value's subgroup).", range=_SHARE, kernel=label_shares),
)  # fmt: skip

#: A judging project's gold figures, in the agreement family (a project series reports them with its
#: agreement metrics).
PROJECT_METRIC_SPECS: tuple[MetricSpec, ...] = (
    MetricSpec("project_gold_accuracy", "Project accuracy on gold", "agreement", "higher",
               "Share of all graded gold answers of the project labelled exactly as the gold label.",
               range=_SHARE, kernel=project_gold_accuracy),
    MetricSpec("reliable_annotators", "Reliable annotators", "agreement", "neutral",
               "Annotators whose labels the project keeps (they meet the gold thresholds).", range=_COUNT,
               unit="annotators", kernel=reliable_annotators),
)  # fmt: skip
