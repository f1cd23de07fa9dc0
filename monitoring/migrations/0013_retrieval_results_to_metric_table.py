"""Retrieval results move to the one metric table (issue 22): each `EvaluationResult` becomes a row of
`series.MetricValue` in its run's series (the run's name on its qrels, created here), observed when the
evaluation finished; each `ComparisonSummary` a row of no series, its run's id as the subgroup. The
per-query arrays move onto the job rows (`Evaluation.per_query`, `Comparison.per_query`), with each
summary's number of queries (`Comparison.num_queries`); the next migration removes the old tables. Reversible: going back
rebuilds the old rows from the table and the arrays, and removes the values copied here.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from django.db import migrations
from django.utils import timezone

EVALUATION = "monitoring.evaluation"
COMPARISON = "monitoring.comparison"
BATCH = 2000


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _batches(queryset: Any, key: str) -> Iterator[list[dict[str, Any]]]:
    """The rows of `queryset` (dicts ordered by `key`), a few jobs' rows at a time: a job's rows never
    straddle two batches, so each batch's arrays are complete."""
    batch: list[dict[str, Any]] = []
    for row in queryset.order_by(key, "pk").iterator(chunk_size=BATCH):
        if len(batch) >= BATCH and batch[-1][key] != row[key]:
            yield batch
            batch = []
        batch.append(row)
    if batch:
        yield batch


def _run_series(apps: Any, evaluations: dict[int, Any]) -> dict[tuple[int, str], int]:
    """The id of the series of each (qrels, run name) of these evaluations, created where missing, keyed
    and labelled as `series.subjects.run_series` does."""
    Series = apps.get_model("series", "Series")
    wanted = {(e.qrels_id, e.run.name): e for e in evaluations.values()}
    keys = {f"{qrels_id}:{name}": (qrels_id, name) for qrels_id, name in wanted}
    found = dict(Series.objects.filter(kind="run", key__in=list(keys)).values_list("key", "pk"))
    missing = [
        Series(
            kind="run",
            family="retrieval",
            key=key[:300],
            team_id=wanted[keys[key]].qrels.team_id,
            object_id=keys[key][0],
            name=keys[key][1][:200],
            label=f"run {keys[key][1]} on {wanted[keys[key]].qrels.name}"[:300],
            url="",
        )  # fmt: skip
        for key in keys
        if key not in found
    ]
    for series in Series.objects.bulk_create(missing):
        found[series.key] = series.pk
    return {pair: found[key] for key, pair in keys.items()}


def forward(apps: Any, schema_editor: Any) -> None:
    Evaluation = apps.get_model("monitoring", "Evaluation")
    Comparison = apps.get_model("monitoring", "Comparison")
    EvaluationResult = apps.get_model("monitoring", "EvaluationResult")
    ComparisonSummary = apps.get_model("monitoring", "ComparisonSummary")
    MetricValue = apps.get_model("series", "MetricValue")
    now = timezone.now()

    fields = ["evaluation_id", "measure", "position", "value", "ci_low", "ci_high", "per_query"]
    for batch in _batches(EvaluationResult.objects.values(*fields), "evaluation_id"):
        ids = {row["evaluation_id"] for row in batch}
        evaluations = Evaluation.objects.select_related("run", "qrels").defer("per_query").in_bulk(ids)
        series = _run_series(apps, evaluations)
        per_query: dict[int, dict[str, Any]] = defaultdict(dict)
        values = []
        for row in batch:
            evaluation = evaluations[row["evaluation_id"]]
            per_query[evaluation.pk][row["measure"]] = row["per_query"]
            values.append(
                MetricValue(
                    series_id=series[(evaluation.qrels_id, evaluation.run.name)],
                    family="retrieval",
                    job_type=EVALUATION,
                    job_id=evaluation.pk,
                    metric=row["measure"],
                    subgroup="",
                    position=row["position"],
                    value=_finite(row["value"]),
                    ci_low=_finite(row["ci_low"]),
                    ci_high=_finite(row["ci_high"]),
                    observed_at=evaluation.finished_at or evaluation.created_at,
                    recorded_at=now,
                )  # fmt: skip
            )
        MetricValue.objects.bulk_create(values, ignore_conflicts=True)
        updated = [Evaluation(pk=pk, per_query=arrays) for pk, arrays in per_query.items()]
        Evaluation.objects.bulk_update(updated, ["per_query"])

    fields = ["comparison_id", "run_id", "measure", "mean", "ci_low", "ci_high", "num_queries", "per_query"]
    for batch in _batches(ComparisonSummary.objects.values(*fields), "comparison_id"):
        ids = {row["comparison_id"] for row in batch}
        comparisons = Comparison.objects.only("pk", "finished_at", "created_at").in_bulk(ids)
        arrays: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
        counts: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
        values = []
        for position, row in enumerate(batch):
            comparison = comparisons[row["comparison_id"]]
            run = str(row["run_id"])
            arrays[comparison.pk].setdefault(run, {})[row["measure"]] = row["per_query"]
            counts[comparison.pk].setdefault(run, {})[row["measure"]] = row["num_queries"]
            values.append(
                MetricValue(
                    series_id=None,
                    family="retrieval",
                    job_type=COMPARISON,
                    job_id=comparison.pk,
                    metric=row["measure"],
                    subgroup=run,
                    position=min(position, 32767),
                    value=_finite(row["mean"]),
                    ci_low=_finite(row["ci_low"]),
                    ci_high=_finite(row["ci_high"]),
                    observed_at=comparison.finished_at or comparison.created_at,
                    recorded_at=now,
                )  # fmt: skip
            )
        MetricValue.objects.bulk_create(values, ignore_conflicts=True)
        updated = [Comparison(pk=pk, per_query=arrays[pk], num_queries=counts[pk]) for pk in arrays]
        Comparison.objects.bulk_update(updated, ["per_query", "num_queries"])


def backward(apps: Any, schema_editor: Any) -> None:
    Evaluation = apps.get_model("monitoring", "Evaluation")
    Comparison = apps.get_model("monitoring", "Comparison")
    EvaluationResult = apps.get_model("monitoring", "EvaluationResult")
    ComparisonSummary = apps.get_model("monitoring", "ComparisonSummary")
    MetricValue = apps.get_model("series", "MetricValue")

    fields = ["job_id", "metric", "subgroup", "position", "value", "ci_low", "ci_high"]
    rows = MetricValue.objects.filter(job_type=EVALUATION, subgroup="").values(*fields)
    for batch in _batches(rows, "job_id"):
        arrays = dict(
            Evaluation.objects.filter(pk__in={row["job_id"] for row in batch}).values_list("pk", "per_query")
        )
        EvaluationResult.objects.bulk_create(
            [
                EvaluationResult(
                    evaluation_id=row["job_id"],
                    measure=row["metric"],
                    position=row["position"],
                    value=row["value"],
                    ci_low=row["ci_low"],
                    ci_high=row["ci_high"],
                    per_query=(arrays.get(row["job_id"]) or {}).get(row["metric"], []),
                )  # fmt: skip
                for row in batch
                if row["job_id"] in arrays
            ]
        )
    rows = MetricValue.objects.filter(job_type=COMPARISON, subgroup__regex=r"^[0-9]+$").values(*fields)
    for batch in _batches(rows, "job_id"):
        jobs = {row["job_id"] for row in batch}
        stored = {pk: (arrays, counts) for pk, arrays, counts in
                  Comparison.objects.filter(pk__in=jobs).values_list("pk", "per_query", "num_queries")}  # fmt: skip
        summaries = []
        for row in batch:
            if row["job_id"] not in stored:
                continue
            arrays, counts = stored[row["job_id"]]
            summaries.append(
                ComparisonSummary(
                    comparison_id=row["job_id"],
                    run_id=int(row["subgroup"]),
                    measure=row["metric"],
                    mean=float("nan") if row["value"] is None else row["value"],
                    ci_low=row["ci_low"],
                    ci_high=row["ci_high"],
                    num_queries=(counts or {}).get(row["subgroup"], {}).get(row["metric"]),
                    per_query=(arrays or {}).get(row["subgroup"], {}).get(row["metric"], []),
                )  # fmt: skip
            )
        ComparisonSummary.objects.bulk_create(summaries, ignore_conflicts=True)
    MetricValue.objects.filter(job_type__in=[EVALUATION, COMPARISON]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0012_retrieval_results_per_query_fields"),
        ("series", "0001_series_and_metric_values"),
    ]

    operations = [
        migrations.RunPython(forward, backward, elidable=False),
    ]
