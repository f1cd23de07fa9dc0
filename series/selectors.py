"""Reading metric values: one observation reader for every family (what alert rules check), a series'
history (what time-series charts draw) and a job's values (what leaderboards and result pages show)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import models
from django.db.models import Q

from evalcore.retrieval import canonical_measure
from series.models import MetricValue, Series
from series.services import job_type_of

#: The subgroup under which a drift metric's calibrated effect threshold is stored with its value.
THRESHOLD_SUBGROUP = "calibrated_threshold"


@dataclass(frozen=True)
class Observation:
    """One point of a series: the values of the metrics asked for (None when undefined; a metric the job
    did not report is absent), when it was observed, the job it came from, and the calibrated effect
    thresholds the job stored (a drift monitor's)."""

    job_type: str
    job_id: int
    observed_at: datetime
    values: dict[str, float | None]
    effect_thresholds: dict[str, float] = field(default_factory=dict)


def metric_names(series: Series, metrics: Iterable[str]) -> dict[str, list[str]]:
    """Per metric asked for, the names the series may hold it under: itself, and for a retrieval series
    every other name it stored with the same `metric_key` (a rule on `ndcg_cut_10` reads the values stored
    as `nDCG@10` or `ndcg_cut.10`, and the reverse). One query over the series' distinct names for a
    retrieval series (a loop over names, not rows); none for the other families, whose names are as given."""
    asked = list(dict.fromkeys(metrics))
    names = {metric: [metric] for metric in asked}
    if series.family != "retrieval":
        return names
    keys: dict[str, list[str]] = defaultdict(list)
    for metric in asked:
        keys[metric_key(series.family, metric)].append(metric)
    stored = MetricValue.objects.filter(series=series).order_by().values_list("metric", flat=True).distinct()
    for name in stored:
        for metric in keys.get(metric_key(series.family, name), ()):
            if name not in names[metric]:
                names[metric].append(name)
    return names


def series_observations(
    series: Series,
    metrics: Sequence[str],
    *,
    last: int,
    upto: tuple[str, int] | None = None,
) -> list[Observation]:
    """The `last` latest observations of `series` that report `metrics[0]`, oldest first, with the other
    metrics' values (and calibrated thresholds) of the same jobs.

    Each metric is read under every name the series stored it by (`metric_names`: for retrieval, each
    spelling of the measure) and keyed by the name asked for; a job that stored it under two names
    counts once, with the value under the name asked for where it has that one.

    `upto` (a job's provenance) ends the window at that job's observation, so checking an older job
    never reads values observed after it; when that job did not report `metrics[0]`, the answer is
    empty (nothing to decide). Ties in time are ordered by job id.
    """
    names = metric_names(series, metrics)
    main = MetricValue.objects.filter(series=series, metric__in=names[metrics[0]], subgroup="")
    if upto is not None:
        anchor = main.filter(job_type=upto[0], job_id=upto[1]).values_list("observed_at", "job_id").first()
        if anchor is None:
            return []
        main = main.filter(Q(observed_at__lt=anchor[0]) | Q(observed_at=anchor[0], job_id__lte=anchor[1]))
    jobs_window = main.order_by("-observed_at", "-job_id").values_list("job_type", "job_id", "observed_at")
    if len(names[metrics[0]]) > 1:
        jobs_window = jobs_window.distinct()  # one job may have stored the metric under two names
    window = list(jobs_window[:last])
    if not window:
        return []
    jobs = {(job_type, job_id) for job_type, job_id, _ in window}
    asked_by: dict[str, list[str]] = defaultdict(list)  # stored name -> the names asked for it stands for
    for metric, stored in names.items():
        for name in stored:
            asked_by[name].append(metric)
    values: dict[tuple[str, int], dict[str, float | None]] = defaultdict(dict)
    thresholds: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    rows = MetricValue.objects.filter(
        series=series, metric__in=list(asked_by), subgroup__in=["", THRESHOLD_SUBGROUP],
        job_id__in=[job_id for _, job_id in jobs],
    ).values_list("job_type", "job_id", "metric", "subgroup", "value")  # fmt: skip
    for job_type, job_id, stored_name, subgroup, value in rows:
        if (job_type, job_id) not in jobs:
            continue
        for metric in asked_by[stored_name]:
            if subgroup == THRESHOLD_SUBGROUP:
                if value is not None and (
                    stored_name == metric or metric not in thresholds[(job_type, job_id)]
                ):
                    thresholds[(job_type, job_id)][metric] = value
            elif stored_name == metric or metric not in values[(job_type, job_id)]:
                values[(job_type, job_id)][metric] = value
    return [
        Observation(
            job_type=job_type,
            job_id=job_id,
            observed_at=observed_at,
            values=dict(values[(job_type, job_id)]),
            effect_thresholds=dict(thresholds[(job_type, job_id)]),
        )  # fmt: skip
        for job_type, job_id, observed_at in reversed(window)
    ]


def series_history(
    series: Series | int, metrics: Iterable[str] | None = None, *, subgroup: str = ""
) -> dict[str, list[tuple[datetime, float | None]]]:
    """Each metric's (observed_at, value) points of a series, oldest first (every metric it reported
    when `metrics` is None): what a time-series chart draws."""
    series_id = series.pk if isinstance(series, Series) else series
    rows = MetricValue.objects.filter(series_id=series_id, subgroup=subgroup)
    if metrics is not None:
        rows = rows.filter(metric__in=list(metrics))
    history: dict[str, list[tuple[datetime, float | None]]] = defaultdict(list)
    for metric, observed_at, value in rows.order_by(
        "observed_at", "job_id", "position", "metric"
    ).values_list("metric", "observed_at", "value"):
        history[metric].append((observed_at, value))
    return dict(history)


def job_values(job: models.Model, *, subgroup: str | None = "") -> list[MetricValue]:
    """A job's values in the order it wrote them (one subgroup, or every one with None)."""
    rows = MetricValue.objects.filter(job_type=job_type_of(job), job_id=job.pk)
    if subgroup is not None:
        rows = rows.filter(subgroup=subgroup)
    return list(rows.order_by("position", "subgroup"))


def jobs_values(
    model: type[models.Model],
    job_ids: Iterable[int],
    *,
    metrics: Iterable[str] | None = None,
    subgroup: str = "",
) -> dict[int, dict[str, MetricValue]]:
    """Many jobs' values of one model, {job id: {metric: row}}, in one query: what a leaderboard reads.
    Each job's metrics come in the order the job wrote them."""
    rows = MetricValue.objects.filter(
        job_type=model._meta.label_lower, job_id__in=list(job_ids), subgroup=subgroup
    )
    if metrics is not None:
        rows = rows.filter(metric__in=list(metrics))
    table: dict[int, dict[str, MetricValue]] = defaultdict(dict)
    for row in rows.order_by("job_id", "position"):
        table[row.job_id][row.metric] = row
    return dict(table)


def team_series(team_ids: Iterable[int], *, family: str | None = None) -> models.QuerySet[Series]:
    """The series of some teams (what a rule form offers), by kind and label."""
    rows = Series.objects.filter(team_id__in=list(team_ids))
    return rows.filter(family=family) if family else rows


@dataclass(frozen=True)
class Point:
    """One value of a series' metric: when, the job it came from, the value and its CI (None: undefined)."""

    observed_at: datetime
    job_type: str
    job_id: int
    value: float | None
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class MetricHistory:
    """A metric of a series over time (one subgroup), as a chart and its table of numbers show it."""

    metric: str
    subgroup: str
    points: list[Point]


def metric_key(family: str, metric: str) -> str:
    """The one name of a metric however a job spelled it: for retrieval, trec_eval's name of the column
    (`nDCG@10` is `ndcg_cut_10`, `evalcore.retrieval.canonical_measure`); other families' names as given."""
    return canonical_measure(metric) if family == "retrieval" else metric


def series_metric_histories(series: Series, *, limit: int = 500) -> list[MetricHistory]:
    """Every metric and subgroup a series reported, each with its latest `limit` points oldest first, in the
    order the jobs wrote them (the headline metrics first): one query. Two spellings of one metric
    (`metric_key`) are one history, with one point per job."""
    rows = (
        MetricValue.objects.filter(series=series)
        .order_by("metric", "subgroup", "-observed_at", "-job_id")
        .values_list(
            "metric",
            "subgroup",
            "position",
            "observed_at",
            "job_type",
            "job_id",
            "value",
            "ci_low",
            "ci_high",
        )
    )
    grouped: dict[tuple[str, str], list[Point]] = {}
    first: dict[tuple[str, str], int] = {}
    jobs: dict[tuple[str, str], set[tuple[str, int]]] = defaultdict(set)
    for metric, subgroup, position, observed_at, job_type, job_id, value, low, high in rows:
        key = (metric_key(series.family, metric), subgroup)
        if (job_type, job_id) in jobs[key]:  # a job that stored the metric under two names
            continue
        jobs[key].add((job_type, job_id))
        points = grouped.setdefault(key, [])
        if not points:
            first[key] = position  # the latest job's order of its metrics
        points.append(Point(observed_at, job_type, job_id, value, low, high))
    for points in grouped.values():  # each name's points came newest first: merge them so
        points.sort(key=lambda point: (point.observed_at, point.job_id), reverse=True)
        del points[limit:]
    order = sorted(grouped, key=lambda key: (first[key], key[1] != "", key))
    return [MetricHistory(metric=metric, subgroup=subgroup, points=grouped[(metric, subgroup)][::-1])
            for metric, subgroup in order]  # fmt: skip


@dataclass(frozen=True)
class LatestObservation:
    """A series' newest observation: its headline metric (the first its job wrote) and value."""

    series: Series
    observed_at: datetime
    metric: str
    value: float | None


def latest_observations(team_ids: Iterable[int], *, limit: int = 10) -> list[LatestObservation]:
    """The teams' series observed most recently, newest first, each with its headline value: what a team
    member's home page lists. Two queries whatever the number of series."""
    newest = list(
        Series.objects.filter(team_id__in=list(team_ids))
        .annotate(latest=models.Max("values__observed_at"))
        .filter(latest__isnull=False)
        .select_related("team")
        .order_by("-latest", "-pk")[:limit]
    )
    if not newest:
        return []
    wanted = Q()
    for series in newest:
        wanted |= Q(series=series, observed_at=series.latest)  # type: ignore[attr-defined]
    headline: dict[int, tuple[str, float | None]] = {}
    for series_id, metric, value in (
        MetricValue.objects.filter(wanted, subgroup="")
        .order_by("series_id", "-job_id", "position")
        .values_list("series_id", "metric", "value")
    ):
        headline.setdefault(series_id, (metric, value))
    return [
        LatestObservation(series, series.latest, *headline[series.pk])  # type: ignore[attr-defined]
        for series in newest
        if series.pk in headline
    ]
