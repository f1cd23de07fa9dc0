"""Writing metric values: the one function every job that computes scalars calls, and the series the
values belong to.

>>> MetricValueIn("ndcg_cut_10", float("nan")).value is None
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.db import models, transaction
from django.db.models.signals import post_delete

from evalcore.metrics import metric_registry
from evalplatform.models import Team
from series.models import MetricValue, Series
from series.signals import series_observed


def _finite(value: float | None) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class MetricValueIn:
    """One value a job reports: undefined (NaN, an infinity, None) becomes None here, once."""

    metric: str
    value: float | None
    subgroup: str = ""
    ci_low: float | None = None
    ci_high: float | None = None
    series: Series | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("value", "ci_low", "ci_high"):
            object.__setattr__(self, name, _finite(getattr(self, name)))


def job_type_of(job: models.Model) -> str:
    """The provenance of a job's values: its model label, e.g. "monitoring.evaluation"."""
    return job._meta.label_lower


def series_key(*parts: object) -> str:
    """A series' key within its kind: its parts joined by ":" (a run name may hold ":" itself: it is
    the last part)."""
    return ":".join(str(part) for part in parts)


def series_get(
    *,
    kind: Series.Kind | str,
    key: str,
    team: Team | int | None,
    label: str,
    object_id: int | None = None,
    name: str = "",
    url: str = "",
) -> Series:
    """The series of a subject, created on first use; its label and link follow the subject's renames."""
    team_id = team.pk if isinstance(team, Team) else team
    defaults = {
        "team_id": team_id,
        "label": label[:300],
        "object_id": object_id,
        "name": name[:200],
        "url": url[:500],
    }
    series, created = Series.objects.get_or_create(kind=kind, key=key[:300], defaults=defaults)
    if not created and any(getattr(series, attr) != value for attr, value in defaults.items()):
        for attr, value in defaults.items():
            setattr(series, attr, value)
        series.save()
    return series


@transaction.atomic
def metric_values_write(
    *,
    job: models.Model,
    values: Iterable[MetricValueIn],
    observed_at: datetime,
    series: Series | None = None,
    replace: bool = True,
) -> int:
    """Store a job's scalars: one row per (job, metric, subgroup), updated when the job runs again.

    Every value belongs to `series` unless it names its own (a quality recompute writes one project
    series and one series per annotator). With `replace` (the default), the job's rows that this call
    does not write are deleted, so a re-run with fewer metrics leaves none of the old ones behind. Each
    metric must be a registry name; its family is stored with the row. The series observed are
    announced (`series.signals.series_observed`) once the transaction commits, so alert rules check them.
    Returns the number of rows written.
    """
    registry = metric_registry()
    job_type = job_type_of(job)
    rows: list[MetricValue] = []
    seen: set[tuple[str, str]] = set()
    for position, item in enumerate(values):
        if (item.metric, item.subgroup) in seen:
            raise ValueError(f"{item.metric!r} (subgroup {item.subgroup!r}) is given twice")
        seen.add((item.metric, item.subgroup))
        target = item.series if item.series is not None else series
        family = registry.resolve(item.metric).family
        if target is not None and family != target.family:
            raise ValueError(
                f"{item.metric!r} is a {family} metric; the series {target} reports {target.family}"
            )
        rows.append(
            MetricValue(
                series=target,
                family=family,
                job_type=job_type,
                job_id=job.pk,
                metric=item.metric,
                subgroup=item.subgroup,
                position=min(position, 32767),
                value=item.value,
                ci_low=item.ci_low,
                ci_high=item.ci_high,
                observed_at=observed_at,
            )  # fmt: skip
        )
    if replace:
        stale = [
            pk
            for pk, metric, subgroup in MetricValue.objects.filter(
                job_type=job_type, job_id=job.pk
            ).values_list("pk", "metric", "subgroup")
            if (metric, subgroup) not in seen
        ]
        if stale:
            MetricValue.objects.filter(pk__in=stale).delete()
    MetricValue.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["job_type", "job_id", "metric", "subgroup"],
        update_fields=[
            "series",
            "family",
            "position",
            "value",
            "ci_low",
            "ci_high",
            "observed_at",
            "recorded_at",
        ],
        batch_size=2000,
    )
    observed = {row.series_id for row in rows if row.series_id is not None}
    if observed:
        transaction.on_commit(
            lambda: series_observed.send(
                sender=MetricValue, series_ids=sorted(observed), job_type=job_type, job_id=job.pk
            )
        )
    return len(rows)


def metric_values_delete(*, job: models.Model) -> int:
    """Forget a job's values (its row is being deleted: values name their job by id, not by key)."""
    deleted, _ = MetricValue.objects.filter(job_type=job_type_of(job), job_id=job.pk).delete()
    return deleted


def _forget(sender: type[models.Model], instance: models.Model, **kwargs: object) -> None:
    metric_values_delete(job=instance)


def metric_values_follow(model: type[models.Model]) -> None:
    """Delete a job's values with the job: the app that defines a job writing values calls this once for
    its model (in its AppConfig.ready), since values name their job by label and id."""
    post_delete.connect(_forget, sender=model, dispatch_uid=f"series-forget-{model._meta.label_lower}")
