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
    """The series of a subject, created on first use; its label and link follow the subject's renames.

    An empty `url` leaves the series' link as it is: a caller that names a series without knowing its
    page (an alert rule on a set name) keeps the link its writer gave it."""
    team_id = team.pk if isinstance(team, Team) else team
    defaults = {"team_id": team_id, "label": label[:300], "object_id": object_id, "name": name[:200]}
    if url:
        defaults["url"] = url[:500]
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
) -> int:
    """Store a job's scalars: one row per (job, series, metric, subgroup); a re-run replaces them.

    Every value belongs to `series` unless it names its own (a quality recompute writes one project
    series and one series per annotator). The job's earlier rows are replaced as a whole, so a re-run
    with fewer metrics leaves none of the old ones behind. Each
    metric must be a registry name; its family is stored with the row. The series observed are
    announced (`series.signals.series_observed`) once the transaction commits, so alert rules check them.
    Returns the number of rows written.
    """
    registry = metric_registry()
    job_type = job_type_of(job)
    rows: list[MetricValue] = []
    seen: set[tuple[int | None, str, str]] = set()
    for position, item in enumerate(values):
        target = item.series if item.series is not None else series
        key = (target.pk if target is not None else None, item.metric, item.subgroup)
        if key in seen:
            raise ValueError(f"{item.metric!r} (subgroup {item.subgroup!r}) is given twice for {target}")
        seen.add(key)
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
    # The job's rows are replaced as a whole: a re-run takes the place of the run before it (the unique
    # keys forbid duplicates; two workers re-running one job at once conflict there, and the job retries).
    MetricValue.objects.filter(job_type=job_type, job_id=job.pk).delete()
    MetricValue.objects.bulk_create(rows, batch_size=2000)
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
