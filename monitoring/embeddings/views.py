"""An embedding stream's pages. Editors: a new stream, an upload (a snapshot or a reference, then the offer
to recompute the earlier snapshots against a new reference), "monitor now". Everyone in the team: the
dashboard, its metrics grouped (drift, collapse, quality) with a summary of the latest values and the rules'
thresholds, the charts of the metrics chosen in the URL, each with its rules' thresholds and alert markers
and its numbers, the scree of the latest snapshot against the reference, the alerts (acknowledged through
the team's alerts view), the runs; and the numbers behind each chart as CSV. Views read what the monitor
runs stored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import floatformat
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST, require_safe

from evalplatform.auth import SignedInRequest
from evalplatform.charts import TimeLabels
from evalplatform.csvexport import csv_response
from evalplatform.forms import ConfirmForm
from evalplatform.jobs import JobStatus
from evalplatform.teams import get_team_for_member
from monitoring.embeddings import charts as charts_monitors
from monitoring.embeddings import services as monitors
from monitoring.embeddings.forms import SnapshotForm, StreamEditForm, StreamForm
from monitoring.embeddings.params import MonitorInputError
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


@dataclass(frozen=True)
class SummaryRow:
    """A line of the dashboard's summary: a metric's latest value and the thresholds of its rules."""

    metric: str
    label: str
    group: str
    latest: PointRow | None
    rules: list[Any]
    alerting: bool  # a rule on it has an unresolved alert
    chosen: bool


def _latest(series: monitors.MetricSeries, observed: TimeLabels) -> PointRow | None:
    rows = _point_rows(monitors.MetricSeries(series.metric, series.section, series.points[-1:]), observed)
    return rows[0] if rows else None


def chosen_metrics(request: HttpRequest, series: list[monitors.MetricSeries]) -> list[str]:
    """The metrics the URL asks for (`?metric=...`, repeated; `?all=1`: every one); none named: those a rule
    watches (every one when no rule watches any). Unknown names are dropped."""
    known = [s.metric for s in series]
    if request.GET.get("all"):
        return known
    asked = set(request.GET.getlist("metric"))
    if asked:
        return [metric for metric in known if metric in asked]
    watched = [s.metric for s in series if s.rules]
    return watched or known


@login_required
@require_safe
def stream_detail(request: HttpRequest, team: str, stream: str) -> HttpResponse:
    membership, found = _stream(request, team, stream)
    observed = TimeLabels()
    every = monitors.stream_series(stream=found)
    chosen = set(chosen_metrics(request, every))
    summary: dict[str, list[SummaryRow]] = {group: [] for group in monitors.METRIC_GROUPS}
    charts: dict[str, list[dict[str, Any]]] = {group: [] for group in monitors.METRIC_GROUPS}
    for position, series in enumerate(every):
        column = selectors.measure_column(series.metric)
        group = monitors.metric_group(series.metric)
        summary[group].append(
            SummaryRow(
                metric=series.metric, label=column.label, group=group, latest=_latest(series, observed),
                rules=series.rules, alerting=any(e.is_unresolved for e in series.events),
                chosen=series.metric in chosen,
            )
        )  # fmt: skip
        if series.metric in chosen:  # figures only for the charts shown
            charts[group].append({
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
        "summary": [(group, rows) for group, rows in summary.items() if rows],
        "groups": [(group, rows) for group, rows in charts.items() if rows],
        "charts": any(charts.values()),
        "chosen": [s.metric for s in every if s.metric in chosen],
        "spectrum_run": spectrum_run,
        "spectrum_figure": charts_monitors.spectrum_figure(spectrum_run) if spectrum_run else None,
        "spectrum_rows": _spectrum_rows(spectrum_run) if spectrum_run else [],
        "events": monitors.stream_events(stream=found),
        "runs": list(monitors.stream_runs(stream=found)[:RUNS_SHOWN]),
        "runs_shown": RUNS_SHOWN,
        "waiting": found.snapshots.filter(monitor_runs__isnull=True).count(),
        "recompute_pending": monitors.stream_recompute_pending(stream=found),
    }
    return render(request, "monitoring/stream_detail.html", context)


def _spectrum_rows(run: Any) -> list[tuple[int, float, float | None]]:
    spectrum = run.spectrum
    reference = spectrum.get("reference") or [None] * len(spectrum["rank"])
    return list(zip(spectrum["rank"], spectrum["current"], reference, strict=True))


@login_required
@require_safe
def series_csv(request: HttpRequest, team: str, stream: str) -> HttpResponse:
    """Every metric of every finished run: a row per run in observed order, a column per metric (those named
    by `?metric=...` when the URL names some: one chart's numbers)."""
    membership, found = _stream(request, team, stream)
    series = monitors.stream_series(stream=found)
    asked = set(request.GET.getlist("metric"))
    header, rows = monitors.series_table([s for s in series if s.metric in asked] if asked else series)
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


# --- editing: a new stream, an upload, monitor now, recompute against a new reference (editors) -----------


def _wants_json(request: HttpRequest) -> bool:
    """The upload page's script (static/monitoring/upload_progress.js) asks for JSON to show its result."""
    return "application/json" in request.headers.get("Accept", "")


@login_required
@require_http_methods(["GET", "POST"])
def stream_create(request: SignedInRequest, team: str) -> HttpResponse:
    membership = get_team_for_member(request.user, team, write=True)
    form = StreamForm(request.POST or None, team=membership.team)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            created = monitors.stream_create(
                team=membership.team, slug=data["slug"], name=data["name"], description=data["description"],
                dimension=data["dimension"], params=form.params(), every_minutes=data["every_minutes"],
                crontab=data["crontab"], created_by=request.user,
            )  # fmt: skip
        except MonitorInputError as error:
            form.add_error(error.field if error.field in form.fields else None, str(error))
        else:
            messages.success(request, f"Created the stream {created.name}: upload its reference next.")
            return redirect("monitoring:stream-upload", membership.team.slug, created.slug)
    context = {"membership": membership, "team": membership.team, "form": form}
    status = 400 if form.errors else 200
    return render(request, "monitoring/stream_form.html", context, status=status)


def _upload(form: SnapshotForm, found: EmbeddingStream, user: Any) -> Any:
    data = form.cleaned_data
    options = {"reference": data["reference"], "observed_at": data["observed_at"], "label": data["label"],
               "uploaded_by": user}  # fmt: skip
    if form.vectors is not None:
        label = data["label"] or data["file"].name.rsplit(".", 1)[0]
        return monitors.snapshot_from_vectors(
            stream=found, vectors=form.vectors, **{**options, "label": label}
        )
    return monitors.snapshot_upload(stream=found, upload=data["file"], **options)


@login_required
@require_http_methods(["GET", "POST"])
def snapshot_upload(request: SignedInRequest, team: str, stream: str) -> HttpResponse:
    """A snapshot or a new reference. After a new reference, the stream's earlier snapshots are offered a
    recompute against it (the confirmation page), when there are any."""
    membership = get_team_for_member(request.user, team, write=True)
    found = monitors.get_stream(team=membership.team, slug=stream)
    form = SnapshotForm(request.POST or None, request.FILES or None, dimension=found.dimension)
    if request.method == "POST" and form.is_valid():
        try:
            snapshot = _upload(form, found, request.user)
        except MonitorInputError as error:
            form.add_error("file" if error.field in ("file", "vectors") else None, str(error))
        else:
            found.refresh_from_db()
            kind = "reference" if form.cleaned_data["reference"] else "snapshot"
            messages.success(request, f"Uploaded the {kind} {snapshot.label} ({snapshot.rows:,} rows).")
            if form.cleaned_data["reference"] and monitors.stream_recompute_pending(stream=found):
                target = reverse("monitoring:stream-recompute", args=[membership.team.slug, found.slug])
            else:
                target = found.get_absolute_url()
            if _wants_json(request):
                return JsonResponse({"redirect": target}, status=201)
            return redirect(target)
    status = 400 if form.errors else 200
    if _wants_json(request) and form.errors:
        return JsonResponse({"errors": {k: [str(m) for m in v] for k, v in form.errors.items()}}, status=400)
    context = {"membership": membership, "team": membership.team, "stream": found, "form": form}
    return render(request, "monitoring/stream_upload.html", context, status=status)


@login_required
@require_POST
def stream_monitor(request: SignedInRequest, team: str, stream: str) -> HttpResponse:
    """Monitor now: a run for every snapshot that has none, the failed ones queued again."""
    membership = get_team_for_member(request.user, team, write=True)
    found = monitors.get_stream(team=membership.team, slug=stream)
    runs = monitors.stream_monitor_now(stream=found)
    if not runs:
        messages.info(request, "Every snapshot is monitored already.")
    elif any(run.status == JobStatus.FAILED for run in runs):
        messages.error(
            request, "The task queue did not take the runs: they failed, saying so. Try again later."
        )
    else:
        messages.success(request, f"Queued {len(runs)} monitor run(s); they appear below as they finish.")
    return redirect(found.get_absolute_url() + "#runs-heading")


@login_required
@require_http_methods(["GET", "POST"])
def stream_recompute(request: SignedInRequest, team: str, stream: str) -> HttpResponse:
    """The offer after a new reference: a confirmation naming what is recomputed (GET), then the runs (POST)."""
    membership = get_team_for_member(request.user, team, write=True)
    found = monitors.get_stream(team=membership.team, slug=stream)
    pending = monitors.stream_recompute_pending(stream=found)
    form = ConfirmForm(request.POST or None, expected=f"recompute {found.slug}")
    error = "" if found.reference_id else "The stream has no reference yet: upload one first."
    if request.method == "POST" and form.is_valid() and not error:
        runs = monitors.stream_recompute(stream=found)
        messages.success(request, f"Queued {len(runs)} monitor run(s) against the new reference.")
        return redirect(found.get_absolute_url() + "#runs-heading")
    reference = found.reference.label if found.reference else "none"
    context = {
        "title": f"Recompute {found.name}'s earlier snapshots against {reference}?",
        "consequences": [
            f"{pending} snapshot(s) monitored against an earlier reference get a monitor run against "
            f"{reference}, queued now; the dashboard shows those once they are done.",
            "The runs against the earlier reference stay, as do the alerts they opened; asking again "
            "queues nothing twice.",
            "Cancel to keep the earlier values: only new snapshots are monitored against the new reference.",
        ],
        "form": form, "error": error, "button": f"Recompute {pending} snapshot(s)", "team": membership.team,
        "cancel": found.get_absolute_url(),
    }  # fmt: skip
    status = 200 if request.method == "GET" else 409 if error else 400
    return render(request, "evalplatform/confirm.html", context, status=status)


# --- edit and delete a stream (editors) --------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def stream_edit(request: SignedInRequest, team: str, stream: str) -> HttpResponse:
    """The new-stream form filled with the stream's name, schedule and parameters (its slug and dimension
    stay); saving changes later runs only."""
    membership = get_team_for_member(request.user, team, write=True)
    found = monitors.get_stream(team=membership.team, slug=stream)
    form = StreamEditForm(request.POST or None, stream=found)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            monitors.stream_update(
                stream=found, name=data["name"], description=data["description"], params=form.params(),
                schedule=(data["every_minutes"], data["crontab"]),
            )  # fmt: skip
        except MonitorInputError as error:
            form.add_error(error.field if error.field in form.fields else None, str(error))
        else:
            messages.success(request, f"Saved the stream {found.name}: its next runs use what you set.")
            return redirect(found.get_absolute_url())
    context = {"membership": membership, "team": membership.team, "form": form, "stream": found}
    return render(request, "monitoring/stream_form.html", context, status=400 if form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
def stream_delete(request: SignedInRequest, team: str, stream: str) -> HttpResponse:
    """A confirmation naming what goes with the stream, with counts (GET), then its deletion (POST with the
    confirmation); an empty POST deletes nothing (400)."""
    membership = get_team_for_member(request.user, team, write=True)
    found = monitors.get_stream(team=membership.team, slug=stream)
    form = ConfirmForm(request.POST or None, expected=f"delete stream {found.slug}")
    if request.method == "POST" and form.is_valid():
        monitors.stream_delete(stream=found)
        messages.success(request, f"Deleted the stream {found.name}.")
        return redirect(reverse("monitoring:team", args=[membership.team.slug]) + "#streams")
    context = {
        "title": f"Delete the stream {found.name}?",
        "consequences": [line.text for line in monitors.stream_delete_consequences(found)],
        "form": form, "error": "", "button": "Delete the stream", "cancel": found.get_absolute_url(),
        "team": membership.team,
    }  # fmt: skip
    return render(
        request, "evalplatform/confirm.html", context, status=200 if request.method == "GET" else 400
    )
