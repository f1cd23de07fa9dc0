"""An embedding stream's dashboard: each metric over time with its rules' thresholds and alert markers, the
scree of the latest snapshot against the reference, the alerts (acknowledged through the team's alerts
view), the runs; and the numbers behind each chart as CSV. Views read what the monitor runs stored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.defaultfilters import floatformat
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_safe

from evalplatform.charts import TimeLabels
from evalplatform.csvexport import csv_response
from evalplatform.teams import get_team_for_member
from monitoring.embeddings import charts as charts_monitors
from monitoring.embeddings import services as monitors
from monitoring.evaluations import selectors
from monitoring.models import EmbeddingStream

#: Runs listed on the dashboard (newest observed first).
RUNS_SHOWN = 50


def _stream(request: HttpRequest, team: str, stream: str) -> tuple[Any, EmbeddingStream]:
    membership = get_team_for_member(request.user, team)
    return membership, monitors.get_stream(team=membership.team, slug=stream)


@dataclass(frozen=True)
class PointRow:
    """A row of the numbers beside a metric's chart, written as the template's filters write them."""

    observed: str  # `date:"Y-m-d H:i"` in the current time zone
    is_reference: bool
    value: str | None  # `floatformat:4`; None: undefined
    alerts: list[str]  # the rules that opened an alert on this snapshot


def _point_rows(series: monitors.MetricSeries, observed: TimeLabels) -> list[PointRow]:
    """The numbers beside a metric's chart, by the template filters they were written with before."""
    rows = []
    for point in series.points:
        rows.append(
            PointRow(
                observed=observed(point.observed_at),
                is_reference=point.is_reference,
                value=None if point.value is None else floatformat(point.value, 4),
                alerts=[e.rule.name for e in series.events if e.observed_at == point.observed_at],
            )
        )
    return rows


@login_required
@require_safe
def stream_detail(request: HttpRequest, team: str, stream: str) -> HttpResponse:
    membership, found = _stream(request, team, stream)
    charts = []
    observed = TimeLabels()
    for position, series in enumerate(monitors.stream_series(stream=found)):
        column = selectors.measure_column(series.metric)
        charts.append({
            "id": f"figure-metric-{position}", "series": series, "column": column,
            "figure": charts_monitors.metric_series_figure(series, column=column),
            "rows": _point_rows(series, observed),
        })  # fmt: skip
    spectrum_run = monitors.latest_spectrum_run(stream=found)
    context = {
        "membership": membership,
        "team": membership.team,
        "stream": found,
        "schedule": monitors.schedule_text(found),
        "charts": charts,
        "spectrum_run": spectrum_run,
        "spectrum_figure": charts_monitors.spectrum_figure(spectrum_run) if spectrum_run else None,
        "spectrum_rows": _spectrum_rows(spectrum_run) if spectrum_run else [],
        "events": monitors.stream_events(stream=found),
        "runs": list(monitors.stream_runs(stream=found)[:RUNS_SHOWN]),
        "runs_shown": RUNS_SHOWN,
        "waiting": found.snapshots.filter(monitor_runs__isnull=True).count(),
    }
    return render(request, "monitoring/stream_detail.html", context)


def _spectrum_rows(run: Any) -> list[tuple[int, float, float | None]]:
    spectrum = run.spectrum
    reference = spectrum.get("reference") or [None] * len(spectrum["rank"])
    return list(zip(spectrum["rank"], spectrum["current"], reference, strict=True))


@login_required
@require_safe
def series_csv(request: HttpRequest, team: str, stream: str) -> HttpResponse:
    """Every metric of every finished run: a row per run in observed order, a column per metric."""
    membership, found = _stream(request, team, stream)
    header, rows = monitors.series_table(monitors.stream_series(stream=found))
    return csv_response(f"{membership.team.slug}-{found.slug}-series.csv", header, rows)


@login_required
@require_safe
def spectrum_csv(request: HttpRequest, team: str, stream: str) -> HttpResponse:
    """The scree's numbers: rank, the latest snapshot's eigenvalue, the reference's."""
    membership, found = _stream(request, team, stream)
    run = monitors.latest_spectrum_run(stream=found)
    rows = _spectrum_rows(run) if run else []
    filename = f"{membership.team.slug}-{found.slug}-spectrum.csv"
    return csv_response(filename, ["rank", "snapshot_eigenvalue", "reference_eigenvalue"], rows)


def _shown(value: float | None) -> float | str:
    return monitors.UNDEFINED if value is None else value


@login_required
@require_safe
def alerts_csv(request: HttpRequest, team: str, stream: str) -> HttpResponse:
    membership, found = _stream(request, team, stream)
    header = ["rule", "metric", "severity", "status", "value", "threshold", "latest_value", "observations",
              "observed_at", "opened_at", "resolved_at", "acknowledged_by"]  # fmt: skip
    rows = [
        [event.rule.name, event.rule.metric, event.rule.severity, event.status, _shown(event.value), event.threshold,
         _shown(event.latest_value), event.observations, event.observed_at.isoformat(), event.opened_at.isoformat(),
         event.resolved_at.isoformat() if event.resolved_at else None,
         event.acknowledged_by.get_username() if event.acknowledged_by else None]
        for event in monitors.stream_events(stream=found, limit=10_000)
    ]  # fmt: skip
    return csv_response(f"{membership.team.slug}-{found.slug}-alerts.csv", header, rows)


@never_cache
@login_required
@require_GET
def run_state(request: HttpRequest, team: str, stream: str, pk: int) -> JsonResponse:
    """`job.state()` of one of the stream's monitor runs, for the dashboard's polling script."""
    _, found = _stream(request, team, stream)
    return JsonResponse(monitors.get_run(stream=found, pk=pk).state())
