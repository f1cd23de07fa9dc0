"""A team's series and each series' metrics over time: one chart per metric, with its numbers beside it
and every value as CSV. Any series of any family is drawn the same way, from the one metric table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Max
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.template.defaultfilters import floatformat
from django.views.decorators.http import require_safe

from evalcore.metrics import UnknownMetricError, metric_registry
from evalplatform.auth import SignedInRequest
from evalplatform.charts import TimeLabels
from evalplatform.csvexport import csv_response
from evalplatform.teams import get_team_for_member
from series.charts import history_figure
from series.models import MetricValue, Series
from series.selectors import MetricHistory, series_metric_histories


def team_series_or_404(user: Any, team: str, pk: int) -> tuple[Any, Series]:
    """The team's membership and one of its series; 404 for a series of another team."""
    membership = get_team_for_member(user, team)
    series = Series.objects.filter(pk=pk, team=membership.team).first()
    if series is None:
        raise Http404("No such series.")
    return membership, series


@login_required
@require_safe
def series_list(request: SignedInRequest, team: str) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    rows = (
        Series.objects.filter(team=membership.team)
        .annotate(observations=Count("values__job_id", distinct=True), latest=Max("values__observed_at"))
        .order_by("kind", "label")
    )
    groups: dict[str, list[Series]] = {}
    for row in rows:
        groups.setdefault(row.get_kind_display(), []).append(row)
    return render(request, "series/series_list.html", {"team": membership.team, "groups": groups})


@dataclass(frozen=True)
class PointRow:
    """A row of the numbers beside a metric's chart, written as the template's filters write them."""

    observed: str  # `date:"Y-m-d H:i"`
    value: str | None  # `floatformat:4`; None: undefined
    ci_low: str | None  # `floatformat:3`; None: no interval
    ci_high: str


def _point_rows(history: MetricHistory, observed: TimeLabels) -> list[PointRow]:
    return [
        PointRow(
            observed=observed(point.observed_at),
            value=None if point.value is None else floatformat(point.value, 4),
            ci_low=None if point.ci_low is None else floatformat(point.ci_low, 3),
            ci_high=floatformat(point.ci_high, 3),
        )
        for point in history.points
    ]


@login_required
@require_safe
def series_detail(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership, series = team_series_or_404(request.user, team, pk)
    registry = metric_registry()
    charts = []
    observed = TimeLabels()
    for index, history in enumerate(series_metric_histories(series)):
        try:
            spec = registry.resolve(history.metric)
        except UnknownMetricError:  # a metric the registry no longer knows: its numbers still show
            continue
        charts.append({
            "id": f"series-figure-{index}", "history": history, "spec": spec,
            "figure": history_figure(history, spec=spec), "rows": _point_rows(history, observed),
        })  # fmt: skip
    return render(
        request, "series/series_detail.html", {"team": membership.team, "series": series, "charts": charts}
    )


@login_required
@require_safe
def series_csv(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    _, series = team_series_or_404(request.user, team, pk)
    rows = (
        MetricValue.objects.filter(series=series)
        .order_by("observed_at", "job_id", "position", "subgroup")
        .values_list("observed_at", "metric", "subgroup", "value", "ci_low", "ci_high", "job_type", "job_id")
    )
    return csv_response(
        f"series-{series.pk}.csv",
        ["observed_at", "metric", "subgroup", "value", "ci_low", "ci_high", "job_type", "job_id"],
        ([at.isoformat(), *rest] for at, *rest in rows.iterator()),
    )
