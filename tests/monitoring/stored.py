"""What the retrieval jobs stored, read straight from the metric table and the job rows (not through the
selectors the pages use), for the tests to compare with what they expect."""

from __future__ import annotations

from dataclasses import dataclass

from monitoring.models import Comparison, Evaluation
from series.models import MetricValue


@dataclass(frozen=True)
class StoredResult:
    measure: str
    position: int
    value: float | None
    ci_low: float | None
    ci_high: float | None
    per_query: list[float | None]


@dataclass(frozen=True)
class StoredSummary:
    run_id: int
    measure: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    num_queries: int | None
    per_query: list[float | None]


def evaluation_rows(evaluation: Evaluation | int) -> list[StoredResult]:
    """An evaluation's values, in measure order, with its per-query arrays."""
    pk = evaluation if isinstance(evaluation, int) else evaluation.pk
    arrays = Evaluation.objects.filter(pk=pk).values_list("per_query", flat=True).first() or {}
    rows = MetricValue.objects.filter(job_type="monitoring.evaluation", job_id=pk).order_by("position")
    return [
        StoredResult(row.metric, row.position, row.value, row.ci_low, row.ci_high, arrays.get(row.metric, []))
        for row in rows
    ]


def evaluation_row(evaluation: Evaluation | int, measure: str) -> StoredResult:
    (found,) = [row for row in evaluation_rows(evaluation) if row.measure == measure]
    return found


def comparison_rows(comparison: Comparison) -> dict[tuple[int, str], StoredSummary]:
    """A comparison's summaries by (run id, measure), with their query counts and per-query arrays."""
    comparison = Comparison.objects.get(pk=comparison.pk)
    rows = MetricValue.objects.filter(job_type="monitoring.comparison", job_id=comparison.pk)
    return {
        (int(row.subgroup), row.metric): StoredSummary(
            int(row.subgroup),
            row.metric,
            row.value,
            row.ci_low,
            row.ci_high,
            comparison.num_queries.get(row.subgroup, {}).get(row.metric),
            comparison.per_query.get(row.subgroup, {}).get(row.metric, []),
        )  # fmt: skip
        for row in rows
    }
