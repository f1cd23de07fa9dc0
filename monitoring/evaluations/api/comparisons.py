"""Comparisons of several runs on one qrels source: start one (a job on the worker), poll it, read each
run's mean with its CI and, for every pair of runs and measure, the paired test's difference, p-value,
corrected p-value, significance and wins / ties / losses."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from evalplatform.errors import InputError
from evalplatform.teams import get_team_for_member
from monitoring.common.pagination import PAGE_PARAMETERS, page_of, paginate
from monitoring.common.serializers import (
    FIELD_ERRORS,
    FORBIDDEN,
    NOT_FOUND,
    ComparisonDetailOut,
    ComparisonIn,
    ComparisonOut,
)
from monitoring.editing.api import edit_schemas, item_change
from monitoring.evaluations import selectors
from monitoring.evaluations import services as evaluations
from monitoring.evaluations.api.evaluations import queued_status

TAGS = ["evaluation: comparisons"]


@extend_schema(
    methods=["GET"],
    parameters=PAGE_PARAMETERS,
    responses={200: page_of(ComparisonOut), 404: NOT_FOUND},
    operation_id="teams_comparisons_list",
    summary="The team's comparisons, newest first",
    tags=TAGS,
)
@extend_schema(
    methods=["POST"],
    request=ComparisonIn,
    responses={
        202: ComparisonDetailOut,
        400: FIELD_ERRORS,
        403: FORBIDDEN,
        404: NOT_FOUND,
        503: ComparisonDetailOut,
    },
    summary="Compare two or more runs on a qrels source (editors; queued on the worker)",
    description="Answers 202 with the comparison and its job state; poll `url` until `status` is `done`. "
    "Each run is evaluated on the same queries (shared by all runs, or every qrels query with `complete`); "
    "p-values are corrected over every pair of runs on every measure. 503 when the task queue is "
    "unreachable (the comparison is then `failed`, saying so).",
    tags=TAGS,
)
@api_view(["GET", "POST"])
def comparison_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    if request.method == "GET":
        return paginate(request, selectors.team_comparisons(team=membership.team), ComparisonOut)
    data = ComparisonIn(data=request.data, context={"team": membership.team})
    data.is_valid(raise_exception=True)
    try:
        created = evaluations.comparison_create(created_by=request.user, **data.validated_data)
    except InputError as error:
        raise serializers.ValidationError({"non_field_errors": [str(error)]}) from None
    comparison = selectors.get_comparison(team=membership.team, pk=created.pk)
    body = ComparisonDetailOut(comparison, context={"request": request}).data
    return Response(body, status=queued_status(comparison))


@extend_schema(
    methods=["GET"],
    responses={200: ComparisonDetailOut, 404: NOT_FOUND},
    summary="A comparison: its job state and, once done, the summaries per run and measure and every pair",
    tags=TAGS,
)
@edit_schemas(ComparisonDetailOut, "comparison (its runs and qrels stay)", TAGS)
@api_view(["GET", "PATCH", "DELETE"])
def comparison_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method != "GET")
    comparison = selectors.get_comparison(team=membership.team, pk=pk)
    if request.method != "GET":
        return item_change(request, comparison, ComparisonDetailOut)
    return Response(ComparisonDetailOut(comparison, context={"request": request}).data)
