"""The reports through the API: the same files the pages offer (`monitoring.reports.services`), to any
member of the team. A job that has not finished is a 404 that says so."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request

from evalplatform.teams import get_team_for_member
from monitoring.common.serializers import FIELD_ERRORS, NOT_FOUND
from monitoring.embeddings import services as monitors
from monitoring.evaluations import selectors
from monitoring.reports import services as reports

TAGS = ["reports"]
HTML = {(200, "text/html"): OpenApiTypes.STR, 404: NOT_FOUND}
OUTPUT = OpenApiParameter(
    "output",
    str,
    enum=list(reports.FORMATS),
    description="html (default): the report; latex or markdown: the table",
)


@extend_schema(responses=HTML, summary="A finished evaluation as a self-contained HTML report", tags=TAGS)
@api_view(["GET"])
def evaluation_report(request: Request, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    evaluation = selectors.get_evaluation(team=membership.team, pk=pk, per_query=True)
    body = reports.evaluation_report(evaluation)
    return reports.report_response(
        body, filename=f"{membership.team.slug}-evaluation{evaluation.pk}-report.html"
    )


@extend_schema(
    parameters=[OUTPUT],
    responses={
        (200, "text/html"): OpenApiTypes.STR,
        (200, "application/x-tex"): OpenApiTypes.STR,
        (200, "text/markdown"): OpenApiTypes.STR,
        400: FIELD_ERRORS,
        404: NOT_FOUND,
    },
    summary="A finished comparison as a self-contained HTML report, or its table with significance markers "
    "as LaTeX (booktabs) or Markdown",
    tags=TAGS,
)
@api_view(["GET"])
def comparison_report(request: Request, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    fmt = request.query_params.get("output", "html")
    if fmt not in reports.FORMATS:
        raise serializers.ValidationError({"output": [f"Choose one of {', '.join(reports.FORMATS)}."]})
    comparison = selectors.get_comparison(team=membership.team, pk=pk, per_query=False)
    body = reports.comparison_export(comparison, fmt)
    name = "report" if fmt == "html" else "table"
    filename = f"{membership.team.slug}-comparison{comparison.pk}-{name}.{reports.FORMATS[fmt][1]}"
    return reports.report_response(body, filename=filename, fmt=fmt)


@extend_schema(responses=HTML, summary="A finished monitor run as a self-contained HTML report", tags=TAGS)
@api_view(["GET"])
def monitor_run_report(request: Request, team: str, stream: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    found = monitors.get_stream(team=membership.team, slug=stream)
    run = monitors.get_run(stream=found, pk=pk)
    body = reports.monitor_run_report(run)
    return reports.report_response(
        body, filename=f"{membership.team.slug}-{found.slug}-run{run.pk}-report.html"
    )
