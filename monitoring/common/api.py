"""The metric registry (`evalcore.metrics.metric_registry()`): every metric's name, label, family,
direction, range, unit and definition, as the evaluation pages, the CLI and the alert rules read it."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from evalcore.metrics import FAMILIES, UnknownMetricError, metric_registry
from monitoring.common.pagination import PAGE_PARAMETERS, page_of, paginate
from monitoring.common.serializers import FIELD_ERRORS, EvaluationErrorOut, MetricOut

TAGS = ["evaluation: metrics"]


@extend_schema(
    parameters=[OpenApiParameter("family", str, enum=list(FAMILIES)), *PAGE_PARAMETERS],
    responses={200: page_of(MetricOut), 400: FIELD_ERRORS},
    operation_id="metrics_list",
    summary="Every metric the platform computes, as declared in its registry",
    description="Parametrised names (`P_10`, `ndcg_cut_10`, `nDCG@10`) belong to one spec each (`P`, "
    "`ndcg_cut`); GET /api/metrics/<name>/ resolves any name.",
    tags=TAGS,
)
@api_view(["GET"])
def metric_list(request: Request) -> Response:
    family = request.query_params.get("family")
    if family and family not in FAMILIES:
        raise serializers.ValidationError({"family": [f"Choose one of {', '.join(FAMILIES)}."]})
    registry = metric_registry()
    specs = registry.family(family) if family else list(registry)  # type: ignore[arg-type]
    return paginate(request, [spec.describe() for spec in specs], MetricOut)


@extend_schema(
    responses={
        200: MetricOut,
        404: OpenApiResponse(EvaluationErrorOut, description="Unknown; suggests close names."),
    },
    summary="The spec of one metric name: a name, an alias or a parametrised name (P_10, nDCG@10)",
    tags=TAGS,
)
@api_view(["GET"])
def metric_detail(request: Request, name: str) -> Response:
    try:
        spec = metric_registry().resolve(name)
    except UnknownMetricError as error:
        raise NotFound(str(error)) from None
    return Response(MetricOut(spec.describe()).data)
