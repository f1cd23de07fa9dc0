"""The REST API of a team's series: GET /api/teams/<team>/series/ (optionally ?family= or ?kind=) and
GET /api/teams/<team>/series/<id>/values/ (every value, oldest first; ?metric= narrows it)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from evalcore.metrics import FAMILIES
from evalplatform.teams import get_team_for_member
from series.models import MetricValue, Series
from series.views import team_series_or_404

TAGS = ["series: metric values over time"]
#: The most values one reply holds (the newest ones; the CSV on the series page holds every one).
MAX_VALUES = 20_000


class SeriesOut(serializers.ModelSerializer[Series]):
    class Meta:
        model = Series
        fields = ["id", "kind", "family", "key", "name", "label", "url", "created_at"]


class SeriesValueOut(serializers.ModelSerializer[MetricValue]):
    class Meta:
        model = MetricValue
        fields = ["metric", "subgroup", "value", "ci_low", "ci_high", "observed_at", "job_type", "job_id"]


class SeriesValuesOut(serializers.Serializer[Any]):
    series = SeriesOut()
    truncated = serializers.BooleanField(
        help_text=f"Whether only the newest {MAX_VALUES:,} values are given."
    )
    values = SeriesValueOut(many=True)


@extend_schema(
    parameters=[
        OpenApiParameter("family", str, enum=list(FAMILIES)),
        OpenApiParameter("kind", str, enum=[kind.value for kind in Series.Kind]),
    ],
    responses={200: SeriesOut(many=True)},
    summary="The team's series, by kind and label",
    tags=TAGS,
)
@api_view(["GET"])
def series_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team)
    rows = Series.objects.filter(team=membership.team).order_by("kind", "label")
    family, kind = request.query_params.get("family"), request.query_params.get("kind")
    if family and family not in FAMILIES:
        raise serializers.ValidationError({"family": [f"Choose one of {', '.join(FAMILIES)}."]})
    if kind and kind not in Series.Kind.values:
        raise serializers.ValidationError({"kind": [f"Choose one of {', '.join(Series.Kind.values)}."]})
    if family:
        rows = rows.filter(family=family)
    if kind:
        rows = rows.filter(kind=kind)
    return Response(SeriesOut(rows, many=True).data)


@extend_schema(
    parameters=[OpenApiParameter("metric", str, description="Only this metric's values.")],
    responses={200: SeriesValuesOut},
    summary="A series' values over time, oldest first",
    tags=TAGS,
)
@api_view(["GET"])
def series_values(request: Request, team: str, pk: int) -> Response:
    _, series = team_series_or_404(request.user, team, pk)
    rows = MetricValue.objects.filter(series=series)
    if metric := request.query_params.get("metric"):
        rows = rows.filter(metric=metric)
    newest = list(rows.order_by("-observed_at", "-job_id", "-position", "-subgroup")[: MAX_VALUES + 1])
    data = {"series": series, "truncated": len(newest) > MAX_VALUES, "values": newest[:MAX_VALUES][::-1]}
    return Response(SeriesValuesOut(data).data)
