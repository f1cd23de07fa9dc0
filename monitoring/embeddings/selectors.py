"""The read side of the monitors: what the API and the dashboard show, in a fixed number of queries.
Nothing is computed here; the monitor runs wrote the rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import F, QuerySet
from django.shortcuts import get_object_or_404

from evalcore.embeddings import COLLAPSE_METRICS, DRIFT_METRICS, QUALITY_METRICS
from evalcore.jsonable import json_number
from evalplatform.jobs import (
    JobStatus,
)
from evalplatform.models import Team
from monitoring.alerts.services import events_with_channels_notified
from monitoring.models import (
    AlertEvent,
    AlertRule,
    EmbeddingSnapshot,
    EmbeddingStream,
    MonitorRun,
)
from series.selectors import job_values, jobs_values

# --- reading: what the API and the dashboard show -------------------------------------------------------


def team_streams(*, team: Team) -> QuerySet[EmbeddingStream]:
    return (
        EmbeddingStream.objects.filter(team=team)
        .select_related("team", "reference", "periodic_task")
        .order_by("name")
    )


def get_stream(*, team: Team, slug: str) -> EmbeddingStream:
    """One of the team's streams by slug; 404 otherwise (another team's stream is not disclosed)."""
    return get_object_or_404(team_streams(team=team), slug=slug)  # type: ignore[no-any-return]


def stream_snapshots(*, stream: EmbeddingStream) -> QuerySet[EmbeddingSnapshot]:
    return stream.snapshots.select_related("uploaded_by").order_by("-observed_at", "-pk")


def get_snapshot(*, stream: EmbeddingStream, pk: Any) -> EmbeddingSnapshot:
    return get_object_or_404(stream_snapshots(stream=stream), pk=pk)  # type: ignore[no-any-return]


def stream_runs(*, stream: EmbeddingStream) -> QuerySet[MonitorRun]:
    return (
        MonitorRun.objects.filter(stream=stream)
        .select_related("snapshot", "reference")
        .order_by("-observed_at", "-pk")
    )


def get_run(*, stream: EmbeddingStream, pk: Any) -> MonitorRun:
    return get_object_or_404(stream_runs(stream=stream), pk=pk)  # type: ignore[no-any-return]


#: How a table or a page shows a metric that was computed but is undefined (stored as NULL).
UNDEFINED = "undefined"

#: What a metric describes: the snapshot itself, or its drift against the reference.
CURRENT, DRIFT = "current", "drift"


def metric_section(metric: str) -> str:
    """Whether a metric describes the snapshot ("current") or its drift against the reference ("drift"):
    a property of the metric, from the embedding family's drift specs, not of a stored row."""
    return DRIFT if metric in DRIFT_METRICS else CURRENT


#: The dashboard's groups of metrics, in the order it shows them.
METRIC_GROUPS = ("drift", "collapse", "quality")


def metric_group(metric: str) -> str:
    """The dashboard's group of a metric: drift against the reference, dimensional collapse (the spectrum
    and the coordinates' variance), or the rest of the snapshot's quality."""
    if metric in DRIFT_METRICS:
        return "drift"
    return "collapse" if metric in COLLAPSE_METRICS else "quality"


def run_values(run: MonitorRun) -> dict[str, dict[str, Any]]:
    """A run's values by metric name (in name order): {metric: {"value": float or None, "section": ...}}."""
    rows = sorted(job_values(run), key=lambda row: row.metric)
    return {row.metric: {"value": row.value, "section": metric_section(row.metric)} for row in rows}


@dataclass(frozen=True)
class SeriesPoint:
    run_id: int
    observed_at: datetime
    label: str
    is_reference: bool
    value: float | None


@dataclass
class MetricSeries:
    """One metric over a stream's finished runs, with the rules on it and the events they opened."""

    metric: str
    section: str
    points: list[SeriesPoint] = field(default_factory=list)
    rules: list[AlertRule] = field(default_factory=list)
    events: list[AlertEvent] = field(default_factory=list)


def _one_run_per_snapshot(rows: Any, *, reference_id: int | None) -> dict[int, dict[str, Any]]:
    """A snapshot monitored against several references (`stream_recompute` after a new one) counts once:
    its run against the current reference, else its newest run."""
    chosen: dict[int, dict[str, Any]] = {}
    for row in rows:
        kept = chosen.get(row["snapshot_id"])
        current = row["reference_id"] == reference_id
        if kept is None or (current, row["pk"]) > (kept["reference_id"] == reference_id, kept["pk"]):
            chosen[row["snapshot_id"]] = row
    return {row["pk"]: row for row in chosen.values()}


def stream_series(*, stream: EmbeddingStream) -> list[MetricSeries]:
    """Every metric of the stream's done runs over observed time (the reference's own run included), the
    metrics that rules watch first; in four queries whatever the number of runs (the values from the one
    metric table)."""
    runs = _one_run_per_snapshot(
        MonitorRun.objects.filter(stream=stream, status=JobStatus.DONE).values(
            "pk", "observed_at", "snapshot_id", "reference_id", "snapshot__label"
        ),
        reference_id=stream.reference_id,
    )
    found: dict[str, MetricSeries] = {}
    values = (
        (run_id, metric, row.value)
        for run_id, by_metric in jobs_values(MonitorRun, runs).items()
        for metric, row in by_metric.items()
    )
    for run_id, metric, value in values:
        run = runs[run_id]
        series = found.setdefault(metric, MetricSeries(metric=metric, section=metric_section(metric)))
        series.points.append(
            SeriesPoint(
                run_id=run_id,
                observed_at=run["observed_at"],
                label=run["snapshot__label"],
                is_reference=run["snapshot_id"] == run["reference_id"],
                value=json_number(value),  # NULL; a NaN or infinity written before NULLs were enforced too
            )  # fmt: skip
        )
    for series in found.values():
        series.points.sort(key=lambda point: (point.observed_at, point.run_id))
    on_stream = {"series__kind": "stream", "series__object_id": stream.pk}
    for rule in AlertRule.objects.filter(**on_stream, enabled=True).order_by("name"):
        if rule.metric in found:
            found[rule.metric].rules.append(rule)
    for event in events_with_channels_notified(
        AlertEvent.objects.filter(rule__series__kind="stream", rule__series__object_id=stream.pk)
        .select_related("rule__series")
        .order_by("observed_at")
    ):
        if event.rule.metric in found:
            found[event.rule.metric].events.append(event)
    order = {name: position for position, name in enumerate((*QUALITY_METRICS, *DRIFT_METRICS))}
    return sorted(found.values(), key=lambda s: (not s.rules, order.get(s.metric, len(order)), s.metric))


def series_table(series: list[MetricSeries]) -> tuple[list[str], list[list[Any]]]:
    """The series as one wide table: a row per run (observed time order), a column per metric; a metric
    the run computed but found undefined reads `UNDEFINED`, one it did not compute (drift on the
    reference's own run) None."""
    metrics = [s.metric for s in series]
    rows: dict[int, dict[str, Any]] = {}
    for s in series:
        for point in s.points:
            row = rows.setdefault(
                point.run_id,
                {"observed_at": point.observed_at, "label": point.label, "reference": point.is_reference},
            )
            row[s.metric] = UNDEFINED if point.value is None else point.value
    ordered = sorted(rows.items(), key=lambda item: (item[1]["observed_at"], item[0]))
    header = ["observed_at", "run", "snapshot", "is_reference", *metrics]
    return header, [
        [
            row["observed_at"].isoformat(),
            run_id,
            row["label"],
            row["reference"],
            *(row.get(m) for m in metrics),
        ]
        for run_id, row in ordered
    ]


def latest_spectrum_run(*, stream: EmbeddingStream) -> MonitorRun | None:
    """The newest done run of a snapshot against a reference (else the newest done run): the scree's."""
    done = MonitorRun.objects.filter(stream=stream, status=JobStatus.DONE).select_related(
        "snapshot", "reference"
    )
    against = done.filter(reference__isnull=False).exclude(reference=F("snapshot"))
    return against.order_by("-observed_at", "-pk").first() or done.order_by("-observed_at", "-pk").first()


def stream_events(*, stream: EmbeddingStream, limit: int = 100) -> list[AlertEvent]:
    """The stream's alert events, unresolved first, newest first."""
    events = events_with_channels_notified(
        AlertEvent.objects.filter(rule__series__kind="stream", rule__series__object_id=stream.pk)
        .select_related("rule__series", "acknowledged_by")
        .order_by("-opened_at", "-pk")
    )[:limit]
    return sorted(events, key=lambda event: not event.is_unresolved)


def get_stream_event(*, stream: EmbeddingStream, pk: Any) -> AlertEvent:
    return get_object_or_404(  # type: ignore[no-any-return]
        AlertEvent.objects.filter(
            rule__series__kind="stream", rule__series__object_id=stream.pk
        ).select_related("rule__series"),
        pk=pk,
    )
