"""Temporary: a finished monitor run's or evaluation's values, copied into the one metric table.

# dual write until the table is the only store
The retrieval and embedding jobs still store their values in their own tables on this branch; the alert
rules read the table (`series.selectors.series_observations`), so these jobs write both until the
helpers that make the table their only store are merged. The integrator deletes this module and its two
calls (`monitoring.monitors.runs._store`, `monitoring.evaluations._store_evaluation`).
"""

from __future__ import annotations

from django.utils import timezone

from evalcore.metrics import metric_registry
from series.selectors import THRESHOLD_SUBGROUP
from series.services import MetricValueIn, metric_values_write
from series.subjects import run_series, stream_series


def metric_values_dual_write(
    job: object, values: list[tuple[str, float | None, float | None, float | None]]
) -> None:
    """# dual write until the table is the only store: `values` are (metric, value, ci_low, ci_high) of a
    `MonitorRun` (with its calibrated effect thresholds) or an `Evaluation`; names the registry does not
    know as the series' family are left out (the old tables keep them)."""
    from monitoring.models import Evaluation, MonitorRun

    if isinstance(job, MonitorRun):
        series, observed_at = stream_series(job.stream), job.observed_at
        thresholds = dict(job.effect_thresholds or {})
    elif isinstance(job, Evaluation):
        series, observed_at, thresholds = run_series(job.qrels, job.run.name), timezone.now(), {}
    else:
        raise TypeError(f"no dual write for {type(job).__name__}")
    registry = metric_registry()

    def known(metric: str) -> bool:
        spec = registry.find(metric)
        return spec is not None and spec.family == series.family

    rows = [MetricValueIn(m, v, ci_low=lo, ci_high=hi) for m, v, lo, hi in values if known(m)]
    rows += [MetricValueIn(m, t, subgroup=THRESHOLD_SUBGROUP) for m, t in thresholds.items() if known(m)]
    metric_values_write(job=job, series=series, observed_at=observed_at, values=rows)  # type: ignore[arg-type]
